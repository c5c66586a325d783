// SPDX-License-Identifier: GPL-2.0
/*
 * librdmaxfer - the ioctls of /dev/rdmaxfer as plain C functions; see
 * librdmaxfer.h for the conventions.  Every function fills in the argument
 * struct (size first, the rest zero), issues one call and copies out what
 * the caller asked for.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "librdmaxfer.h"

int rdx_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

int rdx_open(int flags)
{
	return open(RDX_DEVPATH, flags);
}

int rdx_get_info(int fd, struct rdmaxfer_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return rdx_ioctl(fd, RDMAXFER_IOC_GET_INFO, info);
}

int rdx_list_devices(int fd, uint32_t *idx, uint32_t cap, uint32_t *count)
{
	struct rdmaxfer_list_devices ld = {
		.size = sizeof(ld), .count = cap, .indexes = (uintptr_t)idx,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_LIST_DEVICES, &ld);

	if (!ret && count)
		*count = ld.count;
	return ret;
}

int rdx_query_device(int fd, uint32_t index, struct rdmaxfer_device_info *di)
{
	memset(di, 0, sizeof(*di));
	di->size = sizeof(*di);
	di->index = index;
	return rdx_ioctl(fd, RDMAXFER_IOC_QUERY_DEVICE, di);
}

int rdx_query_port(int fd, uint32_t index, uint32_t port, struct rdmaxfer_gid *gids,
		   uint32_t cap, struct rdmaxfer_port_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->size = sizeof(*pi);
	pi->index = index;
	pi->port = port;
	pi->num_gids = cap;
	pi->gids = (uintptr_t)gids;
	return rdx_ioctl(fd, RDMAXFER_IOC_QUERY_PORT, pi);
}

int rdx_listen_auth(int fd, struct rdmaxfer_addr addr, uint32_t backlog, int32_t key_id,
		    const struct rdmaxfer_prefix *allow, uint32_t nallow, uint32_t *id,
		    uint16_t *port)
{
	struct rdmaxfer_listen l = {
		.size = sizeof(l), .addr = addr, .backlog = backlog, .key_id = key_id,
		.allow_count = nallow, .allow = (uintptr_t)allow,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_LISTEN, &l);

	if (!ret) {
		if (id)
			*id = l.listen_id;
		if (port)
			*port = l.addr.port;
	}
	return ret;
}

int rdx_listen(int fd, struct rdmaxfer_addr addr, uint32_t backlog, uint32_t *id,
	       uint16_t *port)
{
	return rdx_listen_auth(fd, addr, backlog, 0, NULL, 0, id, port);
}

int rdx_connect_key(int fd, struct rdmaxfer_addr addr, int64_t timeout_ns, int32_t key_id,
		    uint32_t *id, uint32_t *reason)
{
	struct rdmaxfer_connect c = {
		.size = sizeof(c), .addr = addr, .timeout_ns = timeout_ns, .key_id = key_id,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_CONNECT, &c);

	if (reason)
		*reason = c.reject_reason;
	if (!ret && id)
		*id = c.conn_id;
	return ret;
}

int rdx_connect(int fd, struct rdmaxfer_addr addr, int64_t timeout_ns, uint32_t *id,
		uint32_t *reason)
{
	return rdx_connect_key(fd, addr, timeout_ns, 0, id, reason);
}

const char *rdx_reject_str(uint32_t reason)
{
	switch (reason) {
	case RDMAXFER_REJECT_NOT_RDMAXFER:
		return "it is not an rdmaxfer server";
	case RDMAXFER_REJECT_VERSION:
		return "it speaks another rdmaxfer protocol version";
	case RDMAXFER_REJECT_PARAMS:
		return "it does not accept our queue depth or buffer sizes";
	case RDMAXFER_REJECT_BACKLOG:
		return "the server is busy (its backlog is full)";
	case RDMAXFER_REJECT_RESOURCES:
		return "the server is out of memory or queue pairs";
	case RDMAXFER_REJECT_AUTH_REQUIRED:
		return "authentication failed: the server requires a key (--key) and we gave none";
	case RDMAXFER_REJECT_AUTH_UNAVAILABLE:
		return "authentication failed: we gave a key, but the server has none (or its key was revoked, or it is an older rdmaxfer)";
	case RDMAXFER_REJECT_AUTH_FAILED:
		return "authentication failed: the server does not hold our key";
	case RDMAXFER_REJECT_NOT_ALLOWED:
		return "our address is not on the server's allow-list";
	default:
		return "no rdmaxfer server is listening there";
	}
}

int rdx_accept(int fd, uint32_t listen_id, int64_t timeout_ns, uint32_t *id,
	       struct rdmaxfer_addr *peer)
{
	struct rdmaxfer_accept a = {
		.size = sizeof(a), .listen_id = listen_id, .timeout_ns = timeout_ns,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_ACCEPT, &a);

	if (!ret) {
		if (id)
			*id = a.conn_id;
		if (peer)
			*peer = a.peer;
	}
	return ret;
}

int rdx_close(int fd, uint32_t id)
{
	struct rdmaxfer_close c = { .size = sizeof(c), .id = id };

	return rdx_ioctl(fd, RDMAXFER_IOC_CLOSE, &c);
}

int rdx_reg_buf(int fd, const void *addr, uint64_t len, uint32_t access, uint32_t *id)
{
	struct rdmaxfer_reg_buf r = {
		.size = sizeof(r), .addr = (uintptr_t)addr, .length = len, .access = access,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_REG_BUF, &r);

	if (!ret && id)
		*id = r.buf_id;
	return ret;
}

int rdx_dereg_buf(int fd, uint32_t id)
{
	struct rdmaxfer_dereg_buf d = { .size = sizeof(d), .buf_id = id };

	return rdx_ioctl(fd, RDMAXFER_IOC_DEREG_BUF, &d);
}

int rdx_expose(int fd, uint32_t conn, uint32_t buf, uint64_t off, uint64_t len,
	       uint32_t access, uint32_t *win)
{
	struct rdmaxfer_expose e = {
		.size = sizeof(e), .conn_id = conn, .buf_id = buf, .offset = off,
		.length = len, .access = access,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_EXPOSE, &e);

	if (!ret && win)
		*win = e.window_id;
	return ret;
}

int rdx_revoke(int fd, uint32_t win)
{
	struct rdmaxfer_revoke r = { .size = sizeof(r), .window_id = win };

	return rdx_ioctl(fd, RDMAXFER_IOC_REVOKE, &r);
}

int rdx_submit(int fd, const struct rdmaxfer_op *ops, uint32_t n, uint32_t *posted)
{
	struct rdmaxfer_submit s = {
		.size = sizeof(s), .count = n, .op_size = sizeof(*ops), .ops = (uintptr_t)ops,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_SUBMIT, &s);

	if (posted)
		*posted = s.count;
	return ret;
}

int rdx_reap(int fd, struct rdmaxfer_completion *c, uint32_t n, int64_t timeout_ns)
{
	struct rdmaxfer_reap r = {
		.size = sizeof(r), .count = n, .timeout_ns = timeout_ns, .completions = (uintptr_t)c,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_REAP, &r);

	return ret ? -ret : (int)r.count;
}

int rdx_ring_map(int fd, uint32_t entries, struct rdx_ring *ring)
{
	struct rdmaxfer_ring_setup rs = { .size = sizeof(rs), .entries = entries };
	void *p;
	int ret;

	memset(ring, 0, sizeof(*ring));
	ret = rdx_ioctl(fd, RDMAXFER_IOC_RING_SETUP, &rs);
	if (ret)
		return ret;
	p = mmap(NULL, rs.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errno;
	ring->r = p;
	ring->size = rs.mmap_size;
	ring->mask = entries - 1;
	return 0;
}

void rdx_ring_unmap(struct rdx_ring *ring)
{
	if (ring->r)
		munmap(ring->r, ring->size);
	ring->r = NULL;
}

/* What the ring holds, up to @n, into @c; then the entries are the kernel's again. */
static uint32_t ring_take(struct rdx_ring *ring, struct rdmaxfer_completion *c, uint32_t n)
{
	struct rdmaxfer_ring *r = ring->r;
	uint32_t head = r->head;	/* only we write it */
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint32_t k = 0;

	while (head != tail && k < n)
		c[k++] = r->entries[head++ & ring->mask];
	if (k)
		__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
	return k;
}

int rdx_ring_reap(int fd, struct rdx_ring *ring, struct rdmaxfer_completion *c, uint32_t n,
		  int64_t timeout_ns)
{
	int ret;

	if (!ring->r)
		return rdx_reap(fd, c, n, timeout_ns);
	if (!n)
		return 0;
	ret = (int)ring_take(ring, c, n);
	if (ret)
		return ret;
	if (!timeout_ns &&
	    !(__atomic_load_n(&ring->r->flags, __ATOMIC_ACQUIRE) & RDMAXFER_RING_QUEUED))
		return 0;
	ret = rdx_reap(fd, c, n, timeout_ns);
	if (ret)
		return ret;
	return (int)ring_take(ring, c, n);	/* it woke for the ring, or timed out */
}

int rdx_recv(int fd, uint32_t conn, void *buf, uint32_t len, uint32_t *msg_len)
{
	struct rdmaxfer_recv r = {
		.size = sizeof(r), .conn_id = conn, .length = len, .addr = (uintptr_t)buf,
	};
	int ret = rdx_ioctl(fd, RDMAXFER_IOC_RECV, &r);

	if (msg_len)
		*msg_len = r.length;
	return ret;
}

int rdx_query_conn(int fd, uint32_t conn, struct rdmaxfer_conn_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	ci->size = sizeof(*ci);
	ci->conn_id = conn;
	return rdx_ioctl(fd, RDMAXFER_IOC_QUERY_CONN, ci);
}

int rdx_stats(int fd, struct rdmaxfer_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return rdx_ioctl(fd, RDMAXFER_IOC_STATS, st);
}

struct rdmaxfer_addr rdx_addr(const char *host, uint16_t port)
{
	struct rdmaxfer_addr a;

	memset(&a, 0, sizeof(a));
	a.port = port;
	if (inet_pton(AF_INET, host, a.addr) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, host, a.addr) == 1)
		a.family = AF_INET6;
	return a;
}
