// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer ping - round-trip latency to `rdmaxfer serve`.
 *
 * ping HOST [--op send|write|read] [--size B] [--count N] [--warmup N]
 *      [--poll busy|block] [--histogram] [--json]
 *
 * Exactly one operation is in flight.  --op write (read): one RDMA WRITE
 * (READ) of --size bytes into (from) the server's window at offset 0,
 * timed from just before its SUBMIT to just after the REAP that returns
 * its completion: one network round trip that the server's RDMA device
 * answers without any server CPU.  --op send (the default): the
 * connection is put in ECHO mode (proto.h: BENCH_BEGIN), and each SEND of
 * --size bytes is timed from just before its SUBMIT to just after the REAP
 * that returns the RECV event of the server's echo; the echo is then taken
 * (RECV, not timed) and compared with what was sent.  Round trips of
 * --warmup first, not measured.  --poll busy spins on the completion ring
 * (RING_SETUP, mmap()ed: no system call until a completion is there; with
 * a module that has none, on REAP with timeout 0); --poll block REAPs and
 * sleeps in the kernel until something comes (default: busy, but block
 * when serve's process echoes; see POLL_DEFAULT).
 * At the end BENCH_END checks the server saw every message.
 *
 * With a kernel that has receive slots on both ends (QUERY_CONN's
 * RDMAXFER_CONN_F_RECV_SLOTS), --op send asks serve for echo slots
 * (PROTO_BF_KECHO) instead: its kernel answers each SEND from the
 * completion handler, the serve process never wakes up; the echo lands,
 * zero-copy, in one of PING_SLOTS slots ping posts in its own buffer, and
 * a round trip ends with the REAP that returns that slot's completion.
 * Every echo is compared with what was sent; the connection echoes
 * everything from then on, so there is no BENCH_END.
 *
 * The statistics and their printing are lat_report()'s (measure_util.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "session.h"
#include "measure.h"

#define PING_DEFAULT_SIZE	8
#define PING_DEFAULT_COUNT	1000
#define PING_DEFAULT_WARMUP	100
#define PING_MAX_COUNT		100000000ull
#define PING_REAP_MAX		16
#define PING_RING_ENTRIES	64	/* --poll busy reads completions from a ring */
/*
 * Receive slots for kernel echoes: ours, and the echo slots asked of serve.
 * Enough that each side tells the other of its reposted slots once every
 * few round trips, not at every one (a CREDIT message each way).
 */
#define PING_SLOTS		64
#define PING_SLOTS_BYTES	(16u << 20)	/* fewer slots (not < 2) past this */
#define PING_SERVE_SLOTS	64
#define PING_SLOT_TAG		(1ull << 61)

/*
 * --poll default: the lower p50 in the rig's guest (Documentation/cli.md):
 * busy, a few us lower for every op.  Block only when serve's process
 * echoes (a kernel without receive slots on either end): a spinning
 * client would take a CPU from serve's event loop, which the echo needs.
 */
#define POLL_DEFAULT	(-1)

static void ping_help(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer ping HOST [--port N] [--op send|write|read|fadd|cas] [--size BYTES]\n"
		"                     [--count N] [--warmup N] [--poll busy|block] [--histogram]\n"
		"                     [--transport rdma|tcp|udp] [--key KEY | --key-file F] [--json]\n"
		"\n"
		"Measure round-trip latency to 'rdmaxfer serve' at HOST, one operation at a\n"
		"time: min, p50, p99, p99.9, max and mean in microseconds.\n"
		"\n"
		"  --port N        server port (default %u)\n"
		"  --key KEY       prove the key KEY (a keyring serial or description) to the server\n"
		"  --key-file F    the same with the key in file F (16 to 256 bytes)\n"
		"  --op OP         send (default: the server echoes each message), write or\n"
		"                  read (RDMA into/from the server's window: its device\n"
		"                  answers, its CPU does nothing), fadd or cas (an 8-byte\n"
		"                  RDMA atomic on it: serve --atomic)\n"
		"  --size BYTES    bytes per operation (default %u)\n"
		"  --count N       measured round trips (default %u)\n"
		"  --warmup N      round trips before them, not measured (default %u)\n"
		"  --poll MODE     busy: spin on the completion ring (default); block: sleep\n"
		"                  in REAP (default when serve's process echoes SENDs)\n"
		"  --histogram     add a log2 histogram of the round trips\n"
		"  --transport T   rdma (default), or tcp/udp to the same server\n"
		"  --json          one JSON object on stdout\n",
		RDMAXFER_DEFAULT_PORT, PING_DEFAULT_SIZE, PING_DEFAULT_COUNT, PING_DEFAULT_WARMUP);
}

/* Returns -1 when parsed, else an exit code. */
static int parse_ping(int argc, char **argv, struct ping_opts *o, int *poll_mode)
{
	static const struct option opts[] = {
		OPTION_PORT,
		{ "op", required_argument, NULL, 'o' },
		OPTION_SIZE,
		{ "count", required_argument, NULL, 'c' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "poll", required_argument, NULL, 'P' },
		{ "histogram", no_argument, NULL, 'H' },
		{ "transport", required_argument, NULL, 't' },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct common_opts co;
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->op = BOP_SEND;
	o->transport = BT_RDMA;
	o->count = PING_DEFAULT_COUNT;
	o->warmup = PING_DEFAULT_WARMUP;
	*poll_mode = POLL_DEFAULT;
	common_init(&co, "ping ", ping_help, CO_HOST | CO_SIZE_MIN1);
	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0) {
		switch (c) {
		case 'o':
			if (parse_bench_op(optarg, &o->op))
				return usage_error("ping ", "bad --op '%s' (send, write, read, fadd or cas)",
						   optarg);
			break;
		case 'c':
			if (parse_uint(optarg, PING_MAX_COUNT, &o->count) || !o->count)
				return usage_error("ping ", "bad --count '%s' (1 .. %llu)", optarg,
						   PING_MAX_COUNT);
			break;
		case 'w':
			if (parse_uint(optarg, PING_MAX_COUNT, &o->warmup))
				return usage_error("ping ", "bad --warmup '%s' (0 .. %llu)", optarg,
						   PING_MAX_COUNT);
			break;
		case 'P':
			if (!strcmp(optarg, "busy"))
				*poll_mode = 1;
			else if (!strcmp(optarg, "block"))
				*poll_mode = 0;
			else
				return usage_error("ping ", "bad --poll '%s' (busy or block)", optarg);
			break;
		case 'H':
			o->histogram = true;
			break;
		case 't':
			if (parse_transport(optarg, &o->transport))
				return usage_error("ping ", "bad --transport '%s' (rdma, tcp or udp)", optarg);
			break;
		}
	}
	if (ret >= 0)
		return ret;
	ret = key_resolve(&co, &o->key);
	if (ret >= 0)
		return ret;
	o->host = co.host;
	o->port = co.port;
	o->size = co.have_size ? co.size : PING_DEFAULT_SIZE;
	o->json = co.json;
	if (o->transport != BT_RDMA && o->size > sock_max_msg(o->transport, true))
		return usage_error("ping ", "--size %llu is more than %s carries in one message (%llu bytes)",
				   (unsigned long long)o->size, transport_name(o->transport),
				   (unsigned long long)sock_max_msg(o->transport, true));
	if (bench_op_atomic(o->op) && (o->size != 8 || o->transport != BT_RDMA))
		return usage_error("ping ", "--op %s is an 8-byte RDMA atomic: no --size or --transport",
				   bench_op_name(o->op));
	return -1;
}

/*
 * One round trip: SUBMIT @op, REAP until its completion and (@echo) the
 * RECV event of the echo, or the completion of the slot it landed in
 * (*@slot, when the kernel echoes).  *@ns is the time until the last of
 * what was waited for is returned by REAP.  Returns 0 or -1 (printed).
 */
static int round_trip(struct session *s, struct rdmaxfer_op *op, bool echo, bool busy,
		      uint64_t *ns, struct rdmaxfer_completion *slot)
{
	struct rdmaxfer_completion c[PING_REAP_MAX];
	bool got_op = false, got_echo = !echo;
	uint64_t t0, t1 = 0, t;
	int err, i, n;

	t0 = now_ns();
	while ((err = rdx_submit(s->fd, op, 1, NULL))) {
		if (err == EINTR)
			continue;
		if (err == ENOTCONN || err == ECONNRESET || err == ENODEV)
			bench_fail("connection to %s lost", s->peer);
		else
			bench_fail("SUBMIT to %s failed: %s", s->peer, strerror(err));
		return -1;
	}
	while (!got_op || !got_echo) {
		n = rdx_ring_reap(s->fd, &s->ring, c, PING_REAP_MAX, busy ? 0 : 1000000000);
		if (n < 0) {
			if (n == -EINTR)
				continue;
			bench_fail("REAP failed: %s", strerror(-n));
			return -1;
		}
		t = now_ns();
		if (!n && t - t0 > (uint64_t)SESSION_IDLE_TIMEOUT_S * 1000000000ull) {
			bench_fail("no answer from %s for %d s", s->peer, SESSION_IDLE_TIMEOUT_S);
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (c[i].opcode < RDMAXFER_EVENT_WINDOW && (c[i].user_data & BENCH_OP_TAG)) {
				if (c[i].status) {
					bench_op_failed(s, &c[i], n - i - 1);
					return -1;
				}
				got_op = true;
				if (!echo)
					t1 = t;
			} else if (echo && c[i].opcode == RDMAXFER_EVENT_RECV && !got_echo) {
				got_echo = true;
				t1 = t;
			} else if (echo && c[i].opcode == RDMAXFER_OP_RECV && !got_echo &&
				   (c[i].user_data & PING_SLOT_TAG)) {
				if (c[i].status) {
					bench_op_failed(s, &c[i], n - i - 1);
					return -1;
				}
				*slot = c[i];
				got_echo = true;
				t1 = t;
			} else if (bench_event(s, &c[i])) {
				return -1;
			}
		}
	}
	*ns = t1 - t0;
	return 0;
}

/*
 * An echo landed in our slot @c: check it is what we sent and post the
 * slot again.  Returns 0 or -1 (printed).
 */
static int slot_echo(struct session *s, const struct rdmaxfer_completion *c,
		     const unsigned char *sent, unsigned char *slots, uint32_t slot_len,
		     uint32_t nslots, uint32_t slots_id, uint64_t size)
{
	uint32_t k = (uint32_t)(c->user_data & 0xff);
	struct rdmaxfer_op op = {
		.opcode = RDMAXFER_OP_RECV,
		.conn_id = s->conn_id,
		.buf_id = slots_id,
		.buf_offset = (uint64_t)k * slot_len,
		.length = slot_len,
		.user_data = c->user_data,
	};
	int err;

	if (k >= nslots || c->bytes != size ||
	    memcmp(slots + (uint64_t)k * slot_len, sent, size)) {
		bench_fail("%s echoed a %llu-byte message that is not the %llu bytes we sent (is it 'rdmaxfer serve'?)",
			   s->peer, (unsigned long long)c->bytes, (unsigned long long)size);
		return -1;
	}
	while ((err = rdx_submit(s->fd, &op, 1, NULL)) == EINTR)
		;
	if (err) {
		bench_fail("posting a receive slot to %s failed: %s", s->peer, strerror(err));
		return -1;
	}
	return 0;
}

/*
 * Ask serve for echo slots and post ours (after its answer: answers come
 * the copy way until then).  Returns 0, or -1 (printed).
 */
static int kecho_begin(struct session *s, uint64_t size, unsigned char **slots,
		       uint32_t *slot_len, uint32_t *nslots, uint32_t *slots_id)
{
	struct rdmaxfer_op ops[PING_SLOTS];
	uint32_t k, len = size < 64 ? 64 : (uint32_t)size, n = PING_SLOTS;

	if ((uint64_t)n * len > PING_SLOTS_BYTES)
		n = PING_SLOTS_BYTES / len < 2 ? 2 : PING_SLOTS_BYTES / len;
	if (bench_begin(s, PROTO_BF_KECHO, size, PING_SERVE_SLOTS))
		return -1;
	*slots = map_anon((uint64_t)n * len);
	if (!*slots)
		return -1;
	*slot_len = len;
	*nslots = n;
	if (session_reg(s, *slots, (uint64_t)n * len, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE,
			slots_id))
		return -1;
	for (k = 0; k < n; k++) {
		memset(&ops[k], 0, sizeof(ops[k]));
		ops[k].opcode = RDMAXFER_OP_RECV;
		ops[k].conn_id = s->conn_id;
		ops[k].buf_id = *slots_id;
		ops[k].buf_offset = (uint64_t)k * len;
		ops[k].length = len;
		ops[k].user_data = PING_SLOT_TAG | k;
	}
	if (rdx_submit(s->fd, ops, n, NULL)) {
		bench_fail("posting receive slots to %s failed: %s", s->peer, strerror(errno));
		return -1;
	}
	return 0;
}

/* Take the echo off the connection and check it is what we sent. */
static int take_echo(struct session *s, const unsigned char *sent, unsigned char *rbuf,
		     uint64_t size)
{
	uint32_t len;
	int err;

	while ((err = rdx_recv(s->fd, s->conn_id, rbuf, s->ci.max_send_size, &len))) {
		if (err == EINTR)
			continue;
		bench_fail("RECV from %s failed: %s", s->peer, strerror(err));
		return -1;
	}
	if (len != size || memcmp(rbuf, sent, size)) {
		bench_fail("%s echoed a %u-byte message that is not the %llu bytes we sent (is it 'rdmaxfer serve'?)",
			   s->peer, len, (unsigned long long)size);
		return -1;
	}
	return 0;
}

static int ping_rdma(const struct ping_opts *o, int poll_mode, uint64_t *ns)
{
	struct session s = { .fd = -1 };
	struct rdmaxfer_op op = { 0 };
	unsigned char *buf = NULL, *rbuf = NULL, *slots = NULL;
	uint64_t i, total = o->warmup + o->count, t, msgs, bytes;
	bool echo = o->op == BOP_SEND, kecho = false, busy;
	struct rdmaxfer_completion slot = { 0 };
	uint32_t buf_id, slot_len = 0, nslots = 0, slots_id = 0;
	char a[48], b[48];
	int ret = EXIT_FAIL;

	bench_abort = 0;
	if (session_open(&s, o->host, o->port, o->key))
		goto out;
	/* both kernels have receive slots: serve's kernel echoes */
	kecho = echo && (s.ci.conn_flags & RDMAXFER_CONN_F_RECV_SLOTS);
	busy = poll_mode == POLL_DEFAULT ? !echo || kecho : poll_mode;
	if (busy)
		session_ring(&s, PING_RING_ENTRIES);
	if (echo && o->size > (kecho ? s.ci.max_msg_size : s.ci.max_send_size)) {
		ret = usage_error("ping ", "a SEND of %llu bytes is larger than the largest message %s accepts (%s %u bytes)",
				  (unsigned long long)o->size, s.peer,
				  kecho ? "max_msg_size" : "max_send_size",
				  kecho ? s.ci.max_msg_size : s.ci.max_send_size);
		goto out;
	}
	if (!echo) {
		if (session_wait_window(&s, bench_op_atomic(o->op) ? RDMAXFER_REMOTE_ATOMIC :
					o->op == BOP_WRITE ? RDMAXFER_REMOTE_WRITE :
					RDMAXFER_REMOTE_READ))
			goto out;
		if (o->size > s.window_len || o->size > s.max_op) {
			format_bytes(o->size, a, sizeof(a));
			format_bytes(o->size > s.window_len ? s.window_len : s.max_op, b, sizeof(b));
			fail("a %s of %s does not fit %s %s at %s", bench_op_name(o->op), a,
			     o->size > s.window_len ? "the window of" : "max_op_size", b, s.peer);
			goto out;
		}
	}
	buf = map_anon(o->size);
	if (!buf)
		goto out;
	memset(buf, 0x5a, o->size);	/* never looks like a control message */
	if (session_reg(&s, buf, o->size, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &buf_id))
		goto out;
	if (kecho) {
		if (kecho_begin(&s, o->size, &slots, &slot_len, &nslots, &slots_id))
			goto out;
	} else if (echo) {
		rbuf = malloc(s.ci.max_send_size);
		if (!rbuf) {
			fail("out of memory");
			goto out;
		}
		if (bench_begin(&s, PROTO_BF_ECHO, 0, 0))
			goto out;
	}

	op.opcode = o->op == BOP_WRITE ? RDMAXFER_OP_WRITE :
		    o->op == BOP_READ ? RDMAXFER_OP_READ :
		    o->op == BOP_FADD ? RDMAXFER_OP_FADD :
		    o->op == BOP_CAS ? RDMAXFER_OP_CAS : RDMAXFER_OP_SEND;
	op.compare_add = o->op == BOP_FADD;	/* cas: 0 for 0, the window's 8 bytes */
	op.conn_id = s.conn_id;
	op.buf_id = buf_id;
	op.window_id = echo ? 0 : s.window_id;
	op.length = o->size;
	op.user_data = BENCH_OP_TAG | op.opcode;
	for (i = 0; i < total; i++) {
		if (round_trip(&s, &op, echo, busy, &t, &slot))
			goto out;
		if (kecho && slot_echo(&s, &slot, buf, slots, slot_len, nslots, slots_id,
				       o->size))
			goto out;
		if (echo && !kecho && take_echo(&s, buf, rbuf, o->size))
			goto out;
		if (i >= o->warmup)
			ns[i - o->warmup] = t;
	}
	if (echo && !kecho) {
		if (bench_end(&s, &msgs, &bytes))
			goto out;
		if (msgs != total || bytes != total * o->size) {
			fail("%s received %llu messages (%llu bytes), we sent %llu", s.peer,
			     (unsigned long long)msgs, (unsigned long long)bytes,
			     (unsigned long long)total);
			goto out;
		}
	}
	ret = EXIT_OK;
out:
	session_close(&s);
	if (buf)
		munmap(buf, o->size);
	if (slots)
		munmap(slots, (uint64_t)nslots * slot_len);
	free(rbuf);
	return ret;
}

int cmd_ping(int argc, char **argv)
{
	struct ping_opts o;
	uint64_t *ns;
	int poll_mode;
	int ret;

	ret = parse_ping(argc, argv, &o, &poll_mode);
	if (ret >= 0)
		return ret;
	ns = calloc(o.count, sizeof(*ns));
	if (!ns)
		return fail("out of memory for %llu samples", (unsigned long long)o.count);
	if (o.transport == BT_RDMA) {
		ret = ping_rdma(&o, poll_mode, ns);
	} else {
		ret = sock_ping(&o, ns);
		if (ret)
			ret = ret == EXIT_USAGE ? EXIT_USAGE : EXIT_FAIL;
	}
	if (ret == EXIT_OK) {
		lat_report(&o, ns, o.count);
		if (fflush(stdout))
			ret = fail("writing output failed: %s", strerror(errno));
	}
	free(ns);
	return ret;
}
