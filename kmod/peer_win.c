// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the peer's windows: what its ADVERT messages offer us.
 *
 * A struct rdmaxfer_peer_win lives in the connection's c_peer_wins
 * xarray, built from an ADVERT after checking every field (lengths,
 * counts, overflow of address + length, access bits, a duplicate id), and
 * goes with the peer's REVOKE or the connection.  SUBMIT looks its
 * operations' windows up there (xfer.c).
 *
 * Locking: c_peer_win_lock (a mutex per connection) covers c_peer_wins;
 * the receive work takes it to add and remove, SUBMIT to look up.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/overflow.h>
#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

/**
 * rdmaxfer_peer_win_add - record a window the peer advertised
 * @conn: the connection
 * @msg: the ADVERT payload
 * @len: its length
 *
 * Every field is checked: lengths, counts, overflow of address + length,
 * access bits, a duplicate id; and the connection's peer windows stay
 * within RDMAXFER_MAX_PEER_WINS and RDMAXFER_MAX_FILE_MRS segments.
 *
 * Context: process context (the receive work).
 * Return: 0, -EPROTO for a malformed message, -ENOMEM.
 */
int rdmaxfer_peer_win_add(struct rdmaxfer_conn *conn, const void *msg, u32 len)
{
	const struct rdmaxfer_msg_advert *adv = msg;
	struct rdmaxfer_peer_win *pw;
	u64 total = 0, end;
	u32 i, nsegs, id;
	int ret;

	if (len < sizeof(*adv))
		return -EPROTO;
	nsegs = be32_to_cpu(adv->nsegs);
	id = be32_to_cpu(adv->window_id);
	if (!nsegs || nsegs > RDMAXFER_MAX_WIN_SEGS || len != struct_size(adv, segs, nsegs) ||
	    !id || adv->reserved ||
	    be32_to_cpu(adv->access) & ~(RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE |
					 RDMAXFER_REMOTE_ATOMIC) || !adv->access)
		return -EPROTO;
	pw = kzalloc(struct_size(pw, pw_segs, nsegs), GFP_KERNEL_ACCOUNT);
	if (!pw)
		return -ENOMEM;
	pw->pw_id = id;
	pw->pw_access = be32_to_cpu(adv->access);
	pw->pw_length = be64_to_cpu(adv->length);
	pw->pw_nsegs = nsegs;
	for (i = 0; i < nsegs; i++) {
		pw->pw_segs[i].addr = be64_to_cpu(adv->segs[i].addr);
		pw->pw_segs[i].rkey = be32_to_cpu(adv->segs[i].rkey);
		pw->pw_segs[i].length = be32_to_cpu(adv->segs[i].length);
		if (!pw->pw_segs[i].length ||
		    check_add_overflow(pw->pw_segs[i].addr, (u64)pw->pw_segs[i].length, &end))
			goto bad;
		total += pw->pw_segs[i].length;
	}
	if (total != pw->pw_length)
		goto bad;
	mutex_lock(&conn->c_peer_win_lock);
	if (conn->c_npeer_wins >= RDMAXFER_MAX_PEER_WINS ||
	    conn->c_npeer_segs + nsegs > RDMAXFER_MAX_FILE_MRS) {
		ret = -EPROTO;		/* more than a peer may expose to us */
	} else {
		ret = xa_insert(&conn->c_peer_wins, id, pw, GFP_KERNEL);
		if (!ret) {
			conn->c_npeer_wins++;
			conn->c_npeer_segs += nsegs;
		}
	}
	mutex_unlock(&conn->c_peer_win_lock);
	if (ret) {
		kfree(pw);
		return ret == -EBUSY ? -EPROTO : ret;
	}
	return 0;
bad:
	kfree(pw);
	return -EPROTO;
}

/**
 * rdmaxfer_peer_win_del - forget a window the peer revoked
 * @conn: the connection
 * @id: the peer's window id
 *
 * Operations already posted on it fail at the peer (remote access error).
 *
 * Context: process context.
 * Return: 0, -EPROTO if the peer never advertised it.
 */
int rdmaxfer_peer_win_del(struct rdmaxfer_conn *conn, u32 id)
{
	struct rdmaxfer_peer_win *pw;

	mutex_lock(&conn->c_peer_win_lock);
	pw = xa_erase(&conn->c_peer_wins, id);
	if (pw) {
		conn->c_npeer_wins--;
		conn->c_npeer_segs -= pw->pw_nsegs;
	}
	mutex_unlock(&conn->c_peer_win_lock);
	if (!pw)
		return -EPROTO;
	kfree(pw);
	return 0;
}

/**
 * rdmaxfer_peer_win_free_all - forget every window of the peer
 * @conn: the connection, torn down
 */
void rdmaxfer_peer_win_free_all(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_peer_win *pw;
	unsigned long id;

	lockdep_assert_held(&conn->c_teardown_lock);

	mutex_lock(&conn->c_peer_win_lock);
	xa_for_each(&conn->c_peer_wins, id, pw) {
		xa_erase(&conn->c_peer_wins, id);
		kfree(pw);
	}
	conn->c_npeer_wins = 0;
	conn->c_npeer_segs = 0;
	mutex_unlock(&conn->c_peer_win_lock);
}
