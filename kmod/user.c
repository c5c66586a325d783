// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - what the files of one user hold together: their connections.
 *
 * A connection costs memory inside the RDMA provider that no memory cgroup
 * is charged for (rxe vmallocs its queues; Documentation/security.md).
 * max_conns_per_file bounds a file's share, but a user may open as many
 * files as RLIMIT_NOFILE lets it; max_conns_per_user bounds the sum, the
 * way inotify's max_user_instances bounds what one user's instances hold.
 *
 * The user is the opener's real uid (current_uid(), the uid the kernel's
 * own per-user counts in struct user_struct go by), fixed at open: a
 * file passed to another process keeps counting against its opener.  A
 * struct rdmaxfer_user lives while a file of its uid does, in an xarray
 * indexed by the global uid value.
 *
 * Locking: rdmaxfer_users_lock (a mutex, a leaf) covers the xarray and each
 * entry's u_files; an entry's u_nconns is atomic, so counting a connection
 * (CONNECT, ACCEPT) and giving it back (its release) take no lock.  Files
 * are opened and freed in process context (chardev.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uidgid.h>

#include "rdmaxfer.h"

/**
 * struct rdmaxfer_user - one user's count
 * @u_uid: the user
 * @u_files: open files of this user (under rdmaxfer_users_lock)
 * @u_nconns: connections of all those files, counted as a file's
 *	rf_nconns is (conn.c)
 */
struct rdmaxfer_user {
	kuid_t		u_uid;
	unsigned int	u_files;
	atomic_t	u_nconns;
};

static DEFINE_MUTEX(rdmaxfer_users_lock);
static DEFINE_XARRAY(rdmaxfer_users);

static unsigned int max_conns_per_user = 1024;
module_param(max_conns_per_user, uint, 0644);
MODULE_PARM_DESC(max_conns_per_user,
		 "Most connections all the open files of one user may have, made (CONNECT) or accepted (default 1024)");

/**
 * rdmaxfer_user_get - find or make the count of the calling task's user
 *
 * Context: process context; takes rdmaxfer_users_lock.
 * Return: the user's count, one file more on it, or ERR_PTR(-ENOMEM).
 */
struct rdmaxfer_user *rdmaxfer_user_get(void)
{
	kuid_t uid = current_uid();
	unsigned long index = __kuid_val(uid);
	struct rdmaxfer_user *u;
	int ret;

	might_sleep();
	mutex_lock(&rdmaxfer_users_lock);
	u = xa_load(&rdmaxfer_users, index);
	if (!u) {
		u = kzalloc_obj(*u, GFP_KERNEL);
		if (!u) {
			u = ERR_PTR(-ENOMEM);
			goto out;
		}
		u->u_uid = uid;
		ret = xa_err(xa_store(&rdmaxfer_users, index, u, GFP_KERNEL));
		if (ret) {
			kfree(u);
			u = ERR_PTR(ret);
			goto out;
		}
	}
	u->u_files++;
out:
	mutex_unlock(&rdmaxfer_users_lock);
	return u;
}

/**
 * rdmaxfer_user_put - a file of the user is gone
 * @u: what rdmaxfer_user_get() returned
 *
 * The file's connections are all gone before (each holds the file).
 *
 * Context: process context; takes rdmaxfer_users_lock.
 */
void rdmaxfer_user_put(struct rdmaxfer_user *u)
{
	might_sleep();
	mutex_lock(&rdmaxfer_users_lock);
	if (!--u->u_files) {
		WARN_ON_ONCE(atomic_read(&u->u_nconns));
		xa_erase(&rdmaxfer_users, __kuid_val(u->u_uid));
		kfree(u);
	}
	mutex_unlock(&rdmaxfer_users_lock);
}

/**
 * rdmaxfer_user_conns_get - count one more connection of the user
 * @u: the user of the file it belongs to
 *
 * Context: any; takes no lock.
 * Return: true, or false if the user has max_conns_per_user already.
 */
bool rdmaxfer_user_conns_get(struct rdmaxfer_user *u)
{
	if (atomic_inc_return(&u->u_nconns) <= READ_ONCE(max_conns_per_user))
		return true;
	atomic_dec(&u->u_nconns);
	return false;
}

/* Give back what rdmaxfer_user_conns_get() counted. */
void rdmaxfer_user_conns_put(struct rdmaxfer_user *u)
{
	atomic_dec(&u->u_nconns);
}
