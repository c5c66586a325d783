// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer bench - bandwidth and message rate against `rdmaxfer serve`.
 *
 * bench HOST --op write|read|send [--size B | --sweep MIN:MAX]
 *       [--iters N | --duration S] [--depth N] [--conns N] [--threads N]
 *       [--windows N] [--bidir] [--json]
 *
 * The main thread connects all --conns connections one after the other
 * (so a refused or unreachable server gives one error line), each on its
 * own /dev/rdmaxfer file, registers one local buffer of the largest size
 * per connection, and starts --threads threads (by default one per CPU
 * the process may run on, at most one per connection), which share the
 * connections out and post and reap on them (bench_run.c).  Every size of
 * the sweep is one phase between two gates: before it the main thread
 * puts send connections in SINK (or, with --bidir, ECHO) mode and takes a
 * CPU snapshot of both ends (PROTO_CPU_REQ); then the threads keep
 * --depth operations in flight on each connection.  After the phase the
 * main thread takes the second snapshots and, for send, asks each
 * connection's server side how many messages it got (BENCH_END), which
 * must be exactly what was sent.  A server whose kernel has sink slots
 * says so in BENCH_READY (PROTO_BF_KSINK): the data SENDs then carry
 * PROTO_SINK_IMM, and its kernel drops and counts them without waking
 * serve.  Only the data path runs in the threads; all control messages go
 * from the main thread while the threads wait at a gate.
 *
 * Remote offsets (write/read): operation k of connection c uses the
 * size-aligned slot (c * depth + k % depth) mod (window / size) of the
 * server's window: every operation in flight has its own slot, and
 * connections have disjoint slots while conns * depth * size fits the
 * window (else they wrap around and share).  With --windows N each
 * connection first asks serve for N windows over N equal parts of its
 * buffer in place of the one (PROTO_WINS_REQ) and operation k goes to
 * window k % N, at the size-aligned slot (k / N) mod (part / size) of it:
 * the cost of many windows (the rkeys a device looks up) against one.
 * All operations of a connection use offset 0 of its local buffer.  --bidir alternates WRITE
 * and READ; for send the server echoes every message, and both directions
 * count.  An echoing connection keeps at most PROTO_ECHO_WINDOW messages
 * unanswered, whatever --depth says (see proto.h).
 *
 * The measured time runs from the first SUBMIT of any connection to the
 * last completion of any connection (or echo received, with --bidir send).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

#define BENCH_MAX_SIZES		64
#define BENCH_DEFAULT_SIZE	65536
#define BENCH_DEFAULT_ITERS	1000
#define BENCH_DEFAULT_DEPTH	64

/* % of one CPU serve used between @a and @b, or -1. */
static double srv_proc_pct(const struct srv_cpu *a, const struct srv_cpu *b)
{
	double wall = b->wall - a->wall;

	if (wall <= 0 || b->cpu_us < a->cpu_us)
		return -1;
	return 100.0 * (double)(b->cpu_us - a->cpu_us) / 1e6 / wall;
}

/* % of one CPU the server's machine was busy between @a and @b, or -1. */
static double srv_sys_pct(const struct srv_cpu *a, const struct srv_cpu *b)
{
	double wall = b->wall - a->wall;

	if (!a->hz || !b->hz || wall <= 0 || b->total <= a->total || b->busy < a->busy)
		return -1;
	return 100.0 * (double)(b->busy - a->busy) / b->hz / wall;
}

/* --- options ------------------------------------------------------------- */

static void bench_help(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer bench HOST [--port N] --op write|read|send|fadd|cas\n"
		"                      [--size BYTES | --sweep MIN:MAX] [--iters N | --duration S]\n"
		"                      [--depth N] [--conns N] [--threads N] [--windows N] [--bidir]\n"
		"                      [--transport rdma|tcp|udp]\n"
		"                      [--key KEY | --key-file F]\n"
		"                      [--json]\n"
		"\n"
		"Measure bandwidth and message rate to 'rdmaxfer serve' at HOST: RDMA WRITE\n"
		"into or READ from its window, or SEND messages it counts and drops, with\n"
		"--depth operations in flight per connection.  One row per size.  fadd\n"
		"and cas are 8-byte RDMA atomics (fetch-and-add, compare-and-swap) on its\n"
		"window, which 'serve --atomic' allows.\n"
		"\n"
		"  --port N          server port (default %u)\n"
		"  --key KEY         prove the key KEY (a keyring serial or description) to the server\n"
		"  --key-file F      the same with the key in file F (16 to 256 bytes)\n"
		"  --op OP           write, read, send, fadd or cas\n"
		"  --size BYTES      bytes per operation (default 64K; K, M, G suffixes)\n"
		"  --sweep MIN:MAX   sizes MIN, 2*MIN, 4*MIN, ... and MAX, one row each\n"
		"  --iters N         operations per connection and size (default %u)\n"
		"  --duration S      run S seconds per size instead\n"
		"  --depth N         operations in flight per connection (default %u, at most %u)\n"
		"  --conns N         connections, each on its own file (default 1, at most %u)\n"
		"  --threads N       threads that drive them (default: one per CPU this process\n"
		"                    may run on, at most --conns)\n"
		"  --windows N       write/read/fadd/cas: spread the operations over N windows\n"
		"                    per connection, N equal parts of the server's buffer\n"
		"                    (at most %u; default: its one window)\n"
		"  --bidir           write/read: alternate WRITE and READ; send: the server\n"
		"                    echoes every message (both directions count)\n"
		"  --transport T     rdma (default), or tcp/udp to the same server\n"
		"  --json            one JSON object on stdout\n",
		RDMAXFER_DEFAULT_PORT, BENCH_DEFAULT_ITERS, BENCH_DEFAULT_DEPTH, BENCH_MAX_DEPTH,
		BENCH_MAX_CONNS, PROTO_MAX_WINS);
}

/* One thread per CPU we may run on (sched_getaffinity: taskset counts), at most @conns. */
static unsigned int default_threads(unsigned int conns)
{
	unsigned int n = 1;
	cpu_set_t set;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		n = (unsigned int)CPU_COUNT(&set);
	return n < conns ? n : conns;
}

/*
 * The checks of bench's options against each other, once all are parsed:
 * --op given (@have_op), not both --size and --sweep (@size_and_sweep), not
 * both --iters (@have_iters) and --duration, a size the transport carries.
 * Returns -1 when they pass, else the exit status of the usage error.
 */
static int check_bench(struct bench_opts *o, bool have_op, bool size_and_sweep, bool have_iters)
{
	if (!have_op)
		return usage_error("bench ", "missing --op (write, read, send, fadd or cas)");
	if (bench_op_atomic(o->op)) {
		/* an atomic is 8 bytes, one way, over RDMA */
		if (o->size_max != 8 || o->size_min != 8)
			return usage_error("bench ", "--op %s moves 8 bytes: no --size or --sweep",
					   bench_op_name(o->op));
		if (o->bidir || o->transport != BT_RDMA)
			return usage_error("bench ", "--op %s is an RDMA atomic: no --bidir or --transport",
					   bench_op_name(o->op));
	}
	if (size_and_sweep)
		return usage_error("bench ", "give --size or --sweep, not both");
	if (o->windows && (o->op == BOP_SEND || o->transport != BT_RDMA))
		return usage_error("bench ", "--windows spreads RDMA WRITEs, READs and atomics: not with --op send or --transport");
	if (o->threads && o->transport != BT_RDMA)
		return usage_error("bench ", "--threads is for rdma: the sockets baseline runs a thread per connection");
	if (o->threads > o->conns)
		return usage_error("bench ", "--threads %u is more than --conns %u", o->threads, o->conns);
	if (!o->threads)
		o->threads = default_threads(o->conns);
	if (o->duration > 0 && have_iters)
		return usage_error("bench ", "give --iters or --duration, not both");
	if (o->duration > 0)
		o->iters = 0;
	if (o->transport != BT_RDMA && o->size_max > sock_max_msg(o->transport, false))
		return usage_error("bench ", "a message of %llu bytes is more than %s carries (%llu bytes)",
				   (unsigned long long)o->size_max, transport_name(o->transport),
				   (unsigned long long)sock_max_msg(o->transport, false));
	return -1;
}

/*
 * One of bench's own options (getopt value @c) into @o (@have_*: which were
 * given).  Returns -1, or the exit status of a usage error.
 */
static int bench_opt(struct bench_opts *o, int c, bool *have_op, bool *have_sweep,
		     bool *have_iters)
{
	uint64_t v;
	char *end;

	switch (c) {
	case 'o':
		if (parse_bench_op(optarg, &o->op))
			return usage_error("bench ", "bad --op '%s' (write, read, send, fadd or cas)",
					   optarg);
		*have_op = true;
		break;
	case 'w':
		if (parse_sweep(optarg, &o->size_min, &o->size_max))
			return usage_error("bench ", "bad --sweep '%s' (MIN:MAX, sizes with K, M, G suffixes, 1 <= MIN <= MAX)",
					   optarg);
		*have_sweep = true;
		break;
	case 'n':
		if (parse_uint(optarg, UINT64_MAX, &v) || !v)
			return usage_error("bench ", "bad --iters '%s' (a number, at least 1)", optarg);
		o->iters = v;
		*have_iters = true;
		break;
	case 'D':
		errno = 0;
		o->duration = strtod(optarg, &end);
		if (errno || end == optarg || *end || !(o->duration > 0) || o->duration > 86400)
			return usage_error("bench ", "bad --duration '%s' (seconds, more than 0)", optarg);
		break;
	case 'd':
		if (parse_uint(optarg, BENCH_MAX_DEPTH, &v) || !v)
			return usage_error("bench ", "bad --depth '%s' (1 .. %u)", optarg, BENCH_MAX_DEPTH);
		o->depth = (unsigned int)v;
		break;
	case 'c':
		if (parse_uint(optarg, BENCH_MAX_CONNS, &v) || !v)
			return usage_error("bench ", "bad --conns '%s' (1 .. %u)", optarg, BENCH_MAX_CONNS);
		o->conns = (unsigned int)v;
		break;
	case 'T':
		if (parse_uint(optarg, BENCH_MAX_CONNS, &v) || !v)
			return usage_error("bench ", "bad --threads '%s' (1 .. %u)", optarg, BENCH_MAX_CONNS);
		o->threads = (unsigned int)v;
		break;
	case 'W':
		if (parse_uint(optarg, PROTO_MAX_WINS, &v) || !v)
			return usage_error("bench ", "bad --windows '%s' (1 .. %u)", optarg, PROTO_MAX_WINS);
		o->windows = (unsigned int)v;
		break;
	case 'b':
		o->bidir = true;
		break;
	case 't':
		if (parse_transport(optarg, &o->transport))
			return usage_error("bench ", "bad --transport '%s' (rdma, tcp or udp)", optarg);
		break;
	}
	return -1;
}

/* Returns -1 when parsed, else an exit code. */
static int parse_bench(int argc, char **argv, struct bench_opts *o)
{
	static const struct option opts[] = {
		OPTION_PORT,
		{ "op", required_argument, NULL, 'o' },
		OPTION_SIZE,
		{ "sweep", required_argument, NULL, 'w' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "depth", required_argument, NULL, 'd' },
		{ "conns", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 'T' },
		{ "windows", required_argument, NULL, 'W' },
		{ "bidir", no_argument, NULL, 'b' },
		{ "transport", required_argument, NULL, 't' },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	bool have_op = false, have_sweep = false, have_iters = false;
	struct common_opts co;
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->size_min = o->size_max = BENCH_DEFAULT_SIZE;
	o->iters = BENCH_DEFAULT_ITERS;
	o->depth = BENCH_DEFAULT_DEPTH;
	o->conns = 1;
	o->transport = BT_RDMA;
	common_init(&co, "bench ", bench_help, CO_HOST | CO_SIZE_MIN1);
	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0) {
		ret = bench_opt(o, c, &have_op, &have_sweep, &have_iters);
		if (ret >= 0)
			return ret;
	}
	if (ret >= 0)
		return ret;
	ret = key_resolve(&co, &o->key);
	if (ret >= 0)
		return ret;
	o->host = co.host;
	o->port = co.port;
	o->json = co.json;
	if (co.have_size)	/* with --sweep too: a usage error below */
		o->size_min = o->size_max = co.size;
	else if (have_op && bench_op_atomic(o->op) && !have_sweep)
		o->size_min = o->size_max = 8;
	return check_bench(o, have_op, co.have_size && have_sweep, have_iters);
}

/* --- the command --------------------------------------------------------- */

static void close_all(struct bench_run *r, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct bconn *bc = &r->c[i];

		session_close(&bc->s);
		if (bc->buf)
			munmap(bc->buf, bc->buf_len);
		free(bc->rbuf);
		free(bc->ops);
	}
}

/* The sizes of the sweep: MIN, 2*MIN, ... below MAX, then MAX. */
static unsigned int sweep_sizes(const struct bench_opts *o, uint64_t *sizes)
{
	uint64_t size = o->size_min;
	unsigned int n = 0;

	while (n < BENCH_MAX_SIZES - 1 && size < o->size_max) {
		sizes[n++] = size;
		if (size > o->size_max / 2)
			break;
		size *= 2;
	}
	sizes[n++] = o->size_max;
	return n;
}

/* --transport tcp|udp: measure_sock.c measures, we print. */
static int bench_sock(const struct bench_opts *o, const uint64_t *sizes, unsigned int nsizes)
{
	struct bench_row rows[BENCH_MAX_SIZES];
	unsigned int i;
	int rc;

	if (!o->json)
		bench_table_begin(o);
	for (i = 0; i < nsizes; i++) {
		memset(&rows[i], 0, sizeof(rows[i]));
		rc = sock_bench_size(o, sizes[i], &rows[i]);
		if (rc)
			return rc == EXIT_USAGE ? EXIT_USAGE : EXIT_FAIL;
		if (!o->json)
			bench_table_row(o, &rows[i]);
	}
	if (o->json) {
		bench_table_begin(o);
		for (i = 0; i < nsizes; i++)
			bench_table_row(o, &rows[i]);
	}
	bench_table_end(o);
	return fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
}

/* Connect everything and check the sizes against the server's limits. */
/* Does serve post receive slots for this benchmark (SEND, one way, a peer that speaks them)? */
static bool bench_slots(const struct bench_opts *o, const struct session *s)
{
	return o->op == BOP_SEND && !o->bidir && (s->ci.conn_flags & RDMAXFER_CONN_F_RECV_SLOTS);
}

static uint32_t bench_max_send(const struct bench_opts *o, const struct session *s)
{
	return bench_slots(o, s) ? s->ci.max_msg_size : s->ci.max_send_size;
}

static int bench_setup(struct bench_run *r)
{
	const struct bench_opts *o = r->o;
	uint32_t access = 0;
	char a[48], b[48];
	unsigned int i;

	if (bench_op_atomic(o->op))
		access = RDMAXFER_REMOTE_ATOMIC;
	else if (o->op != BOP_SEND)
		access = o->bidir ? RDMAXFER_REMOTE_WRITE | RDMAXFER_REMOTE_READ :
		 o->op == BOP_WRITE ? RDMAXFER_REMOTE_WRITE : RDMAXFER_REMOTE_READ;
	for (i = 0; i < o->conns; i++) {
		struct bconn *bc = &r->c[i];

		bc->run = r;
		bc->idx = i;
		if (session_open(&bc->s, o->host, o->port, o->key))
			return EXIT_FAIL;
		if (access && session_wait_window(&bc->s, access))
			return EXIT_FAIL;
		if (o->windows) {
			uint64_t us;

			if (session_more_windows(&bc->s, o->windows, &us))
				return EXIT_FAIL;
			r->expose_us += us;
			if (o->size_max > bc->s.more_wins_len)
				return fail("an operation of %llu bytes does not fit a window of %llu at %s (the buffer over %u windows)",
					    (unsigned long long)o->size_max,
					    (unsigned long long)bc->s.more_wins_len, bc->s.peer,
					    o->windows);
		}
		if (i)
			continue;
		/*
		 * The limits, from the first connection.  A SEND into the
		 * receive slots serve posts (sink mode, a peer that has them)
		 * may be as long as both ports allow; else it is copied.
		 */
		if (o->op == BOP_SEND && o->size_max > bench_max_send(o, &bc->s))
			return usage_error("bench ", "a SEND of %llu bytes is larger than the largest message %s accepts (%s %u bytes)",
					   (unsigned long long)o->size_max, bc->s.peer,
					   bench_slots(o, &bc->s) ? "max_msg_size" : "max_send_size",
					   bench_max_send(o, &bc->s));
		if (o->op != BOP_SEND && o->size_max > bc->s.window_len) {
			format_bytes(o->size_max, a, sizeof(a));
			format_bytes(bc->s.window_len, b, sizeof(b));
			return fail("an operation of %s does not fit the window of %s at %s", a, b,
				    bc->s.peer);
		}
		if (o->op != BOP_SEND && o->size_max > bc->s.max_op) {
			format_bytes(o->size_max, a, sizeof(a));
			format_bytes(bc->s.max_op, b, sizeof(b));
			return fail("an operation of %s is larger than the largest one the connection to %s takes (max_op_size %s)",
				    a, bc->s.peer, b);
		}
	}
	r->max_batch = r->c[0].s.info.max_batch ? r->c[0].s.info.max_batch : 1;
	r->depth = o->depth;
	if (o->op == BOP_SEND && o->bidir && r->depth > PROTO_ECHO_WINDOW)
		r->depth = PROTO_ECHO_WINDOW;
	for (i = 0; i < o->conns; i++) {
		struct bconn *bc = &r->c[i];

		bc->buf_len = o->size_max;
		bc->buf = map_anon(bc->buf_len);
		if (!bc->buf)
			return EXIT_FAIL;
		memset(bc->buf, 0x5a, bc->buf_len);	/* never looks like a control message */
		if (session_reg(&bc->s, bc->buf, bc->buf_len, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE,
				&bc->buf_id))
			return EXIT_FAIL;
		bc->ops = calloc(r->depth, sizeof(*bc->ops));
		bc->rbuf = malloc(bc->s.ci.max_send_size ? bc->s.ci.max_send_size : 4096);
		if (!bc->ops || !bc->rbuf)
			return fail("out of memory");
	}
	return -1;
}

/* One size: returns 0 with @row filled, or -1 (printed). */
static int bench_size(struct bench_run *r, uint64_t size, struct bench_row *row)
{
	const struct bench_opts *o = r->o;
	uint64_t first = UINT64_MAX, last = 0, msgs, bytes;
	struct srv_cpu sv0, sv1;
	struct cpu_snap c0, c1;
	unsigned int i;

	r->size = size;
	r->nslots = o->op == BOP_SEND ? 1 : r->c[0].s.window_len / size;
	if (o->windows)
		r->nslots = r->c[0].s.more_wins_len / size;
	if (!r->nslots)
		r->nslots = 1;
	if (o->op == BOP_SEND)
		for (i = 0; i < o->conns; i++)
			if (bench_begin(&r->c[i].s, o->bidir ? PROTO_BF_ECHO : PROTO_BF_SINK,
					bench_slots(o, &r->c[i].s) ? o->size_max : 0, r->depth))
				return -1;
	cpu_snap(&c0);
	if (bench_server_cpu(&r->c[0].s, &sv0))
		return -1;
	if (!o->iters)
		r->deadline = now_ns() + (uint64_t)(o->duration * 1e9);
	gate_wait(&r->go);
	gate_wait(&r->done);
	if (bench_abort)
		return -1;
	if (bench_server_cpu(&r->c[0].s, &sv1))
		return -1;
	cpu_snap(&c1);

	memset(row, 0, sizeof(*row));
	row->size = size;
	for (i = 0; i < o->conns; i++) {
		struct bconn *bc = &r->c[i];

		row->iters += bc->done;
		row->bytes += bc->bytes;
		if (bc->t_first && bc->t_first < first)
			first = bc->t_first;
		if (bc->t_last > last)
			last = bc->t_last;
		if (o->op != BOP_SEND)
			continue;
		if (bench_end(&bc->s, &msgs, &bytes))
			return -1;
		if (msgs != bc->sent || bytes != bc->sent * size) {
			bench_fail("%s received %llu messages (%llu bytes) on connection %u, we sent %llu (%llu bytes)",
				   bc->s.peer, (unsigned long long)msgs, (unsigned long long)bytes,
				   i + 1, (unsigned long long)bc->sent,
				   (unsigned long long)(bc->sent * size));
			return -1;
		}
	}
	row->secs = last > first ? (double)(last - first) / 1e9 : 0;
	row->cpu_client = cpu_proc_pct(&c0, &c1);
	row->cpu_client_sys = cpu_sys_pct(&c0, &c1);
	row->cpu_server = srv_proc_pct(&sv0, &sv1);
	row->cpu_server_sys = srv_sys_pct(&sv0, &sv1);
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_row rows[BENCH_MAX_SIZES];
	uint64_t sizes[BENCH_MAX_SIZES];
	struct bench_opts o;
	struct bench_run r;
	unsigned int nsizes, i, started = 0;
	int ret, err;

	ret = parse_bench(argc, argv, &o);
	if (ret >= 0)
		return ret;
	nsizes = sweep_sizes(&o, sizes);
	if (o.transport != BT_RDMA)
		return bench_sock(&o, sizes, nsizes);

	memset(&r, 0, sizeof(r));
	r.o = &o;
	bench_abort = 0;
	r.c = calloc(o.conns, sizeof(*r.c));
	r.t = calloc(o.threads, sizeof(*r.t));
	if (!r.c || !r.t) {
		free(r.c);
		free(r.t);
		return fail("out of memory");
	}
	for (i = 0; i < o.conns; i++)
		r.c[i].s.fd = -1;
	for (i = 0; i < o.threads; i++)
		r.t[i].epfd = -1;
	ret = bench_setup(&r);
	if (ret >= 0)
		goto out;
	ret = EXIT_FAIL;
	o.expose_us = r.expose_us;
	gate_init(&r.go, o.threads + 1);
	gate_init(&r.done, o.threads + 1);
	for (i = 0; i < o.threads; i++) {
		struct bthread *bt = &r.t[i];

		/* connections i * conns / threads .. (i + 1) * conns / threads - 1 */
		bt->run = &r;
		bt->first = i * o.conns / o.threads;
		bt->n = (i + 1) * o.conns / o.threads - bt->first;
		if (bt->n > 1) {
			bt->epfd = epoll_create1(EPOLL_CLOEXEC);
			if (bt->epfd < 0) {
				fail("epoll_create1 failed: %s", strerror(errno));
				goto stop;
			}
		}
		err = pthread_create(&bt->th, NULL, bench_thread, bt);
		if (err) {
			fail("cannot create a thread: %s", strerror(err));
			goto stop;
		}
		bt->started = true;
		started++;
	}

	if (!o.json)
		bench_table_begin(&o);
	for (i = 0; i < nsizes; i++) {
		if (bench_size(&r, sizes[i], &rows[i]))
			goto stop;
		if (!o.json)
			bench_table_row(&o, &rows[i]);
	}
	if (o.json) {
		bench_table_begin(&o);
		for (i = 0; i < nsizes; i++)
			bench_table_row(&o, &rows[i]);
	}
	bench_table_end(&o);
	ret = fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
stop:
	/* the threads wait at the start gate: let them out */
	r.quit = true;
	gate_set_parties(&r.go, started + 1);
	gate_set_parties(&r.done, started + 1);
	gate_wait(&r.go);
	for (i = 0; i < o.threads; i++) {
		if (r.t[i].started)
			pthread_join(r.t[i].th, NULL);
		if (r.t[i].epfd >= 0)
			close(r.t[i].epfd);
	}
out:
	close_all(&r, o.conns);
	free(r.c);
	free(r.t);
	return ret;
}
