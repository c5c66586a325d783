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
 * WRITE and READ go through the kernel's rdma_rw API.  An operation is
 * split into pieces at the peer's segment boundaries (one MR each, see
 * window.c) and at the largest message both ports accept; each piece is one
 * rdma_rw context over the pages of its slice of the buffer.  The operation
 * completes when all its pieces have.
 *
 * Fast path.  The pieces of consecutive WRITE/READ operations of one
 * SUBMIT on one connection are linked into one chain of work requests and
 * posted with a single ib_post_send() (one doorbell), at most
 * RDMAXFER_SIGNAL_EVERY pieces at a time; only the last WR of a chain's
 * READ pieces and the last of its other pieces are signaled, and within a
 * chain the last of a piece that completes RDMAXFER_SIGNAL_BYTES since the
 * one before (a long chain shows its progress to the keepalive,
 * keepalive.c).  Every piece's last WR still carries its ib_cqe, so an
 * error or a flush completes it individually.  Posted pieces wait on
 * c_sq_pieces in send-queue order.  The verbs complete a send queue in
 * order, but Soft-iWARP completes a WRITE once TCP took it and a READ when
 * its response is in, so a WRITE may complete before a READ posted ahead
 * of it (6.1's siw_qp_tx.c; an earlier version of this code took that for
 * the READ's completion, and the READ's own then found its piece gone: a
 * kernel panic).  Each class keeps its own order there, so a completion
 * for piece P means that every piece of P's class (READ or not) posted
 * before P and still on the list finished successfully (an unsignaled WR
 * that fails, or is flushed, completes with its own error first).
 * Handling one CQE thus completes those pieces, returns their room and,
 * per operation, queues one completion event.  A chain is posted before
 * anything that may sleep on the peer (credits, room) and at the end of
 * the SUBMIT, so a posted unsignaled WR is always followed by a signaled
 * one of its class.  WRITE_IMM is a WRITE
 * followed, on the same QP, by a WRITE_DONE control message carrying the
 * immediate, the window and the range: RC ordering delivers it after the
 * data, and the 32-bit immediate of the verb could not carry the window as
 * well.  SEND copies the bytes into a control buffer (so the peer needs no
 * posted user buffer and can never hit RNR) until the peer posts receive
 * slots; then it goes zero-copy, a SEND_WITH_IMM from the buffer's local
 * registration on the connection (lmr.c) into the peer's next slot it fits
 * (credit.c).  RECV posts a slot, from the same registration.  Atomics use a
 * small kernel buffer for the returned value.
 *
 * Runs.  Zero-copy SENDs are posted one by one, each placed in the peer's
 * slots under c_lock with its post (credit.c), so they cannot join a chain;
 * atomics are posted one by one too, each signaled for its result.
 * Posting from process context, with bottom halves on, lets a software
 * device process each one on its own: Soft-RoCE schedules its requester
 * tasklet at every kernel post, and it runs as soon as bottom halves come
 * back on, for the one WR there (and then its completion, through the
 * CQ's own softirq passes).  So up to RDMAXFER_RUN consecutive zero-copy
 * SENDs and atomics of a SUBMIT on one connection that can go at once are
 * posted in one section with bottom halves off (rdmaxfer_run_post()); the
 * requester then sends them in one pass.  The order, the credits and the
 * slot placement are those of posting them one at a time; one that would
 * have to wait ends the run and takes the usual path.  An adapter sees the
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
	return READ_ONCE(conn->c_peer_slots);
}

/* a RECV is an echo slot, a sink slot, or neither */
#define RDMAXFER_RECV_FLAGS	(RDMAXFER_RECV_ECHO | RDMAXFER_RECV_SINK)

/* SUBMITs of up to this many operations keep their request array on the stack */
#define RDMAXFER_SUBMIT_ONSTACK	8

/* SENDs and atomics posted in one section with bottom halves off, at most */
#define RDMAXFER_RUN	16

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
static void __rdmaxfer_req_part_done(struct rdmaxfer_req *req, int err, u32 wc_status,
				     struct list_head *evs)
{
	/* the first error wins; a completion handler and SUBMIT may race here */
	if (err && !cmpxchg(&req->r_status, 0, err))
		WRITE_ONCE(req->r_wc_status, wc_status);
	if (atomic_dec_and_test(&req->r_pending))
		rdmaxfer_req_complete(req, evs);
}

static void rdmaxfer_req_part_done(struct rdmaxfer_req *req, int err, u32 wc_status)
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
	rdmaxfer_conn_wc_failed(container_of(wc->wr_cqe, struct rdmaxfer_conn, c_err_cqe), wc);
}

static void rdmaxfer_piece_free(struct rdmaxfer_req *req, struct rdmaxfer_piece *p)
{
	if (p->p_nwr)
		rdma_rw_ctx_destroy(&p->p_ctx, req->r_conn->c_qp, req->r_conn->c_port,
				    p->p_sgt.sgl, p->p_sgt.orig_nents, req->r_dir);
	p->p_nwr = 0;
	if (p->p_sgt.sgl != &p->p_sg1)
		sg_free_table(&p->p_sgt);
	p->p_sgt.sgl = NULL;
}

/*
 * The scatterlist of a piece: its slice of the buffer's pages.  A slice
 * within one page (every small operation) uses the entry embedded in the
 * piece instead of allocating a table.
 */
static int rdmaxfer_piece_sg(struct rdmaxfer_buf *buf, struct rdmaxfer_piece *p,
			     unsigned int max_seg)
{
	u64 first = offset_in_page(buf->b_addr) + p->p_loff;
	struct page **pages = buf->b_pages + (first >> PAGE_SHIFT);
	u32 in = offset_in_page(first);

	if (in + p->p_len <= PAGE_SIZE) {
		sg_init_table(&p->p_sg1, 1);
		sg_set_page(&p->p_sg1, pages[0], p->p_len, in);
		p->p_sgt.sgl = &p->p_sg1;
		p->p_sgt.nents = 1;
		p->p_sgt.orig_nents = 1;
		return 0;
	}
	return sg_alloc_table_from_pages_segment(&p->p_sgt, pages,
						 DIV_ROUND_UP(in + p->p_len, PAGE_SIZE), in,
						 p->p_len, max_seg, GFP_KERNEL);
}

/*
 * A posted piece finished: free its context and account for it (its room
 * is added to *@nwr and *@nrw, for the caller to give back); this may free
 * the request.
 */
static void rdmaxfer_piece_finish(struct rdmaxfer_piece *p, enum ib_wc_status status,
				  struct list_head *evs, u32 *nwr, u32 *nrw)
{
	struct rdmaxfer_req *req = p->p_req;
	struct rdmaxfer_conn *conn = req->r_conn;

	if (p->p_broken && status == IB_WC_SUCCESS)
		status = IB_WC_WR_FLUSH_ERR;
	*nwr += p->p_nwr;
	*nrw += 1;
	rdmaxfer_piece_free(req, p);
	__rdmaxfer_req_part_done(req, rdmaxfer_wc_errno(conn, status), status, evs);
}

/*
 * Complete the pieces on @list (all of one connection): the last one with
 * @status, the others with @earlier; their events are queued together.
 */
static void rdmaxfer_pieces_finish(struct list_head *list, enum ib_wc_status earlier,
				   enum ib_wc_status status)
{
	struct rdmaxfer_piece *p, *tmp;
	struct rdmaxfer_conn *conn;
	struct rdmaxfer_file *rf;
	u32 nwr = 0, nrw = 0;
	LIST_HEAD(evs);

	if (list_empty(list))
		return;
	p = list_first_entry(list, struct rdmaxfer_piece, p_sq_entry);
	conn = p->p_req->r_conn;
	rf = p->p_req->r_file;
	/* a request stays allocated while one of its pieces is still listed */
	list_for_each_entry_safe(p, tmp, list, p_sq_entry) {
		list_del(&p->p_sq_entry);
		rdmaxfer_piece_finish(p, list_empty(list) ? status : earlier, &evs, &nwr, &nrw);
	}
	/* the connection outlives its pieces: the drain waits for them */
	rdmaxfer_wr_release(conn, nwr, nrw);
	rdmaxfer_queue_events(rf, &evs);
}

/* A READ piece?  See "Fast path" above for why the class matters. */
static bool rdmaxfer_piece_is_read(const struct rdmaxfer_piece *p)
{
	return p->p_req->r_dir == DMA_FROM_DEVICE;
}

static void rdmaxfer_piece_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_piece *p = container_of(wc->wr_cqe, struct rdmaxfer_piece, p_cqe);
	struct rdmaxfer_conn *conn = p->p_req->r_conn;
	bool read = rdmaxfer_piece_is_read(p);
	struct rdmaxfer_piece *q, *tmp;
	LIST_HEAD(done);

	rdmaxfer_conn_wc_failed(conn, wc);
	/*
	 * This piece and every piece of its class posted before it that is
	 * still listed ("Fast path" above): P is listed (it was, before
	 * posting, and only a completion of P or of a later piece of its
	 * class takes it off, which comes after this one).
	 */
	spin_lock_bh(&conn->c_lock);
	list_for_each_entry_safe(q, tmp, &conn->c_sq_pieces, p_sq_entry) {
		if (rdmaxfer_piece_is_read(q) == read)
			list_move_tail(&q->p_sq_entry, &done);
		if (q == p)
			break;
	}
	conn->c_sq_moved++;
	spin_unlock_bh(&conn->c_lock);
	rdmaxfer_pieces_finish(&done, IB_WC_SUCCESS, wc->status);
}

/**
 * rdmaxfer_sq_sweep - complete pieces left over after a drain
 * @conn: the connection, drained
 *
 * After ib_drain_qp() every piece has had its completion, except after an
 * ib_post_send() that failed midway through a chain: the piece it broke
 * off in, and the (unsignaled) pieces posted before it, had no signaled WR
 * after them; and on a provider that does not flush every WR (sq.c,
 * "Owed completions").  They complete as flushed; the earlier ones may in
 * fact have been carried out (reporting a failure is the safe side).
 *
 * Context: process context, teardown.
 */
void rdmaxfer_sq_sweep(struct rdmaxfer_conn *conn)
{
	LIST_HEAD(left);

	lockdep_assert_held(&conn->c_teardown_lock);

	spin_lock_bh(&conn->c_lock);
	list_splice_init(&conn->c_sq_pieces, &left);
	spin_unlock_bh(&conn->c_lock);
	rdmaxfer_pieces_finish(&left, IB_WC_WR_FLUSH_ERR, IB_WC_WR_FLUSH_ERR);
}

static void rdmaxfer_atomic_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_req *req = container_of(wc->wr_cqe, struct rdmaxfer_req, r_cqe.cqe);

	rdmaxfer_conn_wc_failed(req->r_conn, wc);
	rdmaxfer_sq_paid(req->r_conn, &req->r_cqe, 1);
	rdmaxfer_req_wc(req, wc->status);
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
 * rdmaxfer_req_atomic_init - build the work request of a CAS or FADD
 * @req: the request
 * @op: the operation
 * @pw: the peer's window it targets
 *
 * The target must be 8-byte aligned on the peer and lie in one segment.
 * The result buffer is mapped when the request is posted: only then is the
 * device known to stay.
 *
 * Context: process; the connection's c_peer_win_lock held (it keeps @pw).
 * Return: 0, -EINVAL for a misaligned target, -ENOMEM.
 */
static int rdmaxfer_req_atomic_init(struct rdmaxfer_req *req, const struct rdmaxfer_op *op,
				    const struct rdmaxfer_peer_win *pw)
{
	struct ib_atomic_wr *wr = &req->r_atomic_wr;
	u64 seg_start = 0, addr;
	u32 i = 0;

	lockdep_assert_held(&req->r_conn->c_peer_win_lock);
	while (seg_start + pw->pw_segs[i].length <= op->remote_offset)
		seg_start += pw->pw_segs[i++].length;
	addr = pw->pw_segs[i].addr + op->remote_offset - seg_start;
	if (!IS_ALIGNED(addr, sizeof(u64)) ||
	    op->remote_offset - seg_start + sizeof(u64) > pw->pw_segs[i].length)
		return -EINVAL;
	req->r_atomic = kzalloc_obj(u64, GFP_KERNEL_ACCOUNT);
	if (!req->r_atomic)
		return -ENOMEM;
	req->r_cqe.cqe.done = rdmaxfer_atomic_done;
	atomic_set(&req->r_pending, 1);
	wr->wr.wr_cqe = &req->r_cqe.cqe;
	wr->wr.sg_list = &req->r_atomic_sge;
	wr->wr.num_sge = 1;
	wr->wr.opcode = op->opcode == RDMAXFER_OP_CAS ? IB_WR_ATOMIC_CMP_AND_SWP :
							IB_WR_ATOMIC_FETCH_AND_ADD;
	wr->wr.send_flags = IB_SEND_SIGNALED;
	wr->remote_addr = addr;
	wr->compare_add = op->compare_add;
	wr->swap = op->swap;
	wr->rkey = pw->pw_segs[i].rkey;
	return 0;
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
static void rdmaxfer_send_zc_wr(struct rdmaxfer_req *req, struct ib_send_wr *wr)
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
 * slot yet (the peer is asked, see rdmaxfer_tx_want()).  @trace: emit
 * its op_post event once posted (under c_lock, so before its completion's).
 */
static int rdmaxfer_send_zc_post(struct rdmaxfer_req *req, struct ib_send_wr *wr, bool trace)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	u32 hdr = rdmaxfer_hdr_len(conn), len = req->r_event.ev.bytes + hdr;
	int ret;

	spin_lock_bh(&conn->c_lock);	/* see rdmaxfer_ctrl_send() */
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		ret = -ENOTCONN;
	} else if (conn->c_credits < 2) {
		rdmaxfer_tx_want(conn, len, true);
		ret = -EAGAIN;
	} else {
		conn->c_credits--;
		ret = rdmaxfer_tx_place(conn, len, true);
		if (!ret && hdr)
			rdmaxfer_hdr_tx(conn, &req->r_sge[0], req->r_event.ev.imm_data);
		if (!ret)
			ret = ib_post_send(conn->c_qp, wr, NULL);
		if (!ret) {
			rdmaxfer_sq_owe(conn, &req->r_cqe);
			conn->c_tx_seq++;
		} else {
			conn->c_credits++;
		}
		if (!ret && trace)
			trace_rdmaxfer_op_post(req->r_file, &req->r_event.ev);
	}
	spin_unlock_bh(&conn->c_lock);
	/* waiting: make sure the peer knows (a WANT, see proto.h) */
	if (ret == -EAGAIN && READ_ONCE(conn->c_want_due))
		rdmaxfer_maybe_send_credits(conn);
	return ret;
}

/*
 * The SGEs of a zero-copy SEND or a RECV: its range of its buffer, in the
 * buffer's local registration on the connection (made at first use, which
 * may sleep: rdmaxfer_lmr_get()).
 */
static int rdmaxfer_req_lmr_sges(struct rdmaxfer_req *req)
{
	struct rdmaxfer_window *lmr;

	lmr = rdmaxfer_lmr_get(req->r_conn, req->r_buf);
	if (IS_ERR(lmr))
		return PTR_ERR(lmr);
	rdmaxfer_lmr_sges(req, lmr, req->r_buf_offset, req->r_event.ev.bytes);
	return 0;
}

/* SEND from the buffer itself into a slot of the peer. */
static int rdmaxfer_req_send_zc(struct rdmaxfer_req *req)
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
static int rdmaxfer_req_recv(struct rdmaxfer_req *req)
{
	int ret;

	ret = rdmaxfer_req_lmr_sges(req);
	if (ret)
		return ret;
	atomic_set(&req->r_pending, 1);
	return rdmaxfer_slot_post(req->r_conn, req, true);
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
 * Map the result buffer of a CAS or FADD, once (a run may have mapped it
 * already).  Called between rdmaxfer_conn_enter() and _end(): c_dev is
 * stable.
 */
static int rdmaxfer_atomic_map(struct rdmaxfer_req *req)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	struct rdmaxfer_device *rd = conn->c_dev;

	if (req->r_atomic_dev)
		return 0;
	req->r_atomic_dma = ib_dma_map_single(rd->rd_ib, req->r_atomic, sizeof(u64),
					      DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(rd->rd_ib, req->r_atomic_dma))
		return -ENOMEM;
	kref_get(&rd->rd_ref);
	req->r_atomic_dev = rd;
	req->r_atomic_sge.addr = req->r_atomic_dma;
	req->r_atomic_sge.length = sizeof(u64);
	req->r_atomic_sge.lkey = conn->c_pd->local_dma_lkey;
	return 0;
}

/*
 * Post a mapped CAS or FADD whose send-queue room is taken.  @trace: emit
 * its op_post event once posted (under c_lock, so before its completion's).
 */
static int rdmaxfer_atomic_post(struct rdmaxfer_req *req, bool trace)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	int ret;

	spin_lock_bh(&conn->c_lock);	/* see rdmaxfer_ctrl_send() */
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED)
		ret = -ENOTCONN;
	else
		ret = ib_post_send(conn->c_qp, &req->r_atomic_wr.wr, NULL);
	if (!ret)
		rdmaxfer_sq_owe(conn, &req->r_cqe);
	if (!ret && trace)
		trace_rdmaxfer_op_post(req->r_file, &req->r_event.ev);
	spin_unlock_bh(&conn->c_lock);
	return ret;
}

static int rdmaxfer_req_atomic(struct rdmaxfer_req *req)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	int ret;

	ret = rdmaxfer_atomic_map(req);
	if (ret)
		return ret;
	ret = rdmaxfer_wr_reserve(conn, 1, 0, false);
	if (ret)
		return ret;
	ret = rdmaxfer_atomic_post(req, false);
	if (ret)
		rdmaxfer_wr_release(conn, 1, 0);
	return ret;
}

/* Build the rdma_rw contexts of a request's pieces; on error none is left. */
static int rdmaxfer_pieces_init(struct rdmaxfer_req *req, u32 *nwr)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	struct rdmaxfer_buf *buf = req->r_buf;
	struct ib_device *ib = conn->c_dev->rd_ib;
	/* a READ through one of rdma_rw's MRs (c_read_piece): a page per entry */
	unsigned int max_seg = req->r_dir == DMA_FROM_DEVICE && conn->c_read_piece ?
			       PAGE_SIZE : ib_dma_max_seg_size(ib);
	u32 i;
	int ret;

	*nwr = 0;
	for (i = 0; i < req->r_npieces; i++) {
		struct rdmaxfer_piece *p = &req->r_pieces[i];

		ret = rdmaxfer_piece_sg(buf, p, max_seg);
		if (ret)
			goto fail;
		ret = rdma_rw_ctx_init(&p->p_ctx, conn->c_qp, conn->c_port, p->p_sgt.sgl,
				       p->p_sgt.orig_nents, 0, p->p_raddr, p->p_rkey, req->r_dir);
		if (ret < 0) {
			rdmaxfer_piece_free(req, p);
			goto fail;
		}
		p->p_nwr = ret;
		*nwr += ret;
	}
	return 0;
fail:
	while (i--)
		rdmaxfer_piece_free(req, &req->r_pieces[i]);
	return ret;
}

/*
 * WRITE/READ pieces of one SUBMIT on one connection, not posted yet (see
 * "Fast path" above).  While @conn is set, rdmaxfer_conn_enter() is held
 * on it.  @err is the first posting error: the operations of that chain
 * complete as flushed, and the SUBMIT stops after them.
 */
struct rdmaxfer_chain {
	struct rdmaxfer_conn	*conn;
	struct list_head	pieces;
	struct ib_send_wr	*first;
	struct ib_send_wr	*last;
	struct ib_send_wr	*last_of[2];	/* of its READ pieces, of the others */
	u32			npieces;
	u32			unsignaled;
	int			err;
	bool			slots;
};

/*
 * Append a piece's WRs; its last WR carries its cqe, unsignaled unless the
 * chain has RDMAXFER_SIGNAL_BYTES since its last signaled one: a long
 * chain then shows its progress, which the keepalive's rule for a probe
 * stuck behind data reads (keepalive.c).
 */
static void rdmaxfer_chain_add(struct rdmaxfer_chain *ch, struct rdmaxfer_piece *p)
{
	struct rdmaxfer_conn *conn = ch->conn;
	struct ib_send_wr *first, *last;

	first = rdma_rw_ctx_wrs(&p->p_ctx, conn->c_qp, conn->c_port, &p->p_cqe, NULL);
	/*
	 * rdma_rw leaves the WRs before the last one (more SGEs than a WR
	 * takes, MR registration) without a cqe: the CQ core would drop their
	 * error completions, so give them one that fails the connection.
	 */
	for (last = first; last->next; last = last->next)
		last->wr_cqe = &conn->c_err_cqe;
	ch->unsignaled += p->p_len;
	if (ch->unsignaled >= RDMAXFER_SIGNAL_BYTES) {
		last->send_flags |= IB_SEND_SIGNALED;
		ch->unsignaled = 0;
	} else {
		last->send_flags &= ~IB_SEND_SIGNALED;
	}
	p->p_first_wr = first;
	p->p_last_wr = last;
	p->p_broken = false;
	if (ch->last)
		ch->last->next = first;
	else
		ch->first = first;
	ch->last = last;
	ch->last_of[!rdmaxfer_piece_is_read(p)] = last;
	list_add_tail(&p->p_sq_entry, &ch->pieces);
	ch->npieces++;
}

static bool rdmaxfer_piece_has_wr(const struct rdmaxfer_piece *p, const struct ib_send_wr *wr)
{
	const struct ib_send_wr *w;

	for (w = p->p_first_wr; w; w = w == p->p_last_wr ? NULL : w->next)
		if (w == wr)
			return true;
	return false;
}

/**
 * rdmaxfer_chain_post - post a chain with one ib_post_send()
 * @ch: the chain; empty afterwards
 *
 * The last WR is signaled.  The posted pieces go on c_sq_pieces in the
 * same critical section, before their completion can be handled.  If the
 * connection is down or posting fails, the pieces that were not posted
 * complete at once as flushed (-ECANCELED, or -ENODEV after a device
 * removal), and a failed ib_post_send() fails the connection.
 *
 * Context: process context, rdmaxfer_conn_enter() held on @ch->conn.
 * Return: 0, or the error (also kept in @ch->err).
 */
static int rdmaxfer_chain_post(struct rdmaxfer_chain *ch)
{
	struct rdmaxfer_conn *conn = ch->conn;
	const struct ib_send_wr *bad = NULL;
	struct rdmaxfer_piece *p, *tmp;
	LIST_HEAD(unposted);
	int ret;

	lockdep_assert_held_read(&conn->c_post_sem);
	if (!ch->npieces)
		return 0;
	/* each class's last piece: a later piece of the other may complete first */
	if (ch->last_of[0])
		ch->last_of[0]->send_flags |= IB_SEND_SIGNALED;
	if (ch->last_of[1])
		ch->last_of[1]->send_flags |= IB_SEND_SIGNALED;
	/* _bh: see rdmaxfer_ctrl_send() */
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		/* went down since the chain was built: nothing is posted */
		ret = -ENOTCONN;
		bad = ch->first;
	} else {
		ret = ib_post_send(conn->c_qp, ch->first, &bad);
		/* ib_post_send() must say where it stopped */
		if (WARN_ON_ONCE(ret && !bad))
			bad = ch->first;
	}
	if (!ret) {
		list_splice_tail_init(&ch->pieces, &conn->c_sq_pieces);
	} else {
		/* the pieces before the one holding @bad were posted */
		list_for_each_entry_safe(p, tmp, &ch->pieces, p_sq_entry) {
			if (p->p_first_wr == bad)
				break;
			p->p_broken = rdmaxfer_piece_has_wr(p, bad);
			list_move_tail(&p->p_sq_entry, &conn->c_sq_pieces);
			if (p->p_broken)
				break;
		}
		list_splice_init(&ch->pieces, &unposted);
	}
	spin_unlock_bh(&conn->c_lock);

	ch->first = NULL;
	ch->last = NULL;
	ch->last_of[0] = NULL;
	ch->last_of[1] = NULL;
	ch->npieces = 0;
	ch->unsignaled = 0;
	if (!ret)
		return 0;
	if (ret != -ENOTCONN)
		rdmaxfer_conn_fail(conn, -EIO);
	/* never on the wire: they complete as flushed, as on a dying QP */
	list_for_each_entry_safe(p, tmp, &unposted, p_sq_entry) {
		struct rdmaxfer_req *req = p->p_req;
		u32 nwr = p->p_nwr;

		list_del(&p->p_sq_entry);
		rdmaxfer_piece_free(req, p);
		rdmaxfer_wr_release(conn, nwr, 1);
		rdmaxfer_req_part_done(req, rdmaxfer_wc_errno(conn, IB_WC_WR_FLUSH_ERR),
				       IB_WC_WR_FLUSH_ERR);	/* may free it */
	}
	if (!ch->err)
		ch->err = ret;
	return ret;
}

/*
 * Take send-queue room; post the chain first if that means waiting.
 * @holding: the caller holds a WR it has not posted (a WRITE_IMM's
 * notification): see rdmaxfer_wr_take().
 */
static int rdmaxfer_chain_reserve(struct rdmaxfer_chain *ch, u32 nwr, u32 nrw, bool holding)
{
	int ret = rdmaxfer_wr_take(ch->conn, nwr, nrw, holding);

	if (ret != -EAGAIN)
		return ret;
	ret = rdmaxfer_chain_post(ch);
	if (ret)
		return ret;
	return rdmaxfer_wr_reserve(ch->conn, nwr, nrw, holding);
}

/* Post what is chained and let the connection go. */
static void rdmaxfer_chain_end(struct rdmaxfer_chain *ch)
{
	if (!ch->conn)
		return;
	rdmaxfer_chain_post(ch);
	/* the slots of the batch, announced together if due */
	if (ch->slots)
		rdmaxfer_maybe_send_credits(ch->conn);
	ch->slots = false;
	rdmaxfer_conn_exit(ch->conn);
	ch->conn = NULL;
}

/*
 * WRITE, READ, WRITE_IMM: chain the pieces; a WRITE_IMM posts the chain
 * and then its notification.  Returns 0 once the request is committed (it
 * will complete), or an error and nothing of it was posted.
 */
static int rdmaxfer_req_rw(struct rdmaxfer_req *req, struct rdmaxfer_chain *ch)
{
	struct rdmaxfer_conn *conn = req->r_conn;
	bool imm = req->r_event.ev.opcode == RDMAXFER_OP_WRITE_IMM;
	u32 i, nwr, n = req->r_npieces;
	struct rdmaxfer_ctrl *ct = NULL;
	int ret;

	if (imm) {
		/* post what waits before sleeping for a credit */
		ret = rdmaxfer_chain_post(ch);
		if (ret)
			return ret;
		ct = rdmaxfer_ctrl_get(conn, MAX_SCHEDULE_TIMEOUT, 1, true);
		if (IS_ERR(ct))
			return PTR_ERR(ct);
	}
	ret = rdmaxfer_chain_reserve(ch, 0, n, imm);
	if (ret)
		goto out_ct;
	ret = rdmaxfer_pieces_init(req, &nwr);
	if (ret) {
		/* the MR pool of rdma_rw may be empty: EAGAIN, retried by the user */
		rdmaxfer_wr_release(conn, 0, n);
		goto out_ct;
	}
	ret = rdmaxfer_chain_reserve(ch, nwr, 0, imm);
	if (ret) {
		for (i = 0; i < n; i++)
			rdmaxfer_piece_free(req, &req->r_pieces[i]);
		rdmaxfer_wr_release(conn, 0, n);
		goto out_ct;
	}

	/*
	 * Committed: from here every piece completes (maybe with an error)
	 * and the request may be reaped and freed once the chain is posted;
	 * only the local n, imm and ct say anything about it afterwards (a
	 * WRITE_IMM cannot complete before its notification is posted).
	 */
	atomic_set(&req->r_pending, n + imm);
	/* at most RDMAXFER_SIGNAL_EVERY pieces per chain, unless one op has more */
	if (ch->npieces + n > RDMAXFER_SIGNAL_EVERY)
		rdmaxfer_chain_post(ch);
	for (i = 0; i < n; i++)
		rdmaxfer_chain_add(ch, &req->r_pieces[i]);
	if (!imm) {
		if (ch->npieces >= RDMAXFER_SIGNAL_EVERY)
			rdmaxfer_chain_post(ch);
		return 0;
	}

	ret = rdmaxfer_chain_post(ch);
	if (ret) {
		rdmaxfer_ctrl_put_unused(conn, ct);
		rdmaxfer_req_part_done(req, rdmaxfer_wc_errno(conn, IB_WC_WR_FLUSH_ERR),
				       IB_WC_WR_FLUSH_ERR);
		return 0;
	}
	{
		struct rdmaxfer_msg_write_done *wd = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);

		wd->window_id = cpu_to_be32(req->r_event.ev.window_id);
		wd->imm_data = cpu_to_be32(req->r_event.ev.imm_data);
		wd->offset = cpu_to_be64(req->r_remote_offset);
		wd->length = cpu_to_be64(req->r_event.ev.bytes);
		ct->ct_req = req;
		ret = rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_WRITE_DONE, sizeof(*wd));
		if (ret) {
			rdmaxfer_req_part_done(req, rdmaxfer_wc_errno(conn, IB_WC_WR_FLUSH_ERR),
					       IB_WC_WR_FLUSH_ERR);
			ch->err = ch->err ?: ret;
		}
	}
	return 0;

out_ct:
	if (ct)
		rdmaxfer_ctrl_put_unused(conn, ct);
	return ret;
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
		rdmaxfer_maybe_send_credits(conn);
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

/* May @req join a run on @conn: a zero-copy SEND (the peer posts slots), CAS or FADD? */
static bool rdmaxfer_req_runs_on(const struct rdmaxfer_req *req,
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

/* A run's @req made ready to post: a SEND's SGEs, an atomic's result buffer. */
static int rdmaxfer_run_prepare(struct rdmaxfer_req *req)
{
	if (req->r_event.ev.opcode != RDMAXFER_OP_SEND)
		return rdmaxfer_atomic_map(req);
	return rdmaxfer_req_lmr_sges(req);
}

/* Post a run's @req, made ready; its room is taken, bottom halves are off. */
static int rdmaxfer_run_post_one(struct rdmaxfer_req *req)
{
	struct ib_send_wr wr;

	if (req->r_event.ev.opcode != RDMAXFER_OP_SEND)
		return rdmaxfer_atomic_post(req, true);
	rdmaxfer_send_zc_wr(req, &wr);
	return rdmaxfer_send_zc_post(req, &wr, true);
}

/**
 * rdmaxfer_run_post - post consecutive SENDs and atomics with bottom halves off
 * @reqs: the batch's requests from the next one to post
 * @n: how many of them there are
 * @ch: the SUBMIT's chain
 *
 * See "Runs" above.  A run needs at least two zero-copy SENDs or atomics
 * on the chain's connection, an empty chain and no slots posted just
 * before (rdmaxfer_req_issue() announces those first).  They are made
 * ready (a SEND's registration looked up or made, an atomic's result
 * mapped) and their send-queue room taken first, without waiting for
 * room; then they are posted, in order, in one section with bottom halves
 * off.  The run ends at the first one that cannot be posted at once (no
 * room, no credit or slot of the peer, an error): that one takes the
 * usual path, which waits or reports the error.
 *
 * Context: process context, may sleep (a buffer's first registration on
 * the connection); rdmaxfer_conn_enter() held on @ch->conn.
 * Return: how many of @reqs were posted, from the first; 0 if no run.
 */
static u32 rdmaxfer_run_post(struct rdmaxfer_req **reqs, u32 n, struct rdmaxfer_chain *ch)
{
	struct rdmaxfer_conn *conn = ch->conn;
	u32 i, k, posted;

	if (!conn || ch->npieces || ch->slots)
		return 0;
	n = min_t(u32, n, RDMAXFER_RUN);
	for (k = 0; k < n && rdmaxfer_req_runs_on(reqs[k], conn); k++)
		;
	if (k < 2)
		return 0;
	/* registrations before room: a first one waits for an empty send queue */
	for (i = 0; i < k && !rdmaxfer_run_prepare(reqs[i]); i++)
		;
	k = rdmaxfer_wr_take_upto(conn, i);
	local_bh_disable();
	for (posted = 0; posted < k && !rdmaxfer_run_post_one(reqs[posted]); posted++)
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
		k = rdmaxfer_run_post(reqs + i, n - i, &ch);
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
