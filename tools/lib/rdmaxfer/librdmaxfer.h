/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librdmaxfer - the ioctls of /dev/rdmaxfer as plain C functions, shared by
 * the CLI (tools/rdmaxfer/) and the C selftests (selftests/rdmaxfer/): the
 * one place that fills in the argument structs of <linux/rdmaxfer.h> for
 * the ordinary calls.
 *
 * Each function issues one call (rdx_open() an open(2), the others one
 * ioctl) and returns 0 or the positive errno it failed with, leaving errno
 * as the call set it; rdx_reap() returns the number of entries or -errno.
 * What the kernel hands back (an id, a port, a count) is copied out through
 * pointers, on success only unless a function says otherwise; any of them
 * may be NULL when the caller does not want it.  Nothing here prints,
 * retries or checks anything: the callers do.  Callers that probe the ABI
 * itself (odd sizes, flags, reserved fields) build the struct by hand and
 * use rdx_ioctl().
 *
 * One header and one .c file, compiled into each program that uses them
 * (the CLI's Makefile, and each selftest program, static and -m32).
 */
#ifndef LIBRDMAXFER_H
#define LIBRDMAXFER_H

#include <stdint.h>

#include <linux/rdmaxfer.h>

#define RDX_DEVPATH	"/dev/" RDMAXFER_DEVNAME

/* ioctl(2) @cmd on @fd: 0 or the errno. */
int rdx_ioctl(int fd, unsigned long cmd, void *arg);

/* open(2) of RDX_DEVPATH with @flags: the file descriptor, or -1 with errno. */
int rdx_open(int flags);

/* GET_INFO into @info (zeroed first). */
int rdx_get_info(int fd, struct rdmaxfer_info *info);

/*
 * LIST_DEVICES: up to @cap indexes into @idx; *@count is the number of
 * devices, which may be more than @cap.
 */
int rdx_list_devices(int fd, uint32_t *idx, uint32_t cap, uint32_t *count);

/* QUERY_DEVICE of device @index into @di (zeroed first). */
int rdx_query_device(int fd, uint32_t index, struct rdmaxfer_device_info *di);

/*
 * QUERY_PORT of port @port of device @index into @pi (zeroed first), up to
 * @cap GIDs into @gids; @pi->num_gids is then the number of GIDs, which may
 * be more than @cap.
 */
int rdx_query_port(int fd, uint32_t index, uint32_t port, struct rdmaxfer_gid *gids,
		   uint32_t cap, struct rdmaxfer_port_info *pi);

/* LISTEN on @addr (port 0: any): the listener's id and the port it got. */
int rdx_listen(int fd, struct rdmaxfer_addr addr, uint32_t backlog, uint32_t *id,
	       uint16_t *port);

/*
 * CONNECT to @addr, waiting at most @timeout_ns: the connection's id; the
 * server's reject reason (RDMAXFER_REJECT_*) in *@reason, also on failure.
 */
int rdx_connect(int fd, struct rdmaxfer_addr addr, int64_t timeout_ns, uint32_t *id,
		uint32_t *reason);

/*
 * LISTEN with who may connect: a key every client must prove it holds
 * (@key_id, a serial in the caller's keyrings; 0: none) and an allow-list
 * (@nallow prefixes at @allow; 0: any client).
 */
int rdx_listen_auth(int fd, struct rdmaxfer_addr addr, uint32_t backlog, int32_t key_id,
		    const struct rdmaxfer_prefix *allow, uint32_t nallow, uint32_t *id,
		    uint16_t *port);

/* CONNECT proving the key @key_id (0: none), as rdx_connect() otherwise. */
int rdx_connect_key(int fd, struct rdmaxfer_addr addr, int64_t timeout_ns, int32_t key_id,
		    uint32_t *id, uint32_t *reason);

/* What RDMAXFER_REJECT_* @reason means, as a phrase ("the server ..."). */
const char *rdx_reject_str(uint32_t reason);

/* ACCEPT on listener @listen_id, waiting at most @timeout_ns: the id, the peer. */
int rdx_accept(int fd, uint32_t listen_id, int64_t timeout_ns, uint32_t *id,
	       struct rdmaxfer_addr *peer);

/* CLOSE of a listener or a connection. */
int rdx_close(int fd, uint32_t id);

/* REG_BUF of @len bytes at @addr with RDMAXFER_BUF_* @access: the buffer's id. */
int rdx_reg_buf(int fd, const void *addr, uint64_t len, uint32_t access, uint32_t *id);

/* DEREG_BUF. */
int rdx_dereg_buf(int fd, uint32_t id);

/*
 * EXPOSE bytes [@off, @off + @len) of buffer @buf to the peer of @conn with
 * RDMAXFER_REMOTE_* @access: the window's id.
 */
int rdx_expose(int fd, uint32_t conn, uint32_t buf, uint64_t off, uint64_t len,
	       uint32_t access, uint32_t *win);

/* REVOKE of window @win. */
int rdx_revoke(int fd, uint32_t win);

/*
 * SUBMIT of the @n operations at @ops; *@posted is the count the struct
 * holds after the call, also on failure (@n then).
 */
int rdx_submit(int fd, const struct rdmaxfer_op *ops, uint32_t n, uint32_t *posted);

/* REAP of up to @n entries into @c, waiting at most @timeout_ns: the count or -errno. */
int rdx_reap(int fd, struct rdmaxfer_completion *c, uint32_t n, int64_t timeout_ns);

/*
 * RECV of the oldest message of @conn into the @len bytes at @buf; *@msg_len
 * is the length the struct holds after the call, also on failure: the
 * message's (also on EMSGSIZE, when it does not fit), else @len.
 */
int rdx_recv(int fd, uint32_t conn, void *buf, uint32_t len, uint32_t *msg_len);

/* QUERY_CONN of connection @conn into @ci (zeroed first). */
int rdx_query_conn(int fd, uint32_t conn, struct rdmaxfer_conn_info *ci);

/* STATS into @st (zeroed first). */
int rdx_stats(int fd, struct rdmaxfer_stats *st);

/*
 * A file's completion ring (RING_SETUP, mmap()ed): completions without a
 * system call.  @r is NULL when there is none.
 */
struct rdx_ring {
	struct rdmaxfer_ring *r;
	size_t size;
	uint32_t mask;
};

/*
 * RING_SETUP of @entries (a power of 2) and mmap() of the ring into @ring
 * (zeroed first): 0 or the errno of the call that failed (the file then
 * may have a ring that nothing maps).
 */
int rdx_ring_map(int fd, uint32_t entries, struct rdx_ring *ring);

/* munmap() of the ring, if mapped. */
void rdx_ring_unmap(struct rdx_ring *ring);

/*
 * Up to @n completions, oldest first: from the ring (no system call) if it
 * holds any; else, if completions wait in the file's queue or @timeout_ns is
 * not 0, a REAP (rdx_reap(); it returns early when the ring fills).  The
 * count or -errno.  With no ring mapped (@ring->r NULL), rdx_reap().
 */
int rdx_ring_reap(int fd, struct rdx_ring *ring, struct rdmaxfer_completion *c, uint32_t n,
		  int64_t timeout_ns);

/*
 * A numeric IPv4 or IPv6 address (inet_pton(3), no scope) and @port; the
 * family is 0 if @host is neither.
 */
struct rdmaxfer_addr rdx_addr(const char *host, uint16_t port);

#endif /* LIBRDMAXFER_H */
