/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer CLI - measuring the fabric: ping (latency), bench (bandwidth and
 * message rate), regbench (registration cost) and their sockets baseline.
 *
 * Files, the measure_*.c group: measure_ping.c and measure_bench.c run the
 * RDMA measurements against `rdmaxfer serve` (proto.h: BENCH_BEGIN/BENCH_END
 * tell the server to sink or echo messages); measure_sock.c runs the same
 * measurements over TCP or UDP on the same netdev (`serve` answers those
 * too, see sock_server_start()); measure_regbench.c times the kernel's
 * registration path next to userspace ibv_reg_mr; measure_util.c holds what
 * they share: option values, latency statistics, the bandwidth table and
 * its JSON, CPU accounting.
 *
 * Every measurement prints numbers; none of them judges them.  Under QEMU
 * TCG only ratios taken inside one boot mean anything.
 */
#ifndef RDMAXFER_MEASURE_H
#define RDMAXFER_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "rdmaxfer.h"

enum bench_op { BOP_WRITE, BOP_READ, BOP_SEND, BOP_FADD, BOP_CAS };

/* 8-byte RDMA atomics on the server's window (serve --atomic) */
static inline bool bench_op_atomic(enum bench_op op)
{
	return op == BOP_FADD || op == BOP_CAS;
}
enum bench_transport { BT_RDMA, BT_TCP, BT_UDP };

/* Largest sockets message (UDP: one datagram; TCP: one write). */
#define SOCK_MAX_MSG		65507
/* Most connections of one bench --conns. */
#define BENCH_MAX_CONNS		256
/* Most operations in flight per connection (--depth). */
#define BENCH_MAX_DEPTH		1024

struct ping_opts {
	const char *host;
	uint16_t port;
	int32_t key;			/* --key's serial, 0: none */
	enum bench_op op;
	enum bench_transport transport;
	uint64_t size;
	uint64_t count;			/* measured round trips */
	uint64_t warmup;		/* not measured, before them */
	bool json;
	bool histogram;
};

struct bench_opts {
	const char *host;
	uint16_t port;
	int32_t key;			/* --key's serial, 0: none */
	enum bench_op op;
	enum bench_transport transport;
	uint64_t size_min, size_max;	/* equal without --sweep; sweep doubles */
	uint64_t iters;			/* per size and connection; 0: --duration */
	double duration;		/* seconds per size, when iters == 0 */
	unsigned int depth;		/* in flight per connection */
	unsigned int conns;
	unsigned int threads;		/* rdma: that drive the connections */
	unsigned int windows;		/* --windows: that many per connection, 0: the one */
	uint64_t expose_us;		/* measured: serve's EXPOSE time, all of them */
	bool bidir;
	bool json;
};

/* One row of the bandwidth table: one message size. */
struct bench_row {
	uint64_t size;
	uint64_t iters;			/* completed operations, all connections */
	uint64_t bytes;			/* bytes moved, all directions */
	double secs;			/* wall time of the measured phase */
	/* CPU use in % of one CPU, < 0 when not measurable */
	double cpu_client;		/* this process (user + system) */
	double cpu_client_sys;		/* the whole client machine, all CPUs (/proc/stat) */
	double cpu_server;		/* the serve process */
	double cpu_server_sys;		/* the whole server machine */
	uint64_t lost;			/* UDP: datagrams sent but not received */
};

/* CPU accounting: a snapshot now; cpu_pct() turns two into % of one CPU. */
struct cpu_snap {
	double wall;
	double proc;			/* this process: user + system seconds */
	uint64_t busy, total;		/* /proc/stat ticks, all CPUs; total 0: unknown */
};

void cpu_snap(struct cpu_snap *s);
/* % of one CPU this process used between @a and @b. */
double cpu_proc_pct(const struct cpu_snap *a, const struct cpu_snap *b);
/* % of one CPU the whole machine was busy (so up to 100 * nr_cpus), or -1. */
double cpu_sys_pct(const struct cpu_snap *a, const struct cpu_snap *b);

/* Option parsing shared by ping and bench. */
int parse_bench_op(const char *s, enum bench_op *op);
int parse_transport(const char *s, enum bench_transport *t);
const char *bench_op_name(enum bench_op op);
const char *transport_name(enum bench_transport t);
int parse_sweep(const char *s, uint64_t *min, uint64_t *max);

/*
 * Print the latency report of @n round trips (@ns, sorted in place): min,
 * p50, p99, p99.9, max and mean in microseconds, human or JSON
 * (min_us, p50_us, p99_us, p999_us, max_us, mean_us), and with
 * o->histogram a log2 histogram.
 */
void lat_report(const struct ping_opts *o, uint64_t *ns, uint64_t n);

/* The bandwidth table: header, one row per size, end (JSON: "rows"). */
void bench_table_begin(const struct bench_opts *o);
void bench_table_row(const struct bench_opts *o, const struct bench_row *r);
void bench_table_end(const struct bench_opts *o);

/* measure_sock.c: the sockets baseline (client side) */
int sock_ping(const struct ping_opts *o, uint64_t *ns);
int sock_bench_size(const struct bench_opts *o, uint64_t size, struct bench_row *row);
/*
 * The sockets baseline's port (TCP and UDP) for RDMA port @port: never the
 * same number.  On iWARP the RDMA port is a TCP port (the RDMA listener's own
 * socket holds it), so sharing the number cannot work there; and an offset
 * of SOCK_PORT_OFFSET keeps clear of the neighbouring ports other servers
 * tend to use.  Below @port near the top of the range.
 */
#define SOCK_PORT_OFFSET	1000
static inline uint16_t sock_port(uint16_t port)
{
	return port <= 65535 - SOCK_PORT_OFFSET ? port + SOCK_PORT_OFFSET : port - SOCK_PORT_OFFSET;
}

/*
 * measure_sock.c: the sockets server, started by `serve` next to the RDMA
 * listener: TCP and UDP on @port (sock_port() of serve's), in threads of
 * their own.  Returns 0 when it is up, 1 when it is not available (one
 * warning printed: serve goes on without it).
 */
int sock_server_start(const char *bind_addr, uint16_t port);

/* commands */
int cmd_ping(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_regbench(int argc, char **argv);

/*
 * measure_sock.c: the largest message --transport @t carries per message, for ping
 * (@ping) or bench (0 for rdma): UDP and ping SOCK_MAX_MSG, TCP bench much
 * more (it sends a message in pieces).  For usage checks (exit 2).
 */
uint64_t sock_max_msg(enum bench_transport t, bool ping);

/*
 * measure_bench.c: what measure_ping.c shares with it over RDMA (added for issue 4).
 * Operations the measurements post carry BENCH_OP_TAG in user_data, so
 * that completions of the session's own control SENDs can be told apart.
 */
#define BENCH_OP_TAG		(1ull << 62)

struct session;
struct rdmaxfer_completion;

/* The server's CPU counters at one moment (PROTO_CPU_REQ / PROTO_CPU). */
struct srv_cpu {
	double wall;			/* our clock when the answer came */
	uint64_t cpu_us;		/* serve's user + system time */
	uint64_t busy, total;		/* its machine's /proc/stat ticks */
	uint32_t hz;			/* ticks per second, 0: unknown */
};

/* Print one error line, the first of all threads only, and stop them all. */
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Set once anything failed (bench_fail, or a failure seen by a caller). */
extern volatile int bench_abort;
/*
 * Account for an entry REAP returned that is not one of the measured
 * operations (a session control SEND, an event).  Returns 0, or -1 after
 * bench_fail() (connection lost, window revoked, control SEND failed).
 */
int bench_event(struct session *s, const struct rdmaxfer_completion *c);
/*
 * Error line for measured operation @c of a reaped batch that failed, @left
 * entries before the end of the batch; a flushed one is reported with the
 * reason of the DISCONNECTED event that follows it.
 */
void bench_op_failed(struct session *s, const struct rdmaxfer_completion *c, unsigned int left);
/* Ask the server for its CPU counters.  Returns 0 or -1 (printed). */
int bench_server_cpu(struct session *s, struct srv_cpu *c);
/*
 * Put a connection in SINK or ECHO mode (PROTO_BF_*), asking for @nslots
 * receive slots for messages of up to @slot_len bytes (0: none, the copy
 * path; proto.h, 3.); 0 or -1 (printed).
 */
int bench_begin(struct session *s, uint32_t mode, uint64_t slot_len, uint64_t nslots);
/* End bench mode: the server's count of data messages and bytes. */
int bench_end(struct session *s, uint64_t *msgs, uint64_t *bytes);

#endif /* RDMAXFER_MEASURE_H */
