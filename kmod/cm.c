// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - connection management: rdma_cm events, the hello, and the
 * ioctls CONNECT, CLOSE and QUERY_CONN (a listener's side, LISTEN and
 * ACCEPT, is listen.c's).
 *
 * Connection setup.  The client (CONNECT) resolves the address and the
 * route and creates the QP in rdma_cm's handlers; then the ioctl's own
 * task sends the connect request with a struct rdmaxfer_cm_hello in the
 * private data (under the id's handler lock, as a handler would) and
 * waits for the outcome.  That task, not a kernel worker, is where an
 * iWARP device makes the connection's TCP socket (siw: sock_create() in
 * rdma_connect(), in the network namespace of the current task), so a
 * client in a namespace connects from it.  A listener's side is listen.c.
 * A connection's id is reserved when it is created, so events that arrive
 * before CONNECT returns (or before ACCEPT) already carry the right id,
 * and published (CLOSE and the other ioctls find it) only once it is
 * established.  Each connection has its own protection domain: its QP
 * and its windows' MRs live there, so an rkey is good on that one
 * connection only.
 *
 * The first message on iWARP.  MPA (RFC 5044), without the ready-to-
 * receive exchange of its enhanced connection setup (RFC 6581, which siw
 * does not do), lets the passive side send nothing before the active
 * side's first frame: the client's device must read the MPA reply before
 * any frame behind it, and siw fails a connect whose reply has more data
 * behind it in the socket (CONNECT_ERROR, -EINVAL).  So on iWARP the
 * client sends a CREDIT message as soon as it is established
 * (c_first_due), and a listener's connection, though up, is handed to
 * ACCEPT only once a message of the client's has come (listen.c).
 *
 * The QP, its buffers and teardown are conn.c's; this file decides when.
 * rdma_cm calls rdmaxfer_cm_handler() in its own worker threads; a handler
 * never tears its own connection down (rdma_destroy_id() would wait for
 * it): it calls rdmaxfer_conn_fail(), or returns 1 for an id nobody else
 * holds.
 *
 * Locking: see the order at the top of rdmaxfer.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/key.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_cm.h>

#include "rdmaxfer.h"
#include "trace.h"

#define RDMAXFER_RESOLVE_MS	5000

/* --- addresses ----------------------------------------------------------- */

/* Our address (uapi) as a socket address; -EAFNOSUPPORT for another family. */
int rdmaxfer_to_sockaddr(const struct rdmaxfer_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	switch (a->family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		memcpy(&sin->sin_addr, a->addr, 4);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a->port);
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

/* A socket address (IPv4 or IPv6) as our address. */
void rdmaxfer_from_sockaddr(const struct sockaddr *sa, struct rdmaxfer_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		a->family = AF_INET;
		a->port = ntohs(sin->sin_port);
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		a->family = AF_INET6;
		a->port = ntohs(sin6->sin6_port);
		a->scope_id = sin6->sin6_scope_id;
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

/* --- handshake ------------------------------------------------------------ */

static void rdmaxfer_hello_init(struct rdmaxfer_conn *conn, struct rdmaxfer_cm_hello_ext *x)
{
	struct rdmaxfer_cm_hello *h = &x->h;

	h->magic = cpu_to_be32(RDMAXFER_MAGIC);
	h->version = cpu_to_be16(RDMAXFER_PROTO_VERSION);
	h->credits = cpu_to_be16(RDMAXFER_RECV_DEPTH);
	h->ctrl_size = cpu_to_be32(RDMAXFER_CTRL_SIZE);
	h->seg_size = cpu_to_be32(rdmaxfer_seg_pages(conn->c_dev->rd_ib) * PAGE_SIZE);
	h->max_msg = cpu_to_be32(conn->c_max_msg);
	h->reserved = 0;
	x->features = cpu_to_be32(RDMAXFER_HELLO_SLOTS | RDMAXFER_HELLO_WANT |
				  (rdmaxfer_port_has_imm(conn->c_dev->rd_ib, conn->c_port) ?
				   0 : RDMAXFER_HELLO_SLOT_HDR) |
				  (conn->c_ka.ka_probe ? RDMAXFER_HELLO_PROBE : 0) |
				  RDMAXFER_HELLO_WINS);
	x->rq_entries = cpu_to_be32(RDMAXFER_RECV_DEPTH + RDMAXFER_MAX_SLOTS);
}

/*
 * Check the peer's hello and take its parameters; *reason says why not.
 * @has_imm: our port has immediate data (else slots need slot headers).
 */
int rdmaxfer_hello_parse(struct rdmaxfer_conn *conn, const void *data, u32 len,
			 bool has_imm, u32 *reason)
{
	const struct rdmaxfer_cm_hello_ext *x = data;
	const struct rdmaxfer_cm_hello *h = data;
	u32 credits, ctrl, seg, max_msg, features = 0, probe = 0, rq = 0, i;
	u32 wins = RDMAXFER_OLD_PEER_WINS;

	if (!h || len < sizeof(*h) || be32_to_cpu(h->magic) != RDMAXFER_MAGIC) {
		*reason = RDMAXFER_REJECT_NOT_RDMAXFER;
		return -EPROTO;
	}
	if (be16_to_cpu(h->version) != RDMAXFER_PROTO_VERSION) {
		*reason = RDMAXFER_REJECT_VERSION;
		return -EPROTONOSUPPORT;
	}
	credits = be16_to_cpu(h->credits);
	ctrl = be32_to_cpu(h->ctrl_size);
	seg = be32_to_cpu(h->seg_size);
	max_msg = be32_to_cpu(h->max_msg);
	if (credits <= RDMAXFER_DATA_RESERVE + 1 || credits > 1024 || ctrl < 256 || ctrl > SZ_64K ||
	    seg < SZ_4K || seg > SZ_256M || max_msg < SZ_4K || h->reserved) {
		*reason = RDMAXFER_REJECT_PARAMS;
		return -EPROTO;
	}
	/* an older peer sends less; what it leaves out reads as zero */
	if (len >= sizeof(*x)) {
		features = be32_to_cpu(x->features) &
			   (RDMAXFER_HELLO_SLOTS | RDMAXFER_HELLO_WANT | RDMAXFER_HELLO_SLOT_HDR);
		probe = be32_to_cpu(x->features) & RDMAXFER_HELLO_PROBE;
		if (!(features & RDMAXFER_HELLO_SLOTS))
			features = 0;	/* WANT is part of slots */
		rq = be32_to_cpu(x->rq_entries);
		if (be32_to_cpu(x->features) & RDMAXFER_HELLO_WINS)
			wins = RDMAXFER_MAX_PEER_WINS;
	}
	/* slots need immediate data, or else slot headers on both sides (hdr.c) */
	if (has_imm)
		features &= ~RDMAXFER_HELLO_SLOT_HDR;
	else if (!(features & RDMAXFER_HELLO_SLOT_HDR))
		features = 0;
	if (!rq)
		rq = credits;
	if (rq < credits || rq > RDMAXFER_RQ_MIRROR) {
		*reason = RDMAXFER_REJECT_PARAMS;
		return -EPROTO;
	}
	/* the READ probe stands apart from slots (keepalive.c) */
	conn->c_peer_features = features | probe;
	conn->c_slot_hdr = features & RDMAXFER_HELLO_SLOT_HDR;
	conn->c_lg.lg_credits = credits;
	conn->c_lg.lg_peer_recvs = rq;
	conn->c_lg.lg_tx_seq = 0;
	conn->c_lg.lg_tx_end = credits;
	for (i = 0; i < credits; i++)
		conn->c_lg.lg_tx_caps[i] = ctrl;
	conn->c_peer_ctrl_size = ctrl;
	conn->c_peer_seg_size = seg;
	conn->c_peer_max_msg = max_msg;
	conn->c_peer_max_wins = wins;
	return 0;
}

/* The largest WRITE/READ one operation may move (QUERY_CONN.max_op_size). */
void rdmaxfer_conn_limits(struct rdmaxfer_conn *conn)
{
	u64 piece;

	/* both ports must accept a message: ours (set up) and the peer's (hello) */
	conn->c_max_msg = min(conn->c_max_msg, conn->c_peer_max_msg);
	piece = min(conn->c_peer_seg_size, conn->c_max_msg);
	if (conn->c_read_piece)
		piece = min_t(u64, piece, conn->c_read_piece);
	u32 sge = min(conn->c_qp->max_write_sge, conn->c_qp->max_read_sge);
	u64 by_wrs = (u64)(conn->c_sq.sq_wr_free / 2) * sge * PAGE_SIZE;

	conn->c_max_op = min((u64)(RDMAXFER_RW_CTXS / 2 - 1) * piece, by_wrs);
}

/* --- CM events ------------------------------------------------------------- */

/*
 * What a CM event that ends an established connection says, unless its QP
 * broke by itself: then the drain tells why (0 to rdmaxfer_conn_fail(); a
 * disconnect that our own teardown or the peer answered is no orderly end).
 */
static int rdmaxfer_cm_reason(struct rdmaxfer_conn *conn, int error)
{
	return READ_ONCE(conn->c_broke) ? 0 : error;
}

static void rdmaxfer_connect_done(struct rdmaxfer_conn *conn, int error)
{
	bool up = false;
	int ret;

	if (error)
		cmpxchg(&conn->c_error, 0, error);
	spin_lock_bh(&conn->c_lock);
	if (!error && conn->c_state == RDMAXFER_CS_CONNECTING) {
		WRITE_ONCE(conn->c_state, RDMAXFER_CS_ESTABLISHED);
		rdmaxfer_conn_came_up(conn);
		up = true;
	}
	spin_unlock_bh(&conn->c_lock);
	/* with a key, our proof before anything of the user's: CONNECT waits (auth.c) */
	if (up && conn->c_auth) {
		ret = rdmaxfer_auth_send(conn);
		if (ret)
			rdmaxfer_conn_fail(conn, ret);
	}
	complete_all(&conn->c_route);
	complete_all(&conn->c_established);
}

/* Our connect request's or reply's parameters, with our hello in @hello. */
void rdmaxfer_conn_params(struct rdmaxfer_conn *conn, struct rdma_conn_param *param,
			  struct rdmaxfer_cm_hello_ext *hello)
{
	struct ib_device_attr *a = &conn->c_dev->rd_ib->attrs;

	rdmaxfer_hello_init(conn, hello);
	memset(param, 0, sizeof(*param));
	param->responder_resources = min(a->max_qp_rd_atom, RDMAXFER_RD_ATOM);
	param->initiator_depth = min(a->max_qp_init_rd_atom, RDMAXFER_RD_ATOM);
	/* finite everywhere: rxe retries forever at 7 (the RNR meaning) */
	param->retry_count = RDMAXFER_RETRY_COUNT;
	/* credits make RNR a protocol violation: retry a little, not forever */
	param->rnr_retry_count = 6;
	param->private_data = hello;
	param->private_data_len = sizeof(*hello);
}

/* The connection's two addresses, from its id's route. */
void rdmaxfer_conn_addrs(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	rdmaxfer_from_sockaddr((struct sockaddr *)&id->route.addr.src_addr, &conn->c_local);
	rdmaxfer_from_sockaddr((struct sockaddr *)&id->route.addr.dst_addr, &conn->c_peer);
}

/* Client: the route is known; create the QP (CONNECT's task connects). */
static int rdmaxfer_cm_route_resolved(struct rdmaxfer_conn *conn, struct rdma_cm_id *id)
{
	int ret;

	ret = rdmaxfer_conn_setup(conn, id);
	if (ret)
		return ret;
	rdmaxfer_conn_addrs(conn, id);
	rdmaxfer_ka_init(conn, id);
	conn->c_routed = true;
	complete_all(&conn->c_route);
	return 0;
}

/*
 * Client, from CONNECT's task once the QP is made: send the connect
 * request, under the id's handler lock (so no CM event of the id runs
 * meanwhile, as if this were the ROUTE_RESOLVED handler) and the teardown
 * lock (a removed device's teardown would destroy the id).  A failure
 * since (an error event, a removed device) is in c_error.
 */
static int rdmaxfer_cm_connect_routed(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_cm_auth req;	/* req.x: our hello */
	struct rdma_conn_param param;
	int ret = -ENOTCONN;

	might_sleep();
	mutex_lock(&conn->c_teardown_lock);
	if (!conn->c_torn_down && conn->c_id) {
		rdma_lock_handler(conn->c_id);
		ret = READ_ONCE(conn->c_error);
		if (!ret) {
			rdmaxfer_conn_params(conn, &param, &req.x);
			if (conn->c_auth) {	/* with our nonce */
				param.private_data = &req;
				param.private_data_len = rdmaxfer_auth_request(conn, &req);
			}
			ret = rdmaxfer_cm_fault() ? -ENOMEM :
			      rdma_connect_locked(conn->c_id, &param);
		}
		/* iWARP: the TCP connection is made in rdma_connect(), refused there */
		if (ret == -ECONNREFUSED)
			conn->c_reject_reason = RDMAXFER_REJECT_UNKNOWN;
		rdma_unlock_handler(conn->c_id);
	}
	mutex_unlock(&conn->c_teardown_lock);
	return ret;
}

/* Client: the server accepted; check its hello. */
static void rdmaxfer_cm_established_client(struct rdmaxfer_conn *conn,
					   struct rdma_cm_event *ev)
{
	bool imm = rdmaxfer_port_has_imm(conn->c_dev->rd_ib, conn->c_port);
	u32 reason = 0;
	int ret;

	ret = rdmaxfer_hello_parse(conn, ev->param.conn.private_data,
				   ev->param.conn.private_data_len, imm, &reason);
	if (!ret && conn->c_auth)
		ret = rdmaxfer_auth_check_reply(conn, ev->param.conn.private_data,
						ev->param.conn.private_data_len, &reason);
	if (!ret) {
		rdmaxfer_conn_limits(conn);
		rdmaxfer_count(conn->c_obj.file, RDMAXFER_C_CONNS, 1);
		trace_rdmaxfer_conn_up(conn, false);
	}
	rdmaxfer_connect_done(conn, ret);
	/* iWARP: we send first ("The first message on iWARP" above); a proof did */
	if (!ret && conn->c_iwarp && !conn->c_auth) {
		WRITE_ONCE(conn->c_first_due, true);
		rdmaxfer_credit_maybe_send(conn);
	}
}

static u32 rdmaxfer_reject_reason(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rdmaxfer_cm_reject *rej;
	u8 len = 0;

	rej = rdma_consumer_reject_data(id, ev, &len);
	/*
	 * siw reports an MPA reject as -ECONNRESET, which rdma_cm does not
	 * take for a consumer's reject on iWARP (it wants -ECONNREFUSED);
	 * the reply's private data is in the event all the same
	 */
	if (!rej && rdma_protocol_iwarp(id->device, id->port_num)) {
		rej = ev->param.conn.private_data;
		len = ev->param.conn.private_data_len;
	}
	if (!rej || len < sizeof(*rej) || be32_to_cpu(rej->magic) != RDMAXFER_MAGIC)
		return RDMAXFER_REJECT_UNKNOWN;
	return be16_to_cpu(rej->reason);
}

static int rdmaxfer_conn_cm_event(struct rdmaxfer_conn *conn, struct rdma_cm_id *id,
				  struct rdma_cm_event *ev)
{
	bool connecting = READ_ONCE(conn->c_state) == RDMAXFER_CS_CONNECTING;
	struct rdmaxfer_listener *l = READ_ONCE(conn->c_listener);
	int ret;

	pr_debug("conn %u: %s (%d)\n", conn->c_obj.id, rdma_event_msg(ev->event), ev->status);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, RDMAXFER_RESOLVE_MS);
		if (ret)
			rdmaxfer_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		/* CONNECT's task goes on (rdmaxfer_cm_connect_routed()) */
		ret = rdmaxfer_cm_route_resolved(conn, id);
		if (ret)
			rdmaxfer_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (l)
			rdmaxfer_listener_established(conn, l);
		else
			rdmaxfer_cm_established_client(conn, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (l) {	/* the client refused our reply */
			rdmaxfer_conn_fail(conn, -ECONNREFUSED);
			break;
		}
		conn->c_reject_reason = rdmaxfer_reject_reason(id, ev);
		rdmaxfer_connect_done(conn, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (l)		/* the client never confirmed our reply */
			rdmaxfer_conn_fail(conn, -EHOSTUNREACH);
		else
			rdmaxfer_connect_done(conn, -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rdmaxfer_connect_done(conn, -ENETUNREACH);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * Connections with a QP were torn down by our ib_client .remove,
		 * which runs first; this is one still resolving.  Give the id to
		 * the core (return 1) unless teardown already owns it.
		 */
		if (!conn->c_qp && xchg(&conn->c_id, NULL) == id) {
			rdmaxfer_connect_done(conn, -ENODEV);
			rdmaxfer_obj_put(&conn->c_obj);	/* the id's context */
			return 1;
		}
		rdmaxfer_conn_fail(conn, -ENODEV);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The peer closed: an orderly end, reported with status 0 --
		 * unless our device is going away and the peer on it was just
		 * torn down before us.  c_dev is stable here: teardown destroys
		 * the id (waiting for this handler) before it detaches.
		 */
		if (connecting && !l)
			rdmaxfer_connect_done(conn, -ECONNRESET);
		else if (conn->c_dev && READ_ONCE(conn->c_dev->rd_dying))
			rdmaxfer_conn_fail(conn, -ENODEV);
		else
			rdmaxfer_conn_fail(conn, rdmaxfer_cm_reason(conn, -ESHUTDOWN));
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		if (connecting && !l)
			rdmaxfer_connect_done(conn, -ECONNRESET);
		else
			rdmaxfer_conn_fail(conn, rdmaxfer_cm_reason(conn, -ECONNRESET));
		break;
	default:
		break;
	}
	return 0;
}

static int rdmaxfer_cm_event(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			     struct rdmaxfer_obj *obj)
{
	if (obj->type == RDMAXFER_OBJ_CONN)
		return rdmaxfer_conn_cm_event(container_of(obj, struct rdmaxfer_conn, c_obj),
					      id, ev);
	return rdmaxfer_listener_cm_event(container_of(obj, struct rdmaxfer_listener, l_obj),
					  id, ev);
}

/**
 * rdmaxfer_cm_handler - the event handler of every rdma_cm id we create
 * @id: the id (its context: our object, or NULL once teardown owns it)
 * @ev: the event
 *
 * What handlers allocate for a file is charged to the file's opener.
 *
 * Context: rdma_cm's handler (process context, the id's handler lock held).
 * Return: 1 to have rdma_cm destroy @id, else 0.
 */
int rdmaxfer_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdmaxfer_obj *obj = id->context;
	struct mem_cgroup *old;
	int ret;

	if (!obj)
		return 0;
	old = set_active_memcg(obj->file->rf_memcg);
	ret = rdmaxfer_cm_event(id, ev, obj);
	set_active_memcg(old);
	return ret;
}

/* --- ioctls ----------------------------------------------------------------- */

/* iWARP: TCP held the port rdma_cm chose (see rdmaxfer_ioctl_connect()). */
static bool rdmaxfer_connect_port_taken(int ret)
{
	return ret == -EADDRINUSE || ret == -EADDRNOTAVAIL;
}

/*
 * One attempt of CONNECT: a new connection and rdma_cm id to @ss, until
 * @deadline.  On success the connection is published and its id is in
 * @cmd; on failure it is gone.
 */
static int rdmaxfer_connect_once(struct rdmaxfer_file *rf, struct rdmaxfer_connect *cmd,
				 struct sockaddr_storage *ss, struct key *key,
				 unsigned long deadline)
{
	unsigned long tmo = time_after(deadline, jiffies) ? deadline - jiffies : 1;
	struct rdmaxfer_conn *conn;
	struct rdma_cm_id *id;
	long left;
	int ret;

	if (!rdmaxfer_conns_get(rf))
		return -EMFILE;
	conn = rdmaxfer_conn_alloc(rf);
	if (IS_ERR(conn)) {
		rdmaxfer_conns_put(rf);
		return PTR_ERR(conn);
	}
	conn->c_counted = true;
	/* each attempt with a nonce of its own (auth.c) */
	ret = key ? rdmaxfer_auth_client_start(conn, key) : 0;
	/* reserved now (events carry it), published once established */
	if (!ret)
		ret = rdmaxfer_obj_reserve(&conn->c_obj);
	if (ret) {
		rdmaxfer_obj_fini(&conn->c_obj);
		rdmaxfer_conn_free(conn);
		return ret;
	}
	id = rdma_create_id(rf->rf_net, rdmaxfer_cm_handler, &conn->c_obj, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto fail;
	}
	kref_get(&conn->c_obj.ref);			/* the id's context */
	conn->c_id = id;
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)ss,
				min_t(unsigned int, jiffies_to_msecs(tmo), RDMAXFER_RESOLVE_MS));
	if (ret)
		goto fail;

	left = wait_for_completion_interruptible_timeout(&conn->c_route, tmo);
	if (left > 0 && conn->c_routed) {
		ret = rdmaxfer_cm_connect_routed(conn);
		if (ret)
			rdmaxfer_connect_done(conn, ret);
		tmo = time_after(deadline, jiffies) ? deadline - jiffies : 0;
		left = wait_for_completion_interruptible_timeout(&conn->c_established, tmo);
	}
	spin_lock_bh(&conn->c_lock);
	if (left < 0)
		ret = -EINTR;
	/* with a key, up is not enough: our proof must have gone (connect_done) */
	else if (conn->c_state == RDMAXFER_CS_ESTABLISHED &&
		 !(conn->c_auth && READ_ONCE(conn->c_error)))
		ret = 0;
	else
		ret = READ_ONCE(conn->c_error) ?: READ_ONCE(conn->c_broke) ? -EIO : -ETIMEDOUT;
	spin_unlock_bh(&conn->c_lock);
	/*
	 * established, but the peer closed before we got here; or the QP
	 * broke first (-EIO: on iWARP the peer's abortive close of a
	 * connection it never accepted is a fatal QP event here)
	 */
	if (ret == -ESHUTDOWN || ret == -EIO)
		ret = -ECONNRESET;
	if (ret)
		goto fail;
	cmd->conn_id = conn->c_obj.id;
	rdmaxfer_obj_publish(&conn->c_obj);
	rdmaxfer_obj_put(&conn->c_obj);
	return 0;

fail:
	cmd->reject_reason = ret == -ECONNREFUSED ? conn->c_reject_reason : 0;
	/* counted once, by the caller, if no other attempt succeeds */
	if (rdmaxfer_connect_port_taken(ret))
		xchg(&conn->c_error, -ECANCELED);
	rdmaxfer_conn_teardown(conn, -ECANCELED);
	rdmaxfer_obj_remove(&conn->c_obj);		/* only reserved */
	rdmaxfer_obj_put(&conn->c_obj);
	return ret;
}

/**
 * rdmaxfer_ioctl_connect - RDMAXFER_IOC_CONNECT
 * @rf: the file
 * @arg: struct rdmaxfer_connect
 *
 * Context: process context, sleeps interruptibly until the connection is
 * established, refused, or the timeout passes.
 * A peer at the all-zero address is refused: rdma_cm would take it for a
 * loopback to the first device and tie the id to it inside
 * rdma_resolve_addr(), where a DEVICE_REMOVAL could destroy the id under
 * that call.
 *
 * An iWARP device makes the connection's TCP socket in rdma_connect() and
 * binds it to the port rdma_cm chose for the id, which rdma_cm picks from
 * the ephemeral range without asking TCP: TCP may still hold that port (a
 * TIME_WAIT of a socket without SO_REUSEADDR: -EADDRINUSE) or the very
 * connection (a TIME_WAIT of an earlier one to the same listener:
 * -EADDRNOTAVAIL).  Such an attempt is made again with a new id, which
 * rdma_cm gives another port, as TCP's own connect() would have picked
 * one that is free: up to RDMAXFER_CONNECT_TRIES attempts, all within the
 * timeout.
 *
 * Return: 0, -ECONNREFUSED (reject_reason is set), -EHOSTUNREACH,
 * -ENETUNREACH, -ETIMEDOUT, -EINTR, -ENODEV, -EMFILE, -ENOMEM, -EINVAL (the
 * all-zero address), -EADDRINUSE or -EADDRNOTAVAIL (every attempt's port
 * was taken).
 */
int rdmaxfer_ioctl_connect(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_connect *cmd = arg;
	struct rdmaxfer_addr addr = cmd->addr;
	struct sockaddr_storage ss;
	struct key *key = NULL;
	unsigned long deadline;
	int ret, tries = 0;

	if (cmd->__reserved)
		return -EINVAL;
	if (!addr.port)
		addr.port = RDMAXFER_DEFAULT_PORT;
	ret = rdmaxfer_to_sockaddr(&addr, &ss);
	if (ret)
		return ret;
	if (!memchr_inv(addr.addr, 0, addr.family == AF_INET ? 4 : 16))
		return -EINVAL;
	/* with the caller's credentials, before anything goes on the wire */
	if (cmd->key_id) {
		ret = rdmaxfer_key_get(cmd->key_id, &key);
		if (ret)
			return ret;
	}
	deadline = jiffies + (cmd->timeout_ns > 0 ?
			      max_t(unsigned long, 1, nsecs_to_jiffies(cmd->timeout_ns)) :
			      msecs_to_jiffies(RDMAXFER_CONNECT_TIMEOUT_MS));
	do {
		ret = rdmaxfer_connect_once(rf, cmd, &ss, key, deadline);
	} while (rdmaxfer_connect_port_taken(ret) && ++tries < RDMAXFER_CONNECT_TRIES &&
		 time_before(jiffies, deadline));
	if (key)
		key_put(key);
	if (rdmaxfer_connect_port_taken(ret))
		rdmaxfer_count(rf, RDMAXFER_C_CONN_ERRORS, 1);
	return ret;
}

/**
 * rdmaxfer_ioctl_close - RDMAXFER_IOC_CLOSE
 * @rf: the file
 * @arg: struct rdmaxfer_close
 *
 * Context: process context, may sleep (drains the connection).
 * Return: 0, -ENOENT (not a listener or connection of this file), -EINVAL.
 */
int rdmaxfer_ioctl_close(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_close *cmd = arg;
	struct rdmaxfer_obj *obj;

	if (cmd->__reserved)
		return -EINVAL;
	obj = rdmaxfer_obj_get(rf, cmd->id, RDMAXFER_OBJ_CONN) ?:
	      rdmaxfer_obj_get(rf, cmd->id, RDMAXFER_OBJ_LISTENER);
	if (!obj)
		return -ENOENT;
	if (!rdmaxfer_obj_remove(obj)) {
		rdmaxfer_obj_put(obj);
		return -ENOENT;
	}
	rdmaxfer_obj_put(obj);				/* the table's */
	if (obj->type == RDMAXFER_OBJ_CONN)
		rdmaxfer_conn_teardown(container_of(obj, struct rdmaxfer_conn, c_obj),
				       -ECANCELED);
	else
		rdmaxfer_listener_close(container_of(obj, struct rdmaxfer_listener, l_obj));
	rdmaxfer_obj_put(obj);
	return 0;
}

/**
 * rdmaxfer_ioctl_query_conn - RDMAXFER_IOC_QUERY_CONN
 * @rf: the file
 * @arg: struct rdmaxfer_conn_info
 *
 * Context: process context.
 * Return: 0, -ENOENT.
 */
int rdmaxfer_ioctl_query_conn(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_conn_info *cmd = arg;
	struct rdmaxfer_conn_info out = {
		.size = cmd->size,
		.flags = cmd->flags,
		.conn_id = cmd->conn_id,
	};
	struct rdmaxfer_conn *conn;

	conn = rdmaxfer_obj_get(rf, cmd->conn_id, RDMAXFER_OBJ_CONN);
	if (!conn)
		return -ENOENT;
	mutex_lock(&conn->c_teardown_lock);
	out.state = READ_ONCE(conn->c_state);
	out.local = conn->c_local;
	out.peer = conn->c_peer;
	if (conn->c_dev)
		out.dev_index = conn->c_dev->rd_index;
	out.port = conn->c_port;
	out.queue_depth = RDMAXFER_RW_CTXS;
	out.max_send_size = min_t(u32, RDMAXFER_MAX_SEND,
				  conn->c_peer_ctrl_size - sizeof(struct rdmaxfer_msg_hdr));
	out.max_op_size = conn->c_max_op;
	if (conn->c_dev)
		out.max_window_size = (u64)RDMAXFER_MAX_WIN_SEGS *
				      rdmaxfer_seg_pages(conn->c_dev->rd_ib) * PAGE_SIZE -
				      PAGE_SIZE;
	out.max_msg_size = rdmaxfer_lmr_max_msg(conn);
	if (conn->c_peer_features & RDMAXFER_HELLO_SLOTS)
		out.conn_flags |= RDMAXFER_CONN_F_RECV_SLOTS;
	if (READ_ONCE(conn->c_lg.lg_peer_slots))
		out.conn_flags |= RDMAXFER_CONN_F_PEER_SLOTS;
	spin_lock_bh(&conn->c_lock);
	out.sink_msgs = conn->c_sl.sl_sink_msgs;
	out.sink_bytes = conn->c_sl.sl_sink_bytes;
	spin_unlock_bh(&conn->c_lock);
	mutex_unlock(&conn->c_teardown_lock);
	rdmaxfer_obj_put(&conn->c_obj);
	*cmd = out;
	return 0;
}
