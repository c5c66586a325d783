/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer - the wire protocol between two rdmaxfer endpoints.
 *
 * Handshake: the rdma_cm private data of the connect request and of the
 * reply carry struct rdmaxfer_cm_hello (magic, version, receive credits,
 * control buffer size, registration segment size, largest message); a
 * refusal carries struct rdmaxfer_cm_reject with a reason.
 *
 * Control channel: every message is one SEND into one of the peer's posted
 * receive buffers of ctrl_size bytes, starting with struct rdmaxfer_msg_hdr.
 * A side may only send while it holds a credit (one per receive buffer the
 * peer has posted for it), so a peer never meets an empty receive queue.
 * Credits come back in the header of every message (hdr.credits: buffers
 * reposted since the last message); when many are owed and nothing else is
 * going out, an empty CREDIT message returns them.  The last credit is kept
 * for CREDIT messages, so credits can always flow.
 *
 * Everything is big-endian.  Every field is checked on receipt; a message
 * that breaks the rules drops the connection.
 */
#ifndef RDMAXFER_PROTO_H
#define RDMAXFER_PROTO_H

#include <linux/types.h>

#define RDMAXFER_MAGIC		0x52584652	/* "RXFR" */
#define RDMAXFER_PROTO_VERSION	1

/**
 * struct rdmaxfer_cm_hello - connect request and reply private data
 * @magic: RDMAXFER_MAGIC
 * @version: RDMAXFER_PROTO_VERSION
 * @credits: receive buffers the sender posted for the peer's messages
 * @ctrl_size: size of each of those buffers, header included
 * @seg_size: bytes one registration segment of the sender's windows covers
 * @max_msg: largest RDMA message the sender's port accepts
 * @reserved: 0
 */
struct rdmaxfer_cm_hello {
	__be32 magic;
	__be16 version;
	__be16 credits;
	__be32 ctrl_size;
	__be32 seg_size;
	__be32 max_msg;
	__be32 reserved;
};

/**
 * struct rdmaxfer_cm_reject - reject private data
 * @magic: RDMAXFER_MAGIC
 * @version: the rejecting side's RDMAXFER_PROTO_VERSION
 * @reason: RDMAXFER_REJECT_* (uapi)
 */
struct rdmaxfer_cm_reject {
	__be32 magic;
	__be16 version;
	__be16 reason;
};

enum rdmaxfer_msg_type {
	RDMAXFER_MSG_CREDIT = 1,	/* no payload: returns credits */
	RDMAXFER_MSG_ADVERT,		/* struct rdmaxfer_msg_advert + segments */
	RDMAXFER_MSG_REVOKE,		/* struct rdmaxfer_msg_revoke */
	RDMAXFER_MSG_DATA,		/* payload: the bytes of a SEND */
	RDMAXFER_MSG_WRITE_DONE,	/* struct rdmaxfer_msg_write_done */
};

/**
 * struct rdmaxfer_msg_hdr - header of every control message
 * @type: enum rdmaxfer_msg_type
 * @credits: credits returned to the receiver
 * @length: payload bytes after the header
 */
struct rdmaxfer_msg_hdr {
	__be16 type;
	__be16 credits;
	__be32 length;
};

/**
 * struct rdmaxfer_msg_seg - one registered segment of a window
 * @addr: the address the peer puts in its RDMA work requests
 * @rkey: the key of the segment's memory region
 * @length: bytes in the segment
 */
struct rdmaxfer_msg_seg {
	__be64 addr;
	__be32 rkey;
	__be32 length;
};

/**
 * struct rdmaxfer_msg_advert - a window the sender exposes to the receiver
 * @window_id: the id the receiver names it by
 * @access: RDMAXFER_REMOTE_* (uapi)
 * @length: window length; the sum of the segment lengths
 * @nsegs: number of segments that follow
 * @reserved: 0
 * @segs: the segments, in window order
 */
struct rdmaxfer_msg_advert {
	__be32 window_id;
	__be32 access;
	__be64 length;
	__be32 nsegs;
	__be32 reserved;
	struct rdmaxfer_msg_seg segs[];
};

/**
 * struct rdmaxfer_msg_revoke - the sender revoked a window
 * @window_id: the window
 */
struct rdmaxfer_msg_revoke {
	__be32 window_id;
};

/**
 * struct rdmaxfer_msg_write_done - data the sender wrote has landed
 * @window_id: the receiver's window the data went to
 * @imm_data: the sender's immediate value
 * @offset: where in the window
 * @length: how many bytes
 *
 * Sent right after the RDMA WRITEs on the same queue pair, so RC ordering
 * guarantees the data is in place when the receiver sees this message.
 */
struct rdmaxfer_msg_write_done {
	__be32 window_id;
	__be32 imm_data;
	__be64 offset;
	__be64 length;
};

#endif /* RDMAXFER_PROTO_H */
