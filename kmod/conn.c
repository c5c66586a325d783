// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - a connection's queue pair: its life from setup to destroy,
 * failing, and the per-file count of connections (dead peers are
 * keepalive.c's, the send queue's room sq.c's).
 *
 * The layers of a connection (Documentation/architecture.md draws them):
 * cm.c speaks rdma_cm and serves the connection ioctls; it calls this file
 * to set a connection up (rdmaxfer_conn_setup()) and take it down
 * (rdmaxfer_conn_teardown()).  ctrl.c is the control channel on the QP
 * made here; xfer.c, rw.c, atomic.c and slot.c post operations on it, and
 * reg.c registrations (for window.c and lmr.c), within the room sq.c keeps.
 *
 * Queue pair.  Both CQs come from the device's CQ pool and poll in softirq
 * context (IB_POLL_SOFTIRQ).  The send CQ's handlers free contexts, return
 * room, queue completions, may post a CREDIT message or queue the teardown
 * work, and never sleep.  The receive CQ's handlers complete the user's
 * messages in slots (and send echoes back) themselves, and hand the peer's
 * control messages, which allocate and take mutexes, to a work item
 * (cb_rx_work, ctrl.c); so c_lock and the file's rf_ev_lock are always
 * taken with bottom halves off.  On Soft-RoCE, whose send, receive
 * and completion processing runs in tasklets, a post made with bottom
 * halves off then completes at spin_unlock_bh(), in the poster's context,
 * with no context switch.  The send queue holds RDMAXFER_SQ_WRS of our
 * own work requests plus what rdma_rw adds for RDMAXFER_RW_CTXS contexts,
 * plus spares for the drain and the probe; the send CQ is sized for all
 * of them, because a flushed QP completes every WR.  sq.c keeps the room
 * on it and the completions it owes.
 *
 * Posting and teardown.  Every ib_post_send()/ib_post_recv() happens under
 * c_lock after checking that the connection is up; teardown marks it down
 * under the same lock before draining, so nothing is posted after the drain
 * starts (ib_drain_qp() requires that).  Ioctls that post (SUBMIT, EXPOSE,
 * REVOKE, RECV's credit) do it between rdmaxfer_conn_enter() and
 * rdmaxfer_conn_exit(), a read lock that teardown takes for write once
 * after marking the connection down, so no ioctl still holds a control
 * buffer or WR room when teardown frees them.  Completion handlers and the
 * receive work post without it: the drain waits for the handlers, then
 * teardown flushes the work.
 *
 * Teardown is stop, then destroy, as nvme-rdma does.  rdmaxfer_conn_stop()
 * marks the connection down, disconnects, waits for the ioctls that are
 * posting and drains: every operation in flight completes (flushed; what
 * the provider never returned, teardown completes: sq.c).
 * rdmaxfer_conn_destroy() then releases the windows (deregistering their
 * MRs: the keys die), forgets the peer's windows, destroys the cm_id, the
 * QP, the CQs and the control buffers and detaches from the device.  Both
 * run in process context, never from the connection's own CM handler
 * (rdma_destroy_id() waits for it): events that bring a connection down
 * call rdmaxfer_conn_fail(), which queues c_down_work.  A QP that goes to
 * error by itself (our adapter refused a request of the peer's) shows as a
 * work request flushed while the connection is still up
 * (rdmaxfer_conn_flushed()).
 *
 * Dead peers: keepalive.c (the probe, the QP's ACK timeout).
 *
 * Fault injection.  Connection setup runs in rdma_cm's handlers (the
 * listener's CONNECT_REQUEST, the client's ROUTE_RESOLVED), in kernel
 * worker threads that a test's /proc/thread-self/fail-nth cannot reach.
 * With CONFIG_FAULT_INJECTION, the steps of those paths are also fault
 * sites of the attribute fail_rdmaxfer_cm (the listener's connection
 * allocation, id reservation and accept, in cm.c; on both sides port
 * query, PD, the probe bytes (iWARP: keepalive.c), CQs, QP, here, each
 * control buffer and receive, in ctrl.c; the client's connect; debugfs:
 * /sys/kernel/debug/fail_rdmaxfer_cm/, the
 * kernel's fault_attr; a site returns the error of the call it stands for
 * instead of making it), so a test can fail each of them in turn: space=N,
 * times=1, probability=100 fails the N-th site reached, on either side
 * (the sites before it each take 1 from space).
 *
 * Locking: see the order at the top of rdmaxfer.h.  No lock is held
 * across rdma_destroy_id() that its handler takes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

/* --- posting from ioctls ---------------------------------------------------- */

/**
 * rdmaxfer_conn_enter - start posting on a connection from an ioctl
 * @conn: the connection
 *
 * Holds off teardown (which then waits in down_write()) until
 * rdmaxfer_conn_exit(), so that the control buffers and WR room taken in
 * between stay valid.  Teardown marks the connection down first and wakes
 * every waiter, so a poster never blocks it for long.
 *
 * Context: process context.
 * Return: 0, or -ENOTCONN (nothing held).
 */
int rdmaxfer_conn_enter(struct rdmaxfer_conn *conn)
{
	might_sleep();
	down_read(&conn->c_post_sem);
	if (READ_ONCE(conn->c_state) == RDMAXFER_CS_ESTABLISHED)
		return 0;
	up_read(&conn->c_post_sem);
	return -ENOTCONN;
}

/**
 * rdmaxfer_conn_exit - end what rdmaxfer_conn_enter() started
 * @conn: the connection
 */
void rdmaxfer_conn_exit(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held_read(&conn->c_post_sem);
	up_read(&conn->c_post_sem);
}

/* --- setup and teardown ----------------------------------------------------- */

/*
 * A QP event.  A fatal one fails the connection.  An access or invalid
 * request error is the peer's request that our adapter refused: it NAKs the
 * request, moves the QP to error and flushes our receives, and the flush
 * fails the connection (rdmaxfer_conn_flushed()).  Failing it from here would
 * race that NAK: Soft-RoCE of Linux 7.2 (not 6.12) raises the event before
 * it sends the NAK, and a QP that our teardown already moved to error sends
 * none, so the peer's request would wait out its retries instead of failing
 * with a remote access error.  Context: any (softirq on Soft-RoCE).
 */
static void rdmaxfer_qp_event(struct ib_event *ev, void *ctx)
{
	struct rdmaxfer_conn *conn = ctx;

	pr_debug("conn %u: QP event %s\n", conn->c_obj.id, ib_event_msg(ev->event));
	if (ev->event == IB_EVENT_QP_FATAL)
		rdmaxfer_conn_fail(conn, -EIO);
}

/* Queue the teardown; its reason is in c_error, or (c_broke) comes with the drain. */
static void rdmaxfer_conn_queue_down(struct rdmaxfer_conn *conn)
{
	kref_get(&conn->c_obj.ref);
	if (!queue_work(rdmaxfer_wq, &conn->c_down_work))
		rdmaxfer_obj_put_atomic(&conn->c_obj);	/* may be in softirq */
}

/**
 * rdmaxfer_conn_flushed - a work request of @conn was flushed
 * @conn: the connection
 *
 * Teardown marks the connection down before it moves the QP to error, so a
 * work request flushed while the connection is still established means
 * the QP went to error by itself (a request of the peer's that the adapter
 * refused, or an error of ours whose completion may not be handled yet):
 * tear it down, without claiming the reason, which that completion may
 * still give (teardown looks after the drain; -EIO if none did).  Flushed
 * while still connecting (the peer broke the QP before our ESTABLISHED
 * event, or rdma_cm moved it to error for a reject), it only notes it: a
 * connection that then comes up fails at once (rdmaxfer_conn_came_up()).
 *
 * Not on iWARP, where the QP lives on the TCP connection it shares with
 * the peer: the peer's orderly close flushes it too, and siw flushes before
 * the CM reports the close (its peer-close work moves the QP to error as
 * it hands iw_cm the CLOSE).  There the CM's report, which every end of an
 * iWARP connection brings (siw drops the connection on any QP error), says
 * how it ended, and an error completion or QP_FATAL that came first wins.
 *
 * Context: completion handler (softirq) or the receive work.
 */
void rdmaxfer_conn_flushed(struct rdmaxfer_conn *conn)
{
	bool broke;

	spin_lock_bh(&conn->c_lock);
	broke = conn->c_state == RDMAXFER_CS_ESTABLISHED && !conn->c_broke && !conn->c_iwarp;
	if (broke)
		WRITE_ONCE(conn->c_broke, true);
	else if (conn->c_state == RDMAXFER_CS_CONNECTING)
		conn->c_flushed = true;
	spin_unlock_bh(&conn->c_lock);
	if (broke) {
		pr_debug("conn %u: the QP went to error by itself\n", conn->c_obj.id);
		rdmaxfer_conn_queue_down(conn);
	}
}

/**
 * rdmaxfer_conn_wc_failed - what a work completion's status means to its connection
 * @conn: the connection
 * @wc: the completion, of a send or a receive
 *
 * Success: nothing.  Flushed: see rdmaxfer_conn_flushed().  Any other error
 * put the QP in error: fail the connection with what it means to the user.
 *
 * Context: completion handler.
 */
void rdmaxfer_conn_wc_failed(struct rdmaxfer_conn *conn, const struct ib_wc *wc)
{
	if (wc->status == IB_WC_SUCCESS)
		return;
	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		rdmaxfer_conn_flushed(conn);
		return;
	}
	/* (an error completion's opcode is undefined: only its status says anything) */
	pr_debug("conn %u: work request failed: %s\n", conn->c_obj.id,
		 ib_wc_status_msg(wc->status));
	rdmaxfer_conn_fail(conn, rdmaxfer_wc_errno(conn, wc->status));
}

/**
 * rdmaxfer_conn_came_up - the connection is established: start its keepalive
 * @conn: the connection, just marked RDMAXFER_CS_ESTABLISHED
 *
 * A connection whose QP was flushed while it connected is broken already:
 * it goes down again at once.
 *
 * Context: c_lock held.
 */
void rdmaxfer_conn_came_up(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held(&conn->c_lock);
	if (!conn->c_flushed) {
		rdmaxfer_ka_start(conn);
	} else if (!conn->c_broke) {
		WRITE_ONCE(conn->c_broke, true);
		rdmaxfer_conn_queue_down(conn);
	}
}

static void rdmaxfer_conn_down_work(struct work_struct *work)
{
	struct rdmaxfer_conn *conn = container_of(work, struct rdmaxfer_conn, c_down_work);

	rdmaxfer_conn_teardown(conn, READ_ONCE(conn->c_broke) ? 0 : -ECONNRESET);
	rdmaxfer_obj_put(&conn->c_obj);
}

/**
 * rdmaxfer_conn_fail - bring a connection down from any context
 * @conn: the connection
 * @error: why (negative errno); the first reason wins
 *
 * Records the reason and queues the teardown.  Takes no lock: QP events
 * arrive in softirq context on some providers (rxe).
 *
 * Context: any.
 */
void rdmaxfer_conn_fail(struct rdmaxfer_conn *conn, int error)
{
	cmpxchg(&conn->c_error, 0, error);
	rdmaxfer_conn_queue_down(conn);
}

#ifdef CONFIG_FAULT_INJECTION
static DECLARE_FAULT_ATTR(rdmaxfer_fail_cm);
static struct dentry *rdmaxfer_fail_cm_dir;

/**
 * rdmaxfer_cm_fault - should this fault site of connection setup fail?
 *
 * See "Fault injection".  Without CONFIG_FAULT_INJECTION it is a constant
 * false (rdmaxfer.h).
 */
bool rdmaxfer_cm_fault(void)
{
	return should_fail(&rdmaxfer_fail_cm, 1);
}

/**
 * rdmaxfer_fault_init - publish fail_rdmaxfer_cm in debugfs
 *
 * Without debugfs the attribute stays off (probability 0): nothing fails.
 */
void rdmaxfer_fault_init(void)
{
	struct dentry *d = fault_create_debugfs_attr("fail_rdmaxfer_cm", NULL,
						     &rdmaxfer_fail_cm);

	rdmaxfer_fail_cm_dir = IS_ERR(d) ? NULL : d;
}

/** rdmaxfer_fault_exit - remove what rdmaxfer_fault_init() made */
void rdmaxfer_fault_exit(void)
{
	debugfs_remove_recursive(rdmaxfer_fail_cm_dir);
}
#else
void rdmaxfer_fault_init(void)
{
}

void rdmaxfer_fault_exit(void)
{
}
#endif

static unsigned int max_conns_per_file = 128;
module_param(max_conns_per_file, uint, 0644);
MODULE_PARM_DESC(max_conns_per_file,
		 "Most connections one open file may have, made (CONNECT) or accepted (default 128)");

/**
 * rdmaxfer_conns_get - count one more connection of the file
 * @rf: the file
 *
 * max_conns_per_file bounds what a file's connections cost in the
 * provider's queues (memory no memory cgroup is charged for: rxe vmallocs
 * its queues), and max_conns_per_user what all the files of its opener's
 * user cost (user.c).  A file's connections are those CONNECT made and
 * those ACCEPT handed out; a listener's not handed out yet are bounded by
 * its backlog instead (listen.c), so that peers cannot use up the file's
 * count.
 *
 * Return: true, or false if the file has max_conns_per_file already or its
 * user max_conns_per_user.
 */
bool rdmaxfer_conns_get(struct rdmaxfer_file *rf)
{
	if (atomic_inc_return(&rf->rf_nconns) <= READ_ONCE(max_conns_per_file)) {
		if (rdmaxfer_user_conns_get(rf->rf_user))
			return true;
	}
	atomic_dec(&rf->rf_nconns);
	return false;
}

/* Give back what rdmaxfer_conns_get() counted. */
void rdmaxfer_conns_put(struct rdmaxfer_file *rf)
{
	rdmaxfer_user_conns_put(rf->rf_user);
	atomic_dec(&rf->rf_nconns);
}

/**
 * rdmaxfer_conn_free - free a connection's memory
 * @conn: the connection: never set up, or released
 *
 * The error paths of its creation, before the first reference was handed
 * out, call it after rdmaxfer_obj_fini(): only CONNECT's set @conn's
 * c_counted, and the file stays alive across (the ioctl's caller holds
 * it); rdmaxfer_conn_release() at the end of its life.
 */
void rdmaxfer_conn_free(struct rdmaxfer_conn *conn)
{
	if (conn->c_counted)
		rdmaxfer_conns_put(conn->c_obj.file);
	rdmaxfer_auth_free(conn);
	kfree(conn->c_lg.lg_tx_caps);
	kfree(conn->c_lg.lg_rx_caps);
	kfree(conn);
}

/**
 * rdmaxfer_conn_alloc - allocate and initialise a connection
 * @rf: the file it belongs to
 *
 * Context: process context.
 * Return: the connection (state CONNECTING, one reference), or
 * ERR_PTR(-ENOMEM).
 */
struct rdmaxfer_conn *rdmaxfer_conn_alloc(struct rdmaxfer_file *rf)
{
	struct rdmaxfer_conn *conn;

	conn = kzalloc_obj(*conn, GFP_KERNEL_ACCOUNT);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	conn->c_lg.lg_tx_caps = kcalloc(RDMAXFER_RQ_MIRROR, sizeof(u32), GFP_KERNEL_ACCOUNT);
	conn->c_lg.lg_rx_caps = kcalloc(RDMAXFER_RQ_MIRROR, sizeof(u32), GFP_KERNEL_ACCOUNT);
	if (!conn->c_lg.lg_tx_caps || !conn->c_lg.lg_rx_caps) {
		rdmaxfer_conn_free(conn);
		return ERR_PTR(-ENOMEM);
	}
	rdmaxfer_obj_init(&conn->c_obj, rf, RDMAXFER_OBJ_CONN);
	INIT_LIST_HEAD(&conn->c_entry);
	INIT_LIST_HEAD(&conn->c_dev_entry);
	spin_lock_init(&conn->c_lock);
	WRITE_ONCE(conn->c_state, RDMAXFER_CS_CONNECTING);
	INIT_LIST_HEAD(&conn->c_cb.cb_free_sends);
	INIT_LIST_HEAD(&conn->c_cb.cb_msgs);
	INIT_LIST_HEAD(&conn->c_sq.sq_pieces);
	conn->c_sq.sq_err_cqe.done = rdmaxfer_err_done;
	INIT_LIST_HEAD(&conn->c_windows);
	INIT_LIST_HEAD(&conn->c_cb.cb_held);
	INIT_LIST_HEAD(&conn->c_sl.sl_held);
	INIT_LIST_HEAD(&conn->c_sl.sl_echo_wait);
	INIT_LIST_HEAD(&conn->c_cb.cb_rx_defer);
	INIT_LIST_HEAD(&conn->c_cb.cb_spare);
	INIT_WORK(&conn->c_cb.cb_rx_work, rdmaxfer_rx_work);
	conn->c_lg.lg_skip_cqe.done = rdmaxfer_credit_skip_done;
	INIT_LIST_HEAD(&conn->c_lmrs);
	INIT_LIST_HEAD(&conn->c_sq.sq_owed);
	mutex_init(&conn->c_lmr_lock);
	xa_init(&conn->c_peer_wins);
	mutex_init(&conn->c_peer_win_lock);
	init_waitqueue_head(&conn->c_wait);
	init_completion(&conn->c_route);
	init_completion(&conn->c_established);
	mutex_init(&conn->c_teardown_lock);
	init_rwsem(&conn->c_post_sem);
	INIT_WORK(&conn->c_down_work, rdmaxfer_conn_down_work);
	INIT_WORK(&conn->c_up_work, rdmaxfer_listener_up_work);
	rdmaxfer_ka_setup(conn);
	return conn;
}

/* Free the QP, CQs and control buffers (not the cm_id).  Idempotent. */
static void rdmaxfer_conn_free_resources(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held(&conn->c_teardown_lock);

	if (conn->c_qp) {
		if (conn->c_id)
			rdma_destroy_qp(conn->c_id);
		else
			ib_destroy_qp(conn->c_qp);
		conn->c_qp = NULL;
	}
	rdmaxfer_probe_free(conn);
	rdmaxfer_ctrl_free_all(conn);
	if (conn->c_scq) {
		ib_cq_pool_put(conn->c_scq, conn->c_scq_size);
		conn->c_scq = NULL;
	}
	if (conn->c_rcq) {
		ib_cq_pool_put(conn->c_rcq, RDMAXFER_RQ_SIZE);
		conn->c_rcq = NULL;
	}
	if (conn->c_pd_held) {
		conn->c_pd_held = false;
		rdmaxfer_conn_pd_put(conn);	/* registrations still alive keep it */
	}
}

/**
 * rdmaxfer_conn_pd_get - keep the connection's PD while a registration uses it
 * @conn: the connection; the caller holds a PD user already (it is up)
 */
void rdmaxfer_conn_pd_get(struct rdmaxfer_conn *conn)
{
	refcount_inc(&conn->c_pd_users);
}

/**
 * rdmaxfer_conn_pd_put - drop a PD user; the last one deallocates the PD
 * @conn: the connection
 *
 * Context: process context.  Every MR and the QP on the PD are gone by then.
 */
void rdmaxfer_conn_pd_put(struct rdmaxfer_conn *conn)
{
	might_sleep();
	if (refcount_dec_and_test(&conn->c_pd_users)) {
		ib_dealloc_pd(conn->c_pd);
		conn->c_pd = NULL;
	}
}

/**
 * rdmaxfer_conn_setup - create a connection's QP and what it needs
 * @conn: the connection, from rdmaxfer_conn_alloc()
 * @id: its cm_id, bound to a device (route resolved, or a connect request)
 *
 * Attaches to the cm_id's device and creates the PD, CQs, QP and control
 * buffers; posts the receives.  On failure the caller tears down (or
 * frees).  Each step is a fault site (see "Fault injection").
 *
 * Context: rdma_cm's handlers only (process context).
 * Return: 0 or a negative errno.
 */
int rdmaxfer_conn_setup(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {};
	struct rdmaxfer_device *rd;
	struct ib_port_attr pattr;
	struct ib_device *ib;
	u32 hdr, probe_ctxs;
	int ret;

	might_sleep();
	rd = rdmaxfer_device_get(id->device->index);
	if (!rd)
		return -ENODEV;
	ret = rdmaxfer_device_attach(rd, conn);
	if (ret) {
		rdmaxfer_device_put(rd);
		return ret;
	}
	ib = rd->rd_ib;
	conn->c_port = id->port_num;
	conn->c_atomics = ib->attrs.atomic_cap != IB_ATOMIC_NONE;
	conn->c_iwarp = rdma_protocol_iwarp(ib, conn->c_port);
	/*
	 * rdma_rw's own rule: READs go through its MRs on iWARP; and short
	 * enough for the peer's keepalive (RDMAXFER_IWARP_READ_PAGES)
	 */
	if (conn->c_iwarp && ib->attrs.max_fast_reg_page_list_len > 1)
		conn->c_read_piece = (min_t(u32, ib->attrs.max_fast_reg_page_list_len,
					    RDMAXFER_IWARP_READ_PAGES) - 1) * PAGE_SIZE;
	hdr = !rdmaxfer_port_has_imm(ib, conn->c_port);
	ret = rdmaxfer_cm_fault() ? -ENOMEM : ib_query_port(ib, conn->c_port, &pattr);
	if (ret)
		return ret;
	conn->c_pd = rdmaxfer_cm_fault() ? ERR_PTR(-ENOMEM) : ib_alloc_pd(ib, 0);
	if (IS_ERR(conn->c_pd)) {
		ret = PTR_ERR(conn->c_pd);
		conn->c_pd = NULL;
		return ret;
	}
	refcount_set(&conn->c_pd_users, 1);
	conn->c_pd_held = true;
	conn->c_max_msg = min_t(u32, pattr.max_msg_sz, SZ_1G);

	ret = rdmaxfer_probe_alloc(conn);
	if (ret)
		return ret;
	/* the READ probe (keepalive.c): one rdma_rw context more, and its WRs */
	probe_ctxs = conn->c_ka.ka_probe ? 1 : 0;
	BUILD_BUG_ON(RDMAXFER_SQ_WRS + RDMAXFER_SQ_SPARE + 3 * (RDMAXFER_RW_CTXS + 1) >
		     RDMAXFER_SQ_BOUND);
	conn->c_scq_size = RDMAXFER_SQ_WRS + RDMAXFER_SQ_SPARE +
			   3 * (RDMAXFER_RW_CTXS + probe_ctxs);
	/* see "Queue pair" above for the two poll contexts */
	conn->c_scq = rdmaxfer_cm_fault() ? ERR_PTR(-ENOMEM) :
		      ib_cq_pool_get(ib, conn->c_scq_size, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->c_scq)) {
		ret = PTR_ERR(conn->c_scq);
		conn->c_scq = NULL;
		return ret;
	}
	conn->c_rcq = rdmaxfer_cm_fault() ? ERR_PTR(-ENOMEM) :
		      ib_cq_pool_get(ib, RDMAXFER_RQ_SIZE, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->c_rcq)) {
		ret = PTR_ERR(conn->c_rcq);
		conn->c_rcq = NULL;
		return ret;
	}

	attr.event_handler = rdmaxfer_qp_event;
	attr.qp_context = conn;
	attr.send_cq = conn->c_scq;
	attr.recv_cq = conn->c_rcq;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	attr.port_num = conn->c_port;
	attr.cap.max_send_wr = min_t(u32, RDMAXFER_SQ_WRS + RDMAXFER_SQ_SPARE, ib->attrs.max_qp_wr);
	attr.cap.max_recv_wr = RDMAXFER_RQ_SIZE;
	attr.cap.max_send_sge = min(ib->attrs.max_send_sge, RDMAXFER_SEND_SGES);
	attr.cap.max_recv_sge = min_t(u32, ib->attrs.max_recv_sge, RDMAXFER_MAX_MSG_SGES + hdr);
	attr.cap.max_rdma_ctxs = RDMAXFER_RW_CTXS + probe_ctxs;
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdma_create_qp(id, conn->c_pd, &attr);
	if (ret)
		return ret;
	conn->c_qp = id->qp;
	conn->c_qpn = id->qp->qp_num;
	/* asked, rdma_rw's WRs included (debugfs); a provider may round up */
	conn->c_sq_depth = attr.cap.max_send_wr;
	conn->c_rq_depth = attr.cap.max_recv_wr;
	/*
	 * rdma_rw added its WRs to max_send_wr; keep the drain's and the
	 * probe's (a READ probe's registration and invalidation too)
	 */
	conn->c_sq.sq_wr_free = min(attr.cap.max_send_wr, conn->c_scq_size) - RDMAXFER_SQ_SPARE -
			  2 * probe_ctxs;
	conn->c_sq.sq_wr_max = conn->c_sq.sq_wr_free;
	conn->c_sq.sq_rw_free = RDMAXFER_RW_CTXS;
	/*
	 * The buffer's SGEs of a SEND or slot; a slot header (hdr.c) takes
	 * one.  On siw one MR, and so one SGE (rdmaxfer_lmr_one_mr()).
	 */
	conn->c_max_sge = min3(attr.cap.max_send_sge, attr.cap.max_recv_sge,
			       RDMAXFER_MAX_MSG_SGES + hdr) - hdr;
	if (rdmaxfer_lmr_one_mr(ib))
		conn->c_max_sge = min(conn->c_max_sge, 1U);

	return rdmaxfer_ctrl_setup(conn);
}

/*
 * Take a not-yet-accepted connection off its listener.  Returns true if it
 * was waiting there (it then has no user and must leave the id table).
 */
static bool rdmaxfer_conn_unqueue(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_listener *l;

	spin_lock_bh(&conn->c_lock);
	l = conn->c_listener;
	conn->c_listener = NULL;
	spin_unlock_bh(&conn->c_lock);
	if (!l)
		return false;
	spin_lock(&l->l_lock);
	list_del_init(&conn->c_entry);
	if (conn->c_lq == RDMAXFER_LQ_PENDING)
		l->l_npending--;
	else if (conn->c_lq == RDMAXFER_LQ_QUEUED)
		l->l_queued--;
	else if (conn->c_lq == RDMAXFER_LQ_EVICTED)
		l->l_nevicting--;
	conn->c_lq = RDMAXFER_LQ_NONE;
	spin_unlock(&l->l_lock);
	rdmaxfer_obj_put(&l->l_obj);
	return true;
}

/*
 * Stop: mark the connection down, disconnect, wait for the ioctls that are
 * posting, drain.  Returns whether it was up.  Every operation in flight has
 * completed when it returns.
 */
static bool rdmaxfer_conn_stop(struct rdmaxfer_conn *conn, int error)
{
	bool was_up;

	lockdep_assert_held(&conn->c_teardown_lock);
	spin_lock_bh(&conn->c_lock);
	was_up = conn->c_state == RDMAXFER_CS_ESTABLISHED;
	WRITE_ONCE(conn->c_state, RDMAXFER_CS_DOWN);
	spin_unlock_bh(&conn->c_lock);
	trace_rdmaxfer_conn_down(conn, was_up, error);
	wake_up_all(&conn->c_wait);
	complete_all(&conn->c_route);
	complete_all(&conn->c_established);
	cancel_delayed_work_sync(&conn->c_ka.ka_work);	/* down: it no longer re-arms */

	/*
	 * Disconnect first: the QP goes to error, so a poster waiting for a
	 * completion (EXPOSE's registration) gets it flushed; then wait for
	 * ioctls that are posting (new ones see the state), then drain.
	 */
	if (conn->c_qp && conn->c_id)
		rdma_disconnect(conn->c_id);
	down_write(&conn->c_post_sem);
	up_write(&conn->c_post_sem);
	if (conn->c_qp)
		ib_drain_qp(conn->c_qp);
	/* the completions handed to the receive work are handled too */
	flush_work(&conn->c_cb.cb_rx_work);
	cancel_work_sync(&conn->c_up_work);	/* queued by a receive */
	rdmaxfer_sq_sweep(conn);
	rdmaxfer_sq_flush_owed(conn);
	rdmaxfer_probe_flush(conn);
	rdmaxfer_held_slots_flush(conn);
	return was_up;
}

/*
 * Destroy what a stopped connection holds: windows (their keys die), the
 * peer's windows, the cm_id, QP, CQs, buffers, the device.  Returns true if
 * the connection was still waiting for ACCEPT (see rdmaxfer_conn_unqueue()).
 */
static bool rdmaxfer_conn_destroy(struct rdmaxfer_conn *conn)
{
	struct rdma_cm_id *id;

	lockdep_assert_held(&conn->c_teardown_lock);
	rdmaxfer_window_release_all(conn);
	rdmaxfer_lmr_release_all(conn);
	rdmaxfer_peer_win_free_all(conn);
	/*
	 * The id goes before the QP (as nvmet-rdma does): rdma_destroy_id()
	 * waits for a handler that may still be creating the QP of a
	 * connect that timed out, which is then freed below.
	 */
	id = xchg(&conn->c_id, NULL);
	if (id) {
		rdma_destroy_id(id);
		rdmaxfer_obj_put(&conn->c_obj);		/* the id's context */
	}
	rdmaxfer_conn_free_resources(conn);
	rdmaxfer_device_detach(conn);
	return rdmaxfer_conn_unqueue(conn);
}

/**
 * rdmaxfer_conn_teardown - take a connection down and free its resources
 * @conn: the connection; the caller holds a reference
 * @error: why: -ECANCELED for a local close, -ESHUTDOWN for the peer's
 *	orderly close (reported with status 0), else what the user is told;
 *	0: the QP broke by itself, whatever a completion of the drain says
 *	(or -EIO).  A reason given earlier (rdmaxfer_conn_fail()) wins.
 *
 * Stops the connection, destroys its resources and reports the
 * disconnection.  Idempotent.  After it returns, every operation on the
 * connection has completed, its windows are deregistered, and it holds
 * nothing of the device.  The object itself stays until its last reference
 * is put.
 *
 * Context: process context, not from this connection's CM handler; no
 * rf_lock held.
 */
void rdmaxfer_conn_teardown(struct rdmaxfer_conn *conn, int error)
{
	struct rdmaxfer_file *rf = conn->c_obj.file;
	bool was_up, unaccepted;

	might_sleep();
	lockdep_assert_not_held(&rf->rf_lock);
	mutex_lock(&conn->c_teardown_lock);
	if (conn->c_torn_down) {
		mutex_unlock(&conn->c_teardown_lock);
		return;
	}
	conn->c_torn_down = true;
	if (error)
		cmpxchg(&conn->c_error, 0, error);
	was_up = rdmaxfer_conn_stop(conn, READ_ONCE(conn->c_error));
	/* a QP that broke by itself: the drain has brought what its completions said */
	cmpxchg(&conn->c_error, 0, -EIO);
	error = READ_ONCE(conn->c_error);
	rdmaxfer_auth_end(conn, error);		/* a client that never proved its key */
	unaccepted = rdmaxfer_conn_destroy(conn);

	if (error != -ECANCELED) {
		if (error != -ESHUTDOWN)
			rdmaxfer_count(rf, RDMAXFER_C_CONN_ERRORS, 1);
		if (was_up && !unaccepted)
			rdmaxfer_queue_event_always(rf, conn->c_obj.id,
						    RDMAXFER_EVENT_DISCONNECTED,
						    error == -ESHUTDOWN ? 0 : error, 0);
	}
	mutex_unlock(&conn->c_teardown_lock);

	/* never handed out: its id (published or only reserved) goes */
	if (unaccepted && rdmaxfer_obj_remove(&conn->c_obj))
		rdmaxfer_obj_put(&conn->c_obj);
}

/**
 * rdmaxfer_conn_release - free a connection whose last reference is gone
 * @conn: the connection (torn down, or never set up)
 */
void rdmaxfer_conn_release(struct rdmaxfer_conn *conn)
{
	WARN_ON_ONCE(conn->c_qp || conn->c_id || conn->c_dev);
	rdmaxfer_msgs_free(conn);	/* kept after teardown: RECV may still take them */
	xa_destroy(&conn->c_peer_wins);
	rdmaxfer_conn_free(conn);
}
