// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - the listener: LISTEN and ACCEPT, and a listener's side of
 * connection setup (CONNECT_REQUEST, ESTABLISHED).
 *
 * A listener is an rdma_cm id listening on an address and port, with a
 * backlog.  Its CONNECT_REQUEST handler checks the client's hello (wrong
 * magic, version or parameters: rejected with a reason the client
 * reports, cm.c), creates the QP and accepts at once; the connection
 * waits on l_pending until it is established, then on l_queue until
 * ACCEPT hands it out, and counts against the backlog meanwhile.  Closing
 * the listener tears down every connection not yet handed out.
 *
 * With a key (auth.c), a connection is queued only once its client's
 * proof has come; until then it counts against the backlog, and when the
 * backlog is full the oldest such connection is evicted for a new request
 * (rdmaxfer_listener_evict()), so unproven clients cannot keep proven ones
 * out.
 *
 * On iWARP a connection is queued for ACCEPT only once the client's first
 * message has come (cm.c, "The first message on iWARP"): up, but silent,
 * until then (c_await_first); the receive handler of that message queues
 * c_up_work, which hands it out.  Keepalive probes wait for that message
 * too, and fail the connection after two ticks without it.
 *
 * Locking: see the order at the top of rdmaxfer.h; l_lock (a leaf) guards
 * a listener's queues.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/key.h>
#include <linux/slab.h>
#include <rdma/ib_cm.h>

#include "rdmaxfer.h"
#include "trace.h"

/* --- a listener's connections -------------------------------------------- */

/*
 * Server: the connection is up and the client has been heard (on iWARP);
 * publish it and queue it for ACCEPT.  Process context: the ESTABLISHED
 * handler, or c_up_work.
 */
static void rdmaxfer_listener_hand_out(struct rdmaxfer_conn *conn, struct rdmaxfer_listener *l)
{
	struct rdmaxfer_file *rf = conn->c_obj.file;
	bool queued = false;

	/*
	 * Complete now: the id names it (CLOSE may find it).  If the listener
	 * is closing, its teardown of this connection removes the id again
	 * (rdma_destroy_id() waits for the handler; teardown cancels
	 * c_up_work).
	 */
	rdmaxfer_obj_publish(&conn->c_obj);
	spin_lock(&l->l_lock);
	if (!l->l_closed && conn->c_lq == RDMAXFER_LQ_PENDING) {
		list_move_tail(&conn->c_entry, &l->l_queue);
		l->l_npending--;
		l->l_queued++;
		conn->c_lq = RDMAXFER_LQ_QUEUED;
		queued = true;
	}
	spin_unlock(&l->l_lock);
	if (!queued) {
		rdmaxfer_conn_fail(conn, -ECONNABORTED);
		return;
	}
	rdmaxfer_count(rf, RDMAXFER_C_CONNS, 1);
	rdmaxfer_queue_event_always(rf, l->l_obj.id, RDMAXFER_EVENT_CONNECTED, 0, conn->c_obj.id);
}

/**
 * rdmaxfer_listener_established - a listener's connection is up
 * @conn: the connection
 * @l: its listener
 *
 * Queues it for ACCEPT, or on iWARP waits for the client's first message.
 *
 * Context: rdma_cm's ESTABLISHED handler.
 */
void rdmaxfer_listener_established(struct rdmaxfer_conn *conn, struct rdmaxfer_listener *l)
{
	bool up = false, wait = false;

	/*
	 * Up before ACCEPT can take it: an ioctl on the id ACCEPT returns must
	 * find the connection established (it found it CONNECTING, ENOTCONN,
	 * when ACCEPT won the race with the lines below).
	 */
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state == RDMAXFER_CS_CONNECTING) {
		WRITE_ONCE(conn->c_state, RDMAXFER_CS_ESTABLISHED);
		rdmaxfer_conn_came_up(conn);
		up = true;
		/* iWARP: not before the client's first message (ctrl.c); with a key, its proof */
		wait = (conn->c_iwarp && !conn->c_peer_spoke) || conn->c_auth_wait;
		conn->c_await_first = wait;
	}
	spin_unlock_bh(&conn->c_lock);
	if (up)
		trace_rdmaxfer_conn_up(conn, true);
	if (!wait)
		rdmaxfer_listener_hand_out(conn, l);
}

/**
 * rdmaxfer_listener_up_work - hand out a listener's iWARP connection once heard
 * @work: the connection's c_up_work, queued by the receive handler of the
 *	client's first message
 *
 * Context: process context (rdmaxfer_wq); teardown cancels it after the
 * drain, so the connection and its listener reference are alive.
 */
void rdmaxfer_listener_up_work(struct work_struct *work)
{
	struct rdmaxfer_conn *conn = container_of(work, struct rdmaxfer_conn, c_up_work);
	struct rdmaxfer_listener *l;

	spin_lock_bh(&conn->c_lock);
	l = conn->c_state == RDMAXFER_CS_ESTABLISHED ? conn->c_listener : NULL;
	spin_unlock_bh(&conn->c_lock);
	if (l)
		rdmaxfer_listener_hand_out(conn, l);
}

static void rdmaxfer_reject(struct rdma_cm_id *id, u32 reason)
{
	struct rdmaxfer_cm_reject rej = {
		.magic = cpu_to_be32(RDMAXFER_MAGIC),
		.version = cpu_to_be16(RDMAXFER_PROTO_VERSION),
		.reason = cpu_to_be16(reason),
	};

	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * The backlog is full: make room by evicting the oldest connection whose
 * client has not proved the key yet, so that unproven clients cannot keep
 * proven ones out.  An honest client proves it one round trip after the
 * reply, so it is evicted only when a backlog's worth of newer requests
 * came in that time.  Evicted connections still going down count apart,
 * up to another backlog's worth: memory stays bounded by twice the
 * backlog.  Returns the victim (a reference), for the caller to fail
 * outside l_lock, or NULL.  l_lock held.
 */
static struct rdmaxfer_conn *rdmaxfer_listener_evict(struct rdmaxfer_listener *l)
{
	struct rdmaxfer_conn *conn;

	lockdep_assert_held(&l->l_lock);
	if (l->l_nevicting >= l->l_backlog)
		return NULL;
	list_for_each_entry(conn, &l->l_pending, c_entry) {
		/*
		 * Unproven, and silent: a proof on its way (it has landed:
		 * c_peer_spoke) is let through, a wrong one drops it anyway.
		 * Read without c_lock (a leaf, as l_lock is): a proof landing
		 * right now may still lose its connection, which its client
		 * then sees go down.
		 */
		if (!READ_ONCE(conn->c_auth_wait) || READ_ONCE(conn->c_peer_spoke))
			continue;
		list_del_init(&conn->c_entry);
		conn->c_lq = RDMAXFER_LQ_EVICTED;
		l->l_npending--;
		l->l_nevicting++;
		kref_get(&conn->c_obj.ref);
		return conn;
	}
	return NULL;
}

/* A client refused by who-may-connect (auth.c): count and trace it. */
static void rdmaxfer_refused(struct rdmaxfer_listener *l, struct rdma_cm_id *id, u32 reason)
{
	struct rdmaxfer_addr peer;

	rdmaxfer_count(l->l_obj.file, reason == RDMAXFER_REJECT_NOT_ALLOWED ?
		       RDMAXFER_C_NOT_ALLOWED : RDMAXFER_C_AUTH_FAILED, 1);
	rdmaxfer_from_sockaddr((struct sockaddr *)&id->route.addr.dst_addr, &peer);
	trace_rdmaxfer_admit(l->l_obj.file, 0, &peer, true, reason);
	pr_info_ratelimited("listener %u: refused %pISc: %s\n", l->l_obj.id,
			    &id->route.addr.dst_addr,
			    reason == RDMAXFER_REJECT_NOT_ALLOWED ? "not on the allow-list" :
			    reason == RDMAXFER_REJECT_AUTH_REQUIRED ?
			    "it has no key, we require one" :
			    "it asks for a key, we have none usable");
}

/*
 * Listener: a client wants to connect.  Check who it is (auth.c) and its
 * hello, set the connection up and accept; or reject with a reason and
 * return 1 so that the core destroys the new id.
 */
static int rdmaxfer_cm_connect_request(struct rdmaxfer_listener *l, struct rdma_cm_id *id,
				       struct rdma_cm_event *ev)
{
	const void *data = ev->param.conn.private_data;
	u32 len = ev->param.conn.private_data_len;
	struct rdma_conn_param param;
	struct rdmaxfer_cm_auth rep;	/* rep.x: our hello */
	struct rdmaxfer_conn *conn, *victim;
	u32 reason = RDMAXFER_REJECT_RESOURCES;
	struct ib_device_attr *a;
	int ret;

	/* before anything is made for the client */
	if (!rdmaxfer_allowed(l, (struct sockaddr *)&id->route.addr.dst_addr)) {
		reason = RDMAXFER_REJECT_NOT_ALLOWED;
		rdmaxfer_refused(l, id, reason);
		goto reject;
	}
	conn = rdmaxfer_cm_fault() ? ERR_PTR(-ENOMEM) : rdmaxfer_conn_alloc(l->l_obj.file);
	if (IS_ERR(conn))
		goto reject;
	if (rdmaxfer_hello_parse(conn, data, len,
				 rdmaxfer_port_has_imm(id->device, id->port_num), &reason))
		goto reject_free;
	if (rdmaxfer_auth_admit(l, data, len, &reason)) {
		rdmaxfer_refused(l, id, reason);
		goto reject_free;
	}

	spin_lock(&l->l_lock);
	victim = NULL;
	if (!l->l_closed && l->l_queued + l->l_npending >= l->l_backlog)
		victim = rdmaxfer_listener_evict(l);
	if (l->l_closed || l->l_queued + l->l_npending >= l->l_backlog) {
		spin_unlock(&l->l_lock);
		reason = RDMAXFER_REJECT_BACKLOG;
		goto reject_free;
	}
	list_add_tail(&conn->c_entry, &l->l_pending);
	conn->c_lq = RDMAXFER_LQ_PENDING;
	l->l_npending++;
	kref_get(&l->l_obj.ref);
	conn->c_listener = l;
	spin_unlock(&l->l_lock);
	if (victim) {	/* it never proved the key, and we need its room */
		rdmaxfer_conn_fail(victim, -ETIMEDOUT);
		rdmaxfer_obj_put(&victim->c_obj);
	}

	reason = RDMAXFER_REJECT_RESOURCES;
	conn->c_id = id;
	id->context = &conn->c_obj;
	kref_get(&conn->c_obj.ref);			/* the id's context */
	ret = rdmaxfer_conn_setup(conn, id);
	if (ret)
		goto reject_later;
	rdmaxfer_conn_addrs(conn, id);
	rdmaxfer_conn_limits(conn);
	/* its id, for the events of messages that may beat ESTABLISHED */
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdmaxfer_obj_reserve(&conn->c_obj);
	if (ret)
		goto reject_later;

	rdmaxfer_conn_params(conn, &param, &rep.x);
	/* the client's retry count is our QP's (7 may mean forever): keepalive.c */
	rdmaxfer_ka_init(conn, id);
	/*
	 * The request's depths are told from our side (ib_cm, iw_cm alike):
	 * the READs the client may have outstanding at us, the READs it
	 * answers.
	 */
	a = &conn->c_dev->rd_ib->attrs;
	param.responder_resources = min3(a->max_qp_rd_atom, RDMAXFER_RD_ATOM,
					 (int)ev->param.conn.responder_resources);
	param.initiator_depth = min3(a->max_qp_init_rd_atom, RDMAXFER_RD_ATOM,
				     (int)ev->param.conn.initiator_depth);
	/*
	 * The READ probe (keepalive.c) needs READs both ways: where either
	 * way has none, neither side offers it, so neither sends a PROBE
	 * message the other would take for a protocol error.
	 */
	if (!param.initiator_depth || !param.responder_resources) {
		conn->c_peer_features &= ~RDMAXFER_HELLO_PROBE;
		rep.x.features &= ~cpu_to_be32(RDMAXFER_HELLO_PROBE);
	}
	/* with a key: our nonce and proof; the client's proof is awaited */
	if (l->l_key) {
		ret = rdmaxfer_cm_fault() ? -ENOMEM :
		      rdmaxfer_auth_reply(conn, l->l_key, data, &rep, &reason);
		if (ret) {
			if (reason != RDMAXFER_REJECT_RESOURCES)
				rdmaxfer_refused(l, id, reason);
			goto reject_later;
		}
		param.private_data = &rep;
		param.private_data_len = sizeof(rep);
	}
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdma_accept(id, &param);
	if (ret) {
		rdmaxfer_conn_fail(conn, ret);
		rdmaxfer_obj_put(&conn->c_obj);
		return 0;	/* the teardown work destroys the id */
	}
	rdmaxfer_obj_put(&conn->c_obj);		/* the table holds it */
	return 0;

reject_later:
	/*
	 * Never tear down here: .remove may be tearing this connection down
	 * and waiting in rdma_destroy_id() for this very handler.  The work
	 * item destroys the id.
	 */
	rdmaxfer_reject(id, reason);
	rdmaxfer_conn_fail(conn, -ECONNABORTED);
	rdmaxfer_obj_put(&conn->c_obj);
	return 0;
reject_free:
	rdmaxfer_obj_fini(&conn->c_obj);
	rdmaxfer_conn_free(conn);
reject:
	rdmaxfer_reject(id, reason);
	return 1;
}

/**
 * rdmaxfer_listener_cm_event - a CM event of a listener's id
 * @l: the listener
 * @id: its id, or a new one (CONNECT_REQUEST)
 * @ev: the event
 *
 * Context: rdma_cm's handler (rdmaxfer_cm_handler()).
 * Return: 1 to have rdma_cm destroy @id, else 0.
 */
int rdmaxfer_listener_cm_event(struct rdmaxfer_listener *l, struct rdma_cm_id *id,
			       struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return rdmaxfer_cm_connect_request(l, id, ev);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * A listener bound to an address of the removed device.  Returning
		 * 1 makes rdma_cm destroy the id at once, which is only allowed
		 * when nobody else can be using it: while LISTEN is still between
		 * rdma_bind_addr() and its last look at the id, leave the id to
		 * LISTEN, which fails with -ENODEV and destroys it.
		 */
		spin_lock(&l->l_lock);
		if (!l->l_ready) {
			l->l_removed = true;
			spin_unlock(&l->l_lock);
			return 0;
		}
		spin_unlock(&l->l_lock);
		if (xchg(&l->l_id, NULL) == id) {
			wake_up_all(&l->l_obj.file->rf_wait);	/* ACCEPT: ENODEV */
			rdmaxfer_obj_put(&l->l_obj);	/* the id's context */
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* --- ioctls ----------------------------------------------------------------- */

/*
 * LISTEN's rdma_bind_addr() or rdma_listen() said -EINVAL: did the id's
 * device go away under it?  rdma_cm moves an id out of ADDR_BOUND for a
 * DEVICE_REMOVAL before the event reaches rdmaxfer_cm_handler(), so the
 * call can fail before the handler has set l_removed.  Our ib_client is
 * removed before rdma_cm's, so by then the device has left our registry.
 * The id is still LISTEN's (l_ready is not set): its device may be read.
 */
static bool rdmaxfer_listen_lost_device(struct rdma_cm_id *id)
{
	struct rdmaxfer_device *rd;

	if (!id->device)
		return false;
	rd = rdmaxfer_device_get(id->device->index);
	if (rd)
		rdmaxfer_device_put(rd);
	return !rd;
}

/*
 * Make l's id and listen on @ss with it.  The id is in l_id whatever the
 * outcome, for the caller to destroy.  Return: 0 or rdma_cm's error.
 */
static int rdmaxfer_listen_once(struct rdmaxfer_file *rf, struct rdmaxfer_listener *l,
				struct sockaddr_storage *ss)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(rf->rf_net, rdmaxfer_cm_handler, &l->l_obj, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	kref_get(&l->l_obj.ref);			/* the id's context */
	l->l_id = id;
	ret = rdma_set_reuseaddr(id, 1);
	if (!ret)
		ret = rdma_bind_addr(id, (struct sockaddr *)ss);
	if (!ret) {
		ret = rdma_listen(id, l->l_backlog);
		/* with reuseaddr, rdma_cm reports a port in use this way */
		if (ret == -EADDRNOTAVAIL)
			ret = -EADDRINUSE;
	}
	if (ret == -EINVAL && rdmaxfer_listen_lost_device(id))
		ret = -ENODEV;
	return ret;
}

/* Destroy l's id, if it still has one (a DEVICE_REMOVAL may have taken it). */
static void rdmaxfer_listener_drop_id(struct rdmaxfer_listener *l)
{
	struct rdma_cm_id *id = xchg(&l->l_id, NULL);

	if (id) {
		rdma_destroy_id(id);
		rdmaxfer_obj_put(&l->l_obj);		/* the id's context */
	}
}

/**
 * rdmaxfer_ioctl_listen - RDMAXFER_IOC_LISTEN
 * @rf: the file
 * @arg: struct rdmaxfer_listen
 *
 * The id can meet a DEVICE_REMOVAL as soon as rdma_bind_addr() has tied it
 * to a device, before rdma_listen() has run; see rdmaxfer_cm_event() for
 * how the two agree on who destroys it.
 *
 * On iWARP, rdma_listen() makes a TCP listening socket on the port the id
 * is bound to.  For port 0, rdma_cm picks that port from the ephemeral
 * range without asking TCP, which may still hold it (a TIME_WAIT of a
 * connection without SO_REUSEADDR: -EADDRINUSE from the provider).  The
 * caller asked for any port, so a new id, which rdma_cm gives another
 * port, tries again: up to RDMAXFER_LISTEN_TRIES attempts.
 *
 * Context: process context.
 * Return: 0, -EAFNOSUPPORT, -EADDRINUSE, -EADDRNOTAVAIL, -EMFILE, -ENOMEM,
 * -ENODEV (the device of the address went away meanwhile).
 */
int rdmaxfer_ioctl_listen(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_listen *cmd = arg;
	struct sockaddr_storage ss;
	struct rdmaxfer_listener *l;
	int ret, tries = 0;

	ret = rdmaxfer_to_sockaddr(&cmd->addr, &ss);
	if (ret)
		return ret;
	l = kzalloc_obj(*l, GFP_KERNEL_ACCOUNT);
	if (!l)
		return -ENOMEM;
	rdmaxfer_obj_init(&l->l_obj, rf, RDMAXFER_OBJ_LISTENER);
	spin_lock_init(&l->l_lock);
	INIT_LIST_HEAD(&l->l_queue);
	INIT_LIST_HEAD(&l->l_pending);
	l->l_backlog = clamp_t(u32, cmd->backlog ?: 16, 1, 256);
	/* who may connect (auth.c), looked up with the caller's credentials */
	ret = rdmaxfer_allow_copy(l, cmd->allow, cmd->allow_count);
	if (!ret && cmd->key_id)
		ret = rdmaxfer_key_get(cmd->key_id, &l->l_key);
	/* published once listening: CLOSE cannot reach a half-built listener */
	if (!ret)
		ret = rdmaxfer_obj_reserve(&l->l_obj);
	if (ret) {
		rdmaxfer_obj_fini(&l->l_obj);
		rdmaxfer_listener_release(l);
		return ret;
	}

	for (;;) {
		ret = rdmaxfer_listen_once(rf, l, &ss);
		if (ret != -EADDRINUSE || cmd->addr.port || READ_ONCE(l->l_removed) ||
		    ++tries == RDMAXFER_LISTEN_TRIES)
			break;
		rdmaxfer_listener_drop_id(l);
	}
	if (!ret)
		rdmaxfer_from_sockaddr((struct sockaddr *)&l->l_id->route.addr.src_addr,
				       &cmd->addr);
	/* from here on, a DEVICE_REMOVAL may destroy the id */
	spin_lock(&l->l_lock);
	if (l->l_removed)
		ret = -ENODEV;	/* the handler was first; else see above */
	else if (!ret)
		l->l_ready = true;
	spin_unlock(&l->l_lock);
	if (ret)
		goto out_remove;
	cmd->listen_id = l->l_obj.id;
	rdmaxfer_obj_publish(&l->l_obj);
	rdmaxfer_obj_put(&l->l_obj);
	return 0;

out_remove:
	rdmaxfer_listener_close(l);
	rdmaxfer_obj_remove(&l->l_obj);		/* only reserved */
	rdmaxfer_obj_put(&l->l_obj);
	return ret;
}

/**
 * rdmaxfer_listener_close - stop listening and drop unaccepted connections
 * @l: the listener; the caller holds a reference
 *
 * Context: process context, no rf_lock held (rdma_destroy_id() waits for
 * the handler, which may take it).
 */
void rdmaxfer_listener_close(struct rdmaxfer_listener *l)
{
	struct rdmaxfer_conn *conn;

	might_sleep();
	lockdep_assert_not_held(&l->l_obj.file->rf_lock);
	spin_lock(&l->l_lock);
	l->l_closed = true;
	spin_unlock(&l->l_lock);
	wake_up_all(&l->l_obj.file->rf_wait);
	rdmaxfer_listener_drop_id(l);
	for (;;) {
		spin_lock(&l->l_lock);
		conn = list_first_entry_or_null(&l->l_queue, struct rdmaxfer_conn, c_entry) ?:
		       list_first_entry_or_null(&l->l_pending, struct rdmaxfer_conn, c_entry);
		if (conn)
			kref_get(&conn->c_obj.ref);
		spin_unlock(&l->l_lock);
		if (!conn)
			break;
		rdmaxfer_conn_teardown(conn, -ECONNABORTED);	/* unqueues it */
		rdmaxfer_obj_put(&conn->c_obj);
	}
}

/**
 * rdmaxfer_listener_release - free a listener whose last reference is gone
 * @l: the listener
 */
void rdmaxfer_listener_release(struct rdmaxfer_listener *l)
{
	WARN_ON_ONCE(l->l_id);
	if (l->l_key)
		key_put(l->l_key);
	kfree(l->l_allow);
	kfree(l);
}

/* Take the first queued connection that is still ours to hand out. */
static struct rdmaxfer_conn *rdmaxfer_accept_one(struct rdmaxfer_listener *l)
{
	struct rdmaxfer_conn *conn, *found = NULL;
	struct rdmaxfer_listener *owner;

	spin_lock(&l->l_lock);
	conn = list_first_entry_or_null(&l->l_queue, struct rdmaxfer_conn, c_entry);
	if (conn) {
		list_del_init(&conn->c_entry);
		l->l_queued--;
		conn->c_lq = RDMAXFER_LQ_NONE;
		kref_get(&conn->c_obj.ref);
	}
	spin_unlock(&l->l_lock);
	if (!conn)
		return NULL;
	spin_lock_bh(&conn->c_lock);
	owner = conn->c_listener;
	conn->c_listener = NULL;
	spin_unlock_bh(&conn->c_lock);
	if (owner) {
		rdmaxfer_obj_put(&owner->l_obj);
		found = conn;
	} else {
		rdmaxfer_obj_put(&conn->c_obj);	/* being torn down: skip it */
	}
	return found;
}

/* May ACCEPT find something (or give up)?  Does not sleep. */
static bool rdmaxfer_accept_ready(struct rdmaxfer_listener *l)
{
	return !list_empty_careful(&l->l_queue) || READ_ONCE(l->l_closed) || !READ_ONCE(l->l_id);
}

/**
 * rdmaxfer_ioctl_accept - RDMAXFER_IOC_ACCEPT
 * @rf: the file
 * @arg: struct rdmaxfer_accept
 *
 * Context: process context, may sleep.
 * Return: 0, -ENOENT, -EAGAIN, -ETIMEDOUT, -EINTR, -EINVAL (the listener
 * was closed meanwhile), -ENODEV (its device was removed).
 */
int rdmaxfer_ioctl_accept(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_accept *cmd = arg;
	struct rdmaxfer_conn *conn = NULL;
	struct rdmaxfer_listener *l;
	long ret = 0, tmo = 0;

	l = rdmaxfer_obj_get(rf, cmd->listen_id, RDMAXFER_OBJ_LISTENER);
	if (!l)
		return -ENOENT;
	/* as accept(2): no room for one more connection of the file */
	if (!rdmaxfer_conns_get(rf)) {
		rdmaxfer_obj_put(&l->l_obj);
		return -EMFILE;
	}
	if (cmd->timeout_ns)
		tmo = cmd->timeout_ns < 0 ? MAX_SCHEDULE_TIMEOUT :
		      max_t(long, 1, nsecs_to_jiffies(cmd->timeout_ns));
	for (;;) {
		conn = rdmaxfer_accept_one(l);
		if (conn || READ_ONCE(l->l_closed) || !READ_ONCE(l->l_id) || !tmo)
			break;
		/*
		 * Not rdmaxfer_accept_one() as the condition: it drops
		 * references, which may sleep, and a wait condition runs with
		 * the task no longer TASK_RUNNING.
		 */
		ret = wait_event_interruptible_timeout(rf->rf_wait,
						       rdmaxfer_accept_ready(l), tmo);
		if (ret < 0) {
			ret = -EINTR;
			break;
		}
		tmo = ret;	/* 0: timed out, one last look */
	}
	if (!conn && ret >= 0) {
		if (READ_ONCE(l->l_closed))
			ret = -EINVAL;
		else if (!READ_ONCE(l->l_id))
			ret = -ENODEV;
		else
			ret = cmd->timeout_ns ? -ETIMEDOUT : -EAGAIN;
	}
	rdmaxfer_obj_put(&l->l_obj);
	if (!conn) {
		rdmaxfer_conns_put(rf);
		return ret;
	}
	conn->c_counted = true;		/* ACCEPT's is the only reference that sets it */
	cmd->conn_id = conn->c_obj.id;
	cmd->peer = conn->c_peer;
	rdmaxfer_obj_put(&conn->c_obj);
	return 0;
}

