/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer CLI - the client side of one connection (session.c): connect,
 * wait for the server's window, post operations with a bounded number in
 * flight, reap completions and events, exchange control messages
 * (proto.h).  Every function that fails prints exactly one error line and
 * returns -1, so that a command prints one line whatever went wrong.
 */
#ifndef RDMAXFER_SESSION_H
#define RDMAXFER_SESSION_H

#include "rdmaxfer.h"
#include "proto.h"

/* Give up when nothing at all happens for this long while waiting. */
#define SESSION_IDLE_TIMEOUT_S	60
/* How long CONNECT may take. */
#define SESSION_CONNECT_TIMEOUT_S	10
/* How long the server may take to expose its window. */
#define SESSION_WINDOW_TIMEOUT_S	30

/* Progress on stderr for long transfers, only when stderr is a terminal. */
struct progress {
	bool on;
	const char *verb;
	uint64_t total;
	uint64_t done;
	double start;
	double last;
	bool shown;
};

struct session {
	int fd;
	struct rdmaxfer_info info;
	uint32_t conn_id;
	struct rdmaxfer_conn_info ci;
	char peer[96];			/* "192.0.2.1 port 18515", for messages */
	uint32_t window_id;		/* the server's window, 0 until advertised */
	uint64_t window_len;
	uint32_t window_access;
	uint32_t *more_wins;		/* the windows WINS_REQ gave in its place, if asked */
	uint64_t more_wins_len;		/* ... the shortest of them */
	unsigned int nmore_wins, more_wins_cap;
	unsigned int depth;		/* most operations in flight */
	unsigned int inflight;
	unsigned int msgs_ready;	/* RECV events not yet RECV'd */
	uint64_t max_op;		/* largest WRITE/READ of one operation */
	void *ctl;			/* registered buffer for control SENDs */
	uint32_t ctl_buf;
	unsigned int ctl_slot;
	uint64_t msgs_sent;		/* user messages (session_send) */
	uint64_t atomic_old;		/* the value before the last atomic */
	uint32_t bench_flags;		/* the last BENCH_READY's flags (PROTO_BF_KSINK) */
	struct progress *prog;
	struct rdx_ring ring;		/* completion ring, if session_ring() made one */
};

int session_open(struct session *s, const char *host, uint16_t port, int32_t key);
void session_ring(struct session *s, uint32_t entries);
int session_wait_window(struct session *s, uint32_t access);
int session_more_windows(struct session *s, unsigned int n, uint64_t *us);
int session_reg(struct session *s, void *addr, uint64_t len, uint32_t access, uint32_t *buf_id);
int session_rdma_post(struct session *s, uint16_t opcode, uint32_t buf_id, uint64_t buf_off,
		      uint64_t remote_off, uint64_t len, bool notify, uint32_t imm);
int session_send(struct session *s, uint32_t buf_id, const void *base, uint64_t off,
		 uint64_t len);
int session_drain(struct session *s);
int session_disconnect_status(struct session *s);
int session_atomic(struct session *s, uint16_t opcode, uint64_t remote_off, uint64_t compare_add,
		   uint64_t swap, uint64_t *old);
int session_ctl_send(struct session *s, const struct proto_msg *req);
int session_ctl_recv(struct session *s, const char *what, uint32_t expect, struct proto_msg *rep);
int session_call(struct session *s, const struct proto_msg *req, uint32_t expect,
		 struct proto_msg *rep);
void session_close(struct session *s);

/* Map @len bytes of anonymous memory (NULL, with an error line, on failure). */
void *map_anon(uint64_t len);

void progress_start(struct progress *p, const char *verb, uint64_t total);
void progress_add(struct progress *p, uint64_t bytes);
void progress_end(struct progress *p);

#endif /* RDMAXFER_SESSION_H */
