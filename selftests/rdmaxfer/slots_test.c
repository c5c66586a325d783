// SPDX-License-Identifier: GPL-2.0
/*
 * slots_test - two-sided messages into receive slots: RDMAXFER_OP_RECV
 * posts a slot in a registered buffer, a SEND goes zero-copy from the
 * sender's buffer into the peer's next slot it fits (SEND_WITH_IMM), and the
 * slot completes with the length and the immediate.
 *
 * Both ends run in this process on one RDMA device (test_env_try()): a
 * "server" file that listens and a "client" file that connects, as in
 * xfer_test.  Every byte that lands is checked, and so are the bytes around
 * it.  Built twice, natively and -m32 (compat_ioctl).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#include "kselftest_harness.h"
#include "rdmaxfer_test.h"

#define ULL(x) ((unsigned long long)(x))
#define KiB 1024ULL
#define MiB (1024 * KiB)
#define TMO (20 * SEC)

#define SLEN (8 * MiB)		/* each side's buffer */
#define TAG_SLOT 0x510700000000ULL
#define TAG_SEND 0x5e4d00000000ULL

static const char *test_addr4;
static unsigned int windows_seen;	/* RDMAXFER_EVENT_WINDOW events next_op() passed */

FIXTURE(slots) {
	int srv, cli;
	__u32 lid, sconn, cconn;
	struct rdmaxfer_info info;
	struct rdmaxfer_conn_info ci;
	unsigned char *smem, *cmem;
	__u32 sbuf, cbuf;
};

FIXTURE_SETUP(slots)
{
	struct rdmaxfer_addr peer;
	__u32 reason = 0;
	__u16 port = 0;

	self->srv = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->srv);
	self->cli = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->cli);
	ASSERT_EQ(0, rdx_get_info(self->srv, &self->info));
	ASSERT_EQ(0, rdx_listen(self->srv, rdx_addr(test_addr4, 0), 0, &self->lid, &port));
	ASSERT_EQ(0, rdx_connect(self->cli, rdx_addr(test_addr4, port), 10 * SEC, &self->cconn,
				 &reason));
	ASSERT_EQ(0, rdx_accept(self->srv, self->lid, 10 * SEC, &self->sconn, &peer));
	ASSERT_EQ(0, rdx_query_conn(self->cli, self->cconn, &self->ci));
	self->smem = map_anon(SLEN);
	self->cmem = map_anon(SLEN);
	ASSERT_TRUE(self->smem && self->cmem);
	ASSERT_EQ(0, rdx_reg_buf(self->srv, self->smem, SLEN,
				 RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &self->sbuf));
	ASSERT_EQ(0, rdx_reg_buf(self->cli, self->cmem, SLEN,
				 RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &self->cbuf));
}

FIXTURE_TEARDOWN(slots)
{
	close(self->cli);
	close(self->srv);
}

/* A RECV (slot) operation. */
static struct rdmaxfer_op slot_op(__u32 conn, __u32 buf, __u64 off, __u64 len, __u64 tag)
{
	return mkop(RDMAXFER_OP_RECV, conn, buf, off, 0, 0, len, tag);
}

static struct rdmaxfer_op send_op(__u32 conn, __u32 buf, __u64 off, __u64 len, __u32 imm,
				  __u64 tag)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_SEND, conn, buf, off, 0, 0, len, tag);

	op.imm_data = imm;
	return op;
}

static int submit1(int fd, struct rdmaxfer_op op)
{
	__u32 posted = 0;

	return rdx_submit(fd, &op, 1, &posted);
}

/* The next operation completion on @fd (events skipped): 1, 0 on timeout, -errno. */
static int next_op(int fd, struct rdmaxfer_completion *c, __s64 tmo)
{
	__s64 end = now_ns() + tmo;
	int n;

	for (;;) {
		__s64 left = end - now_ns();

		n = rdx_reap(fd, c, 1, left > 0 ? left : 0);
		if (n <= 0)
			return n;
		if (c->opcode < 0x100)
			return 1;
		if (c->opcode == RDMAXFER_EVENT_WINDOW)
			windows_seen++;
		if (left <= 0)
			return 0;
	}
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

/*
 * Post a slot of @slen at @soff on the server, SEND @len bytes from @coff on
 * the client with @imm, and check both completions, the bytes and the
 * bytes around them.
 */
static void one_message(struct __test_metadata *_metadata, FIXTURE_DATA(slots) *self,
			__u64 soff, __u64 slen, __u64 coff, __u64 len, __u32 imm)
{
	struct rdmaxfer_completion c;
	__u64 before = soff ? soff - 1 : 0;

	memset(self->smem, 0xa5, SLEN);
	fill(self->cmem + coff, len, imm);
	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, soff, slen,
						TAG_SLOT | imm)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, coff, len, imm,
						TAG_SEND | imm)))
		TH_LOG("SEND of %llu bytes at %llu", ULL(len), ULL(coff));
	ASSERT_EQ(1, next_op(self->cli, &c, TMO));
	EXPECT_EQ(TAG_SEND | imm, c.user_data);
	EXPECT_EQ(RDMAXFER_OP_SEND, c.opcode);
	EXPECT_EQ(0, c.status) TH_LOG("SEND status %d wc %u", c.status, c.wc_status);
	EXPECT_EQ(len, c.bytes);
	ASSERT_EQ(1, next_op(self->srv, &c, TMO));
	EXPECT_EQ(TAG_SLOT | imm, c.user_data);
	EXPECT_EQ(RDMAXFER_OP_RECV, c.opcode);
	EXPECT_EQ(self->sconn, c.conn_id);
	EXPECT_EQ(0, c.status) TH_LOG("RECV status %d wc %u", c.status, c.wc_status);
	EXPECT_EQ(len, c.bytes);
	EXPECT_EQ(imm, c.imm_data);
	EXPECT_EQ(0, memcmp(self->smem + soff, self->cmem + coff, len))
		TH_LOG("%llu bytes at slot offset %llu differ", ULL(len), ULL(soff));
	if (soff)
		EXPECT_EQ(0xa5, self->smem[before]);
	if (soff + slen < SLEN)
		EXPECT_EQ(0xa5, self->smem[soff + slen]);
	if (len < slen)
		EXPECT_EQ(0xa5, self->smem[soff + len]);
}

TEST_F(slots, info_and_flags)
{
	struct rdmaxfer_conn_info ci;

	EXPECT_TRUE(self->info.features & RDMAXFER_FEATURE_RECV_SLOTS);
	EXPECT_LE(64, self->info.min_recv_size);
	EXPECT_LE(1, self->info.max_recv_slots);
	EXPECT_TRUE(self->ci.conn_flags & RDMAXFER_CONN_F_RECV_SLOTS);
	EXPECT_FALSE(self->ci.conn_flags & RDMAXFER_CONN_F_PEER_SLOTS);
	EXPECT_LE(4096, self->ci.max_msg_size);
	ASSERT_EQ(0, rdx_query_conn(self->srv, self->sconn, &ci));
	EXPECT_TRUE(ci.conn_flags & RDMAXFER_CONN_F_RECV_SLOTS);
}

/* Lengths from 1 byte up, odd ones, around page and segment sizes. */
TEST_F_TIMEOUT(slots, sizes, 300)
{
	static const __u64 lens[] = { 1, 2, 7, 63, 64, 65, 1000, 4095, 4096, 4097, 8191,
				      65535, 65536, 65537, 262143, 1 * MiB, 1 * MiB + 3,
				      3 * MiB + 1 };
	unsigned int i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		__u64 len = lens[i], slen = len < 64 ? 64 : len;

		if (len > self->ci.max_msg_size)
			continue;
		one_message(_metadata, self, 0, slen, 0, len, 1000 + i);
	}
}

/*
 * A message of max_msg_size (as much of it as the buffers hold) goes at
 * any offset: at 0, at a page's last byte, and at the last byte before
 * the segment boundaries of a local registration on Soft-iWARP (127 and
 * 255 pages: segments of 255 pages every 127, rdmaxfer_lmr_one_mr()) and
 * on Soft-RoCE (511 pages).  SUBMIT refuses one byte more.
 */
TEST_F_TIMEOUT(slots, max_msg_at_any_offset, 300)
{
	static const __u64 offs[] = { 0, 4095, 127 * 4096 - 1, 255 * 4096 - 1, 511 * 4096 - 1 };
	__u64 max = self->ci.max_msg_size;
	unsigned int i;

	TH_LOG("max_msg_size %llu", ULL(max));
	ASSERT_LE(4096, max);
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		__u64 len = max < SLEN - offs[i] ? max : SLEN - offs[i];

		one_message(_metadata, self, offs[i], len, offs[i], len, 2000 + i);
	}
	/* one byte more (where the buffer would hold it: else nothing to tell) */
	if (max + 1 <= SLEN)
		EXPECT_EQ(EINVAL, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, max + 1, 0)));
}

/* Slots and sources at every kind of offset; a message shorter than its slot. */
TEST_F_TIMEOUT(slots, offsets, 300)
{
	static const __u64 offs[] = { 0, 1, 7, 63, 4095, 4096, 4099, 1 * MiB - 1, 2 * MiB + 5 };
	unsigned int i, j = 0;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		one_message(_metadata, self, offs[i], 9000, offs[(i + 3) % 9], 8999 - i, j++);
		one_message(_metadata, self, offs[i], 100, offs[(i + 5) % 9], 37, j++);
	}
}

/*
 * A slot shorter than the message is passed over and stays posted: slots
 * of 64, 4096 and 64 bytes take a message of 100 bytes in the 4096 one,
 * then two of 10 bytes in the 64-byte ones, one each, in the order they
 * were sent.  Which 64-byte slot comes first is not fixed: the first went
 * back on the queue behind the second when it was passed over, but a
 * control message (a WANT of the sender, out of credits after passing over
 * 32 control buffers) may take the second and put it back behind the
 * first (the debug kernel's timing showed it).
 */
TEST_F(slots, short_slot_passed_over)
{
	struct rdmaxfer_completion c;
	unsigned int i, small = 0;

	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 64, 0)));
	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 4096, 4096, 1)));
	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 8192, 64, 2)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 100, 7, 10)));
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 10, 8, 11)));
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 10, 9, 12)));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, next_op(self->srv, &c, TMO));
		if (!i) {
			EXPECT_EQ(1, c.user_data) TH_LOG("100 bytes landed in slot %llu",
							 ULL(c.user_data));
		} else {
			ASSERT_TRUE(c.user_data == 0 || c.user_data == 2)
				TH_LOG("message %u landed in slot %llu", i, ULL(c.user_data));
			EXPECT_EQ(0, small & (1u << c.user_data)) TH_LOG("slot %llu twice",
									 ULL(c.user_data));
			small |= 1u << c.user_data;
		}
		EXPECT_EQ(7 + i, c.imm_data);
		EXPECT_EQ(i ? 10 : 100, c.bytes);
		EXPECT_EQ(0, c.status);
	}
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, next_op(self->cli, &c, TMO));
		EXPECT_EQ(10 + i, c.user_data);
		EXPECT_EQ(0, c.status);
	}
}

/*
 * One slot behind all the control buffers of a fresh connection: every
 * message must pass over them, and the receiver keeps back those its skips
 * took, so the sender runs short of credits exactly in front of the slot
 * and must ask (WANT) for more; none of the 100 messages may get stuck.
 */
TEST_F_TIMEOUT(slots, one_slot_behind_the_control_buffers, 180)
{
	struct rdmaxfer_completion c;
	unsigned int i;

	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 4096, i)));
		if (!i)
			ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
		fill(self->cmem, 1000, i);
		ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 1000, i,
							TAG_SEND | i)));
		ASSERT_EQ(1, next_op(self->srv, &c, TMO)) TH_LOG("message %u stuck", i);
		EXPECT_EQ(i, c.user_data);
		EXPECT_EQ(i, c.imm_data);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(0, memcmp(self->smem, self->cmem, 1000));
		ASSERT_EQ(1, next_op(self->cli, &c, TMO));
		EXPECT_EQ(TAG_SEND | i, c.user_data);
		EXPECT_EQ(0, c.status);
	}
}

struct blocked {
	int fd;
	struct rdmaxfer_op op;
	int ret;
	int done;
};

static void *blocked_send(void *arg)
{
	struct blocked *b = arg;

	b->ret = submit1(b->fd, b->op);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * With every slot taken the next SEND waits in SUBMIT (no RNR, no error),
 * and goes as soon as the receiver posts a slot again; a signal ends the
 * wait with EINTR and nothing posted.
 */
TEST_F_TIMEOUT(slots, credits_exhausted_and_returned, 120)
{
	struct blocked b = { .fd = self->cli };
	struct rdmaxfer_completion c;
	unsigned int i, seen = 0;
	pthread_t t;

	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, i * 4096, 4096,
							i)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 4000, i, i)));
	/* in order; each slot once (one the module's messages used went behind) */
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(1, next_op(self->srv, &c, TMO));
		EXPECT_EQ(i, c.imm_data);
		ASSERT_GT(8, c.user_data);
		EXPECT_EQ(0, seen & (1u << c.user_data)) TH_LOG("slot %llu twice",
								ULL(c.user_data));
		seen |= 1u << c.user_data;
		EXPECT_EQ(0, c.status);
		ASSERT_EQ(1, next_op(self->cli, &c, TMO));
		EXPECT_EQ(0, c.status);
	}
	b.op = send_op(self->cconn, self->cbuf, 0, 4000, 99, 99);
	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_send, &b));
	usleep(500 * 1000);
	EXPECT_EQ(0, __atomic_load_n(&b.done, __ATOMIC_ACQUIRE)) TH_LOG("SEND did not wait");
	EXPECT_EQ(0, next_op(self->cli, &c, 200 * MS));
	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 4096, 42)));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, b.ret);
	ASSERT_EQ(1, next_op(self->srv, &c, TMO));
	EXPECT_EQ(42, c.user_data);
	EXPECT_EQ(99, c.imm_data);
	ASSERT_EQ(1, next_op(self->cli, &c, TMO));
	EXPECT_EQ(99, c.user_data);
	EXPECT_EQ(0, c.status);
}

/* SUBMIT of a batch in a thread (it may wait for the peer's slots). */
struct batch {
	int fd;
	const struct rdmaxfer_op *ops;
	__u32 n, posted;
	int ret;
};

static void *batch_submit(void *arg)
{
	struct batch *b = arg;

	b->ret = rdx_submit(b->fd, b->ops, b->n, &b->posted);
	return NULL;
}

#define RUN_MSGS	48
#define RUN_SLOTS	20
#define RUN_FADDS	(RUN_MSGS / 3)
#define RUN_WORD	(SLEN - 4096)	/* the FADDs' word in the server's buffer */

/* Does the connection's device do atomics? */
static int slots_atomics(FIXTURE_DATA(slots) *self)
{
	struct rdmaxfer_device_info di;

	return !rdx_query_device(self->cli, self->ci.dev_index, &di) &&
	       (di.caps & RDMAXFER_DEVICE_CAP_ATOMIC);
}

/*
 * Many SENDs in one SUBMIT: the module posts runs of SENDs and atomics
 * with bottom halves off (xfer.c, "Runs").  48 messages of 1 to 4096 bytes
 * at odd offsets, a FADD after every third, go into 20 slots of 4 KiB that
 * the server posts again as they fill, so the SUBMIT runs out of the
 * peer's slots and credits in the middle of runs and waits there.  Every
 * message lands once, in order, whole, with its immediate; each FADD sees
 * the value the one before it left; every operation completes once, and
 * SUBMIT says all were posted.
 */
TEST_F_TIMEOUT(slots, many_sends_in_one_submit, 180)
{
	struct rdmaxfer_op ops[RUN_MSGS + RUN_FADDS];
	struct batch b = { .fd = self->cli, .ops = ops };
	__u64 off[RUN_MSGS], len[RUN_MSGS], coff = 1, done = 0, fadds = 0;
	__u64 *word = (__u64 *)(self->smem + RUN_WORD);
	struct rdmaxfer_completion c;
	unsigned int i, k, n = 0, nfadd = 0;
	__u32 win = 0;
	pthread_t t;

	if (slots_atomics(self)) {
		ASSERT_EQ(0, rdx_expose(self->srv, self->sconn, self->sbuf, RUN_WORD, 4096,
					RDMAXFER_REMOTE_ATOMIC, &win));
		do {
			ASSERT_EQ(1, rdx_reap(self->cli, &c, 1, TMO));
		} while (c.opcode != RDMAXFER_EVENT_WINDOW || c.window_id != win);
		nfadd = RUN_FADDS;
	}
	memset(self->smem, 0xa5, RUN_SLOTS * 4096);
	for (i = 0; i < RUN_SLOTS; i++)
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, i * 4096ULL,
							4096, i)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	for (i = 0; i < RUN_MSGS; i++) {
		len[i] = 1 + (i * 613ULL) % 4096;
		off[i] = coff;
		coff += len[i] + 1 + i % 7;
		fill(self->cmem + off[i], len[i], i);
		ops[n++] = send_op(self->cconn, self->cbuf, off[i], len[i], 1000 + i, TAG_SEND | i);
		if (win && i % 3 == 2) {
			ops[n] = mkop(RDMAXFER_OP_FADD, self->cconn, 0, 0, win, 0, 8,
				      TAG_SEND | 0x8000 | i / 3);
			ops[n++].compare_add = 1;
		}
	}
	b.n = n;
	ASSERT_EQ(0, pthread_create(&t, NULL, batch_submit, &b));
	for (i = 0; i < RUN_MSGS; i++) {
		ASSERT_EQ(1, next_op(self->srv, &c, TMO)) TH_LOG("message %u never came", i);
		EXPECT_EQ(0, c.status) TH_LOG("message %u: status %d wc %u", i, c.status,
					      c.wc_status);
		EXPECT_EQ(1000 + i, c.imm_data) TH_LOG("message %u came as immediate %u", i,
						       c.imm_data);
		ASSERT_GT(RUN_SLOTS, c.user_data);
		k = (unsigned int)c.user_data;
		EXPECT_EQ(len[i], c.bytes);
		EXPECT_EQ(0, memcmp(self->smem + k * 4096ULL, self->cmem + off[i], len[i]))
			TH_LOG("message %u (%llu bytes) differs in slot %u", i, ULL(len[i]), k);
		/* a control message (<= 64 bytes) may have used the slot before */
		if (len[i] >= 64 && len[i] < 4096)
			EXPECT_EQ(0xa5, self->smem[k * 4096ULL + len[i]]);
		memset(self->smem + k * 4096ULL, 0xa5, 4096);
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, k * 4096ULL,
							4096, k)));
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(n, b.posted);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("completion %u missing", i);
		EXPECT_EQ(0, c.status) TH_LOG("op %#llx: status %d wc %u", ULL(c.user_data),
					      c.status, c.wc_status);
		ASSERT_EQ(TAG_SEND, c.user_data & ~0xffffULL);
		k = (unsigned int)(c.user_data & 0xffff);
		if (k & 0x8000) {
			k &= 0x7fff;
			EXPECT_EQ(RDMAXFER_OP_FADD, c.opcode);
			ASSERT_GT(nfadd, k);
			EXPECT_EQ(0, fadds & (1ULL << k)) TH_LOG("FADD %u completed twice", k);
			fadds |= 1ULL << k;
			EXPECT_EQ(k, c.value) TH_LOG("FADD %u saw %llu", k, ULL(c.value));
			continue;
		}
		EXPECT_EQ(RDMAXFER_OP_SEND, c.opcode);
		ASSERT_GT(RUN_MSGS, k);
		EXPECT_EQ(0, done & (1ULL << k)) TH_LOG("SEND %u completed twice", k);
		done |= 1ULL << k;
		EXPECT_EQ(len[k], c.bytes);
	}
	EXPECT_EQ(nfadd, *word);
	EXPECT_EQ(0, next_op(self->cli, &c, 200 * MS)) TH_LOG("a completion too many");
	if (!nfadd)
		TH_LOG("the device has no atomics: SENDs only");
}

static void nop(int sig)
{
	(void)sig;
}

TEST_F_TIMEOUT(slots, waiting_send_is_interruptible, 60)
{
	struct sigaction sa = { .sa_handler = nop };
	struct itimerval it = { .it_value = { .tv_usec = 300 * 1000 } };
	struct rdmaxfer_completion c;

	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 64, 1)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	/* 100 bytes fit no slot: the SEND waits, until the signal */
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(EINTR, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 100, 1, 1)));
	EXPECT_EQ(0, next_op(self->cli, &c, 300 * MS));
	/* nothing broke: a message that fits goes */
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 64, 2, 2)));
	ASSERT_EQ(1, next_op(self->srv, &c, TMO));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(2, c.imm_data);
}

/* Closing completes every posted slot once, with ECANCELED; then DEREG works. */
TEST_F(slots, close_flushes_slots)
{
	struct rdmaxfer_completion c;
	unsigned int i, seen = 0;

	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, i * 256, 256,
							1 + i)));
	EXPECT_EQ(EBUSY, rdx_dereg_buf(self->srv, self->sbuf));
	ASSERT_EQ(0, rdx_close(self->srv, self->sconn));
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(1, next_op(self->srv, &c, TMO));
		EXPECT_EQ(RDMAXFER_OP_RECV, c.opcode);
		EXPECT_EQ(-ECANCELED, c.status);
		EXPECT_EQ(0, c.bytes);
		ASSERT_TRUE(c.user_data >= 1 && c.user_data <= 16);
		EXPECT_EQ(0, seen & (1u << c.user_data)) TH_LOG("slot %llu twice", ULL(c.user_data));
		seen |= 1u << c.user_data;
	}
	EXPECT_EQ(0, next_op(self->srv, &c, 300 * MS));
	EXPECT_EQ(0, rdx_dereg_buf(self->srv, self->sbuf));
}

/* A buffer used for SENDs and slots deregisters once nothing is in flight. */
TEST_F(slots, dereg_after_use)
{
	struct rdmaxfer_stats st;

	one_message(_metadata, self, 0, 4096, 0, 4096, 5);
	ASSERT_EQ(0, rdx_dereg_buf(self->cli, self->cbuf));
	ASSERT_EQ(0, rdx_dereg_buf(self->srv, self->sbuf));
	ASSERT_EQ(0, rdx_stats(self->srv, &st));
	EXPECT_EQ(0, st.pinned_bytes);
	EXPECT_EQ(0, st.num_bufs);
	ASSERT_EQ(0, rdx_stats(self->cli, &st));
	EXPECT_EQ(0, st.pinned_bytes);
}

TEST_F(slots, bad_slots_are_refused)
{
	unsigned char *ro = map_anon(65536);
	struct rdmaxfer_op op;
	__u32 robuf, i;
	int r = 0;

	ASSERT_TRUE(ro != NULL);
	ASSERT_EQ(0, rdx_reg_buf(self->srv, ro, 65536, RDMAXFER_BUF_READ, &robuf));
	EXPECT_EQ(EINVAL, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 63, 0)));
	EXPECT_EQ(EINVAL, submit1(self->srv, slot_op(self->sconn, self->sbuf, SLEN - 64, 65, 0)));
	EXPECT_EQ(EINVAL, submit1(self->srv, slot_op(self->sconn, self->sbuf, ~0ULL - 10, 64, 0)));
	EXPECT_EQ(EINVAL, submit1(self->srv, slot_op(self->sconn, robuf, 0, 4096, 0)));
	EXPECT_EQ(ENOENT, submit1(self->srv, slot_op(self->sconn, 9999, 0, 4096, 0)));
	EXPECT_EQ(ENOENT, submit1(self->srv, slot_op(9999, self->sbuf, 0, 4096, 0)));
	op = slot_op(self->sconn, self->sbuf, 0, 4096, 0);
	op.flags = 4;		/* RDMAXFER_RECV_ECHO is 1, _SINK 2: no other flag */
	EXPECT_EQ(EINVAL, submit1(self->srv, op));
	EXPECT_EQ(EINVAL, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0,
						     (__u64)self->ci.max_msg_size + 1, 0)));
	/* at most max_recv_slots posted */
	for (i = 0; i < self->info.max_recv_slots; i++) {
		r = submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 64, i));
		if (r)
			break;
	}
	EXPECT_EQ(0, r) TH_LOG("slot %u: %s", i, strerror(r));
	EXPECT_EQ(ENOSPC, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 64, i)));
	/* before the peer posts slots, a SEND is bounded by max_send_size */
	EXPECT_EQ(EINVAL, submit1(self->srv, send_op(self->sconn, self->sbuf, 0,
						     self->info.max_send_size + 1, 0, 0)));
	munmap(ro, 65536);
}

/*
 * SENDs before the peer posts slots take the copy path (EVENT_RECV, then
 * RECV); once it has, they land in slots, after those.
 */
TEST_F(slots, copy_path_until_slots)
{
	struct rdmaxfer_completion c;
	unsigned char got[64];
	__u32 len = 0;

	memcpy(self->cmem, "before the slots", 17);
	memcpy(self->cmem + 100, "into a slot", 12);
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 17, 0, 1)));
	ASSERT_EQ(1, next_op(self->cli, &c, TMO));
	EXPECT_EQ(0, c.status);
	do {
		ASSERT_EQ(1, rdx_reap(self->srv, &c, 1, TMO));
	} while (c.opcode == RDMAXFER_EVENT_CONNECTED);
	EXPECT_EQ(RDMAXFER_EVENT_RECV, c.opcode);
	ASSERT_EQ(0, rdx_recv(self->srv, self->sconn, got, sizeof(got), &len));
	EXPECT_EQ(17, len);
	EXPECT_STREQ("before the slots", (char *)got);
	ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, 0, 64, 2)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 100, 12, 3, 3)));
	ASSERT_EQ(1, next_op(self->srv, &c, TMO));
	EXPECT_EQ(2, c.user_data);
	EXPECT_EQ(12, c.bytes);
	EXPECT_STREQ("into a slot", (char *)self->smem);
}

/*
 * WRITEs, then the first RECV of a buffer, in one SUBMIT.  That RECV
 * registers its buffer (a local registration, posted on an empty send
 * queue: rdmaxfer_post_reg()), so the WRITEs chained before it must be
 * posted first: chained but not posted, their send-queue room would never
 * come back and the SUBMIT would wait for ever.  Every WRITE completes once
 * and lands, and the slot then takes the peer's SEND.
 */
TEST_F_TIMEOUT(slots, writes_then_first_recv_in_one_submit, 120)
{
	enum { NW = 32, WLEN = 64 * 1024, SOFF = 4 * MiB, MLEN = 100 };
	struct rdmaxfer_op ops[NW + 1];
	struct rdmaxfer_completion c;
	unsigned char *fresh = map_anon(4096);
	__u32 win, fbuf, posted = 0;
	__u64 seen = 0;
	unsigned int i;

	ASSERT_TRUE(fresh != NULL);
	ASSERT_EQ(0, rdx_reg_buf(self->cli, fresh, 4096, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE,
				 &fbuf));
	ASSERT_EQ(0, rdx_expose(self->srv, self->sconn, self->sbuf, 0, NW * WLEN,
				RDMAXFER_REMOTE_WRITE, &win));
	do {
		ASSERT_EQ(1, rdx_reap(self->cli, &c, 1, TMO));
	} while (c.opcode != RDMAXFER_EVENT_WINDOW || c.window_id != win);
	memset(self->smem, 0, NW * WLEN);
	fill(self->cmem, NW * WLEN, 9);
	for (i = 0; i < NW; i++)
		ops[i] = mkop(RDMAXFER_OP_WRITE, self->cconn, self->cbuf, i * WLEN, win, i * WLEN,
			      WLEN, i);
	ops[NW] = slot_op(self->cconn, fbuf, 0, 4096, TAG_SLOT);
	ASSERT_EQ(0, rdx_submit(self->cli, ops, NW + 1, &posted));
	ASSERT_EQ(NW + 1, posted);
	for (i = 0; i < NW; i++) {
		ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("%u WRITEs completed", i);
		EXPECT_EQ(RDMAXFER_OP_WRITE, c.opcode);
		EXPECT_EQ(0, c.status) TH_LOG("WRITE %llu: status %d", ULL(c.user_data), c.status);
		ASSERT_GT(NW, c.user_data);
		EXPECT_EQ(0, seen & (1ULL << c.user_data)) TH_LOG("WRITE %llu twice",
								   ULL(c.user_data));
		seen |= 1ULL << c.user_data;
	}
	EXPECT_EQ(0, memcmp(self->smem, self->cmem, NW * WLEN));

	fill(self->smem + SOFF, MLEN, 5);
	ASSERT_EQ(0, wait_peer_slots(self->srv, self->sconn, TMO));
	ASSERT_EQ(0, submit1(self->srv, send_op(self->sconn, self->sbuf, SOFF, MLEN, 77,
						TAG_SEND)));
	ASSERT_EQ(1, next_op(self->srv, &c, TMO));
	EXPECT_EQ(0, c.status);
	ASSERT_EQ(1, next_op(self->cli, &c, TMO));
	EXPECT_EQ(RDMAXFER_OP_RECV, c.opcode);
	EXPECT_EQ(TAG_SLOT, c.user_data);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(MLEN, c.bytes);
	EXPECT_EQ(77, c.imm_data);
	EXPECT_EQ(0, memcmp(fresh, self->smem + SOFF, MLEN));
}

/*
 * Both sides post slots and play ping-pong, reposting one slot per message:
 * the credits each side announces keep flowing, and the module's own
 * messages (CREDIT, ADVERT) travel in slots too (a slot one of them took
 * goes back to the end of the queue: the completion names the slot).
 */
TEST_F_TIMEOUT(slots, ping_pong_both_ways, 300)
{
	struct rdmaxfer_completion c;
	unsigned int i, nwin = 0;
	__u32 win;

	windows_seen = 0;
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, i * 4096, 4096,
							i)));
		ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, i * 4096, 4096,
							i)));
	}
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	for (i = 0; i < 2000; i++) {
		__u32 s;

		self->cmem[SLEN / 2] = (unsigned char)i;
		ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, SLEN / 2, 64, i,
							TAG_SEND)));
		ASSERT_EQ(1, next_op(self->srv, &c, TMO)) TH_LOG("ping %u", i);
		ASSERT_EQ(RDMAXFER_OP_RECV, c.opcode);
		s = c.user_data;
		ASSERT_GT(4, s);
		ASSERT_EQ(i, c.imm_data);
		ASSERT_EQ((unsigned char)i, self->smem[s * 4096]);
		ASSERT_EQ(0, submit1(self->srv, send_op(self->sconn, self->sbuf, s * 4096, 64, i,
							TAG_SEND)));
		ASSERT_EQ(0, submit1(self->srv, slot_op(self->sconn, self->sbuf, s * 4096, 4096,
							s)));
		/* the server's SEND completes; skip to the client's slot */
		ASSERT_EQ(1, next_op(self->srv, &c, TMO));
		ASSERT_EQ(TAG_SEND, c.user_data);
		ASSERT_EQ(0, c.status);
		ASSERT_EQ(1, next_op(self->cli, &c, TMO));
		while (c.user_data == TAG_SEND) {
			ASSERT_EQ(0, c.status);
			ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("pong %u", i);
		}
		ASSERT_EQ(RDMAXFER_OP_RECV, c.opcode);
		s = c.user_data;
		ASSERT_GT(4, s);
		ASSERT_EQ(i, c.imm_data);
		ASSERT_EQ((unsigned char)i, self->cmem[s * 4096]);
		ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, s * 4096, 4096,
							s)));
		/* now and then a window: its ADVERT rides the same receive queue */
		if (i % 100 == 50) {
			ASSERT_EQ(0, rdx_expose(self->srv, self->sconn, self->sbuf, SLEN - 65536,
						65536, RDMAXFER_REMOTE_READ, &win));
			nwin++;
		}
	}
	/* every window came as an event */
	while (windows_seen < nwin && next_op(self->cli, &c, 2 * SEC) >= 0 &&
	       windows_seen < nwin)
		;
	EXPECT_EQ(nwin, windows_seen);
}

static struct rdmaxfer_op echo_slot_op(__u32 conn, __u32 buf, __u64 off, __u64 len, __u64 tag)
{
	struct rdmaxfer_op op = slot_op(conn, buf, off, len, tag);

	op.flags = RDMAXFER_RECV_ECHO;
	return op;
}

/*
 * Echo slots: the server's kernel sends every message back by itself, in
 * order, same bytes and immediate; the server's file sees no completion.
 */
TEST_F_TIMEOUT(slots, echo_slots_answer_by_themselves, 180)
{
	struct rdmaxfer_completion c;
	struct rdmaxfer_stats st;
	unsigned int i, s;

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, submit1(self->srv, echo_slot_op(self->sconn, self->sbuf, i * 65536,
							     65536, 100 + i)));
		ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, i * 65536, 65536,
							i)));
	}
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, wait_peer_slots(self->srv, self->sconn, TMO));
	for (i = 0; i < 300; i++) {
		__u64 len = 1 + (i * 977) % 65536;

		fill(self->cmem + SLEN / 2, len, i);
		ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, SLEN / 2, len,
							0xec000000 | i, TAG_SEND)));
		do {
			ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("echo %u", i);
			ASSERT_EQ(0, c.status) TH_LOG("echo %u: opcode %u", i, c.opcode);
		} while (c.user_data == TAG_SEND);
		ASSERT_EQ(RDMAXFER_OP_RECV, c.opcode);
		s = c.user_data;
		ASSERT_GT(4, s);
		ASSERT_EQ(len, c.bytes);
		ASSERT_EQ(0xec000000 | i, c.imm_data);
		ASSERT_EQ(0, memcmp(self->cmem + s * 65536, self->cmem + SLEN / 2, len))
			TH_LOG("echo %u of %llu bytes differs", i, ULL(len));
		ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, s * 65536, 65536,
							s)));
	}
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS));
	ASSERT_EQ(0, rdx_stats(self->srv, &st));
	EXPECT_EQ(300, st.file.recv_msgs);
	/* the echo slots go with the connection, each once, in queue order */
	ASSERT_EQ(0, rdx_close(self->srv, self->sconn));
	for (i = 0, s = 0; i < 4; i++) {
		ASSERT_EQ(1, next_op(self->srv, &c, TMO));
		EXPECT_EQ(-ECANCELED, c.status);
		ASSERT_TRUE(c.user_data >= 100 && c.user_data < 104);
		EXPECT_EQ(0, s & (1u << (c.user_data - 100))) TH_LOG("slot %llu twice",
								     ULL(c.user_data));
		s |= 1u << (c.user_data - 100);
	}
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS));
}

/*
 * The smallest echo setup: one echo slot, one client slot, so every round
 * trip leaves each side with hardly a credit; 500 round trips, none stuck.
 */
TEST_F_TIMEOUT(slots, echo_with_one_slot_each, 180)
{
	struct rdmaxfer_completion c;
	unsigned int i;

	ASSERT_EQ(0, submit1(self->srv, echo_slot_op(self->sconn, self->sbuf, 0, 64, 100)));
	ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, 0, 64, 1)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, wait_peer_slots(self->srv, self->sconn, TMO));
	for (i = 0; i < 500; i++) {
		self->cmem[4096] = (unsigned char)i;
		ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 4096, 8, i,
							TAG_SEND)));
		do {
			ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("round trip %u stuck", i);
			ASSERT_EQ(0, c.status);
		} while (c.user_data == TAG_SEND);
		ASSERT_EQ(1, c.user_data);
		ASSERT_EQ(8, c.bytes);
		ASSERT_EQ(i, c.imm_data);
		ASSERT_EQ((unsigned char)i, self->cmem[0]);
		ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, 0, 64, 1)));
	}
}

/*
 * A client that stops taking its echoes: the echoes wait in the server's
 * kernel, then the client's own SENDs wait (EINTR by a signal); nothing is
 * lost: once the client posts its slots again every echo arrives, in order.
 *
 * The client has one slot, the server four echo slots: the first message
 * is echoed and its slot posted again, the next three wait in theirs for
 * a client slot, a fifth takes the first slot again; the sixth SEND must
 * wait.  Before that a SEND may also wait, for a while: the first one
 * skipped the server's control buffers, and the credits come back in a
 * CREDIT message, a round trip through both kernels' completion handlers
 * (slow on a loaded debug kernel).  So an EINTR before five messages went
 * only means "not yet", fewer than 20 of them (9.5 s).
 */
#define ECHO_SRV_SLOTS	4

TEST_F_TIMEOUT(slots, echo_to_a_client_that_stops_reading, 180)
{
	struct sigaction sa = { .sa_handler = nop };
	struct itimerval it = { .it_value = { .tv_usec = 500 * 1000 } };
	unsigned int i, sent = 0, got = 0, early = 0;
	struct rdmaxfer_completion c;
	int r;

	for (i = 0; i < ECHO_SRV_SLOTS; i++)
		ASSERT_EQ(0, submit1(self->srv, echo_slot_op(self->sconn, self->sbuf, i * 4096, 4096,
							     100 + i)));
	ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, 0, 4096, 0)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	ASSERT_EQ(0, wait_peer_slots(self->srv, self->sconn, TMO));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	trace_note("slots echo_to_a_client_that_stops_reading: SENDs start\n");
	for (;;) {
		ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
		r = submit1(self->cli, send_op(self->cconn, self->cbuf, SLEN / 2, 64, sent,
					       TAG_SEND));
		if (r == EINTR && sent > ECHO_SRV_SLOTS)
			break;
		if (r == EINTR) {
			if (early == 19)
				trace_note("slots echo_to_a_client_that_stops_reading: SEND %u waited 10 s\n",
					   sent);
			ASSERT_GT(20, ++early) TH_LOG("SEND %u waited 10 s", sent);
			continue;
		}
		ASSERT_EQ(0, r) TH_LOG("SEND %u", sent);
		sent++;
		ASSERT_GT(64, sent) TH_LOG("the client's SENDs never had to wait");
	}
	TH_LOG("%u SENDs went, %u waits before the last", sent, early);
	EXPECT_EQ(ECHO_SRV_SLOTS + 1, sent);
	/* take the echoes one slot at a time: all of them, in order */
	while (got < sent) {
		ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("echo %u of %u", got, sent);
		if (c.user_data == TAG_SEND) {
			ASSERT_EQ(0, c.status) TH_LOG("a SEND: wc %u", c.wc_status);
			continue;
		}
		ASSERT_EQ(RDMAXFER_OP_RECV, c.opcode) TH_LOG("echo %u: tag %llu", got,
							    (unsigned long long)c.user_data);
		ASSERT_EQ(0, c.status) TH_LOG("echo %u: wc %u", got, c.wc_status);
		ASSERT_EQ(got, c.imm_data);
		ASSERT_EQ(64, c.bytes);
		got++;
		ASSERT_EQ(0, submit1(self->cli, slot_op(self->cconn, self->cbuf, 0, 4096, 0)));
	}
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS)) TH_LOG("the server: tag %llu, status %d",
							       (unsigned long long)c.user_data,
							       c.status);
}

TEST_F(slots, echo_and_sink_flags_only_on_recv)
{
	struct rdmaxfer_op op = send_op(self->cconn, self->cbuf, 0, 8, 0, 0);
	struct rdmaxfer_completion c;

	op.flags = RDMAXFER_RECV_ECHO;
	EXPECT_EQ(EINVAL, submit1(self->cli, op));
	op.flags = RDMAXFER_RECV_SINK;
	EXPECT_EQ(EINVAL, submit1(self->cli, op));
	op = echo_slot_op(self->sconn, self->sbuf, 0, 64, 0);
	op.flags |= RDMAXFER_RECV_SINK;		/* one or the other */
	EXPECT_EQ(EINVAL, submit1(self->srv, op));
	op.flags = 4;
	EXPECT_EQ(EINVAL, submit1(self->srv, op));
	/* nothing was posted */
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS));
	EXPECT_EQ(0, next_op(self->cli, &c, 200 * MS));
}

static struct rdmaxfer_op sink_slot_op(__u32 conn, __u32 buf, __u64 off, __u64 len, __u32 imm,
				       __u64 tag)
{
	struct rdmaxfer_op op = slot_op(conn, buf, off, len, tag);

	op.flags = RDMAXFER_RECV_SINK;
	op.imm_data = imm;
	return op;
}

#define SINK_IMM 0x51d00d

/*
 * Sink slots: the server's kernel drops every message with the slots'
 * immediate, counts it (QUERY_CONN, STATS) and posts the slot again; the
 * server's file sees none of them, however many more than the slots.  A
 * message with another immediate completes a slot as usual, bytes in
 * place; the others go with the connection, each once.
 */
TEST_F_TIMEOUT(slots, sink_slots_drop_their_messages, 180)
{
	struct rdmaxfer_completion c;
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_stats st;
	__u64 bytes = 0, len;
	unsigned int i, s, seen = 0;

	if (!(self->info.features & RDMAXFER_FEATURE_SINK_SLOTS))
		SKIP(return, "the module has no sink slots (RDMAXFER_FEATURE_SINK_SLOTS)");
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, submit1(self->srv, sink_slot_op(self->sconn, self->sbuf, i * 65536,
							     65536, SINK_IMM, 100 + i)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	for (i = 0; i < 300; i++) {
		len = 1 + (i * 977) % 65536;
		bytes += len;
		ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, len, SINK_IMM,
							TAG_SEND | i)));
		ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("SEND %u", i);
		ASSERT_EQ(0, c.status) TH_LOG("SEND %u: wc %u", i, c.wc_status);
		ASSERT_EQ(TAG_SEND | i, c.user_data);
	}
	/* every SEND is done: its slot completion was handled before */
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS));
	ASSERT_EQ(0, rdx_query_conn(self->srv, self->sconn, &ci));
	EXPECT_EQ(300, ci.sink_msgs);
	EXPECT_EQ(bytes, ci.sink_bytes);
	ASSERT_EQ(0, rdx_stats(self->srv, &st));
	EXPECT_EQ(300, st.file.recv_msgs);
	EXPECT_EQ(bytes, st.file.recv_bytes);
	EXPECT_EQ(0, st.file.ops[RDMAXFER_OP_RECV]);
	ASSERT_EQ(0, rdx_query_conn(self->cli, self->cconn, &ci));
	EXPECT_EQ(0, ci.sink_msgs);

	/* another immediate: completes a slot, as any slot */
	fill(self->cmem, 5000, 7);
	ASSERT_EQ(0, submit1(self->cli, send_op(self->cconn, self->cbuf, 0, 5000, 7, TAG_SEND)));
	ASSERT_EQ(1, next_op(self->srv, &c, TMO));
	ASSERT_EQ(RDMAXFER_OP_RECV, c.opcode);
	ASSERT_EQ(0, c.status);
	EXPECT_EQ(5000, c.bytes);
	EXPECT_EQ(7, c.imm_data);
	s = c.user_data - 100;
	ASSERT_GT(4, s);
	EXPECT_EQ(0, memcmp(self->smem + s * 65536, self->cmem, 5000));
	seen |= 1u << s;
	ASSERT_EQ(0, rdx_query_conn(self->srv, self->sconn, &ci));
	EXPECT_EQ(300, ci.sink_msgs);

	/* the other three go with the connection, each once */
	ASSERT_EQ(0, rdx_close(self->srv, self->sconn));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, next_op(self->srv, &c, TMO));
		EXPECT_EQ(-ECANCELED, c.status);
		s = c.user_data - 100;
		ASSERT_GT(4, s);
		EXPECT_EQ(0, seen & (1u << s)) TH_LOG("slot %u twice", s);
		seen |= 1u << s;
	}
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS));
}

/*
 * One sink slot, a client far ahead: its SENDs wait for the slot to come
 * back (credits follow the reposts), none is lost, none takes the slot away.
 */
TEST_F_TIMEOUT(slots, sink_with_one_slot, 180)
{
	struct rdmaxfer_op ops[64];
	struct rdmaxfer_completion c;
	struct rdmaxfer_conn_info ci;
	unsigned int i, done = 0, round;
	__u32 posted;
	__s64 end;

	if (!(self->info.features & RDMAXFER_FEATURE_SINK_SLOTS))
		SKIP(return, "the module has no sink slots (RDMAXFER_FEATURE_SINK_SLOTS)");
	ASSERT_EQ(0, submit1(self->srv, sink_slot_op(self->sconn, self->sbuf, 0, 4096, SINK_IMM,
						     100)));
	ASSERT_EQ(0, wait_peer_slots(self->cli, self->cconn, TMO));
	for (round = 0; round < 8; round++) {
		for (i = 0; i < 64; i++)
			ops[i] = send_op(self->cconn, self->cbuf, 0, 64 + i, SINK_IMM, TAG_SEND);
		ASSERT_EQ(0, rdx_submit(self->cli, ops, 64, &posted));
		ASSERT_EQ(64, posted);
		while (done < (round + 1) * 64) {
			ASSERT_EQ(1, next_op(self->cli, &c, TMO)) TH_LOG("SEND %u", done);
			ASSERT_EQ(0, c.status);
			done++;
		}
	}
	/*
	 * A SEND's completion says its bytes left (on iWARP: into TCP), not
	 * that the receiver's completion handler has counted them yet.
	 */
	end = now_ns() + TMO;
	do {
		ASSERT_EQ(0, rdx_query_conn(self->srv, self->sconn, &ci));
	} while (ci.sink_msgs < 8 * 64 && now_ns() < end && !usleep(10000));
	EXPECT_EQ(8 * 64, ci.sink_msgs);
	EXPECT_EQ(8 * (64 * 64 + 63 * 64 / 2), ci.sink_bytes);
	EXPECT_EQ(0, next_op(self->srv, &c, 200 * MS));
}

/* Counters: RECV completions and their bytes. */
TEST_F(slots, stats_count_slots)
{
	struct rdmaxfer_stats st;

	one_message(_metadata, self, 0, 8192, 0, 5000, 1);
	ASSERT_EQ(0, rdx_stats(self->srv, &st));
	EXPECT_EQ(1, st.file.ops[RDMAXFER_OP_RECV]);
	EXPECT_EQ(5000, st.file.bytes[RDMAXFER_OP_RECV]);
	EXPECT_EQ(1, st.file.recv_msgs);
	ASSERT_EQ(0, rdx_stats(self->cli, &st));
	EXPECT_EQ(1, st.file.ops[RDMAXFER_OP_SEND]);
	EXPECT_EQ(5000, st.file.bytes[RDMAXFER_OP_SEND]);
}

int main(int argc, char **argv)
{
	struct rdmaxfer_info info = { 0 };
	int fd;

	TEST_ENV_OR_EXIT();
	test_addr4 = test_env()->addr;
	fd = open(DEVPATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ksft_print_header();
		ksft_exit_skip(DEVPATH " missing: rdmaxfer.ko is not loaded\n");
	}
	if (rdx_get_info(fd, &info) || !(info.features & RDMAXFER_FEATURE_RECV_SLOTS)) {
		ksft_print_header();
		ksft_exit_skip("the module has no receive slots (RDMAXFER_FEATURE_RECV_SLOTS)\n");
	}
	close(fd);
	return test_harness_run(argc, argv);
}
