// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - slot headers: user messages on ports without immediate data.
 *
 * A user's SEND into one of the peer's receive slots goes zero-copy as a
 * SEND with immediate data: the opcode says "the user's message", the
 * immediate carries the user's value (slot.c).  iWARP has
 * no immediate data: its providers refuse IB_WR_SEND_WITH_IMM (siw with
 * EINVAL, irdma in iWARP mode as well), and the verbs leave nothing else
 * in a SEND to tell a user's message from a control message.  So on such
 * a port the message says it itself, in a header of RDMAXFER_SLOT_HDR bytes
 * (proto.h, "Slot headers"):
 *
 *  - the sender puts a struct rdmaxfer_msg_user (type RDMAXFER_MSG_USER,
 *    the immediate) in front of the user's bytes, as the first SGE of the
 *    SEND;
 *  - the receiver posts every slot with a header entry first, in its own
 *    kernel memory, then the user's pages: the user's bytes land in the
 *    user's pages only, where they would have without a header, and a
 *    control message (whose struct rdmaxfer_msg_hdr has its type where the
 *    user's header has it) lands with its header in the entry.
 *
 * The entries live in one kernel buffer per connection (c_hdrs), mapped
 * once: RDMAXFER_RQ_MIRROR for the SENDs, indexed by the mirror's number of
 * the peer entry each one takes (lg_tx_seq), then RDMAXFER_RQ_MIRROR for our
 * slots, indexed by the number our receive queue gives them (lg_rx_seq).
 * A SEND's entry is written again only RDMAXFER_RQ_MIRROR entries later,
 * which the peer can only have announced after it received this one; a
 * slot's only after it completed (the receive queue holds fewer).  The
 * device writes the receive half and reads the send half; the CPU writes
 * only the send half.
 *
 * A port with immediate data never uses any of this: no buffer, no header,
 * no extra SGE, and the wire is what it always was.
 *
 * Locking: the entries of a SEND and of a slot are chosen and written
 * under c_lock, with the post that uses them (as the numbers are taken).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "rdmaxfer.h"

#define RDMAXFER_HDRS	(2 * RDMAXFER_RQ_MIRROR)

/**
 * rdmaxfer_port_has_imm - does a SEND on this port carry immediate data?
 * @ib: the device
 * @port: its port
 *
 * InfiniBand and RoCE have SEND with immediate; iWARP (RFC 5040) has none,
 * and its providers refuse the opcode.
 *
 * Context: any.
 */
bool rdmaxfer_port_has_imm(struct ib_device *ib, u32 port)
{
	return !rdma_protocol_iwarp(ib, port);
}

/**
 * rdmaxfer_hdrs_alloc - the header entries of a connection, if its port needs them
 * @conn: the connection; its QP exists (c_dev, c_pd, c_port are set)
 *
 * Context: process context (connection setup).
 * Return: 0 or -ENOMEM.
 */
int rdmaxfer_hdrs_alloc(struct rdmaxfer_conn *conn)
{
	struct ib_device *ib = conn->c_dev->rd_ib;
	size_t size = RDMAXFER_HDRS * sizeof(*conn->c_hdrs);

	might_sleep();
	if (rdmaxfer_port_has_imm(ib, conn->c_port))
		return 0;
	conn->c_hdrs = rdmaxfer_cm_fault() ? NULL : kzalloc(size, GFP_KERNEL_ACCOUNT);
	if (!conn->c_hdrs)
		return -ENOMEM;
	conn->c_hdrs_dma = ib_dma_map_single(ib, conn->c_hdrs, size, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ib, conn->c_hdrs_dma)) {
		kfree(conn->c_hdrs);
		conn->c_hdrs = NULL;
		return -ENOMEM;
	}
	return 0;
}

/**
 * rdmaxfer_hdrs_free - free what rdmaxfer_hdrs_alloc() made
 * @conn: the connection; its QP is drained or was never connected
 *
 * Idempotent.
 */
void rdmaxfer_hdrs_free(struct rdmaxfer_conn *conn)
{
	if (!conn->c_hdrs)
		return;
	ib_dma_unmap_single(conn->c_dev->rd_ib, conn->c_hdrs_dma,
			    RDMAXFER_HDRS * sizeof(*conn->c_hdrs), DMA_BIDIRECTIONAL);
	kfree(conn->c_hdrs);
	conn->c_hdrs = NULL;
}

/**
 * rdmaxfer_hdr_len - bytes a user's message takes on the wire besides its own
 * @conn: the connection (its hello exchanged)
 *
 * Context: any.
 * Return: RDMAXFER_SLOT_HDR with slot headers, else 0.
 */
u32 rdmaxfer_hdr_len(const struct rdmaxfer_conn *conn)
{
	return conn->c_slot_hdr ? RDMAXFER_SLOT_HDR : 0;
}

/* The SGE of entry @idx of @conn's header entries. */
static void rdmaxfer_hdr_sge(struct rdmaxfer_conn *conn, u32 idx, struct ib_sge *sge)
{
	sge->addr = conn->c_hdrs_dma + idx * sizeof(*conn->c_hdrs);
	sge->length = RDMAXFER_SLOT_HDR;
	sge->lkey = conn->c_pd->local_dma_lkey;
	ib_dma_sync_single_for_device(conn->c_dev->rd_ib, sge->addr, RDMAXFER_SLOT_HDR,
				      DMA_BIDIRECTIONAL);
}

/**
 * rdmaxfer_hdr_tx - the header of a user's message about to be posted
 * @conn: the connection, with slot headers
 * @sge: set to the header's SGE (the SEND's first)
 * @imm: the user's immediate
 *
 * The message takes the peer's entry lg_tx_seq (rdmaxfer_credit_post() has
 * brought the mirror there); the header is written in our entry of that
 * number.
 *
 * Context: c_lock held, the post follows before it is dropped.
 */
void rdmaxfer_hdr_tx(struct rdmaxfer_conn *conn, struct ib_sge *sge, u32 imm)
{
	u32 idx = conn->c_lg.lg_tx_seq % RDMAXFER_RQ_MIRROR;
	struct rdmaxfer_msg_user *h = &conn->c_hdrs[idx];

	lockdep_assert_held(&conn->c_lock);
	h->type = cpu_to_be16(RDMAXFER_MSG_USER);
	h->reserved = 0;
	h->imm_data = cpu_to_be32(imm);
	rdmaxfer_hdr_sge(conn, idx, sge);
}

/**
 * rdmaxfer_hdr_rx_post - the header entry of a slot about to be posted
 * @conn: the connection, with slot headers
 * @req: the slot (RECV); its header SGE (@req->r_sge[0]) is set
 *
 * The slot takes the receive queue's number lg_rx_seq; its entry is ours of
 * that number (rdmaxfer_hdr_rx_done() reads it back).
 *
 * Context: c_lock held, the post follows before it is dropped.
 */
void rdmaxfer_hdr_rx_post(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req)
{
	lockdep_assert_held(&conn->c_lock);
	req->r_hdr_idx = RDMAXFER_RQ_MIRROR + conn->c_lg.lg_rx_seq % RDMAXFER_RQ_MIRROR;
	rdmaxfer_hdr_sge(conn, req->r_hdr_idx, &req->r_sge[0]);
}

/**
 * rdmaxfer_hdr_rx_done - read a completed slot's header entry
 * @conn: the connection
 * @req: the slot
 * @wc: its completion (a copy): a user's message is made to look as it
 *	does with immediate data (IB_WC_WITH_IMM, the immediate, its own
 *	length); a control message keeps its whole length, its header is
 *	in @req->r_hdr (rdmaxfer_slot_copy() puts it back in front)
 *
 * Without slot headers, only a completion that says it has immediate data
 * can be a user's message, and nothing is changed.
 *
 * Context: receive CQ completion handler (softirq).
 * Return: 0, or -EPROTO: a message the peer could not have sent by the
 * rules (shorter than a header, a user's header with reserved bits, or
 * immediate data where none is spoken).
 */
int rdmaxfer_hdr_rx_done(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, struct ib_wc *wc)
{
	if (!conn->c_slot_hdr || wc->status != IB_WC_SUCCESS || !wc->byte_len)
		return 0;
	if ((wc->wc_flags & IB_WC_WITH_IMM) || wc->byte_len < RDMAXFER_SLOT_HDR)
		return -EPROTO;
	ib_dma_sync_single_for_cpu(conn->c_dev->rd_ib,
				   conn->c_hdrs_dma + req->r_hdr_idx * sizeof(*conn->c_hdrs),
				   RDMAXFER_SLOT_HDR, DMA_BIDIRECTIONAL);
	req->r_hdr = READ_ONCE(conn->c_hdrs[req->r_hdr_idx]);
	if (req->r_hdr.type != cpu_to_be16(RDMAXFER_MSG_USER))
		return 0;
	if (req->r_hdr.reserved)
		return -EPROTO;
	wc->byte_len -= RDMAXFER_SLOT_HDR;
	wc->wc_flags |= IB_WC_WITH_IMM;
	wc->ex.imm_data = req->r_hdr.imm_data;
	return 0;
}

/**
 * rdmaxfer_slot_copy - copy a control message out of a slot
 * @conn: the connection
 * @req: the slot, completed with a control message of at least @len bytes
 * @dst: where to
 * @len: bytes, the header included
 *
 * With slot headers, the message's first RDMAXFER_SLOT_HDR bytes are in the
 * slot's header entry (kept by rdmaxfer_hdr_rx_done()), the rest at the
 * start of the slot; without, all of it is in the slot.
 *
 * Context: any (the slot's pages are pinned).
 */
void rdmaxfer_slot_copy(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, void *dst,
			u32 len)
{
	u32 n = min(len, rdmaxfer_hdr_len(conn));

	memcpy(dst, &req->r_hdr, n);
	if (len > n)
		rdmaxfer_buf_copy(req->r_buf, req->r_buf_offset, dst + n, len - n);
}
