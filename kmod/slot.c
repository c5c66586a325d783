// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - receive slots, echo slots and sink slots: the user's own
 * buffers on the receive queue.
 *
 * With a peer that speaks them, our user may post slots in its own buffers
 * (RDMAXFER_OP_RECV, rdmaxfer_slot_post()), from the buffer's local
 * registration on the connection (lmr.c); they join the control buffers on
 * the receive queue and are announced to the peer with them
 * (credit.c).  A SEND with immediate that lands in a slot is the
 * user's message and completes the slot; a control message that lands in
 * one is copied out of the user's pages before anything of it is read,
 * handled as if it had come in a control buffer (rdmaxfer_slot_msg()), and
 * the slot goes back on the queue, as it does after a skip.  Every slot
 * completion is checked first (opcode, length within the slot:
 * rdmaxfer_rx_wc_valid()); a bad one fails the connection.
 *
 * Echo slots (krping's idea, for two-sided ping-pong): a user message in
 * one is sent straight back from the slot by the receive handler
 * (sl_echo_wait keeps the order while credits or a fitting slot of the peer
 * are missing, rdmaxfer_echo_kick() posts them when those come), and the
 * slot goes back on the queue when that SEND completes, so a ping costs
 * the echoing host no system call and no wake-up.  Sink slots count and
 * drop the messages that carry their immediate (a bandwidth sink).
 *
 * A message that holds its credit keeps its slot off the queue
 * (sl_held) until the user takes what it brought; teardown completes
 * what is still held (rdmaxfer_held_slots_flush()).
 *
 * Locking: c_lock (bottom halves off), as ctrl.c; completions run in the
 * receive CQ's softirq, control messages of the peer's in cb_rx_work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

static void rdmaxfer_slot_done(struct ib_cq *cq, struct ib_wc *wc);

/**
 * rdmaxfer_slot_post - put a slot on the receive queue
 * @conn: the connection
 * @req: a RECV request, its SGEs set
 * @user: the user posts it (else it goes back after a control message or
 *	a skip took it): it counts for telling the peer soon
 *
 * Context: any context that may take a spinlock.
 * Return: 0, -ENOTCONN, -ENOSPC (RDMAXFER_MAX_SLOTS posted), or the error
 * of ib_post_recv().
 */
int rdmaxfer_slot_post(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, bool user)
{
	u32 hdr = rdmaxfer_hdr_len(conn), len = req->r_event.ev.bytes + hdr;
	struct ib_recv_wr wr = {
		.wr_cqe = &req->r_cqe.cqe,
		.sg_list = req->r_sge + !hdr,
		.num_sge = req->r_nsge + !!hdr,
	};
	int ret = -ENOTCONN;

	req->r_cqe.cqe.done = rdmaxfer_slot_done;
	spin_lock_bh(&conn->c_lock);
	if (hdr)
		rdmaxfer_hdr_rx_post(conn, req);
	if (conn->c_state == RDMAXFER_CS_ESTABLISHED)
		ret = conn->c_sl.sl_posted < RDMAXFER_MAX_SLOTS ?
		      ib_post_recv(conn->c_qp, &wr, NULL) : -ENOSPC;
	if (!ret) {
		u32 idx = conn->c_lg.lg_rx_seq++ % RDMAXFER_RQ_MIRROR;

		conn->c_lg.lg_rx_caps[idx] = len | RDMAXFER_RUN_SLOT;
		conn->c_sl.sl_posted++;
		conn->c_sl.sl_mode = true;
		if (user)
			conn->c_sl.sl_user_new++;
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

static void rdmaxfer_echo_done(struct ib_cq *cq, struct ib_wc *wc);

/*
 * Post the echo of an echo slot: its message back to the peer, from the
 * slot, into a slot of the peer it fits (with skips before it, as for any
 * SEND).  c_lock held.  -EAGAIN: not now (credits, a fitting slot, a WR).
 */
static int rdmaxfer_echo_post(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req)
{
	struct ib_sge sge[1 + RDMAXFER_MAX_MSG_SGES];
	u32 hdr = rdmaxfer_hdr_len(conn), len = req->r_echo_len + hdr;
	struct ib_send_wr wr = {
		.wr_cqe = &req->r_cqe.cqe,
		.sg_list = sge + !hdr,
		.opcode = hdr ? IB_WR_SEND : IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = hdr ? 0 : cpu_to_be32(req->r_echo_imm),
	};
	u32 left = req->r_echo_len, i;
	int ret;

	lockdep_assert_held(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED)
		return -ENOTCONN;
	if (!conn->c_sq.sq_wr_free)
		return -EAGAIN;
	/* the credit and the WR of the echo itself; skips claim their own */
	if (!rdmaxfer_credit_claim(conn, 1)) {
		rdmaxfer_credit_want(conn, len, RDMAXFER_KIND_USER);
		return -EAGAIN;
	}
	conn->c_sq.sq_wr_free--;
	for (i = 0; i < req->r_nsge && left; i++) {
		sge[1 + i] = req->r_sge[1 + i];
		sge[1 + i].length = min(sge[1 + i].length, left);
		left -= sge[1 + i].length;
	}
	wr.num_sge = i + !!hdr;
	req->r_cqe.cqe.done = rdmaxfer_echo_done;
	ret = rdmaxfer_credit_post(conn, &wr, &req->r_cqe, len, RDMAXFER_KIND_USER,
				   req->r_echo_imm);
	if (!ret) {
		trace_rdmaxfer_flow(conn, RDMAXFER_FLOW_ECHO, RDMAXFER_MSG_USER, len);
	} else {
		rdmaxfer_credit_unclaim(conn);
		conn->c_sq.sq_wr_free++;
	}
	return ret;
}

/**
 * rdmaxfer_echo_kick - post the echoes that wait, in the order they came
 * @conn: the connection
 *
 * Called when what an echo may wait for arrives: credits (a CREDIT
 * message), send-queue room, the previous echo's completion.
 *
 * Context: any context that may take a spinlock.
 */
void rdmaxfer_echo_kick(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_req *req;
	int ret = 0;

	if (list_empty(&conn->c_sl.sl_echo_wait))
		return;
	spin_lock_bh(&conn->c_lock);
	while ((req = list_first_entry_or_null(&conn->c_sl.sl_echo_wait, struct rdmaxfer_req,
					       r_held_entry))) {
		ret = rdmaxfer_echo_post(conn, req);
		if (ret)
			break;
		list_del_init(&req->r_held_entry);
	}
	spin_unlock_bh(&conn->c_lock);
	/* what stays is completed by the teardown (rdmaxfer_held_slots_flush()) */
	if (ret == -EAGAIN && READ_ONCE(conn->c_lg.lg_want_due))
		rdmaxfer_credit_maybe_send(conn);
	else if (ret && ret != -EAGAIN && ret != -ENOTCONN)
		rdmaxfer_conn_fail(conn, -EIO);
}

/*
 * The echo of an echo slot is done: the slot goes back on the queue for
 * the next message.  Context: send CQ completion handler (softirq).
 */
static void rdmaxfer_echo_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_req *req = container_of(wc->wr_cqe, struct rdmaxfer_req, r_cqe.cqe);
	struct rdmaxfer_conn *conn = req->r_conn;

	rdmaxfer_conn_wc_failed(conn, wc);
	rdmaxfer_sq_paid(conn, &req->r_cqe, 1);
	if (wc->status != IB_WC_SUCCESS)
		rdmaxfer_req_wc(req, wc->status);
	else if (rdmaxfer_slot_post(conn, req, false))
		rdmaxfer_req_wc(req, IB_WC_WR_FLUSH_ERR);
	else
		rdmaxfer_credit_maybe_send(conn);
}

/**
 * rdmaxfer_held_slots_flush - complete the slots a held message keeps
 * @conn: the connection, drained: nothing will give them back any more
 *
 * And the echo slots whose echo never went out.
 *
 * Context: process context, teardown.
 */
void rdmaxfer_held_slots_flush(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_req *req, *tmp;
	LIST_HEAD(held);

	lockdep_assert_held(&conn->c_teardown_lock);
	spin_lock_bh(&conn->c_lock);
	list_splice_init(&conn->c_sl.sl_held, &held);
	list_splice_tail_init(&conn->c_sl.sl_echo_wait, &held);
	INIT_LIST_HEAD(&conn->c_cb.cb_held);
	INIT_LIST_HEAD(&conn->c_cb.cb_spare);
	spin_unlock_bh(&conn->c_lock);
	list_for_each_entry_safe(req, tmp, &held, r_held_entry) {
		list_del_init(&req->r_held_entry);
		rdmaxfer_req_wc(req, IB_WC_WR_FLUSH_ERR);
	}
}

/*
 * A control message arrived in a slot: copy it out of the user's pages
 * (which the user may be changing) before anything of it is read.
 */
static int rdmaxfer_slot_msg(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, u32 len)
{
	void *msg;
	int ret;

	if (len > RDMAXFER_CTRL_SIZE)
		return -EPROTO;
	msg = kmalloc(len, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	rdmaxfer_slot_copy(conn, req, msg, len);
	ret = rdmaxfer_handle_msg_charged(conn, msg, len);
	kfree(msg);
	return ret;
}

/*
 * Completion of a slot: the user's message (a SEND with immediate)
 * completes it, unless an echo slot sends it back or a sink slot drops it;
 * a control message or a skip puts it back on the queue.
 * Only a control message may sleep (it is handled by the receive work),
 * but for a flow-control message the receive CQ's handler copied (@flow).
 */
void rdmaxfer_slot_handle(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req,
			  const struct ib_wc *wc, const void *flow)
{
	int ret = 0;

	if (wc->status != IB_WC_SUCCESS) {
		rdmaxfer_conn_wc_failed(conn, wc);
		rdmaxfer_req_wc(req, wc->status);
		return;
	}
	if (wc->wc_flags & IB_WC_WITH_IMM) {
		rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_RECV_MSGS, 1);
		rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_RECV_BYTES, wc->byte_len);
		if (req->r_echo) {
			/* back to the peer, in order, from the completion handlers */
			req->r_echo_len = wc->byte_len;
			req->r_echo_imm = be32_to_cpu(wc->ex.imm_data);
			spin_lock_bh(&conn->c_lock);
			list_add_tail(&req->r_held_entry, &conn->c_sl.sl_echo_wait);
			spin_unlock_bh(&conn->c_lock);
			rdmaxfer_echo_kick(conn);
			return;
		}
		if (req->r_sink && be32_to_cpu(wc->ex.imm_data) == req->r_sink_imm) {
			spin_lock_bh(&conn->c_lock);
			conn->c_sl.sl_sink_msgs++;
			conn->c_sl.sl_sink_bytes += wc->byte_len;
			spin_unlock_bh(&conn->c_lock);
			if (rdmaxfer_slot_post(conn, req, false))
				rdmaxfer_req_wc(req, IB_WC_WR_FLUSH_ERR);
			else
				rdmaxfer_credit_maybe_send(conn);
			return;
		}
		req->r_event.ev.bytes = wc->byte_len;
		req->r_event.ev.imm_data = be32_to_cpu(wc->ex.imm_data);
		rdmaxfer_req_wc(req, IB_WC_SUCCESS);
		rdmaxfer_credit_maybe_send(conn);
		return;
	}
	if (flow) {
		ret = rdmaxfer_handle_msg(conn, flow, wc->byte_len);
	} else if (wc->byte_len) {
		might_sleep();
		ret = rdmaxfer_slot_msg(conn, req, wc->byte_len);
	}
	if (ret == RDMAXFER_HOLD_CREDIT) {
		spin_lock_bh(&conn->c_lock);
		list_add_tail(&req->r_held_entry, &conn->c_sl.sl_held);
		spin_unlock_bh(&conn->c_lock);
		return;
	}
	if (ret)
		rdmaxfer_msg_failed(conn, ret);
	if (ret || rdmaxfer_slot_post(conn, req, false)) {
		rdmaxfer_req_wc(req, IB_WC_WR_FLUSH_ERR);
		return;
	}
	rdmaxfer_credit_maybe_send(conn);
}

/* Context: receive CQ completion handler (softirq). */
static void rdmaxfer_slot_done(struct ib_cq *cq, struct ib_wc *cqe)
{
	struct rdmaxfer_req *req = container_of(cqe->wr_cqe, struct rdmaxfer_req, r_cqe.cqe);
	struct rdmaxfer_conn *conn = req->r_conn;
	u64 copy[RDMAXFER_MIN_SLOT / sizeof(u64)];
	struct ib_wc w = *cqe, *wc = &w;
	const void *flow = NULL;
	bool now;

	/* r_event.ev.bytes: the slot's length while it is posted */
	if (!rdmaxfer_rx_wc_valid(wc, req->r_event.ev.bytes + rdmaxfer_hdr_len(conn))) {
		rdmaxfer_msg_failed(conn, -EPROTO);
		wc->status = IB_WC_WR_FLUSH_ERR;
	}
	/* a header entry (hdr.c) says what came; a bad one drops the connection */
	if (rdmaxfer_hdr_rx_done(conn, req, wc)) {
		rdmaxfer_msg_failed(conn, -EPROTO);
		wc->status = IB_WC_WR_FLUSH_ERR;
	}
	if (rdmaxfer_rx_small_msg(wc)) {
		/* the user may change the slot's bytes: look at a copy only */
		rdmaxfer_slot_copy(conn, req, copy, wc->byte_len);
		if (rdmaxfer_msg_is_flow(copy))
			flow = copy;
	}
	spin_lock_bh(&conn->c_lock);
	conn->c_sl.sl_posted--;
	conn->c_lg.lg_rx_done++;
	now = !conn->c_cb.cb_rx_busy && (wc->status != IB_WC_SUCCESS || !wc->byte_len ||
					 (wc->wc_flags & IB_WC_WITH_IMM) || flow);
	if (!now)
		rdmaxfer_rx_defer(conn, &req->r_rx, wc, true);
	spin_unlock_bh(&conn->c_lock);
	if (now)
		rdmaxfer_slot_handle(conn, req, wc, flow);
}

/* --- zero-copy SEND: a message of ours into a slot of the peer's ------------ */

static void rdmaxfer_send_zc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_req *req = container_of(wc->wr_cqe, struct rdmaxfer_req, r_cqe.cqe);

	rdmaxfer_conn_wc_failed(req->r_conn, wc);
	rdmaxfer_sq_paid(req->r_conn, &req->r_cqe, 1);
	rdmaxfer_req_wc(req, wc->status);
}

/*
 * The work request of a zero-copy SEND whose SGEs are set
 * (rdmaxfer_lmr_sges()), and the request made ready for its completion.
 * With slot headers (hdr.c) it is a plain SEND, its header the first SGE
 * (set when it is placed: rdmaxfer_send_zc_post()).
 */
void rdmaxfer_send_zc_wr(struct rdmaxfer_req *req, struct ib_send_wr *wr)
{
	bool hdr = rdmaxfer_hdr_len(req->r_conn);

	*wr = (struct ib_send_wr) {
		.wr_cqe = &req->r_cqe.cqe,
		.sg_list = req->r_sge + !hdr,
		.num_sge = req->r_nsge + hdr,
		.opcode = hdr ? IB_WR_SEND : IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = hdr ? 0 : cpu_to_be32(req->r_event.ev.imm_data),
	};
	req->r_cqe.cqe.done = rdmaxfer_send_zc_done;
	atomic_set(&req->r_pending, 1);
}

/*
 * Post a zero-copy SEND into the peer's next slot it fits, taking a credit
 * (the last one stays for CREDIT and WANT messages).  -EAGAIN: no such
 * slot yet (the peer is asked, see rdmaxfer_credit_want()).  @trace: emit
 * its op_post event once posted (under c_lock, so before its completion's).
 */
int rdmaxfer_send_zc_post(struct rdmaxfer_req *req, struct ib_send_wr *wr, bool trace)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	u32 hdr = rdmaxfer_hdr_len(conn), len = req->r_event.ev.bytes + hdr;
	int ret;

	spin_lock_bh(&conn->c_lock);	/* see rdmaxfer_ctrl_send() */
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		ret = -ENOTCONN;
	} else if (!rdmaxfer_credit_claim(conn, 1)) {
		rdmaxfer_credit_want(conn, len, RDMAXFER_KIND_USER);
		ret = -EAGAIN;
	} else {
		ret = rdmaxfer_credit_post(conn, wr, &req->r_cqe, len, RDMAXFER_KIND_USER,
					   req->r_event.ev.imm_data);
		if (ret)
			rdmaxfer_credit_unclaim(conn);
		if (!ret && trace)
			trace_rdmaxfer_op_post(req->r_file, &req->r_event.ev);
	}
	spin_unlock_bh(&conn->c_lock);
	/* waiting: make sure the peer knows (a WANT, see proto.h) */
	if (ret == -EAGAIN && READ_ONCE(conn->c_lg.lg_want_due))
		rdmaxfer_credit_maybe_send(conn);
	return ret;
}

/*
 * The SGEs of a zero-copy SEND or a RECV: its range of its buffer, in the
 * buffer's local registration on the connection (made at first use, which
 * may sleep: rdmaxfer_lmr_get()).
 */
int rdmaxfer_req_lmr_sges(struct rdmaxfer_req *req)
{
	struct rdmaxfer_lmr *lmr;

	lmr = rdmaxfer_lmr_get(req->r_conn, req->r_buf);
	if (IS_ERR(lmr))
		return PTR_ERR(lmr);
	rdmaxfer_lmr_sges(req, lmr, req->r_buf_offset, req->r_event.ev.bytes);
	return 0;
}

/* SEND from the buffer itself into a slot of the peer. */
int rdmaxfer_req_send_zc(struct rdmaxfer_req *req)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	struct ib_send_wr wr;
	int ret, err;

	ret = rdmaxfer_req_lmr_sges(req);
	if (ret)
		return ret;
	ret = rdmaxfer_wr_reserve(conn, 1, 0, false);
	if (ret)
		return ret;
	rdmaxfer_send_zc_wr(req, &wr);
	err = wait_event_interruptible(conn->c_wait,
				       (ret = rdmaxfer_send_zc_post(req, &wr, false)) != -EAGAIN);
	if (err)
		ret = -EINTR;
	if (ret) {
		if (ret != -ENOTCONN && ret != -EINTR)
			rdmaxfer_conn_fail(conn, -EIO);
		rdmaxfer_wr_release(conn, 1, 0);
	}
	return ret;
}

/* RECV: post a slot for the peer's next message. */
int rdmaxfer_req_recv(struct rdmaxfer_req *req)
{
	int ret;

	ret = rdmaxfer_req_lmr_sges(req);
	if (ret)
		return ret;
	atomic_set(&req->r_pending, 1);
	return rdmaxfer_slot_post(req->r_conn, req, true);
}
