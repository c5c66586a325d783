// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer sockets baseline - the server that `serve` starts next to its
 * RDMA listener (sock_server_start()): a TCP listener and a UDP socket on
 * port sock_port() of serve's RDMA port (measure.h: 1000 above it, never
 * the same number, which on iWARP is a TCP port the RDMA listener holds),
 * served by detached threads that block every signal (so SIGINT and
 * SIGTERM still reach serve's main loop), never print and touch nothing of
 * serve's.  One thread per TCP connection (at most SOCK_SESSIONS), one for
 * the UDP socket.  Whatever a client sends wrong ends only its own
 * session.  The protocol is described at the top of measure_sock.c.
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

static void srv_echo(int fd, uint32_t size)
{
	void *buf = malloc(size);

	set_nodelay(fd);
	if (!buf || msg_send(fd, ST_READY, SM_ECHO, size, NULL))
		goto out;
	while (recv_all(fd, buf, size) == 1 && !send_all(fd, buf, size))
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
