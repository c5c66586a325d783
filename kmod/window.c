// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - windows: EXPOSE and REVOKE, a slice of a registered buffer
 * that the peer may read or write.
 *
 * EXPOSE registers a slice of a buffer (a struct rdmaxfer_reg, reg.c: FRWR
 * segments in the connection's own PD, with exactly the access asked
 * for) and advertises it to the peer in one ADVERT message, whose segment
 * addresses are window offsets (no kernel, physical or DMA address goes on
 * the wire).  The window's id is published only after the ADVERT went
 * out, so a REVOKE cannot overtake it.  The peer splits its operations at
 * segment boundaries.  A connection carries at most as many of our
 * windows as the peer takes (its hello: c_peer_max_wins).  A window is
 * released (REVOKE, its connection going down, or the file closing) by
 * deregistering its MRs, which invalidates their keys, before the buffer
 * reference that keeps the pages pinned is dropped: invalidate, then unpin.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

/**
 * rdmaxfer_window_release - free a window whose last reference is gone
 * @win: the window
 *
 * Context: process context.
 */
void rdmaxfer_window_release(struct rdmaxfer_window *win)
{
	struct rdmaxfer_conn *conn = win->w_reg.rg_conn;
	struct rdmaxfer_buf *buf = win->w_reg.rg_buf;

	rdmaxfer_reg_destroy(&win->w_reg);
	rdmaxfer_obj_put(&buf->b_obj);
	rdmaxfer_obj_put(&conn->c_obj);
	kfree(win);
}

/*
 * Take a window off its connection and out of the id table, dropping the
 * references those held.  Safe to race with itself.
 */
static void rdmaxfer_window_unlink(struct rdmaxfer_window *win)
{
	struct rdmaxfer_conn *conn = win->w_reg.rg_conn;
	bool listed;

	spin_lock_bh(&conn->c_lock);
	listed = !list_empty(&win->w_entry);
	list_del_init(&win->w_entry);
	if (listed)
		WRITE_ONCE(conn->c_nwindows, conn->c_nwindows - 1);
	spin_unlock_bh(&conn->c_lock);
	kref_get(&win->w_obj.ref);
	if (listed)
		rdmaxfer_obj_put(&win->w_obj);
	if (rdmaxfer_obj_remove(&win->w_obj))
		rdmaxfer_obj_put(&win->w_obj);
	rdmaxfer_obj_put(&win->w_obj);
}

/**
 * rdmaxfer_window_release_all - release every window exposed on a connection
 * @conn: the connection, being torn down (its QP is drained)
 *
 * Context: process context.  The MRs are deregistered before the buffers
 * can be unpinned.
 */
void rdmaxfer_window_release_all(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_window *win;

	lockdep_assert_held(&conn->c_teardown_lock);

	for (;;) {
		spin_lock_bh(&conn->c_lock);
		win = list_first_entry_or_null(&conn->c_windows, struct rdmaxfer_window,
					       w_entry);
		if (win)
			kref_get(&win->w_obj.ref);
		spin_unlock_bh(&conn->c_lock);
		if (!win)
			break;
		rdmaxfer_window_unlink(win);
		rdmaxfer_obj_put(&win->w_obj);
	}
}

/* Build and send the ADVERT of a registered window. */
static int rdmaxfer_window_advertise(struct rdmaxfer_window *win)
{
	struct rdmaxfer_conn *conn = win->w_reg.rg_conn;
	struct rdmaxfer_msg_advert *adv;
	struct rdmaxfer_ctrl *ct;
	u32 i, len;

	ct = rdmaxfer_ctrl_get(conn, MAX_SCHEDULE_TIMEOUT, 1, false);
	if (IS_ERR(ct))
		return PTR_ERR(ct);
	adv = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);
	len = struct_size(adv, segs, win->w_reg.rg_nsegs);
	adv->window_id = cpu_to_be32(win->w_obj.id);
	adv->access = cpu_to_be32(win->w_reg.rg_access);
	adv->length = cpu_to_be64(win->w_reg.rg_length);
	adv->nsegs = cpu_to_be32(win->w_reg.rg_nsegs);
	adv->reserved = 0;
	for (i = 0; i < win->w_reg.rg_nsegs; i++) {
		struct ib_mr *mr = win->w_reg.rg_segs[i].rs_mr;

		adv->segs[i].addr = cpu_to_be64(mr->iova);
		adv->segs[i].rkey = cpu_to_be32(mr->rkey);
		adv->segs[i].length = cpu_to_be32(mr->length);
	}
	return rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_ADVERT, len);
}

/* Check EXPOSE's range and access against the buffer's. */
static int rdmaxfer_expose_check(const struct rdmaxfer_expose *cmd,
				 const struct rdmaxfer_buf *buf)
{
	u64 end;

	if (!cmd->length || check_add_overflow(cmd->offset, cmd->length, &end) ||
	    end > buf->b_length)
		return -EINVAL;
	if ((cmd->access & RDMAXFER_REMOTE_READ) && !(buf->b_access & RDMAXFER_BUF_READ))
		return -EINVAL;
	/* the peer can only align atomics to the window's start */
	if ((cmd->access & RDMAXFER_REMOTE_ATOMIC) &&
	    !IS_ALIGNED(buf->b_addr + cmd->offset, sizeof(u64)))
		return -EINVAL;
	if ((cmd->access & (RDMAXFER_REMOTE_WRITE | RDMAXFER_REMOTE_ATOMIC)) &&
	    !(buf->b_access & RDMAXFER_BUF_WRITE))
		return -EINVAL;
	return 0;
}

/**
 * rdmaxfer_window_create - register a slice of a buffer as a window
 * @rf: the file
 * @conn: the connection whose PD the window goes in
 * @buf: the buffer
 * @cmd: EXPOSE's arguments, checked by rdmaxfer_expose_check()
 *
 * Registers the slice (rdmaxfer_reg_create()) and reserves the window's id
 * (the ADVERT carries it; it is published later).  On success the window
 * owns the caller's references on @conn and @buf; on failure they stay the
 * caller's.
 *
 * Context: process, may sleep; between rdmaxfer_conn_enter() and
 * rdmaxfer_conn_exit().
 * Return: the window, or ERR_PTR(-EINVAL) (more segments than an ADVERT
 * holds), -ENOSPC (the file's registrations have RDMAXFER_MAX_FILE_MRS
 * segments), -ENOMEM, -EMFILE, or what registration failed with.
 */
static struct rdmaxfer_window *rdmaxfer_window_create(struct rdmaxfer_file *rf,
						      struct rdmaxfer_conn *conn,
						      struct rdmaxfer_buf *buf,
						      const struct rdmaxfer_expose *cmd)
{
	struct rdmaxfer_window *win;
	u32 nsegs;
	int ret;

	nsegs = rdmaxfer_reg_nsegs(conn->c_dev->rd_ib, buf, cmd->offset, cmd->length,
				   cmd->access);
	if (nsegs > RDMAXFER_MAX_WIN_SEGS ||
	    sizeof(struct rdmaxfer_msg_hdr) +
	    struct_size((struct rdmaxfer_msg_advert *)NULL, segs, nsegs) > conn->c_peer_ctrl_size)
		return ERR_PTR(-EINVAL);
	win = kzalloc_obj(*win, GFP_KERNEL_ACCOUNT);
	if (!win)
		return ERR_PTR(-ENOMEM);
	rdmaxfer_obj_init(&win->w_obj, rf, RDMAXFER_OBJ_WINDOW);
	INIT_LIST_HEAD(&win->w_entry);
	ret = rdmaxfer_reg_create(&win->w_reg, rf, conn, buf, cmd->offset, cmd->length,
				  cmd->access);
	if (!ret) {
		ret = rdmaxfer_obj_reserve(&win->w_obj);
		if (ret)
			rdmaxfer_reg_destroy(&win->w_reg);
	}
	if (!ret)
		return win;
	rdmaxfer_obj_fini(&win->w_obj);
	kfree(win);
	return ERR_PTR(ret);
}

/**
 * rdmaxfer_ioctl_expose - RDMAXFER_IOC_EXPOSE
 * @rf: the file
 * @arg: struct rdmaxfer_expose
 *
 * Context: process context, may sleep (registration, waiting for a credit).
 * Return: 0, -ENOENT (ids), -EINVAL (range, access bits, access the buffer
 * was not registered for, too many segments), -ENOTCONN, -EOPNOTSUPP
 * (atomics on a device without them), -EMFILE, -ENOSPC (the file's windows
 * have RDMAXFER_MAX_FILE_MRS segments, or the connection has the
 * c_peer_max_wins windows the peer takes), -ENOMEM, -EINTR.
 */
int rdmaxfer_ioctl_expose(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_expose *cmd = arg;
	struct rdmaxfer_window *win;
	struct rdmaxfer_conn *conn;
	struct rdmaxfer_buf *buf;
	int ret;

	if (!cmd->access || cmd->access & ~(RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE |
					    RDMAXFER_REMOTE_ATOMIC))
		return -EINVAL;
	conn = rdmaxfer_obj_get(rf, cmd->conn_id, RDMAXFER_OBJ_CONN);
	if (!conn)
		return -ENOENT;
	buf = rdmaxfer_obj_get(rf, cmd->buf_id, RDMAXFER_OBJ_BUF);
	if (!buf) {
		ret = -ENOENT;
		goto out_conn;
	}
	ret = rdmaxfer_expose_check(cmd, buf);
	if (ret)
		goto out_buf;
	ret = rdmaxfer_conn_enter(conn);
	if (ret)
		goto out_buf;
	if ((cmd->access & RDMAXFER_REMOTE_ATOMIC) &&
	    conn->c_dev->rd_ib->attrs.atomic_cap == IB_ATOMIC_NONE) {
		ret = -EOPNOTSUPP;
		goto out_exit;
	}
	/* a hint that saves registering for nothing; checked again below */
	if (READ_ONCE(conn->c_nwindows) >= conn->c_peer_max_wins) {
		ret = -ENOSPC;
		goto out_exit;
	}
	win = rdmaxfer_window_create(rf, conn, buf, cmd);
	if (IS_ERR(win)) {
		ret = PTR_ERR(win);
		goto out_exit;
	}

	/*
	 * The window now owns the conn and buf references.  Its id is
	 * published only once the window is on the connection and
	 * advertised: a REVOKE cannot reach it before, and teardown (which
	 * waits for rdmaxfer_conn_exit()) finds it on the list after.
	 */
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		ret = -ENOTCONN;
	} else if (conn->c_nwindows >= conn->c_peer_max_wins) {
		ret = -ENOSPC;	/* the peer would drop the connection */
	} else {
		kref_get(&win->w_obj.ref);
		list_add_tail(&win->w_entry, &conn->c_windows);
		WRITE_ONCE(conn->c_nwindows, conn->c_nwindows + 1);
	}
	spin_unlock_bh(&conn->c_lock);
	if (!ret)
		ret = rdmaxfer_window_advertise(win);
	if (!ret)
		rdmaxfer_obj_publish(&win->w_obj);
	rdmaxfer_conn_exit(conn);
	if (ret) {
		rdmaxfer_window_unlink(win);	/* also gives the id back */
		rdmaxfer_obj_put(&win->w_obj);
		return ret;
	}
	trace_rdmaxfer_window_expose(win);
	cmd->window_id = win->w_obj.id;
	rdmaxfer_obj_put(&win->w_obj);
	return 0;

out_exit:
	rdmaxfer_conn_exit(conn);
out_buf:
	rdmaxfer_obj_put(&buf->b_obj);
out_conn:
	rdmaxfer_obj_put(&conn->c_obj);
	return ret;
}

/**
 * rdmaxfer_ioctl_revoke - RDMAXFER_IOC_REVOKE
 * @rf: the file
 * @arg: struct rdmaxfer_revoke
 *
 * Tells the peer (best effort: a connection that is down or out of credits
 * for a second is not waited for), then deregisters the window's MRs and
 * releases the buffer slice.
 *
 * Context: process context, may sleep.
 * Return: 0, -ENOENT, -EINVAL.
 */
int rdmaxfer_ioctl_revoke(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_revoke *cmd = arg;
	struct rdmaxfer_window *win;
	struct rdmaxfer_conn *conn;
	struct rdmaxfer_ctrl *ct;

	if (cmd->__reserved)
		return -EINVAL;
	win = rdmaxfer_obj_get(rf, cmd->window_id, RDMAXFER_OBJ_WINDOW);
	if (!win)
		return -ENOENT;
	if (!rdmaxfer_obj_remove(&win->w_obj)) {
		rdmaxfer_obj_put(&win->w_obj);
		return -ENOENT;		/* lost a race with another REVOKE */
	}
	rdmaxfer_obj_put(&win->w_obj);	/* the table's reference */
	trace_rdmaxfer_window_revoke(win);

	conn = win->w_reg.rg_conn;
	if (!rdmaxfer_conn_enter(conn)) {
		ct = rdmaxfer_ctrl_get(conn, HZ, 1, false);
		if (!IS_ERR(ct)) {
			struct rdmaxfer_msg_revoke *rv;

			rv = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);
			rv->window_id = cpu_to_be32(win->w_obj.id);
			rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_REVOKE, sizeof(*rv));
		}
		rdmaxfer_conn_exit(conn);
	}
	rdmaxfer_window_unlink(win);
	rdmaxfer_obj_put(&win->w_obj);
	return 0;
}
