// SPDX-License-Identifier: GPL-2.0
/*
 * evil_server - a misbehaving rdmaxfer server, written against plain
 * librdmacm/libibverbs (not the rdmaxfer module), for evil_peer.sh: what a
 * client of ours meets from a hostile or broken server.  (evil_peer is the
 * same for the client's side.)
 *
 *   evil_server ADDR norecv MS
 *
 * Listens on ADDR, a port of its own choosing (printed as "listening
 * PORT"), for one connection, and answers an rdmaxfer hello with a valid
 * one that grants the client 32 credits, but posts no receive buffer, and
 * asks in its reply for infinite RNR retries (7; Soft-RoCE's client kept
 * its own 6 in session 20).  The client's first SEND is answered with RNR
 * NAKs, its send queue stops, and its RNR retries take up to 6 times the
 * 655 ms RNR timer of our QP.  Prints "established", then waits for the
 * client to disconnect: its keepalive must drop the connection within MS
 * ms (its peer_timeout_ms).  Prints "disconnected after N ms".
 *
 * Exit: 0 the client disconnected within MS ms, 1 it did not (or later),
 * 2 the test could not get that far (usage, setup, no connection).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "evil_wire.h"

/* what this server announces in its hello */
#define NRECV			32
#define CTRL_SIZE		4096
#define SEG_SIZE		2097152
#define MAX_MSG			8388608

#define ACCEPT_TIMEOUT_MS	30000

enum { EXIT_DISCONNECTED = 0, EXIT_NOT_DISCONNECTED = 1, EXIT_SETUP = 2 };

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The next CM event within @ms, acked; NULL on timeout or error.  The
 * event's id and private data are copied to @id, @hello (up to
 * RX_HELLO_LEN bytes, *@hlen set) before the ack.
 */
static int next_event(struct rdma_event_channel *ch, int ms, struct rdma_cm_id **id,
		      uint8_t *hello, size_t *hlen)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type, n;

	n = poll(&pfd, 1, ms);
	if (n <= 0)
		return -1;
	if (rdma_get_cm_event(ch, &ev))
		return -1;
	type = ev->event;
	if (id)
		*id = ev->id;
	if (hello && hlen) {
		size_t len = ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;

		*hlen = len < RX_HELLO_LEN ? len : RX_HELLO_LEN;
		if (*hlen)
			memcpy(hello, ev->param.conn.private_data, *hlen);
	}
	rdma_ack_cm_event(ev);
	return type;
}

/* PD, CQ and an RC QP on @id, no receive buffer posted. */
static int make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, NRECV + 8, NULL, NULL, 0) : NULL;
	if (!cq) {
		fprintf(stderr, "evil_server: PD/CQ: %s\n", strerror(errno));
		return -1;
	}
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &qa)) {
		fprintf(stderr, "evil_server: rdma_create_qp: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Mode norecv: see the top of the file. */
static int no_recv(const char *addr, int bound_ms)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_conn_param cp = { 0 };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id = NULL;
	struct rdma_addrinfo *ai;
	uint8_t hello[RX_HELLO_LEN], reply[RX_HELLO_LEN] = { 0 };
	size_t hlen = 0;
	int64_t t0, took;
	int type;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "evil_server: rdma_create_id: %s\n", strerror(errno));
		return EXIT_SETUP;
	}
	if (rdma_getaddrinfo(addr, "0", &hints, &ai)) {
		fprintf(stderr, "evil_server: rdma_getaddrinfo %s failed\n", addr);
		return EXIT_SETUP;
	}
	if (rdma_bind_addr(lid, ai->ai_src_addr) || rdma_listen(lid, 1)) {
		fprintf(stderr, "evil_server: bind/listen: %s\n", strerror(errno));
		return EXIT_SETUP;
	}
	rdma_freeaddrinfo(ai);
	printf("listening %u\n", ntohs(rdma_get_src_port(lid)));

	type = next_event(ch, ACCEPT_TIMEOUT_MS, &id, hello, &hlen);
	if (type != RDMA_CM_EVENT_CONNECT_REQUEST || hlen < RX_HELLO_LEN ||
	    get32(hello) != RX_MAGIC) {
		fprintf(stderr, "evil_server: no rdmaxfer connect request (event %d)\n", type);
		return EXIT_SETUP;
	}
	if (make_qp(id))
		return EXIT_SETUP;
	put32(reply + 0, RX_MAGIC);
	put16(reply + 4, RX_VERSION);
	put16(reply + 6, NRECV);	/* credits for buffers never posted */
	put32(reply + 8, CTRL_SIZE);
	put32(reply + 12, SEG_SIZE);
	put32(reply + 16, MAX_MSG);
	cp.private_data = reply;
	cp.private_data_len = sizeof(reply);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;		/* asked of the client's QP: for ever */
	if (rdma_accept(id, &cp)) {
		fprintf(stderr, "evil_server: rdma_accept: %s\n", strerror(errno));
		return EXIT_SETUP;
	}
	type = next_event(ch, ACCEPT_TIMEOUT_MS, NULL, NULL, NULL);
	if (type != RDMA_CM_EVENT_ESTABLISHED) {
		fprintf(stderr, "evil_server: not established (event %d)\n", type);
		return EXIT_SETUP;
	}
	printf("established\n");
	fflush(stdout);
	t0 = now_ms();
	do {
		int left = (int)(t0 + bound_ms + 30000 - now_ms());

		type = next_event(ch, left > 0 ? left : 0, NULL, NULL, NULL);
	} while (type >= 0 && type != RDMA_CM_EVENT_DISCONNECTED);
	took = now_ms() - t0;
	if (type != RDMA_CM_EVENT_DISCONNECTED) {
		printf("still connected after %" PRId64 " ms (bound %d ms)\n", took, bound_ms);
		return EXIT_NOT_DISCONNECTED;
	}
	printf("disconnected after %" PRId64 " ms (bound %d ms)\n", took, bound_ms);
	return took <= bound_ms ? EXIT_DISCONNECTED : EXIT_NOT_DISCONNECTED;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 || strcmp(argv[2], "norecv") || atoi(argv[3]) <= 0) {
		fprintf(stderr, "usage: evil_server ADDR norecv MS\n");
		return EXIT_SETUP;
	}
	return no_recv(argv[1], atoi(argv[3]));
}
