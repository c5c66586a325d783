// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the control channel: control buffers, sending a message,
 * receiving the peer's messages (what each one means is msg.c's).
 *
 * Each connection has RDMAXFER_SEND_BUFS send buffers and
 * RDMAXFER_RECV_DEPTH receive buffers of RDMAXFER_CTRL_SIZE bytes, mapped
 * once when the connection is set up (rdmaxfer_ctrl_setup(), from conn.c).
 * The receive buffers are posted before connecting; the hello tells the
 * peer how many, and that is its initial credit.  Sending a message takes a
 * send buffer, a credit and a send WR (rdmaxfer_ctrl_get()); the message
 * carries the entries we announce to the peer.  Which entry of the peer's
 * a message takes, and what we announce, is the credit ledger's (credit.c);
 * user slots on the receive queue are slot.c's.  A control buffer taken by
 * a skip is reposted only while fewer than RDMAXFER_MIN_CTRL_RECVS are
 * posted, so that once the user posts slots the peer's SENDs rarely pass
 * over one.
 *
 * Every received message is validated in rdmaxfer_handle_msg() (msg.c:
 * type, length, credits, every field; overflow-checked); a bad one drops
 * the connection (-EPROTO), nothing else.  The receive CQ polls in softirq
 * context; control messages are handed to a work item (cb_rx_work, "the
 * receive CQ" below), so their handlers may sleep: they allocate, take
 * c_peer_win_lock and queue events on the file.  A message whose content
 * waits for the user (a SEND's data until RECV, a window's event until
 * REAP) keeps its credit until then: a peer that sends faster than the user
 * takes runs out of credits instead of filling kernel memory.
 *
 * Locking: c_lock (bottom halves off) for credits, the free send buffers
 * and the queued messages; see the order at the top of rdmaxfer.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

/* --- sending ----------------------------------------------------------------- */

/*
 * Take a send buffer, a credit (keeping @reserve) and a WR, under c_lock;
 * for @user, not while a registration waits (see rdmaxfer_ctrl_get()).
 */
static struct rdmaxfer_ctrl *rdmaxfer_ctrl_take(struct rdmaxfer_conn *conn, u32 reserve,
						bool user)
{
	struct rdmaxfer_ctrl *ct = NULL;
	bool want = false;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		ct = ERR_PTR(-ENOTCONN);
	} else if (user && conn->c_sq.sq_reg_waits) {
		/* held back until the registration is posted */
	} else if (conn->c_sq.sq_wr_free && !list_empty(&conn->c_cb.cb_free_sends) &&
		   rdmaxfer_credit_claim(conn, reserve)) {
		ct = list_first_entry(&conn->c_cb.cb_free_sends, struct rdmaxfer_ctrl, ct_entry);
		list_del(&ct->ct_entry);
		conn->c_sq.sq_wr_free--;
	} else if (reserve == 1 && conn->c_lg.lg_credits == 1 && conn->c_lg.lg_peer_slots) {
		/* a control message; its real length is asked for if need be */
		rdmaxfer_credit_want(conn, RDMAXFER_MIN_SLOT, RDMAXFER_KIND_CTRL);
		want = conn->c_lg.lg_want_due;
	}
	spin_unlock_bh(&conn->c_lock);
	if (want)
		rdmaxfer_credit_maybe_send(conn);
	return ct;
}

/**
 * rdmaxfer_ctrl_get - get what sending one control message takes
 * @conn: the connection
 * @timeout: jiffies to wait; 0: do not wait; MAX_SCHEDULE_TIMEOUT: forever
 * @reserve: credits to leave: 1 for control messages (the last one is for
 *	CREDIT and WANT messages), RDMAXFER_DATA_RESERVE for SEND data
 * @user: for an operation of SUBMIT (a SEND's data, a WRITE_IMM's
 *	notification): like SUBMIT's other send WRs (rdmaxfer_wr_take()),
 *	not given while a registration waits for an empty send queue
 *	(rdmaxfer_post_reg()), or a stream of them could keep it waiting
 *	for as long as the stream lasts.  The caller must hold no send WR
 *	it has not posted.
 *
 * A send buffer, a credit and a send WR.
 *
 * Context: process context if @timeout, else any.
 * Return: the buffer, or ERR_PTR(-ENOTCONN, -EINTR, -EAGAIN, -ETIMEDOUT).
 */
struct rdmaxfer_ctrl *rdmaxfer_ctrl_get(struct rdmaxfer_conn *conn, long timeout,
					u32 reserve, bool user)
{
	struct rdmaxfer_ctrl *ct = NULL;
	long left;

	if (!timeout) {
		ct = rdmaxfer_ctrl_take(conn, reserve, user);
		return ct ?: ERR_PTR(-EAGAIN);
	}
	left = wait_event_interruptible_timeout(conn->c_wait,
						(ct = rdmaxfer_ctrl_take(conn, reserve, user)),
						timeout);
	if (left < 0)
		return ERR_PTR(-EINTR);
	return ct ?: ERR_PTR(-ETIMEDOUT);
}

/*
 * Give a send buffer and its WR back; @posted: from its completion (it is
 * owed, see sq.c).  Any context that may take a spinlock.
 */
static void rdmaxfer_ctrl_put(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct, bool posted)
{
	spin_lock_bh(&conn->c_lock);
	if (posted)
		list_del(&ct->ct_cqe.owed);
	list_add(&ct->ct_entry, &conn->c_cb.cb_free_sends);
	conn->c_sq.sq_wr_free++;
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
	rdmaxfer_credit_unclaim(conn);
	spin_unlock_bh(&conn->c_lock);
	rdmaxfer_ctrl_put(conn, ct, false);
}

/*
 * Post a control message: it takes the peer's next entry it fits (see
 * rdmaxfer_credit_post()).  Returns -EAGAIN if none does yet, with everything
 * still held.  A CREDIT message gets its runs here (@length is then 0).
 */
int __rdmaxfer_ctrl_post(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
			 enum rdmaxfer_msg_type type, u32 length)
{
	struct rdmaxfer_msg_hdr *hdr = ct->ct_buf;
	struct ib_device *ib = conn->c_dev->rd_ib;
	struct ib_sge sge = {
		.addr = ct->ct_dma,
		.lkey = conn->c_pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &ct->ct_cqe.cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	u32 ann, rx_ann, user_slots;
	bool last;
	int ret;

	/*
	 * With bottom halves off (as c_lock always is): a software device
	 * (rxe) schedules its send processing as a tasklet, which then runs
	 * right here at spin_unlock_bh() instead of in ksoftirqd after a
	 * context switch.
	 */
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		spin_unlock_bh(&conn->c_lock);
		return -ENOTCONN;
	}
	/* a WANT another one already asked for goes as a CREDIT */
	if (type == RDMAXFER_MSG_WANT &&
	    (!conn->c_lg.lg_want_due || (!conn->c_lg.lg_want[RDMAXFER_KIND_CTRL] &&
					 !conn->c_lg.lg_want[RDMAXFER_KIND_USER])))
		type = RDMAXFER_MSG_CREDIT;
	/*
	 * Our last credit (the one claimed for this message) goes only to a
	 * message that gives the peer an entry: if both sides spent their last
	 * credits on messages that announce nothing (a WANT's header announces
	 * control buffers only), each would wait for the other.  Such a WANT
	 * goes as a CREDIT and stays due for the next credit; with nothing to
	 * announce, nothing goes (the peer announces by itself: proto.h), but
	 * for an iWARP client's first message (cm.c).
	 */
	last = !conn->c_lg.lg_credits;
	if (last && type == RDMAXFER_MSG_WANT &&
	    (conn->c_lg.lg_rx_ann == conn->c_lg.lg_rx_seq ||
	     conn->c_lg.lg_rx_caps[conn->c_lg.lg_rx_ann % RDMAXFER_RQ_MIRROR] & RDMAXFER_RUN_SLOT))
		type = RDMAXFER_MSG_CREDIT;
	hdr->type = cpu_to_be16(type);
	rx_ann = conn->c_lg.lg_rx_ann;
	user_slots = conn->c_sl.sl_user_new;
	ann = rdmaxfer_credit_announce(conn, hdr, type == RDMAXFER_MSG_CREDIT);
	if (type == RDMAXFER_MSG_CREDIT) {
		length = ann;
	} else if (type == RDMAXFER_MSG_WANT) {
		struct rdmaxfer_msg_want *want = (void *)(hdr + 1);

		want->ctrl_length = cpu_to_be32(conn->c_lg.lg_want[RDMAXFER_KIND_CTRL]);
		want->data_length = cpu_to_be32(conn->c_lg.lg_want[RDMAXFER_KIND_USER]);
		length = sizeof(*want);
	}
	hdr->length = cpu_to_be32(length);
	sge.length = sizeof(*hdr) + length;
	if (last && conn->c_lg.lg_rx_ann == rx_ann && !conn->c_first_due) {
		ret = -EAGAIN;
	} else {
		ib_dma_sync_single_for_device(ib, ct->ct_dma, sge.length, DMA_TO_DEVICE);
		ret = rdmaxfer_credit_post(conn, &wr, &ct->ct_cqe, sge.length,
					   RDMAXFER_KIND_CTRL, 0);
	}
	if (!ret) {
		WRITE_ONCE(conn->c_first_due, false);
		trace_rdmaxfer_flow(conn, RDMAXFER_FLOW_TX, type, conn->c_lg.lg_rx_ann - rx_ann);
		if (type == RDMAXFER_MSG_WANT) {
			WRITE_ONCE(conn->c_lg.lg_want_due, false);
			memcpy(conn->c_lg.lg_want_sent, conn->c_lg.lg_want,
			       sizeof(conn->c_lg.lg_want));
			memset(conn->c_lg.lg_want, 0, sizeof(conn->c_lg.lg_want));
		}
		/* everything told: a WANT of the peer has its answer */
		if (conn->c_lg.lg_rx_ann == conn->c_lg.lg_rx_seq)
			WRITE_ONCE(conn->c_lg.lg_peer_wants, false);
	} else {
		/* not announced after all */
		conn->c_lg.lg_rx_ann = rx_ann;
		conn->c_sl.sl_user_new = user_slots;
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/* __rdmaxfer_ctrl_post(), and a WANT to the peer if the message must wait. */
static int rdmaxfer_ctrl_post_want(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
				   enum rdmaxfer_msg_type type, u32 length)
{
	int ret = __rdmaxfer_ctrl_post(conn, ct, type, length);

	if (ret == -EAGAIN && READ_ONCE(conn->c_lg.lg_want_due))
		rdmaxfer_credit_maybe_send(conn);
	return ret;
}

/* Give back what rdmaxfer_ctrl_get() took, for a message not posted. */
void rdmaxfer_ctrl_unclaim(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct)
{
	ct->ct_req = NULL;
	rdmaxfer_ctrl_put_unused(conn, ct);
}

/**
 * rdmaxfer_ctrl_send - send a control message
 * @conn: the connection
 * @ct: a buffer from rdmaxfer_ctrl_get(), payload already written after
 *	the header
 * @type: enum rdmaxfer_msg_type (not CREDIT)
 * @length: payload bytes
 *
 * Announces the receive entries we owe in the header.  Waits while the
 * peer has announced no entry the message fits (only when the peer posts
 * slots and the message is longer than RDMAXFER_MIN_SLOT).  On failure the
 * buffer, WR and credit are given back.
 *
 * Context: process context (ioctl).
 * Return: 0, -ENOTCONN, -EINTR, or the error of ib_post_send().
 */
int rdmaxfer_ctrl_send(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
		       enum rdmaxfer_msg_type type, u32 length)
{
	int ret = -EAGAIN, err;

	might_sleep();
	err = wait_event_interruptible(conn->c_wait,
				       (ret = rdmaxfer_ctrl_post_want(conn, ct, type, length)) !=
				       -EAGAIN);
	if (err)
		ret = -EINTR;
	if (ret)
		rdmaxfer_ctrl_unclaim(conn, ct);
	return ret;
}

/* --- receiving -------------------------------------------------------------- */

/* Post a control buffer on the receive queue; it gets the next number. */
int rdmaxfer_ctrl_post_recv(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct)
{
	struct ib_sge sge = {
		.addr = ct->ct_dma,
		.length = RDMAXFER_CTRL_SIZE,
		.lkey = conn->c_pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &ct->ct_cqe.cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret = -ENOTCONN;

	ib_dma_sync_single_for_device(conn->c_dev->rd_ib, ct->ct_dma, RDMAXFER_CTRL_SIZE,
				      DMA_FROM_DEVICE);
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_DOWN)
		ret = ib_post_recv(conn->c_qp, &wr, NULL);
	if (!ret) {
		u32 idx = conn->c_lg.lg_rx_seq++ % RDMAXFER_RQ_MIRROR;

		conn->c_lg.lg_rx_caps[idx] = RDMAXFER_CTRL_SIZE;
		conn->c_cb.cb_posted++;
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/*
 * A control buffer's completion.  Only a message in it may sleep (it is
 * handled by the receive work); a skip, an error, a flush, or a
 * flow-control message the receive CQ's handler found (@flow, the message)
 * may not.
 */
static void rdmaxfer_recv_handle(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
				 const struct ib_wc *wc, const void *flow)
{
	bool repost = true;
	int ret;

	if (wc->status != IB_WC_SUCCESS) {
		rdmaxfer_conn_wc_failed(conn, wc);
		return;
	}
	if (wc->wc_flags & IB_WC_WITH_IMM) {
		/* a user's message belongs in a slot */
		rdmaxfer_msg_failed(conn, -EPROTO);
		return;
	}
	if (!wc->byte_len) {
		/* a skip: only toward slots; keep a few buffers posted */
		if (!READ_ONCE(conn->c_sl.sl_mode)) {
			rdmaxfer_msg_failed(conn, -EPROTO);
			return;
		}
		spin_lock_bh(&conn->c_lock);
		repost = conn->c_cb.cb_posted < RDMAXFER_MIN_CTRL_RECVS ||
			 conn->c_cb.cb_posted + conn->c_sl.sl_posted < RDMAXFER_MIN_RECVS;
		if (!repost)
			list_add_tail(&ct->ct_entry, &conn->c_cb.cb_spare);
		spin_unlock_bh(&conn->c_lock);
		if (!repost)
			rdmaxfer_credit_maybe_send(conn);	/* a WANT may need it */
		ret = 0;
	} else if (flow) {
		ret = rdmaxfer_handle_msg(conn, flow, wc->byte_len);
	} else {
		might_sleep();
		ib_dma_sync_single_for_cpu(conn->c_dev->rd_ib, ct->ct_dma, RDMAXFER_CTRL_SIZE,
					   DMA_FROM_DEVICE);
		ret = rdmaxfer_handle_msg_charged(conn, ct->ct_buf, wc->byte_len);
	}
	if (ret == RDMAXFER_HOLD_CREDIT) {
		spin_lock_bh(&conn->c_lock);
		list_add_tail(&ct->ct_entry, &conn->c_cb.cb_held);
		spin_unlock_bh(&conn->c_lock);
		return;
	}
	if (ret) {
		rdmaxfer_msg_failed(conn, ret);
		return;
	}
	if (repost && !rdmaxfer_ctrl_post_recv(conn, ct))
		rdmaxfer_credit_maybe_send(conn);
}

/* --- the receive CQ -------------------------------------------------------- */

/*
 * The receive CQ polls in softirq context, so that a user's message in a
 * slot completes (or is echoed) without waking a thread.  A control
 * message needs process context: its completion is copied and queued for
 * cb_rx_work, and so is every later completion until the work has caught
 * up, so that everything the peer sent is handled in the order it came (a
 * WRITE_DONE's event before the SEND that followed it).  A skip, a flush
 * or a flow-control message (CREDIT, WANT: they only move counters under
 * c_lock) is handled on the spot when nothing waits: a ping-pong of user
 * messages returns its slots with CREDIT messages, and waking the work for
 * each of them would hold the next message behind a context switch.
 */

/*
 * Is @wc a receive a peer may complete: a SEND of at most @posted bytes
 * (what the entry took)?  rdmaxfer never sends an RDMA WRITE with
 * immediate (its WRITE_IMM is a WRITE and a WRITE_DONE message), and one
 * would take the entry at the head with a byte_len that counts the bytes
 * written into a window, not into the entry.  A completion in error says
 * nothing of its opcode.
 */
bool rdmaxfer_rx_wc_valid(const struct ib_wc *wc, u32 posted)
{
	return wc->status != IB_WC_SUCCESS ||
	       (wc->opcode == IB_WC_RECV && wc->byte_len <= posted);
}

/* Might @wc bring a flow-control message?  Then its bytes are looked at. */
bool rdmaxfer_rx_small_msg(const struct ib_wc *wc)
{
	return wc->status == IB_WC_SUCCESS && !(wc->wc_flags & IB_WC_WITH_IMM) &&
	       wc->byte_len >= sizeof(struct rdmaxfer_msg_hdr) &&
	       wc->byte_len <= RDMAXFER_MIN_SLOT;
}

/* Is the message (at least a header) a flow-control one? */
bool rdmaxfer_msg_is_flow(const void *msg)
{
	const struct rdmaxfer_msg_hdr *hdr = msg;

	return hdr->type == cpu_to_be16(RDMAXFER_MSG_CREDIT) ||
	       hdr->type == cpu_to_be16(RDMAXFER_MSG_WANT);
}

/* Keep a completion for the receive work.  c_lock held. */
void rdmaxfer_rx_defer(struct rdmaxfer_conn *conn, struct rdmaxfer_rx_wc *rx,
		       const struct ib_wc *wc, bool slot)
{
	lockdep_assert_held(&conn->c_lock);
	rx->rx_slot = slot;
	rx->rx_status = wc->status;
	rx->rx_len = wc->byte_len;
	rx->rx_flags = wc->wc_flags;
	rx->rx_imm = wc->ex.imm_data;
	list_add_tail(&rx->rx_entry, &conn->c_cb.cb_rx_defer);
	if (!conn->c_cb.cb_rx_busy) {
		conn->c_cb.cb_rx_busy = true;
		queue_work(rdmaxfer_rx_wq, &conn->c_cb.cb_rx_work);
	}
}

/* Context: receive CQ completion handler (softirq). */
static void rdmaxfer_recv_done(struct ib_cq *cq, struct ib_wc *cqe)
{
	struct rdmaxfer_ctrl *ct = container_of(cqe->wr_cqe, struct rdmaxfer_ctrl, ct_cqe.cqe);
	struct rdmaxfer_conn *conn = ct->ct_conn;
	struct ib_wc w = *cqe, *wc = &w;
	const void *flow = NULL;
	bool now, first = false;

	if (!rdmaxfer_rx_wc_valid(wc, RDMAXFER_CTRL_SIZE)) {
		rdmaxfer_msg_failed(conn, -EPROTO);
		wc->status = IB_WC_WR_FLUSH_ERR;
	}
	if (rdmaxfer_rx_small_msg(wc)) {
		ib_dma_sync_single_for_cpu(conn->c_dev->rd_ib, ct->ct_dma, wc->byte_len,
					   DMA_FROM_DEVICE);
		if (rdmaxfer_msg_is_flow(ct->ct_buf))
			flow = ct->ct_buf;
	}
	spin_lock_bh(&conn->c_lock);
	conn->c_cb.cb_posted--;
	conn->c_lg.lg_rx_done++;
	if (wc->status == IB_WC_SUCCESS && !conn->c_peer_spoke) {
		WRITE_ONCE(conn->c_peer_spoke, true);	/* read by the eviction (listen.c) */
		/* with a key, its proof hands the connection out (auth.c) */
		if (!conn->c_auth_wait) {
			first = conn->c_await_first;
			conn->c_await_first = false;
		}
		conn->c_ka.ka_waits = 0;
	}
	now = !conn->c_cb.cb_rx_busy && (wc->status != IB_WC_SUCCESS || !wc->byte_len || flow);
	if (!now)
		rdmaxfer_rx_defer(conn, &ct->ct_rx, wc, false);
	spin_unlock_bh(&conn->c_lock);
	if (first)	/* iWARP: the client has sent first (cm.c) */
		queue_work(rdmaxfer_wq, &conn->c_up_work);
	if (now)
		rdmaxfer_recv_handle(conn, ct, wc, flow);
}

/**
 * rdmaxfer_rx_work - handle the receive completions kept for process context
 * @work: rdmaxfer_conn.c_cb.cb_rx_work
 *
 * In the order they came, until none is left.  Teardown flushes this work
 * after draining the QP, so every completion is handled before the
 * connection's buffers and slots go away.
 *
 * Context: process context (rdmaxfer_rx_wq); takes c_lock, and what the
 * control message handlers take (c_peer_win_lock, rf_ev_lock).
 */
void rdmaxfer_rx_work(struct work_struct *work)
{
	struct rdmaxfer_conn *conn = container_of(work, struct rdmaxfer_conn, c_cb.cb_rx_work);
	struct rdmaxfer_rx_wc *rx;

	for (;;) {
		struct ib_wc wc = {};

		spin_lock_bh(&conn->c_lock);
		rx = list_first_entry_or_null(&conn->c_cb.cb_rx_defer, struct rdmaxfer_rx_wc,
					      rx_entry);
		if (rx)
			list_del(&rx->rx_entry);
		else
			conn->c_cb.cb_rx_busy = false;
		spin_unlock_bh(&conn->c_lock);
		if (!rx)
			return;
		wc.status = rx->rx_status;
		wc.byte_len = rx->rx_len;
		wc.wc_flags = rx->rx_flags;
		wc.ex.imm_data = rx->rx_imm;
		if (rx->rx_slot) {
			struct rdmaxfer_req *req = container_of(rx, struct rdmaxfer_req, r_rx);

			rdmaxfer_slot_handle(conn, req, &wc, NULL);
		} else {
			struct rdmaxfer_ctrl *ct = container_of(rx, struct rdmaxfer_ctrl, ct_rx);

			rdmaxfer_recv_handle(conn, ct, &wc, NULL);
		}
		cond_resched();
	}
}

/* --- the send CQ ------------------------------------------------------------ */

static void rdmaxfer_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_ctrl *ct = container_of(wc->wr_cqe, struct rdmaxfer_ctrl, ct_cqe.cqe);
	struct rdmaxfer_conn *conn = ct->ct_conn;
	struct rdmaxfer_req *req = ct->ct_req;

	ct->ct_req = NULL;
	rdmaxfer_conn_wc_failed(conn, wc);
	rdmaxfer_ctrl_put(conn, ct, true);
	if (req)
		rdmaxfer_req_wc(req, wc->status);
	rdmaxfer_credit_maybe_send(conn);
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
	ct->ct_cqe.cqe.done = dir == DMA_TO_DEVICE ? rdmaxfer_send_done : rdmaxfer_recv_done;
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
	ret = rdmaxfer_hdrs_alloc(conn);
	if (ret)
		return ret;
	for (i = 0; i < RDMAXFER_SEND_BUFS; i++) {
		ret = rdmaxfer_ctrl_init(conn, &conn->c_cb.cb_sends[i], DMA_TO_DEVICE);
		if (ret)
			return ret;
		list_add_tail(&conn->c_cb.cb_sends[i].ct_entry, &conn->c_cb.cb_free_sends);
	}
	for (i = 0; i < RDMAXFER_RECV_DEPTH; i++) {
		ret = rdmaxfer_ctrl_init(conn, &conn->c_cb.cb_recvs[i], DMA_FROM_DEVICE);
		if (ret)
			return ret;
		ret = rdmaxfer_cm_fault() ? -ENOMEM :
		      rdmaxfer_ctrl_post_recv(conn, &conn->c_cb.cb_recvs[i]);
		if (ret)
			return ret;
	}
	conn->c_lg.lg_rx_ann = conn->c_lg.lg_rx_seq;	/* the hello announces them */
	return 0;
}

/**
 * rdmaxfer_ctrl_free_all - unmap and free the control buffers
 * @conn: the connection; its QP is drained or was never connected
 *
 * Idempotent; frees what rdmaxfer_ctrl_setup() made (also the header
 * entries, hdr.c), also partly.
 */
void rdmaxfer_ctrl_free_all(struct rdmaxfer_conn *conn)
{
	u32 i;

	if (conn->c_dev) {
		for (i = 0; i < RDMAXFER_RECV_DEPTH; i++)
			rdmaxfer_ctrl_free(conn, &conn->c_cb.cb_recvs[i], DMA_FROM_DEVICE);
		for (i = 0; i < RDMAXFER_SEND_BUFS; i++)
			rdmaxfer_ctrl_free(conn, &conn->c_cb.cb_sends[i], DMA_TO_DEVICE);
		rdmaxfer_hdrs_free(conn);
	}
	INIT_LIST_HEAD(&conn->c_cb.cb_free_sends);
}
