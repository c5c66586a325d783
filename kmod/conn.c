// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - connections: rdma_cm, queue pairs and the control channel.
 *
 * Connection setup.  The client (CONNECT) resolves the address and the
 * route, creates the QP when the route is known and connects with a
 * struct rdmaxfer_cm_hello in the private data; the ioctl waits for the
 * outcome.  A listener's CONNECT_REQUEST handler checks the peer's hello
 * (wrong magic, version or parameters: rejected with a reason the client
 * reports), creates the QP and accepts at once; the connection waits in the
 * listener's queue until ACCEPT hands it out.  A connection's id is
 * reserved when it is created, so events that arrive before ACCEPT (or
 * before CONNECT returns) already carry the right id, and published (CLOSE
 * and the other ioctls find it) only once it is established; a listener's
 * once it listens (chardev.c, rdmaxfer_obj_reserve()).  Each connection has
 * its own protection domain: its QP and its windows' MRs live there, so an
 * rkey is good on that one connection only.
 *
 * Queue pair.  Both CQs come from the device's CQ pool.  The receive CQ
 * polls from a work item (IB_POLL_WORKQUEUE): its handlers parse peer
 * messages, allocate and take mutexes.  The send CQ polls in softirq
 * context (IB_POLL_SOFTIRQ): its handlers free contexts, return room,
 * queue completions, may post a CREDIT message or queue the teardown work,
 * and never sleep; so c_lock and the file's rf_ev_lock are
 * always taken with bottom halves off.  On Soft-RoCE, whose send, receive
 * and completion processing runs in tasklets, a post made with bottom
 * halves off then completes at spin_unlock_bh(), in the poster's context,
 * with no context switch.  The send queue holds RDMAXFER_SQ_WRS of our
 * own work requests plus what rdma_rw adds for RDMAXFER_RW_CTXS contexts,
 * plus one for the drain; the send CQ is sized for all of them, because a
 * flushed QP completes every WR.  c_wr_free and c_rw_free count what may
 * still be posted; the last WR of every posted chain is signaled (a chain
 * of operation pieces, see xfer.c; a control message; a registration
 * batch) and its completion gives back its WRs and those before it, so the
 * count can never be exhausted by unsignaled WRs.
 *
 * Control channel.  RDMAXFER_RECV_DEPTH receive buffers are posted before
 * connecting; the hello tells the peer how many, and that is its initial
 * credit.  See proto.h for the credit rules.  Every message is validated in
 * rdmaxfer_handle_msg(); a bad one drops the connection (-EPROTO), nothing
 * else.
 *
 * Posting and teardown.  Every ib_post_send()/ib_post_recv() happens under
 * c_lock after checking that the connection is up; teardown marks it down
 * under the same lock before draining, so nothing is posted after the drain
 * starts (ib_drain_qp() requires that).  Teardown runs in process context,
 * never from the connection's own CM handler (rdma_destroy_id() waits for
 * it): events that bring a connection down queue c_down_work instead.  It
 * disconnects, drains (every operation in flight completes, flushed), then
 * releases the windows (deregistering their MRs: the keys die), forgets
 * the peer's windows, destroys the QP, gives back the CQs, destroys the
 * cm_id and detaches from the device.
 *
 * Dead peers.  A peer whose host died, or whose link is cut, answers
 * nothing: a busy connection learns it from its own work requests, whose
 * transport retries run out (IB_WC_RETRY_EXC_ERR: -ETIMEDOUT); an idle one
 * would never learn it, so every established connection posts a keepalive
 * probe every peer_timeout_ms / 4 (when none is still on the send queue):
 * a zero-length RDMA WRITE, which the peer's adapter acknowledges without
 * its software, a receive buffer or a credit (a zero-length RDMA operation
 * names no memory: its rkey is not checked, IBTA C9-88), so it works when
 * the control channel is out of credits and costs the peer nothing.  The
 * QP's local ACK timeout is set so that the first try and its
 * RDMAXFER_RETRY_COUNT retries take at most half of it: a peer that stops
 * answering is detected within 3/4 of peer_timeout_ms (a probe interval,
 * then the retries), the rest is slack for scheduling; a link cut shorter
 * than the retries (about peer_timeout_ms / 2) is not noticed.
 * The send queue keeps a spare WR for the probe, as for the drain.
 *
 * A listener's QPs retry as often as the client's connect request says
 * (the CM passes its retry count on; the reply cannot change it).  A client
 * asking for 7, as v0.3.0 and many rdma_cm users do, makes Soft-RoCE retry
 * forever, so for such a connection the keepalive enforces the bound
 * itself: a probe still queued at the second tick after it was posted
 * (half of peer_timeout_ms, when the retries would have ended) fails the
 * connection.  A listener's send queue usually holds little besides
 * ADVERTs and probes; an application that pushes long transfers from the
 * listening side to such a client may see a probe stuck behind more than
 * half of peer_timeout_ms of data taken for a dead peer.
 *
 * Posting from ioctls (SUBMIT, EXPOSE, REVOKE) happens between
 * rdmaxfer_post_begin() and rdmaxfer_post_end(), a read lock that teardown
 * takes for write once after marking the connection down, so no ioctl
 * still holds a control buffer or WR room when teardown frees them.
 * Completion handlers post without it: the drain waits for them.
 *
 * Fault injection.  Connection setup runs in rdma_cm's handlers (the
 * listener's CONNECT_REQUEST, the client's ROUTE_RESOLVED), in kernel
 * worker threads that a test's /proc/thread-self/fail-nth cannot reach.
 * With CONFIG_FAULT_INJECTION, the steps of those paths are also fault
 * sites of the attribute fail_rdmaxfer_cm (the listener's connection
 * allocation, id reservation and accept; on both sides port query, PD, CQs,
 * QP, each control buffer and receive; the client's connect; debugfs:
 * /sys/kernel/debug/fail_rdmaxfer_cm/, the kernel's fault_attr; a site
 * returns the error of the call it stands for instead of making it), so a
 * test can fail each of them in turn: space=N, times=1, probability=100
 * fails the N-th site reached, on either side (the sites before it each
 * take 1 from space).
 *
 * Locking: see the order at the top of rdmaxfer.h.  No lock is held
 * across rdma_destroy_id() that its handler takes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_cm.h>

#include "rdmaxfer.h"
#include "trace.h"

#define RDMAXFER_RESOLVE_MS	5000
#define RDMAXFER_RD_ATOM	16
/* local ACK timeouts, as IB encodes them: 4.096 us * 2^t (134 ms, 69 s) */
#define RDMAXFER_ACK_TIMEOUT_MIN	15
#define RDMAXFER_ACK_TIMEOUT_MAX	24

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

/* --- addresses ----------------------------------------------------------- */

static int rdmaxfer_to_sockaddr(const struct rdmaxfer_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	switch (a->family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		memcpy(&sin->sin_addr, a->addr, 4);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a->port);
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

static void rdmaxfer_from_sockaddr(const struct sockaddr *sa, struct rdmaxfer_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		a->family = AF_INET;
		a->port = ntohs(sin->sin_port);
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		a->family = AF_INET6;
		a->port = ntohs(sin6->sin6_port);
		a->scope_id = sin6->sin6_scope_id;
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

/* --- handshake ------------------------------------------------------------ */

static void rdmaxfer_hello_init(struct rdmaxfer_conn *conn, struct rdmaxfer_cm_hello *h)
{
	h->magic = cpu_to_be32(RDMAXFER_MAGIC);
	h->version = cpu_to_be16(RDMAXFER_PROTO_VERSION);
	h->credits = cpu_to_be16(RDMAXFER_RECV_DEPTH);
	h->ctrl_size = cpu_to_be32(RDMAXFER_CTRL_SIZE);
	h->seg_size = cpu_to_be32(rdmaxfer_seg_pages(conn->c_dev->rd_ib) * PAGE_SIZE);
	h->max_msg = cpu_to_be32(conn->c_max_msg);
	h->reserved = 0;
}

/* Check the peer's hello and take its parameters; *reason says why not. */
static int rdmaxfer_hello_parse(struct rdmaxfer_conn *conn, const void *data, u32 len,
				u32 *reason)
{
	const struct rdmaxfer_cm_hello *h = data;
	u32 credits, ctrl, seg, max_msg;

	if (!h || len < sizeof(*h) || be32_to_cpu(h->magic) != RDMAXFER_MAGIC) {
		*reason = RDMAXFER_REJECT_NOT_RDMAXFER;
		return -EPROTO;
	}
	if (be16_to_cpu(h->version) != RDMAXFER_PROTO_VERSION) {
		*reason = RDMAXFER_REJECT_VERSION;
		return -EPROTONOSUPPORT;
	}
	credits = be16_to_cpu(h->credits);
	ctrl = be32_to_cpu(h->ctrl_size);
	seg = be32_to_cpu(h->seg_size);
	max_msg = be32_to_cpu(h->max_msg);
	if (credits <= RDMAXFER_DATA_RESERVE + 1 || credits > 1024 || ctrl < 256 || ctrl > SZ_64K ||
	    seg < SZ_4K || seg > SZ_256M || max_msg < SZ_4K || h->reserved) {
		*reason = RDMAXFER_REJECT_PARAMS;
		return -EPROTO;
	}
	conn->c_credits = credits;
	conn->c_peer_recvs = credits;
	conn->c_peer_ctrl_size = ctrl;
	conn->c_peer_seg_size = seg;
	conn->c_peer_max_msg = max_msg;
	return 0;
}

/* The largest WRITE/READ one operation may move (QUERY_CONN.max_op_size). */
static void rdmaxfer_conn_limits(struct rdmaxfer_conn *conn)
{
	u64 piece;

	/* both ports must accept a message: ours (set up) and the peer's (hello) */
	conn->c_max_msg = min(conn->c_max_msg, conn->c_peer_max_msg);
	piece = min(conn->c_peer_seg_size, conn->c_max_msg);
	u32 sge = min(conn->c_qp->max_write_sge, conn->c_qp->max_read_sge);
	u64 by_wrs = (u64)(conn->c_wr_free / 2) * sge * PAGE_SIZE;

	conn->c_max_op = min((u64)(RDMAXFER_RW_CTXS / 2 - 1) * piece, by_wrs);
}

/* --- credits and work-request budget -------------------------------------- */

/**
 * rdmaxfer_wr_take - take send-queue room if there is enough
 * @conn: the connection
 * @nwr: send WRs needed
 * @nrw: rdma_rw contexts needed
 *
 * Context: any context that may take a spinlock; does not sleep.
 * Return: 0 with the room taken, -EAGAIN (not enough), -ENOTCONN.
 */
int rdmaxfer_wr_take(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw)
{
	int ret = -EAGAIN;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_DOWN) {
		ret = -ENOTCONN;
	} else if (conn->c_wr_free >= nwr && conn->c_rw_free >= nrw) {
		conn->c_wr_free -= nwr;
		conn->c_rw_free -= nrw;
		ret = 0;
	}
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

/**
 * rdmaxfer_wr_reserve - wait for room on the send queue
 * @conn: the connection
 * @nwr: send WRs needed
 * @nrw: rdma_rw contexts needed
 *
 * Context: process context, sleeps interruptibly.
 * Return: 0 with the room taken, -ENOTCONN, -EINTR.
 */
int rdmaxfer_wr_reserve(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw)
{
	int ret = -EAGAIN, err;

	might_sleep();
	err = wait_event_interruptible(conn->c_wait,
				       (ret = rdmaxfer_wr_take(conn, nwr, nrw)) != -EAGAIN);
	return err ? -EINTR : ret;
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
	conn->c_wr_free += nwr;
	conn->c_rw_free += nrw;
	spin_unlock_bh(&conn->c_lock);
	wake_up_all(&conn->c_wait);
}

/**
 * rdmaxfer_post_begin - start posting on a connection from an ioctl
 * @conn: the connection
 *
 * Holds off teardown (which then waits in down_write()) until
 * rdmaxfer_post_end(), so that the control buffers and WR room taken in
 * between stay valid.  Teardown marks the connection down first and wakes
 * every waiter, so a poster never blocks it for long.
 *
 * Context: process context.
 * Return: 0, or -ENOTCONN (nothing held).
 */
int rdmaxfer_post_begin(struct rdmaxfer_conn *conn)
{
	might_sleep();
	down_read(&conn->c_post_sem);
	if (READ_ONCE(conn->c_state) == RDMAXFER_CS_ESTABLISHED)
		return 0;
	up_read(&conn->c_post_sem);
	return -ENOTCONN;
}

/**
 * rdmaxfer_post_end - end what rdmaxfer_post_begin() started
 * @conn: the connection
 */
void rdmaxfer_post_end(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held_read(&conn->c_post_sem);
	up_read(&conn->c_post_sem);
}

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
 * rdmaxfer_ctrl_post - send a control message
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
int rdmaxfer_ctrl_post(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
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
		rdmaxfer_ctrl_post(conn, ct, RDMAXFER_MSG_CREDIT, 0);
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

static int rdmaxfer_post_recv(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct)
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
 * Handle one received control message.  Every field is checked; an error
 * return drops the connection.
 */
static int rdmaxfer_handle_msg(struct rdmaxfer_conn *conn, const void *buf, u32 len)
{
	const struct rdmaxfer_msg_hdr *hdr = buf;
	struct rdmaxfer_file *rf = conn->c_obj.file;
	const void *p = hdr + 1;
	u32 type, plen, credits, now = 0;
	int ret = 0;

	if (len < sizeof(*hdr))
		return -EPROTO;
	type = be16_to_cpu(hdr->type);
	plen = be32_to_cpu(hdr->length);
	credits = be16_to_cpu(hdr->credits);
	if (plen != len - sizeof(*hdr))
		return -EPROTO;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_credits + credits > conn->c_peer_recvs) {
		ret = -EPROTO;
	} else {
		conn->c_credits += credits;
		now = conn->c_credits;
	}
	spin_unlock_bh(&conn->c_lock);
	if (ret)
		return ret;
	if (credits) {
		trace_rdmaxfer_credits(conn, credits, now);
		wake_up_all(&conn->c_wait);
	}

	switch (type) {
	case RDMAXFER_MSG_CREDIT:
		return plen ? -EPROTO : 0;
	case RDMAXFER_MSG_ADVERT: {
		const struct rdmaxfer_msg_advert *adv = p;

		ret = rdmaxfer_rwin_add(conn, p, plen);
		if (ret)
			return ret;
		ret = rdmaxfer_post_peer_event(conn, true, RDMAXFER_EVENT_WINDOW,
					       be32_to_cpu(adv->access), be64_to_cpu(adv->length),
					       0, 0, be32_to_cpu(adv->window_id));
		return ret > 0 ? RDMAXFER_HOLD_CREDIT : ret;
	}
	case RDMAXFER_MSG_REVOKE: {
		const struct rdmaxfer_msg_revoke *rv = p;

		if (plen != sizeof(*rv))
			return -EPROTO;
		ret = rdmaxfer_rwin_del(conn, be32_to_cpu(rv->window_id));
		if (ret)
			return ret;
		ret = rdmaxfer_post_peer_event(conn, true, RDMAXFER_EVENT_WINDOW_REVOKED, 0, 0, 0,
					       0, be32_to_cpu(rv->window_id));
		return ret > 0 ? RDMAXFER_HOLD_CREDIT : ret;
	}
	case RDMAXFER_MSG_DATA: {
		struct rdmaxfer_msg *m;

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
		ret = rdmaxfer_post_peer_event(conn, false, RDMAXFER_EVENT_RECV, 0, plen, 0, 0, 0);
		/* its credit goes back when the user RECVs it: back-pressure */
		return ret ?: RDMAXFER_HOLD_CREDIT;
	}
	case RDMAXFER_MSG_WRITE_DONE: {
		const struct rdmaxfer_msg_write_done *wd = p;
		u64 off, wlen;
		u32 id;

		if (plen != sizeof(*wd))
			return -EPROTO;
		id = be32_to_cpu(wd->window_id);
		off = be64_to_cpu(wd->offset);
		wlen = be64_to_cpu(wd->length);
		ret = rdmaxfer_check_write_done(conn, id, off, wlen);
		if (ret)
			return ret;
		rdmaxfer_count(rf, RDMAXFER_C_WRITES_IMM_IN, 1);
		ret = rdmaxfer_post_peer_event(conn, true, RDMAXFER_EVENT_WRITE_IMM, 0, wlen, off,
					       be32_to_cpu(wd->imm_data), id);
		return ret > 0 ? RDMAXFER_HOLD_CREDIT : ret;
	}
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
		rdmaxfer_post_recv(conn, ct);
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
	if (!rdmaxfer_post_recv(conn, ct))
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

/* --- setup and teardown ----------------------------------------------------- */

static void rdmaxfer_qp_event(struct ib_event *ev, void *ctx)
{
	struct rdmaxfer_conn *conn = ctx;

	pr_debug("conn %u: QP event %s\n", conn->c_obj.id, ib_event_msg(ev->event));
	if (ev->event == IB_EVENT_QP_FATAL || ev->event == IB_EVENT_QP_ACCESS_ERR ||
	    ev->event == IB_EVENT_QP_REQ_ERR)
		rdmaxfer_conn_fail(conn, -EIO);
}

/* --- dead peers ------------------------------------------------------------ */

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

/*
 * Before rdma_connect() or rdma_accept(): read peer_timeout_ms once for this
 * connection, set the QP's ACK timeout and the keepalive interval from it.
 */
static void rdmaxfer_ka_init(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	unsigned int ms = READ_ONCE(peer_timeout_ms);

	if (!ms)
		return;		/* rdma_cm's ACK timeout, no probes */
	rdma_set_ack_timeout(id, rdmaxfer_ack_timeout(ms));	/* RC: cannot fail */
	conn->c_ka_interval = msecs_to_jiffies(ms / 4);
}

/* The peer did not answer a probe in time: take the connection down. */
static void rdmaxfer_ka_dead(struct rdmaxfer_conn *conn)
{
	trace_rdmaxfer_keepalive(conn, true);
	pr_info_ratelimited("conn %u: the peer stopped answering; dropping the connection\n",
			    conn->c_obj.id);
	rdmaxfer_conn_fail(conn, -ETIMEDOUT);
}

/* Start the probes; called under c_lock when the connection comes up. */
static void rdmaxfer_ka_start(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held(&conn->c_lock);
	if (conn->c_ka_interval)
		queue_delayed_work(rdmaxfer_wq, &conn->c_ka_work, conn->c_ka_interval);
}

/*
 * Post a probe unless one is still queued (it then proves the peer alive or
 * fails on its own), and come back in c_ka_interval.  Teardown marks the
 * connection down under c_lock before it cancels this work, so nothing is
 * posted or queued after that.
 */
static void rdmaxfer_ka_work(struct work_struct *work)
{
	struct rdmaxfer_conn *conn = container_of(to_delayed_work(work), struct rdmaxfer_conn,
						  c_ka_work);
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &conn->c_ka_cqe,
			.opcode = IB_WR_RDMA_WRITE,	/* no SGE: zero length */
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	bool stuck = false;
	int ret = 0;

	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_ESTABLISHED) {
		if (!conn->c_ka_posted) {
			ret = ib_post_send(conn->c_qp, &wr.wr, NULL);
			conn->c_ka_posted = !ret;
			conn->c_ka_waits = 0;
			if (!ret)
				trace_rdmaxfer_keepalive(conn, false);
		} else if (conn->c_ka_strict && ++conn->c_ka_waits >= 2) {
			stuck = true;
		}
		queue_delayed_work(rdmaxfer_wq, &conn->c_ka_work, conn->c_ka_interval);
	}
	spin_unlock_bh(&conn->c_lock);
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
	struct rdmaxfer_conn *conn = container_of(wc->wr_cqe, struct rdmaxfer_conn, c_ka_cqe);

	spin_lock_bh(&conn->c_lock);
	conn->c_ka_posted = false;
	spin_unlock_bh(&conn->c_lock);
	if (wc->status == IB_WC_SUCCESS || wc->status == IB_WC_WR_FLUSH_ERR)
		return;
	if (wc->status == IB_WC_RETRY_EXC_ERR) {
		rdmaxfer_ka_dead(conn);
		return;
	}
	pr_debug("conn %u: keepalive: %s\n", conn->c_obj.id, ib_wc_status_msg(wc->status));
	rdmaxfer_conn_fail(conn, rdmaxfer_wc_errno(conn, wc->status));
}

static void rdmaxfer_conn_down_work(struct work_struct *work)
{
	struct rdmaxfer_conn *conn = container_of(work, struct rdmaxfer_conn, c_down_work);

	rdmaxfer_conn_teardown(conn, -ECONNRESET);
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
	kref_get(&conn->c_obj.ref);
	if (!queue_work(rdmaxfer_wq, &conn->c_down_work))
		rdmaxfer_obj_put_atomic(&conn->c_obj);	/* may be in softirq */
}

#ifdef CONFIG_FAULT_INJECTION
static DECLARE_FAULT_ATTR(rdmaxfer_fail_cm);
static struct dentry *rdmaxfer_fail_cm_dir;

/* Should this fault site of connection setup fail (see "Fault injection")? */
static bool rdmaxfer_cm_fault(void)
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
static bool rdmaxfer_cm_fault(void)
{
	return false;
}

void rdmaxfer_fault_init(void)
{
}

void rdmaxfer_fault_exit(void)
{
}
#endif

static struct rdmaxfer_conn *rdmaxfer_conn_alloc(struct rdmaxfer_file *rf)
{
	struct rdmaxfer_conn *conn;

	conn = kzalloc_obj(*conn, GFP_KERNEL_ACCOUNT);
	if (!conn)
		return NULL;
	rdmaxfer_obj_init(&conn->c_obj, rf, RDMAXFER_OBJ_CONN);
	INIT_LIST_HEAD(&conn->c_entry);
	INIT_LIST_HEAD(&conn->c_dev_entry);
	spin_lock_init(&conn->c_lock);
	conn->c_state = RDMAXFER_CS_CONNECTING;
	INIT_LIST_HEAD(&conn->c_free_sends);
	INIT_LIST_HEAD(&conn->c_msgs);
	INIT_LIST_HEAD(&conn->c_sq_pieces);
	conn->c_err_cqe.done = rdmaxfer_err_done;
	INIT_LIST_HEAD(&conn->c_windows);
	xa_init(&conn->c_rwins);
	mutex_init(&conn->c_rwin_lock);
	init_waitqueue_head(&conn->c_wait);
	init_completion(&conn->c_established);
	mutex_init(&conn->c_teardown_lock);
	init_rwsem(&conn->c_post_sem);
	INIT_WORK(&conn->c_down_work, rdmaxfer_conn_down_work);
	INIT_DELAYED_WORK(&conn->c_ka_work, rdmaxfer_ka_work);
	conn->c_ka_cqe.done = rdmaxfer_ka_done;
	return conn;
}

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

/* Free the QP, CQs and control buffers (not the cm_id).  Idempotent. */
static void rdmaxfer_conn_free_resources(struct rdmaxfer_conn *conn)
{
	u32 i;

	lockdep_assert_held(&conn->c_teardown_lock);

	if (conn->c_qp) {
		if (conn->c_id)
			rdma_destroy_qp(conn->c_id);
		else
			ib_destroy_qp(conn->c_qp);
		conn->c_qp = NULL;
	}
	if (conn->c_dev) {
		for (i = 0; i < RDMAXFER_RECV_DEPTH; i++)
			rdmaxfer_ctrl_free(conn, &conn->c_recvs[i], DMA_FROM_DEVICE);
		for (i = 0; i < RDMAXFER_SEND_BUFS; i++)
			rdmaxfer_ctrl_free(conn, &conn->c_sends[i], DMA_TO_DEVICE);
	}
	INIT_LIST_HEAD(&conn->c_free_sends);
	if (conn->c_scq) {
		ib_cq_pool_put(conn->c_scq, conn->c_scq_size);
		conn->c_scq = NULL;
	}
	if (conn->c_rcq) {
		ib_cq_pool_put(conn->c_rcq, RDMAXFER_RECV_DEPTH + 1);
		conn->c_rcq = NULL;
	}
	if (conn->c_pd_held) {
		conn->c_pd_held = false;
		rdmaxfer_conn_pd_put(conn);	/* windows still alive keep it */
	}
}

/**
 * rdmaxfer_conn_pd_get - keep the connection's PD while a window uses it
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

/*
 * Attach to the cm_id's device and create the QP, CQs and control buffers;
 * post the receives.  On failure the caller tears down (or frees).  Runs in
 * rdma_cm's handlers only: each step is a fault site (see "Fault injection").
 */
static int rdmaxfer_conn_setup(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {};
	struct rdmaxfer_device *rd;
	struct ib_port_attr pattr;
	struct ib_device *ib;
	u32 i;
	int ret;

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

	conn->c_scq_size = RDMAXFER_SQ_WRS + RDMAXFER_SQ_SPARE + 3 * RDMAXFER_RW_CTXS;
	/* see "Queue pair" above for the two poll contexts */
	conn->c_scq = rdmaxfer_cm_fault() ? ERR_PTR(-ENOMEM) :
		      ib_cq_pool_get(ib, conn->c_scq_size, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->c_scq)) {
		ret = PTR_ERR(conn->c_scq);
		conn->c_scq = NULL;
		return ret;
	}
	conn->c_rcq = rdmaxfer_cm_fault() ? ERR_PTR(-ENOMEM) :
		      ib_cq_pool_get(ib, RDMAXFER_RECV_DEPTH + 1, -1, IB_POLL_WORKQUEUE);
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
	attr.cap.max_recv_wr = RDMAXFER_RECV_DEPTH + 1;
	attr.cap.max_send_sge = min(ib->attrs.max_send_sge, 32);
	attr.cap.max_recv_sge = 1;
	attr.cap.max_rdma_ctxs = RDMAXFER_RW_CTXS;
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdma_create_qp(id, conn->c_pd, &attr);
	if (ret)
		return ret;
	conn->c_qp = id->qp;
	conn->c_qpn = id->qp->qp_num;
	/* rdma_rw added its WRs to max_send_wr; keep the drain's and the probe's */
	conn->c_wr_free = min(attr.cap.max_send_wr, conn->c_scq_size) - RDMAXFER_SQ_SPARE;
	conn->c_rw_free = RDMAXFER_RW_CTXS;

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
		ret = rdmaxfer_cm_fault() ? -ENOMEM : rdmaxfer_post_recv(conn, &conn->c_recvs[i]);
		if (ret)
			return ret;
	}
	return 0;
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
	if (!list_empty(&conn->c_entry)) {
		list_del_init(&conn->c_entry);
		if (conn->c_state == RDMAXFER_CS_CONNECTING)
			l->l_npending--;
		else
			l->l_queued--;
	}
	spin_unlock(&l->l_lock);
	rdmaxfer_obj_put(&l->l_obj);
	return true;
}

/**
 * rdmaxfer_conn_teardown - take a connection down and free its resources
 * @conn: the connection; the caller holds a reference
 * @error: why: -ECANCELED for a local close, -ESHUTDOWN for the peer's
 *	orderly close (reported with status 0), else what the user is told
 *
 * Idempotent.  After it returns, every operation on the connection has
 * completed, its windows are deregistered, and it holds nothing of the
 * device.  The object itself stays until its last reference is put.
 *
 * Context: process context, not from this connection's CM handler; no
 * rf_lock held.
 */
void rdmaxfer_conn_teardown(struct rdmaxfer_conn *conn, int error)
{
	struct rdmaxfer_file *rf = conn->c_obj.file;
	struct rdma_cm_id *id;
	bool was_up, unaccepted;

	might_sleep();
	lockdep_assert_not_held(&rf->rf_lock);
	mutex_lock(&conn->c_teardown_lock);
	if (conn->c_torn_down) {
		mutex_unlock(&conn->c_teardown_lock);
		return;
	}
	conn->c_torn_down = true;
	cmpxchg(&conn->c_error, 0, error);
	error = READ_ONCE(conn->c_error);
	spin_lock_bh(&conn->c_lock);
	was_up = conn->c_state == RDMAXFER_CS_ESTABLISHED;
	conn->c_state = RDMAXFER_CS_DOWN;
	spin_unlock_bh(&conn->c_lock);
	trace_rdmaxfer_conn_down(conn, was_up, error);
	wake_up_all(&conn->c_wait);
	complete_all(&conn->c_established);
	cancel_delayed_work_sync(&conn->c_ka_work);	/* down: it no longer re-arms */

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
	rdmaxfer_sq_sweep(conn);
	rdmaxfer_window_release_all(conn);
	rdmaxfer_rwin_free_all(conn);
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
	unaccepted = rdmaxfer_conn_unqueue(conn);

	if (error != -ECANCELED) {
		if (error != -ESHUTDOWN)
			rdmaxfer_count(rf, RDMAXFER_C_CONN_ERRORS, 1);
		if (was_up && !unaccepted)
			rdmaxfer_post_event_always(rf, conn->c_obj.id,
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
	xa_destroy(&conn->c_rwins);
	kfree(conn);
}

/* --- CM events ------------------------------------------------------------- */

static void rdmaxfer_connect_done(struct rdmaxfer_conn *conn, int error)
{
	if (error)
		cmpxchg(&conn->c_error, 0, error);
	spin_lock_bh(&conn->c_lock);
	if (!error && conn->c_state == RDMAXFER_CS_CONNECTING) {
		conn->c_state = RDMAXFER_CS_ESTABLISHED;
		rdmaxfer_ka_start(conn);
	}
	spin_unlock_bh(&conn->c_lock);
	complete_all(&conn->c_established);
}

static void rdmaxfer_conn_params(struct rdmaxfer_conn *conn, struct rdma_conn_param *param,
				 struct rdmaxfer_cm_hello *hello)
{
	struct ib_device_attr *a = &conn->c_dev->rd_ib->attrs;

	rdmaxfer_hello_init(conn, hello);
	memset(param, 0, sizeof(*param));
	param->responder_resources = min(a->max_qp_rd_atom, RDMAXFER_RD_ATOM);
	param->initiator_depth = min(a->max_qp_init_rd_atom, RDMAXFER_RD_ATOM);
	/* finite everywhere: rxe retries forever at 7 (the RNR meaning) */
	param->retry_count = RDMAXFER_RETRY_COUNT;
	/* credits make RNR a protocol violation: retry a little, not forever */
	param->rnr_retry_count = 6;
	param->private_data = hello;
	param->private_data_len = sizeof(*hello);
}

static void rdmaxfer_conn_addrs(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	rdmaxfer_from_sockaddr((struct sockaddr *)&id->route.addr.src_addr, &conn->c_local);
	rdmaxfer_from_sockaddr((struct sockaddr *)&id->route.addr.dst_addr, &conn->c_peer);
}

/* Client: the route is known; create the QP and send the connect request. */
static int rdmaxfer_cm_route_resolved(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	struct rdmaxfer_cm_hello hello;
	struct rdma_conn_param param;
	int ret;

	ret = rdmaxfer_conn_setup(conn, id);
	if (ret)
		return ret;
	rdmaxfer_conn_addrs(conn, id);
	rdmaxfer_conn_params(conn, &param, &hello);
	rdmaxfer_ka_init(conn, id);
	return rdmaxfer_cm_fault() ? -ENOMEM : rdma_connect_locked(id, &param);
}

/* Client: the server accepted; check its hello. */
static void rdmaxfer_cm_established_client(struct rdmaxfer_conn *conn,
					   struct rdma_cm_event *ev)
{
	u32 reason = 0;
	int ret;

	ret = rdmaxfer_hello_parse(conn, ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &reason);
	if (!ret) {
		rdmaxfer_conn_limits(conn);
		rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_CONNS, 1);
		trace_rdmaxfer_conn_up(conn, false);
	}
	rdmaxfer_connect_done(conn, ret);
}

/* Server: the client confirmed; queue the connection for ACCEPT. */
static void rdmaxfer_cm_established_server(struct rdmaxfer_conn *conn,
					   struct rdmaxfer_listener *l)
{
	struct rdmaxfer_file *rf = conn->c_obj.file;
	bool queued = false, up = false;

	/*
	 * Up before ACCEPT can take it: an ioctl on the id ACCEPT returns must
	 * find the connection established (it found it CONNECTING, ENOTCONN,
	 * when ACCEPT won the race with the lines below).
	 */
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_CONNECTING) {
		conn->c_state = RDMAXFER_CS_ESTABLISHED;
		rdmaxfer_ka_start(conn);
		up = true;
	}
	spin_unlock_bh(&conn->c_lock);
	if (up)
		trace_rdmaxfer_conn_up(conn, true);
	/*
	 * Complete now: the id names it (CLOSE may find it).  If the listener
	 * is closing, its teardown (waiting in rdma_destroy_id() for this
	 * handler) removes the id again.
	 */
	rdmaxfer_obj_publish(&conn->c_obj);
	spin_lock(&l->l_lock);
	if (!l->l_closed && !list_empty(&conn->c_entry)) {
		list_move_tail(&conn->c_entry, &l->l_queue);
		l->l_npending--;
		l->l_queued++;
		queued = true;
	}
	spin_unlock(&l->l_lock);
	if (!queued) {
		rdmaxfer_conn_fail(conn, -ECONNABORTED);
		return;
	}
	rdmaxfer_count(rf, RDMAXFER_C_CONNS, 1);
	rdmaxfer_post_event_always(rf, l->l_obj.id, RDMAXFER_EVENT_CONNECTED, 0, conn->c_obj.id);
}

static u32 rdmaxfer_reject_reason(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rdmaxfer_cm_reject *rej;
	u8 len = 0;

	rej = rdma_consumer_reject_data(id, ev, &len);
	if (!rej || len < sizeof(*rej) || be32_to_cpu(rej->magic) != RDMAXFER_MAGIC)
		return RDMAXFER_REJECT_UNKNOWN;
	return be16_to_cpu(rej->reason);
}

static int rdmaxfer_conn_cm_event(struct rdmaxfer_conn *conn, struct rdma_cm_id *id,
				  struct rdma_cm_event *ev)
{
	bool connecting = READ_ONCE(conn->c_state) == RDMAXFER_CS_CONNECTING;
	struct rdmaxfer_listener *l = READ_ONCE(conn->c_listener);
	int ret;

	pr_debug("conn %u: %s (%d)\n", conn->c_obj.id, rdma_event_msg(ev->event), ev->status);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, RDMAXFER_RESOLVE_MS);
		if (ret)
			rdmaxfer_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = rdmaxfer_cm_route_resolved(conn, id);
		if (ret)
			rdmaxfer_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (l)
			rdmaxfer_cm_established_server(conn, l);
		else
			rdmaxfer_cm_established_client(conn, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (l) {	/* the client refused our reply */
			rdmaxfer_conn_fail(conn, -ECONNREFUSED);
			break;
		}
		conn->c_reject_reason = rdmaxfer_reject_reason(id, ev);
		rdmaxfer_connect_done(conn, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (l)		/* the client never confirmed our reply */
			rdmaxfer_conn_fail(conn, -EHOSTUNREACH);
		else
			rdmaxfer_connect_done(conn, -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rdmaxfer_connect_done(conn, -ENETUNREACH);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * Connections with a QP were torn down by our ib_client .remove,
		 * which runs first; this is one still resolving.  Give the id to
		 * the core (return 1) unless teardown already owns it.
		 */
		if (!conn->c_qp && xchg(&conn->c_id, NULL) == id) {
			rdmaxfer_connect_done(conn, -ENODEV);
			rdmaxfer_obj_put(&conn->c_obj);	/* the id's context */
			return 1;
		}
		rdmaxfer_conn_fail(conn, -ENODEV);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The peer closed: an orderly end, reported with status 0 --
		 * unless our device is going away and the peer on it was just
		 * torn down before us.  c_dev is stable here: teardown destroys
		 * the id (waiting for this handler) before it detaches.
		 */
		if (connecting && !l)
			rdmaxfer_connect_done(conn, -ECONNRESET);
		else
			rdmaxfer_conn_fail(conn, conn->c_dev && READ_ONCE(conn->c_dev->rd_dying) ?
					   -ENODEV : -ESHUTDOWN);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		if (connecting && !l)
			rdmaxfer_connect_done(conn, -ECONNRESET);
		else
			rdmaxfer_conn_fail(conn, -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
}

static void rdmaxfer_reject(struct rdma_cm_id *id, u32 reason)
{
	struct rdmaxfer_cm_reject rej = {
		.magic = cpu_to_be32(RDMAXFER_MAGIC),
		.version = cpu_to_be16(RDMAXFER_PROTO_VERSION),
		.reason = cpu_to_be16(reason),
	};

	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * Listener: a client wants to connect.  Check its hello, set the connection
 * up and accept; or reject with a reason and return 1 so that the core
 * destroys the new id.
 */
static int rdmaxfer_cm_connect_request(struct rdmaxfer_listener *l, struct rdma_cm_id *id,
				       struct rdma_cm_event *ev)
{
	struct rdmaxfer_cm_hello hello;
	struct rdma_conn_param param;
	struct rdmaxfer_conn *conn;
	u32 reason = RDMAXFER_REJECT_RESOURCES;
	struct ib_device_attr *a;
	int ret;

	conn = rdmaxfer_cm_fault() ? NULL : rdmaxfer_conn_alloc(l->l_obj.file);
	if (!conn)
		goto reject;
	if (rdmaxfer_hello_parse(conn, ev->param.conn.private_data,
				 ev->param.conn.private_data_len, &reason))
		goto reject_free;

	spin_lock(&l->l_lock);
	if (l->l_closed || l->l_queued + l->l_npending >= l->l_backlog) {
		spin_unlock(&l->l_lock);
		reason = RDMAXFER_REJECT_BACKLOG;
		goto reject_free;
	}
	list_add_tail(&conn->c_entry, &l->l_pending);
	l->l_npending++;
	kref_get(&l->l_obj.ref);
	conn->c_listener = l;
	spin_unlock(&l->l_lock);

	reason = RDMAXFER_REJECT_RESOURCES;
	conn->c_id = id;
	id->context = &conn->c_obj;
	kref_get(&conn->c_obj.ref);			/* the id's context */
	ret = rdmaxfer_conn_setup(conn, id);
	if (ret)
		goto reject_later;
	rdmaxfer_conn_addrs(conn, id);
	rdmaxfer_conn_limits(conn);
	/* its id, for the events of messages that may beat ESTABLISHED */
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdmaxfer_obj_reserve(&conn->c_obj);
	if (ret)
		goto reject_later;

	rdmaxfer_conn_params(conn, &param, &hello);
	rdmaxfer_ka_init(conn, id);
	/* the client's retry count is our QP's: 7 may mean forever */
	conn->c_ka_strict = ev->param.conn.retry_count > RDMAXFER_RETRY_COUNT;
	a = &conn->c_dev->rd_ib->attrs;
	param.responder_resources = min3(a->max_qp_rd_atom, RDMAXFER_RD_ATOM,
					 (int)ev->param.conn.initiator_depth);
	param.initiator_depth = min3(a->max_qp_init_rd_atom, RDMAXFER_RD_ATOM,
				     (int)ev->param.conn.responder_resources);
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdma_accept(id, &param);
	if (ret) {
		rdmaxfer_conn_fail(conn, ret);
		rdmaxfer_obj_put(&conn->c_obj);
		return 0;	/* the teardown work destroys the id */
	}
	rdmaxfer_obj_put(&conn->c_obj);		/* the table holds it */
	return 0;

reject_later:
	/*
	 * Never tear down here: .remove may be tearing this connection down
	 * and waiting in rdma_destroy_id() for this very handler.  The work
	 * item destroys the id.
	 */
	rdmaxfer_reject(id, reason);
	rdmaxfer_conn_fail(conn, -ECONNABORTED);
	rdmaxfer_obj_put(&conn->c_obj);
	return 0;
reject_free:
	rdmaxfer_obj_fini(&conn->c_obj);
	kfree(conn);
reject:
	rdmaxfer_reject(id, reason);
	return 1;
}

static int rdmaxfer_cm_event(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			     struct rdmaxfer_obj *obj)
{
	struct rdmaxfer_listener *l;

	if (obj->type == RDMAXFER_OBJ_CONN)
		return rdmaxfer_conn_cm_event(container_of(obj, struct rdmaxfer_conn, c_obj),
					      id, ev);

	l = container_of(obj, struct rdmaxfer_listener, l_obj);
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return rdmaxfer_cm_connect_request(l, id, ev);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * A listener bound to an address of the removed device.  Returning
		 * 1 makes rdma_cm destroy the id at once, which is only allowed
		 * when nobody else can be using it: while LISTEN is still between
		 * rdma_bind_addr() and its last look at the id, leave the id to
		 * LISTEN, which fails with -ENODEV and destroys it.
		 */
		spin_lock(&l->l_lock);
		if (!l->l_ready) {
			l->l_removed = true;
			spin_unlock(&l->l_lock);
			return 0;
		}
		spin_unlock(&l->l_lock);
		if (xchg(&l->l_id, NULL) == id) {
			wake_up_all(&l->l_obj.file->rf_wait);	/* ACCEPT: ENODEV */
			rdmaxfer_obj_put(&l->l_obj);	/* the id's context */
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* What handlers allocate for a file is charged to the file's opener. */
static int rdmaxfer_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdmaxfer_obj *obj = id->context;
	struct mem_cgroup *old;
	int ret;

	if (!obj)
		return 0;
	old = set_active_memcg(obj->file->rf_memcg);
	ret = rdmaxfer_cm_event(id, ev, obj);
	set_active_memcg(old);
	return ret;
}

/* --- ioctls ----------------------------------------------------------------- */

/**
 * rdmaxfer_listen - RDMAXFER_IOC_LISTEN
 * @rf: the file
 * @arg: struct rdmaxfer_listen
 *
 * The id can meet a DEVICE_REMOVAL as soon as rdma_bind_addr() has tied it
 * to a device, before rdma_listen() has run; see rdmaxfer_cm_event() for
 * how the two agree on who destroys it.
 *
 * Context: process context.
 * Return: 0, -EAFNOSUPPORT, -EADDRINUSE, -EADDRNOTAVAIL, -EMFILE, -ENOMEM,
 * -ENODEV (the device of the address went away meanwhile).
 */
int rdmaxfer_listen(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_listen *cmd = arg;
	struct sockaddr_storage ss;
	struct rdmaxfer_listener *l;
	struct rdma_cm_id *id;
	int ret;

	ret = rdmaxfer_to_sockaddr(&cmd->addr, &ss);
	if (ret)
		return ret;
	l = kzalloc_obj(*l, GFP_KERNEL_ACCOUNT);
	if (!l)
		return -ENOMEM;
	rdmaxfer_obj_init(&l->l_obj, rf, RDMAXFER_OBJ_LISTENER);
	spin_lock_init(&l->l_lock);
	INIT_LIST_HEAD(&l->l_queue);
	INIT_LIST_HEAD(&l->l_pending);
	l->l_backlog = clamp_t(u32, cmd->backlog ?: 16, 1, 256);
	/* published once listening: CLOSE cannot reach a half-built listener */
	ret = rdmaxfer_obj_reserve(&l->l_obj);
	if (ret) {
		rdmaxfer_obj_fini(&l->l_obj);
		kfree(l);
		return ret;
	}

	id = rdma_create_id(rf->rf_net, rdmaxfer_cm_handler, &l->l_obj, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out_remove;
	}
	kref_get(&l->l_obj.ref);			/* the id's context */
	l->l_id = id;
	ret = rdma_set_reuseaddr(id, 1);
	if (!ret)
		ret = rdma_bind_addr(id, (struct sockaddr *)&ss);
	if (!ret) {
		ret = rdma_listen(id, l->l_backlog);
		/* with reuseaddr, rdma_cm reports a port in use this way */
		if (ret == -EADDRNOTAVAIL)
			ret = -EADDRINUSE;
	}
	if (!ret)
		rdmaxfer_from_sockaddr((struct sockaddr *)&id->route.addr.src_addr, &cmd->addr);
	/* from here on, a DEVICE_REMOVAL may destroy the id */
	spin_lock(&l->l_lock);
	if (l->l_removed)
		ret = -ENODEV;	/* rdma_listen() saw the id's new state: -EINVAL */
	else if (!ret)
		l->l_ready = true;
	spin_unlock(&l->l_lock);
	if (ret)
		goto out_remove;
	cmd->listen_id = l->l_obj.id;
	rdmaxfer_obj_publish(&l->l_obj);
	rdmaxfer_obj_put(&l->l_obj);
	return 0;

out_remove:
	rdmaxfer_listener_close(l);
	rdmaxfer_obj_remove(&l->l_obj);		/* only reserved */
	rdmaxfer_obj_put(&l->l_obj);
	return ret;
}

/**
 * rdmaxfer_listener_close - stop listening and drop unaccepted connections
 * @l: the listener; the caller holds a reference
 *
 * Context: process context, no rf_lock held (rdma_destroy_id() waits for
 * the handler, which may take it).
 */
void rdmaxfer_listener_close(struct rdmaxfer_listener *l)
{
	struct rdmaxfer_conn *conn;
	struct rdma_cm_id *id;

	might_sleep();
	lockdep_assert_not_held(&l->l_obj.file->rf_lock);
	spin_lock(&l->l_lock);
	l->l_closed = true;
	spin_unlock(&l->l_lock);
	wake_up_all(&l->l_obj.file->rf_wait);
	id = xchg(&l->l_id, NULL);
	if (id) {
		rdma_destroy_id(id);
		rdmaxfer_obj_put(&l->l_obj);		/* the id's context */
	}
	for (;;) {
		spin_lock(&l->l_lock);
		conn = list_first_entry_or_null(&l->l_queue, struct rdmaxfer_conn, c_entry) ?:
		       list_first_entry_or_null(&l->l_pending, struct rdmaxfer_conn, c_entry);
		if (conn)
			kref_get(&conn->c_obj.ref);
		spin_unlock(&l->l_lock);
		if (!conn)
			break;
		rdmaxfer_conn_teardown(conn, -ECONNABORTED);	/* unqueues it */
		rdmaxfer_obj_put(&conn->c_obj);
	}
}

/**
 * rdmaxfer_listener_release - free a listener whose last reference is gone
 * @l: the listener
 */
void rdmaxfer_listener_release(struct rdmaxfer_listener *l)
{
	WARN_ON_ONCE(l->l_id);
	kfree(l);
}

/* Take the first queued connection that is still ours to hand out. */
static struct rdmaxfer_conn *rdmaxfer_accept_one(struct rdmaxfer_listener *l)
{
	struct rdmaxfer_conn *conn, *found = NULL;
	struct rdmaxfer_listener *owner;

	spin_lock(&l->l_lock);
	conn = list_first_entry_or_null(&l->l_queue, struct rdmaxfer_conn, c_entry);
	if (conn) {
		list_del_init(&conn->c_entry);
		l->l_queued--;
		kref_get(&conn->c_obj.ref);
	}
	spin_unlock(&l->l_lock);
	if (!conn)
		return NULL;
	spin_lock_bh(&conn->c_lock);
	owner = conn->c_listener;
	conn->c_listener = NULL;
	spin_unlock_bh(&conn->c_lock);
	if (owner) {
		rdmaxfer_obj_put(&owner->l_obj);
		found = conn;
	} else {
		rdmaxfer_obj_put(&conn->c_obj);	/* being torn down: skip it */
	}
	return found;
}

/* May ACCEPT find something (or give up)?  Does not sleep. */
static bool rdmaxfer_accept_ready(struct rdmaxfer_listener *l)
{
	return !list_empty_careful(&l->l_queue) || READ_ONCE(l->l_closed) || !READ_ONCE(l->l_id);
}

/**
 * rdmaxfer_accept - RDMAXFER_IOC_ACCEPT
 * @rf: the file
 * @arg: struct rdmaxfer_accept
 *
 * Context: process context, may sleep.
 * Return: 0, -ENOENT, -EAGAIN, -ETIMEDOUT, -EINTR, -EINVAL (the listener
 * was closed meanwhile), -ENODEV (its device was removed).
 */
int rdmaxfer_accept(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_accept *cmd = arg;
	struct rdmaxfer_conn *conn = NULL;
	struct rdmaxfer_listener *l;
	long ret = 0, tmo = 0;

	l = rdmaxfer_obj_get(rf, cmd->listen_id, RDMAXFER_OBJ_LISTENER);
	if (!l)
		return -ENOENT;
	if (cmd->timeout_ns)
		tmo = cmd->timeout_ns < 0 ? MAX_SCHEDULE_TIMEOUT :
		      max_t(long, 1, nsecs_to_jiffies(cmd->timeout_ns));
	for (;;) {
		conn = rdmaxfer_accept_one(l);
		if (conn || READ_ONCE(l->l_closed) || !READ_ONCE(l->l_id) || !tmo)
			break;
		/*
		 * Not rdmaxfer_accept_one() as the condition: it drops
		 * references, which may sleep, and a wait condition runs with
		 * the task no longer TASK_RUNNING.
		 */
		ret = wait_event_interruptible_timeout(rf->rf_wait,
						       rdmaxfer_accept_ready(l), tmo);
		if (ret < 0) {
			ret = -EINTR;
			break;
		}
		tmo = ret;	/* 0: timed out, one last look */
	}
	if (!conn && ret >= 0) {
		if (READ_ONCE(l->l_closed))
			ret = -EINVAL;
		else if (!READ_ONCE(l->l_id))
			ret = -ENODEV;
		else
			ret = cmd->timeout_ns ? -ETIMEDOUT : -EAGAIN;
	}
	rdmaxfer_obj_put(&l->l_obj);
	if (!conn)
		return ret;
	cmd->conn_id = conn->c_obj.id;
	cmd->peer = conn->c_peer;
	rdmaxfer_obj_put(&conn->c_obj);
	return 0;
}

/**
 * rdmaxfer_connect - RDMAXFER_IOC_CONNECT
 * @rf: the file
 * @arg: struct rdmaxfer_connect
 *
 * Context: process context, sleeps interruptibly until the connection is
 * established, refused, or the timeout passes.
 * A peer at the all-zero address is refused: rdma_cm would take it for a
 * loopback to the first device and tie the id to it inside
 * rdma_resolve_addr(), where a DEVICE_REMOVAL could destroy the id under
 * that call.
 *
 * Return: 0, -ECONNREFUSED (reject_reason is set), -EHOSTUNREACH,
 * -ENETUNREACH, -ETIMEDOUT, -EINTR, -ENODEV, -EMFILE, -ENOMEM, -EINVAL (the
 * all-zero address).
 */
int rdmaxfer_connect(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_connect *cmd = arg;
	struct rdmaxfer_addr addr = cmd->addr;
	struct sockaddr_storage ss;
	struct rdmaxfer_conn *conn;
	struct rdma_cm_id *id;
	unsigned long tmo;
	long left;
	int ret;

	if (!addr.port)
		addr.port = RDMAXFER_DEFAULT_PORT;
	ret = rdmaxfer_to_sockaddr(&addr, &ss);
	if (ret)
		return ret;
	if (!memchr_inv(addr.addr, 0, addr.family == AF_INET ? 4 : 16))
		return -EINVAL;
	tmo = cmd->timeout_ns > 0 ? max_t(unsigned long, 1, nsecs_to_jiffies(cmd->timeout_ns)) :
	      msecs_to_jiffies(RDMAXFER_CONNECT_TIMEOUT_MS);

	conn = rdmaxfer_conn_alloc(rf);
	if (!conn)
		return -ENOMEM;
	/* reserved now (events carry it), published once established */
	ret = rdmaxfer_obj_reserve(&conn->c_obj);
	if (ret) {
		rdmaxfer_obj_fini(&conn->c_obj);
		kfree(conn);
		return ret;
	}
	id = rdma_create_id(rf->rf_net, rdmaxfer_cm_handler, &conn->c_obj, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto fail;
	}
	kref_get(&conn->c_obj.ref);			/* the id's context */
	conn->c_id = id;
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss,
				min_t(unsigned int, jiffies_to_msecs(tmo), RDMAXFER_RESOLVE_MS));
	if (ret)
		goto fail;

	left = wait_for_completion_interruptible_timeout(&conn->c_established, tmo);
	spin_lock_bh(&conn->c_lock);
	if (left < 0)
		ret = -EINTR;
	else if (conn->c_state == RDMAXFER_CS_ESTABLISHED)
		ret = 0;
	else
		ret = READ_ONCE(conn->c_error) ?: -ETIMEDOUT;
	spin_unlock_bh(&conn->c_lock);
	/* established, but the peer closed before we got here */
	if (ret == -ESHUTDOWN)
		ret = -ECONNRESET;
	if (ret)
		goto fail;
	cmd->conn_id = conn->c_obj.id;
	rdmaxfer_obj_publish(&conn->c_obj);
	rdmaxfer_obj_put(&conn->c_obj);
	return 0;

fail:
	cmd->reject_reason = ret == -ECONNREFUSED ? conn->c_reject_reason : 0;
	rdmaxfer_conn_teardown(conn, -ECANCELED);
	rdmaxfer_obj_remove(&conn->c_obj);		/* only reserved */
	rdmaxfer_obj_put(&conn->c_obj);
	return ret;
}

/**
 * rdmaxfer_close - RDMAXFER_IOC_CLOSE
 * @rf: the file
 * @arg: struct rdmaxfer_close
 *
 * Context: process context, may sleep (drains the connection).
 * Return: 0, -ENOENT (not a listener or connection of this file), -EINVAL.
 */
int rdmaxfer_close(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_close *cmd = arg;
	struct rdmaxfer_obj *obj;

	if (cmd->__reserved)
		return -EINVAL;
	obj = rdmaxfer_obj_get(rf, cmd->id, RDMAXFER_OBJ_CONN) ?:
	      rdmaxfer_obj_get(rf, cmd->id, RDMAXFER_OBJ_LISTENER);
	if (!obj)
		return -ENOENT;
	if (!rdmaxfer_obj_remove(obj)) {
		rdmaxfer_obj_put(obj);
		return -ENOENT;
	}
	rdmaxfer_obj_put(obj);				/* the table's */
	if (obj->type == RDMAXFER_OBJ_CONN)
		rdmaxfer_conn_teardown(container_of(obj, struct rdmaxfer_conn, c_obj),
				       -ECANCELED);
	else
		rdmaxfer_listener_close(container_of(obj, struct rdmaxfer_listener, l_obj));
	rdmaxfer_obj_put(obj);
	return 0;
}

/**
 * rdmaxfer_query_conn - RDMAXFER_IOC_QUERY_CONN
 * @rf: the file
 * @arg: struct rdmaxfer_conn_info
 *
 * Context: process context.
 * Return: 0, -ENOENT.
 */
int rdmaxfer_query_conn(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_conn_info *cmd = arg;
	struct rdmaxfer_conn_info out = {
		.size = cmd->size,
		.flags = cmd->flags,
		.conn_id = cmd->conn_id,
	};
	struct rdmaxfer_conn *conn;

	conn = rdmaxfer_obj_get(rf, cmd->conn_id, RDMAXFER_OBJ_CONN);
	if (!conn)
		return -ENOENT;
	mutex_lock(&conn->c_teardown_lock);
	out.state = READ_ONCE(conn->c_state);
	out.local = conn->c_local;
	out.peer = conn->c_peer;
	if (conn->c_dev)
		out.dev_index = conn->c_dev->rd_index;
	out.port = conn->c_port;
	out.queue_depth = RDMAXFER_RW_CTXS;
	out.max_send_size = min_t(u32, RDMAXFER_MAX_SEND,
				  conn->c_peer_ctrl_size - sizeof(struct rdmaxfer_msg_hdr));
	out.max_op_size = conn->c_max_op;
	if (conn->c_dev)
		out.max_window_size = (u64)RDMAXFER_MAX_WIN_SEGS *
				      rdmaxfer_seg_pages(conn->c_dev->rd_ib) * PAGE_SIZE -
				      PAGE_SIZE;
	mutex_unlock(&conn->c_teardown_lock);
	rdmaxfer_obj_put(&conn->c_obj);
	*cmd = out;
	return 0;
}
