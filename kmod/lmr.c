// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - local registrations: a buffer's pages under a local key of a
 * connection's PD, for zero-copy SENDs and receive slots.
 *
 * A zero-copy SEND and a receive slot need the buffer's pages under a
 * local key of the connection's PD, in as few SGEs as a work request
 * takes: the first one on a connection registers the whole buffer there
 * (struct rdmaxfer_lmr: a registration, reg.c, with local write access
 * only, no id, never advertised), kept on the connection's c_lmrs until
 * the connection is destroyed or DEREG_BUF.  An operation
 * does not hold it: the buffer reference it holds makes DEREG_BUF fail
 * (EBUSY), and the connection is destroyed only after the drain.  A
 * buffer's local registrations hold a reference each, which DEREG_BUF
 * does not count as a use: it drops them.  On a device that must not see
 * two MRs in one message (rdmaxfer_lmr_one_mr()) the segments of a local
 * registration overlap by half, so that a message always fits in one.
 *
 * Locking: c_lmr_lock (a mutex per connection) covers c_lmrs; it is held
 * across a registration, which waits for its completion from the peer's
 * side of the wire, so no lock a CM handler takes is held around it
 * (rdmaxfer.h, "Locking").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "rdmaxfer.h"

/**
 * rdmaxfer_lmr_one_mr - must a message's buffer be in one MR on @ib?
 * @ib: the device
 *
 * Soft-iWARP looks up the pages of a work request's SGEs in their MRs'
 * page lists with one index, carried from one SGE to the next
 * (siw_tx_hdt() keeps pbl_idx; the receive side resets it), and searches
 * each list from there on: the second MR of a SEND is searched from where
 * the first one's search ended.  The SEND then fails
 * (IB_WC_LOC_QP_OP_ERR, the connection with it) or, where that MR's list
 * is long enough, could send the bytes of a page before the right one (by
 * the code).  Seen on 6.1 (slots_test's sizes: 1 MiB in two MRs; it passes
 * with the index reset, providers.md); the upstream copy read here has the
 * same loop.  So on siw a SEND or slot takes one MR of its buffer.
 */
bool rdmaxfer_lmr_one_mr(struct ib_device *ib)
{
	return ib->ops.driver_id == RDMA_DRIVER_SIW;
}

/*
 * Pages from the start of one segment of a local registration on @ib to
 * the start of the next: a whole segment, or half of one where a message
 * must be in one MR (then any range of up to half a segment and a byte
 * is inside one segment).
 */
u32 rdmaxfer_lmr_stride(struct ib_device *ib)
{
	u32 seg = rdmaxfer_seg_pages(ib);

	return rdmaxfer_lmr_one_mr(ib) ? max(seg / 2, 1U) : seg;
}

/* Drop the local registrations on @list (taken off their connections). */
static void rdmaxfer_lmrs_put(struct list_head *list)
{
	struct rdmaxfer_lmr *lmr, *tmp;

	list_for_each_entry_safe(lmr, tmp, list, lm_entry) {
		struct rdmaxfer_conn *conn = lmr->lm_reg.rg_conn;
		struct rdmaxfer_buf *buf = lmr->lm_reg.rg_buf;

		list_del(&lmr->lm_entry);
		rdmaxfer_reg_destroy(&lmr->lm_reg);
		kfree(lmr);
		atomic_dec(&buf->b_nlmrs);
		rdmaxfer_obj_put(&buf->b_obj);
		rdmaxfer_obj_put(&conn->c_obj);
	}
}

/**
 * rdmaxfer_lmr_evict - drop a deregistered buffer's local registrations
 * @rf: the file
 * @buf: the buffer, out of the id table, used by nothing but them
 *
 * Takes them off the file's connections and drops them.  Not under
 * rf_lock, which CM handlers take: c_lmr_lock is held across a
 * registration, and a registration waits on the peer.  No new one of
 * @buf can be made meanwhile (that needs a reference from the id table),
 * and a connection that left the table drops its own in teardown.
 *
 * Context: process context.
 */
void rdmaxfer_lmr_evict(struct rdmaxfer_file *rf, struct rdmaxfer_buf *buf)
{
	struct rdmaxfer_lmr *lmr, *tmp;
	struct rdmaxfer_conn *conn;
	struct rdmaxfer_obj *obj;
	unsigned long id;
	LIST_HEAD(list);

	might_sleep();
	lockdep_assert_not_held(&rf->rf_lock);
	if (!atomic_read(&buf->b_nlmrs))
		return;
	xa_for_each(&rf->rf_objs, id, obj) {
		conn = rdmaxfer_obj_get(rf, id, RDMAXFER_OBJ_CONN);
		if (!conn)
			continue;
		mutex_lock(&conn->c_lmr_lock);
		list_for_each_entry_safe(lmr, tmp, &conn->c_lmrs, lm_entry)
			if (lmr->lm_reg.rg_buf == buf)
				list_move(&lmr->lm_entry, &list);
		mutex_unlock(&conn->c_lmr_lock);
		rdmaxfer_obj_put(&conn->c_obj);
	}
	rdmaxfer_lmrs_put(&list);
}

/**
 * rdmaxfer_lmr_get - the buffer's local registration on a connection
 * @conn: the connection
 * @buf: the buffer (the caller holds a reference)
 *
 * Registers the whole buffer on first use (see the top of this file).
 * The registration stays valid while the caller holds @buf and remains
 * between rdmaxfer_conn_enter() and rdmaxfer_conn_exit(), and after that
 * while an operation posted with it holds @buf.
 *
 * Context: process context, may sleep; rdmaxfer_conn_enter() held.
 * Return: the registration, or ERR_PTR(-ENOMEM) or what
 * rdmaxfer_reg_create() failed with.
 */
struct rdmaxfer_lmr *rdmaxfer_lmr_get(struct rdmaxfer_conn *conn, struct rdmaxfer_buf *buf)
{
	struct rdmaxfer_lmr *lmr;
	int ret;

	lockdep_assert_held_read(&conn->c_post_sem);
	mutex_lock(&conn->c_lmr_lock);
	list_for_each_entry(lmr, &conn->c_lmrs, lm_entry)
		if (lmr->lm_reg.rg_buf == buf)
			goto out;
	lmr = kzalloc_obj(*lmr, GFP_KERNEL_ACCOUNT);
	if (!lmr) {
		lmr = ERR_PTR(-ENOMEM);
		goto out;
	}
	ret = rdmaxfer_reg_create(&lmr->lm_reg, conn->c_obj.file, conn, buf, 0, buf->b_length, 0);
	if (ret) {
		kfree(lmr);
		lmr = ERR_PTR(ret);
		goto out;
	}
	kref_get(&conn->c_obj.ref);
	kref_get(&buf->b_obj.ref);
	atomic_inc(&buf->b_nlmrs);
	list_add(&lmr->lm_entry, &conn->c_lmrs);
out:
	mutex_unlock(&conn->c_lmr_lock);
	return lmr;
}

/* Bytes one segment of a local registration covers on @conn's device. */
static u64 rdmaxfer_lmr_seg_size(struct rdmaxfer_conn *conn)
{
	return (u64)rdmaxfer_seg_pages(conn->c_dev->rd_ib) << PAGE_SHIFT;
}

/* Bytes from one segment's start to the next's (rdmaxfer_lmr_stride()). */
static u64 rdmaxfer_lmr_stride_size(struct rdmaxfer_conn *conn)
{
	return (u64)rdmaxfer_lmr_stride(conn->c_dev->rd_ib) << PAGE_SHIFT;
}

/**
 * rdmaxfer_lmr_max_msg - the longest message a SEND or slot may have
 * @conn: the connection, its hello exchanged
 *
 * What both ports take, less a slot header, and what the SGEs of a work
 * request cover of any buffer at any offset: with n SGEs of segments of S
 * bytes, (n - 1) * S + 1; with one SGE of segments overlapping by half
 * (stride T), S - T + 1.  QUERY_CONN reports it as max_msg_size.
 *
 * Context: any, with @conn's device stable: under c_teardown_lock (QUERY_CONN)
 * or between rdmaxfer_conn_enter() and rdmaxfer_conn_exit() (SUBMIT).
 */
u32 rdmaxfer_lmr_max_msg(struct rdmaxfer_conn *conn)
{
	u64 s, t, max;

	if (!conn->c_dev || conn->c_max_msg <= rdmaxfer_hdr_len(conn) || !conn->c_max_sge)
		return 0;
	s = rdmaxfer_lmr_seg_size(conn);
	t = rdmaxfer_lmr_stride_size(conn);
	max = t < s ? s - t + 1 : (conn->c_max_sge - 1) * s + 1;
	return min_t(u64, conn->c_max_msg - rdmaxfer_hdr_len(conn), max);
}

/**
 * rdmaxfer_lmr_nsge - how many SGEs a range of a buffer takes
 * @conn: the connection (up: its device is known)
 * @buf: the buffer
 * @off: start of the range in it
 * @len: its length, at least 1
 *
 * One per segment of the local registration the range touches.  In a
 * registration's address space, a byte at buffer offset O lives at
 * O + the in-page offset of the buffer's start (see
 * rdmaxfer_reg_map_seg()), and segment i covers [i * T, i * T + S)
 * (T, the stride, is S where segments do not overlap).  Overlapping
 * segments give one SGE, from the segment the range starts in (the
 * last one for a start beyond it, which reaches the buffer's end), or 2
 * where the range does not fit there: more than c_max_sge (1) allows.
 */
u32 rdmaxfer_lmr_nsge(struct rdmaxfer_conn *conn, const struct rdmaxfer_buf *buf, u64 off,
		      u64 len)
{
	u64 a = offset_in_page(buf->b_addr) + off, s = rdmaxfer_lmr_seg_size(conn);
	u64 t = rdmaxfer_lmr_stride_size(conn);

	if (t < s)
		return a + len <= div64_u64(a, t) * t + s ? 1 : 2;
	return div64_u64(a + len - 1, s) - div64_u64(a, s) + 1;
}

/**
 * rdmaxfer_lmr_sges - fill a request's SGEs for a range of its buffer
 * @req: the request (SEND or RECV)
 * @lmr: the buffer's local registration on the request's connection
 * @off: start of the range
 * @len: its length; rdmaxfer_lmr_nsge() is at most RDMAXFER_MAX_MSG_SGES
 *
 * They go from @req->r_sge[1]: the first is a slot header's (hdr.c).
 */
void rdmaxfer_lmr_sges(struct rdmaxfer_req *req, const struct rdmaxfer_lmr *lmr, u64 off,
		       u64 len)
{
	const struct rdmaxfer_reg *reg = &lmr->lm_reg;
	u64 a = offset_in_page(reg->rg_buf->b_addr) + off;
	u64 s = rdmaxfer_lmr_seg_size(req->r_conn);
	u64 t = rdmaxfer_lmr_stride_size(req->r_conn);

	req->r_nsge = 0;
	if (t < s) {	/* one SGE: rdmaxfer_lmr_nsge() said it fits */
		u64 seg = min_t(u64, div64_u64(a, t), reg->rg_nsegs - 1);
		struct ib_sge *sge = &req->r_sge[1 + req->r_nsge++];

		sge->addr = a;
		sge->length = len;
		sge->lkey = reg->rg_segs[seg].rs_mr->lkey;
		return;
	}
	while (len) {
		u64 seg = div64_u64(a, s);
		u64 n = min(len, (seg + 1) * s - a);
		struct ib_sge *sge = &req->r_sge[1 + req->r_nsge++];	/* [0]: hdr.c's */

		sge->addr = a;
		sge->length = n;
		sge->lkey = reg->rg_segs[seg].rs_mr->lkey;
		a += n;
		len -= n;
	}
}

/**
 * rdmaxfer_lmr_release_all - drop a connection's local registrations
 * @conn: the connection, drained
 *
 * Context: process context, teardown.
 */
void rdmaxfer_lmr_release_all(struct rdmaxfer_conn *conn)
{
	LIST_HEAD(list);

	lockdep_assert_held(&conn->c_teardown_lock);
	mutex_lock(&conn->c_lmr_lock);
	list_splice_init(&conn->c_lmrs, &list);
	mutex_unlock(&conn->c_lmr_lock);
	rdmaxfer_lmrs_put(&list);
}
