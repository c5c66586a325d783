// SPDX-License-Identifier: GPL-2.0
/*
 * pingpong - a ping-pong over RDMA SEND/RECV or over UDP, written against
 * plain librdmacm and libibverbs (it does not use rdmaxfer), for the course's
 * exercise 3 (Documentation/labs/3-latency.md) and its failure predictions
 * (Documentation/labs/6-failures.md).
 *
 *   pingpong server [-p PORT] [--udp] [--busy] [--rnr-retry N] [--no-recv] [--munmap]
 *   pingpong client ADDR [-p PORT] [--udp] [--busy] [-n COUNT] [-s SIZE]
 *                   [--rnr-retry N] [--bad-rkey|--bad-lkey|--past-end|--no-poll] [--write-check]
 *
 * The RDMA version is the smallest complete verbs program: rdma_cm sets up
 * one RC queue pair per side (rdma_create_ep), each side registers a message
 * buffer, and the server also registers a "window" the client may RDMA WRITE
 * into, whose address and rkey it sends first.  Every receive is posted
 * before the SEND it is for can arrive, so no SEND meets an empty receive
 * queue (which is what the --no-recv server provokes: RNR).  A round trip is
 * client SEND -> server receive completion -> server SEND -> client receive
 * completion; the client prints its distribution and the CPU time it spent
 * per round trip, waiting for each completion either asleep on the CQ's
 * completion channel (the default) or spinning on ibv_poll_cq() (--busy).
 * A zero-length SEND (or an empty datagram) tells the server the run is over.
 *
 * Failures on demand (each prints the completion status the program got):
 *   --bad-rkey (client)   one RDMA WRITE with a wrong rkey, then one SEND
 *   --bad-lkey (client)   one SEND whose buffer has a wrong lkey, then one SEND
 *   --past-end (client)   one RDMA WRITE of 8 bytes that starts 4 bytes before
 *                         the end of the server's window, then one SEND
 *   --no-poll (client)    signaled WRITEs posted without ever polling the CQ,
 *                         until a post is refused (at most 1,000); then what
 *                         the CQ holds and the asynchronous events
 *   --no-recv (server)    never posts a receive: the client's SEND meets RNR
 *                         and is retried as often as the server's
 *                         --rnr-retry says (0-6; 7, the default, is for ever)
 *   --munmap (server)     unmaps the registered window (and maps fresh memory
 *                         at its address) before the client writes into it;
 *                         with --write-check the client WRITEs first and the
 *                         server reports what its memory holds
 *
 * --write-check and the failures print each work request as it is posted:
 * the course's exercise C on a real one.
 *
 * Exit: 0 done, 1 an operation failed (a completion with an error status, a
 * lost datagram), 2 usage or setup.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "labs.h"

#define MAX_SIZE	(1u << 20)
#define WIN_SIZE	4096u
#define PATTERN		"written by the pingpong client with RDMA WRITE"

/* What the server sends first: where the client may WRITE (big-endian). */
struct hello {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static struct {
	int server, udp, busy, no_recv, do_munmap, bad_rkey, bad_lkey, past_end, no_poll;
	int write_check, rnr_retry;
	const char *addr, *port;
	unsigned long count;
	uint32_t size;
} opt = { .port = "18800", .count = 1000, .size = 64, .rnr_retry = 7 };

static void usage(void)
{
	fprintf(stderr,
		"usage: pingpong server [-p PORT] [--udp] [--busy] [--rnr-retry N] [--no-recv] [--munmap]\n"
		"       pingpong client ADDR [-p PORT] [--udp] [--busy] [-n COUNT] [-s SIZE]\n"
		"                       [--rnr-retry N] [--bad-rkey|--bad-lkey|--past-end|--no-poll] [--write-check]\n");
	exit(2);
}

static const char *status_str(enum ibv_wc_status st)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "status %d (%s)", st, ibv_wc_status_str(st));
	return buf;
}

/*
 * report - the client's summary of opt.count round trips that began when
 * this process had used cpu0 and the machine sys0 of CPU: the distribution
 * and CPU (print_latency()), then the steps of a round trip (print_steps()).
 */
static void report(const char *transport, const char *mode, uint64_t *rtt, uint64_t cpu0,
		   uint64_t sys0, const char *what_a, uint64_t *a, const char *what_b, uint64_t *b)
{
	uint64_t cpu = cpu_ns() - cpu0, sys = system_busy_ns() - sys0;
	char what[96];

	snprintf(what, sizeof(what), "%s %u B, %s", transport, opt.size, mode);
	print_latency(what, rtt, opt.count, cpu, sys);
	print_steps(what_a, a, what_b, b, rtt, opt.count);
}

/* --------------------------------------------------------------- RDMA */

struct ep {
	struct rdma_cm_id *id;
	struct ibv_mr *msg_mr, *win_mr;
	char *msg, *win;
};

/* The server's rdma_cm events (the client going away), once it accepted. */
static struct rdma_event_channel *cm_ch;
static int cm_gone;	/* the client disconnected (its event is taken) */

/* peer_gone - a look at the CM events without waiting: did the client disconnect? */
static int peer_gone(void)
{
	struct pollfd p = { cm_ch ? cm_ch->fd : -1, POLLIN, 0 };
	struct rdma_cm_event *ev;
	int gone;

	if (!cm_ch || poll(&p, 1, 0) != 1 || rdma_get_cm_event(cm_ch, &ev))
		return 0;
	gone = ev->event == RDMA_CM_EVENT_DISCONNECTED;
	printf("server: rdma_cm event %s\n", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	return gone;
}

/*
 * wait_comp - the next completion of the send (or receive) CQ: spinning on
 * ibv_poll_cq() (--busy), or asleep until the CQ's completion channel says
 * one came (arm the CQ with ibv_req_notify_cq(), poll once more for one that
 * came before it was armed, sleep).  The server sleeps on its CM events too:
 * a peer that goes away leaves nothing on the CQ.  0, 1 the peer went away,
 * -1 an error.
 */
static int wait_comp(struct ep *ep, int send, struct ibv_wc *wc)
{
	struct ibv_comp_channel *ch = send ? ep->id->send_cq_channel : ep->id->recv_cq_channel;
	struct ibv_cq *cq = send ? ep->id->send_cq : ep->id->recv_cq, *ev_cq;
	struct pollfd p[2] = { { ch->fd, POLLIN, 0 }, { cm_ch ? cm_ch->fd : -1, POLLIN, 0 } };
	unsigned long spins = 0;
	void *ev_ctx;
	int n;

	/* a completion that came before the disconnect is still taken first */
	while (!(n = ibv_poll_cq(cq, 1, wc))) {
		if (cm_gone)
			return 1;
		if (opt.busy) {
			if (!(++spins & 0xffff))
				cm_gone = peer_gone();
			continue;
		}
		if (ibv_req_notify_cq(cq, 0) || (n = ibv_poll_cq(cq, 1, wc)))
			break;
		if (poll(p, 2, -1) < 0)
			return -1;
		if (p[1].revents)
			cm_gone = peer_gone();
		if (p[0].revents) {
			if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
				return -1;
			ibv_ack_cq_events(ev_cq, 1);
		}
	}
	if (n < 0) {
		fprintf(stderr, "pingpong: polling the CQ failed\n");
		return -1;
	}
	return 0;
}

/* post_send - one signaled SEND of len bytes of the message buffer (0: "bye"). */
static int post_send(struct ep *ep, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)ep->msg, len, ep->msg_mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(ep->id->qp, &wr, &bad);
}

static int post_recv(struct ep *ep)
{
	return rdma_post_recv(ep->id, NULL, ep->msg, MAX_SIZE, ep->msg_mr);
}

/* A QP with room for the one SEND and one receive each side has in flight. */
static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	};
	return a;
}

/*
 * Our connection request's (reply's) parameters.  The retry counts in it
 * are the *peer's*: ib_cm sets each side's QP to the rnr_retry (and
 * retry_cnt) the other side sent in its REQ or REP.
 */
static struct rdma_conn_param conn_param(void)
{
	struct rdma_conn_param p = {
		.responder_resources = 1, .initiator_depth = 1, .retry_count = 6,
		.rnr_retry_count = opt.rnr_retry,
	};
	return p;
}

/* Register the message buffer (and the server's window, page-aligned for munmap). */
static int ep_register(struct ep *ep)
{
	ep->msg = aligned_alloc(4096, MAX_SIZE);
	ep->win = mmap(NULL, WIN_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ep->msg || ep->win == MAP_FAILED)
		return -1;
	memset(ep->msg, 0, MAX_SIZE);
	memset(ep->win, 0, WIN_SIZE);
	ep->msg_mr = rdma_reg_msgs(ep->id, ep->msg, MAX_SIZE);
	ep->win_mr = ibv_reg_mr(ep->id->pd, ep->win, WIN_SIZE, IBV_ACCESS_LOCAL_WRITE |
				(opt.server ? IBV_ACCESS_REMOTE_WRITE : 0));
	return ep->msg_mr && ep->win_mr ? 0 : -1;
}

/* Disconnect, deregister, destroy the QP, its CQs and the id. */
static void ep_close(struct ep *ep)
{
	rdma_disconnect(ep->id);
	rdma_dereg_mr(ep->win_mr);
	rdma_dereg_mr(ep->msg_mr);
	rdma_destroy_ep(ep->id);
	free(ep->msg);
	munmap(ep->win, WIN_SIZE);
}

static struct rdma_addrinfo *resolve(const char *node, int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	int r;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	r = rdma_getaddrinfo(node, opt.port, &hints, &res);
	if (r) {
		fprintf(stderr, "pingpong: rdma_getaddrinfo(%s): %s\n", node ? node : "any",
			r == -1 ? strerror(errno) : gai_strerror(r));
		return NULL;
	}
	return res;
}

/* What the server's window holds now, after the client's WRITE (--write-check). */
static void report_window(struct ep *ep)
{
	if (!memcmp(ep->win, PATTERN, sizeof(PATTERN)))
		printf("server: the window at %p holds the client's bytes: \"%s\"\n",
		       (void *)ep->win, ep->win);
	else if (!ep->win[0])
		printf("server: the window at %p is all zeros: the client's WRITE went to the pages "
		       "registered before munmap(), which this process no longer sees\n",
		       (void *)ep->win);
}

static int rdma_server(void)
{
	struct rdma_conn_param param = conn_param();
	struct ibv_qp_init_attr attr = qp_attr();
	struct rdma_cm_id *listen_id;
	struct rdma_addrinfo *res;
	struct ep ep = { 0 };
	struct hello *h;
	unsigned long n = 0;
	struct ibv_wc wc;
	int r, rc = 1;

	res = resolve(NULL, 1);
	if (!res)
		return 2;
	if (rdma_create_ep(&listen_id, res, NULL, &attr) || rdma_listen(listen_id, 1)) {
		perror("pingpong: listen");
		return 2;
	}
	printf("server: listening on port %s (rdma_cm)\n", opt.port);
	fflush(stdout);
	if (rdma_get_request(listen_id, &ep.id) || ep_register(&ep)) {
		perror("pingpong: connection request");
		return 2;
	}
	if (!opt.no_recv && post_recv(&ep)) {
		perror("pingpong: ibv_post_recv");
		return 2;
	}
	cm_ch = rdma_create_event_channel();
	if (rdma_accept(ep.id, &param) || !cm_ch || rdma_migrate_id(ep.id, cm_ch)) {
		perror("pingpong: rdma_accept");
		return 2;
	}
	h = (struct hello *)ep.msg;
	h->addr = htobe64((uintptr_t)ep.win);
	h->rkey = htobe32(ep.win_mr->rkey);
	h->len = htobe32(WIN_SIZE);
	printf("server: connected; window %u bytes at %p, rkey 0x%x%s\n", WIN_SIZE,
	       (void *)ep.win, ep.win_mr->rkey, opt.no_recv ? "; posting no receive" : "");
	if (post_send(&ep, sizeof(*h)) || wait_comp(&ep, 1, &wc) || wc.status) {
		fprintf(stderr, "pingpong: sending the window's key failed\n");
		goto out;
	}
	if (opt.do_munmap) {
		/* the registration keeps the old pages pinned; the address gets new ones */
		munmap(ep.win, WIN_SIZE);
		if (mmap(ep.win, WIN_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
			perror("pingpong: mmap");
			goto out;
		}
		printf("server: munmap()ed the window and mapped fresh memory at %p; the MR "
		       "still pins the old pages\n", (void *)ep.win);
	}
	fflush(stdout);
	if (opt.no_recv) {
		/* nothing to receive with: wait for the client to go away */
		struct pollfd p = { cm_ch->fd, POLLIN, 0 };

		while (poll(&p, 1, -1) == 1 && !peer_gone())
			;
		rc = 0;
		goto out;
	}
	for (;;) {
		r = wait_comp(&ep, 0, &wc);
		if (r > 0)
			printf("server: the client went away without saying bye\n");
		if (r)
			goto out;
		if (wc.status) {
			printf("server: receive completed with %s: the QP is in the error state, "
			       "the connection is over\n", status_str(wc.status));
			goto out;
		}
		if (!wc.byte_len)
			break;	/* bye */
		if (post_recv(&ep) || post_send(&ep, wc.byte_len) || wait_comp(&ep, 1, &wc) ||
		    wc.status) {
			fprintf(stderr, "pingpong: echo failed\n");
			goto out;
		}
		n++;
	}
	printf("server: echoed %lu messages; the client said bye\n", n);
	report_window(&ep);
	rc = 0;
out:
	ep_close(&ep);
	rdma_destroy_ep(listen_id);
	rdma_destroy_event_channel(cm_ch);
	rdma_freeaddrinfo(res);
	return rc;
}

/* print_wr - the fields of a work request as it is posted (exercise C). */
static void print_wr(const char *who, const struct ibv_send_wr *wr)
{
	printf("%s: ibv_post_send(): opcode %d (%s), num_sge %d, sg_list[0] = { addr 0x%" PRIx64
	       ", length %u, lkey 0x%x }", who, wr->opcode,
	       wr->opcode == IBV_WR_RDMA_WRITE ? "IBV_WR_RDMA_WRITE" : "IBV_WR_SEND", wr->num_sge,
	       wr->sg_list->addr, wr->sg_list->length, wr->sg_list->lkey);
	if (wr->opcode == IBV_WR_RDMA_WRITE)
		printf(", wr.rdma = { remote_addr 0x%" PRIx64 ", rkey 0x%x }",
		       wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
	printf(", send_flags 0x%x\n", wr->send_flags);
}

/*
 * post_one - post one signaled WRITE (raddr != 0) or SEND of len bytes of
 * the client's window buffer, with the keys given, print it and wait for its
 * completion: its status, or -1 if it could not be posted.
 */
static int post_one(struct ep *ep, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)ep->win, len, lkey };
	struct ibv_send_wr wr = {
		.opcode = raddr ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { raddr, rkey },
	}, *bad;
	struct ibv_wc wc;
	int r;

	print_wr("client", &wr);
	r = ibv_post_send(ep->id->qp, &wr, &bad);
	if (r) {
		printf("client: it could not be posted: %s\n", strerror(r));
		return -1;
	}
	if (wait_comp(ep, 1, &wc))
		return -1;
	printf("client: it completed with %s\n", status_str(wc.status));
	return wc.status;
}

/*
 * --bad-rkey, --bad-lkey, --past-end: a WRITE naming a wrong remote key, a
 * SEND naming a wrong local key (another key byte of the same MR index), or
 * a WRITE with the right key that runs 4 bytes past the end of the window
 * (into the same page, which the registration pinned whole); then a SEND
 * behind it, which shows the state the QP was left in.
 */
static int bad_key(struct ep *ep, uint64_t raddr, uint32_t len, uint32_t rkey)
{
	uint32_t lkey = ep->win_mr->lkey;

	if (opt.bad_rkey) {
		printf("client: an RDMA WRITE with rkey 0x%x instead of 0x%x\n", rkey ^ 0xff, rkey);
		post_one(ep, 8, lkey, raddr, rkey ^ 0xff);
	} else if (opt.past_end) {
		printf("client: an RDMA WRITE of 8 bytes at 0x%" PRIx64 ", 4 bytes before the end "
		       "of the %u-byte window\n", raddr + len - 4, len);
		post_one(ep, 8, lkey, raddr + len - 4, rkey);
	} else {
		printf("client: a SEND with lkey 0x%x instead of 0x%x\n", lkey ^ 0xff, lkey);
		post_one(ep, 8, lkey ^ 0xff, 0, 0);
	}
	printf("client: one more SEND, with good keys\n");
	post_one(ep, 8, lkey, 0, 0);
	return 1;
}

/*
 * --no-poll: the course's failure 5.  Post signaled 8-byte WRITEs and never
 * poll: how many does the device take, what does the CQ keep, and what does
 * it say asynchronously?  Always 1 (the connection is not usable after it).
 */
static int no_poll(struct ep *ep, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)ep->win, 8, ep->win_mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { raddr, rkey },
	}, *bad;
	struct ibv_context *ctx = ep->id->verbs;
	struct ibv_qp_init_attr init;
	struct ibv_async_event ev;
	struct ibv_qp_attr qa;
	int i, n, r = 0, got = 0, errs = 0;
	struct ibv_wc wc[16];

	if (!ibv_query_qp(ep->id->qp, &qa, IBV_QP_CAP, &init))
		printf("client: send queue of %u WRs, send CQ of %d entries\n", qa.cap.max_send_wr,
		       ep->id->send_cq->cqe);
	for (i = 0; i < 1000 && !(r = ibv_post_send(ep->id->qp, &wr, &bad)); i++)
		;
	printf("client: posted %d signaled WRITEs without polling; %s\n", i,
	       r ? "the next one was refused: " : "none was refused");
	if (r)
		printf("client:   %s\n", strerror(r));
	usleep(500000);		/* let the device finish what it took */
	while ((n = ibv_poll_cq(ep->id->send_cq, 16, wc)) > 0)
		for (got += n; n > 0; n--)
			errs += wc[n - 1].status != IBV_WC_SUCCESS;
	printf("client: then the CQ held %d completions, %d of them errors\n", got, errs);
	/* the events, counted by type (consecutive ones of a type as one line) */
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	for (n = 0, r = -1; !ibv_get_async_event(ctx, &ev); ibv_ack_async_event(&ev)) {
		if ((int)ev.event_type != r && n)
			printf("client: asynchronous event %s, %d times\n",
			       ibv_event_type_str((enum ibv_event_type)r), n);
		n = (int)ev.event_type == r ? n + 1 : 1;
		r = ev.event_type;
	}
	if (n)
		printf("client: asynchronous event %s, %d times\n",
		       ibv_event_type_str((enum ibv_event_type)r), n);
	return 1;
}

static int rdma_client(void)
{
	struct ibv_qp_init_attr attr = qp_attr();
	struct rdma_conn_param param = conn_param();
	struct rdma_addrinfo *res;
	struct ep ep = { 0 };
	uint64_t *rtt = calloc(3 * opt.count, sizeof(*rtt)), *posted, *sent, raddr, t, cpu, sys;
	unsigned long i;
	struct ibv_wc wc;
	uint32_t rkey;
	int rc = 1;

	res = resolve(opt.addr, 0);
	if (!res || !rtt)
		return 2;
	posted = rtt + opt.count;	/* when ibv_post_send() returned */
	sent = posted + opt.count;	/* when the SEND's completion came */
	if (rdma_create_ep(&ep.id, res, NULL, &attr) || ep_register(&ep) || post_recv(&ep)) {
		perror("pingpong: setting up");
		return 2;
	}
	if (rdma_connect(ep.id, &param)) {
		perror("pingpong: rdma_connect");
		return 2;
	}
	if (wait_comp(&ep, 0, &wc) || wc.status) {
		fprintf(stderr, "pingpong: no window key from the server\n");
		goto out;
	}
	raddr = be64toh(((struct hello *)ep.msg)->addr);
	rkey = be32toh(((struct hello *)ep.msg)->rkey);
	printf("client: connected; the server's window is at 0x%" PRIx64 ", rkey 0x%x\n",
	       raddr, rkey);
	if (opt.no_poll) {
		rc = no_poll(&ep, raddr, rkey);
		goto out;
	}
	if (opt.bad_rkey || opt.bad_lkey || opt.past_end) {
		rc = bad_key(&ep, raddr, be32toh(((struct hello *)ep.msg)->len), rkey);
		goto out;
	}
	if (opt.write_check) {
		memcpy(ep.win, PATTERN, sizeof(PATTERN));
		printf("client: an RDMA WRITE of the %zu bytes \"%s\" into the server's window\n",
		       sizeof(PATTERN), PATTERN);
		if (post_one(&ep, sizeof(PATTERN), ep.win_mr->lkey, raddr, rkey))
			goto out;
	}
	fflush(stdout);
	memset(ep.msg, 'p', opt.size);
	cpu = cpu_ns();
	sys = system_busy_ns();
	for (i = 0; i < opt.count; i++) {
		t = now_ns();
		if (post_recv(&ep) || post_send(&ep, opt.size))
			goto out;
		posted[i] = now_ns() - t;
		if (wait_comp(&ep, 1, &wc) || wc.status) {
			printf("client: SEND %lu completed with %s\n", i, status_str(wc.status));
			goto out;
		}
		sent[i] = now_ns() - t;
		if (wait_comp(&ep, 0, &wc) || wc.status) {
			printf("client: receive %lu completed with %s\n", i, status_str(wc.status));
			goto out;
		}
		rtt[i] = now_ns() - t;
	}
	report("rdma send/recv", opt.busy ? "busy polling" : "blocking (completion channel)",
	       rtt, cpu, sys, "ibv_post_recv + ibv_post_send returned", posted,
	       "the SEND's completion", sent);
	if (post_send(&ep, 0) || wait_comp(&ep, 1, &wc) || wc.status)
		goto out;
	rc = 0;
out:
	ep_close(&ep);
	rdma_freeaddrinfo(res);
	free(rtt);
	return rc;
}

/* ---------------------------------------------------------------- UDP */

/* One datagram into buf; --busy spins on a non-blocking recv(). */
static ssize_t udp_recv(int fd, void *buf, struct sockaddr_storage *from, socklen_t *flen)
{
	ssize_t n;

	do {
		*flen = sizeof(*from);
		n = recvfrom(fd, buf, MAX_SIZE, opt.busy ? MSG_DONTWAIT : 0,
			     (struct sockaddr *)from, flen);
	} while (n < 0 && opt.busy && errno == EAGAIN);
	return n;
}

static int udp_server(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(atoi(opt.port)) };
	struct sockaddr_storage from;
	char *buf = malloc(MAX_SIZE);
	unsigned long n = 0;
	socklen_t flen;
	int fd, off = 0;
	ssize_t len;

	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (!buf || fd < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("pingpong: udp socket");
		return 2;
	}
	printf("server: listening on port %s (udp)\n", opt.port);
	fflush(stdout);
	while ((len = udp_recv(fd, buf, &from, &flen)) > 0) {
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&from, flen) != len)
			break;
		n++;
	}
	printf("server: echoed %lu datagrams%s\n", n, len ? ", then failed" : "; the client said bye");
	close(fd);
	free(buf);
	return len ? 1 : 0;
}

static int udp_client(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
	uint64_t *rtt = calloc(2 * opt.count, sizeof(*rtt)), *sent, t, cpu, sys;
	struct timeval tmo = { .tv_sec = 5 };
	struct sockaddr_storage from;
	char *buf = malloc(MAX_SIZE);
	unsigned long i;
	socklen_t flen;
	ssize_t n;
	int fd, r;

	r = getaddrinfo(opt.addr, opt.port, &hints, &res);
	if (r || !rtt || !buf) {
		fprintf(stderr, "pingpong: %s: %s\n", opt.addr, r ? gai_strerror(r) : "no memory");
		return 2;
	}
	sent = rtt + opt.count;	/* when send() returned */
	fd = socket(res->ai_family, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo))) {
		perror("pingpong: udp socket");
		return 2;
	}
	memset(buf, 'p', opt.size);
	cpu = cpu_ns();
	sys = system_busy_ns();
	for (i = 0; i < opt.count; i++) {
		t = now_ns();
		n = send(fd, buf, opt.size, 0);
		sent[i] = now_ns() - t;
		if (n != (ssize_t)opt.size || udp_recv(fd, buf, &from, &flen) != (ssize_t)opt.size) {
			fprintf(stderr, "pingpong: datagram %lu: %s\n", i,
				errno == EAGAIN ? "no answer in 5 s (lost)" : strerror(errno));
			return 1;
		}
		rtt[i] = now_ns() - t;
	}
	report("udp", opt.busy ? "busy polling" : "blocking", rtt, cpu, sys, "send() returned",
	       sent, NULL, NULL);
	send(fd, buf, 0, 0);	/* bye */
	close(fd);
	freeaddrinfo(res);
	free(rtt);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "port", 1, NULL, 'p' }, { "count", 1, NULL, 'n' }, { "size", 1, NULL, 's' },
		{ "udp", 0, &opt.udp, 1 }, { "busy", 0, &opt.busy, 1 },
		{ "no-recv", 0, &opt.no_recv, 1 }, { "munmap", 0, &opt.do_munmap, 1 },
		{ "bad-rkey", 0, &opt.bad_rkey, 1 }, { "bad-lkey", 0, &opt.bad_lkey, 1 },
		{ "past-end", 0, &opt.past_end, 1 },
		{ "write-check", 0, &opt.write_check, 1 }, { "no-poll", 0, &opt.no_poll, 1 },
		{ "rnr-retry", 1, NULL, 'r' }, { NULL, 0, NULL, 0 }
	};
	uint64_t v;
	int c;

	if (argc < 2)
		usage();
	opt.server = !strcmp(argv[1], "server");
	if (!opt.server && strcmp(argv[1], "client"))
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "p:n:s:", lopts, NULL)) != -1) {
		switch (c) {
		case 0:
			break;
		case 'p':
			opt.port = optarg;
			break;
		case 'n':
			opt.count = strtoul(optarg, NULL, 10);
			if (!opt.count || opt.count > 10000000)
				usage();
			break;
		case 's':
			v = parse_size(optarg);
			if (!v || v > MAX_SIZE)
				usage();
			opt.size = v;
			break;
		case 'r':
			opt.rnr_retry = atoi(optarg);
			if (opt.rnr_retry < 0 || opt.rnr_retry > 7)
				usage();
			break;
		default:
			usage();
		}
	}
	if (opt.server == (optind < argc))
		usage();	/* a client names its server, a server nothing */
	if (!opt.server)
		opt.addr = argv[optind];
	if (opt.udp && (opt.no_recv || opt.do_munmap || opt.bad_rkey || opt.bad_lkey ||
			opt.past_end || opt.no_poll || opt.write_check))
		usage();
	if (opt.udp && opt.size > 65507) {
		fprintf(stderr, "pingpong: a UDP datagram carries at most 65507 bytes\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);	/* a lab program never hangs for ever */
	if (opt.udp)
		return opt.server ? udp_server() : udp_client();
	return opt.server ? rdma_server() : rdma_client();
}
