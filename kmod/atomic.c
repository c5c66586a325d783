// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - atomics: CAS and FADD on 8 bytes of the peer's window.
 *
 * The target must be 8-byte aligned on the peer and lie in one segment of
 * its window, exposed with REMOTE_ATOMIC; the device must have atomics
 * (atomic_cap, else EOPNOTSUPP).  The value the peer's memory held lands
 * in a small kernel buffer of the request, DMA-mapped when the request is
 * posted (only then is the device known to stay), and goes to the user in
 * the completion's value (xfer.c).  Each atomic is signaled for its
 * result; several of a SUBMIT may go in one burst (xfer.c, "Bursts").
 *
 * Locking: c_lock (bottom halves off) with the post, as every post.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>

#include "rdmaxfer.h"
#include "trace.h"

static void rdmaxfer_atomic_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_req *req = container_of(wc->wr_cqe, struct rdmaxfer_req, r_cqe.cqe);

	rdmaxfer_conn_wc_failed(req->r_conn, wc);
	rdmaxfer_sq_paid(req->r_conn, &req->r_cqe, 1);
	rdmaxfer_req_wc(req, wc->status);
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
int rdmaxfer_req_atomic_init(struct rdmaxfer_req *req, const struct rdmaxfer_op *op,
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

/*
 * Map the result buffer of a CAS or FADD, once (a burst may have mapped it
 * already).  Called between rdmaxfer_conn_enter() and _end(): c_dev is
 * stable.
 */
int rdmaxfer_atomic_map(struct rdmaxfer_req *req)
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
int rdmaxfer_atomic_post(struct rdmaxfer_req *req, bool trace)
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

int rdmaxfer_req_atomic(struct rdmaxfer_req *req)
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
