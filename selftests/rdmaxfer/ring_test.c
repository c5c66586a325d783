// SPDX-License-Identifier: GPL-2.0
/*
 * ring_test - the completion ring: RDMAXFER_IOC_RING_SETUP and mmap() of
 * struct rdmaxfer_ring.  Completions and events land in the ring without a
 * system call once it is mapped; what may not go there (what comes while
 * the ring is full or not mapped yet, and everything after it) waits in the
 * queue for REAP, flagged RDMAXFER_RING_QUEUED, in order, also across a
 * REAP that faults; REAP returns nothing while the ring holds entries;
 * poll() sees both.  The setup's and mmap()'s bad
 * arguments fail cleanly, a head that userspace scribbled over costs only
 * that file, and a mapping outlives close() of its file (which then stays
 * open until munmap()).
 *
 * Both ends run in this process on one RDMA device (test_env_try()): a
 * "server" file exposes a window, a "client" file WRITEs to it.  Built
 * twice, natively and -m32 (the ring's layout is the same).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#include "kselftest_harness.h"
#include "rdmaxfer_test.h"

#define ULL(x) ((unsigned long long)(x))
#define TMO (20 * SEC)
#define LEN (1024 * 1024UL)
#define PAGE 4096UL

static const char *test_addr4;

FIXTURE(ring) {
	int srv, cli;
	__u32 lid, sconn, cconn;
	unsigned char *smem, *cmem;
	__u32 sbuf, cbuf, win;
	struct rdx_ring r;
};

/* The next entry REAP returns, waiting at most @tmo: 1, 0 on timeout, -errno. */
static int reap1(int fd, struct rdmaxfer_completion *c, __s64 tmo)
{
	return rdx_reap(fd, c, 1, tmo);
}

/* Expose the server's buffer to the client: the window's id. */
static __u32 expose(struct __test_metadata *_metadata, FIXTURE_DATA(ring) *self)
{
	__u32 win = 0;

	ASSERT_EQ(0, rdx_expose(self->srv, self->sconn, self->sbuf, 0, LEN,
				RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE, &win));
	return win;
}

FIXTURE_SETUP(ring)
{
	struct rdmaxfer_completion c;
	struct rdmaxfer_addr peer;
	__u32 reason = 0;
	__u16 port = 0;

	memset(&self->r, 0, sizeof(self->r));
	self->srv = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->srv);
	self->cli = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->cli);
	ASSERT_EQ(0, rdx_listen(self->srv, rdx_addr(test_addr4, 0), 0, &self->lid, &port));
	ASSERT_EQ(0, rdx_connect(self->cli, rdx_addr(test_addr4, port), 10 * SEC, &self->cconn,
				 &reason));
	ASSERT_EQ(0, rdx_accept(self->srv, self->lid, 10 * SEC, &self->sconn, &peer));
	self->smem = map_anon(LEN);
	self->cmem = map_anon(LEN);
	ASSERT_TRUE(self->smem && self->cmem);
	ASSERT_EQ(0, rdx_reg_buf(self->srv, self->smem, LEN,
				 RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &self->sbuf));
	ASSERT_EQ(0, rdx_reg_buf(self->cli, self->cmem, LEN,
				 RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &self->cbuf));
	self->win = expose(_metadata, self);
	for (;;) {
		ASSERT_EQ(1, reap1(self->cli, &c, TMO)) TH_LOG("no WINDOW event");
		if (c.opcode == RDMAXFER_EVENT_WINDOW && c.window_id == self->win)
			break;
	}
}

FIXTURE_TEARDOWN(ring)
{
	rdx_ring_unmap(&self->r);
	close(self->cli);
	close(self->srv);
}

/* Post @n WRITEs of 64 bytes tagged @tag, @tag + 1, ... */
static int writes(FIXTURE_DATA(ring) *self, unsigned int n, __u64 tag)
{
	struct rdmaxfer_op ops[64];
	__u32 posted = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		ops[i] = mkop(RDMAXFER_OP_WRITE, self->cconn, self->cbuf, 64 * i, self->win,
			      64 * i, 64, tag + i);
	return rdx_submit(self->cli, ops, n, &posted);
}

static __u32 ring_tail(const struct rdx_ring *r)
{
	return __atomic_load_n(&r->r->tail, __ATOMIC_ACQUIRE);
}

static __u32 ring_flags(const struct rdx_ring *r)
{
	return __atomic_load_n(&r->r->flags, __ATOMIC_ACQUIRE);
}

/* Wait until the ring's tail reaches @tail: 0, or -1 after @tmo. */
static int wait_tail(const struct rdx_ring *r, __u32 tail, __s64 tmo)
{
	__s64 end = now_ns() + tmo;

	while ((__s32)(ring_tail(r) - tail) < 0) {
		if (now_ns() > end)
			return -1;
		usleep(1000);
	}
	return 0;
}

/* Wait until RDMAXFER_RING_QUEUED is set: 0, or -1 after @tmo. */
static int wait_queued(const struct rdx_ring *r, __s64 tmo)
{
	__s64 end = now_ns() + tmo;

	while (!(ring_flags(r) & RDMAXFER_RING_QUEUED)) {
		if (now_ns() > end)
			return -1;
		usleep(1000);
	}
	return 0;
}

/* mmap() of @fd as asked: 0 if it worked (the mapping is gone again), else errno. */
static int map_errno(int fd, size_t len, int prot, int flags, off_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, len);
	return 0;
}

static short poll_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* Bad arguments of RING_SETUP fail and set nothing up; a second one is EBUSY. */
TEST_F(ring, setup_arguments)
{
	static const __u32 bad[] = { 0, 3, 6, 100, 8192, 1u << 31, 0xffffffff };
	struct rdmaxfer_ring_setup rs;
	struct rdmaxfer_info info;
	unsigned int i;

	ASSERT_EQ(0, rdx_get_info(self->cli, &info));
	EXPECT_TRUE(info.features & RDMAXFER_FEATURE_RING);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&rs, 0, sizeof(rs));
		rs.size = sizeof(rs);
		rs.entries = bad[i];
		EXPECT_EQ(EINVAL, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs))
			TH_LOG("%u entries", bad[i]);
	}
	memset(&rs, 0, sizeof(rs));
	rs.size = sizeof(rs);
	rs.entries = info.max_pending * 2;
	EXPECT_EQ(EINVAL, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	rs.entries = 16;
	rs.__reserved = 1;
	EXPECT_EQ(EINVAL, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	rs.__reserved = 0;
	rs.flags = 1;
	EXPECT_EQ(EINVAL, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	rs.flags = 0;
	rs.size = 12;
	EXPECT_EQ(EINVAL, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	/* none of those made a ring: no mapping */
	EXPECT_EQ(EINVAL, map_errno(self->cli, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, 0));

	rs.size = sizeof(rs);
	rs.entries = info.max_pending;
	ASSERT_EQ(0, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	EXPECT_EQ((256 + 48ULL * info.max_pending + PAGE - 1) & ~(PAGE - 1), rs.mmap_size);
	rs.entries = 1;
	EXPECT_EQ(EBUSY, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
}

/* mmap() of the ring: exactly the ring, shared, not executable. */
TEST_F(ring, mmap_arguments)
{
	struct rdmaxfer_ring_setup rs = { .size = sizeof(rs), .entries = 64 };
	struct rdmaxfer_ring *r;

	ASSERT_EQ(0, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	ASSERT_EQ(PAGE * 1, rs.mmap_size);
	EXPECT_EQ(EINVAL, map_errno(self->cli, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, 0));
	EXPECT_EQ(EINVAL, map_errno(self->cli, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, PAGE));
	EXPECT_EQ(EINVAL, map_errno(self->cli, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0));
	EXPECT_EQ(EPERM, map_errno(self->cli, PAGE, PROT_READ | PROT_EXEC, MAP_SHARED, 0));
	/* the server's file has no ring */
	EXPECT_EQ(EINVAL, map_errno(self->srv, PAGE, PROT_READ, MAP_SHARED, 0));

	r = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->cli, 0);
	ASSERT_TRUE(r != MAP_FAILED) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_EQ(63, r->mask);
	/* never executable, not even later */
	EXPECT_NE(0, mprotect(r, PAGE, PROT_READ | PROT_EXEC));
	EXPECT_EQ(0, r->head);
	EXPECT_EQ(0, r->tail);
	EXPECT_EQ(0, r->flags);
	/* twice is fine: the same pages */
	self->r.r = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->cli, 0);
	ASSERT_TRUE(self->r.r != MAP_FAILED);
	self->r.size = PAGE;
	self->r.mask = 63;
	ASSERT_EQ(0, writes(self, 1, 7));
	ASSERT_EQ(0, wait_tail(&self->r, 1, TMO));
	EXPECT_EQ(7, r->entries[0].user_data);
	EXPECT_EQ(1, r->tail);
	munmap(r, PAGE);
}

/* Completions land in the ring in order; nothing waits for REAP; poll() sees them. */
TEST_F(ring, completions_in_ring)
{
	struct rdmaxfer_completion c[16];
	unsigned int i;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 16, &self->r));
	EXPECT_EQ(0, poll_in(self->cli));
	ASSERT_EQ(0, writes(self, 8, 100));
	ASSERT_EQ(0, wait_tail(&self->r, 8, TMO));
	EXPECT_EQ(POLLIN, poll_in(self->cli));
	EXPECT_EQ(0, ring_flags(&self->r));
	/* the ring's entries go first: REAP has nothing */
	EXPECT_EQ(0, rdx_reap(self->cli, c, 16, 0));
	ASSERT_EQ(8, rdx_ring_reap(self->cli, &self->r, c, 16, 0));
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(100 + i, c[i].user_data);
		EXPECT_EQ(RDMAXFER_OP_WRITE, c[i].opcode);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(64, c[i].bytes);
		EXPECT_EQ(self->cconn, c[i].conn_id);
	}
	EXPECT_EQ(8, self->r.r->head);
	EXPECT_EQ(0, poll_in(self->cli));
	EXPECT_EQ(0, rdx_ring_reap(self->cli, &self->r, c, 16, 0));

	/* around the ring several times */
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, writes(self, 12, 1000 * i));
		ASSERT_EQ(0, wait_tail(&self->r, 8 + 12 * (i + 1), TMO));
		ASSERT_EQ(12, rdx_ring_reap(self->cli, &self->r, c, 16, 0));
		EXPECT_EQ(1000 * i, c[0].user_data);
		EXPECT_EQ(1000 * i + 11, c[11].user_data);
	}
}

/* A blocking rdx_ring_reap() wakes for an entry of the ring. */
TEST_F(ring, reap_waits_for_the_ring)
{
	struct rdmaxfer_completion c;
	struct pollfd p = { .fd = self->cli, .events = POLLIN };

	ASSERT_EQ(0, rdx_ring_map(self->cli, 4, &self->r));
	EXPECT_EQ(0, rdx_ring_reap(self->cli, &self->r, &c, 1, 50 * MS));
	ASSERT_EQ(0, writes(self, 1, 5));
	ASSERT_EQ(1, rdx_ring_reap(self->cli, &self->r, &c, 1, TMO));
	EXPECT_EQ(5, c.user_data);
	ASSERT_EQ(0, writes(self, 1, 6));
	ASSERT_EQ(1, poll(&p, 1, 20000));
	ASSERT_EQ(1, rdx_ring_reap(self->cli, &self->r, &c, 1, 0));
	EXPECT_EQ(6, c.user_data);
}

/*
 * A ring of 2 and 8 completions: 2 in the ring, 6 queued (flagged); REAP
 * gives nothing until the ring is read, then the 6 in order; then the ring
 * takes completions again.
 */
TEST_F(ring, overflow_keeps_order)
{
	struct rdmaxfer_completion c[8];
	unsigned int i;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 2, &self->r));
	ASSERT_EQ(0, writes(self, 8, 200));
	ASSERT_EQ(0, wait_tail(&self->r, 2, TMO));
	ASSERT_EQ(0, wait_queued(&self->r, TMO));
	/* wait for the 8th: REAP returns nothing before the ring is read */
	usleep(200 * 1000);
	EXPECT_EQ(0, rdx_reap(self->cli, c, 8, 0));
	EXPECT_EQ(2, ring_tail(&self->r));
	ASSERT_EQ(2, rdx_ring_reap(self->cli, &self->r, c, 8, 0));
	EXPECT_EQ(200, c[0].user_data);
	EXPECT_EQ(201, c[1].user_data);
	/* the queue now, in order, some at a time */
	ASSERT_EQ(3, rdx_ring_reap(self->cli, &self->r, c, 3, TMO));
	EXPECT_TRUE(ring_flags(&self->r) & RDMAXFER_RING_QUEUED);
	ASSERT_EQ(3, rdx_ring_reap(self->cli, &self->r, c + 3, 8, TMO));
	for (i = 0; i < 6; i++)
		EXPECT_EQ(202 + i, c[i].user_data);
	EXPECT_EQ(0, ring_flags(&self->r));
	EXPECT_EQ(2, ring_tail(&self->r));
	/* open again */
	ASSERT_EQ(0, writes(self, 1, 300));
	ASSERT_EQ(0, wait_tail(&self->r, 3, TMO));
	ASSERT_EQ(1, rdx_ring_reap(self->cli, &self->r, c, 8, 0));
	EXPECT_EQ(300, c[0].user_data);
}

/*
 * A peer's events come through the ring too, in order with completions;
 * while the ring is full they wait in the queue with what follows them.
 */
TEST_F(ring, peer_events_keep_their_place)
{
	struct rdmaxfer_completion c[4];
	__u32 win2, win3;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 2, &self->r));
	win2 = expose(_metadata, self);
	ASSERT_EQ(0, wait_tail(&self->r, 1, TMO)) TH_LOG("no WINDOW event in the ring");
	EXPECT_EQ(RDMAXFER_EVENT_WINDOW, self->r.r->entries[0].opcode);
	EXPECT_EQ(win2, self->r.r->entries[0].window_id);
	ASSERT_EQ(0, writes(self, 1, 400));
	ASSERT_EQ(0, wait_tail(&self->r, 2, TMO));
	/* full: the next window's event and a completion after it are queued */
	win3 = expose(_metadata, self);
	ASSERT_EQ(0, wait_queued(&self->r, TMO)) TH_LOG("the WINDOW event was not queued");
	ASSERT_EQ(0, writes(self, 1, 401));
	usleep(200 * 1000);
	ASSERT_EQ(2, rdx_ring_reap(self->cli, &self->r, c, 4, 0));
	EXPECT_EQ(win2, c[0].window_id);
	EXPECT_EQ(400, c[1].user_data);
	ASSERT_EQ(2, rdx_ring_reap(self->cli, &self->r, c, 4, TMO));
	EXPECT_EQ(RDMAXFER_EVENT_WINDOW, c[0].opcode);
	EXPECT_EQ(win3, c[0].window_id);
	EXPECT_EQ(RDMAXFER_OP_WRITE, c[1].opcode);
	EXPECT_EQ(401, c[1].user_data);
	EXPECT_EQ(0, ring_flags(&self->r));
	ASSERT_EQ(0, writes(self, 1, 402));
	ASSERT_EQ(0, wait_tail(&self->r, 3, TMO));
}

/*
 * A ring set up but not mapped takes nothing (nobody could read it):
 * completions are reaped as without a ring, flagged for when it is mapped;
 * from the mapping on, they land in the ring.
 */
TEST_F(ring, unmapped_ring_takes_nothing)
{
	struct rdmaxfer_ring_setup rs = { .size = sizeof(rs), .entries = 8 };
	struct rdmaxfer_completion c[4];

	ASSERT_EQ(0, rdx_ioctl(self->cli, RDMAXFER_IOC_RING_SETUP, &rs));
	ASSERT_EQ(0, writes(self, 1, 800));
	ASSERT_EQ(1, rdx_reap(self->cli, c, 4, TMO));
	EXPECT_EQ(800, c[0].user_data);
	ASSERT_EQ(0, writes(self, 1, 801));
	usleep(200 * 1000);
	self->r.r = mmap(NULL, rs.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->cli, 0);
	ASSERT_TRUE(self->r.r != MAP_FAILED);
	self->r.size = rs.mmap_size;
	self->r.mask = 7;
	EXPECT_EQ(0, self->r.r->tail);
	EXPECT_TRUE(ring_flags(&self->r) & RDMAXFER_RING_QUEUED);
	ASSERT_EQ(0, writes(self, 1, 802));
	usleep(200 * 1000);
	EXPECT_EQ(0, self->r.r->tail) TH_LOG("a completion overtook a queued one");
	ASSERT_EQ(2, rdx_ring_reap(self->cli, &self->r, c, 4, TMO));
	EXPECT_EQ(801, c[0].user_data);
	EXPECT_EQ(802, c[1].user_data);
	ASSERT_EQ(0, writes(self, 1, 803));
	ASSERT_EQ(0, wait_tail(&self->r, 1, TMO));
	EXPECT_EQ(803, self->r.r->entries[0].user_data);
}

/* A REAP whose copy faults puts everything back, and the order holds. */
TEST_F(ring, faulted_reap_keeps_order)
{
	struct rdmaxfer_completion c[8];
	unsigned int i;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 2, &self->r));
	ASSERT_EQ(0, writes(self, 6, 900));
	ASSERT_EQ(0, wait_tail(&self->r, 2, TMO));
	ASSERT_EQ(2, rdx_ring_reap(self->cli, &self->r, c, 2, 0));
	usleep(200 * 1000);
	EXPECT_EQ(-EFAULT, rdx_reap(self->cli, (void *)16, 8, 0));
	ASSERT_EQ(0, writes(self, 1, 906));
	usleep(200 * 1000);
	EXPECT_EQ(2, ring_tail(&self->r)) TH_LOG("a completion overtook queued ones");
	ASSERT_EQ(5, rdx_ring_reap(self->cli, &self->r, c, 8, TMO));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(902 + i, c[i].user_data);
}

/*
 * A head that makes no sense is a full ring: completions wait in the queue
 * (and REAP keeps them while the ring seems to hold entries); a sane head
 * makes them reapable, and the file works on.
 */
TEST_F(ring, scribbled_head_costs_only_this_file)
{
	struct rdmaxfer_completion c[4];
	__s64 end;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 4, &self->r));
	self->r.r->head = 12345;
	self->r.r->tail = 99;		/* the kernel never reads it */
	self->r.r->mask = 0;
	ASSERT_EQ(0, writes(self, 2, 500));
	ASSERT_EQ(0, wait_queued(&self->r, TMO));
	usleep(200 * 1000);
	EXPECT_EQ(0, rdx_reap(self->cli, c, 4, 0));
	self->r.r->head = 0;
	ASSERT_EQ(2, rdx_reap(self->cli, c, 4, TMO));
	EXPECT_EQ(500, c[0].user_data);
	EXPECT_EQ(501, c[1].user_data);
	/* the kernel's tail is its own: the entry goes to index 0, tail is 1 again */
	self->r.r->tail = 50;
	ASSERT_EQ(0, writes(self, 1, 502));
	end = now_ns() + TMO;
	while (ring_tail(&self->r) == 50 && now_ns() < end)
		usleep(1000);
	EXPECT_EQ(1, ring_tail(&self->r));
	EXPECT_EQ(502, self->r.r->entries[0].user_data);
}

/*
 * close() of a mapped file does not release it: the connection lives until
 * munmap(), then goes down (the server sees DISCONNECTED).
 */
TEST_F(ring, mapping_keeps_the_file)
{
	struct rdmaxfer_completion c;
	__s64 end;
	int got = 0;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 4, &self->r));
	ASSERT_EQ(0, writes(self, 1, 600));
	ASSERT_EQ(0, wait_tail(&self->r, 1, TMO));
	close(self->cli);
	self->cli = -1;
	EXPECT_EQ(600, self->r.r->entries[0].user_data);
	end = now_ns() + 500 * MS;
	while (now_ns() < end) {	/* (the CONNECTED of the setup may come) */
		if (reap1(self->srv, &c, 100 * MS) == 1)
			EXPECT_NE(RDMAXFER_EVENT_DISCONNECTED, c.opcode)
				TH_LOG("the connection went down while its file was mapped");
	}
	rdx_ring_unmap(&self->r);
	end = now_ns() + TMO;
	while (!got && now_ns() < end) {
		if (reap1(self->srv, &c, 100 * MS) == 1 && c.opcode == RDMAXFER_EVENT_DISCONNECTED)
			got = 1;
	}
	EXPECT_TRUE(got) TH_LOG("no DISCONNECTED after munmap()");
}

/* A forked child shares the ring: what it reads is gone for the parent. */
TEST_F(ring, fork_shares_the_ring)
{
	struct rdmaxfer_completion c;
	int status;
	pid_t pid;

	ASSERT_EQ(0, rdx_ring_map(self->cli, 4, &self->r));
	ASSERT_EQ(0, writes(self, 2, 700));
	ASSERT_EQ(0, wait_tail(&self->r, 2, TMO));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(rdx_ring_reap(self->cli, &self->r, &c, 1, 0) == 1 && c.user_data == 700 ?
		      0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(1, self->r.r->head);
	ASSERT_EQ(1, rdx_ring_reap(self->cli, &self->r, &c, 4, 0));
	EXPECT_EQ(701, c.user_data);
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
	if (rdx_get_info(fd, &info) || !(info.features & RDMAXFER_FEATURE_RING)) {
		ksft_print_header();
		ksft_exit_skip("the module has no completion ring (RDMAXFER_FEATURE_RING)\n");
	}
	close(fd);
	return test_harness_run(argc, argv);
}
