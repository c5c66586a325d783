/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer tracepoints (TRACE_SYSTEM rdmaxfer): what happened to which
 * connection, for `perf trace -e 'rdmaxfer:*'` or trace-cmd, with no cost
 * while disabled.
 *
 * Every event names the file ("file", a number the open file gets at open,
 * counted from 1 since the module was loaded) and the connection's id in
 * that file ("conn", the id the ioctls use).  Connection events add the
 * queue pair number and the device, which `rdma res show qp` lists too.
 * Operations are keyed by the user_data SUBMIT gave them, which their
 * completion carries back.  Defined once, in main.c (CREATE_TRACE_POINTS).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rdmaxfer

#if !defined(_RDMAXFER_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RDMAXFER_TRACE_H

#include <linux/tracepoint.h>
#include <linux/in6.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rdmaxfer.h"

#define rdmaxfer_show_op(op)					\
	__print_symbolic(op,					\
		{ RDMAXFER_OP_WRITE, "WRITE" },			\
		{ RDMAXFER_OP_READ, "READ" },			\
		{ RDMAXFER_OP_SEND, "SEND" },			\
		{ RDMAXFER_OP_WRITE_IMM, "WRITE_IMM" },		\
		{ RDMAXFER_OP_CAS, "CAS" },			\
		{ RDMAXFER_OP_FADD, "FADD" })

/* The connection is up: a client's CONNECT, or a server's side before ACCEPT. */
TRACE_EVENT(rdmaxfer_conn_up,
	TP_PROTO(const struct rdmaxfer_conn *conn, bool passive),
	TP_ARGS(conn, passive),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u32, qpn)
		__field(bool, passive)
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__array(u8, peer, sizeof(struct sockaddr_in6))
	),
	TP_fast_assign(
		__entry->file = conn->c_obj.file->rf_trace_id;
		__entry->conn = conn->c_obj.id;
		__entry->qpn = conn->c_qpn;
		__entry->passive = passive;
		strscpy(__entry->dev, conn->c_qp ? dev_name(&conn->c_qp->device->dev) : "-",
			IB_DEVICE_NAME_MAX);
		memset(__entry->peer, 0, sizeof(__entry->peer));
		if (conn->c_id)
			memcpy(__entry->peer, &conn->c_id->route.addr.dst_addr,
			       conn->c_id->route.addr.dst_addr.ss_family == AF_INET6 ?
			       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	),
	TP_printk("file=%u conn=%u %s qpn=%u dev=%s peer=%pISpc", __entry->file, __entry->conn,
		  __entry->passive ? "server" : "client", __entry->qpn, __entry->dev,
		  __entry->peer)
);

/* Teardown starts: error 0 is an orderly close. */
TRACE_EVENT(rdmaxfer_conn_down,
	TP_PROTO(const struct rdmaxfer_conn *conn, bool was_up, int error),
	TP_ARGS(conn, was_up, error),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u32, qpn)
		__field(bool, was_up)
		__field(int, error)
	),
	TP_fast_assign(
		__entry->file = conn->c_obj.file->rf_trace_id;
		__entry->conn = conn->c_obj.id;
		__entry->qpn = conn->c_qpn;
		__entry->was_up = was_up;
		__entry->error = error;
	),
	TP_printk("file=%u conn=%u qpn=%u was_up=%d error=%d", __entry->file, __entry->conn,
		  __entry->qpn, __entry->was_up, __entry->error)
);

/* SUBMIT is posting one operation (op_done follows exactly once if it did). */
TRACE_EVENT(rdmaxfer_op_post,
	TP_PROTO(const struct rdmaxfer_file *rf, const struct rdmaxfer_completion *c),
	TP_ARGS(rf, c),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u16, op)
		__field(u32, window)
		__field(u64, bytes)
		__field(u64, user_data)
	),
	TP_fast_assign(
		__entry->file = rf->rf_trace_id;
		__entry->conn = c->conn_id;
		__entry->op = c->opcode;
		__entry->window = c->window_id;
		__entry->bytes = c->bytes;
		__entry->user_data = c->user_data;
	),
	TP_printk("file=%u conn=%u %s window=%u bytes=%llu user_data=%#llx", __entry->file,
		  __entry->conn, rdmaxfer_show_op(__entry->op), __entry->window, __entry->bytes,
		  __entry->user_data)
);

/* An operation completed: its completion is queued for REAP. */
TRACE_EVENT(rdmaxfer_op_done,
	TP_PROTO(const struct rdmaxfer_file *rf, const struct rdmaxfer_completion *c),
	TP_ARGS(rf, c),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u16, op)
		__field(int, status)
		__field(u32, wc_status)
		__field(u64, bytes)
		__field(u64, user_data)
	),
	TP_fast_assign(
		__entry->file = rf->rf_trace_id;
		__entry->conn = c->conn_id;
		__entry->op = c->opcode;
		__entry->status = c->status;
		__entry->wc_status = c->wc_status;
		__entry->bytes = c->bytes;
		__entry->user_data = c->user_data;
	),
	TP_printk("file=%u conn=%u %s status=%d wc_status=%u bytes=%llu user_data=%#llx",
		  __entry->file, __entry->conn, rdmaxfer_show_op(__entry->op), __entry->status,
		  __entry->wc_status, __entry->bytes, __entry->user_data)
);

/* A window of ours was exposed to (and advertised on) a connection, or revoked. */
DECLARE_EVENT_CLASS(rdmaxfer_window_class,
	TP_PROTO(const struct rdmaxfer_window *win),
	TP_ARGS(win),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u32, window)
		__field(u32, access)
		__field(u32, nsegs)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->file = win->w_obj.file->rf_trace_id;
		__entry->conn = win->w_reg.rg_conn->c_obj.id;
		__entry->window = win->w_obj.id;
		__entry->access = win->w_reg.rg_access;
		__entry->nsegs = win->w_reg.rg_nsegs;
		__entry->bytes = win->w_reg.rg_length;
	),
	TP_printk("file=%u conn=%u window=%u access=%#x segments=%u bytes=%llu",
		  __entry->file, __entry->conn, __entry->window, __entry->access,
		  __entry->nsegs, __entry->bytes)
);
DEFINE_EVENT(rdmaxfer_window_class, rdmaxfer_window_expose,
	TP_PROTO(const struct rdmaxfer_window *win), TP_ARGS(win));
DEFINE_EVENT(rdmaxfer_window_class, rdmaxfer_window_revoke,
	TP_PROTO(const struct rdmaxfer_window *win), TP_ARGS(win));

/* The peer gave credits back (receive buffers it reposted for us). */
TRACE_EVENT(rdmaxfer_credits,
	TP_PROTO(const struct rdmaxfer_conn *conn, u32 granted, u32 now),
	TP_ARGS(conn, granted, now),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u32, granted)
		__field(u32, now)
	),
	TP_fast_assign(
		__entry->file = conn->c_obj.file->rf_trace_id;
		__entry->conn = conn->c_obj.id;
		__entry->granted = granted;
		__entry->now = now;
	),
	TP_printk("file=%u conn=%u granted=%u credits=%u", __entry->file, __entry->conn,
		  __entry->granted, __entry->now)
);

/*
 * Flow control (proto.h): a control message sent or received (@type, with
 * the entries it announces in @n: sent, all of them; received, its
 * header's), skips posted (@n), an echo posted, a message that must wait
 * for the peer's entries (@n bytes).  For the last three @type is
 * RDMAXFER_MSG_USER for a user's SEND, else 0 (a control message).  The
 * counters are the connection's after it, read without c_lock on the
 * receive side: for following a stall, not for accounting.
 */
#define RDMAXFER_FLOW_TX	0	/* a control message went out */
#define RDMAXFER_FLOW_RX	1	/* a control message came in */
#define RDMAXFER_FLOW_SKIP	2	/* @n skips went out */
#define RDMAXFER_FLOW_ECHO	3	/* an echo went out */
#define RDMAXFER_FLOW_WAIT	4	/* a message (@n bytes) waits for entries */

TRACE_DEFINE_ENUM(RDMAXFER_MSG_CREDIT);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_ADVERT);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_REVOKE);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_DATA);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_WRITE_DONE);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_WANT);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_USER);
TRACE_DEFINE_ENUM(RDMAXFER_MSG_PROBE);

TRACE_EVENT(rdmaxfer_flow,
	TP_PROTO(const struct rdmaxfer_conn *conn, u32 what, u32 type, u32 n),
	TP_ARGS(conn, what, type, n),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(u32, what)
		__field(u32, type)
		__field(u32, n)
		__field(u32, credits)
		__field(u32, tx_seq)
		__field(u32, tx_end)
		__field(u32, rx_done)
		__field(u32, rx_ann)
		__field(u32, rx_seq)
		__field(u32, rx_ctrl)
		__field(u32, rx_slots)
		__field(u32, wr_free)
		__field(bool, peer_wants)
		__field(bool, want_due)
	),
	TP_fast_assign(
		__entry->file = conn->c_obj.file->rf_trace_id;
		__entry->conn = conn->c_obj.id;
		__entry->what = what;
		__entry->type = type;
		__entry->n = n;
		__entry->credits = READ_ONCE(conn->c_lg.lg_credits);
		__entry->tx_seq = READ_ONCE(conn->c_lg.lg_tx_seq);
		__entry->tx_end = READ_ONCE(conn->c_lg.lg_tx_end);
		__entry->rx_done = READ_ONCE(conn->c_lg.lg_rx_done);
		__entry->rx_ann = READ_ONCE(conn->c_lg.lg_rx_ann);
		__entry->rx_seq = READ_ONCE(conn->c_lg.lg_rx_seq);
		__entry->rx_ctrl = READ_ONCE(conn->c_cb.cb_posted);
		__entry->rx_slots = READ_ONCE(conn->c_sl.sl_posted);
		__entry->wr_free = READ_ONCE(conn->c_sq.sq_wr_free);
		__entry->peer_wants = READ_ONCE(conn->c_lg.lg_peer_wants);
		__entry->want_due = READ_ONCE(conn->c_lg.lg_want_due);
	),
	TP_printk("file=%u conn=%u %s %s n=%u credits=%u tx=%u..%u rx=%u..%u..%u ctrl=%u slots=%u wr=%u%s%s",
		  __entry->file, __entry->conn,
		  __print_symbolic(__entry->what,
				   { RDMAXFER_FLOW_TX, "tx" },
				   { RDMAXFER_FLOW_RX, "rx" },
				   { RDMAXFER_FLOW_SKIP, "skip" },
				   { RDMAXFER_FLOW_ECHO, "echo" },
				   { RDMAXFER_FLOW_WAIT, "wait" }),
		  __print_symbolic(__entry->type,
				   { 0, "control" },
				   { RDMAXFER_MSG_CREDIT, "CREDIT" },
				   { RDMAXFER_MSG_ADVERT, "ADVERT" },
				   { RDMAXFER_MSG_REVOKE, "REVOKE" },
				   { RDMAXFER_MSG_DATA, "DATA" },
				   { RDMAXFER_MSG_WRITE_DONE, "WRITE_DONE" },
				   { RDMAXFER_MSG_WANT, "WANT" },
				   { RDMAXFER_MSG_USER, "USER" },
				   { RDMAXFER_MSG_PROBE, "PROBE" }),
		  __entry->n, __entry->credits, __entry->tx_seq,
		  __entry->tx_end, __entry->rx_done, __entry->rx_ann, __entry->rx_seq,
		  __entry->rx_ctrl, __entry->rx_slots, __entry->wr_free,
		  __entry->peer_wants ? " peer_wants" : "",
		  __entry->want_due ? " want_due" : "")
);

/* Keepalive: a probe posted, or the peer found dead. */
TRACE_EVENT(rdmaxfer_keepalive,
	TP_PROTO(const struct rdmaxfer_conn *conn, bool dead),
	TP_ARGS(conn, dead),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__field(bool, dead)
	),
	TP_fast_assign(
		__entry->file = conn->c_obj.file->rf_trace_id;
		__entry->conn = conn->c_obj.id;
		__entry->dead = dead;
	),
	TP_printk("file=%u conn=%u %s", __entry->file, __entry->conn,
		  __entry->dead ? "peer dead" : "probe")
);

/*
 * Who may connect (auth.c): a client refused before a QP (@conn 0), or
 * the outcome of a key handshake.  @reason: 0 (the peer proved the key)
 * or RDMAXFER_REJECT_*.  Nothing of the key is traced.
 */
TRACE_EVENT(rdmaxfer_admit,
	TP_PROTO(const struct rdmaxfer_file *rf, u32 conn, const struct rdmaxfer_addr *peer,
		 bool server, u32 reason),
	TP_ARGS(rf, conn, peer, server, reason),
	TP_STRUCT__entry(
		__field(u32, file)
		__field(u32, conn)
		__array(u8, addr, 16)
		__field(bool, server)
		__field(u32, reason)
	),
	TP_fast_assign(
		__entry->file = rf->rf_trace_id;
		__entry->conn = conn;
		/* IPv4 as IPv4-mapped: %pI6c prints it as ::ffff:a.b.c.d */
		memset(__entry->addr, 0, 16);
		if (peer->family == AF_INET) {
			__entry->addr[10] = 0xff;
			__entry->addr[11] = 0xff;
			memcpy(&__entry->addr[12], peer->addr, 4);
		} else {
			memcpy(__entry->addr, peer->addr, 16);
		}
		__entry->server = server;
		__entry->reason = reason;
	),
	TP_printk("file=%u conn=%u %s peer=%pI6c reason=%u%s", __entry->file, __entry->conn,
		  __entry->server ? "server" : "client", __entry->addr, __entry->reason,
		  __entry->reason ? "" : " (key proved)")
);

#endif /* _RDMAXFER_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
