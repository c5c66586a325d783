// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the peer's control messages: each one checked and acted on,
 * and the data of SENDs kept until RECV takes it.
 *
 * ctrl.c receives a message into a control buffer and calls
 * rdmaxfer_handle_msg() with it: from the receive work (cb_rx_work, process
 * context, the file's memory cgroup charged: rdmaxfer_handle_msg_charged())
 * or, for a flow-control message, from the receive CQ's handler.  The
 * header and its credits are checked first, then the type's own fields,
 * each against the length that arrived, offsets and lengths with overflow
 * checks; anything that does not fit drops the connection (-EPROTO,
 * rdmaxfer_msg_failed()).  A message whose content waits for the user (a
 * window's event until REAP, a SEND's bytes until RECV) returns
 * RDMAXFER_HOLD_CREDIT: its credit goes back when the user has taken it, so
 * a peer that sends faster than the user takes runs out of credits rather
 * than filling kernel memory (at most RDMAXFER_MAX_MSGS queued).
 *
 * Locking: c_lock (bottom halves off) for the queued messages and the
 * windows' list; c_peer_win_lock in peer_win.c; see the order at the top
 * of rdmaxfer.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rdmaxfer.h"
#include "trace.h"

/* --- the peer's messages ---------------------------------------------------- */

/* Find our window @id exposed on this connection and check a range in it. */
static int rdmaxfer_check_write_done(struct rdmaxfer_conn *conn, u32 id, u64 off, u64 len)
{
	struct rdmaxfer_window *win;
	int ret = -EPROTO;
	u64 end;

	if (!len || check_add_overflow(off, len, &end))
		return -EPROTO;
	spin_lock_bh(&conn->c_lock);
	list_for_each_entry(win, &conn->c_windows, w_entry) {
		if (win->w_obj.id == id) {
			if (end <= win->w_reg.rg_length &&
			    (win->w_reg.rg_access & RDMAXFER_REMOTE_WRITE))
				ret = 0;
			break;
		}
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/* ADVERT: the peer exposed a window to us. */
static int rdmaxfer_handle_advert(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_advert *adv = p;
	int ret;

	ret = rdmaxfer_peer_win_add(conn, p, plen);	/* checks plen first */
	if (ret)
		return ret;
	ret = rdmaxfer_queue_peer_event(conn, true, RDMAXFER_EVENT_WINDOW,
					be32_to_cpu(adv->access), be64_to_cpu(adv->length),
					0, 0, be32_to_cpu(adv->window_id));
	return ret > 0 ? RDMAXFER_HOLD_CREDIT : ret;
}

/* REVOKE: the peer took a window back. */
static int rdmaxfer_handle_revoke(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_revoke *rv = p;
	int ret;

	if (plen != sizeof(*rv))
		return -EPROTO;
	ret = rdmaxfer_peer_win_del(conn, be32_to_cpu(rv->window_id));
	if (ret)
		return ret;
	ret = rdmaxfer_queue_peer_event(conn, true, RDMAXFER_EVENT_WINDOW_REVOKED, 0, 0, 0,
					0, be32_to_cpu(rv->window_id));
	return ret > 0 ? RDMAXFER_HOLD_CREDIT : ret;
}

/* DATA: a SEND's bytes, kept until RECV takes them. */
static int rdmaxfer_handle_data(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	struct rdmaxfer_file *rf = conn->c_obj.file;
	struct rdmaxfer_msg *m;
	int ret = 0;

	if (!plen || plen > RDMAXFER_MAX_SEND)
		return -EPROTO;
	m = kmalloc(struct_size(m, m_data, plen), GFP_KERNEL_ACCOUNT);
	if (!m)
		return -ENOMEM;
	m->m_length = plen;
	memcpy(m->m_data, p, plen);
	spin_lock_bh(&conn->c_lock);
	if (conn->c_cb.cb_nmsgs >= RDMAXFER_MAX_MSGS) {
		ret = -EPROTO;	/* more than the credits it had */
	} else {
		list_add_tail(&m->m_entry, &conn->c_cb.cb_msgs);
		conn->c_cb.cb_nmsgs++;
	}
	spin_unlock_bh(&conn->c_lock);
	if (ret) {
		kfree(m);
		return ret;
	}
	rdmaxfer_count(rf, RDMAXFER_C_RECV_MSGS, 1);
	rdmaxfer_count(rf, RDMAXFER_C_RECV_BYTES, plen);
	ret = rdmaxfer_queue_peer_event(conn, false, RDMAXFER_EVENT_RECV, 0, plen, 0, 0, 0);
	/* its credit goes back when the user RECVs it: back-pressure */
	return ret ?: RDMAXFER_HOLD_CREDIT;
}

/* WRITE_DONE: the peer's WRITE_IMM into one of our windows has landed. */
static int rdmaxfer_handle_write_done(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_write_done *wd = p;
	u64 off, wlen;
	u32 id;
	int ret;

	if (plen != sizeof(*wd))
		return -EPROTO;
	id = be32_to_cpu(wd->window_id);
	off = be64_to_cpu(wd->offset);
	wlen = be64_to_cpu(wd->length);
	ret = rdmaxfer_check_write_done(conn, id, off, wlen);
	if (ret)
		return ret;
	rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_WRITES_IMM_IN, 1);
	ret = rdmaxfer_queue_peer_event(conn, true, RDMAXFER_EVENT_WRITE_IMM, 0, wlen, off,
					be32_to_cpu(wd->imm_data), id);
	return ret > 0 ? RDMAXFER_HOLD_CREDIT : ret;
}

/**
 * rdmaxfer_handle_msg - handle one received control message
 * @conn: the connection it arrived on
 * @buf: the message, in the receive buffer
 * @len: its length as received
 *
 * Every field is checked, lengths against what arrived.
 *
 * Context: the receive work (cb_rx_work); may sleep.  A flow-control
 * message (rdmaxfer_msg_is_flow()) is also handled from the receive CQ's
 * handler (softirq): its handlers only take c_lock and wake waiters.
 * Return: 0 (the credit goes back with the buffer), RDMAXFER_HOLD_CREDIT,
 * or an error, which drops the connection.
 */
int rdmaxfer_handle_msg(struct rdmaxfer_conn *conn, const void *buf, u32 len)
{
	const struct rdmaxfer_msg_hdr *hdr = buf;
	const void *p = hdr + 1;
	bool auth;
	u32 plen;
	int ret;

	if (len < sizeof(*hdr))
		return -EPROTO;
	plen = be32_to_cpu(hdr->length);
	if (plen != len - sizeof(*hdr))
		return -EPROTO;
	trace_rdmaxfer_flow(conn, RDMAXFER_FLOW_RX, be16_to_cpu(hdr->type),
			    be16_to_cpu(hdr->credits));
	/*
	 * With a key, nothing before the handshake is done but the client's
	 * proof on a listener's connection, and that only then (auth.c)
	 */
	auth = hdr->type == cpu_to_be16(RDMAXFER_MSG_AUTH);
	if (READ_ONCE(conn->c_auth_wait) != auth)
		return -EPROTO;
	if (auth) {
		might_sleep();
		ret = rdmaxfer_auth_handle(conn, p, plen);
		if (ret)
			return ret;
	}
	ret = rdmaxfer_credit_returned(conn, be16_to_cpu(hdr->credits),
				       conn->c_peer_ctrl_size);
	if (ret)
		return ret;

	switch (be16_to_cpu(hdr->type)) {
	case RDMAXFER_MSG_CREDIT:
		return rdmaxfer_credit_handle(conn, p, plen);
	case RDMAXFER_MSG_WANT:
		return rdmaxfer_credit_handle_want(conn, p, plen);
	}
	might_sleep();
	switch (be16_to_cpu(hdr->type)) {
	case RDMAXFER_MSG_ADVERT:
		return rdmaxfer_handle_advert(conn, p, plen);
	case RDMAXFER_MSG_REVOKE:
		return rdmaxfer_handle_revoke(conn, p, plen);
	case RDMAXFER_MSG_DATA:
		return rdmaxfer_handle_data(conn, p, plen);
	case RDMAXFER_MSG_WRITE_DONE:
		return rdmaxfer_handle_write_done(conn, p, plen);
	case RDMAXFER_MSG_PROBE:
		return rdmaxfer_probe_handle(conn, p, plen);
	case RDMAXFER_MSG_AUTH:
		return 0;	/* taken above */
	default:
		return -EPROTO;
	}
}

/* A message broke the protocol, or could not be handled: drop the connection. */
void rdmaxfer_msg_failed(struct rdmaxfer_conn *conn, int ret)
{
	if (ret == -EPROTO)
		rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_PROTOCOL_ERRORS, 1);
	pr_warn_ratelimited("conn %u: dropping the connection: %s peer message (%d)\n",
			    conn->c_obj.id, ret == -EPROTO ? "malformed" :
			    ret == -EACCES ? "wrong key proof in a" : "unhandled", ret);
	rdmaxfer_conn_fail(conn, ret);
}

/* Handle a control message with the file's memory cgroup charged. */
int rdmaxfer_handle_msg_charged(struct rdmaxfer_conn *conn, const void *buf, u32 len)
{
	struct mem_cgroup *old;
	int ret;

	old = set_active_memcg(conn->c_obj.file->rf_memcg);	/* see chardev.c */
	ret = rdmaxfer_handle_msg(conn, buf, len);
	set_active_memcg(old);
	return ret;
}

/* --- RECV -------------------------------------------------------------------- */

/**
 * rdmaxfer_ioctl_recv - RDMAXFER_IOC_RECV
 * @rf: the file
 * @arg: struct rdmaxfer_recv
 *
 * Context: process context.
 * Return: 0, -ENOENT, -EAGAIN (no message), -EMSGSIZE (length set, the
 * message stays queued), -EFAULT (the message stays queued).
 */
int rdmaxfer_ioctl_recv(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_recv *cmd = arg;
	struct rdmaxfer_conn *conn;
	struct rdmaxfer_msg *m;
	int ret = 0;

	conn = rdmaxfer_obj_get(rf, cmd->conn_id, RDMAXFER_OBJ_CONN);
	if (!conn)
		return -ENOENT;
	spin_lock_bh(&conn->c_lock);
	m = list_first_entry_or_null(&conn->c_cb.cb_msgs, struct rdmaxfer_msg, m_entry);
	if (!m) {
		ret = -EAGAIN;
	} else if (m->m_length > cmd->length) {
		cmd->length = m->m_length;
		ret = -EMSGSIZE;
	} else {
		list_del(&m->m_entry);
		conn->c_cb.cb_nmsgs--;
	}
	spin_unlock_bh(&conn->c_lock);
	if (!ret) {
		if (copy_to_user(u64_to_user_ptr(cmd->addr), m->m_data, m->m_length)) {
			spin_lock_bh(&conn->c_lock);
			list_add(&m->m_entry, &conn->c_cb.cb_msgs);
			conn->c_cb.cb_nmsgs++;
			spin_unlock_bh(&conn->c_lock);
			ret = -EFAULT;
		} else {
			cmd->length = m->m_length;
			kfree(m);
			/* the peer may send another message now (may post a CREDIT) */
			if (!rdmaxfer_conn_enter(conn)) {
				rdmaxfer_credit_grant(conn);
				rdmaxfer_conn_exit(conn);
			}
		}
	}
	rdmaxfer_obj_put(&conn->c_obj);
	return ret;
}

/**
 * rdmaxfer_msgs_free - free the messages a connection still holds
 * @conn: the connection, being released
 */
void rdmaxfer_msgs_free(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_msg *m, *tmp;

	list_for_each_entry_safe(m, tmp, &conn->c_cb.cb_msgs, m_entry)
		kfree(m);
	INIT_LIST_HEAD(&conn->c_cb.cb_msgs);
	conn->c_cb.cb_nmsgs = 0;
}
