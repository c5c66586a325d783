// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - dead peers: a connection's keepalive probe, and on iWARP the
 * bytes the peer's probe reads.
 *
 * A peer whose host died, or whose link is cut, answers nothing: a busy
 * connection learns it from its own work requests, whose transport
 * retries run out (IB_WC_RETRY_EXC_ERR: -ETIMEDOUT); an idle one would
 * never learn it, so every established connection posts a keepalive probe
 * every peer_timeout_ms / 4 (when none is still on the send queue): a
 * zero-length RDMA WRITE, which the peer's adapter acknowledges without
 * its software, a receive buffer or a credit (a zero-length RDMA operation
 * names no memory: its rkey is not checked, IBTA C9-88), so it works when
 * the control channel is out of credits and costs the peer nothing.  The
 * QP's local ACK timeout is set so that the first try and its
 * RDMAXFER_RETRY_COUNT retries take at most half of it: a peer that stops
 * answering is detected within 3/4 of peer_timeout_ms (a probe interval,
 * then the retries), the rest is slack for scheduling; a link cut shorter
 * than the retries (about peer_timeout_ms / 2) is not noticed.  The send
 * queue keeps a spare WR for the probe, as for the drain (conn.c).
 *
 * The keepalive does not count on those retries alone: a probe still
 * queued at the second tick after it was posted (half of peer_timeout_ms,
 * when the retries have ended), with no completion on either queue during
 * the last two intervals, fails the connection.  A completion means the
 * peer answers: the probe then waits behind data, it is not lost, and the
 * count starts again (chains of pieces signal every RDMAXFER_SIGNAL_BYTES,
 * rw.c, so a long transfer shows its progress).  Its price: one work
 * request that a live peer takes longer than half the bound to complete
 * (a piece as large as a window segment, a zero-copy SEND of several, on
 * a link slower than its size per half bound) fails the connection as if
 * the peer were dead, where the QP's retries, which see the ACKs, would
 * not.  It is the bound where the transport's is missing or broken:
 *  - A listener's QPs retry as often as the client's connect request
 *    says (the CM passes its retry count on; the reply cannot change it).
 *    A client asking for 7, as v0.3.0 and many rdma_cm users do, makes
 *    Soft-RoCE retry forever.
 *  - RNR NAKs are no timeout: a peer whose adapter answers but that posts
 *    no receive buffer (a protocol violation: credits) makes the QP wait
 *    its RNR retries times the RNR timer the peer's responder chose
 *    (655 ms at the longest: 4.6 s for 6 retries, past a bound below it).
 *  - A provider may never complete the probe: Soft-RoCE stops sending
 *    while its packets are held below it (a stalled transmit queue) and
 *    then arms no retransmission timer.
 *  - iWARP has no ACK timeout: its transport is TCP, and an RDMA WRITE
 *    completes at the data source once TCP took it (RFC 5040 promises no
 *    more), so a WRITE probe completes whether the peer lives or not.
 *    What stalls behind a dead peer is the send queue: once TCP's window
 *    and buffer are full, nothing more completes, and the probe waits
 *    behind the data; the rule then fails the connection.
 *
 * The READ probe (iWARP).  An idle iWARP connection has nothing to stall:
 * its WRITE probes go into TCP and complete, and only TCP's retransmission
 * timeout would end it (a hardware RNIC's, or on siw the host's
 * net.ipv4.tcp_retries2, ~15 minutes).  So there the probe is an RDMA
 * READ, which completes only with the peer's answer.  A READ of zero bytes
 * would need no memory of the peer's, but siw answers one that arrives
 * while it transmits with the bytes of its previous work request (its
 * siw_activate_tx() leaves the response's SGE stale), which kills the
 * connection; so the probe reads RDMAXFER_PROBE_LEN bytes.  Each side of
 * an iWARP connection (struct rdmaxfer_probe) keeps that many zero bytes
 * at the start of a page of its own, registered for REMOTE_READ alone at
 * iova 0, and tells the peer their key in a PROBE message (a struct
 * rdmaxfer_msg_seg), once, where both hellos say RDMAXFER_HELLO_PROBE.
 * Registering takes an empty send queue (sq.c says why): the keepalive
 * work registers at the first tick that finds one, and sends the PROBE
 * message at the first that has a credit for it.  From the peer's PROBE
 * on, our probe is a READ of the peer's bytes into the second half of
 * our page, through rdma_rw (an iWARP READ's sink must be an MR the peer
 * may write, which rdma_rw registers and invalidates); its QP has one
 * rdma_rw context, and its WRs, more than SUBMIT may use.  A side that
 * only answers the peer's READs sees no completion at all, and its probe
 * waits behind the responses it sends (siw sends one work request of its
 * own per SIW_IRQ_MAXBURST_SQ_ACTIVE, 4, READ responses; the probe takes
 * two, the sink's registration and the READ): so our READs on iWARP are
 * at most RDMAXFER_IWARP_READ_PAGES (64 pages) each, about 2 MiB ahead of
 * the peer's probe, where 1 MiB READs put 8 MiB ahead of it and two KASAN
 * guests at ~1 MiB/s failed a 64 MiB READ.  Until the peer's PROBE, and
 * with a peer that does not speak it, the probe is the WRITE.  The
 * bytes are zeroes, never changed: a peer learns nothing from them, and
 * its key to them dies with the connection's PD.
 *
 * Locking: c_lock for the probe's state, as for the rest of the send
 * queue; the keepalive work runs in process context, one at a time per
 * connection, and teardown cancels it before it drains.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

/* local ACK timeouts, as IB encodes them: 4.096 us * 2^t (134 ms, 69 s) */
#define RDMAXFER_ACK_TIMEOUT_MIN	15
#define RDMAXFER_ACK_TIMEOUT_MAX	24

/* where our READ's answer lands in the probe's page, away from the bytes read */
#define RDMAXFER_PROBE_SINK	(PAGE_SIZE / 2)

static unsigned int peer_timeout_ms = RDMAXFER_PEER_TIMEOUT_MS;

/* 0, or RDMAXFER_PEER_TIMEOUT_MIN_MS .. RDMAXFER_PEER_TIMEOUT_MAX_MS */
static int rdmaxfer_set_peer_timeout(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret;

	ret = kstrtouint(val, 0, &ms);
	if (ret)
		return ret;
	if (ms && (ms < RDMAXFER_PEER_TIMEOUT_MIN_MS || ms > RDMAXFER_PEER_TIMEOUT_MAX_MS))
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, ms);
	return 0;
}

static const struct kernel_param_ops rdmaxfer_peer_timeout_ops = {
	.set = rdmaxfer_set_peer_timeout,
	.get = param_get_uint,
};
module_param_cb(peer_timeout_ms, &rdmaxfer_peer_timeout_ops, &peer_timeout_ms, 0644);
MODULE_PARM_DESC(peer_timeout_ms,
		 "a connection whose peer stops answering fails within this many ms (2000..3600000, default 10000; 0: no keepalive, rdma_cm's ACK timeout; for new connections)");

/*
 * The local ACK timeout for a bound of @ms: the first try and
 * RDMAXFER_RETRY_COUNT retries fit in @ms / 2 (10 s: 2^17, 537 ms a try).
 */
static u8 rdmaxfer_ack_timeout(unsigned int ms)
{
	u64 try_ns = div_u64((u64)ms * NSEC_PER_MSEC / 2, RDMAXFER_RETRY_COUNT + 1);
	u64 units = max_t(u64, try_ns / 4096, 1);	/* 4.096 us */

	return clamp_t(u32, ilog2(units), RDMAXFER_ACK_TIMEOUT_MIN, RDMAXFER_ACK_TIMEOUT_MAX);
}

/**
 * rdmaxfer_ka_init - set a connection's dead-peer bound
 * @conn: the connection
 * @id: its cm_id, before rdma_connect() or rdma_accept()
 *
 * Reads peer_timeout_ms once for this connection and sets the QP's ACK
 * timeout and the keepalive interval from it.
 */
void rdmaxfer_ka_init(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	unsigned int ms = READ_ONCE(peer_timeout_ms);

	if (!ms)
		return;		/* rdma_cm's ACK timeout, no probes */
	rdma_set_ack_timeout(id, rdmaxfer_ack_timeout(ms));	/* RC: cannot fail */
	conn->c_ka.ka_interval = msecs_to_jiffies(ms / 4);
}

/* The peer did not answer a probe in time: take the connection down. */
static void rdmaxfer_ka_dead(struct rdmaxfer_conn *conn)
{
	trace_rdmaxfer_keepalive(conn, true);
	pr_info_ratelimited("conn %u: the peer stopped answering; dropping the connection\n",
			    conn->c_obj.id);
	rdmaxfer_conn_fail(conn, -ETIMEDOUT);
}

/*
 * The keepalive work's period: the probe interval, or (no keepalive of
 * ours) a second until the peer knows our probe bytes.
 */
static unsigned long rdmaxfer_ka_period(struct rdmaxfer_conn *conn)
{
	return conn->c_ka.ka_interval ?: HZ;
}

/**
 * rdmaxfer_ka_start - start the keepalive of a connection coming up
 * @conn: the connection, just marked RDMAXFER_CS_ESTABLISHED
 *
 * Context: c_lock held.
 */
void rdmaxfer_ka_start(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held(&conn->c_lock);
	if (conn->c_ka.ka_interval || conn->c_ka.ka_probe)
		queue_delayed_work(rdmaxfer_wq, &conn->c_ka.ka_work, rdmaxfer_ka_period(conn));
}

/* --- the READ probe's bytes ------------------------------------------------ */

/* Context: send CQ completion handler (softirq). */
static void rdmaxfer_probe_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_probe *pr = container_of(wc->wr_cqe, struct rdmaxfer_probe, pr_reg_cqe);

	rdmaxfer_conn_wc_failed(pr->pr_conn, wc);
	rdmaxfer_wr_release(pr->pr_conn, 1, 0);
}

/**
 * rdmaxfer_probe_alloc - the probe bytes of a new iWARP connection
 * @conn: the connection, its PD allocated, its QP not yet created
 *
 * Nothing on a port that is not iWARP, or on a device that cannot both
 * answer and issue an RDMA READ (the probe is then the WRITE, and our
 * hello does not offer RDMAXFER_HELLO_PROBE).
 *
 * Context: process context.
 * Return: 0 or -ENOMEM (or the error of the MR's allocation or mapping).
 */
int rdmaxfer_probe_alloc(struct rdmaxfer_conn *conn)
{
	struct ib_device *ib = conn->c_pd->device;
	struct rdmaxfer_probe *pr;
	struct scatterlist sg;
	int ret = -ENOMEM;

	might_sleep();
	if (!conn->c_iwarp || !ib->attrs.max_qp_rd_atom || !ib->attrs.max_qp_init_rd_atom)
		return 0;
	if (rdmaxfer_cm_fault())	/* a fault site of connection setup (conn.c) */
		return -ENOMEM;
	pr = kzalloc_obj(*pr, GFP_KERNEL_ACCOUNT);
	if (!pr)
		return -ENOMEM;
	pr->pr_page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!pr->pr_page)
		goto free;
	pr->pr_dma = ib_dma_map_page(ib, pr->pr_page, 0, RDMAXFER_PROBE_LEN, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(ib, pr->pr_dma))
		goto free_page;
	pr->pr_mr = ib_alloc_mr(conn->c_pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(pr->pr_mr)) {
		ret = PTR_ERR(pr->pr_mr);
		goto unmap;
	}
	ib_update_fast_reg_key(pr->pr_mr, ib_inc_rkey(pr->pr_mr->rkey));
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = pr->pr_dma;
	sg_dma_len(&sg) = RDMAXFER_PROBE_LEN;
	ret = ib_map_mr_sg(pr->pr_mr, &sg, 1, NULL, PAGE_SIZE);
	if (ret != 1) {
		ret = ret < 0 ? ret : -EINVAL;
		goto dereg;
	}
	/* a page's first bytes: iova 0, no address of ours on the wire */
	pr->pr_mr->iova = 0;
	pr->pr_conn = conn;
	pr->pr_reg_cqe.done = rdmaxfer_probe_reg_done;
	conn->c_ka.ka_probe = pr;
	return 0;
dereg:
	ib_dereg_mr(pr->pr_mr);
unmap:
	ib_dma_unmap_page(ib, pr->pr_dma, RDMAXFER_PROBE_LEN, DMA_TO_DEVICE);
free_page:
	__free_page(pr->pr_page);
free:
	kfree(pr);
	return ret;
}

/**
 * rdmaxfer_probe_free - free a connection's probe bytes
 * @conn: the connection, its QP destroyed (or never made)
 *
 * Context: process context.
 */
void rdmaxfer_probe_free(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;

	if (!pr)
		return;
	WARN_ON_ONCE(pr->pr_in_flight);
	ib_dereg_mr(pr->pr_mr);
	ib_dma_unmap_page(conn->c_pd->device, pr->pr_dma, RDMAXFER_PROBE_LEN, DMA_TO_DEVICE);
	__free_page(pr->pr_page);
	kfree(pr);
	conn->c_ka.ka_probe = NULL;
}

/*
 * Register our probe bytes on an empty send queue, if there is one now;
 * false if not yet.  Keepalive work.
 */
static bool rdmaxfer_probe_register(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;
	struct ib_reg_wr wr = {
		.wr = {
			.opcode = IB_WR_REG_MR,
			.wr_cqe = &pr->pr_reg_cqe,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = pr->pr_mr,
		.key = pr->pr_mr->rkey,
		.access = IB_ACCESS_REMOTE_READ,
	};
	int ret = 0;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_ESTABLISHED && rdmaxfer_sq_idle(conn)) {
		ret = ib_post_send(conn->c_qp, &wr.wr, NULL);
		if (!ret) {
			conn->c_sq.sq_wr_free--;
			pr->pr_registered = true;
		}
	}
	spin_unlock_bh(&conn->c_lock);
	if (ret)
		rdmaxfer_conn_fail(conn, ret);
	return pr->pr_registered;
}

/*
 * Tell the peer where our probe bytes are (registering them first), once,
 * where both hellos offer the READ probe; what cannot be done now is tried
 * again at the next tick.  Keepalive work.
 */
static void rdmaxfer_probe_tell(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;
	struct rdmaxfer_msg_seg *seg;
	struct rdmaxfer_ctrl *ct;

	if (!pr || pr->pr_told || !(conn->c_peer_features & RDMAXFER_HELLO_PROBE) ||
	    READ_ONCE(conn->c_await_first))
		return;
	if (!pr->pr_registered && !rdmaxfer_probe_register(conn))
		return;
	/* behind the registration on the send queue: the peer reads only after */
	ct = rdmaxfer_ctrl_get(conn, 0, 1, false);
	if (IS_ERR(ct))
		return;
	seg = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);
	seg->addr = cpu_to_be64(pr->pr_mr->iova);
	seg->rkey = cpu_to_be32(pr->pr_mr->rkey);
	seg->length = cpu_to_be32(RDMAXFER_PROBE_LEN);
	/* as long as any entry takes: it never waits for one */
	if (!rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_PROBE, sizeof(*seg)))
		pr->pr_told = true;
}

/**
 * rdmaxfer_probe_handle - the peer's PROBE message: where its probe bytes are
 * @conn: the connection
 * @p: the payload, a struct rdmaxfer_msg_seg
 * @plen: its length
 *
 * Only where both hellos offered the READ probe, once, for exactly
 * RDMAXFER_PROBE_LEN bytes.
 *
 * Context: the receive work.
 * Return: 0, or -EPROTO, which drops the connection.
 */
int rdmaxfer_probe_handle(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_seg *seg = p;
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;
	u64 addr;
	int ret = 0;

	if (!pr || !(conn->c_peer_features & RDMAXFER_HELLO_PROBE) || plen != sizeof(*seg) ||
	    be32_to_cpu(seg->length) != RDMAXFER_PROBE_LEN)
		return -EPROTO;
	addr = be64_to_cpu(seg->addr);
	if (addr > U64_MAX - RDMAXFER_PROBE_LEN)
		return -EPROTO;
	spin_lock_bh(&conn->c_lock);
	if (pr->pr_peer_known) {
		ret = -EPROTO;
	} else {
		pr->pr_peer_addr = addr;
		pr->pr_peer_rkey = be32_to_cpu(seg->rkey);
		pr->pr_peer_known = true;
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/*
 * The READ of the peer's probe bytes, its rdma_rw context made (it
 * allocates and maps): 0, or -EAGAIN to send the WRITE this time (the
 * peer's bytes unknown yet, a probe still queued).  Keepalive work; the
 * context is posted by rdmaxfer_probe_post() or undone by
 * rdmaxfer_probe_unprepare().
 */
static int rdmaxfer_probe_prepare(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;
	u64 addr;
	u32 rkey;
	int ret;

	if (!pr)
		return -EAGAIN;
	spin_lock_bh(&conn->c_lock);
	ret = pr->pr_peer_known && !conn->c_ka.ka_posted ? 0 : -EAGAIN;
	addr = pr->pr_peer_addr;
	rkey = pr->pr_peer_rkey;
	spin_unlock_bh(&conn->c_lock);
	if (ret)
		return ret;
	sg_init_one(&pr->pr_sg, page_address(pr->pr_page) + RDMAXFER_PROBE_SINK,
		    RDMAXFER_PROBE_LEN);
	ret = rdma_rw_ctx_init(&pr->pr_ctx, conn->c_qp, conn->c_port, &pr->pr_sg, 1, 0, addr,
			       rkey, DMA_FROM_DEVICE);
	return ret < 0 ? ret : 0;
}

/* Undo a context rdmaxfer_probe_prepare() made and that was not posted. */
static void rdmaxfer_probe_unprepare(struct rdmaxfer_conn *conn)
{
	rdma_rw_ctx_destroy(&conn->c_ka.ka_probe->pr_ctx, conn->c_qp, conn->c_port,
			    &conn->c_ka.ka_probe->pr_sg, 1, DMA_FROM_DEVICE);
}

/* Post the READ prepared; c_lock held, the connection up, no probe queued. */
static int rdmaxfer_probe_post(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;
	struct ib_send_wr *first, *wr;
	int ret;

	lockdep_assert_held(&conn->c_lock);
	first = rdma_rw_ctx_wrs(&pr->pr_ctx, conn->c_qp, conn->c_port, &conn->c_ka.ka_cqe, NULL);
	/* the registration before the READ has no cqe of its own (rw.c) */
	for (wr = first; wr->next; wr = wr->next)
		wr->wr_cqe = &conn->c_sq.sq_err_cqe;
	ret = ib_post_send(conn->c_qp, first, NULL);
	if (!ret)
		pr->pr_in_flight = true;
	return ret;
}

/*
 * The READ probe's context is done with (its completion came, or the
 * drain is over): destroy it, once.  False if no READ was in flight.
 */
static bool rdmaxfer_probe_retire(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_probe *pr = conn->c_ka.ka_probe;
	bool was;

	if (!pr)
		return false;
	spin_lock_bh(&conn->c_lock);
	was = pr->pr_in_flight;
	pr->pr_in_flight = false;
	spin_unlock_bh(&conn->c_lock);
	if (was)
		rdmaxfer_probe_unprepare(conn);
	return was;
}

/**
 * rdmaxfer_probe_flush - after the drain: a READ probe the provider never
 *	completed is done with
 * @conn: the connection, stopped and drained, its QP not yet destroyed
 *
 * (siw may leave queued WRs without a flush, see sq.c.)
 *
 * Context: process context, teardown.
 */
void rdmaxfer_probe_flush(struct rdmaxfer_conn *conn)
{
	might_sleep();
	if (rdmaxfer_probe_retire(conn)) {
		spin_lock_bh(&conn->c_lock);
		conn->c_ka.ka_posted = false;
		spin_unlock_bh(&conn->c_lock);
	}
}

/* --- the probe ------------------------------------------------------------- */

/*
 * Post a probe unless one is still queued (it then proves the peer alive or
 * fails on its own), and come back in ka_interval.  Teardown marks the
 * connection down under c_lock before it cancels this work, so nothing is
 * posted or queued after that.
 */
static void rdmaxfer_ka_work(struct work_struct *work)
{
	struct rdmaxfer_conn *conn = container_of(to_delayed_work(work), struct rdmaxfer_conn,
						  c_ka.ka_work);
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &conn->c_ka.ka_cqe,
			.opcode = IB_WR_RDMA_WRITE,	/* no SGE: zero length */
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	bool stuck = false, read = false;
	int ret = 0;
	u32 moved;

	rdmaxfer_probe_tell(conn);
	if (conn->c_ka.ka_interval)
		read = !rdmaxfer_probe_prepare(conn);
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_ESTABLISHED && !conn->c_ka.ka_interval) {
		/* no keepalive of ours: only telling the peer */
		if (conn->c_ka.ka_probe && !conn->c_ka.ka_probe->pr_told)
			queue_delayed_work(rdmaxfer_wq, &conn->c_ka.ka_work,
					   rdmaxfer_ka_period(conn));
	} else if (conn->c_state == RDMAXFER_CS_ESTABLISHED) {
		moved = conn->c_sq.sq_moved + conn->c_lg.lg_rx_done;
		if (conn->c_await_first) {
			/* iWARP listener: the client sends first (cm.c) */
			stuck = ++conn->c_ka.ka_waits >= 2;
		} else if (!conn->c_ka.ka_posted) {
			if (read) {
				ret = rdmaxfer_probe_post(conn);
				read = !!ret;	/* not posted: undone below */
			} else {
				ret = ib_post_send(conn->c_qp, &wr.wr, NULL);
			}
			conn->c_ka.ka_posted = !ret;
			conn->c_ka.ka_waits = 0;
			if (!ret)
				trace_rdmaxfer_keepalive(conn, false);
		} else if (moved != conn->c_ka.ka_moved) {
			conn->c_ka.ka_waits = 0;	/* queued behind data the peer takes */
		} else if (++conn->c_ka.ka_waits >= 2) {
			stuck = true;
		}
		conn->c_ka.ka_moved = moved;
		queue_delayed_work(rdmaxfer_wq, &conn->c_ka.ka_work, conn->c_ka.ka_interval);
	}
	spin_unlock_bh(&conn->c_lock);
	if (read)
		rdmaxfer_probe_unprepare(conn);
	if (stuck)
		rdmaxfer_ka_dead(conn);
	if (ret) {
		pr_debug("conn %u: posting the keepalive failed (%d)\n", conn->c_obj.id, ret);
		rdmaxfer_conn_fail(conn, ret);
	}
}

/* Context: send CQ completion handler (softirq). */
static void rdmaxfer_ka_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_conn *conn = container_of(wc->wr_cqe, struct rdmaxfer_conn, c_ka.ka_cqe);

	rdmaxfer_probe_retire(conn);	/* a READ probe's context */
	spin_lock_bh(&conn->c_lock);
	conn->c_ka.ka_posted = false;
	spin_unlock_bh(&conn->c_lock);
	wake_up_all(&conn->c_wait);	/* a registration may wait for it */
	if (wc->status == IB_WC_SUCCESS)
		return;
	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		rdmaxfer_conn_flushed(conn);	/* no receive may be posted */
		return;
	}
	if (wc->status == IB_WC_RETRY_EXC_ERR) {
		rdmaxfer_ka_dead(conn);
		return;
	}
	pr_debug("conn %u: keepalive: %s\n", conn->c_obj.id, ib_wc_status_msg(wc->status));
	rdmaxfer_conn_fail(conn, rdmaxfer_wc_errno(conn, wc->status));
}

/**
 * rdmaxfer_ka_setup - initialise a new connection's keepalive
 * @conn: the connection, being allocated
 */
void rdmaxfer_ka_setup(struct rdmaxfer_conn *conn)
{
	INIT_DELAYED_WORK(&conn->c_ka.ka_work, rdmaxfer_ka_work);
	conn->c_ka.ka_cqe.done = rdmaxfer_ka_done;
}
