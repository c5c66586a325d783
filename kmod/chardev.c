// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - /dev/rdmaxfer: the misc device, per-file context, ioctls.
 *
 * Design: every open file gets a struct rdmaxfer_file that owns what the
 * caller creates through it; closing the file tears all of it down.  The
 * misc device is created 0600 (root only); a site that wants a group to use
 * it says so with a udev rule.  .owner pins the module while a file is open.
 *
 * ioctls follow the iommufd model.  The command number carries no size
 * (_IO), every argument struct starts with { __u32 size; __u32 flags; } and
 * one table describes each command: its struct, its last mandatory field
 * and its allowed flags.  rdmaxfer_ioctl() does all generic checking (type
 * and number, size bounds, copy_struct_from_user() with its E2BIG rule for
 * unknown non-zero tails, flags) so the handlers only see a validated,
 * zero-extended kernel copy.  After a handler succeeds the struct is copied
 * back, truncated to the size the caller knows.  Handlers build their output
 * in a zeroed struct, so nothing uninitialised reaches userspace.
 *
 * All arguments are pointers to structs whose layout is the same for 32- and
 * 64-bit callers, so compat_ptr_ioctl() is the whole compat story.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "rdmaxfer.h"

static int rdmaxfer_get_info(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_info *cmd = arg;
	struct rdmaxfer_info out = {
		.size = cmd->size,
		.flags = cmd->flags,
		.abi_version = RDMAXFER_ABI_VERSION,
		.num_devices = rdmaxfer_device_count(),
		.features = RDMAXFER_FEATURE_DEVICE_QUERY,
		.version = RDMAXFER_VERSION,
		.max_cmd_size = PAGE_SIZE,
		.name_len = RDMAXFER_NAME_LEN,
	};

	*cmd = out;
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
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_GET_INFO, rdmaxfer_get_info,
			  struct rdmaxfer_info, name_len, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_LIST_DEVICES, rdmaxfer_list_devices,
			  struct rdmaxfer_list_devices, indexes, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_QUERY_DEVICE, rdmaxfer_query_device,
			  struct rdmaxfer_device_info, __reserved, 0),
	RDMAXFER_IOCTL_OP(RDMAXFER_IOC_QUERY_PORT, rdmaxfer_query_port,
			  struct rdmaxfer_port_info, gids, 0),
};

/**
 * rdmaxfer_ioctl - dispatch an ioctl on /dev/rdmaxfer
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
static long rdmaxfer_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
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
	if (ret)
		return ret;
	if (copy_to_user(uarg, &buf, min(usize, op->size)))
		return -EFAULT;
	return 0;
}

static int rdmaxfer_open(struct inode *inode, struct file *filp)
{
	struct rdmaxfer_file *rf;

	rf = kzalloc(sizeof(*rf), GFP_KERNEL);
	if (!rf)
		return -ENOMEM;
	rf->rf_net = get_net(current->nsproxy->net_ns);
	filp->private_data = rf;
	return nonseekable_open(inode, filp);
}

static int rdmaxfer_release(struct inode *inode, struct file *filp)
{
	struct rdmaxfer_file *rf = filp->private_data;

	put_net(rf->rf_net);
	kfree(rf);
	return 0;
}

static const struct file_operations rdmaxfer_fops = {
	.owner		= THIS_MODULE,
	.open		= rdmaxfer_open,
	.release	= rdmaxfer_release,
	.unlocked_ioctl	= rdmaxfer_ioctl,
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
