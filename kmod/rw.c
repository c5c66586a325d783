// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the rdma_rw engine: WRITE and READ as pieces and chains.
 *
 * WRITE and READ go through the kernel's rdma_rw API.  An operation is
 * split into pieces at the peer's segment boundaries (one MR each, see
 * window.c) and at the largest message both ports accept (xfer.c); each
 * piece is one rdma_rw context over the pages of its slice of the buffer.
 * The operation completes when all its pieces have.
 *
 * The pieces of consecutive WRITE/READ operations of one SUBMIT on one
 * connection are linked into one chain of work requests (struct
 * rdmaxfer_chain) and posted with a single ib_post_send() (one doorbell),
 * at most RDMAXFER_SIGNAL_EVERY pieces at a time; only the last WR of a
 * chain's READ pieces and the last of its other pieces are signaled, and
 * within a chain the last of a piece that completes RDMAXFER_SIGNAL_BYTES
 * since the one before (a long chain shows its progress to the keepalive,
 * keepalive.c).  Every piece's last WR still carries its ib_cqe, so an
 * error or a flush completes it individually.  Posted pieces wait on
 * sq_pieces in send-queue order.  The verbs complete a send queue in
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
 * one of its class.  WRITE_IMM is a WRITE followed, on the same QP, by a
 * WRITE_DONE control message carrying the immediate, the window and the
 * range: RC ordering delivers it after the data.
 *
 * Locking: c_lock (bottom halves off) for the send queue's room and
 * sq_pieces; a chain is built and posted between rdmaxfer_conn_enter()
 * and rdmaxfer_conn_exit().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

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

/* A READ piece?  See the top of this file for why the class matters. */
static bool rdmaxfer_piece_is_read(const struct rdmaxfer_piece *p)
{
	return p->p_req->r_dir == DMA_FROM_DEVICE;
}

void rdmaxfer_piece_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_piece *p = container_of(wc->wr_cqe, struct rdmaxfer_piece, p_cqe);
	struct rdmaxfer_conn *conn = p->p_req->r_conn;
	bool read = rdmaxfer_piece_is_read(p);
	struct rdmaxfer_piece *q, *tmp;
	LIST_HEAD(done);

	rdmaxfer_conn_wc_failed(conn, wc);
	/*
	 * This piece and every piece of its class posted before it that is
	 * still listed (see the top of this file): P is listed (it was, before
	 * posting, and only a completion of P or of a later piece of its
	 * class takes it off, which comes after this one).
	 */
	spin_lock_bh(&conn->c_lock);
	list_for_each_entry_safe(q, tmp, &conn->c_sq.sq_pieces, p_sq_entry) {
		if (rdmaxfer_piece_is_read(q) == read)
			list_move_tail(&q->p_sq_entry, &done);
		if (q == p)
			break;
	}
	conn->c_sq.sq_moved++;
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
	list_splice_init(&conn->c_sq.sq_pieces, &left);
	spin_unlock_bh(&conn->c_lock);
	rdmaxfer_pieces_finish(&left, IB_WC_WR_FLUSH_ERR, IB_WC_WR_FLUSH_ERR);
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
		last->wr_cqe = &conn->c_sq.sq_err_cqe;
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
 * The last WR is signaled.  The posted pieces go on sq_pieces in the
 * same critical section, before their completion can be handled.  If the
 * connection is down or posting fails, the pieces that were not posted
 * complete at once as flushed (-ECANCELED, or -ENODEV after a device
 * removal), and a failed ib_post_send() fails the connection.
 *
 * Context: process context, rdmaxfer_conn_enter() held on @ch->conn.
 * Return: 0, or the error (also kept in @ch->err).
 */
int rdmaxfer_chain_post(struct rdmaxfer_chain *ch)
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
		list_splice_tail_init(&ch->pieces, &conn->c_sq.sq_pieces);
	} else {
		/* the pieces before the one holding @bad were posted */
		list_for_each_entry_safe(p, tmp, &ch->pieces, p_sq_entry) {
			if (p->p_first_wr == bad)
				break;
			p->p_broken = rdmaxfer_piece_has_wr(p, bad);
			list_move_tail(&p->p_sq_entry, &conn->c_sq.sq_pieces);
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
void rdmaxfer_chain_end(struct rdmaxfer_chain *ch)
{
	if (!ch->conn)
		return;
	rdmaxfer_chain_post(ch);
	/* the slots of the batch, announced together if due */
	if (ch->slots)
		rdmaxfer_credit_maybe_send(ch->conn);
	ch->slots = false;
	rdmaxfer_conn_exit(ch->conn);
	ch->conn = NULL;
}

/*
 * WRITE, READ, WRITE_IMM: chain the pieces; a WRITE_IMM posts the chain
 * and then its notification.  Returns 0 once the request is committed (it
 * will complete), or an error and nothing of it was posted.
 */
int rdmaxfer_req_rw(struct rdmaxfer_req *req, struct rdmaxfer_chain *ch)
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
