// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the control channel: control buffers, credits, receiving and
 * dispatching the peer's messages, RECV.
 *
 * Each connection has RDMAXFER_SEND_BUFS send buffers and
 * RDMAXFER_RECV_DEPTH receive buffers of RDMAXFER_CTRL_SIZE bytes, mapped
 * once when the connection is set up (rdmaxfer_ctrl_setup(), from conn.c).
 * The receive buffers are posted before connecting; the hello tells the
 * peer how many, and that is its initial credit.  Sending a message takes a
 * send buffer, a credit and a send WR (rdmaxfer_ctrl_get()); the message
 * carries the credits we owe the peer, and an empty CREDIT message returns
 * them when half the receive depth is owed and nothing else is going out.
 * See proto.h for the credit rules.
 *
 * Every received message is validated in rdmaxfer_handle_msg() (type,
 * length, credits, every field; overflow-checked); a bad one drops the
 * connection (-EPROTO), nothing else.  The receive CQ polls from a work
 * item, so the handlers may sleep: they allocate, take c_peer_win_lock and
 * queue events on the file.  A message whose content waits for the user
 * (a SEND's data until RECV, a window's event until REAP) keeps its
 * credit until then: a peer that sends faster than the user takes runs out
 * of credits instead of filling kernel memory.
 *
 * Locking: c_lock (bottom halves off) for credits, the free send buffers
 * and the queued messages; see the order at the top of rdmaxfer.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rdmaxfer.h"
#include "trace.h"

/* --- sending ----------------------------------------------------------------- */

/* Take a send buffer, a credit (keeping @reserve) and a WR, under c_lock. */
static struct rdmaxfer_ctrl *rdmaxfer_ctrl_take(struct rdmaxfer_conn *conn, u32 reserve)
{
	struct rdmaxfer_ctrl *ct = NULL;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		ct = ERR_PTR(-ENOTCONN);
	} else if (conn->c_credits > reserve && conn->c_wr_free &&
		   !list_empty(&conn->c_free_sends)) {
		ct = list_first_entry(&conn->c_free_sends, struct rdmaxfer_ctrl, ct_entry);
		list_del(&ct->ct_entry);
		conn->c_credits--;
		conn->c_wr_free--;
	}
	spin_unlock_bh(&conn->c_lock);
	return ct;
}

/**
 * rdmaxfer_ctrl_get - get what sending one control message takes
 * @conn: the connection
 * @timeout: jiffies to wait; 0: do not wait; MAX_SCHEDULE_TIMEOUT: forever
 * @reserve: credits to leave: 1 for control messages (the last one is for
 *	CREDIT messages), RDMAXFER_DATA_RESERVE for SEND data
 *
 * A send buffer, a credit and a send WR.
 *
 * Context: process context if @timeout, else any.
 * Return: the buffer, or ERR_PTR(-ENOTCONN, -EINTR, -EAGAIN, -ETIMEDOUT).
 */
struct rdmaxfer_ctrl *rdmaxfer_ctrl_get(struct rdmaxfer_conn *conn, long timeout,
					u32 reserve)
{
	struct rdmaxfer_ctrl *ct = NULL;
	long left;

	if (!timeout) {
		ct = rdmaxfer_ctrl_take(conn, reserve);
		return ct ?: ERR_PTR(-EAGAIN);
	}
	left = wait_event_interruptible_timeout(conn->c_wait,
						(ct = rdmaxfer_ctrl_take(conn, reserve)) != NULL,
						timeout);
	if (left < 0)
		return ERR_PTR(-EINTR);
	return ct ?: ERR_PTR(-ETIMEDOUT);
}

/**
 * rdmaxfer_ctrl_put - give a send buffer and its WR back
 * @conn: the connection
 * @ct: the buffer
 *
 * Context: any context that may take a spinlock.
 */
void rdmaxfer_ctrl_put(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct)
{
	spin_lock_bh(&conn->c_lock);
	list_add(&ct->ct_entry, &conn->c_free_sends);
	conn->c_wr_free++;
	spin_unlock_bh(&conn->c_lock);
	wake_up_all(&conn->c_wait);
}

/**
 * rdmaxfer_ctrl_put_unused - give back what rdmaxfer_ctrl_get() took
 * @conn: the connection
 * @ct: the buffer, not posted
 */
void rdmaxfer_ctrl_put_unused(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct)
{
	spin_lock_bh(&conn->c_lock);
	conn->c_credits++;
	spin_unlock_bh(&conn->c_lock);
	rdmaxfer_ctrl_put(conn, ct);
}

/**
 * rdmaxfer_ctrl_send - send a control message
 * @conn: the connection
 * @ct: a buffer from rdmaxfer_ctrl_get(), payload already written after
 *	the header
 * @type: enum rdmaxfer_msg_type
 * @length: payload bytes
 *
 * Returns the credits we owe in the header.  On failure the buffer, WR and
 * credit are given back.
 *
 * Context: process context (ioctl, receive completion handler) or the
 * send CQ's handler (softirq, posting a CREDIT); hard interrupts enabled,
 * no spinlock held: in process context pending softirqs (rxe's tasks, the
 * send CQ's polling) may run at the unlock.
 * Return: 0, -ENOTCONN, or the error of ib_post_send().
 */
int rdmaxfer_ctrl_send(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
		       enum rdmaxfer_msg_type type, u32 length)
{
	struct rdmaxfer_msg_hdr *hdr = ct->ct_buf;
	struct ib_device *ib = conn->c_dev->rd_ib;
	struct ib_sge sge = {
		.addr = ct->ct_dma,
		.length = sizeof(*hdr) + length,
		.lkey = conn->c_pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &ct->ct_cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	u32 grant;
	int ret;

	hdr->type = cpu_to_be16(type);
	hdr->length = cpu_to_be32(length);
	/*
	 * With bottom halves off (as c_lock always is): a software device
	 * (rxe) schedules its send processing as a tasklet, which then runs
	 * right here at spin_unlock_bh() instead of in ksoftirqd after a
	 * context switch.
	 */
	spin_lock_bh(&conn->c_lock);
	grant = conn->c_grant;
	hdr->credits = cpu_to_be16(grant);
	ib_dma_sync_single_for_device(ib, ct->ct_dma, sge.length, DMA_TO_DEVICE);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED)
		ret = -ENOTCONN;
	else
		ret = ib_post_send(conn->c_qp, &wr, NULL);
	if (!ret)
		conn->c_grant -= grant;
	else
		conn->c_credits++;
	spin_unlock_bh(&conn->c_lock);
	if (ret) {
		ct->ct_req = NULL;
		rdmaxfer_ctrl_put(conn, ct);
	}
	return ret;
}

/* Return owed credits in an empty CREDIT message if enough have piled up. */
static void rdmaxfer_maybe_send_credits(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_ctrl *ct;

	if (READ_ONCE(conn->c_grant) < RDMAXFER_RECV_DEPTH / 2)
		return;
	spin_lock_bh(&conn->c_lock);
	ct = NULL;
	if (conn->c_state == RDMAXFER_CS_ESTABLISHED && conn->c_credits && conn->c_wr_free &&
	    conn->c_grant >= RDMAXFER_RECV_DEPTH / 2 && !list_empty(&conn->c_free_sends)) {
		ct = list_first_entry(&conn->c_free_sends, struct rdmaxfer_ctrl, ct_entry);
		list_del(&ct->ct_entry);
		conn->c_credits--;
		conn->c_wr_free--;
	}
	spin_unlock_bh(&conn->c_lock);
	if (ct)
		rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_CREDIT, 0);
}

/**
 * rdmaxfer_conn_grant - owe the peer one more credit
 * @conn: the connection
 *
 * Called when a receive buffer is reposted, or when the user takes a
 * message whose credit was held back (RECV).
 *
 * Context: process context.
 */
void rdmaxfer_conn_grant(struct rdmaxfer_conn *conn)
{
	might_sleep();
	spin_lock_bh(&conn->c_lock);
	conn->c_grant++;
	spin_unlock_bh(&conn->c_lock);
	rdmaxfer_maybe_send_credits(conn);
}

/* --- receiving -------------------------------------------------------------- */

static int rdmaxfer_ctrl_post_recv(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct)
{
	struct ib_sge sge = {
		.addr = ct->ct_dma,
		.length = RDMAXFER_CTRL_SIZE,
		.lkey = conn->c_pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &ct->ct_cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret = -ENOTCONN;

	ib_dma_sync_single_for_device(conn->c_dev->rd_ib, ct->ct_dma, RDMAXFER_CTRL_SIZE,
				      DMA_FROM_DEVICE);
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_DOWN)
		ret = ib_post_recv(conn->c_qp, &wr, NULL);
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

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
			if (end <= win->w_length && (win->w_access & RDMAXFER_REMOTE_WRITE))
				ret = 0;
			break;
		}
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/*
 * rdmaxfer_handle_msg(): repost the buffer but keep the credit; it goes back
 * when the user has taken what the message brought (REAP of its event, RECV
 * of its data).
 */
#define RDMAXFER_HOLD_CREDIT	1

/*
 * The peer's message returned @credits of ours.  More than we ever gave it
 * is a protocol error.
 */
static int rdmaxfer_credits_returned(struct rdmaxfer_conn *conn, u32 credits)
{
	u32 now = 0;
	int ret = 0;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_credits + credits > conn->c_peer_recvs) {
		ret = -EPROTO;
	} else {
		conn->c_credits += credits;
		now = conn->c_credits;
	}
	spin_unlock_bh(&conn->c_lock);
	if (!ret && credits) {
		trace_rdmaxfer_credits(conn, credits, now);
		wake_up_all(&conn->c_wait);
	}
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
	if (conn->c_nmsgs >= RDMAXFER_MAX_MSGS) {
		ret = -EPROTO;	/* more than the credits it had */
	} else {
		list_add_tail(&m->m_entry, &conn->c_msgs);
		conn->c_nmsgs++;
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
 * Context: the receive CQ's work item; may sleep.
 * Return: 0 (the credit goes back with the buffer), RDMAXFER_HOLD_CREDIT,
 * or an error, which drops the connection.
 */
static int rdmaxfer_handle_msg(struct rdmaxfer_conn *conn, const void *buf, u32 len)
{
	const struct rdmaxfer_msg_hdr *hdr = buf;
	const void *p = hdr + 1;
	u32 plen;
	int ret;

	might_sleep();
	if (len < sizeof(*hdr))
		return -EPROTO;
	plen = be32_to_cpu(hdr->length);
	if (plen != len - sizeof(*hdr))
		return -EPROTO;
	ret = rdmaxfer_credits_returned(conn, be16_to_cpu(hdr->credits));
	if (ret)
		return ret;

	switch (be16_to_cpu(hdr->type)) {
	case RDMAXFER_MSG_CREDIT:
		return plen ? -EPROTO : 0;
	case RDMAXFER_MSG_ADVERT:
		return rdmaxfer_handle_advert(conn, p, plen);
	case RDMAXFER_MSG_REVOKE:
		return rdmaxfer_handle_revoke(conn, p, plen);
	case RDMAXFER_MSG_DATA:
		return rdmaxfer_handle_data(conn, p, plen);
	case RDMAXFER_MSG_WRITE_DONE:
		return rdmaxfer_handle_write_done(conn, p, plen);
	default:
		return -EPROTO;
	}
}

static void rdmaxfer_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_ctrl *ct = container_of(wc->wr_cqe, struct rdmaxfer_ctrl, ct_cqe);
	struct rdmaxfer_conn *conn = ct->ct_conn;
	struct mem_cgroup *old;
	int ret;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_debug("conn %u: receive failed: %s\n", conn->c_obj.id,
				 ib_wc_status_msg(wc->status));
			rdmaxfer_conn_fail(conn, -EIO);
		}
		return;
	}
	ib_dma_sync_single_for_cpu(conn->c_dev->rd_ib, ct->ct_dma, RDMAXFER_CTRL_SIZE,
				   DMA_FROM_DEVICE);
	old = set_active_memcg(conn->c_obj.file->rf_memcg);	/* see chardev.c */
	ret = rdmaxfer_handle_msg(conn, ct->ct_buf, wc->byte_len);
	set_active_memcg(old);
	if (ret == RDMAXFER_HOLD_CREDIT) {
		rdmaxfer_ctrl_post_recv(conn, ct);
		return;
	}
	if (ret) {
		if (ret == -EPROTO)
			rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_PROTOCOL_ERRORS, 1);
		pr_warn_ratelimited("conn %u: dropping the connection: %s peer message (%d)\n",
				    conn->c_obj.id, ret == -EPROTO ? "malformed" : "unhandled",
				    ret);
		rdmaxfer_conn_fail(conn, ret);
		return;
	}
	if (!rdmaxfer_ctrl_post_recv(conn, ct))
		rdmaxfer_conn_grant(conn);
}

static void rdmaxfer_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_ctrl *ct = container_of(wc->wr_cqe, struct rdmaxfer_ctrl, ct_cqe);
	struct rdmaxfer_conn *conn = ct->ct_conn;
	struct rdmaxfer_req *req = ct->ct_req;

	ct->ct_req = NULL;
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR)
		rdmaxfer_conn_fail(conn, rdmaxfer_wc_errno(conn, wc->status));
	rdmaxfer_ctrl_put(conn, ct);
	if (req)
		rdmaxfer_req_wc(req, wc->status);
	rdmaxfer_maybe_send_credits(conn);
}

/* --- setup ------------------------------------------------------------------ */

static int rdmaxfer_ctrl_init(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
			      enum dma_data_direction dir)
{
	struct ib_device *ib = conn->c_dev->rd_ib;

	ct->ct_conn = conn;
	ct->ct_buf = rdmaxfer_cm_fault() ? NULL : kzalloc(RDMAXFER_CTRL_SIZE, GFP_KERNEL_ACCOUNT);
	if (!ct->ct_buf)
		return -ENOMEM;
	ct->ct_dma = ib_dma_map_single(ib, ct->ct_buf, RDMAXFER_CTRL_SIZE, dir);
	if (ib_dma_mapping_error(ib, ct->ct_dma)) {
		kfree(ct->ct_buf);
		ct->ct_buf = NULL;
		return -ENOMEM;
	}
	ct->ct_cqe.done = dir == DMA_TO_DEVICE ? rdmaxfer_send_done : rdmaxfer_recv_done;
	return 0;
}

static void rdmaxfer_ctrl_free(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
			       enum dma_data_direction dir)
{
	if (!ct->ct_buf)
		return;
	ib_dma_unmap_single(conn->c_dev->rd_ib, ct->ct_dma, RDMAXFER_CTRL_SIZE, dir);
	kfree(ct->ct_buf);
	ct->ct_buf = NULL;
}

/**
 * rdmaxfer_ctrl_setup - map the control buffers and post the receives
 * @conn: the connection; its QP exists
 *
 * Runs in rdma_cm's handlers (connection setup): each buffer and each
 * receive is a fault site (see conn.c, "Fault injection").  On failure the
 * caller tears down; rdmaxfer_ctrl_free_all() frees what was made.
 *
 * Context: process context.
 * Return: 0, -ENOMEM, or the error of ib_post_recv().
 */
int rdmaxfer_ctrl_setup(struct rdmaxfer_conn *conn)
{
	u32 i;
	int ret;

	might_sleep();
	for (i = 0; i < RDMAXFER_SEND_BUFS; i++) {
		ret = rdmaxfer_ctrl_init(conn, &conn->c_sends[i], DMA_TO_DEVICE);
		if (ret)
			return ret;
		list_add_tail(&conn->c_sends[i].ct_entry, &conn->c_free_sends);
	}
	for (i = 0; i < RDMAXFER_RECV_DEPTH; i++) {
		ret = rdmaxfer_ctrl_init(conn, &conn->c_recvs[i], DMA_FROM_DEVICE);
		if (ret)
			return ret;
		ret = rdmaxfer_cm_fault() ? -ENOMEM :
		      rdmaxfer_ctrl_post_recv(conn, &conn->c_recvs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * rdmaxfer_ctrl_free_all - unmap and free the control buffers
 * @conn: the connection; its QP is drained or was never connected
 *
 * Idempotent; frees what rdmaxfer_ctrl_setup() made, also partly.
 */
void rdmaxfer_ctrl_free_all(struct rdmaxfer_conn *conn)
{
	u32 i;

	if (conn->c_dev) {
		for (i = 0; i < RDMAXFER_RECV_DEPTH; i++)
			rdmaxfer_ctrl_free(conn, &conn->c_recvs[i], DMA_FROM_DEVICE);
		for (i = 0; i < RDMAXFER_SEND_BUFS; i++)
			rdmaxfer_ctrl_free(conn, &conn->c_sends[i], DMA_TO_DEVICE);
	}
	INIT_LIST_HEAD(&conn->c_free_sends);
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
	m = list_first_entry_or_null(&conn->c_msgs, struct rdmaxfer_msg, m_entry);
	if (!m) {
		ret = -EAGAIN;
	} else if (m->m_length > cmd->length) {
		cmd->length = m->m_length;
		ret = -EMSGSIZE;
	} else {
		list_del(&m->m_entry);
		conn->c_nmsgs--;
	}
	spin_unlock_bh(&conn->c_lock);
	if (!ret) {
		if (copy_to_user(u64_to_user_ptr(cmd->addr), m->m_data, m->m_length)) {
			spin_lock_bh(&conn->c_lock);
			list_add(&m->m_entry, &conn->c_msgs);
			conn->c_nmsgs++;
			spin_unlock_bh(&conn->c_lock);
			ret = -EFAULT;
		} else {
			cmd->length = m->m_length;
			kfree(m);
			/* the peer may send another message now (may post a CREDIT) */
			if (!rdmaxfer_conn_enter(conn)) {
				rdmaxfer_conn_grant(conn);
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

	list_for_each_entry_safe(m, tmp, &conn->c_msgs, m_entry)
		kfree(m);
	INIT_LIST_HEAD(&conn->c_msgs);
	conn->c_nmsgs = 0;
}
