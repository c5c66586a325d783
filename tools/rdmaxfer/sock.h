/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer sockets baseline - what its server (sock_server.c) and client
 * (measure_sock.c) share: the protocol's constants and control message
 * (described at the top of measure_sock.c), and the wire and I/O helpers
 * of sock_wire.c.
 */
#ifndef RDMAXFER_SOCK_H
#define RDMAXFER_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* sock_wire.c */
void put32(unsigned char *p, uint32_t x);
uint32_t get32(const unsigned char *p);
void put64(unsigned char *p, uint64_t x);
uint64_t get64(const unsigned char *p);
int send_all(int fd, const void *buf, size_t len);
int recv_all(int fd, void *buf, size_t len);
int send_msg_bytes(int fd, const unsigned char *pat, uint64_t len);
int msg_send(int fd, uint16_t type, uint32_t mode, uint32_t size, const uint64_t *v);
int msg_recv(int fd, struct smsg *m);
void set_timeout(int fd, int secs);
void set_nodelay(int fd);
void set_rcvbuf(int fd);
uint32_t dgram_len(uint64_t size);
uint64_t sock_max_msg(enum bench_transport t, bool ping);
void *make_pattern(size_t len);

#endif /* RDMAXFER_SOCK_H */
