// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - RDMA devices: the ib_client and the device queries.
 *
 * Design: the RDMA core tells us about devices through an ib_client.  Its
 * .add callback creates a struct rdmaxfer_device and publishes it in an
 * xarray keyed by the core's device index; .remove marks it dying (no new
 * connection may attach), tears down every connection still on it (their
 * users see ENODEV), frees the protection domain, unpublishes the device,
 * drops the registry's reference and waits until every other user has
 * dropped its reference too.  So once .remove returns, rdmaxfer no longer
 * touches the ib_device, which is what the core requires (`rdma link
 * delete`, hot-unplug and rmmod of the provider all go through .remove).
 * Our .remove runs before rdma_cm's (clients are removed in reverse order of
 * registration), so the cm_ids of those connections are still ours to
 * destroy.
 *
 * Lookups take a reference under the xarray lock with kref_get_unless_zero(),
 * so a device being removed is never handed out.  Queries hold a reference
 * for the duration of one ioctl, connections for their lifetime.
 *
 * The queries answer only about devices the file's network namespace may
 * use (rdma_dev_access_netns(): every device in the RDMA core's default
 * shared mode; in its exclusive mode, those of that namespace), as `rdma
 * dev` and ib_uverbs do: a file opened in another namespace learns no
 * name, GUID or GID of the host's devices.
 *
 * Protection domains are per connection (conn.c), not per device: an rkey
 * of one connection's window is then worthless on any other QP of the
 * host, whichever file or peer owns it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <linux/netdevice.h>
#include <rdma/ib_cache.h>

#include "rdmaxfer.h"

/* index -> struct rdmaxfer_device; holds the registry's reference */
static DEFINE_XARRAY(rdmaxfer_devices);

static struct ib_client rdmaxfer_ib_client;

static void rdmaxfer_device_release(struct kref *ref)
{
	struct rdmaxfer_device *rd = container_of(ref, struct rdmaxfer_device, rd_ref);

	complete(&rd->rd_released);
}

/**
 * rdmaxfer_device_get - look up a device by its index and take a reference
 * @index: the RDMA core's device index
 *
 * Context: any context that may take a spinlock.
 * Return: the device, or NULL when there is none (or it is being removed).
 */
struct rdmaxfer_device *rdmaxfer_device_get(u32 index)
{
	struct rdmaxfer_device *rd;

	xa_lock(&rdmaxfer_devices);
	rd = xa_load(&rdmaxfer_devices, index);
	if (rd && !kref_get_unless_zero(&rd->rd_ref))
		rd = NULL;
	xa_unlock(&rdmaxfer_devices);
	return rd;
}

/**
 * rdmaxfer_device_put - drop a device reference
 * @rd: the device
 */
void rdmaxfer_device_put(struct rdmaxfer_device *rd)
{
	kref_put(&rd->rd_ref, rdmaxfer_device_release);
}

/*
 * rdmaxfer_device_get(), for a query of @rf: NULL as well for a device its
 * network namespace may not use (see the top of this file).
 */
static struct rdmaxfer_device *rdmaxfer_device_get_for(struct rdmaxfer_file *rf, u32 index)
{
	struct rdmaxfer_device *rd = rdmaxfer_device_get(index);

	if (rd && !rdma_dev_access_netns(rd->rd_ib, rf->rf_net)) {
		rdmaxfer_device_put(rd);
		rd = NULL;
	}
	return rd;
}

static int rdmaxfer_add_one(struct ib_device *ib)
{
	struct rdmaxfer_device *rd;
	int ret;

	rd = kzalloc_obj(*rd, GFP_KERNEL);
	if (!rd)
		return -ENOMEM;
	rd->rd_ib = ib;
	rd->rd_index = ib->index;
	kref_init(&rd->rd_ref);
	init_completion(&rd->rd_released);
	mutex_init(&rd->rd_lock);
	INIT_LIST_HEAD(&rd->rd_conns);

	ret = xa_insert(&rdmaxfer_devices, rd->rd_index, rd, GFP_KERNEL);
	if (ret) {
		kfree(rd);
		return ret;
	}
	ib_set_client_data(ib, &rdmaxfer_ib_client, rd);
	pr_info("%s: device added (index %u)\n", dev_name(&ib->dev), rd->rd_index);
	return 0;
}

static void rdmaxfer_remove_one(struct ib_device *ib, void *client_data)
{
	struct rdmaxfer_device *rd = client_data;
	struct rdmaxfer_conn *conn;

	mutex_lock(&rd->rd_lock);
	rd->rd_dying = true;
	while ((conn = list_first_entry_or_null(&rd->rd_conns, struct rdmaxfer_conn,
						c_dev_entry))) {
		kref_get(&conn->c_obj.ref);
		mutex_unlock(&rd->rd_lock);
		rdmaxfer_conn_teardown(conn, -ENODEV);	/* detaches it */
		rdmaxfer_obj_put(&conn->c_obj);
		mutex_lock(&rd->rd_lock);
	}
	mutex_unlock(&rd->rd_lock);

	xa_erase(&rdmaxfer_devices, rd->rd_index);
	rdmaxfer_device_put(rd);
	/* connections are gone; windows being revoked still hold references */
	wait_for_completion(&rd->rd_released);
	pr_info("%s: device removed\n", dev_name(&ib->dev));
	kfree(rd);
}

static struct ib_client rdmaxfer_ib_client = {
	.name	= KBUILD_MODNAME,
	.add	= rdmaxfer_add_one,
	.remove	= rdmaxfer_remove_one,
};

/**
 * rdmaxfer_device_attach - put a connection on a device
 * @rd: the device (the caller's reference passes to the connection)
 * @conn: the connection
 *
 * A connection that teardown has already marked down is refused: its
 * teardown may have detached it already, and .remove would then find it
 * on @rd_conns forever.
 *
 * Context: process context, takes rd_lock (then c_lock).
 * Return: 0, -ENODEV if the device is being removed, -ENOTCONN if the
 * connection is down.
 */
int rdmaxfer_device_attach(struct rdmaxfer_device *rd, struct rdmaxfer_conn *conn)
{
	int ret = 0;

	might_sleep();
	mutex_lock(&rd->rd_lock);
	if (rd->rd_dying) {
		ret = -ENODEV;
		goto out;
	}
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_DOWN)
		ret = -ENOTCONN;
	else
		conn->c_dev = rd;
	spin_unlock_bh(&conn->c_lock);
	if (!ret)
		list_add_tail(&conn->c_dev_entry, &rd->rd_conns);
out:
	mutex_unlock(&rd->rd_lock);
	return ret;
}

/**
 * rdmaxfer_device_detach - take a connection off its device
 * @conn: the connection; its device reference is dropped
 *
 * Context: process context, teardown (c_teardown_lock held); takes rd_lock.
 */
void rdmaxfer_device_detach(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_device *rd = conn->c_dev;

	lockdep_assert_held(&conn->c_teardown_lock);
	if (!rd)
		return;
	mutex_lock(&rd->rd_lock);
	list_del_init(&conn->c_dev_entry);
	mutex_unlock(&rd->rd_lock);
	conn->c_dev = NULL;
	rdmaxfer_device_put(rd);
}

/**
 * rdmaxfer_device_count - number of devices rdmaxfer tracks now
 *
 * Context: process context.
 * Return: the count; it may change as soon as it is returned.
 */
u32 rdmaxfer_device_count(void)
{
	struct rdmaxfer_device *rd;
	unsigned long index;
	u32 n = 0;

	xa_for_each(&rdmaxfer_devices, index, rd)
		n++;
	return n;
}

/**
 * rdmaxfer_ioctl_list_devices - RDMAXFER_IOC_LIST_DEVICES
 * @rf: the caller's file context
 * @arg: struct rdmaxfer_list_devices, already copied in
 *
 * Writes at most @count indexes to the user array and sets @count to the
 * number of devices (those the file's network namespace may use).  The
 * devices are walked under RCU only; a device that appears or goes away
 * meanwhile may or may not be listed.
 *
 * Context: process context, may fault.
 * Return: 0, -EINVAL for non-zero reserved bits, -EFAULT for a bad pointer.
 */
int rdmaxfer_ioctl_list_devices(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_list_devices *cmd = arg;
	u32 __user *uidx = u64_to_user_ptr(cmd->indexes);
	struct rdmaxfer_device *rd;
	unsigned long index;
	u32 n = 0;

	if (cmd->__reserved)
		return -EINVAL;

	xa_for_each(&rdmaxfer_devices, index, rd) {
		rd = rdmaxfer_device_get_for(rf, index);
		if (!rd)
			continue;
		rdmaxfer_device_put(rd);
		if (n < cmd->count && put_user((u32)index, uidx + n))
			return -EFAULT;
		n++;
	}
	cmd->count = n;
	return 0;
}

/* The uapi mirrors these ib_core values one to one. */
static_assert(RDMAXFER_ATOMIC_GLOB == IB_ATOMIC_GLOB);
static_assert(RDMAXFER_NODE_CA == RDMA_NODE_IB_CA);
static_assert(RDMAXFER_NODE_RNIC == RDMA_NODE_RNIC);
static_assert(RDMAXFER_NODE_UNSPECIFIED == RDMA_NODE_UNSPECIFIED);
static_assert(RDMAXFER_PORT_ACTIVE_DEFER == IB_PORT_ACTIVE_DEFER);
static_assert(RDMAXFER_LINK_LAYER_ETHERNET == IB_LINK_LAYER_ETHERNET);
static_assert(RDMAXFER_GID_TYPE_ROCE_V2 == IB_GID_TYPE_ROCE_UDP_ENCAP);

static u32 rdmaxfer_device_caps(struct ib_device *ib)
{
	u32 caps = 0;

	if (ib->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)
		caps |= RDMAXFER_DEVICE_CAP_FRWR;
	if (ib->attrs.atomic_cap != IB_ATOMIC_NONE)
		caps |= RDMAXFER_DEVICE_CAP_ATOMIC;
	if (ib_uses_virt_dma(ib))
		caps |= RDMAXFER_DEVICE_CAP_VIRT_DMA;
	return caps;
}

/**
 * rdmaxfer_ioctl_query_device - RDMAXFER_IOC_QUERY_DEVICE
 * @rf: the caller's file context
 * @arg: struct rdmaxfer_device_info, already copied in
 *
 * Reports the name and the cached attributes of one device.
 *
 * Context: process context.
 * Return: 0, -EINVAL for non-zero reserved bits, -ENODEV for an unknown
 * index (or a device of another network namespace, in exclusive mode).
 */
int rdmaxfer_ioctl_query_device(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_device_info *cmd = arg;
	struct rdmaxfer_device_info out = {
		.size = cmd->size,
		.flags = cmd->flags,
		.index = cmd->index,
	};
	const struct ib_device_attr *a;
	struct rdmaxfer_device *rd;
	struct ib_device *ib;

	if (cmd->__reserved)
		return -EINVAL;
	rd = rdmaxfer_device_get_for(rf, cmd->index);
	if (!rd)
		return -ENODEV;
	ib = rd->rd_ib;
	a = &ib->attrs;

	out.num_ports = rdma_end_port(ib);
	strscpy(out.name, dev_name(&ib->dev), sizeof(out.name));
	out.node_guid = be64_to_cpu(ib->node_guid);
	out.sys_image_guid = be64_to_cpu(a->sys_image_guid);
	out.max_mr_size = a->max_mr_size;
	out.page_size_cap = a->page_size_cap;
	out.device_cap_flags = a->device_cap_flags;
	out.vendor_id = a->vendor_id;
	out.vendor_part_id = a->vendor_part_id;
	out.hw_ver = a->hw_ver;
	out.node_type = ib->node_type;
	out.max_qp = a->max_qp;
	out.max_qp_wr = a->max_qp_wr;
	out.max_send_sge = a->max_send_sge;
	out.max_recv_sge = a->max_recv_sge;
	out.max_sge_rd = a->max_sge_rd;
	out.max_cq = a->max_cq;
	out.max_cqe = a->max_cqe;
	out.max_mr = a->max_mr;
	out.max_pd = a->max_pd;
	out.max_qp_rd_atom = a->max_qp_rd_atom;
	out.max_qp_init_rd_atom = a->max_qp_init_rd_atom;
	out.max_fast_reg_page_list_len = a->max_fast_reg_page_list_len;
	out.atomic_cap = a->atomic_cap;
	out.caps = rdmaxfer_device_caps(ib);
	out.num_comp_vectors = ib->num_comp_vectors;
	rdmaxfer_device_put(rd);

	*cmd = out;
	return 0;
}

/*
 * Collect the valid GIDs of one port, at most @cap of them, into @gids,
 * and count them all in *@count.  Empty table entries are skipped.
 */
static void rdmaxfer_get_gids(struct ib_device *ib, u32 port, u32 tbl_len,
			      struct rdmaxfer_gid *gids, u32 cap, u32 *count)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;
	u32 i, n = 0;

	for (i = 0; i < tbl_len; i++) {
		attr = rdma_get_gid_attr(ib, port, i);
		if (IS_ERR(attr))
			continue;
		if (n < cap) {
			struct rdmaxfer_gid *gid = &gids[n];

			memcpy(gid->raw, attr->gid.raw, sizeof(gid->raw));
			gid->index = attr->index;
			gid->type = attr->gid_type;
			rcu_read_lock();
			ndev = rdma_read_gid_attr_ndev_rcu(attr);
			if (!IS_ERR(ndev))
				gid->ifindex = ndev->ifindex;
			rcu_read_unlock();
		}
		rdma_put_gid_attr(attr);
		n++;
	}
	*count = n;
}

/**
 * rdmaxfer_ioctl_query_port - RDMAXFER_IOC_QUERY_PORT
 * @rf: the caller's file context
 * @arg: struct rdmaxfer_port_info, already copied in
 *
 * Queries the port attributes and copies out up to @num_gids valid GIDs.
 * The GIDs are gathered into a kernel buffer and the device reference is
 * dropped before anything is copied to userspace: a user page that takes
 * long to fault in (FUSE, userfaultfd) must not hold up the device's
 * removal, which waits for every reference.
 *
 * Context: process context, may sleep and fault.
 * Return: 0, -ENODEV for an unknown index (or another namespace's device),
 * -EINVAL for a bad port number, -EFAULT for a bad GID array, -ENOMEM, or
 * the error of ib_query_port().
 */
int rdmaxfer_ioctl_query_port(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_port_info *cmd = arg;
	struct rdmaxfer_port_info out = {
		.size = cmd->size,
		.flags = cmd->flags,
		.index = cmd->index,
		.port = cmd->port,
		.gids = cmd->gids,
	};
	struct rdmaxfer_gid *gids = NULL;
	struct rdmaxfer_device *rd;
	struct ib_port_attr attr;
	struct ib_device *ib;
	u32 cap = 0;
	int ret;

	might_sleep();
	rd = rdmaxfer_device_get_for(rf, cmd->index);
	if (!rd)
		return -ENODEV;
	ib = rd->rd_ib;
	if (!rdma_is_port_valid(ib, cmd->port)) {
		ret = -EINVAL;
		goto out_put;
	}
	ret = ib_query_port(ib, cmd->port, &attr);
	if (ret)
		goto out_put;

	out.state = attr.state;
	out.phys_state = attr.phys_state;
	out.max_mtu = max(ib_mtu_enum_to_int(attr.max_mtu), 0);
	out.active_mtu = max(ib_mtu_enum_to_int(attr.active_mtu), 0);
	out.link_layer = rdma_port_get_link_layer(ib, cmd->port);
	out.gid_tbl_len = attr.gid_tbl_len;
	out.port_cap_flags = attr.port_cap_flags;
	out.max_msg_sz = attr.max_msg_sz;
	out.lid = attr.lid;
	out.active_speed = attr.active_speed;
	out.active_width = attr.active_width;
	/* no more than the table can hold, whatever the caller's capacity */
	cap = min_t(u32, cmd->num_gids, attr.gid_tbl_len);
	if (cap) {
		gids = kvcalloc(cap, sizeof(*gids), GFP_KERNEL);
		if (!gids) {
			ret = -ENOMEM;
			goto out_put;
		}
	}
	rdmaxfer_get_gids(ib, cmd->port, attr.gid_tbl_len, gids, cap, &out.num_gids);
out_put:
	rdmaxfer_device_put(rd);
	if (!ret && cap && copy_to_user(u64_to_user_ptr(cmd->gids), gids,
					min(cap, out.num_gids) * sizeof(*gids)))
		ret = -EFAULT;
	kvfree(gids);
	if (!ret)
		*cmd = out;
	return ret;
}

/**
 * rdmaxfer_device_init - start following RDMA devices
 *
 * Registers the ib_client; the core calls .add for every existing device
 * before this returns.
 *
 * Context: process context (module init).
 * Return: 0 or the error of ib_register_client().
 */
int rdmaxfer_device_init(void)
{
	return ib_register_client(&rdmaxfer_ib_client);
}

/**
 * rdmaxfer_device_exit - stop following RDMA devices
 *
 * ib_unregister_client() calls .remove for every device and is a full
 * fence: no client callback runs after it returns.
 *
 * Context: process context (module exit), no /dev/rdmaxfer file open.
 */
void rdmaxfer_device_exit(void)
{
	ib_unregister_client(&rdmaxfer_ib_client);
	WARN_ON(!xa_empty(&rdmaxfer_devices));
}

/* --- debugfs: every connection, for an admin -------------------------------- */

static struct dentry *rdmaxfer_debugfs_dir;

static const char *rdmaxfer_state_name(enum rdmaxfer_conn_state state)
{
	switch (state) {
	case RDMAXFER_CS_CONNECTING:
		return "connecting";
	case RDMAXFER_CS_ESTABLISHED:
		return "established";
	default:
		return "down";
	}
}

/*
 * One line per connection; the fields are described in testing.md.  The
 * caller holds rd_lock of the connection's device: the connection stays on
 * it, but its teardown may be freeing its QP (hence c_qpn, not c_qp).
 */
static void rdmaxfer_conn_show(struct seq_file *m, struct rdmaxfer_device *rd,
			       struct rdmaxfer_conn *conn)
{
	u32 credits, peer_recvs, nmsgs, pieces = 0, windows;
	const struct rdmaxfer_addr *a = &conn->c_peer;
	enum rdmaxfer_conn_state state;
	struct list_head *pos;

	lockdep_assert_held(&rd->rd_lock);
	spin_lock_bh(&conn->c_lock);
	state = conn->c_state;
	credits = conn->c_lg.lg_credits;
	peer_recvs = conn->c_lg.lg_peer_recvs;
	nmsgs = conn->c_cb.cb_nmsgs;
	list_for_each(pos, &conn->c_sq.sq_pieces)
		pieces++;
	windows = conn->c_nwindows;
	spin_unlock_bh(&conn->c_lock);

	seq_printf(m, "file %u conn %u %s qpn %u sq %u rq %u peer ", conn->c_obj.file->rf_trace_id,
		   conn->c_obj.id, rdmaxfer_state_name(state), conn->c_qpn, conn->c_sq_depth,
		   conn->c_rq_depth);
	if (a->family == AF_INET)
		seq_printf(m, "%pI4:%u", a->addr, a->port);
	else
		seq_printf(m, "[%pI6c]:%u", a->addr, a->port);
	seq_printf(m, " credits %u/%u pieces %u windows %u peer_windows %u msgs %u bytes %llu error %d\n",
		   credits, peer_recvs, pieces, windows, READ_ONCE(conn->c_npeer_wins), nmsgs,
		   (unsigned long long)atomic64_read(&conn->c_bytes), READ_ONCE(conn->c_error));
}

/*
 * rdmaxfer/connections: per device, every connection attached to it (the
 * ones still resolving their route are not on a device yet).  rd_lock keeps
 * each listed connection from being detached, hence freed, meanwhile.
 */
static int rdmaxfer_conns_show(struct seq_file *m, void *unused)
{
	struct rdmaxfer_device *rd;
	struct rdmaxfer_conn *conn;
	unsigned long index;
	void *entry;

	xa_for_each(&rdmaxfer_devices, index, entry) {
		rd = rdmaxfer_device_get(index);
		if (!rd)
			continue;
		mutex_lock(&rd->rd_lock);
		seq_printf(m, "device %s index %u\n", dev_name(&rd->rd_ib->dev), rd->rd_index);
		list_for_each_entry(conn, &rd->rd_conns, c_dev_entry)
			rdmaxfer_conn_show(m, rd, conn);
		mutex_unlock(&rd->rd_lock);
		rdmaxfer_device_put(rd);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rdmaxfer_conns);

/**
 * rdmaxfer_debugfs_init - create /sys/kernel/debug/rdmaxfer/connections
 *
 * Without debugfs there is nothing to see; the module works the same.
 *
 * Context: process context (module init).
 */
void rdmaxfer_debugfs_init(void)
{
	rdmaxfer_debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("connections", 0400, rdmaxfer_debugfs_dir, NULL,
			    &rdmaxfer_conns_fops);
}

/**
 * rdmaxfer_debugfs_exit - remove what rdmaxfer_debugfs_init() made
 *
 * Context: process context (module exit or a failed init).
 */
void rdmaxfer_debugfs_exit(void)
{
	debugfs_remove_recursive(rdmaxfer_debugfs_dir);
}
