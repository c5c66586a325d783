/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer serve - what the files of the server share: its state (struct
 * server, one struct sconn per connection) and the functions each file
 * offers the others.
 *
 *   serve.c        options, set-up, the event loop (REAP and dispatch),
 *                  output, the report at exit
 *   serve_conn.c   connections: accepting (--count, --max-per-host),
 *                  exposing the shared window, finishing and saving
 *   serve_ctl.c    messages: the control messages of proto.h and their
 *                  answers, user data, the end of a write round (WRITE_IMM)
 *   serve_slots.c  receive slots, echo and sink (ping and bench), and the
 *                  echo ring
 */
#ifndef RDMAXFER_SERVE_H
#define RDMAXFER_SERVE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "rdmaxfer.h"
#include "proto.h"
#include "measure.h"

#define SERVE_MAX_CONNS		256	/* the module's max_conns_per_file may be lower */
#define SERVE_MAX_LISTENERS	LISTEN_MAX_ADDRS /* without --bind on iWARP: one per address */
#define SERVE_PER_HOST		32	/* default --max-per-host: bench --conns 32 fits */
#define CTL_ANSWERS		256	/* control answers in flight, all connections */
#define MAX_REPLIES_PER_CONN	8	/* more from one client: it is misbehaving */
#define REAP_MAX		64
#define ECHO_BUFS		256	/* echo messages in flight, all connections */
#define ECHO_TAG		(1ull << 62)	/* user_data of echo SENDs */
#define ECHO_STALL_S		2	/* an echo or ADVERT not sent by then: drop its client */
#define SLOT_TAG		(1ull << 61)	/* user_data of a connection's receive slots */
#define SLOT_ECHO_TAG		(1ull << 60)	/* ... of an echo SENT from one */
#define SLOTS_MAX		128	/* receive slots per connection */
#define SLOTS_BYTES		(16u << 20)	/* ... and their memory, at most */
#define SERVE_MORE_WINS		2048	/* WINS_REQ windows, all connections (a file has 4096 MRs) */

struct sconn {
	uint32_t id;			/* connection id, 0: a free entry */
	uint64_t num;			/* 1, 2, ... in accept order */
	char peer[96];
	struct rdmaxfer_addr peer_addr;	/* ... its address, for --max-per-host */
	uint32_t window_id;		/* its window on the shared buffer, 0: none */
	uint32_t window_access;		/* ... and what it allows */
	unsigned int more_wins;		/* windows WINS_REQ exposed instead (proto.h, 4.) */
	unsigned int replies;		/* our control SENDs in flight */
	uint64_t highest;		/* end of the highest range notified by WRITE_IMM */
	bool saved;			/* a write session saved its data to --out */
	bool dropped;			/* closed by us (protocol error) */
	/* the write session (WRITE_BEGIN) */
	bool session;
	uint32_t s_flags;
	uint64_t s_off, s_total, s_round_len, s_done, s_round;
	/* counters */
	uint64_t written, rounds, msgs, msg_bytes;
	double start;
	/* ping and bench (proto.h, 3.) */
	uint32_t bench;			/* 0, PROTO_BF_SINK, _ECHO or _KECHO */
	uint64_t b_msgs, b_bytes;	/* data messages since BENCH_BEGIN */
	uint64_t bench_msgs;		/* all bench messages of the connection */
	bool recv_pending;		/* RECV events not handled yet */
	bool echo_blocked;		/* no free echo buffer: wait for a SEND */
	/*
	 * Receive slots, posted at a BENCH_BEGIN that asks for them: from
	 * then on the client's SENDs land there with no copy, its control
	 * messages too.
	 */
	unsigned char *slots;		/* nslots * slot_len bytes, registered */
	uint32_t slots_buf;		/* their buffer, 0: none */
	uint32_t nslots, slot_len;
	bool slots_echo;		/* echo slots: the kernel answers */
	bool slots_sink;		/* sink slots: the kernel drops PROTO_SINK_IMM */
	uint64_t sink_msgs0;		/* QUERY_CONN's sink_msgs at BENCH_BEGIN */
	uint64_t sink_bytes0;		/* and sink_bytes */
};

struct server {
	int fd;
	struct rdmaxfer_info info;
	uint32_t listen_ids[SERVE_MAX_LISTENERS];
	unsigned int nlisten;		/* 0 once --count connections were accepted */
	const char *bind_addr;		/* --bind, NULL: "::" (or 0.0.0.0, or each address) */
	uint16_t port;			/* --port, then the port listened on (0: chosen) */
	uint64_t size;
	unsigned char *win;		/* the shared window: --size bytes */
	uint32_t buf_id;		/* ... registered once */
	uint64_t exposed;		/* connections that got the window */
	unsigned int more_wins;		/* WINS_REQ windows alive, all connections */
	bool too_big_told;		/* "too large for the device" was said */
	bool fatal;			/* stop serving: exit 1 (the error was printed) */
	const char *in_name;
	const char *out_name;
	int out_fd;
	bool out_regular;		/* --out is a regular file (truncated per write) */
	bool out_seekable;		/* else it is written in order */
	bool json;
	uint64_t count;			/* 0: unlimited */
	uint64_t accepted, finished;
	uint64_t refused;		/* past --max-per-host */
	double refused_said;		/* when the last "refused" line was printed */
	unsigned int nactive;
	unsigned int accept_cap;	/* ACCEPT said EMFILE at this nactive, 0: no */
	bool emfile_told;		/* ... and that was said */
	unsigned int max_per_host;
	bool atomic;			/* --atomic: windows allow RDMA atomics */
	struct admit admit;		/* --key, --key-file, --allow */
	bool no_atomic_told;		/* "device has no atomics" was said */
	struct sconn conns[SERVE_MAX_CONNS];
	struct proto_msg *ctl;		/* CTL_ANSWERS registered answer buffers */
	uint32_t ctl_buf;
	bool ctl_busy[CTL_ANSWERS];
	unsigned char *rbuf;		/* RECV buffer */
	uint32_t rbuf_len;
	bool stdout_at_bol;		/* stdout is at the beginning of a line */
	bool out_failed;
	/* totals */
	uint64_t bytes_written, rounds, msgs, msg_bytes, errors;
	uint64_t bench_msgs, bench_bytes, echoed;
	double start;
	/* the echo ring: ECHO_BUFS registered buffers of echo_stride bytes */
	unsigned char *echo;
	uint32_t echo_buf, echo_stride;
	uint32_t echo_free[ECHO_BUFS];	/* stack of free buffer numbers */
	unsigned int echo_nfree;
	struct rdmaxfer_op echo_ops[REAP_MAX];	/* echo SENDs not submitted yet */
	unsigned int echo_nops;
	struct rdmaxfer_op repost_ops[REAP_MAX];	/* slots to post again */
	unsigned int repost_nops;
};

/* serve.c */
void out_error(struct server *srv, const char *what);
int out_truncate(struct server *srv);
int out_write(struct server *srv, const void *buf, uint64_t len, int64_t pos);
/* A status line on stdout (human mode), on a line of its own. */
void say(struct server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* serve_conn.c */
void accept_all(struct server *srv);
void drop_conn(struct server *srv, struct sconn *sc);
/* WINS_REQ (proto.h, 4.): @n windows in place of one; false: the client was dropped. */
bool expose_more(struct server *srv, struct sconn *sc, uint64_t n, struct proto_msg *r);
struct sconn *find_conn(struct server *srv, uint32_t id);
void finish_conn(struct server *srv, struct sconn *sc, int status);
int preload(struct server *srv, unsigned char *win);

/* serve_ctl.c */
void handle_ctl(struct server *srv, struct sconn *sc, const struct proto_msg *m);
void handle_imm(struct server *srv, struct sconn *sc, const struct rdmaxfer_completion *c);
void handle_recv(struct server *srv, struct sconn *sc);
void output_message(struct server *srv, const unsigned char *p, uint32_t len);
void recv_marked(struct server *srv);

/* serve_slots.c */
void echo_done(struct server *srv, uint64_t user_data);
void flush_echoes(struct server *srv);
void flush_reposts(struct server *srv);
void handle_slot(struct server *srv, struct sconn *sc, const struct rdmaxfer_completion *c);
void on_alarm(int sig);
int sink_count(struct server *srv, struct sconn *sc, uint64_t *msgs, uint64_t *bytes);
void slot_echo_done(struct server *srv, uint32_t conn_id, uint64_t user_data);
void slots_free(struct server *srv, struct sconn *sc);
int slots_post(struct server *srv, struct sconn *sc, uint64_t len, uint64_t want, bool echo);
int submit_echoes(struct server *srv, const struct rdmaxfer_op *ops, uint32_t n,
		  uint32_t *posted);

#endif /* RDMAXFER_SERVE_H */
