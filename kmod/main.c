// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - an RDMA kernel-verbs upper-layer protocol that moves buffers
 * between hosts, driven from userspace through /dev/rdmaxfer.
 *
 * Design: this file only loads and unloads the module.  Load order is the
 * workqueues (teardown, and the receive work of ctrl.c), the devices (the
 * ib_client replays .add for every existing RDMA device), the
 * fault-injection attribute (debug kernels, conn.c), then the character
 * device, so the first ioctl already sees every device.
 * Unload is the reverse.  No file can be open at unload: each
 * open file holds a module reference, so by then every per-file object is
 * gone (release() tears connections down synchronously) and the ib_client
 * is the last user of the devices.  Teardown work still queued holds a
 * connection reference only; destroy_workqueue() waits for it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "rdmaxfer.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

/* Connection teardown after CM events and errors runs here. */
struct workqueue_struct *rdmaxfer_wq;
/*
 * The peer's control messages are handled here (ctrl.c, msg.c), with the priority
 * the CQ core gives its own completion work (ib_comp_wq).  Unbound: newer
 * kernels want WQ_UNBOUND or WQ_PERCPU said, and nothing here needs a CPU.
 */
struct workqueue_struct *rdmaxfer_rx_wq;

static int __init rdmaxfer_init(void)
{
	int ret;

	rdmaxfer_wq = alloc_workqueue("rdmaxfer", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!rdmaxfer_wq)
		return -ENOMEM;
	rdmaxfer_rx_wq = alloc_workqueue("rdmaxfer_rx",
					 WQ_UNBOUND | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!rdmaxfer_rx_wq) {
		ret = -ENOMEM;
		goto out_wq;
	}
	ret = rdmaxfer_device_init();
	if (ret)
		goto out_rx_wq;
	rdmaxfer_fault_init();
	ret = rdmaxfer_chardev_init();
	if (ret)
		goto out_fault;
	rdmaxfer_debugfs_init();
	pr_info("version %s loaded (ABI %u)\n", RDMAXFER_VERSION, RDMAXFER_ABI_VERSION);
	return 0;

out_fault:
	rdmaxfer_fault_exit();
	rdmaxfer_device_exit();
out_rx_wq:
	destroy_workqueue(rdmaxfer_rx_wq);
out_wq:
	destroy_workqueue(rdmaxfer_wq);
	return ret;
}

static void __exit rdmaxfer_exit(void)
{
	rdmaxfer_debugfs_exit();
	rdmaxfer_chardev_exit();
	rdmaxfer_fault_exit();
	rdmaxfer_device_exit();
	destroy_workqueue(rdmaxfer_rx_wq);
	destroy_workqueue(rdmaxfer_wq);
	pr_info("unloaded\n");
}

module_init(rdmaxfer_init);
module_exit(rdmaxfer_exit);

MODULE_DESCRIPTION("rdmaxfer: move buffers between hosts with RDMA, driven through /dev/rdmaxfer");
MODULE_AUTHOR("The rdmaxfer developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(RDMAXFER_VERSION);
