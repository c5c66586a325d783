// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer sockets baseline - the wire format (big-endian integers, the
 * 48-byte control message) and the I/O helpers its server and client
 * share: whole reads and writes, control messages, socket options, the
 * largest message a transport takes, the data pattern.
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

/* --- wire format ------------------------------------------------------ */

void put32(unsigned char *p, uint32_t x)
{
	p[0] = x >> 24;
	p[1] = x >> 16;
	p[2] = x >> 8;
	p[3] = x;
}

uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void put64(unsigned char *p, uint64_t x)
{
	put32(p, x >> 32);
	put32(p + 4, (uint32_t)x);
}

uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* --- I/O helpers ------------------------------------------------------ */

/* Send all @len bytes: 0, or -1 with errno. */
int send_all(int fd, const void *buf, size_t len)
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
int recv_all(int fd, void *buf, size_t len)
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
int send_msg_bytes(int fd, const unsigned char *pat, uint64_t len)
{
	while (len) {
		size_t n = len < SOCK_CHUNK ? (size_t)len : SOCK_CHUNK;

		if (send_all(fd, pat, n))
			return -1;
		len -= n;
	}
	return 0;
}

int msg_send(int fd, uint16_t type, uint32_t mode, uint32_t size, const uint64_t *v)
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
	return send_all(fd, b, sizeof(b));
}

/* A control message: 1, 0 at EOF, -1 with errno (EPROTO: not our protocol). */
int msg_recv(int fd, struct smsg *m)
{
	unsigned char b[SOCK_MSG_LEN];
	int i, r = recv_all(fd, b, sizeof(b));

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

void set_timeout(int fd, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* UDP: SOCK_UDP_RCVBUF, beyond net.core.rmem_max when we may (root). */
void set_rcvbuf(int fd)
{
	int v = SOCK_UDP_RCVBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

uint32_t dgram_len(uint64_t size)
{
	return size < SOCK_DGRAM_HDR ? SOCK_DGRAM_HDR : (uint32_t)size;
}

uint64_t sock_max_msg(enum bench_transport t, bool ping)
{
	if (t == BT_RDMA)
		return 0;
	return t == BT_UDP || ping ? SOCK_MAX_MSG : SOCK_TCP_MAX_MSG;
}

void *make_pattern(size_t len)
{
	unsigned char *p = malloc(len);
	size_t i;

	if (p)
		for (i = 0; i < len; i++)
			p[i] = (unsigned char)(i * 7 + 1);
	return p;
}
