// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - /dev/rdmaxfer: the misc device, per-file context, ids, the
 * ioctl dispatch table, GET_INFO and STATS.
 *
 * Design: every open file gets a struct rdmaxfer_file that owns what the
 * caller creates through it (listeners, connections, buffers, windows),
 * each named by an id in an xarray that holds one reference.  Closing the
 * file tears all of it down, connections first, so that every operation in
 * flight completes before the buffers it uses are unpinned.  The misc device
 * is created 0600 (root only); a site that wants a group to use it says so
 * with a udev rule.  .owner pins the module while a file is open.
 *
 * Memory.  What the module allocates for a file -- its objects, control
 * buffers, the peer's windows, messages and events -- is charged to the
 * memory cgroup of the process that opened it (GFP_KERNEL_ACCOUNT; in CM
 * handlers and completion work, which run in kernel threads, through
 * set_active_memcg() with the file's cgroup), so a peer that makes us
 * allocate is paid for by the application that listens to it.
 *
 * Completions and events go to one queue per file (event.c); poll() here
 * reports POLLIN while it is not empty.
 *
 * ioctls follow the iommufd model.  The command number carries no size
 * (_IO), every argument struct starts with { __u32 size; __u32 flags; } and
 * one table describes each command: its struct, its last mandatory field
 * and its allowed flags.  rdmaxfer_unlocked_ioctl() does all generic checking (type
 * and number, size bounds, copy_struct_from_user() with its E2BIG rule for
 * unknown non-zero tails, flags) so the handlers only see a validated,
 * zero-extended kernel copy.  After a handler succeeds the struct is copied
 * back, truncated to the size the caller knows (also after -EMSGSIZE, which
 * reports a needed size, and -ECONNREFUSED, which reports a reject
 * reason).  Handlers build their output in a zeroed struct, so nothing
 * uninitialised reaches userspace.
 *
 * All arguments are pointers to structs whose layout is the same for 32- and
 * 64-bit callers, so compat_ptr_ioctl() is the whole compat story.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "rdmaxfer.h"

struct rdmaxfer_stats_k rdmaxfer_global_stats;

/**
 * rdmaxfer_obj_init - initialise the common part of an object
 * @obj: the object
 * @rf: the file that will own it
 * @type: enum rdmaxfer_obj_type
 *
 * The caller holds the one initial reference.  The object holds one on
 * @rf until it is freed: by its last rdmaxfer_obj_put(), or by
 * rdmaxfer_obj_fini() on an error path that frees it directly.
 */
void rdmaxfer_obj_init(struct rdmaxfer_obj *obj, struct rdmaxfer_file *rf, u32 type)
{
	obj->type = type;
	obj->id = 0;
	obj->id_state = RDMAXFER_ID_NONE;
	obj->file = rf;
	kref_init(&obj->ref);
	kref_get(&rf->rf_ref);
}

static void rdmaxfer_file_free(struct kref *ref)
{
	struct rdmaxfer_file *rf = container_of(ref, struct rdmaxfer_file, rf_ref);

	WARN_ON_ONCE(!list_empty(&rf->rf_events));	/* dropped once closing */
	WARN_ON_ONCE(atomic64_read(&rf->rf_pinned));
	xa_destroy(&rf->rf_objs);
	mem_cgroup_put(rf->rf_memcg);
	put_net(rf->rf_net);
	rdmaxfer_user_put(rf->rf_user);
	kfree(rf);
}

/*
 * The last reference is dropped by release() or by an object's release,
 * i.e. in process context (rdmaxfer_obj_put() or the deferred-put work).
 */
static void rdmaxfer_file_put(struct rdmaxfer_file *rf)
{
	kref_put(&rf->rf_ref, rdmaxfer_file_free);
}

/**
 * rdmaxfer_obj_fini - undo rdmaxfer_obj_init() for an object that is freed
 *	without its last rdmaxfer_obj_put() (an error path of its creation)
 * @obj: the object, never published
 *
 * Context: process context.
 */
void rdmaxfer_obj_fini(struct rdmaxfer_obj *obj)
{
	WARN_ON_ONCE(obj->id_state == RDMAXFER_ID_PUBLISHED);
	rdmaxfer_file_put(obj->file);
}

/**
 * rdmaxfer_obj_reserve - give an object an id, not yet visible
 * @obj: the object, without an id
 *
 * The id is allocated cyclically (an id closed a moment ago is not handed
 * out again soon, so a stale id names nothing rather than a new object) and
 * its slot is reserved: lookups find nothing there until
 * rdmaxfer_obj_publish().  An object is published only once it is complete,
 * so that no other thread (CLOSE, REVOKE, a fuzzer) can reach one that is
 * still being built; events may carry the id meanwhile.  The id counts
 * against RDMAXFER_MAX_OBJECTS until rdmaxfer_obj_remove().
 *
 * Context: process context, takes rf_lock.
 * Return: 0, -EMFILE when the file has RDMAXFER_MAX_OBJECTS objects, -ENOMEM.
 */
int rdmaxfer_obj_reserve(struct rdmaxfer_obj *obj)
{
	struct rdmaxfer_file *rf = obj->file;
	int ret;

	might_sleep();
	mutex_lock(&rf->rf_lock);
	if (WARN_ON_ONCE(obj->id_state != RDMAXFER_ID_NONE)) {
		ret = -EINVAL;
		goto out;
	}
	if (rf->rf_nobjs >= RDMAXFER_MAX_OBJECTS) {
		ret = -EMFILE;
		goto out;
	}
	ret = xa_alloc_cyclic(&rf->rf_objs, &obj->id, NULL, xa_limit_31b, &rf->rf_next_id,
			      GFP_KERNEL);
	if (ret < 0) {
		obj->id = 0;
		goto out;
	}
	ret = 0;
	obj->id_state = RDMAXFER_ID_RESERVED;
	rf->rf_nobjs++;
out:
	mutex_unlock(&rf->rf_lock);
	return ret;
}

/**
 * rdmaxfer_obj_publish - make a reserved id name its object
 * @obj: the object, complete, with an id from rdmaxfer_obj_reserve(); the
 *	id table takes a new reference
 *
 * Cannot fail: the slot was allocated by the reservation.
 *
 * Context: process context, takes rf_lock.
 */
void rdmaxfer_obj_publish(struct rdmaxfer_obj *obj)
{
	struct rdmaxfer_file *rf = obj->file;

	might_sleep();
	mutex_lock(&rf->rf_lock);
	if (!WARN_ON_ONCE(obj->id_state != RDMAXFER_ID_RESERVED)) {
		/* the caller's reference keeps it alive until the table's is taken */
		kref_get(&obj->ref);
		WARN_ON_ONCE(xa_store(&rf->rf_objs, obj->id, obj, GFP_KERNEL));
		obj->id_state = RDMAXFER_ID_PUBLISHED;
	}
	mutex_unlock(&rf->rf_lock);
}

/**
 * rdmaxfer_obj_insert - give a complete object an id and publish it
 * @obj: the object; the id table takes a new reference
 *
 * Context: process context, takes rf_lock.
 * Return: 0, -EMFILE when the file has RDMAXFER_MAX_OBJECTS objects, -ENOMEM.
 */
int rdmaxfer_obj_insert(struct rdmaxfer_obj *obj)
{
	int ret = rdmaxfer_obj_reserve(obj);

	if (!ret)
		rdmaxfer_obj_publish(obj);
	return ret;
}

/**
 * rdmaxfer_obj_remove - take an object's id out of its file's id table
 * @obj: the object
 *
 * A published object leaves the table: whoever removes it owns the table's
 * reference and must put it.  A reserved id is given back.  The object
 * keeps its number in @obj->id (events already queued carry it).
 *
 * Context: process context, takes rf_lock.
 * Return: true if this call removed a published object, false otherwise
 * (reserved only, never given an id, or already removed).
 */
bool rdmaxfer_obj_remove(struct rdmaxfer_obj *obj)
{
	struct rdmaxfer_file *rf = obj->file;
	bool removed = false;

	might_sleep();
	mutex_lock(&rf->rf_lock);
	if (obj->id_state == RDMAXFER_ID_PUBLISHED) {
		WARN_ON_ONCE(xa_erase(&rf->rf_objs, obj->id) != obj);
		removed = true;
	} else if (obj->id_state == RDMAXFER_ID_RESERVED) {
		xa_release(&rf->rf_objs, obj->id);
	} else {
		goto out;
	}
	obj->id_state = RDMAXFER_ID_GONE;
	rf->rf_nobjs--;
out:
	mutex_unlock(&rf->rf_lock);
	return removed;
}

/**
 * rdmaxfer_obj_get - look an id up and take a reference
 * @rf: the file
 * @id: the id
 * @type: the expected enum rdmaxfer_obj_type, or 0 for any
 *
 * Context: any context that may take a spinlock.
 * Return: the object (cast to its type by the caller), or NULL.
 */
void *rdmaxfer_obj_get(struct rdmaxfer_file *rf, u32 id, u32 type)
{
	struct rdmaxfer_obj *obj;

	xa_lock(&rf->rf_objs);
	obj = xa_load(&rf->rf_objs, id);
	if (obj && ((type && obj->type != type) || !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	xa_unlock(&rf->rf_objs);
	return obj;
}

static void rdmaxfer_obj_release(struct kref *ref)
{
	struct rdmaxfer_obj *obj = container_of(ref, struct rdmaxfer_obj, ref);
	struct rdmaxfer_file *rf = obj->file;

	switch (obj->type) {
	case RDMAXFER_OBJ_LISTENER:
		rdmaxfer_listener_release(container_of(obj, struct rdmaxfer_listener, l_obj));
		break;
	case RDMAXFER_OBJ_CONN:
		rdmaxfer_conn_release(container_of(obj, struct rdmaxfer_conn, c_obj));
		break;
	case RDMAXFER_OBJ_BUF:
		rdmaxfer_buf_release(container_of(obj, struct rdmaxfer_buf, b_obj));
		break;
	case RDMAXFER_OBJ_WINDOW:
		rdmaxfer_window_release(container_of(obj, struct rdmaxfer_window, w_obj));
		break;
	}
	rdmaxfer_file_put(rf);
}

/**
 * rdmaxfer_obj_put - drop a reference on an object
 * @obj: the object
 *
 * Context: process context: the last reference may unpin pages or
 * deregister memory.
 */
void rdmaxfer_obj_put(struct rdmaxfer_obj *obj)
{
	might_sleep();
	kref_put(&obj->ref, rdmaxfer_obj_release);
}

static LLIST_HEAD(rdmaxfer_deferred_puts);

static void rdmaxfer_deferred_put_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&rdmaxfer_deferred_puts);
	struct rdmaxfer_obj *obj, *tmp;

	llist_for_each_entry_safe(obj, tmp, list, put_node)
		rdmaxfer_obj_release(&obj->ref);
}

static DECLARE_WORK(rdmaxfer_put_work, rdmaxfer_deferred_put_work);

/**
 * rdmaxfer_obj_put_atomic - drop a reference from a completion handler
 * @obj: the object
 *
 * The CQ handlers run in softirq context, where a release (unpinning
 * pages, tearing down a connection) must not run.  In fact a completion
 * never drops the last reference there: whoever tears a connection down
 * holds one through ib_drain_qp(), whose completion comes after all others
 * of the QP (and through the flush of the receive work), and a buffer in
 * use cannot be deregistered; this is the belt to those braces (and is
 * reached in process context, when SUBMIT discards a request while another
 * thread closes its connection).  A
 * reference that is not the last is dropped at once; the last one is
 * handed to a work item.  Nothing can take a new reference meanwhile: the
 * object has left its id table (lookups use kref_get_unless_zero()).
 *
 * Context: any context.
 */
void rdmaxfer_obj_put_atomic(struct rdmaxfer_obj *obj)
{
	if (refcount_dec_not_one(&obj->ref.refcount))
		return;
	llist_add(&obj->put_node, &rdmaxfer_deferred_puts);
	/* every time: a flush must cover this object, not just the first one */
	queue_work(rdmaxfer_wq, &rdmaxfer_put_work);
}

/**
 * rdmaxfer_obj_flush_puts - wait until deferred releases have run
 *
 * Context: process context, sleeps.
 */
void rdmaxfer_obj_flush_puts(void)
{
	flush_work(&rdmaxfer_put_work);
}

static int rdmaxfer_ioctl_get_info(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_info *cmd = arg;
	struct rdmaxfer_info out = {
		.size = cmd->size,
		.flags = cmd->flags,
		.abi_version = RDMAXFER_ABI_VERSION,
		.num_devices = rdmaxfer_device_count(),
		.features = RDMAXFER_FEATURE_DEVICE_QUERY | RDMAXFER_FEATURE_TRANSFER |
			    RDMAXFER_FEATURE_RECV_SLOTS | RDMAXFER_FEATURE_RING |
			    RDMAXFER_FEATURE_SINK_SLOTS | RDMAXFER_FEATURE_AUTH |
			    RDMAXFER_FEATURE_ALLOW_LIST,
		.version = RDMAXFER_VERSION,
		.max_cmd_size = PAGE_SIZE,
		.name_len = RDMAXFER_NAME_LEN,
		.max_buf_size = RDMAXFER_MAX_BUF_SIZE,
		.max_window_size = (u64)RDMAXFER_MAX_WIN_SEGS * RDMAXFER_MAX_SEG_PAGES * PAGE_SIZE,
		.max_send_size = RDMAXFER_MAX_SEND,
		.max_batch = RDMAXFER_MAX_BATCH,
		.max_pending = RDMAXFER_MAX_PENDING,
		.max_objects = RDMAXFER_MAX_OBJECTS,
		.max_recv_slots = RDMAXFER_MAX_SLOTS,
		.min_recv_size = RDMAXFER_MIN_SLOT,
	};

	*cmd = out;
	return 0;
}

static_assert(sizeof(struct rdmaxfer_counters) == RDMAXFER_NR_BASE_COUNTERS * sizeof(u64));
static_assert(sizeof(struct rdmaxfer_auth_counters) ==
	      (RDMAXFER_NR_COUNTERS - RDMAXFER_NR_BASE_COUNTERS) * sizeof(u64));
static_assert(offsetof(struct rdmaxfer_counters, bytes) == RDMAXFER_C_BYTES * sizeof(u64));
static_assert(offsetof(struct rdmaxfer_counters, errors) == RDMAXFER_C_ERRORS * sizeof(u64));
static_assert(offsetof(struct rdmaxfer_counters, recv_msgs) == RDMAXFER_C_RECV_MSGS * sizeof(u64));
static_assert(offsetof(struct rdmaxfer_counters, protocol_errors) ==
	      RDMAXFER_C_PROTOCOL_ERRORS * sizeof(u64));

static void rdmaxfer_counters_fill(struct rdmaxfer_counters *c, struct rdmaxfer_auth_counters *a,
				   struct rdmaxfer_stats_k *k)
{
	u64 *out = (u64 *)c;
	u32 i;

	for (i = 0; i < RDMAXFER_NR_BASE_COUNTERS; i++)
		out[i] = atomic64_read(&k->c[i]);
	out = (u64 *)a;
	for (; i < RDMAXFER_NR_COUNTERS; i++)
		out[i - RDMAXFER_NR_BASE_COUNTERS] = atomic64_read(&k->c[i]);
}

/**
 * rdmaxfer_ioctl_stats - RDMAXFER_IOC_STATS
 * @rf: the file
 * @arg: struct rdmaxfer_stats
 *
 * Context: process context.
 * Return: 0.
 */
static int rdmaxfer_ioctl_stats(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_stats *cmd = arg;
	struct rdmaxfer_obj *obj;
	unsigned long id;
	u32 size = cmd->size, flags = cmd->flags;

	memset(cmd, 0, sizeof(*cmd));
	cmd->size = size;
	cmd->flags = flags;
	rdmaxfer_counters_fill(&cmd->file, &cmd->file_auth, &rf->rf_stats);
	rdmaxfer_counters_fill(&cmd->global, &cmd->global_auth, &rdmaxfer_global_stats);
	cmd->pinned_bytes = atomic64_read(&rf->rf_pinned);
	xa_lock(&rf->rf_objs);
	xa_for_each(&rf->rf_objs, id, obj) {
		if (obj->type == RDMAXFER_OBJ_CONN)
			cmd->num_conns++;
		else if (obj->type == RDMAXFER_OBJ_BUF)
			cmd->num_bufs++;
		else if (obj->type == RDMAXFER_OBJ_WINDOW)
			cmd->num_windows++;
	}
	xa_unlock(&rf->rf_objs);
	return 0;
}

/* The first two fields of every command struct. */
struct rdmaxfer_cmd_hdr {
	u32 size;
	u32 flags;
};

union rdmaxfer_cmd_buffer {
	struct rdmaxfer_cmd_hdr hdr;
	struct rdmaxfer_info info;
	struct rdmaxfer_list_devices list_devices;
	struct rdmaxfer_device_info device_info;
	struct rdmaxfer_port_info port_info;
	struct rdmaxfer_listen listen;
	struct rdmaxfer_accept accept;
	struct rdmaxfer_connect connect;
	struct rdmaxfer_close close;
	struct rdmaxfer_reg_buf reg_buf;
	struct rdmaxfer_dereg_buf dereg_buf;
	struct rdmaxfer_expose expose;
	struct rdmaxfer_revoke revoke;
	struct rdmaxfer_submit submit;
	struct rdmaxfer_reap reap;
	struct rdmaxfer_recv recv;
	struct rdmaxfer_conn_info conn_info;
	struct rdmaxfer_stats stats;
	struct rdmaxfer_ring_setup ring_setup;
};

/**
 * struct rdmaxfer_ioctl_op - one row of the dispatch table
 * @size: sizeof the command struct the kernel knows
 * @min_size: offsetofend() of its last mandatory field
 * @flags: flags the command accepts
 * @execute: the handler; called with a zero-extended copy of the struct
 */
struct rdmaxfer_ioctl_op {
	u32 size;
	u32 min_size;
	u32 flags;
	int (*execute)(struct rdmaxfer_file *rf, void *arg);
};

#define RDMAXFER_IOCTL_OP(_ioctl, _fn, _struct, _last, _flags)			\
	[_IOC_NR(_ioctl) - RDMAXFER_CMD_BASE] = {				\
		.size = sizeof(_struct) +					\
			BUILD_BUG_ON_ZERO(sizeof(union rdmaxfer_cmd_buffer) <	\
					  sizeof(_struct)),			\
		.min_size = offsetofend(_struct, _last),			\
		.flags = (_flags),						\
		.execute = (_fn),						\
	}

static const struct rdmaxfer_ioctl_op rdmaxfer_ioctl_ops[] = {
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_GET_INFO, rdmaxfer_ioctl_get_info,
			  struct rdmaxfer_info, name_len, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_LIST_DEVICES, rdmaxfer_ioctl_list_devices,
			  struct rdmaxfer_list_devices, indexes, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_QUERY_DEVICE, rdmaxfer_ioctl_query_device,
			  struct rdmaxfer_device_info, __reserved, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_QUERY_PORT, rdmaxfer_ioctl_query_port,
			  struct rdmaxfer_port_info, gids, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_LISTEN, rdmaxfer_ioctl_listen,
			  struct rdmaxfer_listen, listen_id, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_ACCEPT, rdmaxfer_ioctl_accept,
			  struct rdmaxfer_accept, peer, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_CONNECT, rdmaxfer_ioctl_connect,
			  struct rdmaxfer_connect, reject_reason, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_CLOSE, rdmaxfer_ioctl_close,
			  struct rdmaxfer_close, __reserved, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_REG_BUF, rdmaxfer_ioctl_reg_buf,
			  struct rdmaxfer_reg_buf, buf_id, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_DEREG_BUF, rdmaxfer_ioctl_dereg_buf,
			  struct rdmaxfer_dereg_buf, __reserved, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_EXPOSE, rdmaxfer_ioctl_expose,
			  struct rdmaxfer_expose, window_id, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_REVOKE, rdmaxfer_ioctl_revoke,
			  struct rdmaxfer_revoke, __reserved, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_SUBMIT, rdmaxfer_ioctl_submit,
			  struct rdmaxfer_submit, ops, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_REAP, rdmaxfer_ioctl_reap,
			  struct rdmaxfer_reap, completions, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_RECV, rdmaxfer_ioctl_recv,
			  struct rdmaxfer_recv, addr, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_QUERY_CONN, rdmaxfer_ioctl_query_conn,
			  struct rdmaxfer_conn_info, max_op_size, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_STATS, rdmaxfer_ioctl_stats,
			  struct rdmaxfer_stats, __reserved, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_RING_SETUP, rdmaxfer_ioctl_ring_setup,
			  struct rdmaxfer_ring_setup, mmap_size, 0),
};

/**
 * rdmaxfer_unlocked_ioctl - dispatch an ioctl on /dev/rdmaxfer
 * @filp: the open file
 * @cmd: the ioctl number
 * @arg: user pointer to the command struct
 *
 * Context: process context, may sleep.
 * Return: 0 or a negative errno: -ENOTTY for an unknown command, -EFAULT for
 * a bad pointer, -EINVAL for a short struct or unknown flags, -E2BIG for a
 * struct larger than the kernel's with a non-zero tail (or larger than a
 * page), otherwise what the handler returns.
 */
static long rdmaxfer_unlocked_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct rdmaxfer_file *rf = filp->private_data;
	void __user *uarg = (void __user *)arg;
	const struct rdmaxfer_ioctl_op *op;
	union rdmaxfer_cmd_buffer buf;
	unsigned int nr = _IOC_NR(cmd);
	u32 usize;
	int ret;

	/* _IO(): no direction and no size bits, so a valid cmd is exact */
	if (cmd != _IO(RDMAXFER_TYPE, nr) || nr < RDMAXFER_CMD_BASE ||
	    nr - RDMAXFER_CMD_BASE >= ARRAY_SIZE(rdmaxfer_ioctl_ops))
		return -ENOTTY;
	op = &rdmaxfer_ioctl_ops[nr - RDMAXFER_CMD_BASE];
	if (!op->execute)
		return -ENOTTY;

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize < op->min_size)
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(&buf, op->size, uarg, usize);
	if (ret)
		return ret;
	if (buf.hdr.flags & ~op->flags)
		return -EINVAL;

	ret = op->execute(rf, &buf);
	/* these two errors come with output: a needed size, a reject reason */
	if (ret && ret != -EMSGSIZE && ret != -ECONNREFUSED)
		return ret;
	if (copy_to_user(uarg, &buf, min(usize, op->size)))
		return -EFAULT;
	return ret;
}

static __poll_t rdmaxfer_poll(struct file *filp, poll_table *wait)
{
	struct rdmaxfer_file *rf = filp->private_data;

	poll_wait(filp, &rf->rf_wait, wait);
	return rdmaxfer_events_ready(rf) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int rdmaxfer_mmap(struct file *filp, struct vm_area_struct *vma)
{
	return rdmaxfer_ring_mmap(filp->private_data, vma);
}

static int rdmaxfer_open(struct inode *inode, struct file *filp)
{
	static atomic_t rdmaxfer_files = ATOMIC_INIT(0);
	struct rdmaxfer_file *rf;

	rf = kzalloc_obj(*rf, GFP_KERNEL_ACCOUNT);
	if (!rf)
		return -ENOMEM;
	rf->rf_user = rdmaxfer_user_get();
	if (IS_ERR(rf->rf_user)) {
		int ret = PTR_ERR(rf->rf_user);

		kfree(rf);
		return ret;
	}
	rf->rf_net = get_net(current->nsproxy->net_ns);
	rf->rf_memcg = get_mem_cgroup_from_mm(current->mm);
	kref_init(&rf->rf_ref);
	mutex_init(&rf->rf_lock);
	xa_init_flags(&rf->rf_objs, XA_FLAGS_ALLOC1);
	spin_lock_init(&rf->rf_ev_lock);
	INIT_LIST_HEAD(&rf->rf_events);
	init_waitqueue_head(&rf->rf_wait);
	rf->rf_trace_id = atomic_inc_return(&rdmaxfer_files);
	filp->private_data = rf;
	return nonseekable_open(inode, filp);
}

/*
 * Tear down every object of a closing file: listeners and connections
 * first (which completes every operation in flight and releases the
 * windows), then whatever is left (buffers, windows of dead connections).
 *
 * No ioctl runs any more, but work items still do: the teardown of a
 * connection a listener queued (published, never accepted) removes its id
 * and may free it at any moment.  So each entry is looked up again with a
 * reference (the id leaves the table before the table's reference is put)
 * before it is touched.
 */
static void rdmaxfer_release_one(struct rdmaxfer_obj *obj)
{
	if (obj->type == RDMAXFER_OBJ_LISTENER)
		rdmaxfer_listener_close(container_of(obj, struct rdmaxfer_listener, l_obj));
	else if (obj->type == RDMAXFER_OBJ_CONN)
		rdmaxfer_conn_teardown(container_of(obj, struct rdmaxfer_conn, c_obj),
				       -ECANCELED);
}

static void rdmaxfer_release_objects(struct rdmaxfer_file *rf)
{
	struct rdmaxfer_obj *obj;
	unsigned long id;
	u32 pass;
	bool first;

	for (pass = 0; pass < 2; pass++) {
		xa_for_each(&rf->rf_objs, id, obj) {
			obj = rdmaxfer_obj_get(rf, id, 0);
			if (!obj)
				continue;
			first = obj->type == RDMAXFER_OBJ_LISTENER ||
				obj->type == RDMAXFER_OBJ_CONN;
			if (first == !pass && rdmaxfer_obj_remove(obj)) {
				rdmaxfer_release_one(obj);
				rdmaxfer_obj_put(obj);		/* the table's */
			}
			rdmaxfer_obj_put(obj);			/* ours */
		}
	}
}

static int rdmaxfer_release(struct inode *inode, struct file *filp)
{
	struct rdmaxfer_file *rf = filp->private_data;

	spin_lock_bh(&rf->rf_ev_lock);
	rf->rf_closing = true;
	spin_unlock_bh(&rf->rf_ev_lock);

	rdmaxfer_release_objects(rf);
	/* last references that completions dropped (their connections are drained) */
	rdmaxfer_obj_flush_puts();

	rdmaxfer_events_free(rf);
	rdmaxfer_ring_free(rf);
	/* the rest goes with the last object: see struct rdmaxfer_file */
	rdmaxfer_file_put(rf);
	return 0;
}

static const struct file_operations rdmaxfer_fops = {
	.owner		= THIS_MODULE,
	.open		= rdmaxfer_open,
	.release	= rdmaxfer_release,
	.poll		= rdmaxfer_poll,
	.mmap		= rdmaxfer_mmap,
	.unlocked_ioctl	= rdmaxfer_unlocked_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice rdmaxfer_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= RDMAXFER_DEVNAME,
	.fops	= &rdmaxfer_fops,
	.mode	= 0600,
};

/**
 * rdmaxfer_chardev_init - create /dev/rdmaxfer
 *
 * Context: process context (module init).
 * Return: 0 or the error of misc_register().
 */
int rdmaxfer_chardev_init(void)
{
	return misc_register(&rdmaxfer_misc);
}

/**
 * rdmaxfer_chardev_exit - remove /dev/rdmaxfer
 *
 * Context: process context (module exit).  No file is open: every open
 * file holds a reference on the module.
 */
void rdmaxfer_chardev_exit(void)
{
	misc_deregister(&rdmaxfer_misc);
}
