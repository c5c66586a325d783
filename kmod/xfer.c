// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - operations: SUBMIT and completions.
 *
 * SUBMIT works in two phases.  First every operation of the batch is
 * checked and turned into a struct rdmaxfer_req, taking references on its
 * connection and buffer and room in the file's completion queue: an id
 * that does not exist, a range outside the buffer or the peer's window (all
 * additions overflow-checked), missing access, a misaligned atomic, fails
 * the whole batch before anything is posted.  Then the requests are posted
 * in order; a signal or a connection going down stops the batch there, and
 * SUBMIT reports how many were posted.
 *
 * WRITE, READ and WRITE_IMM are split into pieces here, at the peer's
 * segment boundaries (one MR each, see window.c) and at the largest
 * message both ports accept, and go to the rdma_rw engine (rw.c), which
 * chains the pieces of consecutive operations and posts them with one
 * doorbell.  SEND copies the bytes into a control buffer (so the peer
 * needs no posted user buffer and can never hit RNR) until the peer posts
 * receive slots; then it goes zero-copy into the peer's next slot it fits
 * (slot.c).  RECV posts a slot (slot.c).  CAS and FADD are atomic.c's.
 *
 * Bursts.  Zero-copy SENDs are posted one by one, each placed in the peer's
 * slots under c_lock with its post (credit.c), so they cannot join a chain;
 * atomics are posted one by one too, each signaled for its result.
 * Posting from process context, with bottom halves on, lets a software
 * device process each one on its own: Soft-RoCE schedules its requester
 * tasklet at every kernel post, and it runs as soon as bottom halves come
 * back on, for the one WR there (and then its completion, through the
 * CQ's own softirq passes).  So up to RDMAXFER_BURST consecutive zero-copy
 * SENDs and atomics of a SUBMIT on one connection that can go at once are
 * posted in one section with bottom halves off (rdmaxfer_burst_post()); the
 * requester then sends them in one pass.  The order, the credits and the
 * slot placement are those of posting them one at a time; one that would
 * have to wait ends the burst and takes the usual path.  An adapter sees the
 * same posts, only closer together.
 *
 * Every posted operation ends in exactly one completion event, also when
 * its connection is torn down (the drain flushes it: ECANCELED, or ENODEV
 * if the device went away).  The completion drops the request's references
 * before it is queued, so a completion never keeps a buffer pinned.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rdmaxfer.h"
#include "trace.h"

/*
 * SENDs on @conn go zero-copy, from the buffer into a slot of the peer,
 * once the peer has announced a slot (never undone); before, they are
 * copied through a control buffer.
 */
static bool rdmaxfer_send_is_zc(const struct rdmaxfer_conn *conn)
{
	return READ_ONCE(conn->c_lg.lg_peer_slots);
}

/* a RECV is an echo slot, a sink slot, or neither */
#define RDMAXFER_RECV_FLAGS	(RDMAXFER_RECV_ECHO | RDMAXFER_RECV_SINK)

/* SUBMITs of up to this many operations keep their request array on the stack */
#define RDMAXFER_SUBMIT_ONSTACK	8

/* SENDs and atomics posted in one section with bottom halves off, at most */
#define RDMAXFER_BURST	16

/**
 * rdmaxfer_wc_errno - what a work completion status means to the user
 * @conn: the connection of the work request
 * @st: the status
 *
 * Transport retries exhausted is a peer that stopped answering (its host
 * died, or the link is cut for longer than the retries last): -ETIMEDOUT.
 * A local failure after our own teardown began (CLOSE, the file's release,
 * the keepalive's verdict) is that teardown's doing: -ECANCELED, as for a
 * flush.
 *
 * Context: any.
 * Return: 0 or a negative errno.
 */
int rdmaxfer_wc_errno(struct rdmaxfer_conn *conn, enum ib_wc_status st)
{
	switch (st) {
	case IB_WC_SUCCESS:
		return 0;
	case IB_WC_WR_FLUSH_ERR:
		return READ_ONCE(conn->c_error) == -ENODEV ? -ENODEV : -ECANCELED;
	case IB_WC_REM_ACCESS_ERR:
	case IB_WC_REM_INV_REQ_ERR:
	case IB_WC_REM_OP_ERR:
		return -EREMOTEIO;
	case IB_WC_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	case IB_WC_RNR_RETRY_EXC_ERR:
		return -ECONNRESET;
	default:
		/*
		 * The operation a transport was sending when our own teardown
		 * cut its connection (a close, a dead peer, a removed device)
		 * fails as such (siw: IB_WC_LOC_QP_OP_ERR once the socket is
		 * shut down): what a flush would say; the reason comes with the
		 * DISCONNECTED event.
		 */
		if (READ_ONCE(conn->c_state) == RDMAXFER_CS_DOWN && READ_ONCE(conn->c_error))
			return READ_ONCE(conn->c_error) == -ENODEV ? -ENODEV : -ECANCELED;
		return -EIO;
	}
}

static void rdmaxfer_req_free_ev(struct rdmaxfer_event *ev)
{
	kfree(container_of(ev, struct rdmaxfer_req, r_event));
}

/*
 * Drop what a request holds; the memory is freed separately.  Called from
 * the send CQ's handlers (softirq): the last reference on the connection or
 * the buffer is released by a work item.
 */
static void rdmaxfer_req_unref(struct rdmaxfer_req *req)
{
	if (req->r_atomic_dev) {
		ib_dma_unmap_single(req->r_atomic_dev->rd_ib, req->r_atomic_dma,
				    sizeof(u64), DMA_FROM_DEVICE);
		rdmaxfer_device_put(req->r_atomic_dev);
		req->r_atomic_dev = NULL;
	}
	kfree(req->r_atomic);
	req->r_atomic = NULL;
	if (req->r_buf)
		rdmaxfer_obj_put_atomic(&req->r_buf->b_obj);
	rdmaxfer_obj_put_atomic(&req->r_conn->c_obj);
}

/* Deliver the one completion of an operation, or add it to @evs. */
static void rdmaxfer_req_complete(struct rdmaxfer_req *req, struct list_head *evs)
{
	struct rdmaxfer_completion *c = &req->r_event.ev;
	struct rdmaxfer_file *rf = req->r_file;
	u16 op = c->opcode;

	c->status = req->r_status;
	c->wc_status = req->r_wc_status;
	if (c->status) {
		c->bytes = 0;
		rdmaxfer_count(rf, RDMAXFER_C_ERRORS + op, 1);
	} else {
		if (req->r_atomic_dev) {
			ib_dma_sync_single_for_cpu(req->r_atomic_dev->rd_ib, req->r_atomic_dma,
						   sizeof(u64), DMA_FROM_DEVICE);
			c->value = *req->r_atomic;
		}
		rdmaxfer_count(rf, RDMAXFER_C_OPS + op, 1);
		rdmaxfer_count(rf, RDMAXFER_C_BYTES + op, c->bytes);
		atomic64_add(c->bytes, &req->r_conn->c_bytes);
	}
	trace_rdmaxfer_op_done(rf, c);
	rdmaxfer_req_unref(req);
	if (evs)
		list_add_tail(&req->r_event.ev_entry, evs);
	else
		rdmaxfer_queue_event(rf, &req->r_event);
}

/*
 * One WR, piece or message of a request finished with @err / @wc_status;
 * the last one completes it (its event goes to @evs if not NULL).
 */
void __rdmaxfer_req_part_done(struct rdmaxfer_req *req, int err, u32 wc_status,
			      struct list_head *evs)
{
	/* the first error wins; a completion handler and SUBMIT may race here */
	if (err && !cmpxchg(&req->r_status, 0, err))
		WRITE_ONCE(req->r_wc_status, wc_status);
	if (atomic_dec_and_test(&req->r_pending))
		rdmaxfer_req_complete(req, evs);
}

void rdmaxfer_req_part_done(struct rdmaxfer_req *req, int err, u32 wc_status)
{
	__rdmaxfer_req_part_done(req, err, wc_status, NULL);
}

/**
 * rdmaxfer_req_wc - account one work completion of a request
 * @req: the request
 * @status: the completion status
 *
 * Context: any context that may take a spinlock (completion handlers).
 */
void rdmaxfer_req_wc(struct rdmaxfer_req *req, enum ib_wc_status status)
{
	rdmaxfer_req_part_done(req, rdmaxfer_wc_errno(req->r_conn, status), status);
}

/**
 * rdmaxfer_err_done - completion of a WR that has no other cqe
 * @cq: the send CQ
 * @wc: the work completion; such WRs are unsignaled, so only an error or
 *	a flush completes them
 *
 * Context: send CQ completion handler (softirq).
 */
void rdmaxfer_err_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_conn *conn = container_of(wc->wr_cqe, struct rdmaxfer_conn,
						  c_sq.sq_err_cqe);

	rdmaxfer_conn_wc_failed(conn, wc);
}

/* Is [off, off + len) inside [0, size)? */
static bool rdmaxfer_range_ok(u64 off, u64 len, u64 size)
{
	u64 end;

	return len && !check_add_overflow(off, len, &end) && end <= size;
}

/*
 * Split [roff, roff + len) of the peer's window @pw into pieces; with
 * @req NULL only count them.
 */
static u32 rdmaxfer_split(const struct rdmaxfer_peer_win *pw, u64 roff, u64 len, u64 loff,
			  u32 max_piece, struct rdmaxfer_req *req)
{
	u64 seg_start = 0, pos = 0;
	u32 i = 0, n = 0;

	while (seg_start + pw->pw_segs[i].length <= roff) {
		seg_start += pw->pw_segs[i].length;
		i++;
	}
	while (pos < len) {
		u64 in_seg = roff + pos - seg_start;
		u32 chunk = min3(len - pos, pw->pw_segs[i].length - in_seg, (u64)max_piece);

		if (req) {
			struct rdmaxfer_piece *p = &req->r_pieces[n];

			p->p_req = req;
			p->p_cqe.done = rdmaxfer_piece_done;
			p->p_raddr = pw->pw_segs[i].addr + in_seg;
			p->p_rkey = pw->pw_segs[i].rkey;
			p->p_len = chunk;
			p->p_loff = loff + pos;
		}
		n++;
		pos += chunk;
		if (in_seg + chunk == pw->pw_segs[i].length) {
			seg_start += pw->pw_segs[i].length;
			i++;
		}
	}
	return n;
}

/* The access @opcode needs on the local buffer and on the peer's window. */
static int rdmaxfer_op_access(u16 opcode, u32 *need_buf, u32 *need_win)
{
	*need_buf = 0;
	*need_win = 0;
	switch (opcode) {
	case RDMAXFER_OP_WRITE:
	case RDMAXFER_OP_WRITE_IMM:
		*need_buf = RDMAXFER_BUF_READ;
		*need_win = RDMAXFER_REMOTE_WRITE;
		return 0;
	case RDMAXFER_OP_READ:
		*need_buf = RDMAXFER_BUF_WRITE;
		*need_win = RDMAXFER_REMOTE_READ;
		return 0;
	case RDMAXFER_OP_SEND:
		*need_buf = RDMAXFER_BUF_READ;
		return 0;
	case RDMAXFER_OP_RECV:
		*need_buf = RDMAXFER_BUF_WRITE;
		return 0;
	case RDMAXFER_OP_CAS:
	case RDMAXFER_OP_FADD:
		*need_win = RDMAXFER_REMOTE_ATOMIC;
		return 0;
	}
	return -EINVAL;
}

/**
 * rdmaxfer_op_pieces - check an operation's length, count its pieces
 * @conn: the operation's connection
 * @op: the operation (opcode, ranges and access already checked)
 * @buf: its local buffer (SEND, RECV: the SGEs it takes are counted)
 * @pw: the peer's window of a WRITE, WRITE_IMM or READ
 * @max_piece: the largest piece, in bytes
 * @npieces: set to the number of rdma_rw pieces, 0 for SEND and atomics
 *
 * Context: process; c_peer_win_lock held (it keeps @pw alive).
 * Return: 0, -EINVAL if the length is more than the opcode allows, or
 * -EOPNOTSUPP (RECV: the peer does not speak receive slots; CAS, FADD: our
 * device has no atomics).
 */
static int rdmaxfer_op_pieces(struct rdmaxfer_conn *conn, const struct rdmaxfer_op *op,
			      const struct rdmaxfer_buf *buf, const struct rdmaxfer_peer_win *pw,
			      u32 max_piece, u32 *npieces)
{
	lockdep_assert_held(&conn->c_peer_win_lock);
	*npieces = 0;
	switch (op->opcode) {
	case RDMAXFER_OP_SEND:
		/* a copied SEND must fit one of the peer's control buffers */
		if (!rdmaxfer_send_is_zc(conn) &&
		    op->length > min_t(u32, RDMAXFER_MAX_SEND, conn->c_peer_ctrl_size -
				       sizeof(struct rdmaxfer_msg_hdr)))
			return -EINVAL;
		fallthrough;
	case RDMAXFER_OP_RECV:
		if (op->opcode == RDMAXFER_OP_RECV &&
		    !(conn->c_peer_features & RDMAXFER_HELLO_SLOTS))
			return -EOPNOTSUPP;
		/* a message and its slot header (hdr.c) must fit both ports */
		if (op->length > rdmaxfer_lmr_max_msg(conn) ||
		    (op->opcode == RDMAXFER_OP_RECV && op->length < RDMAXFER_MIN_SLOT))
			return -EINVAL;
		if (rdmaxfer_lmr_nsge(conn, buf, op->buf_offset, op->length) > conn->c_max_sge)
			return -EINVAL;
		return 0;
	case RDMAXFER_OP_CAS:
	case RDMAXFER_OP_FADD:
		/*
		 * Never post what the device refuses: siw (v6.1) leaves a
		 * refused WR half-written in its send queue and later
		 * completes it as flushed, after SUBMIT freed it.
		 */
		if (!conn->c_atomics)
			return -EOPNOTSUPP;
		return op->length == sizeof(u64) ? 0 : -EINVAL;
	}
	if (op->length > conn->c_max_op)
		return -EINVAL;
	*npieces = rdmaxfer_split(pw, op->remote_offset, op->length, op->buf_offset,
				  max_piece, NULL);
	return *npieces > RDMAXFER_RW_CTXS / 2 ? -EINVAL : 0;
}

/* Allocate a request for @op of @npieces pieces; it takes over the references. */
static struct rdmaxfer_req *rdmaxfer_req_alloc(struct rdmaxfer_file *rf,
					       struct rdmaxfer_conn *conn,
					       struct rdmaxfer_buf *buf,
					       const struct rdmaxfer_op *op, u32 npieces)
{
	struct rdmaxfer_req *req;

	req = kzalloc(struct_size(req, r_pieces, npieces), GFP_KERNEL_ACCOUNT);
	if (!req)
		return NULL;
	req->r_file = rf;
	req->r_conn = conn;
	req->r_buf = buf;
	req->r_npieces = npieces;
	req->r_dir = op->opcode == RDMAXFER_OP_READ ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	req->r_remote_offset = op->remote_offset;
	req->r_buf_offset = op->buf_offset;
	INIT_LIST_HEAD(&req->r_held_entry);
	req->r_echo = op->flags & RDMAXFER_RECV_ECHO;
	req->r_sink = op->flags & RDMAXFER_RECV_SINK;
	req->r_sink_imm = op->imm_data;
	req->r_event.ev_free = rdmaxfer_req_free_ev;
	req->r_event.ev.user_data = op->user_data;
	req->r_event.ev.conn_id = op->conn_id;
	req->r_event.ev.opcode = op->opcode;
	req->r_event.ev.bytes = op->length;
	req->r_event.ev.window_id = op->window_id;
	req->r_event.ev.imm_data = op->imm_data;
	return req;
}

/**
 * rdmaxfer_req_prepare - check one operation and build its request
 * @rf: the file of the SUBMIT
 * @op: the operation, as the user gave it
 * @out: set to the request on success
 *
 * Every id, range (overflow-checked), access and length is checked here;
 * nothing is posted.  The request holds references on its connection and,
 * except for atomics, its buffer.
 *
 * Context: process; takes c_peer_win_lock.
 * Return: 0, -EINVAL, -ENOENT (no such connection, buffer or peer window),
 * -ENOTCONN, -ENOMEM.
 */
static int rdmaxfer_req_prepare(struct rdmaxfer_file *rf, const struct rdmaxfer_op *op,
				struct rdmaxfer_req **out)
{
	bool atomic = op->opcode == RDMAXFER_OP_CAS || op->opcode == RDMAXFER_OP_FADD;
	const struct rdmaxfer_peer_win *pw = NULL;
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_buf *buf = NULL;
	struct rdmaxfer_conn *conn;
	u32 need_buf, need_win, npieces, max_piece;
	int ret;

	if ((op->flags & ~(op->opcode == RDMAXFER_OP_RECV ? RDMAXFER_RECV_FLAGS : 0)) ||
	    (op->flags & RDMAXFER_RECV_FLAGS) == RDMAXFER_RECV_FLAGS || op->__reserved)
		return -EINVAL;
	ret = rdmaxfer_op_access(op->opcode, &need_buf, &need_win);
	if (ret)
		return ret;

	conn = rdmaxfer_obj_get(rf, op->conn_id, RDMAXFER_OBJ_CONN);
	if (!conn)
		return -ENOENT;
	ret = -ENOTCONN;
	if (READ_ONCE(conn->c_state) != RDMAXFER_CS_ESTABLISHED)
		goto out_conn;
	if (need_buf) {
		ret = -ENOENT;
		buf = rdmaxfer_obj_get(rf, op->buf_id, RDMAXFER_OBJ_BUF);
		if (!buf)
			goto out_conn;
		ret = -EINVAL;
		if ((buf->b_access & need_buf) != need_buf ||
		    !rdmaxfer_range_ok(op->buf_offset, op->length, buf->b_length))
			goto out_buf;
	}

	max_piece = min_t(u64, conn->c_peer_seg_size, conn->c_max_msg);
	if (op->opcode == RDMAXFER_OP_READ && conn->c_read_piece)
		max_piece = min(max_piece, conn->c_read_piece);
	mutex_lock(&conn->c_peer_win_lock);
	if (need_win) {
		ret = -ENOENT;
		pw = xa_load(&conn->c_peer_wins, op->window_id);
		if (!pw)
			goto out_unlock;
		ret = -EINVAL;
		if ((pw->pw_access & need_win) != need_win ||
		    !rdmaxfer_range_ok(op->remote_offset, op->length, pw->pw_length))
			goto out_unlock;
	}
	ret = rdmaxfer_op_pieces(conn, op, buf, pw, max_piece, &npieces);
	if (ret)
		goto out_unlock;

	ret = -ENOMEM;
	req = rdmaxfer_req_alloc(rf, conn, buf, op, npieces);
	if (!req)
		goto out_unlock;
	if (npieces)
		rdmaxfer_split(pw, op->remote_offset, op->length, op->buf_offset, max_piece, req);
	if (atomic) {
		ret = rdmaxfer_req_atomic_init(req, op, pw);
		if (ret)
			goto out_req;
	}
	mutex_unlock(&conn->c_peer_win_lock);
	*out = req;
	return 0;

out_req:
	kfree(req);
out_unlock:
	mutex_unlock(&conn->c_peer_win_lock);
out_buf:
	if (buf)
		rdmaxfer_obj_put(&buf->b_obj);
out_conn:
	rdmaxfer_obj_put(&conn->c_obj);
	return ret;
}

/* Free a request that was never posted. */
static void rdmaxfer_req_discard(struct rdmaxfer_req *req)
{
	rdmaxfer_req_unref(req);
	kfree(req);
}

/**
 * rdmaxfer_buf_copy - copy from a registered buffer
 * @buf: the buffer
 * @off: where in it
 * @len: bytes; [@off, @off + @len) is inside the buffer
 * @dst: where to
 *
 * Context: any (the pages are pinned; kmap_local).
 */
void rdmaxfer_buf_copy(struct rdmaxfer_buf *buf, u64 off, void *dst, u32 len)
{
	u64 pos = offset_in_page(buf->b_addr) + off;

	while (len) {
		u32 in = offset_in_page(pos);
		u32 n = min_t(u32, len, PAGE_SIZE - in);

		memcpy_from_page(dst, buf->b_pages[pos >> PAGE_SHIFT], in, n);
		dst += n;
		pos += n;
		len -= n;
	}
}

static int rdmaxfer_req_send(struct rdmaxfer_req *req)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	struct rdmaxfer_ctrl *ct;
	u32 len = req->r_event.ev.bytes;

	if (rdmaxfer_send_is_zc(conn))
		return rdmaxfer_req_send_zc(req);

	/* data may not take the credits control messages need */
	ct = rdmaxfer_ctrl_get(conn, MAX_SCHEDULE_TIMEOUT, RDMAXFER_DATA_RESERVE,
			       true);
	if (IS_ERR(ct))
		return PTR_ERR(ct);
	rdmaxfer_buf_copy(req->r_buf, req->r_buf_offset,
			  ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr), len);
	atomic_set(&req->r_pending, 1);
	ct->ct_req = req;
	return rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_DATA, len);
}

/*
 * Post one prepared request, chaining WRITE/READ pieces in @ch.
 * 0: it will complete; < 0: it was not posted.
 */
static int rdmaxfer_req_issue(struct rdmaxfer_req *req, struct rdmaxfer_chain *ch)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	int ret;

	if (ch->conn != conn) {
		rdmaxfer_chain_end(ch);
		ret = rdmaxfer_conn_enter(conn);
		if (ret)
			return ret;
		ch->conn = conn;
	}
	trace_rdmaxfer_op_post(req->r_file, &req->r_event.ev);
	if (ch->slots && req->r_event.ev.opcode != RDMAXFER_OP_RECV) {
		/* the slots before this, announced if due before it may wait */
		rdmaxfer_credit_maybe_send(conn);
		ch->slots = false;
	}
	switch (req->r_event.ev.opcode) {
	case RDMAXFER_OP_RECV:
		/*
		 * Its buffer's first RECV registers it, on an empty send queue
		 * (rdmaxfer_post_reg()): what is chained must not wait for that.
		 */
		ret = rdmaxfer_chain_post(ch);
		if (ret)
			return ret;
		ch->slots = true;
		return rdmaxfer_req_recv(req);
	case RDMAXFER_OP_SEND:
	case RDMAXFER_OP_CAS:
	case RDMAXFER_OP_FADD:
		/* in order, after what is chained (and before sleeping) */
		ret = rdmaxfer_chain_post(ch);
		if (ret)
			return ret;
		if (req->r_event.ev.opcode == RDMAXFER_OP_SEND)
			return rdmaxfer_req_send(req);
		return rdmaxfer_req_atomic(req);
	default:
		return rdmaxfer_req_rw(req, ch);
	}
}

/* May @req join a burst on @conn: a zero-copy SEND (the peer posts slots), CAS or FADD? */
static bool rdmaxfer_req_bursts_on(const struct rdmaxfer_req *req,
				   const struct rdmaxfer_conn *conn)
{
	if (req->r_conn != conn)
		return false;
	switch (req->r_event.ev.opcode) {
	case RDMAXFER_OP_SEND:
		return rdmaxfer_send_is_zc(conn);
	case RDMAXFER_OP_CAS:
	case RDMAXFER_OP_FADD:
		return true;
	default:
		return false;
	}
}

/* A burst's @req made ready to post: a SEND's SGEs, an atomic's result buffer. */
static int rdmaxfer_burst_prepare(struct rdmaxfer_req *req)
{
	if (req->r_event.ev.opcode != RDMAXFER_OP_SEND)
		return rdmaxfer_atomic_map(req);
	return rdmaxfer_req_lmr_sges(req);
}

/* Post a burst's @req, made ready; its room is taken, bottom halves are off. */
static int rdmaxfer_burst_post_one(struct rdmaxfer_req *req)
{
	struct ib_send_wr wr;

	if (req->r_event.ev.opcode != RDMAXFER_OP_SEND)
		return rdmaxfer_atomic_post(req, true);
	rdmaxfer_send_zc_wr(req, &wr);
	return rdmaxfer_send_zc_post(req, &wr, true);
}

/**
 * rdmaxfer_burst_post - post consecutive SENDs and atomics with bottom halves off
 * @reqs: the batch's requests from the next one to post
 * @n: how many of them there are
 * @ch: the SUBMIT's chain
 *
 * See "Bursts" above.  A burst needs at least two zero-copy SENDs or atomics
 * on the chain's connection, an empty chain and no slots posted just
 * before (rdmaxfer_req_issue() announces those first).  They are made
 * ready (a SEND's registration looked up or made, an atomic's result
 * mapped) and their send-queue room taken first, without waiting for
 * room; then they are posted, in order, in one section with bottom halves
 * off.  The burst ends at the first one that cannot be posted at once (no
 * room, no credit or slot of the peer, an error): that one takes the
 * usual path, which waits or reports the error.
 *
 * Context: process context, may sleep (a buffer's first registration on
 * the connection); rdmaxfer_conn_enter() held on @ch->conn.
 * Return: how many of @reqs were posted, from the first; 0 if no burst.
 */
static u32 rdmaxfer_burst_post(struct rdmaxfer_req **reqs, u32 n, struct rdmaxfer_chain *ch)
{
	struct rdmaxfer_conn *conn = ch->conn;
	u32 i, k, posted;

	if (!conn || ch->npieces || ch->slots)
		return 0;
	n = min_t(u32, n, RDMAXFER_BURST);
	for (k = 0; k < n && rdmaxfer_req_bursts_on(reqs[k], conn); k++)
		;
	if (k < 2)
		return 0;
	/* registrations before room: a first one waits for an empty send queue */
	for (i = 0; i < k && !rdmaxfer_burst_prepare(reqs[i]); i++)
		;
	k = rdmaxfer_wr_take_upto(conn, i);
	local_bh_disable();
	for (posted = 0; posted < k && !rdmaxfer_burst_post_one(reqs[posted]); posted++)
		;
	local_bh_enable();
	if (posted < k)
		rdmaxfer_wr_release(conn, k - posted, 0);
	return posted;
}

/**
 * rdmaxfer_ioctl_submit - RDMAXFER_IOC_SUBMIT
 * @rf: the file
 * @arg: struct rdmaxfer_submit
 *
 * Context: process context; sleeps (interruptibly) while a send queue is
 * full or credits are short.
 * Return: 0 with @count set to the operations posted (all of them unless a
 * signal or a connection failure stopped the batch).  Each posted one
 * completes exactly once, maybe with an error: also one that never reached
 * the wire because the connection went down before its chain was posted
 * (-ECANCELED, as flushed).  Or an error and nothing posted:
 * -EINVAL, -ENOENT, -ENOTCONN (checked before posting), -EAGAIN (the
 * file's completion queue is full), -EFAULT, -EINTR, -ENOMEM.
 */
int rdmaxfer_ioctl_submit(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_submit *cmd = arg;
	const void __user *uops = u64_to_user_ptr(cmd->ops);
	struct rdmaxfer_chain ch = { .pieces = LIST_HEAD_INIT(ch.pieces) };
	/* small batches (a ping's one operation) need no allocation for this */
	struct rdmaxfer_req *few[RDMAXFER_SUBMIT_ONSTACK] = {}, **reqs = few;
	struct rdmaxfer_op op;
	u32 i, k, n = 0, posted = 0;
	int ret = 0;

	if (!cmd->count || cmd->count > RDMAXFER_MAX_BATCH ||
	    cmd->op_size < sizeof(op) || cmd->op_size > PAGE_SIZE)
		return -EINVAL;
	if (cmd->count > ARRAY_SIZE(few)) {
		reqs = kcalloc(cmd->count, sizeof(*reqs), GFP_KERNEL);
		if (!reqs)
			return -ENOMEM;
	}
	if (!rdmaxfer_pending_get(rf, cmd->count)) {
		ret = -EAGAIN;
		goto out_free;
	}

	for (n = 0; n < cmd->count; n++) {
		ret = copy_struct_from_user(&op, sizeof(op), uops + (size_t)n * cmd->op_size,
					    cmd->op_size);
		if (!ret)
			ret = rdmaxfer_req_prepare(rf, &op, &reqs[n]);
		if (ret)
			goto out_discard;
	}

	for (i = 0; i < n; i += k) {
		k = rdmaxfer_burst_post(reqs + i, n - i, &ch);
		if (!k) {
			ret = rdmaxfer_req_issue(reqs[i], &ch);
			if (ret)
				break;
			k = 1;
		}
		memset(reqs + i, 0, k * sizeof(*reqs));	/* posted: they will complete */
		posted += k;
		if (ch.err)
			break;
	}
	rdmaxfer_chain_end(&ch);
out_discard:
	for (i = 0; i < n; i++)
		if (reqs[i])
			rdmaxfer_req_discard(reqs[i]);
	rdmaxfer_pending_put(rf, cmd->count - posted);
	if (posted)
		cmd->count = posted;
out_free:
	if (reqs != few)
		kfree(reqs);
	return posted ? 0 : ret;
}
