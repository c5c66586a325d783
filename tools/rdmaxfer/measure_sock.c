// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer sockets baseline - ping and bench over plain TCP or UDP
 * (--transport tcp|udp) on the same netdev as the RDMA measurement, and the
 * server for them that `serve` starts next to its RDMA listener.  One tool,
 * one boot, one table; the numbers are printed, not judged (on Soft-RoCE
 * under emulation TCP may well win).
 *
 * This file is the client; the server is sock_server.c, what both share
 * sock_wire.c and sock.h.
 *
 * Protocol, version 1, all integers big endian.  A TCP connection starts
 * with a 48-byte control message, and control messages are only ever that:
 *
 *	u32 magic "RXSK", u16 version, u16 type, u32 mode, u32 size, u64 v[4]
 *
 * The client's HELLO names the session: mode, message size (bounded by
 * mode), v[0] count of messages (0: until the client stops), v[1] its UDP
 * port (udp-source).  The server checks magic, version, type, mode and
 * bounds, and answers READY (v[0]: the session token of the UDP modes) or
 * closes the connection.  Modes:
 *
 *  echo	ping over TCP: the client sends @size bytes, the server sends
 *		them back, until the client closes.
 *  sink	bench write/send: the client streams @size-byte messages (one
 *		send() each, in 256 KiB pieces when larger) and shuts down its
 *		sending side; the server answers DONE: v[0] messages, v[1] bytes.
 *  source	bench read: at the client's GO the server streams @count
 *		messages (0: until the client shuts down its sending side),
 *		then closes.
 *  udp-sink	bench write/send over UDP: the client sends datagrams to the UDP
 *		port, then END (v[0] datagrams sent); the server answers DONE
 *		(v[0] datagrams and v[1] bytes received, v[2] ns since the last)
 *		once all arrived or none came for SOCK_QUIET_NS.
 *  udp-source	bench read over UDP: at the client's GO the server sends
 *		@count datagrams (0: until the client shuts down its sending
 *		side) to the client's TCP address at the HELLO's UDP port, then
 *		DONE (v[0] sent).
 *  ctl		STATS_REQ, answered by STATS: v[0] the server's monotonic clock
 *		(ns), v[1] its process CPU time (ns, user + system, all
 *		threads), v[2] and v[3] /proc/stat busy and total ticks.  The
 *		client asks before and after each measured run.
 *
 * A UDP datagram starts with 16 bytes: u32 magic ("RXSP" ping, "RXSD"
 * data), u32 token, u64 sequence number; it is padded to the message size,
 * so it is never shorter than 16 bytes.  Ping datagrams are echoed as they
 * are to their sender; data datagrams count for the udp-sink session of
 * their token when their length is that session's.
 *
 * What is measured.  ping: the time from before the request's send() to
 * after the echo's last byte was read, per round trip; --op does not change
 * it (sockets have no one-sided operations).  UDP ping waits SOCK_UDP_WAIT_MS
 * for an echo, then counts the datagram lost and sends the round again with
 * a new sequence number (late echoes are discarded).  bench: per size, the
 * connections (one thread each; --bidir: a sink and a source thread each)
 * are set up first, then all start at once; the measured phase ends when
 * the receiver got the last message: TCP sink at the server's DONE, TCP
 * source at the end of the stream, UDP sink at the server's last datagram
 * (DONE's v[2] is subtracted), UDP source at the client's last datagram.
 * UDP counts what arrived and reports sent - received as lost.  --depth has
 * no socket meaning and is ignored: the kernel's socket buffers (TCP:
 * autotuned; UDP receive: SOCK_UDP_RCVBUF asked) are the queue.  Nagle is on
 * for bench streams (as for any bulk sender) and off for ping and control.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sock.h"

#define ERRLEN 256

struct target {
	const char *host;
	uint16_t port;
	struct sockaddr_storage sa;
	socklen_t len;
};

static void seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Format the error into @err (ERRLEN) unless one is there already. */
static void seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	if (err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(err, ERRLEN, fmt, ap);
	va_end(ap);
}

/* Why an exchange with the server failed: r from msg_recv/read_all, errno. */
static const char *io_words(int r)
{
	if (!r || errno == ECONNRESET || errno == EPIPE)
		return "the server closed the connection";
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return "no answer from the server for 30 s";
	if (errno == EPROTO)
		return "protocol error (not an rdmaxfer serve of this version?)";
	return strerror(errno);
}

static int resolve(struct target *t, const char *host, uint16_t port, char *err)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	char tmp[INET6_ADDRSTRLEN + 20], ps[8];
	struct addrinfo *res = NULL;
	size_t n = strlen(host);

	t->host = host;
	t->port = port;
	if (n >= sizeof(tmp) || !n) {
		seterr(err, "'%s' is not an IPv4 or IPv6 address", host);
		return -1;
	}
	if (host[0] == '[' && host[n - 1] == ']') {
		memcpy(tmp, host + 1, n - 2);
		tmp[n - 2] = '\0';
	} else {
		memcpy(tmp, host, n + 1);
	}
	snprintf(ps, sizeof(ps), "%u", port);
	if (getaddrinfo(tmp, ps, &hints, &res) || !res) {
		seterr(err, "'%s' is not an IPv4 or IPv6 address", host);
		return -1;
	}
	memcpy(&t->sa, res->ai_addr, res->ai_addrlen);
	t->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* A TCP connection to @t (10 s to connect); -1 with the reason in @err. */
static int tcp_connect(const struct target *t, char *err)
{
	struct pollfd pfd;
	socklen_t el = sizeof(int);
	int fd, e = 0;

	fd = socket(t->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		seterr(err, "cannot create a TCP socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)&t->sa, t->len)) {
		if (errno != EINPROGRESS) {
			e = errno;
		} else {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, 10000) <= 0)
				e = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el))
				e = errno;
		}
	}
	if (e) {
		seterr(err, "cannot connect to %s port %u over TCP: %s%s", t->host, t->port,
		       strerror(e), e == ECONNREFUSED ? " (is 'rdmaxfer serve' running there?)" : "");
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, 0);
	set_timeout(fd, SOCK_IO_TIMEOUT);
	return fd;
}

/*
 * Connect and open a session: HELLO, READY (into @ready).  Returns the
 * socket or -1 with the reason in @err.
 */
static int open_session(const struct target *t, uint32_t mode, uint64_t size, uint64_t count,
			uint16_t uport, bool nodelay, struct smsg *ready, char *err)
{
	uint64_t v[4] = { count, uport, 0, 0 };
	int fd = tcp_connect(t, err), r;

	if (fd < 0)
		return -1;
	if (nodelay)
		set_nodelay(fd);
	if (msg_send(fd, ST_HELLO, mode, (uint32_t)size, v)) {
		seterr(err, "%s port %u: %s", t->host, t->port, io_words(-1));
		goto fail;
	}
	r = msg_recv(fd, ready);
	if (r != 1 || ready->type != ST_READY) {
		if (!r)
			seterr(err, "%s port %u closed the sockets session (too many sessions, or a server without the sockets baseline of this version)",
			       t->host, t->port);
		else
			seterr(err, "%s port %u: %s", t->host, t->port,
			       r == 1 ? "protocol error (unexpected answer)" : io_words(r));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

static int check_size(enum bench_transport t, bool ping, uint64_t size)
{
	uint64_t max = sock_max_msg(t, ping);

	if (size >= 1 && size <= max)
		return 0;
	warnx_("--size %llu: --transport %s %s carries 1 to %llu bytes per message",
	       (unsigned long long)size, transport_name(t), ping ? "ping" : "bench",
	       (unsigned long long)max);
	return -1;
}

/* --- ping ------------------------------------------------------------- */

static int tcp_ping(const struct ping_opts *o, const struct target *t, uint64_t *ns)
{
	uint64_t i, n = o->warmup + o->count, t0;
	char err[ERRLEN] = "";
	struct smsg m;
	void *buf;
	int fd, r = 1;

	buf = make_pattern(o->size);
	if (!buf)
		return fail("out of memory");
	fd = open_session(t, SM_ECHO, o->size, 0, 0, true, &m, err);
	if (fd < 0) {
		free(buf);
		fail("%s", err);
		return -1;
	}
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (send_all(fd, buf, o->size)) {
			r = -1;
			break;
		}
		r = recv_all(fd, buf, o->size);
		if (r != 1)
			break;
		if (i >= o->warmup)
			ns[i - o->warmup] = now_ns() - t0;
	}
	close(fd);
	free(buf);
	if (i < n) {
		fail("TCP ping to %s port %u: %s", t->host, t->port, io_words(r));
		return -1;
	}
	return 0;
}

static int udp_ping(const struct ping_opts *o, const struct target *t, uint64_t *ns)
{
	uint32_t dlen = dgram_len(o->size), token = (uint32_t)(now_ns() ^ (uint64_t)getpid() << 16);
	uint64_t i, n = o->warmup + o->count, seq = 0, lost = 0, t0;
	unsigned char *buf, *rbuf;
	unsigned int in_a_row;
	int fd, ret = -1;

	buf = make_pattern(dlen);
	rbuf = malloc(65536);
	fd = socket(t->sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!buf || !rbuf || fd < 0) {
		fail("cannot set up the UDP ping: %s", strerror(errno));
		goto out;
	}
	if (connect(fd, (const struct sockaddr *)&t->sa, t->len)) {
		fail("cannot reach %s port %u over UDP: %s", t->host, t->port, strerror(errno));
		goto out;
	}
	put32(buf, SOCK_MAGIC_PING);
	put32(buf + 4, token);
	for (i = 0; i < n; i++) {
		for (in_a_row = 0;; in_a_row++) {
			uint64_t deadline;
			bool got = false;

			if (in_a_row == SOCK_UDP_GIVE_UP) {
				fail("UDP ping to %s port %u: no echo for %d datagrams in a row (is 'rdmaxfer serve' running there? UDP blocked?)",
				     t->host, t->port, SOCK_UDP_GIVE_UP);
				goto out;
			}
			put64(buf + 8, ++seq);
			t0 = now_ns();
			deadline = t0 + SOCK_UDP_WAIT_MS * 1000000ull;
			if (send(fd, buf, dlen, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
				goto io_error;
			while (!got) {
				struct pollfd pfd = { .fd = fd, .events = POLLIN };
				uint64_t now = now_ns();
				ssize_t r;

				if (now >= deadline)
					break;
				r = poll(&pfd, 1, (int)((deadline - now + 999999) / 1000000));
				if (r < 0 && errno != EINTR)
					goto io_error;
				if (r <= 0)
					continue;
				r = recv(fd, rbuf, 65536, MSG_DONTWAIT);
				if (r < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (r < 0)
					goto io_error;
				/* a late echo of an earlier round is not this one */
				got = r == dlen && get32(rbuf) == SOCK_MAGIC_PING &&
				      get32(rbuf + 4) == token && get64(rbuf + 8) == seq;
			}
			if (got) {
				if (i >= o->warmup)
					ns[i - o->warmup] = now_ns() - t0;
				break;
			}
			lost++;
		}
	}
	if (lost)
		warnx_("UDP ping: %llu datagram%s lost (no echo within %d ms), sent again",
		       (unsigned long long)lost, lost == 1 ? "" : "s", SOCK_UDP_WAIT_MS);
	ret = 0;
	goto out;
io_error:
	fail("UDP ping to %s port %u: %s%s", t->host, t->port, strerror(errno),
	     errno == ECONNREFUSED ? " (nothing listens on that UDP port: is 'rdmaxfer serve' running there?)" : "");
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(rbuf);
	return ret;
}

int sock_ping(const struct ping_opts *o, uint64_t *ns)
{
	char err[ERRLEN] = "";
	struct target t;

	if (o->transport != BT_TCP && o->transport != BT_UDP) {
		fail("%s: transport %s is not a socket", __func__, transport_name(o->transport));
		return -1;
	}
	if (check_size(o->transport, true, o->size))
		return -1;
	if (resolve(&t, o->host, sock_port(o->port), err)) {
		fail("%s", err);
		return -1;
	}
	return o->transport == BT_TCP ? tcp_ping(o, &t, ns) : udp_ping(o, &t, ns);
}

/* --- bench ------------------------------------------------------------ */

enum { W_SINK, W_SOURCE };

struct bench_run;

struct worker {
	struct bench_run *b;
	pthread_t tid;
	int dir;			/* W_SINK: client -> server */
	int fd, ufd;			/* the TCP session, the UDP socket */
	uint32_t token;
	uint64_t msgs, bytes, lost;	/* received ones; UDP: sent - received */
	uint64_t end_ns;		/* the receiver got the last message */
	char err[ERRLEN];
};

struct bench_run {
	const struct bench_opts *o;
	const struct target *t;
	uint64_t size;
	bool udp;
	const unsigned char *pat;	/* SOCK_CHUNK bytes to send */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int ready;		/* workers set up (or failed) */
	bool go, abort;
	uint64_t t0, deadline;		/* set before go */
};

/* Has this sender sent enough: @n messages, or the deadline passed? */
static bool enough(const struct bench_run *b, uint64_t n)
{
	return b->o->iters ? n >= b->o->iters : now_ns() >= b->deadline;
}

static void run_tcp_sink(struct worker *w)
{
	struct bench_run *b = w->b;
	uint64_t n = 0;
	struct smsg m;
	int r;

	while (!enough(b, n)) {
		if (send_msg_bytes(w->fd, b->pat, b->size)) {
			seterr(w->err, "TCP bench to %s port %u: %s", b->t->host, b->t->port,
			       io_words(-1));
			return;
		}
		n++;
	}
	shutdown(w->fd, SHUT_WR);
	r = msg_recv(w->fd, &m);
	w->end_ns = now_ns();
	if (r != 1 || m.type != ST_DONE) {
		seterr(w->err, "TCP bench to %s port %u: %s", b->t->host, b->t->port,
		       r == 1 ? "protocol error (unexpected answer)" : io_words(r));
		return;
	}
	if (m.v[1] != n * b->size) {
		seterr(w->err, "TCP bench to %s port %u: the server received %llu of %llu bytes",
		       b->t->host, b->t->port, (unsigned long long)m.v[1],
		       (unsigned long long)(n * b->size));
		return;
	}
	w->msgs = n;
	w->bytes = n * b->size;
}

static void run_tcp_source(struct worker *w)
{
	struct bench_run *b = w->b;
	bool stopped = b->o->iters != 0;
	void *buf = malloc(SOCK_CHUNK);
	uint64_t bytes = 0;
	ssize_t n;

	if (!buf) {
		seterr(w->err, "out of memory");
		return;
	}
	if (msg_send(w->fd, ST_GO, SM_SOURCE, (uint32_t)b->size, NULL)) {
		seterr(w->err, "TCP bench from %s port %u: %s", b->t->host, b->t->port,
		       io_words(-1));
		free(buf);
		return;
	}
	for (;;) {
		if (!stopped && now_ns() >= b->deadline) {
			shutdown(w->fd, SHUT_WR);	/* the server stops at this */
			stopped = true;
		}
		n = recv(w->fd, buf, SOCK_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		bytes += (uint64_t)n;
	}
	w->end_ns = now_ns();
	free(buf);
	if (n < 0)
		seterr(w->err, "TCP bench from %s port %u: %s", b->t->host, b->t->port,
		       io_words(-1));
	else if (b->o->iters && bytes != b->o->iters * b->size)
		seterr(w->err, "TCP bench from %s port %u: the stream ended after %llu of %llu bytes",
		       b->t->host, b->t->port, (unsigned long long)bytes,
		       (unsigned long long)(b->o->iters * b->size));
	else if (bytes % b->size)
		seterr(w->err, "TCP bench from %s port %u: the stream ended after %llu bytes, in the middle of a message",
		       b->t->host, b->t->port, (unsigned long long)bytes);
	w->msgs = bytes / b->size;
	w->bytes = bytes;
}

static void run_udp_sink(struct worker *w)
{
	struct bench_run *b = w->b;
	uint32_t dlen = dgram_len(b->size);
	unsigned char *buf = malloc(dlen);
	uint64_t n = 0, v[4] = { 0 }, idle;
	struct smsg m;
	int r;

	if (!buf) {
		seterr(w->err, "out of memory");
		return;
	}
	memcpy(buf, b->pat, dlen);
	put32(buf, SOCK_MAGIC_DATA);
	put32(buf + 4, w->token);
	while (!enough(b, n)) {
		put64(buf + 8, n);
		if (send(w->ufd, buf, dlen, 0) < 0) {
			if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
				continue;
			seterr(w->err, "UDP bench to %s port %u: %s%s", b->t->host, b->t->port,
			       strerror(errno),
			       errno == ECONNREFUSED ? " (the server's UDP port is closed)" : "");
			free(buf);
			return;
		}
		n++;
	}
	free(buf);
	v[0] = n;
	if (msg_send(w->fd, ST_END, SM_UDP_SINK, (uint32_t)b->size, v)) {
		seterr(w->err, "UDP bench to %s port %u: %s", b->t->host, b->t->port,
		       io_words(-1));
		return;
	}
	r = msg_recv(w->fd, &m);
	w->end_ns = now_ns();
	if (r != 1 || m.type != ST_DONE) {
		seterr(w->err, "UDP bench to %s port %u: %s", b->t->host, b->t->port,
		       r == 1 ? "protocol error (unexpected answer)" : io_words(r));
		return;
	}
	/* the run ended when the last datagram arrived, not at the DONE */
	idle = m.v[2];
	w->end_ns = w->end_ns - b->t0 > idle ? w->end_ns - idle : b->t0;
	w->msgs = m.v[0] < n ? m.v[0] : n;
	w->lost = n - w->msgs;
	w->bytes = w->msgs * b->size;
}

static void run_udp_source(struct worker *w)
{
	struct bench_run *b = w->b;
	uint32_t dlen = dgram_len(b->size);
	uint64_t got = 0, sent = 0, last_rx = 0, t_done = 0, t_prog = now_ns();
	bool stopped = b->o->iters != 0, done = false;
	struct mmsghdr mm[SOCK_UDP_BATCH];
	struct iovec iov[SOCK_UDP_BATCH];
	unsigned char *bufs;
	int i, n, r;

	bufs = malloc((size_t)SOCK_UDP_BATCH * dlen);
	if (!bufs) {
		seterr(w->err, "out of memory");
		return;
	}
	if (msg_send(w->fd, ST_GO, SM_UDP_SOURCE, (uint32_t)b->size, NULL)) {
		seterr(w->err, "UDP bench from %s port %u: %s", b->t->host, b->t->port,
		       io_words(-1));
		free(bufs);
		return;
	}
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = w->ufd, .events = POLLIN },
			{ .fd = done ? -1 : w->fd, .events = POLLIN },
		};
		uint64_t now = now_ns(), wait;

		if (!stopped && now >= b->deadline) {
			shutdown(w->fd, SHUT_WR);	/* the server stops at this */
			stopped = true;
			t_prog = now;
		}
		if (done && (got >= sent ||
			     now - (last_rx > t_done ? last_rx : t_done) >= SOCK_QUIET_NS))
			break;
		if (!done && stopped && now - t_prog >= SOCK_IO_TIMEOUT * 1000000000ull) {
			seterr(w->err, "UDP bench from %s port %u: no datagram and no end from the server for %d s",
			       b->t->host, b->t->port, SOCK_IO_TIMEOUT);
			break;
		}
		wait = done ? SOCK_QUIET_NS / 1000000 : stopped ? 1000 :
		       (b->deadline - now) / 1000000 + 1;
		if (poll(pfd, 2, (int)(wait < 1000 ? wait : 1000)) < 0 && errno != EINTR) {
			seterr(w->err, "poll failed: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents) {
			for (i = 0; i < SOCK_UDP_BATCH; i++) {
				iov[i].iov_base = bufs + (size_t)i * dlen;
				iov[i].iov_len = dlen;
				memset(&mm[i], 0, sizeof(mm[i]));
				mm[i].msg_hdr.msg_iov = &iov[i];
				mm[i].msg_hdr.msg_iovlen = 1;
			}
			n = recvmmsg(w->ufd, mm, SOCK_UDP_BATCH, MSG_DONTWAIT, NULL);
			if (n > 0)
				last_rx = t_prog = now_ns();
			for (i = 0; i < n; i++) {
				const unsigned char *p = iov[i].iov_base;

				if (mm[i].msg_len == dlen && !(mm[i].msg_hdr.msg_flags & MSG_TRUNC) &&
				    get32(p) == SOCK_MAGIC_DATA && get32(p + 4) == w->token)
					got++;
			}
		}
		if (pfd[1].revents) {
			struct smsg m;

			r = msg_recv(w->fd, &m);
			if (r != 1 || m.type != ST_DONE) {
				seterr(w->err, "UDP bench from %s port %u: %s", b->t->host,
				       b->t->port,
				       r == 1 ? "protocol error (unexpected answer)" : io_words(r));
				break;
			}
			sent = m.v[0];
			done = true;
			t_done = now_ns();
		}
	}
	free(bufs);
	w->end_ns = last_rx ? last_rx : t_done ? t_done : now_ns();
	w->msgs = got < sent ? got : sent;
	w->lost = sent - w->msgs;
	w->bytes = w->msgs * b->size;
}

/* Set a worker up: its sessions and sockets.  0 or -1 (w->err). */
static int worker_setup(struct worker *w)
{
	struct bench_run *b = w->b;
	const struct target *t = b->t;
	uint32_t mode = b->udp ? (w->dir == W_SINK ? SM_UDP_SINK : SM_UDP_SOURCE) :
			(w->dir == W_SINK ? SM_SINK : SM_SOURCE);
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	uint16_t uport = 0;
	struct smsg m;
	int zero = 0;

	if (b->udp) {
		w->ufd = socket(t->sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (w->ufd < 0) {
			seterr(w->err, "cannot create a UDP socket: %s", strerror(errno));
			return -1;
		}
		if (w->dir == W_SINK) {
			if (connect(w->ufd, (const struct sockaddr *)&t->sa, t->len)) {
				seterr(w->err, "cannot reach %s port %u over UDP: %s", t->host,
				       t->port, strerror(errno));
				return -1;
			}
		} else {
			/* any local address and port: the server sends to our TCP address */
			memset(&me, 0, sizeof(me));
			me.ss_family = t->sa.ss_family;
			if (me.ss_family == AF_INET6)
				setsockopt(w->ufd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			set_rcvbuf(w->ufd);
			if (bind(w->ufd, (struct sockaddr *)&me,
				 me.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
				 sizeof(struct sockaddr_in)) ||
			    getsockname(w->ufd, (struct sockaddr *)&me, &ml)) {
				seterr(w->err, "cannot bind a UDP socket: %s", strerror(errno));
				return -1;
			}
			uport = ntohs(me.ss_family == AF_INET6 ?
				      ((struct sockaddr_in6 *)&me)->sin6_port :
				      ((struct sockaddr_in *)&me)->sin_port);
		}
	}
	w->fd = open_session(t, mode, b->size, w->dir == W_SOURCE ? b->o->iters : 0, uport,
			     b->udp, &m, w->err);
	if (w->fd < 0)
		return -1;
	w->token = (uint32_t)m.v[0];
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bench_run *b = w->b;
	bool go;

	worker_setup(w);
	pthread_mutex_lock(&b->lock);
	b->ready++;
	pthread_cond_broadcast(&b->cond);
	while (!b->go)
		pthread_cond_wait(&b->cond, &b->lock);
	go = !b->abort && !w->err[0];
	pthread_mutex_unlock(&b->lock);
	if (go) {
		if (w->dir == W_SINK)
			b->udp ? run_udp_sink(w) : run_tcp_sink(w);
		else
			b->udp ? run_udp_source(w) : run_tcp_source(w);
	}
	if (w->fd >= 0)
		close(w->fd);
	if (w->ufd >= 0)
		close(w->ufd);
	return NULL;
}

/* The server's CPU counters, over the control session. */
static int server_snap(int fd, const struct target *t, struct cpu_snap *s)
{
	struct smsg m;
	int r;

	if (msg_send(fd, ST_STATS_REQ, SM_CTL, 0, NULL)) {
		fail("%s port %u: %s", t->host, t->port, io_words(-1));
		return -1;
	}
	r = msg_recv(fd, &m);
	if (r != 1 || m.type != ST_STATS) {
		fail("%s port %u: %s", t->host, t->port,
		     r == 1 ? "protocol error (unexpected answer)" : io_words(r));
		return -1;
	}
	s->wall = m.v[0] / 1e9;
	s->proc = m.v[1] / 1e9;
	s->busy = m.v[2];
	s->total = m.v[3];
	return 0;
}

/*
 * Start a thread for each of the @nw workers of @b (--bidir: a sink and a
 * source per connection).  Returns how many started; @err says why not all.
 */
static unsigned int start_workers(struct bench_run *b, struct worker *w, unsigned int nw,
				  char *err)
{
	const struct bench_opts *o = b->o;
	unsigned int i, started = 0;
	int e;

	for (i = 0; i < nw; i++) {
		w[i].b = b;
		w[i].fd = -1;
		w[i].ufd = -1;
		if (o->bidir)
			w[i].dir = i % 2 ? W_SOURCE : W_SINK;
		else
			w[i].dir = o->op == BOP_READ ? W_SOURCE : W_SINK;
		e = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
		if (e) {
			seterr(err, "cannot start a thread: %s", strerror(e));
			break;
		}
		started++;
	}
	return started;
}

/*
 * Wait until the @started workers are set up, take the CPU counters of
 * both ends (@ca here, @sa from the server over @ctl), start all of them at
 * once and wait for them to end.  Returns 0, or -1 (printed) when a worker
 * could not be set up or the server did not answer.
 */
static int run_workers(struct bench_run *b, struct worker *w, unsigned int started, int ctl,
		       struct cpu_snap *ca, struct cpu_snap *sa, char *err)
{
	unsigned int i;

	pthread_mutex_lock(&b->lock);
	while (b->ready < started)
		pthread_cond_wait(&b->cond, &b->lock);
	for (i = 0; i < started; i++)
		seterr(err, "%s", w[i].err);
	b->abort = err[0] || server_snap(ctl, b->t, sa);
	cpu_snap(ca);
	b->t0 = now_ns();
	b->deadline = b->t0 + (uint64_t)(b->o->duration * 1e9);
	b->go = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);

	for (i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	if (b->abort) {
		if (err[0])
			fail("%s", err);	/* else server_snap() said it */
		return -1;
	}
	return 0;
}

/*
 * The row of one size: what the @nw workers moved, and the CPU use of both
 * ends between the snapshots @ca/@cb (here) and @sa/@sb (the server).
 */
static void sock_bench_row(const struct bench_run *b, const struct worker *w, unsigned int nw,
			   struct cpu_snap *ca, struct cpu_snap *cb, struct cpu_snap *sa,
			   struct cpu_snap *sb, struct bench_row *row)
{
	uint64_t t_end = b->t0 + 1;
	unsigned int i;

	memset(row, 0, sizeof(*row));
	row->size = b->size;
	for (i = 0; i < nw; i++) {
		row->iters += w[i].msgs;
		row->bytes += w[i].bytes;
		row->lost += w[i].lost;
		if (w[i].end_ns > t_end)
			t_end = w[i].end_ns;
	}
	row->secs = (t_end - b->t0) / 1e9;
	/*
	 * CPU per second of the measured phase: the wait for UDP stragglers
	 * and the joins after it add time, not work
	 */
	cb->wall = ca->wall + row->secs;
	sb->wall = sa->wall + row->secs;
	row->cpu_client = cpu_proc_pct(ca, cb);
	row->cpu_client_sys = cpu_sys_pct(ca, cb);
	row->cpu_server = cpu_proc_pct(sa, sb);
	row->cpu_server_sys = cpu_sys_pct(sa, sb);
}

int sock_bench_size(const struct bench_opts *o, uint64_t size, struct bench_row *row)
{
	unsigned int nw, i, started;
	struct cpu_snap ca, cb, sa, sb;
	struct worker *w = NULL;
	unsigned char *pat = NULL;
	struct bench_run b;
	char err[ERRLEN] = "";
	struct target t;
	struct smsg m;
	int ctl = -1, ret = -1;

	if (o->transport != BT_TCP && o->transport != BT_UDP) {
		fail("%s: transport %s is not a socket", __func__, transport_name(o->transport));
		return -1;
	}
	if (check_size(o->transport, false, size))
		return -1;
	if (o->conns < 1 || o->conns > BENCH_MAX_CONNS || (!o->iters && !(o->duration > 0))) {
		fail("%s: bad options (conns %u, iters %llu, duration %g)", __func__, o->conns,
		     (unsigned long long)o->iters, o->duration);
		return -1;
	}
	if (resolve(&t, o->host, sock_port(o->port), err)) {
		fail("%s", err);
		return -1;
	}
	memset(&b, 0, sizeof(b));
	b.o = o;
	b.t = &t;
	b.size = size;
	b.udp = o->transport == BT_UDP;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	nw = o->conns * (o->bidir ? 2 : 1);
	w = calloc(nw, sizeof(*w));
	pat = make_pattern(SOCK_CHUNK);
	if (!w || !pat) {
		fail("out of memory");
		goto out;
	}
	b.pat = pat;
	ctl = open_session(&t, SM_CTL, 0, 0, 0, true, &m, err);
	if (ctl < 0) {
		fail("%s", err);
		goto out;
	}

	/* all set up: take the counters, then start everybody at once */
	started = start_workers(&b, w, nw, err);
	if (run_workers(&b, w, started, ctl, &ca, &sa, err))
		goto out;
	cpu_snap(&cb);
	for (i = 0; i < started; i++)
		seterr(err, "%s", w[i].err);
	if (err[0]) {
		fail("%s", err);
		goto out;
	}
	if (server_snap(ctl, &t, &sb))
		goto out;
	sock_bench_row(&b, w, nw, &ca, &cb, &sa, &sb, row);
	ret = 0;
out:
	if (ctl >= 0)
		close(ctl);
	pthread_cond_destroy(&b.cond);
	pthread_mutex_destroy(&b.lock);
	free(pat);
	free(w);
	return ret;
}
