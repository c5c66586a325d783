// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer serve - the server of write, read and send.
 *
 * serve [--bind ADDR] [--port N] [--size BYTES] [--in FILE] [--out FILE]
 *       [--count N] [--max-per-host N] [--atomic] [--json]
 *
 * Listens on ADDR (default "::", which takes IPv4 and IPv6 clients; if IPv6
 * is not available, 0.0.0.0; with an iWARP device, each address instead: see
 * listen.c) and serves any number of clients at the same
 * time (up to SERVE_MAX_CONNS; more wait in the kernel's backlog), all from
 * one event loop on one open file: poll, then REAP completions and events.
 * One peer address may hold at most --max-per-host of them (default
 * SERVE_PER_HOST, half the slots): a client that opens connections it never
 * uses cannot take every slot, its extra connections are closed as soon as
 * they are accepted ("refused") while other hosts are still served.
 *
 * There is ONE window, shared by all connections, like one piece of remote
 * memory: at start-up --size bytes (default SERVE_DEFAULT_SIZE, 64 MiB) of
 * anonymous memory are mapped, preloaded from --in (a shorter file leaves
 * the rest zero; a longer one is refused) and registered once.  Each
 * accepted connection gets that buffer EXPOSEd to it (its own window id and
 * keys, REMOTE_READ | REMOTE_WRITE, with --atomic also REMOTE_ATOMIC for
 * `rdmaxfer atomic` and `bench --op fadd|cas`, offset 0, --size bytes; a
 * device without atomics gets the window without them); CLOSE at the
 * end of the connection revokes its window, the memory stays registered
 * until serve exits.  So what one client writes, the next one reads back.
 * Concurrent clients see the same bytes: writers to overlapping ranges race
 * (the last write wins, as with shared memory), and a client in the middle
 * of a multi-round write (a file larger than the window) leaves each round
 * in the window, where other clients see it until the next round.  If the
 * RDMA device of a connection cannot register a window of --size (EXPOSE:
 * EINVAL, QUERY_CONN.max_window_size is smaller), serve says so in one line
 * and exits 1 when no connection got the window yet, else drops that
 * connection.  Then the server follows the protocol of proto.h:
 *
 *  - messages: control messages are answered (WRITE_BEGIN, CSUM_REQ, SYNC,
 *    BENCH_BEGIN, BENCH_END, CPU_REQ); every other message is user data,
 *    written as it is to stdout, or appended to --out (with --json and no
 *    --out: to stderr, since stdout carries only the JSON object) -- except
 *    on a connection that `ping` or `bench` put in SINK mode (data messages
 *    are counted and dropped) or ECHO mode (SENT back as they are, from a
 *    ring of ECHO_SLOTS registered message buffers: a message is RECV'd
 *    straight into a free slot, whose SEND is batched with the others of
 *    the same REAP round; with no free slot the connection's messages wait
 *    in the kernel until a SEND completes).  A BENCH_BEGIN that asks for
 *    receive slots gets them posted on its connection (slots_post()): the
 *    client's messages then land there with no copy and are handled from
 *    the slot's completion, which goes back on the connection at the end
 *    of the REAP round (echoed: when its echo is sent);
 *  - WRITE_IMM events end a write round: the round is saved to --out (a
 *    write truncates --out first, so --out holds the last write's data, and
 *    for a write at offset O also window bytes [0, O) as they are then),
 *    its CRC32C computed when the client asked, and ROUND_DONE sent;
 *  - DISCONNECTED ends the connection: if the client wrote without
 *    WRITE_BEGIN (another program), window bytes [0, highest byte notified by
 *    WRITE_IMM) go to --out; then the connection is closed (its window
 *    revoked) and, in human mode, a summary line printed.
 *
 * --count N: exit after N connections have ended (the listener closes once N
 * were accepted).  Without it, serve runs until SIGINT or SIGTERM, which end
 * it cleanly (exit 0, live connections closed and saved).  --json prints one
 * object at exit: connections, bytes_written, rounds, messages, ...
 * Human output on stdout: a "listening on ..." line once ready, then one
 * line per finished connection, between the messages.
 *
 * RECV events are not handled one by one: a REAP round marks the
 * connections that have messages, and each is drained (RECV until EAGAIN)
 * once per round, before any later event of the same connection (a
 * WRITE_IMM, DISCONNECTED) is acted on, so the order of messages and
 * events is kept while a stream of SENDs costs one RECV per message, not
 * two.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "rdmaxfer.h"
#include "proto.h"
#include "measure.h"

#define SERVE_MAX_CONNS		64
#define SERVE_MAX_LISTENERS	LISTEN_MAX_ADDRS /* without --bind on iWARP: one per address */
#define SERVE_PER_HOST		32	/* default --max-per-host: bench --conns 32 fits */
#define CTL_SLOTS		256	/* control answers in flight, all connections */
#define MAX_REPLIES_PER_CONN	8	/* more from one client: it is misbehaving */
#define REAP_MAX		64
#define ECHO_SLOTS		256	/* echo messages in flight, all connections */
#define ECHO_TAG		(1ull << 62)	/* user_data of echo SENDs */
#define ECHO_STALL_S		2	/* an echo not sent by then: drop its client */
#define SLOT_TAG		(1ull << 61)	/* user_data of a connection's receive slots */
#define SLOT_ECHO_TAG		(1ull << 60)	/* ... of an echo SENT from one */
#define SLOTS_MAX		128	/* receive slots per connection */
#define SLOTS_BYTES		(16u << 20)	/* ... and their memory, at most */

struct sconn {
	uint32_t id;			/* connection id, 0: free slot */
	uint64_t num;			/* 1, 2, ... in accept order */
	char peer[96];
	struct rdmaxfer_addr peer_addr;	/* ... its address, for --max-per-host */
	uint32_t window_id;		/* its window on the shared buffer, 0: none */
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
	bool echo_blocked;		/* no free echo slot: wait for a SEND */
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
	unsigned int max_per_host;
	bool atomic;			/* --atomic: windows allow RDMA atomics */
	struct admit admit;		/* --key, --key-file, --allow */
	bool no_atomic_told;		/* "device has no atomics" was said */
	struct sconn conns[SERVE_MAX_CONNS];
	struct proto_msg *ctl;		/* CTL_SLOTS registered answer slots */
	uint32_t ctl_buf;
	bool slot_busy[CTL_SLOTS];
	unsigned char *rbuf;		/* RECV buffer */
	uint32_t rbuf_len;
	bool stdout_at_bol;		/* stdout is at the beginning of a line */
	bool out_failed;
	/* totals */
	uint64_t bytes_written, rounds, msgs, msg_bytes, errors;
	uint64_t bench_msgs, bench_bytes, echoed;
	double start;
	/* the echo ring: ECHO_SLOTS registered buffers of echo_stride bytes */
	unsigned char *echo;
	uint32_t echo_buf, echo_stride;
	uint32_t echo_free[ECHO_SLOTS];	/* stack of free slot numbers */
	unsigned int echo_nfree;
	struct rdmaxfer_op echo_ops[REAP_MAX];	/* echo SENDs not submitted yet */
	unsigned int echo_nops;
	struct rdmaxfer_op repost_ops[REAP_MAX];	/* slots to post again */
	unsigned int repost_nops;
};

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t echo_stalled;	/* SIGALRM during an echo SUBMIT */

static void on_alarm(int sig)
{
	(void)sig;
	echo_stalled = 1;
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* A status line on stdout (human mode), on a line of its own. */
static void say(struct server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct server *srv, const char *fmt, ...)
{
	va_list ap;

	if (srv->json)
		return;
	if (!srv->stdout_at_bol)
		putchar('\n');
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	srv->stdout_at_bol = true;
	fflush(stdout);
}

/*
 * Write to --out at @pos; @pos < 0 (and always when --out cannot seek: a
 * pipe, a terminal) appends.
 */
static int out_write(struct server *srv, const void *buf, uint64_t len, int64_t pos)
{
	const unsigned char *p = buf;

	if (pos < 0 && srv->out_seekable) {
		off_t end = lseek(srv->out_fd, 0, SEEK_END);

		if (end < 0)
			return -1;
		pos = end;
	}
	while (len) {
		size_t n1 = len > (1u << 30) ? (1u << 30) : len;
		ssize_t n = srv->out_seekable ? pwrite(srv->out_fd, p, n1, (off_t)pos) :
						write(srv->out_fd, p, n1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		pos += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static void out_error(struct server *srv, const char *what)
{
	if (!srv->out_failed)
		warnx_("%s %s failed: %s", what, srv->out_name, strerror(errno));
	srv->out_failed = true;
}

/* Empty --out for a new write (only a regular file can be). */
static int out_truncate(struct server *srv)
{
	return srv->out_regular ? ftruncate(srv->out_fd, 0) : 0;
}

/* --- connections ------------------------------------------------------ */

static struct sconn *find_conn(struct server *srv, uint32_t id)
{
	unsigned int i;

	for (i = 0; id && i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id == id)
			return &srv->conns[i];
	return NULL;
}

static void close_id(struct server *srv, uint32_t id)
{
	rdx_close(srv->fd, id);
}

static void finish_conn(struct server *srv, struct sconn *sc, int status);

/* Free a connection's receive slots (CLOSE has completed them all). */
static void slots_free(struct server *srv, struct sconn *sc)
{
	unsigned int i;

	if (sc->slots_buf)
		rdx_dereg_buf(srv->fd, sc->slots_buf);
	if (sc->slots)
		munmap(sc->slots, (size_t)sc->nslots * sc->slot_len);
	/* reposts not submitted yet name the buffer */
	for (i = 0; i < srv->repost_nops; i++)
		if (srv->repost_ops[i].conn_id == sc->id)
			srv->repost_ops[i].conn_id = 0;
	sc->slots = NULL;
	sc->slots_buf = 0;
	sc->nslots = 0;
}

/*
 * Post receive slots for the client's messages of up to @len bytes, about
 * @want of them (within SLOTS_MAX and SLOTS_BYTES); @echo: echo slots, which
 * the kernel answers by itself; else sink slots where the kernel has them
 * (sc->slots_sink: it drops the data messages sent with PROTO_SINK_IMM).
 * Returns 0 or the errno.
 */
static int slots_post(struct server *srv, struct sconn *sc, uint64_t len, uint64_t want,
		      bool echo)
{
	struct rdmaxfer_op ops[SLOTS_MAX];
	struct rdmaxfer_conn_info ci;
	uint32_t n, i, posted;
	int err;

	if (sc->slots)
		return len <= sc->slot_len && echo == sc->slots_echo ? 0 : EINVAL;
	err = rdx_query_conn(srv->fd, sc->id, &ci);
	if (err)
		return err;
	if (!(ci.conn_flags & RDMAXFER_CONN_F_RECV_SLOTS))
		return EOPNOTSUPP;
	if (len < 4096)
		len = 4096;	/* room for control messages and small sizes alike */
	if (len > ci.max_msg_size)
		return EMSGSIZE;
	n = want < SLOTS_MAX ? (uint32_t)want : SLOTS_MAX;
	if ((uint64_t)n * len > SLOTS_BYTES)
		n = (uint32_t)(SLOTS_BYTES / len);
	if (n < 4)
		n = 4;
	sc->slot_len = (uint32_t)len;
	sc->nslots = n;
	sc->slots_echo = echo;
	sc->slots_sink = !echo && (srv->info.features & RDMAXFER_FEATURE_SINK_SLOTS);
	sc->slots = mmap(NULL, (size_t)n * len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc->slots == MAP_FAILED) {
		sc->slots = NULL;
		return ENOMEM;
	}
	err = rdx_reg_buf(srv->fd, sc->slots, (uint64_t)n * len,
			  RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &sc->slots_buf);
	if (err) {
		slots_free(srv, sc);
		return err;
	}
	for (i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].opcode = RDMAXFER_OP_RECV;
		ops[i].flags = echo ? RDMAXFER_RECV_ECHO : sc->slots_sink ? RDMAXFER_RECV_SINK : 0;
		ops[i].imm_data = sc->slots_sink ? PROTO_SINK_IMM : 0;
		ops[i].conn_id = sc->id;
		ops[i].buf_id = sc->slots_buf;
		ops[i].buf_offset = (uint64_t)i * len;
		ops[i].length = len;
		ops[i].user_data = SLOT_TAG | i;
	}
	/* slots posted stay until the connection ends (finish_conn() frees them) */
	for (i = 0; !err && i < n; i += posted)
		err = rdx_submit(srv->fd, &ops[i], n - i, &posted);
	return err;
}

/* Post the slots collected in repost_ops again (one SUBMIT). */
static void flush_reposts(struct server *srv)
{
	unsigned int i, n = 0;

	for (i = 0; i < srv->repost_nops; i++)
		if (srv->repost_ops[i].conn_id)
			srv->repost_ops[n++] = srv->repost_ops[i];
	/*
	 * As few SUBMITs as can be.  One that fails posted nothing (a
	 * connection went down: its slots go with it): its first slot goes
	 * alone, then the rest again, so the other connections get theirs.
	 */
	i = 0;
	while (i < n) {
		uint32_t posted = 0;
		int err = rdx_submit(srv->fd, &srv->repost_ops[i], n - i, &posted);

		if (!err)
			i += posted;
		else if (err != EINTR)
			rdx_submit(srv->fd, &srv->repost_ops[i++], 1, NULL);
	}
	srv->repost_nops = 0;
}

/* What the connection's sink slots dropped so far (QUERY_CONN).  0 or the errno. */
static int sink_count(struct server *srv, struct sconn *sc, uint64_t *msgs, uint64_t *bytes)
{
	struct rdmaxfer_conn_info ci;
	int err = rdx_query_conn(srv->fd, sc->id, &ci);

	*msgs = err ? 0 : ci.sink_msgs;
	*bytes = err ? 0 : ci.sink_bytes;
	return err;
}

static void repost_slot(struct server *srv, struct sconn *sc, uint32_t slot)
{
	struct rdmaxfer_op *op;

	if (srv->repost_nops == REAP_MAX)
		flush_reposts(srv);
	op = &srv->repost_ops[srv->repost_nops++];
	memset(op, 0, sizeof(*op));
	op->opcode = RDMAXFER_OP_RECV;
	op->conn_id = sc->id;
	op->buf_id = sc->slots_buf;
	op->buf_offset = (uint64_t)slot * sc->slot_len;
	op->length = sc->slot_len;
	op->user_data = SLOT_TAG | slot;
	if (sc->slots_sink) {
		op->flags = RDMAXFER_RECV_SINK;
		op->imm_data = PROTO_SINK_IMM;
	}
}

/* Close a connection on our side (its error was printed) and finish it. */
static void drop_conn(struct server *srv, struct sconn *sc)
{
	sc->dropped = true;
	srv->errors++;
	finish_conn(srv, sc, 0);
}

/* Fill the window from --in.  Returns 0 or an errno. */
static int preload(struct server *srv, unsigned char *win)
{
	uint64_t pos = 0;
	int fd, err = 0;

	fd = open(srv->in_name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	while (pos < srv->size) {
		ssize_t n = pread(fd, win + pos, srv->size - pos, (off_t)pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		pos += (uint64_t)n;
	}
	close(fd);
	return err;
}

/*
 * EXPOSE failed with EINVAL: if the window is more than the connection's
 * device can register, say so (the long form once).  Returns true if it was.
 */
static bool window_too_big(struct server *srv, struct sconn *sc)
{
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_device_info di;
	char sz[48], mx[48], dev[RDMAXFER_NAME_LEN + 8] = "";

	if (rdx_query_conn(srv->fd, sc->id, &ci) || srv->size <= ci.max_window_size)
		return false;
	if (!rdx_query_device(srv->fd, ci.dev_index, &di) && di.name[0])
		snprintf(dev, sizeof(dev), "%.*s takes ", RDMAXFER_NAME_LEN - 1, di.name);
	format_bytes(srv->size, sz, sizeof(sz));
	format_bytes(ci.max_window_size, mx, sizeof(mx));
	if (!srv->exposed) {
		/* no client can be served: stop now, in one line */
		fail("a window of %s is more than the RDMA device can register: %sat most %s; start serve with a smaller --size",
		     sz, dev, mx);
		srv->fatal = true;
	} else if (!srv->too_big_told) {
		warnx_("connection %llu from %s: a window of %s is more than the RDMA device can register: %sat most %s; dropped (a smaller --size would serve it)",
		       (unsigned long long)sc->num, sc->peer, sz, dev, mx);
	} else {
		warnx_("connection %llu from %s: the window is more than the RDMA device can register: dropped",
		       (unsigned long long)sc->num, sc->peer);
	}
	srv->too_big_told = true;
	return true;
}

/* Set up a newly accepted connection: expose the shared window to it. */
static void setup_conn(struct server *srv, struct sconn *sc, uint32_t id,
		       const struct rdmaxfer_addr *peer)
{
	uint32_t access;
	int err;

	memset(sc, 0, sizeof(*sc));
	sc->id = id;
	sc->num = ++srv->accepted;
	sc->start = now_sec();
	format_addr(peer, sc->peer, sizeof(sc->peer));
	sc->peer_addr = *peer;
	srv->nactive++;

	access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE;
	if (srv->atomic)
		access |= RDMAXFER_REMOTE_ATOMIC;
	err = rdx_expose(srv->fd, id, srv->buf_id, 0, srv->size, access, &sc->window_id);
	if (err == EOPNOTSUPP && srv->atomic) {
		/* that device has no RDMA atomics: the window without them */
		if (!srv->no_atomic_told)
			warnx_("connection %llu from %s: its RDMA device has no atomics; its window does not allow them (--atomic)",
			       (unsigned long long)sc->num, sc->peer);
		srv->no_atomic_told = true;
		access &= ~RDMAXFER_REMOTE_ATOMIC;
		err = rdx_expose(srv->fd, id, srv->buf_id, 0, srv->size, access, &sc->window_id);
	}
	if (!err) {
		srv->exposed++;
		return;
	}
	/* the client sees the connection close; we carry on */
	if (err == ENOTCONN || err == ECONNRESET) {
		/* the client went away already */
		finish_conn(srv, sc, -ECONNRESET);
		return;
	}
	if (err != EINVAL || !window_too_big(srv, sc))
		warnx_("connection %llu from %s: exposing the window failed: %s",
		       (unsigned long long)sc->num, sc->peer, strerror(err));
	drop_conn(srv, sc);
}

/* The connection is over: save what the client wrote, report, close. */
static void finish_conn(struct server *srv, struct sconn *sc, int status)
{
	char how[160] = "";

	if (srv->out_fd >= 0 && !sc->saved && sc->highest) {
		if (out_truncate(srv) || out_write(srv, srv->win, sc->highest, 0))
			out_error(srv, "saving to");
	}
	if (sc->dropped) {
		snprintf(how, sizeof(how), ", dropped");
	} else if (sc->session && sc->s_done < sc->s_total) {
		snprintf(how, sizeof(how), ", ended in the middle of a write (%llu of %llu bytes): %s",
			 (unsigned long long)sc->s_done, (unsigned long long)sc->s_total,
			 status_words(status));
		srv->errors++;
	} else if (status && status != -ECONNRESET) {
		/* ECONNRESET: the client closed (or died), the normal end */
		snprintf(how, sizeof(how), ", ended: %s", status_words(status));
		srv->errors++;
	}
	if (sc->bench_msgs) {
		size_t l = strlen(how);

		snprintf(how + l, sizeof(how) - l, ", %llu bench message%s",
			 (unsigned long long)sc->bench_msgs, sc->bench_msgs == 1 ? "" : "s");
	}
	say(srv, "connection %llu from %s: wrote %llu bytes in %llu round%s, %llu message%s (%llu bytes), %.3f s%s",
	    (unsigned long long)sc->num, sc->peer, (unsigned long long)sc->written,
	    (unsigned long long)sc->rounds, sc->rounds == 1 ? "" : "s",
	    (unsigned long long)sc->msgs, sc->msgs == 1 ? "" : "s",
	    (unsigned long long)sc->msg_bytes, now_sec() - sc->start, how);
	close_id(srv, sc->id);		/* revokes its window; the buffer stays */
	slots_free(srv, sc);
	sc->id = 0;
	srv->nactive--;
	srv->finished++;
}

static void handle_recv(struct server *srv, struct sconn *sc);

/* Do a and b name the same host (port aside; an IPv4-mapped IPv6 address is IPv4)? */
static bool same_host(const struct rdmaxfer_addr *a, const struct rdmaxfer_addr *b)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *pa = a->addr, *pb = b->addr;
	bool v4a = a->family == AF_INET, v4b = b->family == AF_INET;

	if (!v4a && !memcmp(pa, mapped, sizeof(mapped))) {
		pa += 12;
		v4a = true;
	}
	if (!v4b && !memcmp(pb, mapped, sizeof(mapped))) {
		pb += 12;
		v4b = true;
	}
	if (v4a != v4b)
		return false;
	if (v4a)
		return !memcmp(pa, pb, 4);
	return !memcmp(pa, pb, 16) && a->scope_id == b->scope_id;
}

/*
 * Does the host of peer hold --max-per-host connections already?  Then the
 * new one is closed at once: the client sees it go down after it came up.
 */
static bool host_full(struct server *srv, uint32_t id, const struct rdmaxfer_addr *peer)
{
	unsigned int i, n = 0;
	char who[96];

	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id && same_host(&srv->conns[i].peer_addr, peer))
			n++;
	if (n < srv->max_per_host)
		return false;
	srv->refused++;
	format_addr(peer, who, sizeof(who));
	/* one line for the first refusal of a burst, not one per connection */
	if (srv->refused == 1 || now_sec() - srv->refused_said >= 1.0) {
		warnx_("connection from %s refused: that host has %u connections already (--max-per-host); %llu refused so far",
		       who, n, (unsigned long long)srv->refused);
		srv->refused_said = now_sec();
	}
	close_id(srv, id);
	return true;
}

/* Accept what the listeners have queued, as far as --count and slots allow. */
static void accept_all(struct server *srv)
{
	struct rdmaxfer_addr peer;
	unsigned int i, l;
	uint32_t id;
	int err;

	for (l = 0; l < srv->nlisten; l++) {
		while (l < srv->nlisten && srv->nactive < SERVE_MAX_CONNS && !srv->fatal) {
			err = rdx_accept(srv->fd, srv->listen_ids[l], 0, &id, &peer);
			if (err) {
				if (err != EAGAIN && err != EINTR)
					warnx_("ACCEPT failed: %s", strerror(err));
				break;
			}
			if (host_full(srv, id, &peer))
				continue;
			for (i = 0; i < SERVE_MAX_CONNS && srv->conns[i].id; i++)
				;
			setup_conn(srv, &srv->conns[i], id, &peer);
			if (srv->conns[i].id == id)
				handle_recv(srv, &srv->conns[i]);	/* messages sent before the accept */
			if (srv->count && srv->accepted >= srv->count) {
				/* later clients are refused */
				while (srv->nlisten)
					close_id(srv, srv->listen_ids[--srv->nlisten]);
			}
		}
	}
}

/* --- control messages ------------------------------------------------- */

static void reply(struct server *srv, struct sconn *sc, const struct proto_msg *m)
{
	struct rdmaxfer_op op = { .opcode = RDMAXFER_OP_SEND };
	unsigned int slot;
	int err;

	for (slot = 0; slot < CTL_SLOTS && srv->slot_busy[slot]; slot++)
		;
	if (slot == CTL_SLOTS || sc->replies >= MAX_REPLIES_PER_CONN) {
		warnx_("connection %llu from %s: too many requests in flight, dropping it",
		       (unsigned long long)sc->num, sc->peer);
		drop_conn(srv, sc);
		return;
	}
	proto_encode(&srv->ctl[slot], m);
	op.conn_id = sc->id;
	op.buf_id = srv->ctl_buf;
	op.buf_offset = (uint64_t)slot * sizeof(struct proto_msg);
	op.length = sizeof(struct proto_msg);
	op.user_data = slot + 1;
	while ((err = rdx_submit(srv->fd, &op, 1, NULL))) {
		if (err == EINTR)
			continue;
		/* ENOTCONN: its DISCONNECTED event is on the way */
		if (err != ENOTCONN && err != ECONNRESET)
			warnx_("connection %llu from %s: cannot answer: %s",
			       (unsigned long long)sc->num, sc->peer, strerror(err));
		return;
	}
	srv->slot_busy[slot] = true;
	sc->replies++;
}

/* The CPU answer (proto.h, 3.): this process, and the machine's ticks. */
static void cpu_answer(struct proto_msg *r)
{
	struct cpu_snap cs;
	struct rusage ru;
	long hz = sysconf(_SC_CLK_TCK);

	r->type = PROTO_CPU;
	if (!getrusage(RUSAGE_SELF, &ru))
		r->offset = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
			    (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
	cpu_snap(&cs);
	r->length = cs.busy;
	r->round_len = cs.total;
	r->round = hz > 0 ? (uint32_t)hz : 0;
	if (!cs.total || hz <= 0)
		r->status = ENOENT;
}

static void flush_echoes(struct server *srv);
static void slot_echo_done(struct server *srv, uint32_t conn_id, uint64_t user_data);

static void handle_ctl(struct server *srv, struct sconn *sc, const struct proto_msg *m)
{
	struct proto_msg r = { 0 };

	switch (m->type) {
	case PROTO_WRITE_BEGIN:
		r.type = PROTO_WRITE_READY;
		if (m->offset > srv->size ||
		    (m->length && (!m->round_len || m->round_len > srv->size - m->offset))) {
			r.status = ERANGE;
			break;
		}
		/* pipelined rounds need two of them in the window */
		if ((m->flags & PROTO_F_PIPE) &&
		    (!m->round_len || m->round_len > (srv->size - m->offset) / 2)) {
			r.status = ERANGE;
			break;
		}
		r.flags = m->flags & PROTO_F_PIPE;
		sc->session = true;
		sc->s_flags = m->flags;
		sc->s_off = m->offset;
		sc->s_total = m->length;
		sc->s_round_len = m->round_len;
		sc->s_done = 0;
		sc->s_round = 0;
		if (srv->out_fd >= 0) {
			sc->saved = true;
			if (out_truncate(srv)) {
				out_error(srv, "truncating");
				r.status = EIO;
			}
		}
		break;
	case PROTO_CSUM_REQ:
		r.type = PROTO_CSUM;
		r.offset = m->offset;
		r.length = m->length;
		if (m->offset > srv->size || m->length > srv->size - m->offset)
			r.status = ERANGE;
		else
			r.crc = crc32c(0, srv->win + m->offset, m->length);
		break;
	case PROTO_SYNC:
		r.type = PROTO_SYNC_ACK;
		fflush(stdout);
		break;
	case PROTO_BENCH_BEGIN:
		r.type = PROTO_BENCH_READY;
		if ((m->flags != PROTO_BF_SINK && m->flags != PROTO_BF_ECHO &&
		     m->flags != PROTO_BF_KECHO) || (m->flags == PROTO_BF_KECHO && !m->length)) {
			r.status = EINVAL;
			break;
		}
		if (m->flags == PROTO_BF_ECHO && !srv->echo) {
			r.status = ENOMEM;
			break;
		}
		/* length: the largest message to come, round_len: how many in flight */
		if (m->length) {
			r.status = (uint32_t)slots_post(srv, sc, m->length, m->round_len,
							m->flags == PROTO_BF_KECHO);
			if (r.status)
				break;
		}
		sc->bench = m->flags;
		sc->b_msgs = 0;
		sc->b_bytes = 0;
		if (m->flags == PROTO_BF_SINK && sc->slots_sink) {
			r.status = (uint32_t)sink_count(srv, sc, &sc->sink_msgs0, &sc->sink_bytes0);
			r.flags = PROTO_BF_KSINK;
		}
		break;
	case PROTO_BENCH_END:
		r.type = PROTO_BENCH_DONE;
		r.offset = sc->b_msgs;
		r.length = sc->b_bytes;
		if (sc->bench == PROTO_BF_SINK && sc->slots_sink) {
			uint64_t msgs, bytes;

			r.status = (uint32_t)sink_count(srv, sc, &msgs, &bytes);
			r.offset += msgs - sc->sink_msgs0;
			r.length += bytes - sc->sink_bytes0;
		}
		sc->bench = 0;
		break;
	case PROTO_CPU_REQ:
		cpu_answer(&r);
		break;
	default:
		r.type = PROTO_ERROR;
		r.status = EPROTO;
	}
	reply(srv, sc, &r);
}

/* A message that is not a control message: the user's data. */
static void output_message(struct server *srv, const unsigned char *p, uint32_t len)
{
	if (srv->out_fd >= 0) {
		if (out_write(srv, p, len, -1))
			out_error(srv, "appending a message to");
		return;
	}
	if (srv->json) {
		fwrite(p, 1, len, stderr);
		fflush(stderr);
		return;
	}
	if (len) {
		fwrite(p, 1, len, stdout);
		srv->stdout_at_bol = p[len - 1] == '\n';
		fflush(stdout);
	}
}

/*
 * SUBMIT for echoes, bounded in time.  An echo SEND waits for the client's
 * credit, which comes back only when the client takes its messages; a
 * client that keeps sending in ECHO mode without taking its echoes (more
 * than PROTO_ECHO_WINDOW unanswered) would block the one event loop, and
 * with it every client (and SIGTERM, which is let in only in ppoll).  So
 * the SUBMIT is interrupted by SIGALRM after ECHO_STALL_S seconds, and the
 * connection of the first echo that did not go out is dropped.  Returns 0
 * or the errno, *@posted the number of echoes posted.
 */
static int submit_echoes(struct server *srv, const struct rdmaxfer_op *ops, uint32_t n,
			 uint32_t *posted)
{
	struct itimerval arm = { .it_value = { .tv_sec = ECHO_STALL_S } }, off = { 0 };
	int err;

	echo_stalled = 0;
	setitimer(ITIMER_REAL, &arm, NULL);
	err = rdx_submit(srv->fd, ops, n, posted);
	setitimer(ITIMER_REAL, &off, NULL);
	return err;
}

/* The echo at @op could not be sent in ECHO_STALL_S: drop its client. */
static void drop_stalled(struct server *srv, const struct rdmaxfer_op *op)
{
	struct sconn *sc = find_conn(srv, op->conn_id);

	if (!sc)
		return;
	warnx_("connection %llu from %s does not take its echoes (more than %u unanswered): dropped",
	       (unsigned long long)sc->num, sc->peer, PROTO_ECHO_WINDOW);
	drop_conn(srv, sc);
}

/* Submit the echo SENDs collected so far (one SUBMIT for all of them). */
static void flush_echoes(struct server *srv)
{
	struct rdmaxfer_op *ops = srv->echo_ops;
	unsigned int i, done = 0, n = srv->echo_nops;
	uint32_t posted;
	int err;

	while (done < n) {
		err = submit_echoes(srv, &ops[done], n - done, &posted);
		if (!err) {
			for (i = done; i < done + posted; i++)
				ops[i].user_data = 0;	/* posted: freed on completion */
			srv->echoed += posted;
			done += posted;
			continue;
		}
		if (err == EINTR && !echo_stalled)
			continue;
		if (err == EINTR)
			drop_stalled(srv, &ops[done]);
		else if (err != ENOTCONN && err != ECONNRESET && err != ENOENT) {
			warnx_("echoing messages failed: %s", strerror(err));
			break;
		}
		/* a connection went down: the others still get their echoes */
		for (i = done; i < n; i++) {
			do {
				err = submit_echoes(srv, &ops[i], 1, NULL);
				if (err == EINTR && echo_stalled)
					drop_stalled(srv, &ops[i]);
			} while (err == EINTR && !echo_stalled);
			if (!err) {
				ops[i].user_data = 0;
				srv->echoed++;
			}
		}
		break;
	}
	/* slots of echoes that were not posted are free again */
	for (i = 0; i < n; i++) {
		if (ops[i].user_data & SLOT_ECHO_TAG)
			slot_echo_done(srv, ops[i].conn_id, ops[i].user_data);
		else if (ops[i].user_data)
			srv->echo_free[srv->echo_nfree++] = (uint32_t)(ops[i].user_data & ~ECHO_TAG);
	}
	srv->echo_nops = 0;
}

/*
 * Take every message queued on the connection.  Not one per RECV event:
 * messages may arrive (and their events be queued) before we accepted the
 * connection, so events and messages are not paired up; a RECV event whose
 * message was taken already finds the queue empty (EAGAIN).  In ECHO mode
 * a message is received straight into a free slot of the echo ring and
 * queued for flush_echoes(); with no free slot, the rest waits.
 */
static void handle_recv(struct server *srv, struct sconn *sc)
{
	uint32_t id = sc->id, slot = 0, room, len;
	struct proto_msg m;
	unsigned char *p;
	bool echo;
	int err;

	sc->recv_pending = false;
	while (sc->id == id) {		/* a control message may drop it */
		echo = sc->bench == PROTO_BF_ECHO;
		if (echo) {
			if (!srv->echo_nfree || srv->echo_nops == REAP_MAX)
				flush_echoes(srv);
			if (!srv->echo_nfree) {
				sc->echo_blocked = true;
				return;
			}
			slot = srv->echo_free[srv->echo_nfree - 1];
			p = srv->echo + (uint64_t)slot * srv->echo_stride;
			room = srv->echo_stride;
		} else {
			p = srv->rbuf;
			room = srv->rbuf_len;
		}
		err = rdx_recv(srv->fd, id, p, room, &len);
		if (err) {
			if (err == EINTR)
				continue;
			if (err == EMSGSIZE && !echo && len > srv->rbuf_len) {
				unsigned char *q = realloc(srv->rbuf, len);

				if (q) {
					srv->rbuf = q;
					srv->rbuf_len = len;
					continue;
				}
				err = errno;	/* realloc's: say that */
			}
			if (err != EAGAIN && err != ENOTCONN && err != ENOENT)
				warnx_("connection %llu from %s: RECV failed: %s",
				       (unsigned long long)sc->num, sc->peer, strerror(err));
			return;
		}
		if (!proto_decode(&m, p, len)) {
			/* answers go after the echoes of earlier messages */
			flush_echoes(srv);
			handle_ctl(srv, sc, &m);
			continue;
		}
		if (sc->bench) {
			sc->b_msgs++;
			sc->b_bytes += len;
			sc->bench_msgs++;
			srv->bench_msgs++;
			srv->bench_bytes += len;
			if (echo) {
				struct rdmaxfer_op *op = &srv->echo_ops[srv->echo_nops++];

				memset(op, 0, sizeof(*op));
				op->opcode = RDMAXFER_OP_SEND;
				op->conn_id = id;
				op->buf_id = srv->echo_buf;
				op->buf_offset = (uint64_t)slot * srv->echo_stride;
				op->length = len;
				op->user_data = ECHO_TAG | slot;
				srv->echo_nfree--;
			}
			continue;
		}
		sc->msgs++;
		sc->msg_bytes += len;
		srv->msgs++;
		srv->msg_bytes += len;
		output_message(srv, p, len);
	}
}

/*
 * A receive slot completed: a control message, or the client's data, in
 * place (no RECV).  The slot goes back on the connection at the end of the
 * REAP round, or, echoed, once its echo is sent.
 */
static void handle_slot(struct server *srv, struct sconn *sc, const struct rdmaxfer_completion *c)
{
	uint32_t slot = (uint32_t)(c->user_data & 0xffffff), len = (uint32_t)c->bytes;
	struct rdmaxfer_op *op;
	struct proto_msg m;
	unsigned char *p;

	if (c->status || !sc->slots || slot >= sc->nslots)
		return;		/* flushed: the connection is going */
	if (c->bytes > sc->slot_len) {
		/* the kernel never completes one so; trust no length beyond the slot */
		warnx_("connection %llu from %s: a slot completed with %llu bytes (slot %u bytes), dropping it",
		       (unsigned long long)sc->num, sc->peer, (unsigned long long)c->bytes,
		       sc->slot_len);
		drop_conn(srv, sc);
		return;
	}
	p = sc->slots + (uint64_t)slot * sc->slot_len;
	if (!proto_decode(&m, p, len)) {
		repost_slot(srv, sc, slot);
		flush_echoes(srv);	/* answers go after the echoes of earlier messages */
		handle_ctl(srv, sc, &m);	/* may drop the connection */
		return;
	}
	if (!sc->bench) {
		sc->msgs++;
		sc->msg_bytes += len;
		srv->msgs++;
		srv->msg_bytes += len;
		output_message(srv, p, len);
		repost_slot(srv, sc, slot);
		return;
	}
	sc->b_msgs++;
	sc->b_bytes += len;
	sc->bench_msgs++;
	srv->bench_msgs++;
	srv->bench_bytes += len;
	if (sc->bench != PROTO_BF_ECHO) {
		repost_slot(srv, sc, slot);
		return;
	}
	if (srv->echo_nops == REAP_MAX)
		flush_echoes(srv);
	op = &srv->echo_ops[srv->echo_nops++];
	memset(op, 0, sizeof(*op));
	op->opcode = RDMAXFER_OP_SEND;
	op->conn_id = sc->id;
	op->buf_id = sc->slots_buf;
	op->buf_offset = (uint64_t)slot * sc->slot_len;
	op->length = len;
	op->user_data = SLOT_ECHO_TAG | slot;
}

/* An echo sent from a receive slot completed (or was not sent): repost the slot. */
static void slot_echo_done(struct server *srv, uint32_t conn_id, uint64_t user_data)
{
	struct sconn *sc = find_conn(srv, conn_id);
	uint32_t slot = (uint32_t)(user_data & 0xffffff);

	if (sc && sc->slots && slot < sc->nslots)
		repost_slot(srv, sc, slot);
}

/* A WRITE_IMM landed: the end of a round (proto.h). */
static void handle_imm(struct server *srv, struct sconn *sc, const struct rdmaxfer_completion *c)
{
	struct proto_msg r = { .type = PROTO_ROUND_DONE };
	uint64_t end, len, expect, at;

	if (c->window_id != sc->window_id || c->value > srv->size || c->bytes > srv->size - c->value)
		return;		/* not our window: the kernel would not do that */
	end = c->value + c->bytes;
	if (end > sc->highest)
		sc->highest = end;
	if (!sc->session) {	/* a client without WRITE_BEGIN */
		sc->written += c->bytes;
		srv->bytes_written += c->bytes;
		return;
	}
	expect = sc->s_total - sc->s_done < sc->s_round_len ? sc->s_total - sc->s_done :
							       sc->s_round_len;
	/* a pipelined round r is in the half at O + (r % 2) * R */
	at = sc->s_off;
	if ((sc->s_flags & PROTO_F_PIPE) && (sc->s_round & 1))
		at += sc->s_round_len;
	len = end >= at ? end - at : 0;
	r.round = c->imm_data & PROTO_IMM_ROUND_MASK;
	r.offset = at;
	r.length = len;
	if (r.round != (uint32_t)(sc->s_round & PROTO_IMM_ROUND_MASK) || len != expect || !len) {
		r.status = EPROTO;
		reply(srv, sc, &r);
		return;
	}
	if (srv->out_fd >= 0) {
		if ((sc->s_round == 0 && sc->s_off &&
		     out_write(srv, srv->win, sc->s_off, 0)) ||
		    out_write(srv, srv->win + at, len, (int64_t)(sc->s_off + sc->s_done))) {
			out_error(srv, "saving to");
			r.status = EIO;
		}
	}
	if (sc->s_flags & PROTO_F_VERIFY)
		r.crc = crc32c(0, srv->win + at, len);
	sc->s_done += len;
	sc->s_round++;
	sc->rounds++;
	sc->written += len;
	srv->rounds++;
	srv->bytes_written += len;
	reply(srv, sc, &r);
}

/* Handle the messages of every connection a REAP round marked. */
static void recv_marked(struct server *srv)
{
	unsigned int i;

	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id && srv->conns[i].recv_pending)
			handle_recv(srv, &srv->conns[i]);
	if (srv->echo_nops)
		flush_echoes(srv);
}

/* An echo SEND completed: its slot is free, blocked connections may go on. */
static void echo_done(struct server *srv, uint64_t user_data)
{
	uint32_t slot = (uint32_t)(user_data & ~ECHO_TAG);
	unsigned int i;

	if (slot >= ECHO_SLOTS || srv->echo_nfree >= ECHO_SLOTS)
		return;
	srv->echo_free[srv->echo_nfree++] = slot;
	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id && srv->conns[i].echo_blocked) {
			srv->conns[i].echo_blocked = false;
			srv->conns[i].recv_pending = true;
		}
}

/* REAP everything there is and act on it.  Returns -1 on a fatal error. */
static int reap_all(struct server *srv)
{
	struct rdmaxfer_completion c[REAP_MAX];
	struct sconn *sc;
	int i, n;

	do {
		n = rdx_reap(srv->fd, c, REAP_MAX, 0);
		if (n < 0) {
			if (n == -EINTR)
				return 0;
			warnx_("REAP failed: %s", strerror(-n));
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (c[i].opcode == RDMAXFER_EVENT_CONNECTED) {
				accept_all(srv);
				continue;
			}
			if (c[i].opcode == RDMAXFER_OP_SEND && (c[i].user_data & SLOT_ECHO_TAG)) {
				slot_echo_done(srv, c[i].conn_id, c[i].user_data);
				continue;
			}
			if (c[i].opcode == RDMAXFER_OP_SEND && (c[i].user_data & ECHO_TAG)) {
				echo_done(srv, c[i].user_data);
				continue;
			}
			if (c[i].opcode == RDMAXFER_OP_SEND && c[i].user_data &&
			    c[i].user_data <= CTL_SLOTS)
				srv->slot_busy[c[i].user_data - 1] = false;
			sc = find_conn(srv, c[i].conn_id);
			if (!sc && c[i].opcode != RDMAXFER_OP_SEND) {
				/* an event may come before the CONNECTED one */
				accept_all(srv);
				sc = find_conn(srv, c[i].conn_id);
			}
			if (!sc)
				continue;
			/* messages first: they came before this event */
			if (sc->recv_pending && c[i].opcode != RDMAXFER_OP_SEND &&
			    c[i].opcode != RDMAXFER_EVENT_RECV) {
				handle_recv(srv, sc);
				if (srv->echo_nops)
					flush_echoes(srv);
				if (find_conn(srv, c[i].conn_id) != sc)
					continue;
			}
			switch (c[i].opcode) {
			case RDMAXFER_OP_SEND:
				if (sc->replies)
					sc->replies--;
				break;
			case RDMAXFER_EVENT_RECV:
				sc->recv_pending = true;
				break;
			case RDMAXFER_OP_RECV:
				handle_slot(srv, sc, &c[i]);
				break;
			case RDMAXFER_EVENT_WRITE_IMM:
				handle_imm(srv, sc, &c[i]);
				break;
			case RDMAXFER_EVENT_DISCONNECTED:
				finish_conn(srv, sc, c[i].status);
				accept_all(srv);
				break;
			default:
				break;
			}
		}
		recv_marked(srv);
		flush_reposts(srv);
	} while (n == REAP_MAX);
	return 0;
}

/* --- set-up ----------------------------------------------------------- */

static int do_listen(struct server *srv, const char *bind_addr, uint16_t port)
{
	const char *addr = bind_addr ? bind_addr : "::";
	struct rdmaxfer_addr la;
	char where[512], sz[48], socks[64];
	int err;

	if (!bind_addr && have_iwarp(srv->fd)) {
		err = listen_each_address(srv->fd, &srv->admit, &port, srv->listen_ids,
					  &srv->nlisten, where, sizeof(where));
		if (err > 0)
			return err;
		if (!err) {
			srv->port = port;
			goto listening;
		}
	}
	for (;;) {
		if (parse_addr(addr, port, &la))
			return usage_error("serve ", "'%s' is not an IPv4 or IPv6 address", addr);
		err = rdx_listen_auth(srv->fd, la, 0, srv->admit.key, srv->admit.allow,
				      srv->admit.nallow, &srv->listen_ids[0], &srv->port);
		if (!err)
			break;
		/* the default: IPv4 only if IPv6 is not there */
		if (!bind_addr && !strcmp(addr, "::") &&
		    (err == EAFNOSUPPORT || err == EINVAL || err == ENODEV)) {
			addr = "0.0.0.0";
			continue;
		}
		return listen_failed(addr, port, err);
	}
	srv->nlisten = 1;
	la.port = srv->port;	/* LISTEN's answer: the port it got */
	format_addr(&la, where, sizeof(where));
	if (!bind_addr && !strcmp(addr, "::"))
		strncat(where, " (IPv6 and IPv4)", sizeof(where) - strlen(where) - 1);
	else if (bind_addr && la.family == AF_INET6 && !memcmp(la.addr, in6addr_any.s6_addr, 16) &&
		 have_iwarp(srv->fd))
		strncat(where, " (IPv6 only where the device is iWARP: '::' takes no IPv4 client there)",
			sizeof(where) - strlen(where) - 1);
listening:
	format_bytes(srv->size, sz, sizeof(sz));
	/*
	 * The sockets baseline of ping and bench: TCP and UDP on port
	 * sock_port(), never the RDMA port (on iWARP that is a TCP port the
	 * RDMA listener holds), up before "listening" is said (scripts wait
	 * for it).
	 */
	socks[0] = 0;
	if (!sock_server_start(bind_addr, sock_port(srv->port)))
		snprintf(socks, sizeof(socks), "; sockets baseline on TCP and UDP port %u",
			 sock_port(srv->port));
	say(srv, "listening on %s, window %s, shared by all clients%s", where, sz, socks);
	if (!srv->admit.key)
		warnx_("warning: no --key: any host that can reach this port%s can read and write the window (see rdmaxfer(1), WHO MAY CONNECT)",
		       srv->admit.nallow ? " from an --allow prefix" : "");
	return EXIT_OK;
}

static void serve_usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer serve [--bind ADDR] [--port N] [--size BYTES] [--in FILE]\n"
		"                      [--out FILE] [--count N] [--max-per-host N] [--atomic]\n"
		"                      [--key KEY | --key-file F] [--allow PREFIX]... [--json]\n"
		"\n"
		"Serve 'rdmaxfer write', 'read', 'send', 'ping' and 'bench' from one\n"
		"window of --size bytes, like one piece of remote memory: all clients WRITE\n"
		"into and READ from the same bytes, so a 'read' sees what an earlier 'write'\n"
		"left there; messages are printed (those of ping and bench are counted,\n"
		"dropped or echoed).  Several clients are served at the same time; they\n"
		"share the window: concurrent writes to the same bytes race (the last one\n"
		"wins), and a write larger than the window passes through it round by\n"
		"round, so other clients may see any of its rounds.\n"
		"\n"
		"  --bind ADDR   listen address (default '::', IPv6 and IPv4; with an\n"
		"                iWARP device each address of this host instead)\n"
		"  --port N      port (default %u; 0: any, printed)\n"
		"  --size BYTES  window size (default 64M; K, M, G suffixes)\n"
		"  --in FILE     preload the window from FILE (at most --size bytes; the\n"
		"                rest is zero)\n"
		"  --out FILE    save what clients write to FILE (the last write; a\n"
		"                write larger than the window is saved round by round,\n"
		"                a write at an offset with the window bytes before it),\n"
		"                and append their messages to it instead of stdout\n"
		"  --count N     exit after N client connections have ended\n"
		"  --max-per-host N\n"
		"                connections one client address may hold at the same\n"
		"                time (default %u of %u); more are refused\n"
		"  --atomic      the window also allows RDMA atomics (rdmaxfer atomic,\n"
		"                bench --op fadd|cas), where the device has them\n"
		"  --key KEY     only clients that prove the key KEY connect (a keyring\n"
		"                serial, or a logon or user key's description)\n"
		"  --key-file F  the same with the key in file F (16 to 256 bytes)\n"
		"  --allow PREFIX\n"
		"                only clients from ADDR[/BITS] connect (repeatable, up\n"
		"                to %u; checked before anything is set up for them)\n"
		"  --json        one JSON object at exit (messages then go to --out or stderr)\n"
		"\n"
		"Without --key, any host that can reach the port can read and write the\n"
		"window.  Without --count, serve runs until SIGINT or SIGTERM (exit 0).\n",
		RDMAXFER_DEFAULT_PORT, SERVE_PER_HOST, SERVE_MAX_CONNS, RDMAXFER_MAX_ALLOW);
}

/*
 * --in must be a regular file no larger than the window.  Returns 0, or
 * EXIT_FAIL with the error printed.
 */
static int check_in_file(const struct server *srv)
{
	struct stat st;
	char sz[48];

	if (stat(srv->in_name, &st))
		return fail("cannot open %s: %s", srv->in_name, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail("%s is not a regular file", srv->in_name);
	if ((uint64_t)st.st_size > srv->size) {
		format_bytes(srv->size, sz, sizeof(sz));
		return fail("%s (%llu bytes) is larger than the window (--size %s)",
			    srv->in_name, (unsigned long long)st.st_size, sz);
	}
	return 0;
}

/*
 * The options of serve into @srv, and the checks that need no device.
 * Returns -1 to go on, else the exit status (help printed, or an error).
 */
static int serve_parse(struct server *srv, int argc, char **argv)
{
	static const struct option opts[] = {
		OPTION_BIND,
		OPTION_PORT,
		OPTION_SIZE,
		{ "in", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'o' },
		{ "count", required_argument, NULL, 'c' },
		{ "max-per-host", required_argument, NULL, 'm' },
		{ "atomic", no_argument, NULL, 'a' },
		{ "allow", required_argument, NULL, 'A' },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct common_opts co;
	uint64_t v;
	int c, ret;

	common_init(&co, "serve ", serve_usage, CO_PORT_ANY | CO_SIZE_MIN1 | CO_BIND_LATE);
	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0) {
		switch (c) {
		case 'i':
			srv->in_name = optarg;
			break;
		case 'o':
			srv->out_name = optarg;
			break;
		case 'c':
			if (parse_uint(optarg, UINT64_MAX, &v) || !v)
				return usage_error("serve ", "bad --count '%s' (a number, at least 1)", optarg);
			srv->count = v;
			break;
		case 'm':
			if (parse_uint(optarg, SERVE_MAX_CONNS, &v) || !v)
				return usage_error("serve ", "bad --max-per-host '%s' (1 .. %u)", optarg,
						   SERVE_MAX_CONNS);
			srv->max_per_host = (unsigned int)v;
			break;
		case 'a':
			srv->atomic = true;
			break;
		case 'A':
			if (srv->admit.nallow == RDMAXFER_MAX_ALLOW)
				return usage_error("serve ", "more than %u --allow", RDMAXFER_MAX_ALLOW);
			ret = parse_prefix("serve ", optarg, &srv->admit.allow[srv->admit.nallow++]);
			if (ret >= 0)
				return ret;
			break;
		}
	}
	if (ret < 0)
		ret = key_resolve(&co, &srv->admit.key);
	if (ret >= 0)
		return ret;
	srv->bind_addr = co.bind;
	srv->port = co.port;
	if (co.have_size)
		srv->size = co.size;
	srv->json = co.json;
	if (srv->size > SIZE_MAX)
		return fail("--size is too large for this machine");
	if (srv->in_name && check_in_file(srv))
		return EXIT_FAIL;
	return -1;
}

/* Is --size more than the module registers or exposes?  Then say so (true). */
static bool window_over_module(struct server *srv)
{
	uint64_t m = srv->info.max_window_size;
	char sz[48], mx[48];

	if ((!srv->info.max_window_size || srv->size <= srv->info.max_window_size) &&
	    (!srv->info.max_buf_size || srv->size <= srv->info.max_buf_size))
		return false;
	if (srv->info.max_buf_size && srv->info.max_buf_size < m)
		m = srv->info.max_buf_size;
	format_bytes(srv->size, sz, sizeof(sz));
	format_bytes(m, mx, sizeof(mx));
	fail("a window of %s is larger than the module allows (%s)", sz, mx);
	return true;
}

/* Create --out (truncated).  Returns 0, or -1 with the error printed. */
static int open_out(struct server *srv)
{
	struct stat st;

	srv->out_fd = open(srv->out_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (srv->out_fd < 0) {
		fail("cannot create %s: %s", srv->out_name, strerror(errno));
		return -1;
	}
	srv->out_regular = !fstat(srv->out_fd, &st) && S_ISREG(st.st_mode);
	srv->out_seekable = lseek(srv->out_fd, 0, SEEK_CUR) >= 0;
	return 0;
}

/*
 * The RECV buffer and the CTL_SLOTS registered slots of control answers.
 * Returns 0, or -1 with the error printed.
 */
static int setup_ctl(struct server *srv)
{
	int err;

	srv->rbuf_len = srv->info.max_send_size > 4096 ? srv->info.max_send_size : 4096;
	srv->rbuf = malloc(srv->rbuf_len);
	/* populated before REG_BUF: see map_anon() */
	srv->ctl = mmap(NULL, CTL_SLOTS * sizeof(*srv->ctl), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!srv->rbuf || srv->ctl == MAP_FAILED) {
		srv->ctl = NULL;
		fail("out of memory");
		return -1;
	}
	err = rdx_reg_buf(srv->fd, srv->ctl, CTL_SLOTS * sizeof(*srv->ctl), RDMAXFER_BUF_READ,
			  &srv->ctl_buf);
	if (err) {
		fail("cannot register memory: %s", strerror(err));
		return -1;
	}
	return 0;
}

/*
 * The echo ring of ping and bench: ECHO_SLOTS registered message buffers.
 * Without it (no memory), ECHO mode is refused; nothing is printed.
 */
static void setup_echo_ring(struct server *srv)
{
	unsigned int i;

	srv->echo_stride = (srv->info.max_send_size + 4095) & ~4095u;
	if (srv->echo_stride < 4096)
		srv->echo_stride = 4096;
	srv->echo = mmap(NULL, (size_t)ECHO_SLOTS * srv->echo_stride, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (srv->echo == MAP_FAILED) {
		srv->echo = NULL;
		return;
	}
	if (rdx_reg_buf(srv->fd, srv->echo, (uint64_t)ECHO_SLOTS * srv->echo_stride,
			RDMAXFER_BUF_READ, &srv->echo_buf)) {
		munmap(srv->echo, (size_t)ECHO_SLOTS * srv->echo_stride);
		srv->echo = NULL;
		return;
	}
	for (i = 0; i < ECHO_SLOTS; i++)
		srv->echo_free[srv->echo_nfree++] = ECHO_SLOTS - 1 - i;
}

/*
 * The shared window: --size bytes, populated before REG_BUF (see
 * map_anon(): a pin of never-written memory may see the zero page on older
 * kernels), preloaded from --in, registered once.  Returns 0, or -1 with
 * the error printed.
 */
static int setup_window(struct server *srv)
{
	char sz[48];
	int err;

	srv->win = mmap(NULL, srv->size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (srv->win == MAP_FAILED) {
		srv->win = NULL;
		format_bytes(srv->size, sz, sizeof(sz));
		fail("cannot allocate a window of %s: %s", sz, strerror(errno));
		return -1;
	}
	if (srv->in_name) {
		err = preload(srv, srv->win);
		if (err) {
			fail("cannot read %s: %s", srv->in_name, strerror(err));
			return -1;
		}
	}
	err = rdx_reg_buf(srv->fd, srv->win, srv->size, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE,
			  &srv->buf_id);
	if (err) {
		format_bytes(srv->size, sz, sizeof(sz));
		if (err == ENOMEM)
			fail("cannot register a window of %s: out of memory or over the locked-memory limit (ulimit -l)",
			     sz);
		else
			fail("cannot register a window of %s: %s", sz, strerror(err));
		return -1;
	}
	return 0;
}

/*
 * Open the device and set up everything serving needs: --out, the control
 * answer ring, the echo ring and the window.  Returns 0, or -1 with the
 * error printed.
 */
static int serve_setup(struct server *srv)
{
	srv->fd = rdmaxfer_open_transfer(&srv->info);
	if (srv->fd < 0 || window_over_module(srv))
		return -1;
	if (srv->out_name && open_out(srv))
		return -1;
	if (setup_ctl(srv))
		return -1;
	setup_echo_ring(srv);
	return setup_window(srv);
}

/*
 * SIGINT and SIGTERM stop the loop; they are blocked, and only let in
 * during ppoll() with the mask left in @orig.  SIGALRM interrupts a
 * stalled echo SUBMIT (submit_echoes()).
 */
static void serve_signals(sigset_t *orig)
{
	struct sigaction sa, old;
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, orig);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	/* no SA_RESTART: the alarm interrupts a stalled echo SUBMIT */
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_signal;
	/* a background job of a non-interactive shell ignores SIGINT: keep that */
	if (!sigaction(SIGINT, NULL, &old) && old.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
}

/*
 * Serve until SIGINT or SIGTERM, until --count connections have ended, or
 * until a fatal error; then finish the connections still open.  Returns 0,
 * or -1 when serving failed (the error was printed).
 */
static int serve_loop(struct server *srv, const sigset_t *orig)
{
	unsigned int i;

	srv->start = now_sec();
	while (!stop_signal) {
		struct pollfd pfd = { .fd = srv->fd, .events = POLLIN };
		struct timespec ts = { .tv_sec = 1 };

		if (srv->fatal || (srv->count && srv->finished >= srv->count))
			break;
		if (ppoll(&pfd, 1, &ts, orig) < 0 && errno != EINTR) {
			fail("poll failed: %s", strerror(errno));
			return -1;
		}
		if (reap_all(srv))
			return -1;
	}
	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id)
			finish_conn(srv, &srv->conns[i], 0);
	return srv->fatal ? -1 : 0;
}

/*
 * The end of a run: the --json object, then stdout and --out must have been
 * written completely.  Returns the exit status.
 */
static int serve_report(struct server *srv)
{
	int ret = EXIT_FAIL;

	if (srv->json) {
		json_begin_object(NULL);
		json_u64("connections", srv->finished);
		json_u64("bytes_written", srv->bytes_written);
		json_u64("rounds", srv->rounds);
		json_u64("messages", srv->msgs);
		json_u64("message_bytes", srv->msg_bytes);
		json_u64("bench_messages", srv->bench_msgs);
		json_u64("bench_bytes", srv->bench_bytes);
		json_u64("echoed", srv->echoed);
		json_u64("errors", srv->errors);
		json_u64("refused", srv->refused);
		json_u64("window", srv->size);
		json_double("seconds", now_sec() - srv->start);
		json_end_object();
		json_end_document();
	}
	if (fflush(stdout))
		fail("writing output failed: %s", strerror(errno));
	else if (srv->out_fd >= 0 && close(srv->out_fd))
		out_error(srv, "writing");
	else
		ret = srv->out_failed ? EXIT_FAIL : EXIT_OK;
	srv->out_fd = -1;
	return ret;
}

int cmd_serve(int argc, char **argv)
{
	static struct server srv;
	sigset_t orig;
	int ret;

	memset(&srv, 0, sizeof(srv));
	srv.fd = -1;
	srv.out_fd = -1;
	srv.size = SERVE_DEFAULT_SIZE;
	srv.stdout_at_bol = true;
	srv.max_per_host = SERVE_PER_HOST;
	ret = serve_parse(&srv, argc, argv);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	if (!serve_setup(&srv)) {
		serve_signals(&orig);
		if (do_listen(&srv, srv.bind_addr, srv.port) == EXIT_OK && !serve_loop(&srv, &orig))
			ret = serve_report(&srv);
	}
	if (srv.fd >= 0)
		close(srv.fd);		/* closes everything, deregisters the window */
	if (srv.win)
		munmap(srv.win, srv.size);
	if (srv.echo)
		munmap(srv.echo, (size_t)ECHO_SLOTS * srv.echo_stride);
	if (srv.out_fd >= 0)
		close(srv.out_fd);
	free(srv.rbuf);
	return ret;
}
