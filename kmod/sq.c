// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - a connection's send queue: the room on it, and the completions
 * its provider owes.
 *
 * Room.  The send queue holds RDMAXFER_SQ_WRS of our own work requests plus
 * what rdma_rw adds for RDMAXFER_RW_CTXS contexts, plus RDMAXFER_SQ_SPARE
 * (the drain, the keepalive probe; conn.c sizes it).  sq_wr_free and
 * sq_rw_free count what may still be posted; a poster takes room first
 * (rdmaxfer_wr_take(), rdmaxfer_wr_reserve(), or with a control buffer,
 * ctrl.c), and the completion of the last, signaled WR of what it posted
 * gives it back (rdmaxfer_wr_release()), with the room of the unsignaled
 * WRs before it, so unsignaled WRs can never exhaust the count.
 * Registrations are posted on an empty send queue (rdmaxfer_post_reg()
 * says why).
 *
 * Owed completions.  A signaled send WR whose completion gives something
 * back besides room (a request's pinned buffer and its event, a control
 * buffer) is listed on sq_owed from its posting to its completion
 * (rdmaxfer_sq_owe(), rdmaxfer_sq_paid()); the pieces of WRITE, READ and
 * WRITE_IMM have their own list (sq_pieces, rw.c).  The verbs promise
 * that a QP in error flushes every WR still on its queues, in order, so
 * when the completion of ib_drain_qp()'s own WR has come, every WR posted
 * before it has had its completion.  Soft-iWARP does not keep that promise
 * (every kernel up to 7.2 at least): a QP whose transmit failed moves to
 * TERMINATE with no WR active, and from there to ERROR without flushing
 * the WRs still queued behind the failed one; its ERROR state then
 * completes the drain's WR at once, and the queued ones never.  Their
 * owners would wait forever, with their buffers pinned.  So teardown,
 * once drained, completes what is still listed as flushed
 * (rdmaxfer_sq_flush_owed()), as the provider should have; by the same
 * ordering rule no provider may complete one of them after the drain's.
 *
 * Locking: c_lock (bottom halves off) covers the counts and the list; a
 * WR is listed in the same c_lock section that posts it, so its completion
 * handler, which unlists it under c_lock, always finds it listed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "rdmaxfer.h"

/* --- room ------------------------------------------------------------------ */

/*
 * Take @nrw rdma_rw contexts and from @lo to @hi send WRs, as many as are
 * free, under the rules of rdmaxfer_wr_take().  c_lock held.
 * Return: the send WRs taken, -EAGAIN (fewer than @lo), -ENOTCONN.
 */
static int __rdmaxfer_wr_take(struct rdmaxfer_conn *conn, u32 lo, u32 hi, u32 nrw,
			      bool holding)
{
	u32 n;

	lockdep_assert_held(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_DOWN)
		return -ENOTCONN;
	if (conn->c_sq.sq_reg_waits && hi && !holding)
		return -EAGAIN;
	n = min(hi, conn->c_sq.sq_wr_free);
	if (n < lo || conn->c_sq.sq_rw_free < nrw)
		return -EAGAIN;
	conn->c_sq.sq_wr_free -= n;
	conn->c_sq.sq_rw_free -= nrw;
	return n;
}

/**
 * rdmaxfer_wr_take - take send-queue room if there is enough
 * @conn: the connection
 * @nwr: send WRs needed
 * @nrw: rdma_rw contexts needed
 * @holding: the caller holds send WRs it has not posted yet, and posts them
 *	once it has this room
 *
 * While a registration waits for an empty send queue (rdmaxfer_post_reg()),
 * no new send WRs are given out, except to a @holding caller: the send
 * queue cannot empty before it posts what it holds.
 *
 * Context: any context that may take a spinlock; does not sleep.
 * Return: 0 with the room taken, -EAGAIN (not enough), -ENOTCONN.
 */
int rdmaxfer_wr_take(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw, bool holding)
{
	int ret;

	spin_lock_bh(&conn->c_lock);
	ret = __rdmaxfer_wr_take(conn, nwr, nwr, nrw, holding);
	spin_unlock_bh(&conn->c_lock);
	return ret < 0 ? ret : 0;
}

/**
 * rdmaxfer_wr_take_upto - take up to @nwr send WRs, as many as are free
 * @conn: the connection
 * @nwr: send WRs wanted
 *
 * For a caller that holds nothing yet (rdmaxfer_wr_take() with @holding
 * false): none while a registration waits.
 *
 * Context: any context that may take a spinlock; does not sleep.
 * Return: the number taken, 0 to @nwr.
 */
u32 rdmaxfer_wr_take_upto(struct rdmaxfer_conn *conn, u32 nwr)
{
	int ret;

	spin_lock_bh(&conn->c_lock);
	ret = __rdmaxfer_wr_take(conn, 0, nwr, 0, false);
	spin_unlock_bh(&conn->c_lock);
	return max(ret, 0);
}

/**
 * rdmaxfer_wr_reserve - wait for room on the send queue
 * @conn: the connection
 * @nwr: send WRs needed
 * @nrw: rdma_rw contexts needed
 * @holding: as for rdmaxfer_wr_take()
 *
 * Context: process context, sleeps interruptibly.
 * Return: 0 with the room taken, -ENOTCONN, -EINTR.
 */
int rdmaxfer_wr_reserve(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw, bool holding)
{
	int ret = -EAGAIN, err;

	might_sleep();
	err = wait_event_interruptible(conn->c_wait,
				       (ret = rdmaxfer_wr_take(conn, nwr, nrw, holding)) !=
				       -EAGAIN);
	return err ? -EINTR : ret;
}

/* An empty send queue, for rdmaxfer_post_reg(); c_lock held. */
static bool rdmaxfer_sq_empty(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held(&conn->c_lock);
	return conn->c_sq.sq_wr_free == conn->c_sq.sq_wr_max && !conn->c_ka.ka_posted;
}

/**
 * rdmaxfer_sq_idle - may a registration be posted now, without waiting?
 * @conn: the connection
 *
 * The send queue is empty and no registration waits for it (see
 * rdmaxfer_post_reg()).
 *
 * Context: c_lock held.
 */
bool rdmaxfer_sq_idle(struct rdmaxfer_conn *conn)
{
	return rdmaxfer_sq_empty(conn) && !conn->c_sq.sq_reg_waits;
}

/* rdmaxfer_post_reg()'s wait: the send queue is empty or the connection down. */
static bool rdmaxfer_reg_may_post(struct rdmaxfer_conn *conn)
{
	bool ret;

	spin_lock_bh(&conn->c_lock);
	ret = conn->c_state != RDMAXFER_CS_ESTABLISHED || rdmaxfer_sq_empty(conn);
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/**
 * rdmaxfer_post_reg - post registration work requests on an empty send queue
 * @conn: the connection
 * @wr: the chain of REG_MR work requests, its last one signaled
 * @nwr: their number (at most RDMAXFER_REG_BATCH)
 *
 * Waits until every work request posted before has completed, then posts
 * @wr and takes its room (given back by rdmaxfer_wr_release() when the
 * last one completes).  While it waits, SUBMIT gets no new send WRs
 * (rdmaxfer_wr_take(), but to a caller that holds some it has not posted
 * yet) and no control buffers for SEND data or WRITE_IMM notifications
 * (rdmaxfer_ctrl_get()), so that a busy connection empties, however long
 * the stream; control messages, echoes and probes still go (the peer's
 * progress may depend on them), and few.  A SEND waiting for a slot of
 * the peer holds its WR: a registration behind it waits for the peer too.
 *
 * Why: Soft-RoCE (every kernel up to 7.2 at least) executes a REG_MR as soon
 * as its requester reaches it, but retires work requests in order.  When an
 * operation posted before it is retried (an ACK timeout, a NAK, an RNR
 * NAK), the requester goes back to the oldest work request not retired and
 * executes all from there again: the REG_MR then finds its MR valid and
 * fails with IB_WC_LOC_QP_OP_ERR, which kills a healthy QP.  On an empty
 * send queue nothing before it can be retried, and its completion handler
 * retires it before anything posted after it.  On an adapter it costs the
 * wait for the operations in flight, which the registration's own
 * completion had to wait for anyway.
 *
 * Context: process context, sleeps interruptibly; the caller is between
 * rdmaxfer_conn_enter() and rdmaxfer_conn_exit().
 * Return: 0, -ENOTCONN, -EINTR, or the error of ib_post_send().
 */
int rdmaxfer_post_reg(struct rdmaxfer_conn *conn, struct ib_send_wr *wr, u32 nwr)
{
	int ret;

	might_sleep();
	lockdep_assert_held_read(&conn->c_post_sem);
	spin_lock_bh(&conn->c_lock);
	conn->c_sq.sq_reg_waits++;
	for (;;) {
		if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
			ret = -ENOTCONN;
			break;
		}
		if (rdmaxfer_sq_empty(conn)) {
			ret = ib_post_send(conn->c_qp, wr, NULL);
			if (!ret)
				conn->c_sq.sq_wr_free -= nwr;
			break;
		}
		spin_unlock_bh(&conn->c_lock);
		ret = wait_event_interruptible(conn->c_wait, rdmaxfer_reg_may_post(conn));
		spin_lock_bh(&conn->c_lock);
		if (ret) {
			ret = -EINTR;
			break;
		}
	}
	conn->c_sq.sq_reg_waits--;
	spin_unlock_bh(&conn->c_lock);
	wake_up_all(&conn->c_wait);	/* SUBMITs held back */
	return ret;
}

/**
 * rdmaxfer_wr_release - give send-queue room back
 * @conn: the connection
 * @nwr: send WRs
 * @nrw: rdma_rw contexts
 *
 * Context: any context that may take a spinlock.
 */
void rdmaxfer_wr_release(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw)
{
	spin_lock_bh(&conn->c_lock);
	conn->c_sq.sq_wr_free += nwr;
	conn->c_sq.sq_rw_free += nrw;
	spin_unlock_bh(&conn->c_lock);
	wake_up_all(&conn->c_wait);
	rdmaxfer_echo_kick(conn);	/* an echo may wait for room */
}

/* --- owed completions ------------------------------------------------------ */

/**
 * rdmaxfer_sq_owe - list a signaled send WR just posted
 * @conn: the connection
 * @cqe: the WR's completion; its handler calls rdmaxfer_sq_paid()
 *
 * Context: c_lock held, in the section that posted the WR.
 */
void rdmaxfer_sq_owe(struct rdmaxfer_conn *conn, struct rdmaxfer_cqe *cqe)
{
	lockdep_assert_held(&conn->c_lock);
	list_add_tail(&cqe->owed, &conn->c_sq.sq_owed);
}

/**
 * rdmaxfer_sq_paid - unlist a WR whose completion has come, give back its room
 * @conn: the connection
 * @cqe: the WR's completion, listed by rdmaxfer_sq_owe()
 * @nwr: send WRs to give back (as rdmaxfer_wr_release())
 *
 * Context: its completion handler.
 */
void rdmaxfer_sq_paid(struct rdmaxfer_conn *conn, struct rdmaxfer_cqe *cqe, u32 nwr)
{
	spin_lock_bh(&conn->c_lock);
	list_del(&cqe->owed);
	conn->c_sq.sq_wr_free += nwr;
	conn->c_sq.sq_moved++;	/* the keepalive's progress (keepalive.c) */
	spin_unlock_bh(&conn->c_lock);
	if (nwr) {
		wake_up_all(&conn->c_wait);
		rdmaxfer_echo_kick(conn);	/* an echo may wait for room */
	}
}

/**
 * rdmaxfer_sq_flush_owed - complete the WRs the provider never returned
 * @conn: the connection, stopped and drained
 *
 * Calls the handler of every WR still listed with a flushed completion, as
 * the provider would have (see "Owed completions" above), with bottom
 * halves off like the CQ's poller.
 *
 * Context: process context, teardown, after ib_drain_qp().
 */
void rdmaxfer_sq_flush_owed(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_cqe *cqe;
	u32 n = 0;

	lockdep_assert_held(&conn->c_teardown_lock);
	for (;;) {
		struct ib_wc wc = {
			.status = IB_WC_WR_FLUSH_ERR,
			.qp = conn->c_qp,
		};

		spin_lock_bh(&conn->c_lock);
		cqe = list_first_entry_or_null(&conn->c_sq.sq_owed, struct rdmaxfer_cqe, owed);
		spin_unlock_bh(&conn->c_lock);
		if (!cqe)
			break;
		wc.wr_cqe = &cqe->cqe;
		local_bh_disable();
		cqe->cqe.done(conn->c_scq, &wc);	/* unlists it */
		local_bh_enable();
		n++;
	}
	if (n)
		pr_warn_ratelimited("conn %u: %s left %u send work request(s) uncompleted after the drain; completed them as flushed\n",
				    conn->c_obj.id, dev_name(&conn->c_dev->rd_ib->dev), n);
}
