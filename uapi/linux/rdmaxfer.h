/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rdmaxfer: the ioctl ABI of /dev/rdmaxfer.
 *
 * This is the only header userspace includes.  The rules (see
 * Documentation/ioctl.md) follow Documentation/driver-api/ioctl.rst and the
 * iommufd style:
 *
 *  - Every command is _IO(RDMAXFER_TYPE, nr): the size is not part of the
 *    number, so a struct can grow.  Every struct starts with __u32 size (the
 *    number of bytes userspace knows, normally sizeof) and __u32 flags.
 *  - A size smaller than the last mandatory field is EINVAL.  A larger size
 *    whose unknown tail is not zero is E2BIG; a zero tail is accepted.  Only
 *    min(size, kernel size) bytes are written back.
 *  - Unknown flags, non-zero reserved fields: EINVAL.  Unknown command:
 *    ENOTTY.  A bad user pointer: EFAULT.  A device index that does not
 *    exist (any more): ENODEV.
 *  - Fixed-width types only, no implicit padding, __aligned_u64 for user
 *    pointers, the same layout for 32- and 64-bit callers (compat_ioctl).
 *  - Handles are small integers, never kernel pointers.
 *  - Arrays are passed as (pointer, count): count is the capacity on input
 *    and the number of valid entries on output; at most capacity entries
 *    are written, so a caller may ask with capacity 0 for the count first.
 */
#ifndef _UAPI_LINUX_RDMAXFER_H
#define _UAPI_LINUX_RDMAXFER_H

#include <linux/const.h>
#include <linux/types.h>
#include <linux/ioctl.h>

/* The misc device is /dev/rdmaxfer. */
#define RDMAXFER_DEVNAME		"rdmaxfer"

/* Bumped only on an incompatible change; growth goes through size. */
#define RDMAXFER_ABI_VERSION		1

/* ioctl type, unused in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define RDMAXFER_TYPE			0xE7

/* Length of every name buffer below, NUL included (IB_DEVICE_NAME_MAX). */
#define RDMAXFER_NAME_LEN		64

enum {
	RDMAXFER_CMD_BASE = 0x00,
	RDMAXFER_CMD_GET_INFO = RDMAXFER_CMD_BASE,
	RDMAXFER_CMD_LIST_DEVICES,
	RDMAXFER_CMD_QUERY_DEVICE,
	RDMAXFER_CMD_QUERY_PORT,
	RDMAXFER_CMD_LISTEN,
	RDMAXFER_CMD_ACCEPT,
	RDMAXFER_CMD_CONNECT,
	RDMAXFER_CMD_CLOSE,
	RDMAXFER_CMD_REG_BUF,
	RDMAXFER_CMD_DEREG_BUF,
	RDMAXFER_CMD_EXPOSE,
	RDMAXFER_CMD_REVOKE,
	RDMAXFER_CMD_SUBMIT,
	RDMAXFER_CMD_REAP,
	RDMAXFER_CMD_RECV,
	RDMAXFER_CMD_QUERY_CONN,
	RDMAXFER_CMD_STATS,
	RDMAXFER_CMD_RING_SETUP,
};

/* Feature bits reported by GET_INFO. */
#define RDMAXFER_FEATURE_DEVICE_QUERY	_BITULL(0)	/* LIST_DEVICES, QUERY_DEVICE, QUERY_PORT */
#define RDMAXFER_FEATURE_TRANSFER	_BITULL(1)	/* LISTEN ... STATS below */
#define RDMAXFER_FEATURE_RECV_SLOTS	_BITULL(2)	/* RDMAXFER_OP_RECV, zero-copy SEND */
#define RDMAXFER_FEATURE_RING		_BITULL(3)	/* RING_SETUP, mmap() */
#define RDMAXFER_FEATURE_SINK_SLOTS	_BITULL(4)	/* RDMAXFER_RECV_SINK */
#define RDMAXFER_FEATURE_AUTH		_BITULL(5)	/* key_id of LISTEN and CONNECT */
#define RDMAXFER_FEATURE_ALLOW_LIST	_BITULL(6)	/* allow of LISTEN */

/**
 * struct rdmaxfer_info - argument of RDMAXFER_IOC_GET_INFO
 * @size: sizeof(struct rdmaxfer_info)
 * @flags: must be 0
 * @abi_version: out, RDMAXFER_ABI_VERSION of the module
 * @num_devices: out, number of RDMA devices the module tracks now
 * @features: out, RDMAXFER_FEATURE_* bits
 * @version: out, module version string, NUL-terminated
 * @max_cmd_size: out, largest @size any command accepts (larger: E2BIG)
 * @name_len: out, RDMAXFER_NAME_LEN
 * @max_buf_size: out, largest registered buffer
 * @max_window_size: out, largest window on any device (a device with
 *	short fast-registration lists may allow less: EINVAL)
 * @max_send_size: out, largest SEND
 * @max_batch: out, most operations in one SUBMIT
 * @max_pending: out, most operations a file may have posted or completed
 *	but not yet reaped
 * @max_objects: out, most listeners + connections + buffers + windows per file
 * @max_recv_slots: out, most RDMAXFER_OP_RECV slots posted on one connection
 * @min_recv_size: out, the shortest RDMAXFER_OP_RECV slot
 *
 * Userspace calls this first to learn what the module supports.  Later ABI
 * revisions append at the end; a caller with an older, shorter struct gets
 * the fields it knows.
 */
struct rdmaxfer_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 num_devices;
	__aligned_u64 features;
	char version[32];
	__u32 max_cmd_size;
	__u32 name_len;
	__aligned_u64 max_buf_size;
	__aligned_u64 max_window_size;
	__u32 max_send_size;
	__u32 max_batch;
	__u32 max_pending;
	__u32 max_objects;
	__u32 max_recv_slots;
	__u32 min_recv_size;
};

#define RDMAXFER_IOC_GET_INFO		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_GET_INFO)

/**
 * struct rdmaxfer_list_devices - argument of RDMAXFER_IOC_LIST_DEVICES
 * @size: sizeof(struct rdmaxfer_list_devices)
 * @flags: must be 0
 * @count: in, capacity of @indexes; out, number of devices
 * @__reserved: must be 0
 * @indexes: in, user pointer to a __u32 array that receives the device
 *	indexes (the index the RDMA core gives the device, as `rdma dev`
 *	shows it), in ascending order
 *
 * Devices come and go (hot-plug, `rdma link add/delete`): an index from
 * this list may be gone by the time it is queried (ENODEV).
 */
struct rdmaxfer_list_devices {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 __reserved;
	__aligned_u64 indexes;
};

#define RDMAXFER_IOC_LIST_DEVICES	_IO(RDMAXFER_TYPE, RDMAXFER_CMD_LIST_DEVICES)

/* struct rdmaxfer_device_info.caps: what rdmaxfer can use on this device */
#define RDMAXFER_DEVICE_CAP_FRWR	_BITUL(0)	/* fast registration work requests */
#define RDMAXFER_DEVICE_CAP_ATOMIC	_BITUL(1)	/* RDMA atomics (CAS, FADD) */
#define RDMAXFER_DEVICE_CAP_VIRT_DMA	_BITUL(2)	/* software device (rxe, siw) */

/* struct rdmaxfer_device_info.atomic_cap */
#define RDMAXFER_ATOMIC_NONE		0
#define RDMAXFER_ATOMIC_HCA		1	/* atomic within one HCA */
#define RDMAXFER_ATOMIC_GLOB		2	/* atomic with CPU and other HCAs */

/* struct rdmaxfer_device_info.node_type */
#define RDMAXFER_NODE_CA		1	/* InfiniBand / RoCE channel adapter */
#define RDMAXFER_NODE_SWITCH		2
#define RDMAXFER_NODE_ROUTER		3
#define RDMAXFER_NODE_RNIC		4	/* iWARP */
#define RDMAXFER_NODE_USNIC		5
#define RDMAXFER_NODE_USNIC_UDP		6
#define RDMAXFER_NODE_UNSPECIFIED	7

/**
 * struct rdmaxfer_device_info - argument of RDMAXFER_IOC_QUERY_DEVICE
 * @size: sizeof(struct rdmaxfer_device_info)
 * @flags: must be 0
 * @index: in, device index from RDMAXFER_IOC_LIST_DEVICES
 * @num_ports: out, ports are numbered 1 .. @num_ports
 * @name: out, device name (e.g. "rxe0", "mlx5_0"), NUL-terminated
 * @node_guid: out, node GUID in host byte order
 * @sys_image_guid: out, system image GUID in host byte order
 * @max_mr_size: out, largest memory region in bytes
 * @page_size_cap: out, supported page sizes (bit n set: 2^n bytes)
 * @device_cap_flags: out, the RDMA core's device capability flags (bit
 *	values as IB_UVERBS_DEVICE_* in <rdma/ib_user_verbs.h>)
 * @vendor_id: out, IEEE OUI of the vendor
 * @vendor_part_id: out, vendor's part number
 * @hw_ver: out, hardware version
 * @node_type: out, RDMAXFER_NODE_*
 * @max_qp: out, largest number of queue pairs
 * @max_qp_wr: out, largest number of outstanding work requests per queue
 * @max_send_sge: out, largest scatter/gather list of a send work request
 * @max_recv_sge: out, largest scatter/gather list of a receive work request
 * @max_sge_rd: out, largest scatter list of an RDMA READ
 * @max_cq: out, largest number of completion queues
 * @max_cqe: out, largest completion queue
 * @max_mr: out, largest number of memory regions
 * @max_pd: out, largest number of protection domains
 * @max_qp_rd_atom: out, RDMA READ/atomic requests a QP can answer at once
 * @max_qp_init_rd_atom: out, RDMA READ/atomic requests a QP can issue at once
 * @max_fast_reg_page_list_len: out, pages one fast-registered MR can map
 * @atomic_cap: out, RDMAXFER_ATOMIC_*
 * @caps: out, RDMAXFER_DEVICE_CAP_*
 * @num_comp_vectors: out, completion vectors (interrupts) of the device
 * @__reserved: must be 0
 */
struct rdmaxfer_device_info {
	__u32 size;
	__u32 flags;
	__u32 index;
	__u32 num_ports;
	char name[RDMAXFER_NAME_LEN];
	__aligned_u64 node_guid;
	__aligned_u64 sys_image_guid;
	__aligned_u64 max_mr_size;
	__aligned_u64 page_size_cap;
	__aligned_u64 device_cap_flags;
	__u32 vendor_id;
	__u32 vendor_part_id;
	__u32 hw_ver;
	__u32 node_type;
	__u32 max_qp;
	__u32 max_qp_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_sge_rd;
	__u32 max_cq;
	__u32 max_cqe;
	__u32 max_mr;
	__u32 max_pd;
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
	__u32 max_fast_reg_page_list_len;
	__u32 atomic_cap;
	__u32 caps;
	__u32 num_comp_vectors;
	__u32 __reserved;
};

#define RDMAXFER_IOC_QUERY_DEVICE	_IO(RDMAXFER_TYPE, RDMAXFER_CMD_QUERY_DEVICE)

/* struct rdmaxfer_port_info.state */
#define RDMAXFER_PORT_NOP		0
#define RDMAXFER_PORT_DOWN		1
#define RDMAXFER_PORT_INIT		2
#define RDMAXFER_PORT_ARMED		3
#define RDMAXFER_PORT_ACTIVE		4
#define RDMAXFER_PORT_ACTIVE_DEFER	5

/* struct rdmaxfer_port_info.link_layer */
#define RDMAXFER_LINK_LAYER_UNSPECIFIED	0
#define RDMAXFER_LINK_LAYER_INFINIBAND	1
#define RDMAXFER_LINK_LAYER_ETHERNET	2

/* struct rdmaxfer_gid.type */
#define RDMAXFER_GID_TYPE_IB		0
#define RDMAXFER_GID_TYPE_ROCE		1	/* RoCE v1 */
#define RDMAXFER_GID_TYPE_ROCE_V2	2	/* RoCE v2 (UDP encapsulation) */

/**
 * struct rdmaxfer_gid - one valid entry of a port's GID table
 * @raw: the GID (network byte order; an IPv4 address is ::ffff:a.b.c.d)
 * @index: its index in the port's GID table
 * @type: RDMAXFER_GID_TYPE_*
 * @ifindex: the netdev it belongs to (RoCE), 0 if none
 * @__reserved: 0
 */
struct rdmaxfer_gid {
	__u8 raw[16];
	__u32 index;
	__u32 type;
	__u32 ifindex;
	__u32 __reserved;
};

/**
 * struct rdmaxfer_port_info - argument of RDMAXFER_IOC_QUERY_PORT
 * @size: sizeof(struct rdmaxfer_port_info)
 * @flags: must be 0
 * @index: in, device index from RDMAXFER_IOC_LIST_DEVICES
 * @port: in, port number, 1 .. num_ports of the device
 * @state: out, RDMAXFER_PORT_*
 * @phys_state: out, physical state (5 = LinkUp, as in IBTA)
 * @max_mtu: out, largest path MTU in bytes
 * @active_mtu: out, active path MTU in bytes
 * @link_layer: out, RDMAXFER_LINK_LAYER_*
 * @gid_tbl_len: out, size of the GID table (valid and empty entries)
 * @port_cap_flags: out, IBTA port capability mask
 * @max_msg_sz: out, largest message in bytes
 * @lid: out, base LID (InfiniBand only)
 * @active_speed: out, IBTA speed code
 * @active_width: out, IBTA width code
 * @num_gids: in, capacity of @gids; out, number of valid GIDs
 * @gids: in, user pointer to an array of struct rdmaxfer_gid
 */
struct rdmaxfer_port_info {
	__u32 size;
	__u32 flags;
	__u32 index;
	__u32 port;
	__u32 state;
	__u32 phys_state;
	__u32 max_mtu;
	__u32 active_mtu;
	__u32 link_layer;
	__u32 gid_tbl_len;
	__u32 port_cap_flags;
	__u32 max_msg_sz;
	__u32 lid;
	__u32 active_speed;
	__u32 active_width;
	__u32 num_gids;
	__aligned_u64 gids;
};

#define RDMAXFER_IOC_QUERY_PORT		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_QUERY_PORT)

/*
 * Transfers.
 *
 * An open file owns listeners, connections, registered buffers and windows,
 * each named by a small integer id (one id space per file; 0 is never an
 * id).  Closing the file destroys all of them: connections are disconnected,
 * every posted operation completes (with an error if it had to be flushed),
 * windows are invalidated, buffers unpinned.
 *
 * A registered buffer is user memory pinned by REG_BUF.  A window is a slice
 * of a registered buffer that EXPOSE makes remotely accessible to the peer of
 * one connection, with only the access asked for; the peer learns it through
 * a RDMAXFER_EVENT_WINDOW event and addresses it as (window id, offset).
 * SUBMIT posts a batch of operations on connections; each produces exactly one
 * completion, which REAP returns along with connection and window events.
 * poll() on the file reports POLLIN while completions or events are waiting.
 */

/**
 * struct rdmaxfer_addr - an IPv4 or IPv6 address and port
 * @family: AF_INET (2) or AF_INET6 (10)
 * @port: port in host byte order
 * @scope_id: IPv6 scope (interface index) for link-local addresses, else 0
 * @addr: the address in network byte order; IPv4 uses the first 4 bytes
 */
struct rdmaxfer_addr {
	__u16 family;
	__u16 port;
	__u32 scope_id;
	__u8 addr[16];
};

/* The CLI's default port, and the port CONNECT uses for port 0 (LISTEN: any). */
#define RDMAXFER_DEFAULT_PORT		18515

/*
 * Keys (struct rdmaxfer_listen.key_id, struct rdmaxfer_connect.key_id): the
 * serial number of a key in the caller's keyrings, of type "logon" or
 * "user", that the caller may search for, holding 16 to 256 bytes of
 * secret shared by the two ends.  Both ends prove they hold it
 * (HMAC-SHA256, Documentation/protocol.md) before the listener hands the
 * connection out; nothing of the key ever leaves the kernel.
 */
#define RDMAXFER_KEY_MIN		16
#define RDMAXFER_KEY_MAX		256

/**
 * struct rdmaxfer_prefix - an address prefix of a listener's allow-list
 * @family: AF_INET or AF_INET6
 * @prefix_len: bits of @addr that must match: 0..32 (AF_INET), 0..128
 * @__reserved: 0
 * @addr: the address, in network order (AF_INET: the first 4 bytes; the
 *	bits past @prefix_len must be 0)
 */
struct rdmaxfer_prefix {
	__u16 family;
	__u8 prefix_len;
	__u8 __reserved[5];
	__u8 addr[16];
};

/* Most prefixes in one allow-list. */
#define RDMAXFER_MAX_ALLOW		64

/**
 * struct rdmaxfer_listen - argument of RDMAXFER_IOC_LISTEN
 * @size: sizeof(struct rdmaxfer_listen)
 * @flags: must be 0
 * @addr: in, local address to listen on (all zero address: every address of
 *	the family); out, @addr.port is the bound port (useful with port 0)
 * @backlog: in, connections established but not yet accepted; 0: default
 * @listen_id: out, the listener's id
 * @key_id: in, a key (above) every client must prove it holds; 0: none,
 *	and a client that asks for authentication is refused
 * @allow_count: in, number of prefixes at @allow (0: any address;
 *	at most RDMAXFER_MAX_ALLOW)
 * @allow: in, user pointer to @allow_count struct rdmaxfer_prefix: a client
 *	whose address matches none is refused before a QP is made for it
 *
 * Incoming connections whose handshake is valid are accepted by the kernel
 * and queued until ACCEPT takes them; beyond @backlog they are rejected.
 * With a key, a connection is queued only once its client has proved it
 * holds the key; until then it counts against @backlog.  A key that is
 * revoked or expires later refuses new clients and leaves established
 * connections alone.  Errors of the key: ENOKEY (no such key), EACCES
 * (not one the caller may search for), EKEYREVOKED, EKEYEXPIRED,
 * EKEYREJECTED (another type, or a length out of range).
 */
struct rdmaxfer_listen {
	__u32 size;
	__u32 flags;
	struct rdmaxfer_addr addr;
	__u32 backlog;
	__u32 listen_id;
	__s32 key_id;
	__u32 allow_count;
	__aligned_u64 allow;
};

#define RDMAXFER_IOC_LISTEN		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_LISTEN)

/**
 * struct rdmaxfer_accept - argument of RDMAXFER_IOC_ACCEPT
 * @size: sizeof(struct rdmaxfer_accept)
 * @flags: must be 0
 * @listen_id: in, the listener
 * @conn_id: out, the new connection
 * @timeout_ns: in, how long to wait for a connection: < 0 forever, 0 not at
 *	all (EAGAIN if none is queued), > 0 at most this long (ETIMEDOUT)
 * @peer: out, the peer's address
 */
struct rdmaxfer_accept {
	__u32 size;
	__u32 flags;
	__u32 listen_id;
	__u32 conn_id;
	__aligned_s64 timeout_ns;
	struct rdmaxfer_addr peer;
};

#define RDMAXFER_IOC_ACCEPT		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_ACCEPT)

/**
 * struct rdmaxfer_connect - argument of RDMAXFER_IOC_CONNECT
 * @size: sizeof(struct rdmaxfer_connect)
 * @flags: must be 0
 * @addr: in, the server's address and port (0: RDMAXFER_DEFAULT_PORT)
 * @timeout_ns: in, give up after this long (ETIMEDOUT); <= 0: 10 s
 * @conn_id: out, the connection
 * @reject_reason: out, when the server refused the handshake
 *	(ECONNREFUSED): RDMAXFER_REJECT_*; 0 otherwise
 * @key_id: in, a key (above) the server must prove it holds, and we prove
 *	we hold; 0: none (a server that requires one refuses us)
 * @__reserved: 0
 *
 * Blocks until the connection is established or fails: ECONNREFUSED (no
 * listener, or the server rejected us: see @reject_reason), EHOSTUNREACH or
 * ENETUNREACH (no route or no RDMA device for the address), ETIMEDOUT,
 * EINTR (a signal; nothing is left behind), EADDRINUSE or EADDRNOTAVAIL
 * (iWARP: TCP held every local port tried; each attempt takes another).
 * With @key_id: the key's errors as for LISTEN, and ECONNREFUSED with
 * @reject_reason RDMAXFER_REJECT_AUTH_UNAVAILABLE (the server has no key,
 * or is older) or RDMAXFER_REJECT_AUTH_FAILED (the server holds another
 * key: its proof did not match ours).
 */
struct rdmaxfer_connect {
	__u32 size;
	__u32 flags;
	struct rdmaxfer_addr addr;
	__aligned_s64 timeout_ns;
	__u32 conn_id;
	__u32 reject_reason;
	__s32 key_id;
	__u32 __reserved;
};

#define RDMAXFER_IOC_CONNECT		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_CONNECT)

/* Why a server refused a connection (struct rdmaxfer_connect.reject_reason). */
#define RDMAXFER_REJECT_NONE		0
#define RDMAXFER_REJECT_NOT_RDMAXFER	1	/* the peer is not rdmaxfer (bad magic) */
#define RDMAXFER_REJECT_VERSION		2	/* protocol version not supported */
#define RDMAXFER_REJECT_PARAMS		3	/* queue depth or buffer size out of range */
#define RDMAXFER_REJECT_BACKLOG		4	/* listener backlog full */
#define RDMAXFER_REJECT_RESOURCES	5	/* server out of memory or QPs */
#define RDMAXFER_REJECT_UNKNOWN		6	/* no reason given (not rdmaxfer, or no listener) */
#define RDMAXFER_REJECT_AUTH_REQUIRED	7	/* the listener requires a key; we gave none */
#define RDMAXFER_REJECT_AUTH_UNAVAILABLE 8	/* we gave a key; the server has none usable */
#define RDMAXFER_REJECT_AUTH_FAILED	9	/* the server proved another key (told by us) */
#define RDMAXFER_REJECT_NOT_ALLOWED	10	/* our address is not on the allow-list */

/**
 * struct rdmaxfer_close - argument of RDMAXFER_IOC_CLOSE
 * @size: sizeof(struct rdmaxfer_close)
 * @flags: must be 0
 * @id: in, a listener or a connection
 * @__reserved: must be 0
 *
 * Closing a listener stops accepting and drops connections not yet accepted.
 * Closing a connection disconnects it: operations still in flight complete
 * with ECANCELED, the peer sees RDMAXFER_EVENT_DISCONNECTED, windows exposed
 * on it are invalidated and released.
 */
struct rdmaxfer_close {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __reserved;
};

#define RDMAXFER_IOC_CLOSE		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_CLOSE)

/* struct rdmaxfer_reg_buf.access: how the device may use the memory */
#define RDMAXFER_BUF_READ		_BITUL(0)	/* source: WRITE, SEND, remote READ */
#define RDMAXFER_BUF_WRITE		_BITUL(1)	/* sink: READ, remote WRITE and atomics */

/**
 * struct rdmaxfer_reg_buf - argument of RDMAXFER_IOC_REG_BUF
 * @size: sizeof(struct rdmaxfer_reg_buf)
 * @flags: must be 0
 * @addr: in, start of the user memory (any alignment)
 * @length: in, its length, 1 .. max_buf_size (GET_INFO)
 * @access: in, RDMAXFER_BUF_* (at least one)
 * @buf_id: out, the buffer's id
 *
 * Pins the pages (anonymous, shmem/memfd or hugetlb memory; memory backed
 * by a file whose page cache needs writeback, i.e. a file on a disk file
 * system, fails with EOPNOTSUPP; unmapped memory with EFAULT) and charges
 * them to RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK (ENOMEM beyond
 * the limit).  The memory stays pinned until DEREG_BUF or close.
 */
struct rdmaxfer_reg_buf {
	__u32 size;
	__u32 flags;
	__aligned_u64 addr;
	__aligned_u64 length;
	__u32 access;
	__u32 buf_id;
};

#define RDMAXFER_IOC_REG_BUF		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_REG_BUF)

/**
 * struct rdmaxfer_dereg_buf - argument of RDMAXFER_IOC_DEREG_BUF
 * @size: sizeof(struct rdmaxfer_dereg_buf)
 * @flags: must be 0
 * @buf_id: in, the buffer
 * @__reserved: must be 0
 *
 * EBUSY while a window exposes the buffer or an operation uses it.
 */
struct rdmaxfer_dereg_buf {
	__u32 size;
	__u32 flags;
	__u32 buf_id;
	__u32 __reserved;
};

#define RDMAXFER_IOC_DEREG_BUF		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_DEREG_BUF)

/* Window access (struct rdmaxfer_expose.access, events) */
#define RDMAXFER_REMOTE_READ		_BITUL(0)
#define RDMAXFER_REMOTE_WRITE		_BITUL(1)
#define RDMAXFER_REMOTE_ATOMIC		_BITUL(2)

/**
 * struct rdmaxfer_expose - argument of RDMAXFER_IOC_EXPOSE
 * @size: sizeof(struct rdmaxfer_expose)
 * @flags: must be 0
 * @conn_id: in, the connection whose peer may access the window
 * @buf_id: in, the registered buffer
 * @offset: in, start of the window in the buffer
 * @length: in, length of the window, 1 .. max_window_size (GET_INFO)
 * @access: in, RDMAXFER_REMOTE_* (at least one); the buffer must have been
 *	registered with RDMAXFER_BUF_WRITE for REMOTE_WRITE or REMOTE_ATOMIC,
 *	and with RDMAXFER_BUF_READ for REMOTE_READ; a REMOTE_ATOMIC window
 *	must start at an 8-byte aligned address
 * @window_id: out, the window's id, which the peer uses
 *
 * Registers the slice with fast registration (FRWR) for exactly @access and
 * advertises it to the peer; returns when the peer has been sent the
 * advertisement.  Never a global rkey.
 */
struct rdmaxfer_expose {
	__u32 size;
	__u32 flags;
	__u32 conn_id;
	__u32 buf_id;
	__aligned_u64 offset;
	__aligned_u64 length;
	__u32 access;
	__u32 window_id;
};

#define RDMAXFER_IOC_EXPOSE		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_EXPOSE)

/**
 * struct rdmaxfer_revoke - argument of RDMAXFER_IOC_REVOKE
 * @size: sizeof(struct rdmaxfer_revoke)
 * @flags: must be 0
 * @window_id: in, a window this file exposed
 * @__reserved: must be 0
 *
 * Invalidates the window's keys (the peer's later accesses fail), tells the
 * peer (RDMAXFER_EVENT_WINDOW_REVOKED) and releases the buffer slice.
 */
struct rdmaxfer_revoke {
	__u32 size;
	__u32 flags;
	__u32 window_id;
	__u32 __reserved;
};

#define RDMAXFER_IOC_REVOKE		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_REVOKE)

/* struct rdmaxfer_op.opcode */
#define RDMAXFER_OP_WRITE		1	/* local buffer -> peer window */
#define RDMAXFER_OP_READ		2	/* peer window -> local buffer */
#define RDMAXFER_OP_SEND		3	/* local buffer -> peer's slot, or its RECV queue */
#define RDMAXFER_OP_WRITE_IMM		4	/* WRITE, then notify the peer with @imm_data */
#define RDMAXFER_OP_CAS			5	/* 8-byte compare-and-swap on a peer window */
#define RDMAXFER_OP_FADD		6	/* 8-byte fetch-and-add on a peer window */
#define RDMAXFER_OP_RECV		7	/* post a receive slot in a local buffer */

/* struct rdmaxfer_op.flags of a RECV */
#define RDMAXFER_RECV_ECHO		_BITUL(0)	/* the kernel sends it back */
#define RDMAXFER_RECV_SINK		_BITUL(1)	/* the kernel drops it (@imm_data) */

/**
 * struct rdmaxfer_op - one operation of a SUBMIT batch
 * @opcode: RDMAXFER_OP_*
 * @flags: RECV: RDMAXFER_RECV_ECHO, RDMAXFER_RECV_SINK or 0; others: 0
 * @conn_id: the connection
 * @buf_id: local registered buffer (not used by CAS and FADD); RECV: the
 *	buffer the slot is in, registered with RDMAXFER_BUF_WRITE
 * @window_id: the peer's window (WRITE, READ, WRITE_IMM, CAS, FADD)
 * @buf_offset: offset in the local buffer
 * @length: bytes to move; 8 for CAS and FADD; SEND: 1 .. max_send_size, or
 *	1 .. QUERY_CONN's max_msg_size once the peer posts receive slots;
 *	RECV: the slot's length, min_recv_size .. max_msg_size
 * @remote_offset: offset in the peer's window (8-byte aligned for atomics)
 * @user_data: returned unchanged in the completion
 * @compare_add: CAS: the value compared; FADD: the value added
 * @swap: CAS: the value stored if the comparison succeeds
 * @imm_data: WRITE_IMM: the value the peer's event carries; SEND: the value
 *	the peer's RECV completion carries, when the message lands in a slot;
 *	RECV with RDMAXFER_RECV_SINK: the immediate of the messages it drops
 * @__reserved: must be 0
 *
 * Two-sided messages.  A SEND lands in the peer's kernel queue (RDMAXFER_
 * EVENT_RECV, taken with RDMAXFER_IOC_RECV: a copy each way, at most
 * max_send_size bytes) until the peer posts receive slots; from then on,
 * every SEND of the connection goes from the buffer straight into the
 * peer's next slot that is long enough, with no copy, and completes when
 * the peer's adapter has it (the sender waits, interruptibly, while the
 * peer has no such slot posted: RNR cannot happen).  RECV posts a slot:
 * @length bytes at @buf_offset of @buf_id, for the peer's next message.  A
 * slot completes once, with the message's length in @bytes and its
 * @imm_data, or with ECANCELED when the connection goes down (a connection
 * whose peer predates receive slots: EOPNOTSUPP, see QUERY_CONN's
 * conn_flags).  Messages land in slots in the order the slots were posted,
 * but a slot shorter than a message is passed over, and the module's own
 * messages may use a slot on their way: such a slot stays posted, behind
 * the others (the completion's user_data says which slot it is).  A
 * slot's memory is the kernel's while it is posted: slots must not overlap
 * and the user must not write to them (the module's own messages pass
 * through slots too; one the user overwrote drops the connection, EPROTO).
 * The
 * peer learns of slots a little later: SENDs it posted before it did
 * arrive as RDMAXFER_EVENT_RECV; RC ordering makes them come first.
 *
 * An echo slot (RECV with RDMAXFER_RECV_ECHO) answers by itself: the kernel
 * SENDs every message that lands in it back to the peer, the same bytes
 * with the same immediate, from the slot (zero copy: the echo waits until
 * the peer has posted a slot it fits), and posts the slot again once that
 * SEND is done, all in its completion handlers, without the user.  The
 * slot completes only when the connection goes down (ECANCELED), or
 * fails; the messages it echoed count as received in STATS.  A peer that
 * stops posting slots stops the echoes, and then its own SENDs, once the
 * echo slots are all waiting: nothing piles up.
 *
 * A sink slot (RECV with RDMAXFER_RECV_SINK) drops the messages that carry
 * its @imm_data: the kernel counts them (STATS' recv_msgs and recv_bytes,
 * QUERY_CONN's sink_msgs and sink_bytes) and posts the slot again from its
 * completion handler, without the user, who never sees the bytes (they
 * are in the slot until the next message overwrites them).  Any other
 * message completes the slot as usual, so a protocol's own messages still
 * reach the process.  The slot completes when the connection goes down
 * (ECANCELED).  It measures the peer's SENDs without a receiving process
 * in the way (`rdmaxfer bench --op send`).
 *
 * Every field is checked before anything of the batch is posted: an
 * operation outside its buffer or window, on a window without the access it
 * needs, or on an unknown id fails the whole SUBMIT with EINVAL (or ENOENT
 * for an id that does not exist) and posts nothing.
 */
struct rdmaxfer_op {
	__u16 opcode;
	__u16 flags;
	__u32 conn_id;
	__u32 buf_id;
	__u32 window_id;
	__aligned_u64 buf_offset;
	__aligned_u64 length;
	__aligned_u64 remote_offset;
	__aligned_u64 user_data;
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	__u32 imm_data;
	__u32 __reserved;
};

/**
 * struct rdmaxfer_submit - argument of RDMAXFER_IOC_SUBMIT
 * @size: sizeof(struct rdmaxfer_submit)
 * @flags: must be 0
 * @count: in, number of operations, 1 .. max_batch (GET_INFO)
 * @op_size: in, sizeof(struct rdmaxfer_op)
 * @ops: in, pointer to the operations
 *
 * Posts the batch (blocking, interruptibly, while a connection's send queue
 * is full).  EAGAIN if the file already has max_pending operations posted or
 * completed but not reaped: REAP first.  ENOTCONN if a connection is not
 * established any more.  @count is written back only on success; an error
 * means nothing of the batch was posted.
 */
struct rdmaxfer_submit {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 op_size;
	__aligned_u64 ops;
};

#define RDMAXFER_IOC_SUBMIT		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_SUBMIT)

/*
 * Events in struct rdmaxfer_completion.opcode (operations use RDMAXFER_OP_*):
 *
 * WINDOW: the peer exposed @window_id to us, @bytes long, @flags = access.
 * WINDOW_REVOKED: the peer revoked @window_id.
 * RECV: a message of @bytes arrived on @conn_id: take it with RECV.
 * WRITE_IMM: the peer wrote @bytes at offset @value into our @window_id,
 *	and sent @imm_data with it; the data is in place.
 * DISCONNECTED: @conn_id is down; @status says why (0: the peer closed it,
 *	ETIMEDOUT: the peer stopped answering (its host died, the link is
 *	down; noticed within the module parameter peer_timeout_ms),
 *	ECONNRESET or EIO: the link or the peer failed, ENODEV: the device was
 *	removed, EPROTO: the peer broke the protocol, ENOBUFS: this file did
 *	not reap fast enough).
 *
 * Events about a connection a listener accepted may come before ACCEPT
 * returns its id; they already carry that id.
 * CONNECTED: listener @conn_id has a connection to ACCEPT; @value is its id.
 */
#define RDMAXFER_EVENT_WINDOW		0x100
#define RDMAXFER_EVENT_WINDOW_REVOKED	0x101
#define RDMAXFER_EVENT_RECV		0x102
#define RDMAXFER_EVENT_WRITE_IMM	0x103
#define RDMAXFER_EVENT_DISCONNECTED	0x104
#define RDMAXFER_EVENT_CONNECTED	0x105

/**
 * struct rdmaxfer_completion - one completion or event, from REAP
 * @user_data: the operation's user_data; 0 for events
 * @conn_id: the connection (for RDMAXFER_EVENT_CONNECTED: the listener)
 * @opcode: RDMAXFER_OP_* of the completed operation, or RDMAXFER_EVENT_*
 * @flags: RDMAXFER_EVENT_WINDOW: the window's RDMAXFER_REMOTE_* access
 * @status: 0, or a negative errno: ECANCELED (flushed: the connection went
 *	down or was closed), EREMOTEIO (the peer refused the access), ENODEV
 *	(the device was removed), ECONNRESET, EIO
 * @wc_status: the work completion status of the device (IB_WC_*), 0 = success
 * @bytes: bytes moved (operations; RECV: the message's length), length
 *	(events)
 * @value: CAS/FADD: the value before the operation; EVENT_WRITE_IMM: the
 *	offset in the window
 * @imm_data: EVENT_WRITE_IMM, and RECV: the peer's immediate value
 * @window_id: events about windows: the window
 */
struct rdmaxfer_completion {
	__aligned_u64 user_data;
	__u32 conn_id;
	__u16 opcode;
	__u16 flags;
	__s32 status;
	__u32 wc_status;
	__aligned_u64 bytes;
	__aligned_u64 value;
	__u32 imm_data;
	__u32 window_id;
};

/**
 * struct rdmaxfer_reap - argument of RDMAXFER_IOC_REAP
 * @size: sizeof(struct rdmaxfer_reap)
 * @flags: must be 0
 * @count: in, capacity of @completions; out, number returned
 * @__reserved: must be 0
 * @timeout_ns: in, wait for at least one: < 0 forever, 0 not at all,
 *	> 0 at most this long; returns 0 with @count 0 when nothing came
 * @completions: in, pointer to struct rdmaxfer_completion[@count]
 *
 * Completions and events are returned in the order they happened.  EINTR if
 * a signal arrived before anything did.  With a completion ring (struct
 * rdmaxfer_ring), the wait also ends when the ring holds entries, and REAP
 * returns nothing until they are read.
 */
struct rdmaxfer_reap {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 __reserved;
	__aligned_s64 timeout_ns;
	__aligned_u64 completions;
};

#define RDMAXFER_IOC_REAP		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_REAP)

/**
 * struct rdmaxfer_recv - argument of RDMAXFER_IOC_RECV
 * @size: sizeof(struct rdmaxfer_recv)
 * @flags: must be 0
 * @conn_id: in, the connection
 * @length: in, room at @addr; out, length of the message
 * @addr: in, where to copy the oldest message received on @conn_id
 *
 * Takes the oldest message (announced by RDMAXFER_EVENT_RECV) off the
 * connection's queue.  EAGAIN if there is none; EMSGSIZE (and the message
 * stays queued, @length set) if it does not fit.  A message's credit goes
 * back to the sender only when it is taken: a receiver that does not RECV
 * makes the sender's SENDs wait (back-pressure), never fail.
 */
struct rdmaxfer_recv {
	__u32 size;
	__u32 flags;
	__u32 conn_id;
	__u32 length;
	__aligned_u64 addr;
};

#define RDMAXFER_IOC_RECV		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_RECV)

/* struct rdmaxfer_conn_info.state */
#define RDMAXFER_CONN_CONNECTING	1
#define RDMAXFER_CONN_ESTABLISHED	2
#define RDMAXFER_CONN_DISCONNECTED	3

/**
 * struct rdmaxfer_conn_info - argument of RDMAXFER_IOC_QUERY_CONN
 * @size: sizeof(struct rdmaxfer_conn_info)
 * @flags: must be 0
 * @conn_id: in, the connection
 * @state: out, RDMAXFER_CONN_*
 * @local: out, local address
 * @peer: out, peer address
 * @dev_index: out, the RDMA device the connection uses
 * @port: out, its port
 * @queue_depth: out, operations that may be outstanding on the connection
 * @max_send_size: out, largest SEND the peer accepts
 * @max_op_size: out, largest WRITE/READ/WRITE_IMM in one operation on this
 *	connection (it depends on the peer's device); split larger transfers
 * @max_window_size: out, a window of this size is accepted by EXPOSE on
 *	this connection at any offset (its device's fast-registration lists
 *	bound it; at a page-aligned offset up to a page more fits)
 * @max_msg_size: out, the largest SEND into a slot, and the longest slot,
 *	at any offset of any buffer (both ports must accept the message, and
 *	the device's work requests must reach every byte of it: on Soft-iWARP
 *	about half a fast-registration page list, 512 KiB)
 * @conn_flags: out, RDMAXFER_CONN_F_*
 * @sink_msgs: out, messages the connection's sink slots dropped
 * @sink_bytes: out, their bytes
 */
struct rdmaxfer_conn_info {
	__u32 size;
	__u32 flags;
	__u32 conn_id;
	__u32 state;
	struct rdmaxfer_addr local;
	struct rdmaxfer_addr peer;
	__u32 dev_index;
	__u32 port;
	__u32 queue_depth;
	__u32 max_send_size;
	__aligned_u64 max_op_size;
	__aligned_u64 max_window_size;
	__u32 max_msg_size;
	__u32 conn_flags;
	__aligned_u64 sink_msgs;
	__aligned_u64 sink_bytes;
};

/* struct rdmaxfer_conn_info.conn_flags */
#define RDMAXFER_CONN_F_RECV_SLOTS	_BITUL(0)	/* RECV works: the peer speaks slots */
#define RDMAXFER_CONN_F_PEER_SLOTS	_BITUL(1)	/* the peer posted slots: zero-copy SEND */

#define RDMAXFER_IOC_QUERY_CONN		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_QUERY_CONN)

/**
 * struct rdmaxfer_counters - operation counters
 * @ops: operations completed, by RDMAXFER_OP_* (index 0 unused)
 * @bytes: bytes moved by successful operations, by RDMAXFER_OP_*
 * @errors: operations completed with an error, by RDMAXFER_OP_*
 * @recv_msgs: messages received (SEND at the peer)
 * @recv_bytes: bytes received in messages
 * @writes_imm_in: RDMAXFER_EVENT_WRITE_IMM notifications received
 * @conns: connections established
 * @conn_errors: connections that failed or went down with an error
 * @protocol_errors: connections dropped for a malformed peer message
 */
struct rdmaxfer_counters {
	__aligned_u64 ops[8];
	__aligned_u64 bytes[8];
	__aligned_u64 errors[8];
	__aligned_u64 recv_msgs;
	__aligned_u64 recv_bytes;
	__aligned_u64 writes_imm_in;
	__aligned_u64 conns;
	__aligned_u64 conn_errors;
	__aligned_u64 protocol_errors;
};

/**
 * struct rdmaxfer_auth_counters - who was let in
 * @auth_ok: connections whose peer proved the key (both sides count)
 * @auth_failed: connections refused or dropped for the key: a client
 *	without one, a wrong proof, a client silent until dropped, a server
 *	without one, a revoked or expired key
 * @not_allowed: clients refused by a listener's allow-list
 */
struct rdmaxfer_auth_counters {
	__aligned_u64 auth_ok;
	__aligned_u64 auth_failed;
	__aligned_u64 not_allowed;
};

/**
 * struct rdmaxfer_stats - argument of RDMAXFER_IOC_STATS
 * @size: sizeof(struct rdmaxfer_stats)
 * @flags: must be 0
 * @file: out, counters of this open file
 * @global: out, counters of the module since it was loaded
 * @pinned_bytes: out, bytes this file has pinned now
 * @num_conns: out, connections of this file now
 * @num_bufs: out, registered buffers of this file now
 * @num_windows: out, windows this file exposes now
 * @__reserved: 0
 * @file_auth: out, authentication counters of this file
 * @global_auth: out, of the module since it was loaded
 */
struct rdmaxfer_stats {
	__u32 size;
	__u32 flags;
	struct rdmaxfer_counters file;
	struct rdmaxfer_counters global;
	__aligned_u64 pinned_bytes;
	__u32 num_conns;
	__u32 num_bufs;
	__u32 num_windows;
	__u32 __reserved;
	struct rdmaxfer_auth_counters file_auth;
	struct rdmaxfer_auth_counters global_auth;
};

#define RDMAXFER_IOC_STATS		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_STATS)

/* struct rdmaxfer_ring.flags */
#define RDMAXFER_RING_QUEUED		_BITUL(0)	/* events wait for REAP */

/**
 * struct rdmaxfer_ring - the completion ring, mmap()ed from the file
 * @head: written by userspace: the next entry it will read
 * @__pad0: 0 (@head and @tail 128 bytes apart: on cache lines of their own)
 * @tail: written by the kernel: the next entry it will fill
 * @mask: the number of entries - 1
 * @flags: RDMAXFER_RING_QUEUED: completions and events wait in the file's
 *	queue; REAP them once the ring is empty
 * @__pad1: 0
 * @entries: the ring, @mask + 1 entries
 *
 * Once a file's ring (RDMAXFER_IOC_RING_SETUP) has been mapped, the kernel
 * writes each completion and event to entries[@tail & @mask] and then
 * advances @tail (store-release), as long as there is room and nothing
 * waits in the queue.  Otherwise (and for a peer's event that holds its
 * credit until reaped, which only comes while events wait) it queues them
 * for REAP as without a ring and sets RDMAXFER_RING_QUEUED; later ones
 * follow them there until REAP has emptied the queue, so the order is kept:
 * everything in the ring came before everything in the queue.  Userspace
 * reads @tail (load-acquire), reads the entries up to it, then advances
 * @head (store-release); when the ring is empty and RDMAXFER_RING_QUEUED is
 * set, it REAPs.  REAP takes nothing from the queue while the ring holds
 * entries (count 0), so the order holds even for a caller that REAPs
 * first.  poll() reports POLLIN while either holds something, and REAP with
 * a timeout returns (possibly with nothing) as soon as either does.  The
 * kernel never reads anything here but @head, and treats a @head it cannot
 * make sense of as a full ring.
 */
struct rdmaxfer_ring {
	__u32 head;
	__u32 __pad0[31];
	__u32 tail;
	__u32 mask;
	__u32 flags;
	__u32 __pad1[29];
	struct rdmaxfer_completion entries[];
};

/**
 * struct rdmaxfer_ring_setup - argument of RDMAXFER_IOC_RING_SETUP
 * @size: sizeof(struct rdmaxfer_ring_setup)
 * @flags: must be 0
 * @entries: in, ring entries: a power of 2, at most GET_INFO's max_pending
 * @__reserved: must be 0
 * @mmap_size: out, bytes to mmap() (MAP_SHARED, offset 0): struct
 *	rdmaxfer_ring and its entries, rounded up to pages
 *
 * Gives the file a completion ring (struct rdmaxfer_ring), once: EBUSY if
 * it has one.  Completions already queued stay there, for REAP.
 */
struct rdmaxfer_ring_setup {
	__u32 size;
	__u32 flags;
	__u32 entries;
	__u32 __reserved;
	__aligned_u64 mmap_size;
};

#define RDMAXFER_IOC_RING_SETUP		_IO(RDMAXFER_TYPE, RDMAXFER_CMD_RING_SETUP)

#endif /* _UAPI_LINUX_RDMAXFER_H */
