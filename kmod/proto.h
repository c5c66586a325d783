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
 * Receive slots (both hellos carry RDMAXFER_HELLO_SLOTS).  A receiver may
 * also post receive WRs into its user's registered memory ("slots").  Its
 * receive queue then holds two kinds of entries, and since every message
 * (SEND) the peer sends takes the entry at the head, in the order they were
 * posted, the sender must know that order: each entry is a credit with a
 * kind and a capacity, announced in posting order.  hdr.credits announces
 * the next entries as control buffers (kind control, capacity ctrl_size);
 * a CREDIT message may carry runs (struct rdmaxfer_msg_run) announcing the
 * entries after those.  The sender keeps a mirror of the entries it holds
 * and sends:
 *  - data (a user's SEND, zero copy) as SEND_WITH_IMM, the immediate being
 *    the user's, only into a slot at least as long (RDMAXFER_RUN_SLOT);
 *  - control messages (plain SEND, header first) into any entry at least
 *    as long: a slot holds them as well as a control buffer (every slot is
 *    at least RDMAXFER_MIN_SLOT bytes, and so is every CREDIT message);
 *  - an empty plain SEND ("skip") to use up the head entry when it does
 *    not fit the next message but a later announced one does.
 * The receiver gives a slot that held a control message or a skip back to
 * its receive queue, and reposts control buffers taken by skips only while
 * fewer than RDMAXFER_MIN_CTRL_RECVS are posted (it keeps the others).
 *
 * Announcements are batched (half of what is posted), which alone could
 * leave a sender stuck: the entry its message fits may be the last one it
 * holds, with no credit left to keep after skipping up to it, or it may
 * hold none that fits while the receiver has one it has not announced.
 * Such a sender (if both hellos say RDMAXFER_HELLO_WANT) sends a WANT
 * (struct rdmaxfer_msg_want: the shortest control message and user's SEND
 * that wait), with its last credit if need be (but see below), once per
 * announcement it receives (again only for a shorter one).  The receiver,
 * which knows which of its entries the sender holds (it counts the
 * completed ones), answers with a CREDIT when one of those messages cannot
 * be placed with what the sender holds but could once told of all that is
 * posted -- an entry it fits with one more after it -- reposting control
 * buffers it kept if that is what is missing.  It stays silent otherwise (no posted entry fits: a
 * user's SEND waits for the user's slots; or the sender holds enough and
 * waits for something else), so WANT and CREDIT cannot chase each other.
 * A receiver keeps RDMAXFER_MIN_RECVS entries posted in all (kept control
 * buffers go back when slots run low), so that a sender left with at most
 * one credit is always answered (half of what is posted is then owed).
 *
 * The last credit goes only to a message that announces at least one
 * entry: a CREDIT, or a WANT whose header announces a control buffer.  A
 * side that would spend it on a WANT announcing nothing sends a CREDIT
 * with its runs instead (its WANT waits for the next credit), or nothing
 * if it owes nothing.  Two sides that both spent their last credits on
 * messages announcing nothing -- WANTs crossing on the wire -- would each
 * wait for the other for ever; this way, whatever crosses, each arrival
 * gives its receiver a credit back.
 *
 * Slot headers (both hellos carry RDMAXFER_HELLO_SLOT_HDR).  A transport
 * without immediate data (iWARP: its SEND carries none) cannot tell a
 * user's message from a control message by the SEND_WITH_IMM opcode, nor
 * carry the user's immediate.  There, every slot the receiver posts starts
 * with a header entry of RDMAXFER_SLOT_HDR bytes in the receiver's own
 * kernel memory, followed by the user's pages, and the capacity it
 * announces counts the header entry.  A user's message is a plain SEND of
 * struct rdmaxfer_msg_user (type RDMAXFER_MSG_USER, the immediate)
 * followed by the user's bytes; it goes only into a slot whose capacity is
 * at least its length plus the header.  A control message is sent as
 * always: in a slot, its struct rdmaxfer_msg_hdr lands in the header entry
 * and its payload in the user's pages.  A skip is empty as always.  An
 * RDMA port that has immediate data never sends the feature.
 *
 * Everything is big-endian.  Every field is checked on receipt; a message
 * that breaks the rules drops the connection, and so does a receive taken
 * by anything but a SEND no longer than the entry (an RDMA WRITE with
 * immediate: rdmaxfer never sends one).
 */
#ifndef RDMAXFER_PROTO_H
#define RDMAXFER_PROTO_H

#include <linux/stddef.h>
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

/* struct rdmaxfer_cm_hello_ext.features */
#define RDMAXFER_HELLO_SLOTS	0x1	/* receive slots: the rules above */
#define RDMAXFER_HELLO_WANT	0x2	/* and WANT messages (with SLOTS only) */
#define RDMAXFER_HELLO_SLOT_HDR	0x4	/* slots start with a header entry (with SLOTS only) */
#define RDMAXFER_HELLO_PROBE	0x8	/* the sender's probe bytes may be read (iWARP) */
#define RDMAXFER_HELLO_AUTH	0x10	/* the sender proves a key: struct rdmaxfer_cm_auth */
#define RDMAXFER_HELLO_WINS	0x20	/* takes RDMAXFER_MAX_PEER_WINS windows (else 256) */

/**
 * struct rdmaxfer_cm_hello_ext - the hello of this version
 * @h: what every version sends (a peer of an older one reads only that,
 *	and its own hello reads as @features 0: the private data of a CM
 *	message arrives zero-padded)
 * @features: RDMAXFER_HELLO_* the sender speaks
 * @rq_entries: most receive entries the sender may have announced and not
 *	yet had taken (0: @h.credits)
 */
struct rdmaxfer_cm_hello_ext {
	struct rdmaxfer_cm_hello h;
	__be32 features;
	__be32 rq_entries;
};

/* bytes of a handshake nonce and of a proof (HMAC-SHA256) */
#define RDMAXFER_NONCE_LEN	16
#define RDMAXFER_MAC_LEN	32

/**
 * struct rdmaxfer_cm_auth - the hello of a side that proves a key
 * @x: the hello (features carry RDMAXFER_HELLO_AUTH)
 * @nonce: the sender's fresh random nonce
 * @mac: reply only: the server's proof, HMAC-SHA256 under the key of
 *	"rdmaxfer server" and what both sides sent (auth.c); a request ends
 *	before it (RDMAXFER_CM_AUTH_REQ_LEN bytes: 56 fit a REQ)
 *
 * The client proves the key in its first message, RDMAXFER_MSG_AUTH.
 */
struct rdmaxfer_cm_auth {
	struct rdmaxfer_cm_hello_ext x;
	u8 nonce[RDMAXFER_NONCE_LEN];
	u8 mac[RDMAXFER_MAC_LEN];
};

#define RDMAXFER_CM_AUTH_REQ_LEN	offsetof(struct rdmaxfer_cm_auth, mac)

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
	RDMAXFER_MSG_CREDIT = 1,	/* returns credits; payload: runs (slots only) */
	RDMAXFER_MSG_ADVERT,		/* struct rdmaxfer_msg_advert + segments */
	RDMAXFER_MSG_REVOKE,		/* struct rdmaxfer_msg_revoke */
	RDMAXFER_MSG_DATA,		/* payload: the bytes of a SEND */
	RDMAXFER_MSG_WRITE_DONE,	/* struct rdmaxfer_msg_write_done */
	RDMAXFER_MSG_WANT,		/* struct rdmaxfer_msg_want (slots only) */
	RDMAXFER_MSG_USER,		/* a user's message in a slot (slot headers only) */
	RDMAXFER_MSG_PROBE,		/* struct rdmaxfer_msg_seg: the probe bytes (PROBE only) */
	RDMAXFER_MSG_AUTH,		/* struct rdmaxfer_msg_auth (AUTH only) */
};

/* bytes a READ probe reads: the length of a PROBE message's segment */
#define RDMAXFER_PROBE_LEN	8

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
 * struct rdmaxfer_msg_user - the header of a user's message (slot headers)
 * @type: RDMAXFER_MSG_USER, where struct rdmaxfer_msg_hdr has its type
 * @reserved: 0
 * @imm_data: the sender's immediate value
 */
struct rdmaxfer_msg_user {
	__be16 type;
	__be16 reserved;
	__be32 imm_data;
};

/* bytes of a slot's header entry: a user's header or a control message's */
#define RDMAXFER_SLOT_HDR	8

/* struct rdmaxfer_msg_run.cap: the entries are slots (not control buffers) */
#define RDMAXFER_RUN_SLOT	0x80000000u
#define RDMAXFER_RUN_CAP_MASK	0x7fffffffu

/**
 * struct rdmaxfer_msg_run - receive entries a CREDIT message announces
 * @count: how many, in posting order, after those announced before
 * @cap: their capacity in bytes (each may hold more), | RDMAXFER_RUN_SLOT
 *	for slots
 */
struct rdmaxfer_msg_run {
	__be32 count;
	__be32 cap;
};

/**
 * struct rdmaxfer_msg_want - the sender waits for receive entries
 * @ctrl_length: bytes of the shortest control message that waits, header
 *	included (0: none)
 * @data_length: bytes of the shortest user's SEND that waits (only a slot
 *	takes it; 0: none)
 */
struct rdmaxfer_msg_want {
	__be32 ctrl_length;
	__be32 data_length;
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

/**
 * struct rdmaxfer_msg_auth - the client's proof, its first message (AUTH)
 * @mac: HMAC-SHA256 under the key of "rdmaxfer client" and what both sides
 *	sent (auth.c)
 */
struct rdmaxfer_msg_auth {
	u8 mac[RDMAXFER_MAC_LEN];
};

#endif /* RDMAXFER_PROTO_H */
