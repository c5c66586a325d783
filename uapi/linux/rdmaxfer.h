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
};

/* Feature bits reported by GET_INFO. */
#define RDMAXFER_FEATURE_DEVICE_QUERY	_BITULL(0)	/* LIST_DEVICES, QUERY_DEVICE, QUERY_PORT */

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
 *
 * Userspace calls this first to learn what the module supports.  Later ABI
 * revisions append limits at the end.
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

#endif /* _UAPI_LINUX_RDMAXFER_H */
