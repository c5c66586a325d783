/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer - declarations shared between the files of the module.
 *
 * The module is split by responsibility: main.c loads and unloads it,
 * device.c follows RDMA devices through an ib_client and answers the device
 * queries, chardev.c owns /dev/rdmaxfer, the per-open-file context and the
 * ioctl dispatch table.  Only uapi/linux/rdmaxfer.h is visible to userspace.
 */
#ifndef RDMAXFER_H
#define RDMAXFER_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <uapi/linux/rdmaxfer.h>

#include "compat.h"

#define RDMAXFER_VERSION	"0.1.0"

/**
 * struct rdmaxfer_device - per-RDMA-device state
 * @rd_ib: the device; valid until rdmaxfer_remove_one() has returned
 * @rd_index: the RDMA core's index of @rd_ib, the name userspace uses
 * @rd_ref: one reference for the registry, one per user
 * @rd_released: completed when the last reference is dropped
 *
 * Created by the ib_client .add callback and published in the registry.
 * Users look it up with rdmaxfer_device_get() and must drop the reference
 * with rdmaxfer_device_put() before they sleep for long: .remove unpublishes
 * the device and then waits for every reference to go away.
 */
struct rdmaxfer_device {
	struct ib_device	*rd_ib;
	u32			rd_index;
	struct kref		rd_ref;
	struct completion	rd_released;
};

/**
 * struct rdmaxfer_file - per-open-file context of /dev/rdmaxfer
 * @rf_net: network namespace of the opener; connections are made in it
 */
struct rdmaxfer_file {
	struct net		*rf_net;
};

/* device.c */
int rdmaxfer_device_init(void);
void rdmaxfer_device_exit(void);
u32 rdmaxfer_device_count(void);
int rdmaxfer_list_devices(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_query_device(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_query_port(struct rdmaxfer_file *rf, void *arg);

/* chardev.c */
int rdmaxfer_chardev_init(void);
void rdmaxfer_chardev_exit(void);

#endif /* RDMAXFER_H */
