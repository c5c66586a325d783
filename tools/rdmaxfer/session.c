// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - the client side of a connection.  The control messages of
 * proto.h are encoded and decoded in proto.c, for the server as well.
 *
 * A client owns one connection on its own open file, so every completion
 * and event that REAP returns is about that connection.  Operations are
 * posted in batches with at most `depth` of them in flight (the
 * connection's queue depth, capped by the file's max_pending); completions
 * are reaped as they come.  An error completion, a DISCONNECTED event, a
 * revoked window or SESSION_IDLE_TIMEOUT_S of silence ends the session with
 * one error line.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "session.h"

#define REAP_MAX	64
#define CTL_BUF_SIZE	4096
#define CTL_ANSWERS	(CTL_BUF_SIZE / sizeof(struct proto_msg))
#define MAX_DEPTH	256
#define CTL_COOKIE	(1ull << 63)	/* user_data of control messages */

/* --- progress --------------------------------------------------------- */

void progress_start(struct progress *p, const char *verb, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = isatty(STDERR_FILENO);
	p->verb = verb;
	p->total = total;
	p->start = now_sec();
	p->last = p->start;
}

void progress_add(struct progress *p, uint64_t bytes)
{
	double t, el;

	if (!p)
		return;
	p->done += bytes;
	if (!p->on)
		return;
	t = now_sec();
	el = t - p->start;
	/* only long transfers, at most 4 updates a second */
	if (el < 1.0 || t - p->last < 0.25)
		return;
	p->last = t;
	p->shown = true;
	fprintf(stderr, "\r%s %.1f / %.1f MiB (%3.0f%%), %.1f MiB/s   ", p->verb,
		(double)p->done / 1048576.0, (double)p->total / 1048576.0,
		p->total ? 100.0 * (double)p->done / (double)p->total : 100.0,
		(double)p->done / 1048576.0 / el);
	fflush(stderr);
}

void progress_end(struct progress *p)
{
	if (p && p->on && p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->shown = false;
	}
}

static void fail_line(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print one error line (clearing a progress line first). */
static void fail_line(struct session *s, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	progress_end(s->prog);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	warnx_("%s", msg);
}

/* --- memory ----------------------------------------------------------- */

/*
 * Anonymous memory for a buffer, populated (written to) before it is
 * registered: a read-only long-term pin of a page never written pins the
 * shared zero page on Linux 6.1 (no COW unsharing for R/O pins before 6.2),
 * and what the CLI stores there afterwards would never reach the device.
 */
void *map_anon(uint64_t len)
{
	void *p;
	char sz[48];

	if (!len)
		len = 1;
	if (len > SIZE_MAX) {
		warnx_("cannot allocate %llu bytes", (unsigned long long)len);
		return NULL;
	}
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		format_bytes(len, sz, sizeof(sz));
		warnx_("cannot allocate %s of memory: %s", sz, strerror(errno));
		return NULL;
	}
	return p;
}

int session_reg(struct session *s, void *addr, uint64_t len, uint32_t access, uint32_t *buf_id)
{
	char sz[48];
	int err;

	err = rdx_reg_buf(s->fd, addr, len, access, buf_id);
	if (err) {
		format_bytes(len, sz, sizeof(sz));
		if (err == ENOMEM)
			fail_line(s, "cannot register %s of memory: over the locked-memory limit (ulimit -l) or out of memory",
				  sz);
		else
			fail_line(s, "cannot register %s of memory: %s", sz, strerror(err));
		return -1;
	}
	return 0;
}

/* --- connecting ------------------------------------------------------- */

static void connect_error(struct session *s, int err, uint32_t reason)
{
	const char *p = s->peer;

	switch (err) {
	case ECONNREFUSED:
		if (reason && reason != RDMAXFER_REJECT_UNKNOWN)
			fail_line(s, "%s refused the connection: %s", p, rdx_reject_str(reason));
		else
			fail_line(s, "connection to %s refused: no rdmaxfer server is listening there", p);
		break;
	case ETIMEDOUT:
		fail_line(s, "no answer from %s within %d s (host down, or not reachable over RDMA)", p,
			  SESSION_CONNECT_TIMEOUT_S);
		break;
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EADDRNOTAVAIL:
	case ENODEV:
		fail_line(s, "cannot reach %s: no route to it, or no RDMA device for that network (see 'rdma link', 'ip route')",
			  p);
		break;
	case EINTR:
		fail_line(s, "connecting to %s interrupted", p);
		break;
	default:
		fail_line(s, "connecting to %s failed: %s", p, strerror(err));
	}
}

int session_open(struct session *s, const char *host, uint16_t port, int32_t key)
{
	struct rdmaxfer_addr addr;
	unsigned int depth;
	uint32_t reason;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (parse_addr(host, port, &addr))	/* checked by the caller already */
		return usage_error(NULL, "'%s' is not an IPv4 or IPv6 address", host), -1;
	format_addr(&addr, s->peer, sizeof(s->peer));
	s->fd = cli_open_transfer(&s->info);
	if (s->fd < 0)
		return -1;

	err = rdx_connect_key(s->fd, addr, (int64_t)SESSION_CONNECT_TIMEOUT_S * 1000000000, key,
			      &s->conn_id, &reason);
	if (err && key && key_error(err)) {
		fail_line(s, "cannot connect to %s with key %d: %s", s->peer, key, key_error(err));
		return -1;
	}
	if (err) {
		connect_error(s, err, reason);
		return -1;
	}
	err = rdx_query_conn(s->fd, s->conn_id, &s->ci);
	if (err) {
		fail_line(s, "QUERY_CONN failed: %s", strerror(err));
		return -1;
	}
	depth = s->ci.queue_depth ? s->ci.queue_depth : 16;
	if (s->info.max_pending && depth > s->info.max_pending)
		depth = s->info.max_pending;
	if (depth > MAX_DEPTH)
		depth = MAX_DEPTH;
	s->depth = depth;
	s->max_op = s->ci.max_op_size ? s->ci.max_op_size : (1ull << 20);
	if (s->ci.max_send_size < sizeof(struct proto_msg)) {
		fail_line(s, "%s accepts messages of only %u bytes: too small for rdmaxfer's control messages",
			  s->peer, s->ci.max_send_size);
		return -1;
	}

	s->ctl = map_anon(CTL_BUF_SIZE);
	if (!s->ctl)
		return -1;
	return session_reg(s, s->ctl, CTL_BUF_SIZE, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE,
			   &s->ctl_buf);
}

/*
 * Reap through a completion ring of @entries from now on: no system call
 * per completion when polling.  A module without rings (or a ring that
 * cannot be had) leaves REAP as it was; the session works either way.
 */
void session_ring(struct session *s, uint32_t entries)
{
	if (!(s->info.features & RDMAXFER_FEATURE_RING) || rdx_ring_map(s->fd, entries, &s->ring))
		memset(&s->ring, 0, sizeof(s->ring));
}

void session_close(struct session *s)
{
	progress_end(s->prog);
	if (s->fd >= 0) {
		if (s->conn_id)
			rdx_close(s->fd, s->conn_id);
		rdx_ring_unmap(&s->ring);
		close(s->fd);	/* unpins and frees everything else */
	}
	if (s->ctl)
		munmap(s->ctl, CTL_BUF_SIZE);
	free(s->more_wins);
	s->fd = -1;
	s->ctl = NULL;
	s->more_wins = NULL;
	s->more_wins_cap = s->nmore_wins = 0;
}

/* --- completions and events ------------------------------------------- */

/*
 * The status of the DISCONNECTED event that follows a flushed completion,
 * reaped for up to DISC_WAIT_SEC (what comes before it is dropped: the
 * caller is failing anyway); 1 if none came.  The module queues the event
 * once the teardown has released everything (the QP, the windows, the
 * cm_id): after the flushed completions, and on iWARP or a debug kernel
 * over a second after them.
 */
#define DISC_WAIT_SEC	5.0

int session_disconnect_status(struct session *s)
{
	struct rdmaxfer_completion c[REAP_MAX];
	double until = now_sec() + DISC_WAIT_SEC;
	int i, n;

	while (now_sec() < until) {
		n = rdx_ring_reap(s->fd, &s->ring, c, REAP_MAX, 100000000);
		if (n < 0 && n != -EINTR)
			break;
		for (i = 0; i < n; i++)
			if (c[i].opcode == RDMAXFER_EVENT_DISCONNECTED)
				return c[i].status;
	}
	return 1;
}

/*
 * One REAP call.  Returns the number of entries handled, 0 if none came
 * within @timeout_ns, -1 on an error (printed).  When a batch holds both a
 * flushed completion and the DISCONNECTED event, the event's reason is the
 * one reported.
 */
static int session_reap(struct session *s, int64_t timeout_ns)
{
	struct rdmaxfer_completion c[REAP_MAX];
	const struct rdmaxfer_completion *bad = NULL;
	int disc_status = 1;		/* 1: no DISCONNECTED event */
	bool revoked = false;
	int i, n;

	n = rdx_ring_reap(s->fd, &s->ring, c, REAP_MAX, timeout_ns);
	if (n < 0) {
		if (n == -EINTR)
			return 0;
		fail_line(s, "REAP failed: %s", strerror(-n));
		return -1;
	}
	for (i = 0; i < n; i++) {
		switch (c[i].opcode) {
		case RDMAXFER_EVENT_WINDOW:
			if (!s->window_id) {
				s->window_id = c[i].window_id;
				s->window_len = c[i].bytes;
				s->window_access = c[i].flags;
			} else if (s->nmore_wins < s->more_wins_cap) {
				s->more_wins[s->nmore_wins++] = c[i].window_id;
				if (!s->more_wins_len || c[i].bytes < s->more_wins_len)
					s->more_wins_len = c[i].bytes;
			}
			break;
		case RDMAXFER_EVENT_WINDOW_REVOKED:
			/* WINS_REQ replaces it (session_more_windows()) */
			if (c[i].window_id == s->window_id && !s->more_wins_cap)
				revoked = true;
			break;
		case RDMAXFER_EVENT_RECV:
			s->msgs_ready++;
			break;
		case RDMAXFER_EVENT_DISCONNECTED:
			if (disc_status == 1)
				disc_status = c[i].status;
			break;
		case RDMAXFER_EVENT_WRITE_IMM:
		case RDMAXFER_EVENT_CONNECTED:
			break;
		default:	/* one of our operations */
			if (s->inflight)
				s->inflight--;
			if (c[i].opcode == RDMAXFER_OP_CAS || c[i].opcode == RDMAXFER_OP_FADD)
				s->atomic_old = c[i].value;
			if (c[i].status) {
				if (!bad)
					bad = &c[i];
			} else if (!(c[i].user_data & CTL_COOKIE)) {
				progress_add(s->prog, c[i].bytes);
			}
		}
	}
	/* flushed: the reason is in the DISCONNECTED event, if it comes */
	if (bad && bad->status == -ECANCELED && disc_status == 1)
		disc_status = session_disconnect_status(s);
	if (disc_status != 1 && (!bad || bad->status == -ECANCELED)) {
		fail_line(s, "connection to %s lost: %s", s->peer, status_words(disc_status));
		return -1;
	}
	if (bad) {
		fail_line(s, "%s to %s failed: %s", cli_op_name(bad->opcode), s->peer,
			  status_words(bad->status));
		return -1;
	}
	if (revoked) {
		fail_line(s, "%s revoked its window", s->peer);
		return -1;
	}
	return n;
}

/* Wait until at least one completion or event was handled. */
static int session_wait(struct session *s, const char *what, int timeout_s)
{
	double deadline = now_sec() + timeout_s;
	int n;

	for (;;) {
		n = session_reap(s, 1000000000);
		if (n)
			return n < 0 ? -1 : 0;
		if (now_sec() > deadline) {
			fail_line(s, "no answer from %s for %d s while waiting for %s", s->peer,
				  timeout_s, what);
			return -1;
		}
	}
}

int session_wait_window(struct session *s, uint32_t access)
{
	double deadline = now_sec() + SESSION_WINDOW_TIMEOUT_S;
	struct rdmaxfer_device_info di;

	/*
	 * Atomics need them on both ends: this end's device first (iWARP
	 * devices, siw among them, and some HCAs have none), then the
	 * server's window, which has them only where its device does.
	 */
	if ((access & RDMAXFER_REMOTE_ATOMIC) &&
	    !rdx_query_device(s->fd, s->ci.dev_index, &di) && di.atomic_cap == RDMAXFER_ATOMIC_NONE) {
		fail_line(s, "the RDMA device of this connection, %.64s, has no atomics (atomic_cap none; see 'rdmaxfer info')",
			  di.name);
		return -1;
	}
	while (!s->window_id) {
		if (session_wait(s, "the server's window", SESSION_WINDOW_TIMEOUT_S))
			return -1;
		if (!s->window_id && now_sec() > deadline) {
			fail_line(s, "%s did not offer a window within %d s", s->peer,
				  SESSION_WINDOW_TIMEOUT_S);
			return -1;
		}
	}
	if ((s->window_access & access) != access) {
		fail_line(s, "the window of %s does not allow remote %s%s", s->peer,
			  access & RDMAXFER_REMOTE_ATOMIC ? "atomics" :
			  access & RDMAXFER_REMOTE_WRITE ? "writes" : "reads",
			  access & RDMAXFER_REMOTE_ATOMIC ?
			  " (is it 'rdmaxfer serve --atomic', on a device with atomics?)" : "");
		return -1;
	}
	return 0;
}

int session_drain(struct session *s)
{
	while (s->inflight)
		if (session_wait(s, "completions", SESSION_IDLE_TIMEOUT_S))
			return -1;
	return 0;
}

/* Post @n operations, never more than s->depth in flight. */
static int session_post(struct session *s, struct rdmaxfer_op *ops, unsigned int n)
{
	unsigned int max_batch = s->info.max_batch ? s->info.max_batch : 1;
	uint32_t count, posted;
	int err;

	while (n) {
		unsigned int room;

		while (s->inflight >= s->depth)
			if (session_wait(s, "completions", SESSION_IDLE_TIMEOUT_S))
				return -1;
		room = s->depth - s->inflight;
		count = n < room ? n : room;
		if (count > max_batch)
			count = max_batch;
		err = rdx_submit(s->fd, ops, count, &posted);
		if (err) {
			if (err == EINTR)
				continue;
			if (err == EAGAIN) {	/* max_pending: reap first */
				if (s->inflight ? session_wait(s, "completions", SESSION_IDLE_TIMEOUT_S) :
						  session_reap(s, 10000000) < 0)
					return -1;
				continue;
			}
			if (err == ENOTCONN || err == ECONNRESET || err == ENODEV) {
				/* the reason is in the DISCONNECTED event */
				if (session_reap(s, 1000000000) < 0)
					return -1;
				fail_line(s, "connection to %s lost", s->peer);
				return -1;
			}
			fail_line(s, "SUBMIT of %s failed: %s", cli_op_name(ops[0].opcode), strerror(err));
			return -1;
		}
		s->inflight += posted;
		ops += posted;
		n -= posted;
	}
	return 0;
}

/* One CAS or FADD on the server's window; *@old: the value before it. */
int session_atomic(struct session *s, uint16_t opcode, uint64_t remote_off, uint64_t compare_add,
		   uint64_t swap, uint64_t *old)
{
	struct rdmaxfer_op op = {
		.opcode = opcode,
		.conn_id = s->conn_id,
		.window_id = s->window_id,
		.remote_offset = remote_off,
		.length = sizeof(uint64_t),
		.compare_add = compare_add,
		.swap = swap,
		.user_data = 1,
	};

	if (session_post(s, &op, 1) || session_drain(s))
		return -1;
	*old = s->atomic_old;
	return 0;
}

/*
 * Post the operations that move @len bytes between local buffer @buf_id at
 * @buf_off and the server's window at @remote_off, of at most max_op bytes
 * each, without waiting for them to complete.  With @notify (WRITE only),
 * the last piece goes as a WRITE_IMM carrying @imm, after the others on the
 * same connection: a reliable connection executes them in order, so the
 * server's notification comes after the data of every WRITE before it has
 * landed (as the module's WRITE_DONE does after its own WRITE).
 */
int session_rdma_post(struct session *s, uint16_t opcode, uint32_t buf_id, uint64_t buf_off,
		      uint64_t remote_off, uint64_t len, bool notify, uint32_t imm)
{
	struct rdmaxfer_op ops[REAP_MAX];
	uint64_t pos = 0;
	unsigned int n;

	while (pos < len) {
		n = 0;
		memset(ops, 0, sizeof(ops));
		while (n < REAP_MAX && pos < len) {
			uint64_t chunk = len - pos < s->max_op ? len - pos : s->max_op;

			ops[n].opcode = opcode;
			ops[n].conn_id = s->conn_id;
			ops[n].buf_id = buf_id;
			ops[n].window_id = s->window_id;
			ops[n].buf_offset = buf_off + pos;
			ops[n].remote_offset = remote_off + pos;
			ops[n].length = chunk;
			ops[n].user_data = buf_off + pos + 1;
			pos += chunk;
			n++;
		}
		if (notify && pos == len) {
			ops[n - 1].opcode = RDMAXFER_OP_WRITE_IMM;
			ops[n - 1].imm_data = imm;
		}
		if (session_post(s, ops, n))
			return -1;
	}
	return 0;
}

/*
 * SEND @len bytes of buffer @buf_id (mapped at @base) from @off as messages of at most the
 * peer's max_send_size, pipelined.  A chunk that would look like a control
 * message is split so that it does not.  Does not wait for completions.
 */
int session_send(struct session *s, uint32_t buf_id, const void *base, uint64_t off,
		 uint64_t len)
{
	struct rdmaxfer_op ops[REAP_MAX];
	uint64_t pos = 0, max = s->ci.max_send_size;
	unsigned int n;

	while (pos < len) {
		n = 0;
		memset(ops, 0, sizeof(ops));
		while (n < REAP_MAX && pos < len) {
			uint64_t chunk = len - pos < max ? len - pos : max;

			if (proto_looks_like_ctl((const char *)base + off + pos, chunk))
				chunk = 1;
			ops[n].opcode = RDMAXFER_OP_SEND;
			ops[n].conn_id = s->conn_id;
			ops[n].buf_id = buf_id;
			ops[n].buf_offset = off + pos;
			ops[n].length = chunk;
			ops[n].user_data = off + pos + 1;
			pos += chunk;
			n++;
		}
		if (session_post(s, ops, n))
			return -1;
		s->msgs_sent += n;
	}
	return 0;
}

/* Send control message @req (without waiting for its completion). */
int session_ctl_send(struct session *s, const struct proto_msg *req)
{
	struct rdmaxfer_op op = {
		.opcode = RDMAXFER_OP_SEND,
		.conn_id = s->conn_id,
		.buf_id = s->ctl_buf,
		.length = sizeof(struct proto_msg),
	};

	s->ctl_slot = (s->ctl_slot + 1) % CTL_ANSWERS;
	proto_encode((struct proto_msg *)s->ctl + s->ctl_slot, req);
	op.buf_offset = (uint64_t)s->ctl_slot * sizeof(struct proto_msg);
	op.user_data = CTL_COOKIE | (op.buf_offset + 1);
	return session_post(s, &op, 1);
}

/*
 * Wait for the server's next control message, which must be of type
 * @expect; @what says what we wait for (in the error line).
 */
int session_ctl_recv(struct session *s, const char *what, uint32_t expect, struct proto_msg *rep)
{
	unsigned char buf[sizeof(struct proto_msg) * 2];
	uint32_t len;
	int err;

	for (;;) {
		while (!s->msgs_ready)
			if (session_wait(s, what, SESSION_IDLE_TIMEOUT_S))
				return -1;
		err = rdx_recv(s->fd, s->conn_id, buf, sizeof(buf), &len);
		if (err) {
			if (err == EAGAIN) {	/* the event was ahead of the message? */
				s->msgs_ready = 0;
				continue;
			}
			if (err == EMSGSIZE) {
				fail_line(s, "protocol error: %s sent a %u-byte message where a control message was expected",
					  s->peer, len);
				return -1;
			}
			fail_line(s, "RECV failed: %s", strerror(err));
			return -1;
		}
		s->msgs_ready--;
		if (proto_decode(rep, buf, len)) {
			fail_line(s, "protocol error: %s sent a %u-byte message that is not an rdmaxfer control message (is it 'rdmaxfer serve'?)",
				  s->peer, len);
			return -1;
		}
		break;
	}
	if (rep->type == PROTO_ERROR) {
		fail_line(s, "%s reported an error while we waited for %s: %s", s->peer, what,
			  strerror((int)rep->status));
		return -1;
	}
	if (rep->type != expect) {
		fail_line(s, "protocol error: %s sent %s while we waited for %s", s->peer,
			  proto_type_name(rep->type), what);
		return -1;
	}
	return 0;
}

/*
 * Ask the server to replace its window by @n windows over its buffer
 * (proto.h, 4.) and collect them in s->more_wins; *@us: how long the
 * server took to expose them.  Returns 0 or -1 (printed).
 */
int session_more_windows(struct session *s, unsigned int n, uint64_t *us)
{
	struct proto_msg req = { .type = PROTO_WINS_REQ, .length = n }, rep;
	double deadline;

	free(s->more_wins);
	s->more_wins = calloc(n, sizeof(*s->more_wins));
	if (!s->more_wins) {
		fail_line(s, "out of memory");
		return -1;
	}
	s->more_wins_cap = n;
	s->nmore_wins = 0;
	s->more_wins_len = 0;
	if (session_call(s, &req, PROTO_WINS, &rep))
		return -1;
	if (rep.status == EINVAL) {
		fail_line(s, "%s cannot split its window of %llu bytes into %u windows (of at least 4 KiB)",
			  s->peer, (unsigned long long)s->window_len, n);
		return -1;
	}
	if (rep.status || rep.length != n) {
		fail_line(s, "%s exposed %llu of %u windows: %s", s->peer,
			  (unsigned long long)rep.length, n,
			  strerror(rep.status ? (int)rep.status : EPROTO));
		return -1;
	}
	/* the ADVERTs came ahead of the answer: their events are in */
	deadline = now_sec() + SESSION_WINDOW_TIMEOUT_S;
	while (s->nmore_wins < n) {
		if (session_wait(s, "the server's windows", SESSION_WINDOW_TIMEOUT_S))
			return -1;
		if (now_sec() > deadline) {
			fail_line(s, "%s advertised %u of %u windows", s->peer, s->nmore_wins, n);
			return -1;
		}
	}
	*us = rep.offset;
	return 0;
}

/* Send control message @req and wait for the answer of type @expect. */
int session_call(struct session *s, const struct proto_msg *req, uint32_t expect,
		 struct proto_msg *rep)
{
	char what[64];

	snprintf(what, sizeof(what), "its answer to %s", proto_type_name(req->type));
	if (session_ctl_send(s, req))
		return -1;
	return session_ctl_recv(s, what, expect, rep);
}
