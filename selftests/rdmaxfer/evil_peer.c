// SPDX-License-Identifier: GPL-2.0
/*
 * evil_peer - a misbehaving rdmaxfer client, written against plain
 * librdmacm/libibverbs (not the rdmaxfer module), for evil_peer.sh.
 *
 *   evil_peer ADDR PORT MODE
 *
 * Connects to an rdmaxfer server with a valid hello (Documentation/
 * protocol.md), waits for the server's first control message (the ADVERT of
 * the window `rdmaxfer serve` exposes to every client), then sends ONE
 * malformed control message chosen by MODE:
 *
 *   badlen     header length one more than the payload that follows
 *   badtype    message type 99
 *   credits    a CREDIT message returning 1000 credits
 *   advert0    an ADVERT with nsegs 0
 *   advertovf  an ADVERT whose segment addr + length overflows 64 bits
 *   writedone  a WRITE_DONE naming a window the server never exposed
 *   skip       an empty SEND (a skip) to a server that posted no slots
 *   immctl     a well-formed CREDIT message sent as SEND_WITH_IMM (a user
 *              message in a control buffer)
 *   runs       a CREDIT message announcing a slot, from a peer whose hello
 *              (this one's) did not say it speaks slots
 *   want       a WANT message (a sender stuck for credits), from such a peer
 *   probe      a well-formed PROBE message (where its probe bytes are), from
 *              a peer whose hello did not offer the READ probe
 *
 * and waits up to 5 s for the server to disconnect.  Mode `valid` sends a
 * well-formed empty CREDIT message instead: the control case, which must
 * NOT be disconnected.
 *
 * Exit: 0 the server disconnected, 1 it did not, 2 the test could not get as
 * far as sending the message (usage, setup, connect or no ADVERT).
 *
 * Two modes look at what a server gives away instead:
 *
 *   advaddr            checks the ADVERT's segment addresses: each must be
 *                      the segment's offset in the window plus the in-page
 *                      offset of the window's first byte (< 4096), so that
 *                      no kernel virtual, physical or DMA address reaches
 *                      the wire; then READs 8 bytes at the start of every
 *                      segment with them (they must work).
 *                      Exit 0 all good, 1 an address gives something away
 *                      or a READ failed, 2 setup.
 *   crossread PORT2    connects twice, to PORT and to PORT2 (another
 *                      server, i.e. another file), and READs the first
 *                      window through the second connection's QP with the
 *                      first window's rkey and address: an rkey must be
 *                      good on its own connection only.  The same READ on
 *                      the first connection (the control) must work, and
 *                      the server must then drop the second connection.
 *                      Exit 0 refused and dropped, 1 the READ went through
 *                      or the connection stayed, 2 setup (or the control
 *                      READ failed).
 *   keysweep           a revoked window's rkey with each of its 256 key
 *                      bytes, and READ/WRITE past the end of a window with
 *                      its valid rkey, each on a fresh connection: all must
 *                      fail, the server's memory must stay as a connection
 *                      kept open all along wrote it, and that connection
 *                      must still work.  Exit 0 all refused, 1 one went
 *                      through (or the memory changed), 2 setup.
 *   advflood           advertises 1,100 valid one-segment windows, with
 *                      distinct ids, as fast as its credits allow (the
 *                      server returns them as it reaps the events): a peer
 *                      may expose at most 1,024 windows to one connection,
 *                      so the server must drop it at the 1,025th and not
 *                      before.  Exit 0 so, 1 not dropped (or dropped too
 *                      early), 2 setup.
 *   advsegs            the same with windows of as many segments as an
 *                      ADVERT holds (254): the peer's windows on one
 *                      connection may have 4,096 segments together (all
 *                      one file may register), so the server must drop it
 *                      at the 17th window and not before.
 *   oldwins            a hello without features, as a peer before
 *                      RDMAXFER_HELLO_WINS sent: asks serve for 300
 *                      windows (WINS_REQ); serve's EXPOSEs must stop at
 *                      256 (ENOSPC, which WINS says) and the connection
 *                      stay up.  Exit 0 so, 1 not, 2 setup.
 *   mute MS            stops answering at the transport level: after the
 *                      ADVERT it moves its QP to the error state, which
 *                      drops every packet the server sends (no ACK), and
 *                      stays connected as far as rdma_cm knows.  The
 *                      server's keepalive must find out and disconnect
 *                      within MS ms (its peer_timeout_ms).  Prints the time
 *                      it took.  Exit 0 so, 1 not (or later), 2 setup.
 *   probeoffer         offers the READ probe in its hello (the 32-byte
 *                      form, bit RDMAXFER_HELLO_PROBE alone) and looks at
 *                      the server's reply: exit 0 the reply does not offer
 *                      it, 1 it does, 2 setup.  With EVIL_DEPTHS setting a
 *                      depth to 0 (no READs one way) it must not.
 *   norecv MS          (IB, RoCE) grants the server its credits in the hello
 *                      but posts no receive buffer, and asks for 6 retries
 *                      (so the server's QP gives up on an unanswered
 *                      packet) and 7 RNR retries: the server's first SEND
 *                      is answered with RNR NAKs, which its QP retries as
 *                      often as it was set to at the RNR timer our QP
 *                      chose (Soft-RoCE: 6 times 655 ms), its send queue
 *                      stopped and its keepalive probe behind that SEND.
 *                      The server must drop it within MS ms (its
 *                      peer_timeout_ms).  Exit 0 so, 1 not, 2 setup.
 *   silent MS          (iWARP) connects and never sends its first message
 *                      (protocol.md, "The first message on iWARP"): the
 *                      server must send nothing to it and drop it within
 *                      MS ms.  Exit 0 so, 1 it sent something or did not
 *                      drop it, 2 setup.
 *   mutewin SECS       advertises one window of its own (id 1, 4 KiB, READ),
 *                      then goes mute as above and prints "mute": the
 *                      server's READs from that window are never answered,
 *                      and whatever it posts after them waits.  Stays
 *                      until SECS have passed, SIGUSR1 or a disconnect
 *                      (printed as "disconnected after N ms").  Exit 0, or
 *                      2 setup.
 *
 * And two that flood with what is allowed:
 *
 *   flood KIND SECS    sends valid messages of KIND as fast as the credits
 *                      the server returns allow, each returning the credits
 *                      we owe: `writedone` (WRITE_DONEs naming the server's
 *                      window, immediate = sequence number), `advrevoke`
 *                      (ADVERT of a one-segment window, then its REVOKE,
 *                      ids 1, 2, ...), `send` (DATA "flood NNNNNNNN\n").
 *                      It stops when SECS have passed, at SIGUSR1, or when
 *                      no credit came back for 1 s ("held"); after a hold
 *                      it sends nothing more and stays connected until
 *                      SECS or SIGUSR1.  Prints on stdout, once held and
 *                      at the end, "sent N held H credits C" (C: the
 *                      receive buffers the server announced).  Valid
 *                      messages must never cost the connection.  Exit 0
 *                      still connected at the end, 1 dropped, 2 setup.
 *   writeimm           an RDMA WRITE with immediate into the server's window
 *                      that takes the server's receive slot (RoCE: iWARP
 *                      has no immediate data).  Its hello speaks slots; at
 *                      SIGUSR1 (the server's user has posted one slot) it
 *                      skips the control buffers ahead of the slot (the
 *                      server's hello credits: none is used before) and
 *                      WRITEs 60000 bytes with immediate, which rdmaxfer
 *                      never sends: the server must drop the connection.
 *                      Exit 0 dropped, 1 not, 2 setup.
 * And the key handshake (protocol.md, "Authentication"), spoken here from
 * scratch (sha256.c) against a listener with the key in KEYFILE (`serve
 * --key-file KEYFILE`):
 *
 *   auth none          a hello without RDMAXFER_HELLO_AUTH: must be
 *                      rejected, reason AUTH_REQUIRED (7), before a QP.
 *   auth good KEYFILE  the whole handshake done right (the control): the
 *                      server's proof must check out, and after our proof
 *                      the server's ADVERT must come.
 *   auth badmac KEYFILE  our proof with one bit flipped: dropped, and not
 *                      one message of the server's before that.
 *   auth badmacmore KEYFILE  the same, with a DATA message and a
 *                      WRITE_DONE right behind the wrong proof: they must
 *                      not reach the listener's user either (evil_peer.sh
 *                      watches it: xfer_helper keywatch).
 *   auth replay KEYFILE  a good handshake recorded, then replayed on a new
 *                      connection: the same request (our old nonce) and
 *                      our old proof.  The server's nonce must differ and
 *                      the old proof must get us dropped, with nothing sent.
 *   auth first KEYFILE a valid CREDIT message first instead of the proof:
 *                      dropped, nothing sent.
 *   auth guess KEYFILE a good handshake learns the window's address and
 *                      rkey on one connection; a second, unauthenticated
 *                      one (no proof sent) READs with them: the READ must
 *                      fail, nothing must be sent to it, and it must be
 *                      dropped.
 *                      Each: exit 0 as said, 1 not, 2 setup.
 *   auth flood SECS    for SECS, connection requests that offer a key and
 *                      never prove one, as fast as they come up, each kept
 *                      open until the server drops it (up to 64 at a
 *                      time, the oldest closed for a new one).  Prints
 *                      "opened N refused R dropped D".  Exit 0, or 2 when
 *                      not one came up.
 *
 *   conns N SECS       opens N connections (one after the other) and never
 *                      uses them; prints "connected K refused R" and, 1 s
 *                      later, "holding K dropped D" (D: dropped by the
 *                      server since), then holds them until SECS have passed
 *                      or SIGUSR1, and prints "end kept K dropped D".
 *                      Exit 0, or 2 when not one connection came up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "evil_wire.h"
#include "sha256.h"

/* what this peer announces in its hello */
#define NRECV			32
#define CTRL_SIZE		4096
#define SEG_SIZE		2097152
#define MAX_MSG			8388608

#define STEP_TIMEOUT_MS		5000

enum { EXIT_DISCONNECTED = 0, EXIT_NOT_DISCONNECTED = 1, EXIT_SETUP = 2 };
/* the same exit codes, as advaddr and crossread mean them */
enum { EXIT_GOOD = EXIT_DISCONNECTED, EXIT_GAVE_AWAY = EXIT_NOT_DISCONNECTED };

static const char *mode;
static volatile sig_atomic_t stop_early;	/* SIGUSR1 */

/* the key handshake (mode auth): what we send and what came back */
static struct {
	bool on;			/* our hello carries RDMAXFER_HELLO_AUTH */
	bool keep_nonce;		/* replay: send the nonce of last time */
	uint8_t req[RX_AUTH_REQ_LEN];	/* our request's private data */
	uint8_t rep[RX_AUTH_REP_LEN];	/* the server's reply's */
	size_t rep_len;
	uint16_t reject;		/* a reject's reason (0: none) */
} ah;

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "evil_peer %s: ", mode ? mode : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct peer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;			/* NRECV receive buffers, a send buffer, the first message's */
	unsigned int peer_recvs;	/* the server's receive buffers: our credits */
	uint32_t peer_features;		/* its hello's features (0: the short form) */
	bool qp;
	bool connected;
};

#define SEND_BUF(pr)	((pr)->buf + (size_t)NRECV * CTRL_SIZE)
#define WR_SEND		NRECV		/* wr_id of the send; receives are 0..NRECV-1 */
#define WR_READ		(NRECV + 1)	/* wr_id of an RDMA READ */
#define WR_FIRST	(NRECV + 2)	/* wr_id of the first message on iWARP */

/* a window the server advertised */
struct rwin {
	uint32_t id;
	uint32_t access;
	uint64_t length;
	uint32_t nsegs;
	struct {
		uint64_t addr;
		uint32_t rkey;
		uint32_t length;
	} segs[RX_MAX_SEGS];
};

/*
 * Wait up to ms for the next CM event; returns its type (the event is
 * acked, *status gets its status) or -1 on timeout or error.
 */
static int next_event(struct peer *pr, int ms, int *status, uint8_t *pdata, size_t *plen)
{
	struct pollfd pfd = { .fd = pr->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int64_t end = now_ms() + ms;
	int type, n;

	for (;;) {
		int left = (int)(end - now_ms());

		if (left < 0)
			left = 0;
		n = poll(&pfd, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			msg("poll: %s", strerror(errno));
			return -1;
		}
		if (n == 0)
			return -1;
		break;
	}
	if (rdma_get_cm_event(pr->ch, &ev)) {
		msg("rdma_get_cm_event: %s", strerror(errno));
		return -1;
	}
	type = ev->event;
	if (status)
		*status = ev->status;
	if (pdata && plen) {
		size_t len = ev->param.conn.private_data_len;

		if (!ev->param.conn.private_data)
			len = 0;
		if (len > *plen)
			len = *plen;
		if (len)
			memcpy(pdata, ev->param.conn.private_data, len);
		*plen = len;
	}
	rdma_ack_cm_event(ev);
	return type;
}

/* Wait for one specific event; anything else is a failure. */
static int expect_event(struct peer *pr, enum rdma_cm_event_type want, const char *what)
{
	int status = 0;
	int type = next_event(pr, STEP_TIMEOUT_MS, &status, NULL, NULL);

	if (type == (int)want)
		return 0;
	if (type < 0)
		msg("%s: no event in %d ms", what, STEP_TIMEOUT_MS);
	else
		msg("%s: got %s (status %d)", what, rdma_event_str(type), status);
	return -1;
}

static int post_recv(struct peer *pr, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(pr->buf + (size_t)i * CTRL_SIZE),
		.length = CTRL_SIZE,
		.lkey = pr->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(pr->id->qp, &wr, &bad);
}

/*
 * Poll the CQ up to ms for the completion with wr_id want, or (want < 0)
 * for any receive; other successful completions are passed over.
 */
static int wait_wc(struct peer *pr, int want, int ms, struct ibv_wc *out)
{
	int64_t end = now_ms() + ms;
	struct ibv_wc wc;
	int n;

	while (now_ms() < end) {
		n = ibv_poll_cq(pr->cq, 1, &wc);
		if (n < 0) {
			msg("ibv_poll_cq failed");
			return -1;
		}
		if (n == 0) {
			usleep(1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			msg("completion %" PRIu64 ": %s", wc.wr_id, ibv_wc_status_str(wc.status));
			return -1;
		}
		if (want < 0 ? wc.wr_id < NRECV : wc.wr_id == (uint64_t)want) {
			*out = wc;
			return 0;
		}
	}
	msg("no completion in %d ms", ms);
	return -1;
}

/* An rdma_cm id of our own channel, with the address and route of ADDR PORT resolved. */
static int resolve(struct peer *pr, const char *addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	int ret;

	pr->ch = rdma_create_event_channel();
	if (!pr->ch) {
		msg("rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	if (rdma_create_id(pr->ch, &pr->id, NULL, RDMA_PS_TCP)) {
		msg("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	ret = rdma_getaddrinfo(addr, port, &hints, &ai);
	if (ret) {
		msg("rdma_getaddrinfo %s port %s: %s", addr, port,
		    ret == -1 ? strerror(errno) : gai_strerror(ret));
		return -1;
	}
	ret = rdma_resolve_addr(pr->id, NULL, ai->ai_dst_addr, STEP_TIMEOUT_MS);
	rdma_freeaddrinfo(ai);
	if (ret) {
		msg("rdma_resolve_addr: %s", strerror(errno));
		return -1;
	}
	if (expect_event(pr, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address"))
		return -1;
	if (rdma_resolve_route(pr->id, STEP_TIMEOUT_MS)) {
		msg("rdma_resolve_route: %s", strerror(errno));
		return -1;
	}
	return expect_event(pr, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route");
}

/* PD, CQ, an RC QP on the id, the receive buffers registered and posted. */
static int make_qp(struct peer *pr)
{
	struct ibv_qp_init_attr qa = { 0 };
	unsigned int i;

	pr->pd = ibv_alloc_pd(pr->id->verbs);
	if (!pr->pd) {
		msg("ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	pr->cq = ibv_create_cq(pr->id->verbs, NRECV + 8, NULL, NULL, 0);
	if (!pr->cq) {
		msg("ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	qa.send_cq = pr->cq;
	qa.recv_cq = pr->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(pr->id, pr->pd, &qa)) {
		msg("rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	pr->qp = true;
	pr->buf = calloc(NRECV + 2, CTRL_SIZE);
	if (!pr->buf) {
		msg("out of memory");
		return -1;
	}
	pr->mr = ibv_reg_mr(pr->pd, pr->buf, (size_t)(NRECV + 2) * CTRL_SIZE,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!pr->mr) {
		msg("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < NRECV && strcmp(mode, "norecv"); i++) {
		if (post_recv(pr, i)) {
			msg("ibv_post_recv: failed");
			return -1;
		}
	}
	return 0;
}

/*
 * On iWARP the client sends first (protocol.md, "The first message on
 * iWARP"): an empty CREDIT message, before the server sends anything.  It
 * takes one of our credits (the server announces its buffer again in a
 * later header: server_window_parse()); its completion (WR_FIRST) is
 * passed over by the pollers.
 */
/* Post one signaled SEND of @len bytes at @buf (0: no SGE); 0 or -1. */
static int post_msg(struct peer *pr, void *buf, uint32_t len, uint64_t wr_id,
		    enum ibv_wr_opcode opcode, uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = len,
		.lkey = pr->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.opcode = opcode,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = imm,
	}, *bad;

	return ibv_post_send(pr->id->qp, &wr, &bad) ? -1 : 0;
}

static int first_message(struct peer *pr)
{
	uint8_t *m = pr->buf + (size_t)NRECV * CTRL_SIZE + CTRL_SIZE;

	if (pr->id->verbs->device->transport_type != IBV_TRANSPORT_IWARP ||
	    !strcmp(mode, "silent"))
		return 0;
	memset(m, 0, RX_HDR_LEN);
	put16(m, RX_MSG_CREDIT);
	if (post_msg(pr, m, RX_HDR_LEN, WR_FIRST, IBV_WR_SEND, 0)) {
		msg("ibv_post_send (the first message): failed");
		return -1;
	}
	pr->peer_recvs--;
	return 0;
}

/* Connect with a valid rdmaxfer hello; the server's hello gives its credits. */
static int hello_connect(struct peer *pr)
{
	/* asymmetric READ depths, e.g. "1,0": a reader that answers no READs */
	const char *depths = getenv("EVIL_DEPTHS");
	struct rdma_conn_param cp = { 0 };
	uint8_t hello[RX_HELLO_EXT_LEN], reply[128];
	size_t rlen = sizeof(reply);
	int type, status = 0;

	/* a perfectly valid hello: the server has no reason to refuse us */
	put32(hello + 0, RX_MAGIC);
	put16(hello + 4, RX_VERSION);
	put16(hello + 6, NRECV);
	put32(hello + 8, CTRL_SIZE);
	put32(hello + 12, SEG_SIZE);
	put32(hello + 16, MAX_MSG);
	put32(hello + 20, 0);
	cp.private_data = hello;
	cp.private_data_len = RX_HELLO_LEN;
	if (!strcmp(mode, "probeoffer")) {
		put32(hello + 24, RX_HELLO_PROBE);
		put32(hello + 28, 0);		/* rq_entries: our credits */
		cp.private_data_len = RX_HELLO_EXT_LEN;
	}
	if (!strcmp(mode, "writeimm")) {
		put32(hello + 24, RX_HELLO_SLOTS);	/* so that the server may post slots */
		put32(hello + 28, NRECV);
		cp.private_data_len = RX_HELLO_EXT_LEN;
	}
	if (ah.on) {		/* the hello with the AUTH bit and our nonce */
		put32(hello + 24, RX_HELLO_AUTH);
		put32(hello + 28, NRECV);
		if (!ah.keep_nonce) {
			memcpy(ah.req, hello, RX_HELLO_EXT_LEN);
			for (size_t i = 0; i < RX_NONCE_LEN; i++)
				ah.req[RX_HELLO_EXT_LEN + i] = (uint8_t)random();
		}
		cp.private_data = ah.req;
		cp.private_data_len = RX_AUTH_REQ_LEN;
	}
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	if (depths && sscanf(depths, "%hhu,%hhu", &cp.initiator_depth,
			     &cp.responder_resources) != 2) {
		msg("EVIL_DEPTHS must be ORD,IRD (READs we issue, READs we answer)");
		return -1;
	}
	/* norecv: 6, as our client asks (7 made the listener strict before session 20) */
	cp.retry_count = strcmp(mode, "norecv") ? 7 : 6;
	cp.rnr_retry_count = 7;
	if (rdma_connect(pr->id, &cp)) {
		if (errno == EADDRINUSE || errno == EADDRNOTAVAIL)
			return -2;	/* iWARP: TCP holds the port (see setup()) */
		msg("rdma_connect: %s", strerror(errno));
		return -1;
	}
	type = next_event(pr, STEP_TIMEOUT_MS, &status, reply, &rlen);
	if (type == RDMA_CM_EVENT_REJECTED && rlen >= 8 && get32(reply) == RX_MAGIC) {
		ah.reject = get16(reply + 6);
		msg("rejected, reason %u", ah.reject);
		return -1;
	}
	if (type != RDMA_CM_EVENT_ESTABLISHED) {
		if (type < 0)
			msg("connecting: no event in %d ms", STEP_TIMEOUT_MS);
		else
			msg("connecting: got %s (status %d)", rdma_event_str(type), status);
		return -1;
	}
	pr->connected = true;
	if (rlen < RX_HELLO_LEN || get32(reply) != RX_MAGIC) {
		msg("the server's reply carries no rdmaxfer hello (%zu bytes)", rlen);
		return -1;
	}
	pr->peer_recvs = get16(reply + 6);
	pr->peer_features = rlen >= RX_HELLO_EXT_LEN ? get32(reply + 24) : 0;
	if (ah.on) {		/* our proof is the first message: auth_prove() */
		ah.rep_len = rlen < sizeof(ah.rep) ? rlen : sizeof(ah.rep);
		memcpy(ah.rep, reply, ah.rep_len);
		return 0;
	}
	return first_message(pr);
}

static void teardown(struct peer *pr);

/*
 * Connect pr.  On iWARP the connection's TCP socket is bound to the port
 * rdma_cm chose, which TCP may still hold (a TIME_WAIT: EADDRINUSE or
 * EADDRNOTAVAIL); a new id gets another port, as the module's CONNECT
 * does (kmod/cm.c).
 */
static int setup(struct peer *pr, const char *addr, const char *port)
{
	int tries = 0, ret;

	for (;;) {
		if (resolve(pr, addr, port) || make_qp(pr))
			return -1;
		ret = hello_connect(pr);
		if (ret != -2)
			return ret;
		teardown(pr);
		memset(pr, 0, sizeof(*pr));
		if (++tries == 4) {
			msg("rdma_connect: the port was taken %d times", tries);
			return -1;
		}
	}
}

/*
 * Wait for the server's ADVERT and return its window id (0: none came);
 * with rw, also parse the window into it.
 */
static uint32_t server_window_parse(struct peer *pr, struct rwin *rw)
{
	struct ibv_wc wc;
	const uint8_t *m, *p;
	uint32_t i, n;

	if (wait_wc(pr, -1, STEP_TIMEOUT_MS, &wc)) {
		msg("the server sent no ADVERT");
		return 0;
	}
	m = pr->buf + (size_t)wc.wr_id * CTRL_SIZE;
	if (wc.byte_len < RX_HDR_LEN + RX_ADVERT_LEN || get16(m) != RX_MSG_ADVERT) {
		msg("the server's first message is not an ADVERT (type %u, %u bytes)",
		    wc.byte_len >= 2 ? get16(m) : 0, wc.byte_len);
		return 0;
	}
	/* credits it returns: the buffer of our first message on iWARP */
	pr->peer_recvs += get16(m + 2);
	p = m + RX_HDR_LEN;
	if (rw) {
		n = get32(p + 16);
		if (!n || n > RX_MAX_SEGS ||
		    wc.byte_len < RX_HDR_LEN + RX_ADVERT_LEN + n * RX_SEG_LEN) {
			msg("ADVERT with %u segments in %u bytes", n, wc.byte_len);
			return 0;
		}
		rw->id = get32(p);
		rw->access = get32(p + 4);
		rw->length = get64(p + 8);
		rw->nsegs = n;
		for (i = 0; i < n; i++) {
			const uint8_t *sg = p + RX_ADVERT_LEN + i * RX_SEG_LEN;

			rw->segs[i].addr = get64(sg);
			rw->segs[i].rkey = get32(sg + 8);
			rw->segs[i].length = get32(sg + 12);
		}
	}
	return get32(p);
}

static uint32_t server_window(struct peer *pr)
{
	return server_window_parse(pr, NULL);
}

/*
 * RDMA READ (or WRITE) len bytes at (addr, rkey) on pr's QP into (from) the
 * send buffer.  Returns 0 on success, 1 if it completed with an error (its
 * status in *st), -1 if it could not be posted or never completed.
 */
static int rdma_op(struct peer *pr, enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
		   uint32_t len, enum ibv_wc_status *st)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)SEND_BUF(pr),
		.length = len,
		.lkey = pr->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_READ,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	}, *bad;
	int64_t end = now_ms() + STEP_TIMEOUT_MS;
	struct ibv_wc wc;
	int n;

	if (ibv_post_send(pr->id->qp, &wr, &bad)) {
		msg("ibv_post_send (RDMA %s): %s", op == IBV_WR_RDMA_READ ? "READ" : "WRITE",
		    strerror(errno));
		return -1;
	}
	while (now_ms() < end) {
		n = ibv_poll_cq(pr->cq, 1, &wc);
		if (n < 0)
			return -1;
		if (n == 0) {
			usleep(1000);
			continue;
		}
		if (wc.wr_id != WR_READ)
			continue;		/* a receive (or its flush) */
		*st = wc.status;
		return wc.status == IBV_WC_SUCCESS ? 0 : 1;
	}
	msg("the RDMA %s did not complete in %d ms", op == IBV_WR_RDMA_READ ? "READ" : "WRITE",
	    STEP_TIMEOUT_MS);
	return -1;
}

static int rdma_read(struct peer *pr, uint64_t addr, uint32_t rkey, uint32_t len,
		     enum ibv_wc_status *st)
{
	return rdma_op(pr, IBV_WR_RDMA_READ, addr, rkey, len, st);
}

/* advaddr: the addresses of the ADVERT say nothing about the server's memory */
static int check_advert_addrs(struct peer *pr)
{
	static struct rwin rw;
	enum ibv_wc_status st;
	uint64_t off = 0, first;
	uint32_t i;
	int bad = 0;

	if (!server_window_parse(pr, &rw))
		return EXIT_SETUP;
	first = rw.segs[0].addr;
	for (i = 0; i < rw.nsegs; i++) {
		uint64_t want = off + first;

		msg("segment %u: addr 0x%" PRIx64 " rkey 0x%x length %u", i, rw.segs[i].addr,
		    rw.segs[i].rkey, rw.segs[i].length);
		if (first >= RX_PAGE_SIZE || rw.segs[i].addr != want) {
			msg("segment %u: address 0x%" PRIx64 " is not window offset + in-page offset (0x%" PRIx64 ")",
			    i, rw.segs[i].addr, want);
			bad = 1;
		}
		off += rw.segs[i].length;
	}
	if (off != rw.length) {
		msg("segments add up to %" PRIu64 " bytes, the window has %" PRIu64, off, rw.length);
		bad = 1;
	}
	/* the addresses must still work: READ the first bytes of every segment */
	for (i = 0; i < rw.nsegs && !bad; i++) {
		int r = rdma_read(pr, rw.segs[i].addr, rw.segs[i].rkey, 8, &st);

		if (r) {
			msg("READ of segment %u failed: %s", i,
			    r > 0 ? ibv_wc_status_str(st) : "not completed");
			bad = 1;
		}
	}
	return bad ? EXIT_GAVE_AWAY : EXIT_GOOD;
}

/* Post the first len bytes of the send buffer as one SEND (WR_SEND). */
static int post_send_msg(struct peer *pr, uint32_t len)
{
	bool imm = !strcmp(mode, "immctl");

	/* len 0: mode skip, an empty message */
	if (post_msg(pr, SEND_BUF(pr), len, WR_SEND,
		     imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, imm ? htonl(7) : 0)) {
		msg("ibv_post_send: failed");
		return -1;
	}
	return 0;
}

/* Send it and wait for its completion (receives on the way are passed over). */
static int send_msg(struct peer *pr, uint32_t len)
{
	struct ibv_wc wc;

	if (post_send_msg(pr, len))
		return -1;
	return wait_wc(pr, WR_SEND, STEP_TIMEOUT_MS, &wc);
}

/*
 * Poll for up to ms (or until SIGUSR1) for the completion of wr_id want (0
 * is returned, or 1 if it failed) or, with want UINT64_MAX, for a credit.
 * Each server message received adds its credits to *credits, is reposted
 * and, with owed, counted in *owed (a credit we owe back).  1 also when a
 * receive is flushed or cannot be reposted (the QP is down); -1: nothing
 * in time.
 */
static int flood_poll(struct peer *pr, uint64_t want, int *credits, int *owed, int ms)
{
	int64_t end = now_ms() + ms;
	struct ibv_wc wc;
	int n;

	while (now_ms() < end && !stop_early) {
		n = ibv_poll_cq(pr->cq, 1, &wc);
		if (n < 0)
			return -1;
		if (n == 0) {
			usleep(100);
			continue;
		}
		if (wc.wr_id < NRECV) {
			if (wc.status != IBV_WC_SUCCESS)
				return 1;
			*credits += get16(pr->buf + (size_t)wc.wr_id * CTRL_SIZE + 2);
			if (post_recv(pr, (unsigned int)wc.wr_id))
				return 1;
			if (owed)
				(*owed)++;
			if (want == UINT64_MAX && *credits > 0)
				return 0;
			continue;
		}
		if (wc.wr_id == want)
			return wc.status == IBV_WC_SUCCESS ? 0 : 1;
	}
	return -1;
}

/*
 * Has the server dropped us (a CM event within ms)?  Its CM says so with a
 * DREQ (DISCONNECTED), or with a REJ (REJECTED, on our established
 * connection) when the server drops the connection before its CM has our
 * RTU: our first SEND can reach its QP before that (rxe raises no
 * COMM_EST), rdma_disconnect() then sends nothing (no DREQ outside
 * ESTABLISHED) and destroying the cm_id sends a REJ (cm_destroy_id()).
 */
static bool disconnected(struct peer *pr, int ms)
{
	int status, type = next_event(pr, ms, &status, NULL, NULL);

	if (type != RDMA_CM_EVENT_DISCONNECTED && type != RDMA_CM_EVENT_REJECTED)
		return false;
	if (type == RDMA_CM_EVENT_REJECTED)
		msg("dropped with a REJ (before the server's CM had our RTU)");
	pr->connected = false;
	return true;
}

/*
 * advflood, advsegs: more windows than a connection may hold (1,024), or
 * more segments in them (4,096), in windows of @nsegs segments.
 */
static int adv_flood(struct peer *pr, unsigned int nsegs)
{
	unsigned int limit = nsegs == 1 ? 1024 : 4096 / nsegs, total = limit + 76, i, j;
	uint32_t len = RX_ADVERT_LEN + nsegs * RX_SEG_LEN;
	uint8_t *m = SEND_BUF(pr), *p = m + RX_HDR_LEN;
	int credits = NRECV - 1, owed = 0, r;

	if (!server_window(pr) || RX_HDR_LEN + len > CTRL_SIZE)
		return EXIT_SETUP;
	for (i = 0; i < total; i++) {
		/* wait for a credit: the server gives them back as it reaps */
		while (credits <= 0) {
			r = flood_poll(pr, UINT64_MAX, &credits, &owed, STEP_TIMEOUT_MS);
			if (r) {
				/* dropped (or stuck): only right past the limit */
				msg("no credit back after %u ADVERTs", i);
				return i > limit ? EXIT_GOOD : EXIT_GAVE_AWAY;
			}
		}
		if (i <= limit && disconnected(pr, 0)) {
			msg("dropped after %u ADVERTs: too early", i);
			return EXIT_GAVE_AWAY;
		}
		memset(m, 0, RX_HDR_LEN + len);
		put16(m, RX_MSG_ADVERT);
		/* give back the credits of its messages: it needs them to return ours */
		put16(m + 2, (uint16_t)owed);
		owed = 0;
		put32(m + 4, len);
		put32(p + 0, 1000 + i);		/* window id */
		put32(p + 4, RX_REMOTE_READ);
		put64(p + 8, (uint64_t)nsegs * 4096);
		put32(p + 16, nsegs);
		for (j = 0; j < nsegs; j++) {
			uint8_t *sg = p + RX_ADVERT_LEN + j * RX_SEG_LEN;

			put64(sg + 0, (uint64_t)j * 4096);
			put32(sg + 8, 0x1000 + i);
			put32(sg + 12, 4096);
		}
		if (post_send_msg(pr, RX_HDR_LEN + len))
			return EXIT_GAVE_AWAY;
		credits--;
		r = flood_poll(pr, WR_SEND, &credits, &owed, STEP_TIMEOUT_MS);
		if (r) {
			msg("ADVERT %u did not go out", i + 1);
			return i >= limit ? EXIT_GOOD : EXIT_GAVE_AWAY;
		}
	}
	if (disconnected(pr, STEP_TIMEOUT_MS)) {
		msg("dropped after %u ADVERTs of %u segments sent (the %uth went over the limit)",
		    total, nsegs, limit + 1);
		return EXIT_GOOD;
	}
	msg("still connected after %u windows of %u segments", total, nsegs);
	return EXIT_GAVE_AWAY;
}

/* Little-endian fields of the CLI's control messages (tools/rdmaxfer/proto.h). */
static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * oldwins: our hello has no features, as versions before
 * RDMAXFER_HELLO_WINS sent: the server must expose at most 256 windows to
 * us.  Ask serve for 300 (a WINS_REQ control message of the CLI, in a DATA
 * message), return the credits of what it sends, and count: serve revokes
 * its window, its EXPOSEs stop at 256 with ENOSPC, and it answers WINS
 * with status ENOSPC and length 256; the connection stays up.
 */
static int old_wins(struct peer *pr)
{
	unsigned int adverts = 0, revokes = 0, sent_credit = 0;
	uint8_t *m = SEND_BUF(pr), *p = m + RX_HDR_LEN;
	int credits = NRECV - 1, owed = 0, n;
	int64_t end = now_ms() + 6 * STEP_TIMEOUT_MS;
	uint64_t status = UINT64_MAX, length = 0;
	bool sending = true;
	struct ibv_wc wc;

	if (!server_window(pr))
		return EXIT_SETUP;
	memset(m, 0, RX_HDR_LEN + 64);
	put16(m, RX_MSG_DATA);
	put32(m + 4, 64);
	memcpy(p, "RDXFCTL1", 8);
	p[8] = 15;			/* PROTO_WINS_REQ */
	p[24] = 300 & 0xff;		/* length = 300, little-endian */
	p[25] = 300 >> 8;
	if (post_send_msg(pr, RX_HDR_LEN + 64))
		return EXIT_SETUP;
	credits--;
	while (status == UINT64_MAX && now_ms() < end) {
		n = ibv_poll_cq(pr->cq, 1, &wc);
		if (n < 0)
			return EXIT_SETUP;
		if (!n) {
			/* give back what we owe, one CREDIT at a time */
			if (!sending && owed >= 8 && credits > 0) {
				memset(m, 0, RX_HDR_LEN);
				put16(m, RX_MSG_CREDIT);
				put16(m + 2, (uint16_t)owed);
				if (post_send_msg(pr, RX_HDR_LEN))
					return EXIT_SETUP;
				owed = 0;
				credits--;
				sending = true;
				sent_credit++;
			}
			usleep(100);
			continue;
		}
		if (wc.wr_id == WR_SEND) {
			if (wc.status != IBV_WC_SUCCESS)
				return EXIT_SETUP;
			sending = false;
			continue;
		}
		if (wc.wr_id >= NRECV || wc.status != IBV_WC_SUCCESS) {
			msg("a receive failed (status %d): dropped after %u ADVERTs", wc.status,
			    adverts);
			return EXIT_GAVE_AWAY;
		}
		{
			const uint8_t *r = pr->buf + (size_t)wc.wr_id * CTRL_SIZE;
			const uint8_t *q = r + RX_HDR_LEN;

			credits += get16(r + 2);
			if (get16(r) == RX_MSG_ADVERT)
				adverts++;
			else if (get16(r) == RX_MSG_REVOKE)
				revokes++;
			else if (get16(r) == RX_MSG_DATA && wc.byte_len >= RX_HDR_LEN + 64 &&
				 !memcmp(q, "RDXFCTL1", 8) && get_le(q + 8, 4) == 16) {
				length = get_le(q + 24, 8);
				status = get_le(q + 44, 4);
			}
		}
		if (post_recv(pr, (unsigned int)wc.wr_id))
			return EXIT_SETUP;
		owed++;
	}
	msg("%u ADVERTs, %u REVOKEs, %u CREDITs back; WINS: status %lld, length %llu",
	    adverts, revokes, sent_credit, status == UINT64_MAX ? -1LL : (long long)status,
	    (unsigned long long)length);
	if (status == UINT64_MAX)
		return EXIT_GAVE_AWAY;
	if (disconnected(pr, 500)) {
		msg("dropped after the WINS answer");
		return EXIT_GAVE_AWAY;
	}
	return adverts == 256 && revokes == 1 && status == ENOSPC && length == 256 ?
	       EXIT_GOOD : EXIT_GAVE_AWAY;
}

#define FLOOD_HOLD_MS	1000

/* Build flood message number seq of kind into m; its length. */
static uint32_t flood_msg(uint8_t *m, const char *kind, uint32_t seq, const struct rwin *rw)
{
	uint8_t *p = m + RX_HDR_LEN;

	memset(m, 0, RX_HDR_LEN + RX_ADVERT_LEN + RX_SEG_LEN);
	if (!strcmp(kind, "writedone")) {
		put16(m, RX_MSG_WRITE_DONE);
		put32(m + 4, RX_WRITE_DONE_LEN);
		put32(p + 0, rw->id);
		put32(p + 4, seq);			/* immediate */
		put64(p + 8, 0);			/* offset */
		put64(p + 16, rw->length < 4096 ? rw->length : 4096);
		return RX_HDR_LEN + RX_WRITE_DONE_LEN;
	}
	if (!strcmp(kind, "send")) {
		put16(m, RX_MSG_DATA);
		put32(m + 4, 15);
		snprintf((char *)p, 16, "flood %08u\n", seq);
		return RX_HDR_LEN + 15;
	}
	if (seq % 2 == 0) {			/* advrevoke: window seq / 2 + 1 */
		put16(m, RX_MSG_ADVERT);
		put32(m + 4, RX_ADVERT_LEN + RX_SEG_LEN);
		put32(p + 0, seq / 2 + 1);
		put32(p + 4, RX_REMOTE_READ);
		put64(p + 8, 4096);
		put32(p + 16, 1);
		put64(p + RX_ADVERT_LEN + 0, 0);
		put32(p + RX_ADVERT_LEN + 8, 0x1000 + seq);
		put32(p + RX_ADVERT_LEN + 12, 4096);
		return RX_HDR_LEN + RX_ADVERT_LEN + RX_SEG_LEN;
	}
	put16(m, RX_MSG_REVOKE);
	put32(m + 4, RX_REVOKE_LEN);
	put32(p, seq / 2 + 1);
	return RX_HDR_LEN + RX_REVOKE_LEN;
}

/* Mode flood: see the top of the file. */
static int flood(struct peer *pr, const char *kind, int secs)
{
	static struct rwin rw;
	int64_t t0 = now_ms(), end = t0 + (int64_t)secs * 1000;
	int credits, owed = 0, r = 0;
	uint32_t sent = 0, len;
	bool held = false;

	if (strcmp(kind, "writedone") && strcmp(kind, "advrevoke") && strcmp(kind, "send")) {
		msg("unknown kind '%s'", kind);
		return EXIT_SETUP;
	}
	if (!server_window_parse(pr, &rw))
		return EXIT_SETUP;
	/*
	 * The ADVERT's buffer is not reposted and its credit never owed: the
	 * server keeps at most NRECV - 1 messages in flight to our NRECV - 1
	 * posted buffers.  What it returned in the ADVERT (our first message's
	 * buffer, on iWARP) is in peer_recvs.
	 */
	credits = (int)pr->peer_recvs;
	while (now_ms() < end && !stop_early) {
		if (credits <= 0) {
			r = flood_poll(pr, UINT64_MAX, &credits, &owed, FLOOD_HOLD_MS);
			if (r > 0)
				break;
			if (r < 0 && !stop_early) {
				held = true;
				r = 0;
				printf("sent %u held 1 credits %u\n", sent, pr->peer_recvs);
				fflush(stdout);
				break;
			}
			continue;
		}
		len = flood_msg(SEND_BUF(pr), kind, sent, &rw);
		put16(SEND_BUF(pr) + 2, (uint16_t)owed);
		if (post_send_msg(pr, len)) {
			r = 1;
			break;
		}
		owed = 0;
		credits--;
		r = flood_poll(pr, WR_SEND, &credits, &owed, STEP_TIMEOUT_MS);
		if (r)
			break;
		sent++;
	}
	if (!r) {
		/* stay connected until the end: were we dropped meanwhile? */
		while (now_ms() < end && !stop_early && !disconnected(pr, 100))
			;
	}
	msg("%s: %u messages in %.1f s, %s; the server announced %u receive buffers", kind, sent,
	    (double)(now_ms() - t0) / 1000, held ? "then held back (no credit for 1 s)" :
	    "never held back", pr->peer_recvs);
	printf("sent %u held %d credits %u\n", sent, held, pr->peer_recvs);
	if (r > 0 || !pr->connected) {
		msg("dropped by the server");
		return EXIT_NOT_DISCONNECTED;
	}
	return EXIT_DISCONNECTED;
}

/* How many of the n connections has the server dropped (a CM event each)? */
static unsigned int count_dropped(struct peer *prs, unsigned int n)
{
	unsigned int i, d = 0;

	for (i = 0; i < n; i++) {
		if (prs[i].connected)
			disconnected(&prs[i], 0);
		d += !prs[i].connected;
	}
	return d;
}

/* Mode conns: see the top of the file. */
static int idle_conns(const char *addr, const char *port, unsigned int n, int secs)
{
	static struct peer prs[256];
	int64_t end = now_ms() + (int64_t)secs * 1000;
	unsigned int i, k = 0, d;

	if (!n || n > 256) {
		msg("1 .. 256 connections");
		return EXIT_SETUP;
	}
	for (i = 0; i < n && !stop_early; i++) {
		if (setup(&prs[k], addr, port)) {
			teardown(&prs[k]);
			memset(&prs[k], 0, sizeof(prs[k]));
			continue;
		}
		k++;
	}
	printf("connected %u refused %u\n", k, n - k);
	fflush(stdout);
	if (!k)
		return EXIT_SETUP;
	usleep(1000000);
	d = count_dropped(prs, k);
	printf("holding %u dropped %u\n", k - d, d);
	fflush(stdout);
	while (now_ms() < end && !stop_early)
		usleep(50000);
	d = count_dropped(prs, k);
	printf("end kept %u dropped %u\n", k - d, d);
	for (i = 0; i < k; i++)
		teardown(&prs[i]);
	return EXIT_DISCONNECTED;
}

static int wait_disconnect(struct peer *pr);

/* crossread: one connection's rkey is refused on another connection's QP */
static int cross_read(struct peer *a, struct peer *b, const char *addr, const char *port2)
{
	static struct rwin rw;
	enum ibv_wc_status st;
	int r;

	if (!server_window_parse(a, &rw))
		return EXIT_SETUP;
	if (setup(b, addr, port2) || !server_window(b))
		return EXIT_SETUP;
	/* the control: a's own window through a's own QP */
	r = rdma_read(a, rw.segs[0].addr, rw.segs[0].rkey, 8, &st);
	if (r) {
		msg("control READ on the first connection failed: %s",
		    r > 0 ? ibv_wc_status_str(st) : "not completed");
		return EXIT_SETUP;
	}
	r = rdma_read(b, rw.segs[0].addr, rw.segs[0].rkey, 8, &st);
	if (r < 0)
		return EXIT_SETUP;
	if (!r) {
		msg("READ with the first connection's rkey 0x%x went through on the second",
		    rw.segs[0].rkey);
		return EXIT_GAVE_AWAY;
	}
	msg("READ with the first connection's rkey on the second: %s (refused, good)",
	    ibv_wc_status_str(st));
	/* the server's QP went to error: the server must drop that connection */
	if (wait_disconnect(b)) {
		msg("the server kept the second connection, whose QP refused the READ");
		return EXIT_NOT_DISCONNECTED;
	}
	return EXIT_GOOD;
}

/*
 * One probe on a fresh connection to the server: op with len bytes at the
 * window's first segment address + off, with rkey (or, if use_own, the
 * connection's own valid rkey); the probe must fail.  *own gets that
 * connection's valid rkey.  Returns EXIT_GOOD (refused), EXIT_GAVE_AWAY
 * (it went through), EXIT_SETUP.
 */
static int probe(const char *addr, const char *port, enum ibv_wr_opcode op, uint64_t off,
		 uint32_t len, uint32_t rkey, bool use_own, uint32_t *own)
{
	static struct rwin rw;
	struct peer b = { 0 };
	enum ibv_wc_status st;
	int r, ret = EXIT_SETUP;

	if (setup(&b, addr, port) || !server_window_parse(&b, &rw))
		goto out;
	*own = rw.segs[0].rkey;
	if (use_own)
		rkey = *own;
	else if (rkey == *own) {
		ret = EXIT_GOOD;	/* that variant is this connection's valid key */
		goto out;
	}
	memset(SEND_BUF(&b), 0xee, len);
	r = rdma_op(&b, op, rw.segs[0].addr + off, rkey, len, &st);
	if (r < 0)
		goto out;
	/*
	 * On iWARP a WRITE completes once TCP took it: the server's refusal
	 * (a TERMINATE, then the connection's end) comes after.  A READ
	 * behind it, with the valid key, is answered only if the WRITE was
	 * taken: its failure, or no answer at all, is the refusal.
	 */
	if (!r && op == IBV_WR_RDMA_WRITE &&
	    b.id->verbs->device->transport_type == IBV_TRANSPORT_IWARP &&
	    rdma_read(&b, rw.segs[0].addr, *own, 1, &st))
		r = 1;
	if (!r) {
		msg("RDMA %s of %u bytes at +%" PRIu64 " with rkey 0x%x (valid: 0x%x, window %" PRIu64 " bytes) went through",
		    op == IBV_WR_RDMA_READ ? "READ" : "WRITE", len, off, rkey, *own, rw.length);
		ret = EXIT_GAVE_AWAY;
		goto out;
	}
	ret = EXIT_GOOD;
out:
	teardown(&b);
	return ret;
}

/*
 * keysweep: a window that is gone stays gone for every key variant, and a
 * window's bounds hold.  C (kept open all along) writes a pattern over the
 * first 4 KiB of the server's one buffer.  A connects, notes its window's
 * rkey and leaves: the server revokes that window when the connection
 * ends.  Then, each on a fresh connection (a remote access error kills the
 * QP) whose own window maps the same memory: a WRITE of 8 bytes with the
 * old rkey's index and each of the 256 values of its key byte (what
 * ib_inc_rkey() walks; the one that is the connection's own valid key is
 * skipped); with the valid key, a READ one byte past the window's end and a
 * WRITE straddling it.  Every probe must fail; C reads its pattern back
 * unchanged, its connection unaffected.
 */
static int key_sweep(struct peer *c, const char *addr, const char *port)
{
	static struct rwin rw, rwa;
	struct peer a = { 0 };
	enum ibv_wc_status st;
	uint32_t old, own = 0, k, skipped = 0;
	int r, ret;
	unsigned int i;

	if (!server_window_parse(c, &rw) || rw.length < 4096)
		return EXIT_SETUP;
	for (i = 0; i < 4096; i++)
		SEND_BUF(c)[i] = (uint8_t)(i * 7 + 3);
	if (rdma_op(c, IBV_WR_RDMA_WRITE, rw.segs[0].addr, rw.segs[0].rkey, 4096, &st)) {
		msg("C's pattern WRITE failed");
		return EXIT_SETUP;
	}
	if (setup(&a, addr, port) || !server_window_parse(&a, &rwa)) {
		teardown(&a);
		return EXIT_SETUP;
	}
	old = rwa.segs[0].rkey;
	teardown(&a);
	usleep(200000);		/* the server's teardown of A */

	for (k = 0; k < 256; k++) {
		ret = probe(addr, port, IBV_WR_RDMA_WRITE, 0, 8, (old & ~0xffu) | k, false, &own);
		if (ret != EXIT_GOOD)
			return ret;
		skipped += ((old & ~0xffu) | k) == own;
	}
	msg("the revoked rkey 0x%x refused with all 256 key bytes (%u skipped: the probing connection's own key)",
	    old, skipped);
	ret = probe(addr, port, IBV_WR_RDMA_READ, rw.length, 1, 0, true, &own);
	if (ret == EXIT_GOOD)
		ret = probe(addr, port, IBV_WR_RDMA_WRITE, rw.length - 4, 8, 0, true, &own);
	if (ret != EXIT_GOOD)
		return ret;
	msg("READ past the end and WRITE across it refused");

	memset(SEND_BUF(c), 0, 4096);
	r = rdma_read(c, rw.segs[0].addr, rw.segs[0].rkey, 4096, &st);
	if (r) {
		msg("C's READ failed after the sweep: %s", r > 0 ? ibv_wc_status_str(st) : "not completed");
		return EXIT_GAVE_AWAY;
	}
	for (i = 0; i < 4096; i++) {
		if (SEND_BUF(c)[i] != (uint8_t)(i * 7 + 3)) {
			msg("the server's memory changed at byte %u", i);
			return EXIT_GAVE_AWAY;
		}
	}
	msg("the server's memory is unchanged and C still works");
	return EXIT_GOOD;
}

/*
 * writeimm: the server's receive queue holds its hello's credits of
 * control buffers, then the slot its user posted (we have sent nothing:
 * none was used).  Skip the buffers (empty SENDs, allowed once the server
 * has a slot) and WRITE with immediate into the window: the WRITE's bytes
 * land in the window, the immediate takes the slot.
 */
static int write_imm(struct peer *pr)
{
	static struct rwin rw;
	uint32_t ahead = pr->peer_recvs, len, i;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	int64_t end;

	if (!server_window_parse(pr, &rw))
		return EXIT_SETUP;
	len = rw.segs[0].length < 60000 ? (uint32_t)rw.segs[0].length : 60000;
	for (end = now_ms() + 30000; !stop_early && now_ms() < end; )
		usleep(10000);
	if (!stop_early) {
		msg("not told in 30 s that the server posted its slot");
		return EXIT_SETUP;
	}
	for (i = 0; i < ahead; i++)
		if (send_msg(pr, 0))
			return EXIT_SETUP;
	sge.addr = (uintptr_t)pr->buf;		/* any registered bytes */
	sge.length = len;
	sge.lkey = pr->mr->lkey;
	wr.wr_id = WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(0x1234);
	wr.wr.rdma.remote_addr = rw.segs[0].addr;
	wr.wr.rdma.rkey = rw.segs[0].rkey;
	if (ibv_post_send(pr->id->qp, &wr, &bad)) {
		msg("ibv_post_send (RDMA WRITE with immediate): %s", strerror(errno));
		return EXIT_SETUP;
	}
	msg("wrote %u bytes with immediate after %u skips", len, ahead);
	if (wait_disconnect(pr)) {
		msg("still connected %d ms after the WRITE with immediate", STEP_TIMEOUT_MS);
		return EXIT_NOT_DISCONNECTED;
	}
	return EXIT_DISCONNECTED;
}

/* Build the malformed message of mode into the send buffer; its length. */
static int build(uint8_t *m, uint32_t server_win)
{
	uint8_t *p = m + RX_HDR_LEN;
	uint32_t bogus;

	memset(m, 0, CTRL_SIZE);
	if (!strcmp(mode, "badlen")) {
		/* a DATA message claiming one byte more than it carries */
		put16(m, RX_MSG_DATA);
		put32(m + 4, 33);
		memset(p, 'x', 32);
		return RX_HDR_LEN + 32;
	}
	if (!strcmp(mode, "skip"))
		return 0;
	if (!strcmp(mode, "runs")) {
		/* one run: a slot of 64 bytes */
		put16(m, RX_MSG_CREDIT);
		put32(m + 4, 8);
		put32(p + 0, 1);
		put32(p + 4, 0x80000040u);
		return RX_HDR_LEN + 8;
	}
	if (!strcmp(mode, "want")) {
		/* a control message of 64 bytes waits */
		put16(m, RX_MSG_WANT);
		put32(m + 4, 8);
		put32(p + 0, 64);
		put32(p + 4, 0);
		return RX_HDR_LEN + 8;
	}
	if (!strcmp(mode, "valid") || !strcmp(mode, "immctl")) {
		put16(m, RX_MSG_CREDIT);
		put32(m + 4, 0);
		return RX_HDR_LEN;
	}
	if (!strcmp(mode, "badtype")) {
		put16(m, 99);
		put32(m + 4, 0);
		return RX_HDR_LEN;
	}
	if (!strcmp(mode, "credits")) {
		/* the server gave us 32 buffers' worth; return 1000 */
		put16(m, RX_MSG_CREDIT);
		put16(m + 2, 1000);
		put32(m + 4, 0);
		return RX_HDR_LEN;
	}
	if (!strcmp(mode, "advert0")) {
		put16(m, RX_MSG_ADVERT);
		put32(m + 4, RX_ADVERT_LEN);
		put32(p + 0, 1);		/* window id */
		put32(p + 4, RX_REMOTE_READ);
		put64(p + 8, 0);		/* length */
		put32(p + 16, 0);		/* nsegs */
		return RX_HDR_LEN + RX_ADVERT_LEN;
	}
	if (!strcmp(mode, "advertovf")) {
		/* one segment of 8 KiB starting 4 KiB below 2^64 */
		put16(m, RX_MSG_ADVERT);
		put32(m + 4, RX_ADVERT_LEN + RX_SEG_LEN);
		put32(p + 0, 1);
		put32(p + 4, RX_REMOTE_READ);
		put64(p + 8, 8192);
		put32(p + 16, 1);
		put64(p + RX_ADVERT_LEN + 0, UINT64_MAX - 4095);
		put32(p + RX_ADVERT_LEN + 8, 0x1234);
		put32(p + RX_ADVERT_LEN + 12, 8192);
		return RX_HDR_LEN + RX_ADVERT_LEN + RX_SEG_LEN;
	}
	if (!strcmp(mode, "probe")) {
		put16(m, RX_MSG_PROBE);
		put32(m + 4, RX_SEG_LEN);
		put64(p + 0, 0);		/* addr */
		put32(p + 8, 0x1234);		/* rkey */
		put32(p + 12, 8);		/* length: RDMAXFER_PROBE_LEN */
		return RX_HDR_LEN + RX_SEG_LEN;
	}
	if (!strcmp(mode, "writedone")) {
		/* an otherwise sane WRITE_DONE on a window id we were never given */
		bogus = server_win ^ 0x40000000u;
		put16(m, RX_MSG_WRITE_DONE);
		put32(m + 4, RX_WRITE_DONE_LEN);
		put32(p + 0, bogus);
		put32(p + 4, 0);		/* immediate */
		put64(p + 8, 0);		/* offset */
		put64(p + 16, 4096);		/* length */
		return RX_HDR_LEN + RX_WRITE_DONE_LEN;
	}
	return -1;
}


/*
 * Wait up to @ms for DISCONNECTED; other events (none expected) are logged.
 * Returns 0 when it came, -1 if not.
 */
static int wait_disconnect_ms(struct peer *pr, int ms)
{
	int64_t end = now_ms() + ms;
	int type, status;

	while (now_ms() < end) {
		type = next_event(pr, (int)(end - now_ms()), &status, NULL, NULL);
		if (type < 0)
			break;
		if (type == RDMA_CM_EVENT_DISCONNECTED) {
			pr->connected = false;
			return 0;
		}
		msg("unexpected %s (status %d) while waiting", rdma_event_str(type), status);
	}
	return -1;
}

static int wait_disconnect(struct peer *pr)
{
	return wait_disconnect_ms(pr, STEP_TIMEOUT_MS);
}

/* Mode silent: see the top of the file. */
static int silent(struct peer *pr, int bound_ms)
{
	int64_t t0 = now_ms();
	struct ibv_wc wc;
	int n;

	while (now_ms() - t0 < bound_ms) {
		n = ibv_poll_cq(pr->cq, 1, &wc);
		if (n > 0 && wc.status == IBV_WC_SUCCESS && wc.wr_id < NRECV) {
			msg("the server sent a message (%u bytes) before ours", wc.byte_len);
			return EXIT_GAVE_AWAY;
		}
		if (disconnected(pr, 10)) {
			msg("dropped after %" PRId64 " ms without a message from either side",
			    now_ms() - t0);
			return EXIT_GOOD;
		}
	}
	msg("still connected after %d ms of silence", bound_ms);
	return EXIT_GAVE_AWAY;
}

/*
 * The server must drop us within @bound_ms from now, after @what (waited
 * for STEP_TIMEOUT_MS longer, to say how late): EXIT_DISCONNECTED if it
 * did in time, else EXIT_NOT_DISCONNECTED.  Modes mute and norecv.
 */
static int dropped_within(struct peer *pr, int bound_ms, const char *what)
{
	int64_t t0 = now_ms(), took;

	if (wait_disconnect_ms(pr, bound_ms + STEP_TIMEOUT_MS)) {
		msg("still connected %" PRId64 " ms after %s (bound %d ms)", now_ms() - t0, what,
		    bound_ms);
		return EXIT_NOT_DISCONNECTED;
	}
	took = now_ms() - t0;
	msg("the server dropped the connection %" PRId64 " ms after %s (bound %d ms)", took, what,
	    bound_ms);
	return took <= bound_ms ? EXIT_DISCONNECTED : EXIT_NOT_DISCONNECTED;
}

/* Mode mute: see the top of the file. */
static int mute(struct peer *pr, int bound_ms)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (!server_window(pr))
		return EXIT_SETUP;
	if (ibv_modify_qp(pr->id->qp, &attr, IBV_QP_STATE)) {
		msg("ibv_modify_qp(ERR): %s", strerror(errno));
		return EXIT_SETUP;
	}
	return dropped_within(pr, bound_ms, "going mute");
}

/* Mode mutewin: see the top of the file. */
static int mute_window(struct peer *pr, int secs)
{
	uint8_t *m = SEND_BUF(pr), *p = m + RX_HDR_LEN;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int64_t t0, end = now_ms() + (int64_t)secs * 1000;

	if (!server_window(pr))
		return EXIT_SETUP;
	/* the window's rkey is never used: nothing is answered once mute */
	memset(m, 0, RX_HDR_LEN + RX_ADVERT_LEN + RX_SEG_LEN);
	put16(m, RX_MSG_ADVERT);
	put32(m + 4, RX_ADVERT_LEN + RX_SEG_LEN);
	put32(p + 0, 1);
	put32(p + 4, RX_REMOTE_READ);
	put64(p + 8, RX_PAGE_SIZE);
	put32(p + 16, 1);
	put64(p + RX_ADVERT_LEN + 0, (uintptr_t)pr->buf);
	put32(p + RX_ADVERT_LEN + 8, pr->mr->rkey);
	put32(p + RX_ADVERT_LEN + 12, RX_PAGE_SIZE);
	if (send_msg(pr, RX_HDR_LEN + RX_ADVERT_LEN + RX_SEG_LEN))
		return EXIT_SETUP;
	if (ibv_modify_qp(pr->id->qp, &attr, IBV_QP_STATE)) {
		msg("ibv_modify_qp(ERR): %s", strerror(errno));
		return EXIT_SETUP;
	}
	printf("mute\n");
	t0 = now_ms();
	while (now_ms() < end && !stop_early) {
		if (disconnected(pr, 100)) {
			printf("disconnected after %" PRId64 " ms\n", now_ms() - t0);
			break;
		}
	}
	return EXIT_GOOD;
}

static void teardown(struct peer *pr)
{
	if (pr->connected)
		rdma_disconnect(pr->id);
	if (pr->qp)
		rdma_destroy_qp(pr->id);
	if (pr->mr)
		ibv_dereg_mr(pr->mr);
	free(pr->buf);
	if (pr->cq)
		ibv_destroy_cq(pr->cq);
	if (pr->pd)
		ibv_dealloc_pd(pr->pd);
	if (pr->id)
		rdma_destroy_id(pr->id);
	if (pr->ch)
		rdma_destroy_event_channel(pr->ch);
}

/* --- the key handshake (mode auth) ---------------------------------------- */

/* @sa's address as 16 bytes, IPv4 as IPv4-mapped (kmod/auth.c). */
static void auth_addr(const struct sockaddr *sa, uint8_t *out)
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET) {
		out[10] = 0xff;
		out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

/*
 * Check the server's proof in its reply and make ours into @mac, as
 * protocol.md says: HMAC-SHA256(key, label | Nc | Ns | hello_c | hello_s |
 * addr_c | addr_s).  0, 1 the server's proof is wrong, -1 no proof came.
 */
static int auth_proofs(struct peer *pr, const uint8_t *key, size_t klen, uint8_t *mac)
{
	uint8_t in[16 + 2 * RX_NONCE_LEN + 2 * RX_HELLO_EXT_LEN + 32], want[RX_MAC_LEN];

	if (ah.rep_len < RX_AUTH_REP_LEN || !(get32(ah.rep + 24) & RX_HELLO_AUTH)) {
		msg("the server's reply carries no proof (%zu bytes)", ah.rep_len);
		return -1;
	}
	memset(in, 0, 16);
	memcpy(in + 16, ah.req + RX_HELLO_EXT_LEN, RX_NONCE_LEN);
	memcpy(in + 32, ah.rep + RX_HELLO_EXT_LEN, RX_NONCE_LEN);
	memcpy(in + 48, ah.req, RX_HELLO_EXT_LEN);
	memcpy(in + 80, ah.rep, RX_HELLO_EXT_LEN);
	auth_addr((struct sockaddr *)&pr->id->route.addr.src_addr, in + 112);
	auth_addr((struct sockaddr *)&pr->id->route.addr.dst_addr, in + 128);
	strcpy((char *)in, "rdmaxfer server");
	hmac_sha256(key, klen, in, sizeof(in), want);
	if (memcmp(want, ah.rep + RX_AUTH_REQ_LEN, RX_MAC_LEN)) {
		msg("the server's proof does not match the key");
		return 1;
	}
	memset(in, 0, 16);
	strcpy((char *)in, "rdmaxfer client");
	hmac_sha256(key, klen, in, sizeof(in), mac);
	return 0;
}

/* Send @mac as an AUTH message. */
static int auth_send(struct peer *pr, const uint8_t *mac)
{
	uint8_t *m = SEND_BUF(pr);

	memset(m, 0, RX_HDR_LEN);
	put16(m, RX_MSG_AUTH);
	put32(m + 4, RX_MAC_LEN);
	memcpy(m + RX_HDR_LEN, mac, RX_MAC_LEN);
	return send_msg(pr, RX_HDR_LEN + RX_MAC_LEN);
}

/* Dropped within ms, with no message of the server's before?  EXIT_GOOD if so. */
static int dropped_silently(struct peer *pr, int ms)
{
	int64_t end = now_ms() + ms;
	struct ibv_wc wc;

	while (now_ms() < end) {
		while (ibv_poll_cq(pr->cq, 1, &wc) > 0) {
			if (wc.wr_id < NRECV && wc.status == IBV_WC_SUCCESS) {
				msg("the server sent a message (type %u, %u bytes) to an unproven peer",
				    get16(pr->buf + (size_t)wc.wr_id * CTRL_SIZE), wc.byte_len);
				return EXIT_GAVE_AWAY;
			}
		}
		if (disconnected(pr, 20))
			return EXIT_GOOD;
	}
	msg("still connected %d ms later", ms);
	return EXIT_GAVE_AWAY;
}

/* Connect and prove the key: 0 (our proof in @mac, sent), else EXIT_*. */
static int auth_good(struct peer *pr, const char *addr, const char *port, const uint8_t *key,
		     size_t klen, uint8_t *mac)
{
	if (setup(pr, addr, port))
		return EXIT_SETUP;
	if (auth_proofs(pr, key, klen, mac))
		return EXIT_SETUP;
	return auth_send(pr, mac) ? EXIT_SETUP : 0;
}

/* Mode auth flood: see the top of the file. */
static int auth_flood(const char *addr, const char *port, int secs)
{
	static struct peer prs[64];
	unsigned int opened = 0, refused = 0, dropped = 0, i, next = 0;
	int64_t end = now_ms() + (int64_t)secs * 1000;

	while (now_ms() < end && !stop_early) {
		struct peer *pr = &prs[next];

		if (pr->id) {
			if (!pr->connected)
				dropped++;
			teardown(pr);
			memset(pr, 0, sizeof(*pr));
		}
		if (setup(pr, addr, port)) {
			refused++;
			teardown(pr);
			memset(pr, 0, sizeof(*pr));
			continue;
		}
		opened++;
		next = (next + 1) % 64;
		for (i = 0; i < 64; i++)	/* notice the server's drops */
			if (prs[i].connected && disconnected(&prs[i], 0))
				prs[i].connected = false;
	}
	for (i = 0; i < 64; i++) {
		if (prs[i].id && !prs[i].connected)
			dropped++;
		teardown(&prs[i]);
	}
	printf("opened %u refused %u dropped %u\n", opened, refused, dropped);
	return opened ? EXIT_GOOD : EXIT_SETUP;
}

/* Mode auth: see the top of the file. */
static int auth(const char *addr, const char *port, const char *kind, const char *keyfile)
{
	struct peer pr = { 0 }, pr2 = { 0 };
	uint8_t key[257], mac[RX_MAC_LEN], ns[RX_NONCE_LEN];
	enum ibv_wc_status st;
	struct rwin rw;
	size_t klen = 0;
	int ret = EXIT_SETUP;
	FILE *f;

	srandom((unsigned int)(now_ms() ^ getpid()));
	ah.on = strcmp(kind, "none") != 0;
	if (!strcmp(kind, "flood"))
		return auth_flood(addr, port, keyfile ? atoi(keyfile) : 10);
	if (ah.on) {
		f = keyfile ? fopen(keyfile, "rb") : NULL;
		if (f) {
			klen = fread(key, 1, sizeof(key), f);
			fclose(f);
		}
		if (klen < 16 || klen > 256 || hmac_sha256_selftest()) {
			msg("no key of 16..256 bytes in %s, or HMAC-SHA256 is broken", keyfile);
			return EXIT_SETUP;
		}
	}
	if (!strcmp(kind, "none")) {
		if (!setup(&pr, addr, port)) {
			msg("connected without a key");
			ret = EXIT_GAVE_AWAY;
		} else {
			ret = ah.reject == RX_REJECT_AUTH_REQUIRED ? EXIT_GOOD : EXIT_SETUP;
		}
	} else if (!strcmp(kind, "good")) {
		ret = auth_good(&pr, addr, port, key, klen, mac);
		if (!ret)
			ret = server_window(&pr) ? EXIT_GOOD : EXIT_GAVE_AWAY;
	} else if (!strcmp(kind, "badmac") || !strcmp(kind, "badmacmore")) {
		if (setup(&pr, addr, port) || auth_proofs(&pr, key, klen, mac))
			goto out;
		mac[5] ^= 0x10;
		if (kind[6]) {	/* more: two messages right behind, unwaited */
			uint8_t *m = SEND_BUF(&pr) + CTRL_SIZE / 2, *d = m + 64;

			memset(m, 0, 64 + RX_HDR_LEN + RX_WRITE_DONE_LEN);
			put16(m, RX_MSG_DATA);
			put32(m + 4, 5);
			memcpy(m + RX_HDR_LEN, "evil!", 5);
			put16(d, RX_MSG_WRITE_DONE);
			put32(d + 4, RX_WRITE_DONE_LEN);
			memcpy(SEND_BUF(&pr) + RX_HDR_LEN, mac, RX_MAC_LEN);
			put16(SEND_BUF(&pr), RX_MSG_AUTH);
			put16(SEND_BUF(&pr) + 2, 0);
			put32(SEND_BUF(&pr) + 4, RX_MAC_LEN);
			if (post_msg(&pr, SEND_BUF(&pr), RX_HDR_LEN + RX_MAC_LEN, WR_FIRST,
				     IBV_WR_SEND, 0) ||
			    post_msg(&pr, m, RX_HDR_LEN + 5, WR_FIRST, IBV_WR_SEND, 0) ||
			    post_msg(&pr, d, RX_HDR_LEN + RX_WRITE_DONE_LEN, WR_SEND, IBV_WR_SEND, 0))
				goto out;
			ret = dropped_silently(&pr, STEP_TIMEOUT_MS);
		} else if (!auth_send(&pr, mac)) {
			ret = dropped_silently(&pr, STEP_TIMEOUT_MS);
		}
	} else if (!strcmp(kind, "replay")) {
		ret = auth_good(&pr, addr, port, key, klen, mac);
		if (ret || !server_window(&pr)) {
			ret = EXIT_SETUP;
			goto out;
		}
		memcpy(ns, ah.rep + RX_HELLO_EXT_LEN, RX_NONCE_LEN);
		teardown(&pr);
		memset(&pr, 0, sizeof(pr));
		ah.keep_nonce = true;		/* the very request of last time */
		ret = EXIT_SETUP;
		if (setup(&pr2, addr, port) || ah.rep_len < RX_AUTH_REP_LEN)
			goto out;
		if (!memcmp(ns, ah.rep + RX_HELLO_EXT_LEN, RX_NONCE_LEN)) {
			msg("the server sent the same nonce twice");
			ret = EXIT_GAVE_AWAY;
		} else if (!auth_send(&pr2, mac)) {
			ret = dropped_silently(&pr2, STEP_TIMEOUT_MS);
		}
	} else if (!strcmp(kind, "first")) {
		if (setup(&pr, addr, port))
			goto out;
		memset(SEND_BUF(&pr), 0, RX_HDR_LEN);
		put16(SEND_BUF(&pr), RX_MSG_CREDIT);
		if (!send_msg(&pr, RX_HDR_LEN))
			ret = dropped_silently(&pr, STEP_TIMEOUT_MS);
	} else if (!strcmp(kind, "guess")) {
		if (auth_good(&pr, addr, port, key, klen, mac) || !server_window_parse(&pr, &rw))
			goto out;
		if (setup(&pr2, addr, port))
			goto out;
		ret = rdma_read(&pr2, rw.segs[0].addr, rw.segs[0].rkey, 8, &st);
		if (ret == 0) {
			msg("an unproven connection READ the window with its rkey");
			ret = EXIT_GAVE_AWAY;
		} else if (ret == 1) {
			msg("the READ failed: %s", ibv_wc_status_str(st));
			ret = dropped_silently(&pr2, STEP_TIMEOUT_MS);
		} else {
			ret = EXIT_SETUP;
		}
	}
out:
	teardown(&pr2);
	teardown(&pr);
	return ret;
}

static void on_usr1(int sig)
{
	(void)sig;
	stop_early = 1;
}

int main(int argc, char **argv)
{
	/* each mode and the number of arguments it takes after MODE */
	static const struct { const char *name; int args; } modes[] = {
		{ "badlen", 0 }, { "badtype", 0 }, { "credits", 0 }, { "advert0", 0 },
		{ "advertovf", 0 }, { "writedone", 0 }, { "skip", 0 }, { "immctl", 0 },
		{ "runs", 0 }, { "want", 0 }, { "probe", 0 }, { "probeoffer", 0 }, { "valid", 0 },
		{ "advaddr", 0 }, { "writeimm", 0 },
		{ "advflood", 0 }, { "advsegs", 0 }, { "oldwins", 0 }, { "keysweep", 0 }, { "crossread", 1 }, { "mute", 1 },
		{ "mutewin", 1 }, { "flood", 2 }, { "conns", 2 }, { "silent", 1 }, { "norecv", 1 },
		{ "auth", -1 },
		{ NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct peer pr = { 0 }, pr2 = { 0 };
	uint32_t win;
	int i, len, ret = EXIT_SETUP;

	mode = argc > 3 ? argv[3] : "";
	for (i = 0; modes[i].name && strcmp(modes[i].name, mode); i++)
		;
	if (!modes[i].name || (modes[i].args >= 0 && argc != 4 + modes[i].args) ||
	    (modes[i].args < 0 && (argc < 5 || argc > 6))) {
		fprintf(stderr,
			"usage: evil_peer ADDR PORT badlen|badtype|credits|advert0|advertovf|writedone|skip|immctl|runs|want|probe|probeoffer|valid|advaddr|advflood|advsegs|oldwins|keysweep|writeimm\n"
			"       evil_peer ADDR PORT crossread PORT2\n"
			"       evil_peer ADDR PORT mute MS\n"
			"       evil_peer ADDR PORT mutewin SECS\n"
			"       evil_peer ADDR PORT silent MS\n"
			"       evil_peer ADDR PORT norecv MS\n"
			"       evil_peer ADDR PORT flood writedone|advrevoke|send SECS\n"
			"       evil_peer ADDR PORT conns N SECS\n"
			"       evil_peer ADDR PORT auth none|good|badmac|badmacmore|replay|first|guess [KEYFILE]\n"
			"       evil_peer ADDR PORT auth flood SECS\n");
		return EXIT_SETUP;
	}
	sigaction(SIGUSR1, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "conns"))
		return idle_conns(argv[1], argv[2], (unsigned int)atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(mode, "auth"))
		return auth(argv[1], argv[2], argv[4], argc > 5 ? argv[5] : NULL);
	if (setup(&pr, argv[1], argv[2]))
		goto out;
	if (!strcmp(mode, "advaddr")) {
		ret = check_advert_addrs(&pr);
		goto out;
	}
	if (!strcmp(mode, "probeoffer")) {
		printf("the server's hello: features 0x%x\n", pr.peer_features);
		ret = pr.peer_features & RX_HELLO_PROBE ? 1 : 0;
		goto out;
	}
	if (!strcmp(mode, "crossread")) {
		ret = cross_read(&pr, &pr2, argv[1], argv[4]);
		goto out;
	}
	if (!strcmp(mode, "advflood") || !strcmp(mode, "advsegs")) {
		ret = adv_flood(&pr, strcmp(mode, "advflood") ?
				(CTRL_SIZE - RX_HDR_LEN - RX_ADVERT_LEN) / RX_SEG_LEN : 1);
		goto out;
	}
	if (!strcmp(mode, "oldwins")) {
		ret = old_wins(&pr);
		goto out;
	}
	if (!strcmp(mode, "writeimm")) {
		ret = write_imm(&pr);
		goto out;
	}
	if (!strcmp(mode, "keysweep")) {
		ret = key_sweep(&pr, argv[1], argv[2]);
		goto out;
	}
	if (!strcmp(mode, "mute")) {
		ret = mute(&pr, atoi(argv[4]));
		goto out;
	}
	if (!strcmp(mode, "mutewin")) {
		ret = mute_window(&pr, atoi(argv[4]));
		goto out;
	}
	if (!strcmp(mode, "silent")) {
		ret = silent(&pr, atoi(argv[4]));
		goto out;
	}
	if (!strcmp(mode, "norecv")) {
		/* norecv: see the top of the file */
		ret = dropped_within(&pr, atoi(argv[4]), "connecting without a receive buffer");
		goto out;
	}
	if (!strcmp(mode, "flood")) {
		ret = flood(&pr, argv[4], atoi(argv[5]));
		goto out;
	}
	win = server_window(&pr);
	if (!win)
		goto out;
	len = build(SEND_BUF(&pr), win);
	if (send_msg(&pr, (uint32_t)len))
		goto out;
	if (wait_disconnect(&pr)) {
		msg("still connected %d ms after the malformed message", STEP_TIMEOUT_MS);
		ret = EXIT_NOT_DISCONNECTED;
		goto out;
	}
	ret = EXIT_DISCONNECTED;
out:
	teardown(&pr2);
	teardown(&pr);
	return ret;
}
