// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer sockets baseline - ping and bench over plain TCP or UDP
 * (--transport tcp|udp) on the same netdev as the RDMA measurement, and the
 * server for them that `serve` starts next to its RDMA listener.  One tool,
 * one boot, one table; the numbers are printed, not judged (on Soft-RoCE
 * under emulation TCP may well win).
 *
 * Server (sock_server_start): a TCP listener and a UDP socket on port
 * sock_port() of serve's RDMA port (measure.h: 1000 above it, never the
 * same number, which on iWARP is a TCP port the RDMA listener holds),
 * served by detached threads that block every signal (so SIGINT and
 * SIGTERM still reach serve's main loop), never print and touch
 * nothing of serve's.  One thread per TCP connection (at most
 * SOCK_SESSIONS), one for the UDP socket.  Whatever a client sends wrong
 * ends only its own session.
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

#include "measure.h"

#define SOCK_MAGIC		0x5258534bu	/* "RXSK": TCP control messages */
#define SOCK_MAGIC_PING		0x52585350u	/* "RXSP": UDP ping datagrams */
#define SOCK_MAGIC_DATA		0x52585344u	/* "RXSD": UDP data datagrams */
#define SOCK_VERSION		1
#define SOCK_MSG_LEN		48
#define SOCK_DGRAM_HDR		16

/* Largest TCP bench message (it is sent in SOCK_CHUNK pieces). */
#define SOCK_TCP_MAX_MSG	(1ull << 30)
#define SOCK_CHUNK		(256u << 10)
#define SOCK_SESSIONS		256		/* TCP sessions served at once */
#define SOCK_UDP_SLOTS		64		/* udp-sink sessions at once */
#define SOCK_UDP_BATCH		16		/* datagrams per recvmmsg */
#define SOCK_UDP_RCVBUF		(4 << 20)
#define SOCK_QUIET_NS		500000000ull	/* UDP: no datagram for this long: done */
#define SOCK_UDP_WAIT_MS	1000		/* ping: an echo later than this is lost */
#define SOCK_UDP_GIVE_UP	3		/* ping: this many losses in a row: fail */
#define SOCK_IO_TIMEOUT		30		/* client: seconds without progress */
#define SOCK_HELLO_TIMEOUT	10		/* server: seconds to get the HELLO */

enum { ST_HELLO = 1, ST_READY, ST_GO, ST_STATS_REQ, ST_STATS, ST_END, ST_DONE };
enum { SM_ECHO = 1, SM_SINK, SM_SOURCE, SM_UDP_SINK, SM_UDP_SOURCE, SM_CTL };

struct smsg {
	uint16_t type;
	uint32_t mode;
	uint32_t size;
	uint64_t v[4];
};

/* --- wire format ------------------------------------------------------ */

static void put32(unsigned char *p, uint32_t x)
{
	p[0] = x >> 24;
	p[1] = x >> 16;
	p[2] = x >> 8;
	p[3] = x;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put64(unsigned char *p, uint64_t x)
{
	put32(p, x >> 32);
	put32(p + 4, (uint32_t)x);
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* --- I/O helpers ------------------------------------------------------ */

/* Send all @len bytes: 0, or -1 with errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly @len bytes: 1, 0 at EOF before the first byte, -1 with errno. */
static int read_all(int fd, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, p + got, len - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!n) {
			if (!got)
				return 0;
			errno = EPROTO;
			return -1;
		}
		got += (size_t)n;
	}
	return 1;
}

/* Send @len bytes of a message from @pat (SOCK_CHUNK bytes): 0 or -1. */
static int send_msg_bytes(int fd, const unsigned char *pat, uint64_t len)
{
	while (len) {
		size_t n = len < SOCK_CHUNK ? (size_t)len : SOCK_CHUNK;

		if (write_all(fd, pat, n))
			return -1;
		len -= n;
	}
	return 0;
}

static int msg_send(int fd, uint16_t type, uint32_t mode, uint32_t size, const uint64_t *v)
{
	unsigned char b[SOCK_MSG_LEN];
	int i;

	put32(b, SOCK_MAGIC);
	b[4] = SOCK_VERSION >> 8;
	b[5] = SOCK_VERSION & 0xff;
	b[6] = type >> 8;
	b[7] = type & 0xff;
	put32(b + 8, mode);
	put32(b + 12, size);
	for (i = 0; i < 4; i++)
		put64(b + 16 + 8 * i, v ? v[i] : 0);
	return write_all(fd, b, sizeof(b));
}

/* A control message: 1, 0 at EOF, -1 with errno (EPROTO: not our protocol). */
static int msg_recv(int fd, struct smsg *m)
{
	unsigned char b[SOCK_MSG_LEN];
	int i, r = read_all(fd, b, sizeof(b));

	if (r <= 0)
		return r;
	if (get32(b) != SOCK_MAGIC || (b[4] << 8 | b[5]) != SOCK_VERSION) {
		errno = EPROTO;
		return -1;
	}
	m->type = (uint16_t)(b[6] << 8 | b[7]);
	m->mode = get32(b + 8);
	m->size = get32(b + 12);
	for (i = 0; i < 4; i++)
		m->v[i] = get64(b + 16 + 8 * i);
	return 1;
}

static void set_timeout(int fd, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* UDP: SOCK_UDP_RCVBUF, beyond net.core.rmem_max when we may (root). */
static void set_rcvbuf(int fd)
{
	int v = SOCK_UDP_RCVBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

static uint32_t dgram_len(uint64_t size)
{
	return size < SOCK_DGRAM_HDR ? SOCK_DGRAM_HDR : (uint32_t)size;
}

uint64_t sock_max_msg(enum bench_transport t, bool ping)
{
	if (t == BT_RDMA)
		return 0;
	return t == BT_UDP || ping ? SOCK_MAX_MSG : SOCK_TCP_MAX_MSG;
}

/* ===================================================================== */
/* Server                                                                 */
/* ===================================================================== */

struct udp_slot {
	uint32_t token;			/* 0: free */
	uint32_t dlen;			/* datagram length of the session */
	uint64_t size;			/* message size it counts */
	uint64_t dgrams, bytes, last_rx;
};

static struct {
	int tcp_fd, udp_fd;
	pthread_mutex_t lock;		/* the rest */
	unsigned int sessions;
	uint32_t gen;
	struct udp_slot slots[SOCK_UDP_SLOTS];
} srv = { .tcp_fd = -1, .udp_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

/* A token, never 0; its low bits are the slot index. */
static uint32_t next_token(unsigned int slot)
{
	srv.gen = srv.gen % (UINT32_MAX / SOCK_UDP_SLOTS - 1) + 1;
	return srv.gen * SOCK_UDP_SLOTS + slot;
}

static uint32_t udp_slot_get(uint64_t size)
{
	uint32_t token = 0;
	unsigned int i;

	pthread_mutex_lock(&srv.lock);
	for (i = 0; i < SOCK_UDP_SLOTS; i++) {
		struct udp_slot *s = &srv.slots[i];

		if (s->token)
			continue;
		memset(s, 0, sizeof(*s));
		s->token = token = next_token(i);
		s->dlen = dgram_len(size);
		s->size = size;
		break;
	}
	pthread_mutex_unlock(&srv.lock);
	return token;
}

static void udp_slot_read(uint32_t token, uint64_t *dgrams, uint64_t *bytes, uint64_t *last)
{
	struct udp_slot *s = &srv.slots[token % SOCK_UDP_SLOTS];

	pthread_mutex_lock(&srv.lock);
	*dgrams = s->dgrams;
	*bytes = s->bytes;
	*last = s->last_rx;
	pthread_mutex_unlock(&srv.lock);
}

static void udp_slot_put(uint32_t token)
{
	pthread_mutex_lock(&srv.lock);
	srv.slots[token % SOCK_UDP_SLOTS].token = 0;
	pthread_mutex_unlock(&srv.lock);
}

/* The UDP socket: echo ping datagrams, count data datagrams. */
static void *udp_thread(void *arg)
{
	static unsigned char bufs[SOCK_UDP_BATCH][65536];
	struct sockaddr_storage from[SOCK_UDP_BATCH];
	struct mmsghdr mm[SOCK_UDP_BATCH];
	struct iovec iov[SOCK_UDP_BATCH];
	int fd = srv.udp_fd, i, n;

	(void)arg;
	for (;;) {
		bool locked = false;
		uint64_t now;

		memset(mm, 0, sizeof(mm));
		for (i = 0; i < SOCK_UDP_BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_name = &from[i];
			mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(fd, mm, SOCK_UDP_BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno != EINTR && errno != EAGAIN)
				usleep(10000);	/* e.g. ENOMEM: do not spin */
			continue;
		}
		now = now_ns();
		for (i = 0; i < n; i++) {
			unsigned int len = mm[i].msg_len;
			struct udp_slot *s;
			uint32_t token;

			if (len < SOCK_DGRAM_HDR || (mm[i].msg_hdr.msg_flags & MSG_TRUNC))
				continue;
			if (get32(bufs[i]) == SOCK_MAGIC_PING) {
				sendto(fd, bufs[i], len, MSG_DONTWAIT | MSG_NOSIGNAL,
				       (struct sockaddr *)&from[i], mm[i].msg_hdr.msg_namelen);
				continue;
			}
			if (get32(bufs[i]) != SOCK_MAGIC_DATA)
				continue;
			token = get32(bufs[i] + 4);
			s = &srv.slots[token % SOCK_UDP_SLOTS];
			if (!locked) {
				pthread_mutex_lock(&srv.lock);
				locked = true;
			}
			if (!token || s->token != token || s->dlen != len)
				continue;
			s->dgrams++;
			s->bytes += s->size;
			s->last_rx = now;
		}
		if (locked)
			pthread_mutex_unlock(&srv.lock);
	}
	return NULL;
}

/* Has the client sent anything (its stop: EOF) or failed?  Non-blocking. */
static bool client_stopped(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* End a session cleanly: our side done, wait (bounded) for the client's EOF. */
static void linger_close(int fd)
{
	char buf[256];

	shutdown(fd, SHUT_WR);
	set_timeout(fd, SOCK_HELLO_TIMEOUT);
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
}

/* A source session starts streaming at the client's GO. */
static bool got_go(int fd)
{
	struct smsg m;

	return msg_recv(fd, &m) == 1 && m.type == ST_GO;
}

static void *make_pattern(size_t len)
{
	unsigned char *p = malloc(len);
	size_t i;

	if (p)
		for (i = 0; i < len; i++)
			p[i] = (unsigned char)(i * 7 + 1);
	return p;
}

static void srv_echo(int fd, uint32_t size)
{
	void *buf = malloc(size);

	set_nodelay(fd);
	if (!buf || msg_send(fd, ST_READY, SM_ECHO, size, NULL))
		goto out;
	while (read_all(fd, buf, size) == 1 && !write_all(fd, buf, size))
		;
out:
	free(buf);
}

static void srv_sink(int fd, uint32_t size)
{
	void *buf = malloc(SOCK_CHUNK);
	uint64_t bytes = 0, v[4] = { 0 };
	ssize_t n;

	if (!buf || msg_send(fd, ST_READY, SM_SINK, size, NULL))
		goto out;
	for (;;) {
		n = recv(fd, buf, SOCK_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (!n)
			break;
		bytes += (uint64_t)n;
	}
	v[0] = bytes / size;
	v[1] = bytes;
	if (!msg_send(fd, ST_DONE, SM_SINK, size, v))
		linger_close(fd);
out:
	free(buf);
}

static void srv_source(int fd, uint32_t size, uint64_t count)
{
	unsigned char *pat = make_pattern(SOCK_CHUNK);
	uint64_t sent = 0, since = 0;

	if (!pat || msg_send(fd, ST_READY, SM_SOURCE, size, NULL) || !got_go(fd))
		goto out;
	while (!count || sent < count) {
		if (send_msg_bytes(fd, pat, size))
			goto out;
		sent++;
		since += size;
		if (since >= SOCK_CHUNK) {
			since = 0;
			if (client_stopped(fd))
				break;
		}
	}
	linger_close(fd);
out:
	free(pat);
}

static void srv_udp_sink(int fd, uint32_t size)
{
	uint64_t v[4] = { 0 }, sent, dgrams, bytes, last, t_end;
	uint32_t token = udp_slot_get(size);
	struct smsg m;

	if (!token)
		return;		/* all slots busy: the client sees the close */
	set_nodelay(fd);
	v[0] = token;
	if (msg_send(fd, ST_READY, SM_UDP_SINK, size, v) ||
	    msg_recv(fd, &m) != 1 || m.type != ST_END)
		goto out;
	sent = m.v[0];
	t_end = now_ns();
	for (;;) {
		uint64_t now = now_ns();

		udp_slot_read(token, &dgrams, &bytes, &last);
		if (dgrams >= sent || now - (last > t_end ? last : t_end) >= SOCK_QUIET_NS)
			break;
		usleep(1000);
	}
	v[0] = dgrams;
	v[1] = bytes;
	v[2] = last ? now_ns() - last : 0;
	if (!msg_send(fd, ST_DONE, SM_UDP_SINK, size, v))
		linger_close(fd);
out:
	udp_slot_put(token);
}

static void srv_udp_source(int fd, uint32_t size, uint64_t count, uint64_t port)
{
	uint32_t dlen = dgram_len(size), token;
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	uint64_t v[4] = { 0 }, sent = 0;
	unsigned char *buf = NULL;
	int one = 0, ufd = -1;

	if (getpeername(fd, (struct sockaddr *)&peer, &plen))
		return;
	if (peer.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&peer)->sin6_port = htons((uint16_t)port);
	else if (peer.ss_family == AF_INET)
		((struct sockaddr_in *)&peer)->sin_port = htons((uint16_t)port);
	else
		return;
	ufd = socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ufd < 0)
		return;
	if (peer.ss_family == AF_INET6)
		setsockopt(ufd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	buf = make_pattern(dlen);
	if (!buf || connect(ufd, (struct sockaddr *)&peer, plen))
		goto out;
	pthread_mutex_lock(&srv.lock);
	token = next_token(0);
	pthread_mutex_unlock(&srv.lock);
	put32(buf, SOCK_MAGIC_DATA);
	put32(buf + 4, token);
	set_nodelay(fd);
	v[0] = token;
	if (msg_send(fd, ST_READY, SM_UDP_SOURCE, size, v) || !got_go(fd))
		goto out;
	while (!count || sent < count) {
		put64(buf + 8, sent);
		if (send(ufd, buf, dlen, MSG_NOSIGNAL) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS || errno == EAGAIN) {
				sched_yield();
				continue;
			}
			break;		/* ECONNREFUSED: the client's port is gone */
		}
		sent++;
		if (!(sent % 16) && client_stopped(fd))
			break;
	}
	v[0] = sent;
	v[1] = sent * size;
	if (!msg_send(fd, ST_DONE, SM_UDP_SOURCE, size, v))
		linger_close(fd);
out:
	free(buf);
	close(ufd);
}

static void srv_ctl(int fd)
{
	uint64_t v[4];
	struct cpu_snap s;
	struct smsg m;

	set_nodelay(fd);
	if (msg_send(fd, ST_READY, SM_CTL, 0, NULL))
		return;
	while (msg_recv(fd, &m) == 1 && m.type == ST_STATS_REQ) {
		cpu_snap(&s);
		v[0] = (uint64_t)(s.wall * 1e9);
		v[1] = (uint64_t)(s.proc * 1e9);
		v[2] = s.busy;
		v[3] = s.total;
		if (msg_send(fd, ST_STATS, SM_CTL, 0, v))
			return;
	}
}

/* Is this HELLO one we serve? */
static bool hello_ok(const struct smsg *m)
{
	if (m->type != ST_HELLO)
		return false;
	switch (m->mode) {
	case SM_ECHO:
	case SM_UDP_SINK:
		return m->size >= 1 && m->size <= SOCK_MAX_MSG;
	case SM_UDP_SOURCE:
		return m->size >= 1 && m->size <= SOCK_MAX_MSG && m->v[1] >= 1 &&
		       m->v[1] <= 65535;
	case SM_SINK:
	case SM_SOURCE:
		return m->size >= 1 && m->size <= SOCK_TCP_MAX_MSG;
	case SM_CTL:
		return true;
	default:
		return false;
	}
}

static void *tcp_session(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1;
	struct smsg m;

	set_timeout(fd, SOCK_HELLO_TIMEOUT);
	if (msg_recv(fd, &m) == 1 && hello_ok(&m)) {
		/* no timeouts from here: a control connection idles during a run */
		set_timeout(fd, 0);
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		switch (m.mode) {
		case SM_ECHO:
			srv_echo(fd, m.size);
			break;
		case SM_SINK:
			srv_sink(fd, m.size);
			break;
		case SM_SOURCE:
			srv_source(fd, m.size, m.v[0]);
			break;
		case SM_UDP_SINK:
			srv_udp_sink(fd, m.size);
			break;
		case SM_UDP_SOURCE:
			srv_udp_source(fd, m.size, m.v[0], m.v[1]);
			break;
		case SM_CTL:
			srv_ctl(fd);
			break;
		}
	}
	close(fd);
	pthread_mutex_lock(&srv.lock);
	srv.sessions--;
	pthread_mutex_unlock(&srv.lock);
	return NULL;
}

static int spawn(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t tid;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&tid, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return err;
}

static void *tcp_accept_thread(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept4(srv.tcp_fd, NULL, NULL, SOCK_CLOEXEC);
		bool full;

		if (fd < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(100000);	/* EMFILE, ENOMEM: try again later */
			continue;
		}
		pthread_mutex_lock(&srv.lock);
		full = srv.sessions >= SOCK_SESSIONS;
		if (!full)
			srv.sessions++;
		pthread_mutex_unlock(&srv.lock);
		if (full) {
			close(fd);
			continue;
		}
		if (spawn(tcp_session, (void *)(intptr_t)fd)) {
			close(fd);
			pthread_mutex_lock(&srv.lock);
			srv.sessions--;
			pthread_mutex_unlock(&srv.lock);
		}
	}
	return NULL;
}

/* A socket of @type bound to @addr:@port; -1 with errno. */
static int bind_one(const char *addr, uint16_t port, int type)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
		.ai_family = AF_UNSPEC,
		.ai_socktype = type,
	};
	struct addrinfo *res = NULL;
	char ps[8], host[INET6_ADDRSTRLEN + 20];
	size_t n = strlen(addr);
	int fd, one = 1, zero = 0, err;

	/* "[addr]" as parse_addr takes it */
	if (n >= 2 && n < sizeof(host) && addr[0] == '[' && addr[n - 1] == ']') {
		memcpy(host, addr + 1, n - 2);
		host[n - 2] = '\0';
		addr = host;
	}
	snprintf(ps, sizeof(ps), "%u", port);
	err = getaddrinfo(addr, ps, &hints, &res);
	if (err) {
		errno = err == EAI_SYSTEM ? errno : EINVAL;
		return -1;
	}
	fd = socket(res->ai_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (res->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, res->ai_addr, res->ai_addrlen) ||
	    (type == SOCK_STREAM && listen(fd, 64))) {
		err = errno;
		close(fd);
		errno = err;
		fd = -1;
	}
out:
	freeaddrinfo(res);
	return fd;
}

/* Both sockets on @addr; with @fallback, 0.0.0.0 when IPv6 is not there. */
static int bind_both(const char *addr, uint16_t port, bool fallback)
{
	srv.tcp_fd = bind_one(addr, port, SOCK_STREAM);
	if (srv.tcp_fd < 0 && fallback &&
	    (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL || errno == EINVAL))
		return bind_both("0.0.0.0", port, false);
	if (srv.tcp_fd < 0)
		return -1;
	srv.udp_fd = bind_one(addr, port, SOCK_DGRAM);
	if (srv.udp_fd < 0) {
		int err = errno;

		close(srv.tcp_fd);
		srv.tcp_fd = -1;
		errno = err;
		return -1;
	}
	return 0;
}

int sock_server_start(const char *bind_addr, uint16_t port)
{
	sigset_t all, old;
	int err;

	if (srv.tcp_fd >= 0)
		return 0;		/* started already */
	if (bind_both(bind_addr ? bind_addr : "::", port, !bind_addr)) {
		warnx_("sockets baseline not available on port %u: %s%s", port, strerror(errno),
		       errno == EADDRINUSE ? " (TCP or UDP port in use)" : "");
		return 1;
	}
	set_rcvbuf(srv.udp_fd);

	/* the threads (and theirs) take no signal: serve's main loop gets them */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = spawn(udp_thread, NULL);
	if (!err)
		err = spawn(tcp_accept_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		/* a started UDP thread goes on answering pings: harmless */
		warnx_("sockets baseline not available on port %u: cannot start a thread: %s",
		       port, strerror(err));
		close(srv.tcp_fd);
		return 1;
	}
	return 0;
}

/* ===================================================================== */
/* Client                                                                 */
/* ===================================================================== */

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
		if (write_all(fd, buf, o->size)) {
			r = -1;
			break;
		}
		r = read_all(fd, buf, o->size);
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
