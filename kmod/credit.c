// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the credit ledger: which of the peer's receive entries our
 * messages may take, and which of ours we announce to it.
 *
 * Our side.  Every entry we post on the receive queue (a control buffer,
 * ctrl.c, or a user's slot, slot.c) gets the next number (lg_rx_seq), and
 * its kind and capacity are remembered (lg_rx_caps) until they are
 * announced, in order (rdmaxfer_credit_announce()): hdr.credits of any message
 * announces the leading control buffers, a CREDIT message runs of anything
 * after.  rdmaxfer_credit_maybe_send() sends a CREDIT when half the
 * receive depth is owed and nothing else is going out, or when that lets a
 * WANT of the peer's through (rdmaxfer_credit_want_due()).  A message whose
 * content waits for the user keeps its entry off the queue (cb_held,
 * sl_held) until the user takes what it brought
 * (rdmaxfer_credit_grant()).
 *
 * The peer's side.  We mirror what the peer announced (lg_tx_caps, from
 * rdmaxfer_credit_handle() and the credits of every message,
 * rdmaxfer_credit_returned()).  Every message, whoever sends it (control
 * messages, echoes, zero-copy SENDs), claims a credit with
 * rdmaxfer_credit_claim() and goes with rdmaxfer_credit_post(), into the
 * next entry it fits, after skips (empty SENDs) for the entries it must
 * pass over, under c_lock with the post, so messages take the entries in
 * the order the mirror says.  A message that fits none yet asks for one
 * with a WANT (rdmaxfer_credit_want()).  See proto.h for the rules.
 *
 * Locking: c_lock (bottom halves off) covers both sides' counts and the
 * mirror; see the order at the top of rdmaxfer.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "rdmaxfer.h"
#include "trace.h"

/* Does a message of @kind and @len fit an entry of capacity @cap? */
static bool rdmaxfer_credit_fits(u32 cap, u32 len, enum rdmaxfer_msg_kind kind)
{
	return (cap & RDMAXFER_RUN_CAP_MASK) >= len &&
	       (kind == RDMAXFER_KIND_CTRL || (cap & RDMAXFER_RUN_SLOT));
}

/**
 * rdmaxfer_credit_want - a message waits for the peer's receive entries
 * @conn: the connection
 * @len: its length (header included for a control message)
 * @kind: a control message or a user's SEND (only a slot takes that)
 *
 * Asks for a WANT to the peer (see proto.h) if we have not asked for as
 * short a message of its kind since the last announcement; the caller
 * calls rdmaxfer_credit_maybe_send() after dropping c_lock.
 *
 * Context: c_lock held.
 */
void rdmaxfer_credit_want(struct rdmaxfer_conn *conn, u32 len, enum rdmaxfer_msg_kind kind)
{
	u32 *want = &conn->c_lg.lg_want[kind], sent = conn->c_lg.lg_want_sent[kind];

	lockdep_assert_held(&conn->c_lock);
	if (!(conn->c_peer_features & RDMAXFER_HELLO_WANT))
		return;
	len = max(len, 1U);	/* 0: none */
	trace_rdmaxfer_flow(conn, RDMAXFER_FLOW_WAIT,
			    kind == RDMAXFER_KIND_USER ? RDMAXFER_MSG_USER : 0, len);
	if (!*want || len < *want)
		*want = len;
	if (!sent || *want < sent)
		WRITE_ONCE(conn->c_lg.lg_want_due, true);
}

/**
 * rdmaxfer_credit_skip_done - completion of a skip (an empty SEND)
 * @cq: the send CQ
 * @wc: its work completion
 *
 * Context: send CQ completion handler (softirq).
 */
void rdmaxfer_credit_skip_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_conn *conn = container_of(wc->wr_cqe, struct rdmaxfer_conn,
						  c_lg.lg_skip_cqe);

	rdmaxfer_conn_wc_failed(conn, wc);
	rdmaxfer_wr_release(conn, 1, 0);
}

/**
 * rdmaxfer_credit_claim - claim a credit for one message to the peer
 * @conn: the connection
 * @reserve: credits to leave unclaimed: 0 for a CREDIT or WANT message
 *	(they announce, so they never wait), 1 for any other message (the
 *	last credit is theirs), RDMAXFER_DATA_RESERVE for a copied SEND's data
 *
 * Every message to the peer, skips included, lands in one entry of its
 * receive queue, which it announced as a credit: this is where a sender
 * takes one, and rdmaxfer_credit_unclaim() where it gives back one it did not
 * use.  The message then goes with rdmaxfer_credit_post().
 *
 * Context: c_lock held.
 * Return: true if a credit was claimed.
 */
bool rdmaxfer_credit_claim(struct rdmaxfer_conn *conn, u32 reserve)
{
	lockdep_assert_held(&conn->c_lock);
	if (conn->c_lg.lg_credits <= reserve)
		return false;
	conn->c_lg.lg_credits--;
	return true;
}

/**
 * rdmaxfer_credit_unclaim - give back a credit a message did not use
 * @conn: the connection
 *
 * Context: c_lock held.
 */
void rdmaxfer_credit_unclaim(struct rdmaxfer_conn *conn)
{
	lockdep_assert_held(&conn->c_lock);
	conn->c_lg.lg_credits++;
}

/*
 * Bring the peer's receive entries to the first one a message of @kind and
 * @len fits: every entry before it is used up by a skip, which claims a
 * credit of its own (the last one stays for CREDIT messages) and a send WR.
 * On success the message must be posted before c_lock is dropped.  On
 * -EAGAIN (no announced entry fits yet, or no room to skip) some skips may
 * have been posted.  c_lock held.
 */
static int rdmaxfer_credit_place(struct rdmaxfer_conn *conn, u32 len, enum rdmaxfer_msg_kind kind)
{
	struct ib_send_wr wr = {
		.wr_cqe = &conn->c_lg.lg_skip_cqe,
		.opcode = IB_WR_SEND,		/* no SGE: an empty message */
		.send_flags = IB_SEND_SIGNALED,
	};
	u32 seq, skips = 0;
	int ret = 0;

	lockdep_assert_held(&conn->c_lock);
	for (seq = conn->c_lg.lg_tx_seq; seq != conn->c_lg.lg_tx_end; seq++)
		if (rdmaxfer_credit_fits(conn->c_lg.lg_tx_caps[seq % RDMAXFER_RQ_MIRROR], len,
					 kind))
			break;
	if (seq == conn->c_lg.lg_tx_end) {
		rdmaxfer_credit_want(conn, len, kind);
		return -EAGAIN;
	}
	/*
	 * Skip as many as the credits allow, also when not all: the entries
	 * skipped come back (control buffers while the peer has few posted,
	 * slots always), so the peer announces more and the rest can follow.
	 */
	while (conn->c_lg.lg_tx_seq != seq && conn->c_sq.sq_wr_free &&
	       rdmaxfer_credit_claim(conn, 1)) {
		ret = ib_post_send(conn->c_qp, &wr, NULL);
		if (ret) {
			rdmaxfer_credit_unclaim(conn);
			break;
		}
		conn->c_sq.sq_wr_free--;
		conn->c_lg.lg_tx_seq++;
		skips++;
	}
	if (skips)
		trace_rdmaxfer_flow(conn, RDMAXFER_FLOW_SKIP,
				    kind == RDMAXFER_KIND_USER ? RDMAXFER_MSG_USER : 0, skips);
	if (ret || conn->c_lg.lg_tx_seq == seq)
		return ret;
	rdmaxfer_credit_want(conn, len, kind);
	return -EAGAIN;
}

/**
 * rdmaxfer_credit_post - post a message into the peer's next entry it fits
 * @conn: the connection
 * @wr: the SEND; with slot headers (hdr.c) a user message's first SGE is
 *	its header's, filled in here once the message's entry is known
 * @cqe: its completion, owed from the post on (sq.c)
 * @len: its length on the wire
 * @kind: a control message, or a user's SEND, which only a slot takes
 * @imm: a user message's immediate data, for its header
 *
 * The caller has claimed a credit (rdmaxfer_credit_claim()) and a send WR for
 * the message.  Skips go first where the next announced entries do not
 * fit; the message then takes entry lg_tx_seq, and the next message the
 * one after it.  Every sender goes through here, so the entries are taken
 * in the order the mirror (lg_tx_caps) says.
 *
 * Context: c_lock held.
 * Return: 0; -EAGAIN if no announced entry fits yet (a WANT is then due,
 * see rdmaxfer_credit_want()) or no credit or WR is left for the skips
 * before it (some skips may have been posted); or the error of
 * ib_post_send().  On an error the message's credit and WR are still the
 * caller's to give back.
 */
int rdmaxfer_credit_post(struct rdmaxfer_conn *conn, struct ib_send_wr *wr,
			 struct rdmaxfer_cqe *cqe, u32 len, enum rdmaxfer_msg_kind kind, u32 imm)
{
	int ret;

	lockdep_assert_held(&conn->c_lock);
	ret = rdmaxfer_credit_place(conn, len, kind);
	if (ret)
		return ret;
	if (kind == RDMAXFER_KIND_USER && rdmaxfer_hdr_len(conn))
		rdmaxfer_hdr_tx(conn, wr->sg_list, imm);
	ret = ib_post_send(conn->c_qp, wr, NULL);
	if (ret)
		return ret;
	rdmaxfer_sq_owe(conn, cqe);
	conn->c_lg.lg_tx_seq++;
	return 0;
}

/*
 * Announce what we owe in @hdr and, for a CREDIT message, in runs after it;
 * returns the payload length.  c_lock held.
 */
u32 rdmaxfer_credit_announce(struct rdmaxfer_conn *conn, struct rdmaxfer_msg_hdr *hdr,
			     bool runs)
{
	struct rdmaxfer_msg_run *run = (void *)(hdr + 1);
	u32 n = 0, k = 0, cap;

	lockdep_assert_held(&conn->c_lock);
	while (conn->c_lg.lg_rx_ann + k != conn->c_lg.lg_rx_seq && k < U16_MAX &&
	       !(conn->c_lg.lg_rx_caps[(conn->c_lg.lg_rx_ann + k) % RDMAXFER_RQ_MIRROR] &
		 RDMAXFER_RUN_SLOT))
		k++;
	hdr->credits = cpu_to_be16(k);
	conn->c_lg.lg_rx_ann += k;
	while (runs && conn->c_lg.lg_rx_ann != conn->c_lg.lg_rx_seq && n < RDMAXFER_MAX_RUNS) {
		u32 count = 0;

		cap = conn->c_lg.lg_rx_caps[conn->c_lg.lg_rx_ann % RDMAXFER_RQ_MIRROR];
		while (conn->c_lg.lg_rx_ann != conn->c_lg.lg_rx_seq &&
		       conn->c_lg.lg_rx_caps[conn->c_lg.lg_rx_ann % RDMAXFER_RQ_MIRROR] == cap) {
			conn->c_lg.lg_rx_ann++;
			count++;
		}
		run[n].count = cpu_to_be32(count);
		run[n].cap = cpu_to_be32(cap);
		n++;
	}
	if (conn->c_lg.lg_rx_ann == conn->c_lg.lg_rx_seq)
		conn->c_sl.sl_user_new = 0;
	return n * sizeof(*run);
}

/* How the peer's waiting message fits the entries we posted (its WANT). */
enum rdmaxfer_want_fit {
	RDMAXFER_WANT_NO_FIT = -1,	/* nothing waits, or only the user's slots can help */
	RDMAXFER_WANT_ONE_SHORT,	/* one more entry would do (a control buffer we kept) */
	RDMAXFER_WANT_FITS,		/* an entry it fits, and one more after it */
};

/*
 * Can the peer's waiting message of @kind get through with our first @n
 * entries not completed yet (the peer holds those announced; @n up to all
 * we have posted): an entry it fits, and one more after it for the credit
 * the peer keeps?  c_lock held.  RDMAXFER_WANT_NO_FIT also when no entry
 * fits a user's SEND (only the user's slots can help) or nothing of that
 * kind waits.
 */
static enum rdmaxfer_want_fit rdmaxfer_credit_want_ready(struct rdmaxfer_conn *conn,
							 enum rdmaxfer_msg_kind kind, u32 n)
{
	u32 len = conn->c_lg.lg_peer_want[kind], i;

	lockdep_assert_held(&conn->c_lock);
	if (!len)
		return RDMAXFER_WANT_NO_FIT;
	/* never more than the queue holds, whatever the counts say */
	n = min_t(u32, n, RDMAXFER_RQ_SIZE);
	for (i = 0; i < n; i++)
		if (rdmaxfer_credit_fits(conn->c_lg.lg_rx_caps[(conn->c_lg.lg_rx_done + i) %
							   RDMAXFER_RQ_MIRROR], len, kind))
			break;
	if (i + 2 <= n)
		return RDMAXFER_WANT_FITS;
	/* a control buffer fits any control message */
	return i < n || kind == RDMAXFER_KIND_CTRL ? RDMAXFER_WANT_ONE_SHORT :
						     RDMAXFER_WANT_NO_FIT;
}

/* Owe the peer enough to tell it now?  See "Our side" above. */
static bool rdmaxfer_credit_due(struct rdmaxfer_conn *conn)
{
	u32 owed = READ_ONCE(conn->c_lg.lg_rx_seq) - READ_ONCE(conn->c_lg.lg_rx_ann);
	u32 posted = READ_ONCE(conn->c_cb.cb_posted) + READ_ONCE(conn->c_sl.sl_posted);
	u32 user = READ_ONCE(conn->c_sl.sl_user_new);

	/*
	 * Half of what is posted: a peer left with a single entry is always
	 * answered, and a CREDIT that takes one of its entries does not call
	 * for another at once.  Slots the user posts are told sooner: the
	 * peer may be waiting for one to send a message at all.
	 */
	return owed >= max(2U, posted / 2) ||
	       (user && user >= READ_ONCE(conn->c_sl.sl_posted) / 2);
}

/*
 * Owe the peer an answer to its WANT: it cannot place its message with the
 * entries it holds, and could if told of all we have posted?  c_lock held.
 */
static bool rdmaxfer_credit_want_due(struct rdmaxfer_conn *conn)
{
	u32 posted = conn->c_lg.lg_rx_seq - conn->c_lg.lg_rx_done;
	u32 held = conn->c_lg.lg_rx_ann - conn->c_lg.lg_rx_done;
	enum rdmaxfer_msg_kind kind;

	lockdep_assert_held(&conn->c_lock);
	if (!conn->c_lg.lg_peer_wants || conn->c_lg.lg_rx_ann == conn->c_lg.lg_rx_seq)
		return false;
	/* a peer that took entries it was not told of holds none */
	if (held > posted)
		held = 0;
	for (kind = 0; kind < RDMAXFER_NR_KINDS; kind++)
		if (rdmaxfer_credit_want_ready(conn, kind, held) != RDMAXFER_WANT_FITS &&
		    rdmaxfer_credit_want_ready(conn, kind, posted) == RDMAXFER_WANT_FITS)
			return true;
	return false;
}

/* Would one more posted entry let a message of the peer's WANT through? */
static bool rdmaxfer_credit_want_short(struct rdmaxfer_conn *conn)
{
	u32 posted = conn->c_lg.lg_rx_seq - conn->c_lg.lg_rx_done;

	lockdep_assert_held(&conn->c_lock);
	if (!conn->c_lg.lg_peer_wants)
		return false;
	if (rdmaxfer_credit_want_ready(conn, RDMAXFER_KIND_CTRL, posted) == RDMAXFER_WANT_ONE_SHORT)
		return true;
	return rdmaxfer_credit_want_ready(conn, RDMAXFER_KIND_USER, posted) ==
	       RDMAXFER_WANT_ONE_SHORT;
}

/*
 * Put back control buffers we kept after skips: while fewer than
 * RDMAXFER_MIN_RECVS entries are posted (see proto.h), or the peer's WANT
 * needs one more entry than we have posted.
 */
static void rdmaxfer_credit_spares_refill(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_ctrl *ct;

	do {
		ct = NULL;
		spin_lock_bh(&conn->c_lock);
		if (conn->c_cb.cb_posted + conn->c_sl.sl_posted < RDMAXFER_MIN_RECVS ||
		    rdmaxfer_credit_want_short(conn)) {
			ct = list_first_entry_or_null(&conn->c_cb.cb_spare, struct rdmaxfer_ctrl,
						      ct_entry);
			if (ct)
				list_del(&ct->ct_entry);
		}
		spin_unlock_bh(&conn->c_lock);
	} while (ct && !rdmaxfer_ctrl_post_recv(conn, ct));
}

/**
 * rdmaxfer_credit_maybe_send - announce owed receive entries if due
 * @conn: the connection
 *
 * In an empty CREDIT message (with runs for slots), when enough are owed
 * and a send buffer, a WR and a credit (the last one will do) are free.
 *
 * Context: any context that may take a spinlock; does not sleep.
 */
void rdmaxfer_credit_maybe_send(struct rdmaxfer_conn *conn)
{
	enum rdmaxfer_msg_type type = RDMAXFER_MSG_CREDIT;
	struct rdmaxfer_ctrl *ct;

	/* a hint, checked again under the lock */
	if (!list_empty(&conn->c_cb.cb_spare))
		rdmaxfer_credit_spares_refill(conn);
	if (!READ_ONCE(conn->c_lg.lg_peer_wants) && !READ_ONCE(conn->c_lg.lg_want_due) &&
	    !READ_ONCE(conn->c_first_due) && !rdmaxfer_credit_due(conn))
		return;
	spin_lock_bh(&conn->c_lock);
	ct = NULL;
	if (conn->c_lg.lg_want_due)
		type = RDMAXFER_MSG_WANT;
	if (conn->c_state == RDMAXFER_CS_ESTABLISHED && conn->c_sq.sq_wr_free &&
	    !list_empty(&conn->c_cb.cb_free_sends) &&
	    (type == RDMAXFER_MSG_WANT || rdmaxfer_credit_due(conn) ||
	     rdmaxfer_credit_want_due(conn) || conn->c_first_due) &&
	    rdmaxfer_credit_claim(conn, 0)) {
		ct = list_first_entry(&conn->c_cb.cb_free_sends, struct rdmaxfer_ctrl, ct_entry);
		list_del(&ct->ct_entry);
		conn->c_sq.sq_wr_free--;
	}
	spin_unlock_bh(&conn->c_lock);
	/* CREDIT and WANT messages fit any entry: they never wait */
	if (ct && __rdmaxfer_ctrl_post(conn, ct, type, 0))
		rdmaxfer_ctrl_unclaim(conn, ct);
}

/**
 * rdmaxfer_credit_grant - give the peer back what a held message took
 * @conn: the connection
 *
 * Called when the user takes what a message that held its credit brought
 * (RECV of its data, REAP of its event): its receive entry goes back on
 * the queue, to be announced.  A held slot goes first: it is the user's.
 *
 * Context: process context.
 */
void rdmaxfer_credit_grant(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_ctrl *ct = NULL;
	struct rdmaxfer_req *req;

	might_sleep();
	spin_lock_bh(&conn->c_lock);
	req = list_first_entry_or_null(&conn->c_sl.sl_held, struct rdmaxfer_req, r_held_entry);
	if (req) {
		list_del_init(&req->r_held_entry);
	} else {
		ct = list_first_entry_or_null(&conn->c_cb.cb_held, struct rdmaxfer_ctrl, ct_entry);
		if (ct)
			list_del_init(&ct->ct_entry);
	}
	spin_unlock_bh(&conn->c_lock);
	if (req && rdmaxfer_slot_post(conn, req, false))
		rdmaxfer_req_wc(req, IB_WC_WR_FLUSH_ERR);
	if (ct)
		rdmaxfer_ctrl_post_recv(conn, ct);
	rdmaxfer_credit_maybe_send(conn);
}

/*
 * The peer announced @n more receive entries of capacity @cap (with
 * RDMAXFER_RUN_SLOT for slots).  More than it may have is a protocol error.
 */
int rdmaxfer_credit_returned(struct rdmaxfer_conn *conn, u32 n, u32 cap)
{
	u32 now = 0, i;
	int ret = 0;

	if (!n)
		return 0;
	spin_lock_bh(&conn->c_lock);
	if (conn->c_lg.lg_tx_end - conn->c_lg.lg_tx_seq + (u64)n > conn->c_lg.lg_peer_recvs) {
		ret = -EPROTO;
	} else {
		for (i = 0; i < n; i++)
			conn->c_lg.lg_tx_caps[conn->c_lg.lg_tx_end++ % RDMAXFER_RQ_MIRROR] = cap;
		conn->c_lg.lg_credits += n;
		/* the senders that wait try again, and ask again if still stuck */
		WRITE_ONCE(conn->c_lg.lg_want_due, false);
		memset(conn->c_lg.lg_want, 0, sizeof(conn->c_lg.lg_want));
		memset(conn->c_lg.lg_want_sent, 0, sizeof(conn->c_lg.lg_want_sent));
		if (cap & RDMAXFER_RUN_SLOT)
			conn->c_lg.lg_peer_slots = true;
		now = conn->c_lg.lg_credits;
	}
	spin_unlock_bh(&conn->c_lock);
	if (!ret) {
		trace_rdmaxfer_credits(conn, n, now);
		wake_up_all(&conn->c_wait);
		rdmaxfer_echo_kick(conn);
	}
	return ret;
}

/* CREDIT: runs of receive entries (a peer that speaks slots), or nothing. */
int rdmaxfer_credit_handle(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_run *run = p;
	u32 i, count, cap;
	int ret;

	if (plen % sizeof(*run) || plen / sizeof(*run) > RDMAXFER_MAX_RUNS ||
	    (plen && !(conn->c_peer_features & RDMAXFER_HELLO_SLOTS)))
		return -EPROTO;
	for (i = 0; i < plen / sizeof(*run); i++) {
		count = be32_to_cpu(run[i].count);
		cap = be32_to_cpu(run[i].cap);
		if (!count || (cap & RDMAXFER_RUN_CAP_MASK) < RDMAXFER_MIN_SLOT)
			return -EPROTO;
		ret = rdmaxfer_credit_returned(conn, count, cap);
		if (ret)
			return ret;
	}
	return 0;
}

/* WANT: a message of the peer waits for our receive entries (proto.h). */
int rdmaxfer_credit_handle_want(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_want *want = p;
	u32 ctrl, data;

	if (plen != sizeof(*want) || !(conn->c_peer_features & RDMAXFER_HELLO_WANT))
		return -EPROTO;
	ctrl = be32_to_cpu(want->ctrl_length);
	data = be32_to_cpu(want->data_length);
	if ((!ctrl && !data) || ctrl > RDMAXFER_CTRL_SIZE || data > RDMAXFER_RUN_CAP_MASK)
		return -EPROTO;
	spin_lock_bh(&conn->c_lock);
	WRITE_ONCE(conn->c_lg.lg_peer_wants, true);
	conn->c_lg.lg_peer_want[RDMAXFER_KIND_CTRL] = ctrl;
	conn->c_lg.lg_peer_want[RDMAXFER_KIND_USER] = data;
	spin_unlock_bh(&conn->c_lock);
	/* answered when its buffer is back (rdmaxfer_credit_maybe_send()) */
	return 0;
}
