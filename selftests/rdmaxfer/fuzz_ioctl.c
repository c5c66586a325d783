// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_ioctl - seeded random sequences of every /dev/rdmaxfer ioctl from
 * several threads, to find what crashes, warns, leaks or hangs the kernel.
 *
 *   fuzz_ioctl [-s SEED] [-t SECONDS] [-j THREADS] [-a ADDR]
 *
 * Every thread repeatedly picks an action: an ioctl of any command with
 * arguments drawn from boundary values (0, 1, -1, a page +- 1, huge lengths,
 * 2^31, 2^63), from ids the file handed out a moment ago (or that another
 * thread closed), from a few open files (some closed and reopened under the
 * others' feet); or something around the ioctls: munmap or remap a region
 * after it was registered, fork with registered buffers (the child writes to
 * them and issues ioctls on the inherited file), a garbage command number or
 * size, mmap() of a completion ring that RING_SETUP made (any size, offset
 * and protection; what may be written is scribbled over, the mapping kept
 * now and then past the file's close()).  Connections go to this host's
 * own listeners and to closed ports, with one of two keys (logon keys of
 * this process), another id or none, and listeners get allow-lists drawn
 * from valid prefixes and from garbage: the key handshake and its
 * refusals run all along.
 *
 * Memory the kernel may write to is always the fuzzer's own scratch space
 * (followed by a PROT_NONE page, so an overlong array faults instead of
 * running into the heap), or PROT_NONE, or kernel addresses: a random
 * pointer can fail (EFAULT) but never corrupts the fuzzer.  Registered regions are plain
 * anonymous or memfd memory that nothing else uses.
 *
 * It prints its seed first (rerun with -s to replay the same choices; thread
 * interleaving differs), then per command the count of each result, and
 * exits 0 if the kernel survived and the module still moves data afterwards
 * (a fresh connection, one WRITE, checked).  Whether the kernel log stayed
 * clean, and whether anything stayed pinned or allocated, is the runner's
 * part (dmesg_check.sh, the rig's post-check, kmemleak on the debug kernel).
 * Output is KTAP: two results, "survived" and "works_after".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/keyctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#include "rdmaxfer_test.h"

#define DEVPATH		"/dev/" RDMAXFER_DEVNAME
#define U64_PTR(p)	((__u64)(uintptr_t)(p))
#define PAGE		4096UL
#define NFDS		4
#define NIDS		64
#define NREGIONS	8
#define REGION_MAX	(1024 * 1024UL)
#define NCMDS		(RDMAXFER_CMD_RING_SETUP + 1)
#define MAXERR		160
#define SCRATCH		(64 * 1024)
#define SEC		1000000000LL

static const char *cmd_names[NCMDS] = {
	"GET_INFO", "LIST_DEVICES", "QUERY_DEVICE", "QUERY_PORT", "LISTEN", "ACCEPT",
	"CONNECT", "CLOSE", "REG_BUF", "DEREG_BUF", "EXPOSE", "REVOKE", "SUBMIT", "REAP",
	"RECV", "QUERY_CONN", "STATS", "RING_SETUP",
};

static const char *addr4;	/* -a, else the test device's (test_env_try()) */
static const char *silent = "198.51.100.99";	/* nobody answers: the device's silent one */
static volatile int stop;
static __u64 seed;

/*
 * What the threads share: a few files, each with the ids it handed out
 * lately by kind (and the peer windows its REAPs reported), the ports of
 * listeners, the regions.  Ids are mostly taken from the same file and of
 * the right kind, so that calls get past the lookups into the real work.
 */
enum { K_LISTENER, K_CONN, K_BUF, K_WIN, K_RWIN, NKINDS };
#define NIDS_KIND	(NIDS / 4)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot {
	int fd;
	__u32 ids[NKINDS][NIDS_KIND];
	unsigned int n[NKINDS];
} slots[NFDS];
static __u16 ports[8];			/* ports of listeners (some closed since) */
static unsigned int nport;
static struct region {
	unsigned char *p;
	size_t len;
} regions[NREGIONS];
static unsigned char *guard;		/* PROT_NONE: a pointer that always faults */

/* per command: how often each errno (0 = success, MAXERR-1 = other) */
static unsigned long counts[NCMDS][MAXERR];
static unsigned long garbage, forks, remaps, rings;

struct rng {
	__u64 s;
};

static __u64 rnd(struct rng *r)
{
	/* splitmix64 */
	__u64 z = (r->s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static unsigned int below(struct rng *r, unsigned int n)
{
	return (unsigned int)(rnd(r) % n);
}

/* a boundary value, or now and then an arbitrary one */
static __u64 edge(struct rng *r)
{
	static const __u64 v[] = {
		0, 1, 2, 7, 8, 4095, 4096, 4097, 8191, 65536, 1 << 20, (1 << 20) + 1,
		2 << 20, 0x7fffffffULL, 0x80000000ULL, 0xffffffffULL, 0x100000000ULL,
		1ULL << 40, 0x7fffffffffffffffULL, 0x8000000000000000ULL, ~0ULL, ~0ULL - 4095,
	};

	if (below(r, 5) == 0)
		return rnd(r) >> below(r, 64);
	return v[below(r, sizeof(v) / sizeof(v[0]))];
}

/* a small length: mostly what a real caller would use */
static __u64 small_len(struct rng *r)
{
	switch (below(r, 4)) {
	case 0:
		return edge(r);
	case 1:
		return 8;
	default:
		return 1 + below(r, 2 * PAGE);
	}
}

/* an id of @kind: mostly one @slot's file handed out, else anything */
static __u32 pick_id(struct rng *r, unsigned int slot, unsigned int kind)
{
	struct slot *sl;
	__u32 id = 1;
	unsigned int n;

	switch (below(r, 12)) {
	case 0:
		return (__u32)edge(r);
	case 1:
		return below(r, 8);
	case 2:		/* another file's, or another kind */
		slot = below(r, NFDS);
		kind = below(r, NKINDS);
		break;
	default:
		break;
	}
	pthread_mutex_lock(&lock);
	sl = &slots[slot];
	n = sl->n[kind] < NIDS_KIND ? sl->n[kind] : NIDS_KIND;
	if (n)
		id = sl->ids[kind][below(r, n)];
	pthread_mutex_unlock(&lock);
	return id + (below(r, 8) == 0 ? below(r, 3) : 0);
}

static void note_id(unsigned int slot, unsigned int kind, __u32 id)
{
	struct slot *sl = &slots[slot];

	pthread_mutex_lock(&lock);
	sl->ids[kind][sl->n[kind]++ % NIDS_KIND] = id;
	pthread_mutex_unlock(&lock);
}

static int slot_fd(unsigned int slot)
{
	int fd;

	pthread_mutex_lock(&lock);
	fd = slots[slot].fd;
	pthread_mutex_unlock(&lock);
	return fd;
}

/* a user pointer the kernel may read from or write to */
static __u64 pick_ptr(struct rng *r, unsigned char *scratch)
{
	switch (below(r, 10)) {
	case 0:
		return 0;
	case 1:
		return U64_PTR(guard);
	case 2:
		return 0xffff888000000000ULL;	/* kernel space: EFAULT */
	case 3:
		return U64_PTR(scratch + SCRATCH - below(r, 64));	/* runs off the end */
	default:
		return U64_PTR(scratch + below(r, 256));
	}
}

/* an address and length to register: regions, their edges, or nonsense */
static void pick_mem(struct rng *r, __u64 *addr, __u64 *len)
{
	struct region g;

	pthread_mutex_lock(&lock);
	g = regions[below(r, NREGIONS)];
	pthread_mutex_unlock(&lock);
	switch (below(r, 8)) {
	case 0:
		*addr = U64_PTR(guard);
		*len = PAGE;
		return;
	case 1:
		*addr = edge(r);
		*len = edge(r);
		return;
	case 2:	/* past the end of the region */
		*addr = U64_PTR(g.p) + g.len - PAGE;
		*len = 2 * PAGE;
		return;
	default:
		*addr = U64_PTR(g.p) + below(r, (unsigned int)g.len / 2);
		*len = 1 + below(r, (unsigned int)(g.len / 2));
		return;
	}
}

static int do_ioctl(int fd, unsigned int nr, void *arg)
{
	int ret = rdx_ioctl(fd, _IO(RDMAXFER_TYPE, nr), arg);

	if (nr < NCMDS)
		__atomic_fetch_add(&counts[nr][ret < MAXERR ? ret : MAXERR - 1], 1,
				   __ATOMIC_RELAXED);
	return ret;
}

/* The size field: mostly right, sometimes short, long (zero tail) or absurd. */
static __u32 pick_size(struct rng *r, __u32 real)
{
	switch (below(r, 16)) {
	case 0:
		return below(r, real);
	case 1:
		return real + 8;
	case 2:
		return (__u32)edge(r);
	default:
		return real;
	}
}

static void fuzz_submit(struct rng *r, unsigned int slot, unsigned char *scratch)
{
	struct rdmaxfer_op ops[8];
	struct rdmaxfer_submit s;
	/* mostly single, plausible operations: one bad op fails a whole batch */
	unsigned int i, n = below(r, 3) ? 1 : 1 + below(r, 8);

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < n; i++) {
		ops[i].opcode = below(r, 9) == 0 ? (__u16)edge(r) : 1 + below(r, 7);
		ops[i].conn_id = pick_id(r, slot, K_CONN);
		ops[i].buf_id = pick_id(r, slot, K_BUF);
		ops[i].window_id = pick_id(r, slot, K_RWIN);
		ops[i].buf_offset = below(r, 2) ? 0 : below(r, 3) ? below(r, 8192) : edge(r);
		ops[i].length = below(r, 2) ? 8 * (1 + below(r, 8)) : small_len(r);
		ops[i].remote_offset = below(r, 2) ? 0 : below(r, 3) ? below(r, 8192) & ~7u : edge(r);
		ops[i].user_data = rnd(r);
		ops[i].compare_add = rnd(r);
		ops[i].swap = rnd(r);
		ops[i].imm_data = (__u32)rnd(r);
		if (below(r, 16) == 0)
			ops[i].flags = (__u16)edge(r);
		if (below(r, 16) == 0)
			ops[i].__reserved = (__u32)edge(r);
	}
	memset(&s, 0, sizeof(s));
	s.size = pick_size(r, sizeof(s));
	s.count = below(r, 16) ? n : (__u32)edge(r);
	s.op_size = below(r, 16) ? sizeof(ops[0]) : (__u32)edge(r);
	s.ops = below(r, 16) ? U64_PTR(ops) : pick_ptr(r, scratch);
	do_ioctl(slot_fd(slot), RDMAXFER_CMD_SUBMIT, &s);
}

/* Remember the peer windows (and accepted connections) a REAP reported. */
static void note_events(unsigned int slot, __u64 ptr, __u32 n, unsigned char *scratch)
{
	const struct rdmaxfer_completion *c = (const void *)(uintptr_t)ptr;
	__u32 i;

	if ((unsigned char *)c < scratch || (unsigned char *)(c + n) > scratch + SCRATCH)
		return;
	for (i = 0; i < n; i++) {
		if (c[i].opcode == RDMAXFER_EVENT_WINDOW)
			note_id(slot, K_RWIN, c[i].window_id);
		else if (c[i].opcode == RDMAXFER_EVENT_CONNECTED)
			note_id(slot, K_CONN, (__u32)c[i].value);
	}
}

/* The argument of any command, and room for garbage past it. */
union fuzz_arg {
	struct rdmaxfer_info info;
	struct rdmaxfer_list_devices ld;
	struct rdmaxfer_device_info di;
	struct rdmaxfer_port_info pi;
	struct rdmaxfer_listen l;
	struct rdmaxfer_accept a;
	struct rdmaxfer_connect c;
	struct rdmaxfer_close cl;
	struct rdmaxfer_reg_buf rb;
	struct rdmaxfer_dereg_buf db;
	struct rdmaxfer_expose e;
	struct rdmaxfer_revoke rv;
	struct rdmaxfer_reap rp;
	struct rdmaxfer_recv rc;
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_stats st;
	struct rdmaxfer_ring_setup rs;
	unsigned char raw[512];
};

/* Two logon keys of this process (LISTEN and CONNECT pick them), 0 if none. */
static __s32 keys[2];

static void add_keys(void)
{
	unsigned char secret[32];
	unsigned int i;
	long k;

	for (i = 0; i < 2; i++) {
		memset(secret, 0x40 + (int)i, sizeof(secret));
		k = syscall(__NR_add_key, "logon", i ? "rdmaxfer:fuzz1" : "rdmaxfer:fuzz0",
			    secret, sizeof(secret), KEY_SPEC_PROCESS_KEYRING);
		keys[i] = k > 0 ? (__s32)k : 0;
	}
}

/* A key id for LISTEN or CONNECT: mostly none or ours, now and then anything. */
static __s32 pick_key(struct rng *r)
{
	switch (below(r, 8)) {
	case 0:
	case 1:
		return keys[0];
	case 2:
		return keys[1];
	case 3:
		return (__s32)edge(r);
	default:
		return 0;
	}
}

/* An allow-list: valid prefixes (ours among them, or not) or garbage. */
static void pick_allow(struct rng *r, struct rdmaxfer_listen *l, unsigned char *scratch,
		       struct rdmaxfer_prefix *p)
{
	unsigned int i, n = below(r, 4);

	if (below(r, 2)) {
		l->allow_count = 0;
		return;
	}
	for (i = 0; i < n; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].family = AF_INET;
		p[i].prefix_len = (__u8)(below(r, 4) ? 8 * below(r, 5) : below(r, 256));
		inet_pton(AF_INET, addr4, p[i].addr);
		if (p[i].prefix_len <= 32)	/* valid: clear the bits past it */
			for (unsigned int b = p[i].prefix_len; b < 32; b++)
				p[i].addr[b / 8] &= (__u8)~(0x80 >> (b % 8));
	}
	l->allow_count = below(r, 8) ? n : (__u32)edge(r);
	l->allow = below(r, 8) ? U64_PTR(p) : pick_ptr(r, scratch);
}

/* Arguments of the commands that ask about the module and its devices. */
static void fuzz_query_args(struct rng *r, unsigned int cmd, union fuzz_arg *u,
			    unsigned char *scratch)
{
	switch (cmd) {
	case RDMAXFER_CMD_GET_INFO:
		u->info.size = pick_size(r, sizeof(u->info));
		break;
	case RDMAXFER_CMD_LIST_DEVICES:
		u->ld.size = pick_size(r, sizeof(u->ld));
		u->ld.count = below(r, 4) ? below(r, 8) : (__u32)edge(r);
		u->ld.indexes = pick_ptr(r, scratch);
		break;
	case RDMAXFER_CMD_QUERY_DEVICE:
		u->di.size = pick_size(r, sizeof(u->di));
		u->di.index = below(r, 4) ? below(r, 3) : (__u32)edge(r);
		break;
	case RDMAXFER_CMD_QUERY_PORT:
		u->pi.size = pick_size(r, sizeof(u->pi));
		u->pi.index = below(r, 4) ? below(r, 3) : (__u32)edge(r);
		u->pi.port = below(r, 4) ? below(r, 3) : (__u32)edge(r);
		u->pi.num_gids = below(r, 4) ? below(r, 8) : (__u32)edge(r);
		u->pi.gids = pick_ptr(r, scratch);
		break;
	case RDMAXFER_CMD_STATS:
		u->st.size = pick_size(r, sizeof(u->st));
		break;
	case RDMAXFER_CMD_RING_SETUP:
		u->rs.size = pick_size(r, sizeof(u->rs));
		u->rs.entries = below(r, 4) ? 1u << below(r, 14) : (__u32)edge(r);
		if (below(r, 16) == 0)
			u->rs.__reserved = (__u32)edge(r);
		break;
	}
}

/* Arguments of the connection commands, with ids of file @slot (mostly). */
static void fuzz_conn_args(struct rng *r, unsigned int cmd, unsigned int slot,
			   union fuzz_arg *u, unsigned char *scratch)
{
	static __thread struct rdmaxfer_prefix prefixes[4];	/* read by the ioctl */
	__u16 port;

	switch (cmd) {
	case RDMAXFER_CMD_LISTEN:
		u->l.size = pick_size(r, sizeof(u->l));
		u->l.addr = rdx_addr(below(r, 8) ? addr4 : "::", below(r, 3) ? 0 : 18600 + below(r, 8));
		if (below(r, 16) == 0)
			u->l.addr.family = (__u16)edge(r);
		u->l.backlog = below(r, 4) ? below(r, 8) : (__u32)edge(r);
		if (u->l.size >= sizeof(u->l)) {
			u->l.key_id = pick_key(r);
			pick_allow(r, &u->l, scratch, prefixes);
		}
		break;
	case RDMAXFER_CMD_ACCEPT:
		u->a.size = pick_size(r, sizeof(u->a));
		u->a.listen_id = pick_id(r, slot, K_LISTENER);
		u->a.timeout_ns = below(r, 2) ? 0 : below(r, 3) ? 1000000LL * below(r, 50) : -1;
		if (u->a.timeout_ns < 0)
			u->a.timeout_ns = 100 * 1000000LL;	/* never forever: it would block */
		break;
	case RDMAXFER_CMD_CONNECT:
		u->c.size = pick_size(r, sizeof(u->c));
		pthread_mutex_lock(&lock);
		port = nport && below(r, 4) ? ports[below(r, nport < 8 ? nport : 8)] :
		       (__u16)(18600 + below(r, 16));
		pthread_mutex_unlock(&lock);
		u->c.addr = rdx_addr(below(r, 16) ? addr4 : silent, port);
		u->c.timeout_ns = (1 + below(r, 5)) * 100 * 1000000LL;
		if (u->c.size >= sizeof(u->c)) {
			u->c.key_id = pick_key(r);
			if (below(r, 32) == 0)
				u->c.__reserved = (__u32)edge(r);
		}
		break;
	case RDMAXFER_CMD_CLOSE:
		u->cl.size = pick_size(r, sizeof(u->cl));
		u->cl.id = pick_id(r, slot, below(r, 2) ? K_CONN : K_LISTENER);
		break;
	case RDMAXFER_CMD_QUERY_CONN:
		u->ci.size = pick_size(r, sizeof(u->ci));
		u->ci.conn_id = pick_id(r, slot, K_CONN);
		break;
	}
}

/* Arguments of the buffer, window and data commands (SUBMIT apart). */
static void fuzz_data_args(struct rng *r, unsigned int cmd, unsigned int slot,
			   union fuzz_arg *u, unsigned char *scratch)
{
	switch (cmd) {
	case RDMAXFER_CMD_REG_BUF:
		u->rb.size = pick_size(r, sizeof(u->rb));
		pick_mem(r, &u->rb.addr, &u->rb.length);
		u->rb.access = below(r, 8) ? 1 + below(r, 3) : (__u32)edge(r);
		break;
	case RDMAXFER_CMD_DEREG_BUF:
		u->db.size = pick_size(r, sizeof(u->db));
		u->db.buf_id = pick_id(r, slot, K_BUF);
		break;
	case RDMAXFER_CMD_EXPOSE:
		u->e.size = pick_size(r, sizeof(u->e));
		u->e.conn_id = pick_id(r, slot, K_CONN);
		u->e.buf_id = pick_id(r, slot, K_BUF);
		u->e.offset = below(r, 3) ? below(r, 8192) : edge(r);
		u->e.length = small_len(r);
		u->e.access = below(r, 8) ? 1 + below(r, 7) : (__u32)edge(r);
		break;
	case RDMAXFER_CMD_REVOKE:
		u->rv.size = pick_size(r, sizeof(u->rv));
		u->rv.window_id = pick_id(r, slot, K_WIN);
		break;
	case RDMAXFER_CMD_REAP:
		u->rp.size = pick_size(r, sizeof(u->rp));
		u->rp.count = below(r, 4) ? below(r, 64) : (__u32)edge(r);
		u->rp.timeout_ns = below(r, 4) ? 0 : 1000000 * below(r, 20);
		u->rp.completions = pick_ptr(r, scratch);
		break;
	case RDMAXFER_CMD_RECV:
		u->rc.size = pick_size(r, sizeof(u->rc));
		u->rc.conn_id = pick_id(r, slot, K_CONN);
		u->rc.length = below(r, 4) ? below(r, SCRATCH / 2) : (__u32)edge(r);
		u->rc.addr = pick_ptr(r, scratch);
		break;
	}
}

/*
 * A ring was set up on file @slot: map it, right or wrong, and scribble on
 * what userspace may write (all of it); keep the mapping now and then (it
 * holds the file past its close()).
 */
static void fuzz_ring(struct rng *r, unsigned int slot, __u64 size)
{
	size_t len = below(r, 4) ? size : (size_t)edge(r);
	int prot = below(r, 8) ? PROT_READ | PROT_WRITE : (int)below(r, 8);
	int flags = below(r, 8) ? MAP_SHARED : MAP_PRIVATE;
	off_t off = below(r, 8) ? 0 : (off_t)(PAGE * below(r, 4));
	unsigned int i;
	__u32 *p;

	p = mmap(NULL, len, prot, flags, slot_fd(slot), off);
	if (p == MAP_FAILED)
		return;
	if ((prot & PROT_WRITE) && flags == MAP_SHARED && len >= 4) {
		for (i = 0; i < 8; i++)
			p[below(r, (unsigned int)(len / 4))] = (__u32)edge(r);
		if (below(r, 2))
			p[0] = (__u32)rnd(r);	/* the head */
	}
	if (below(r, 4))
		munmap(p, len);
	__atomic_fetch_add(&rings, 1, __ATOMIC_RELAXED);
}

/* After a command succeeded: remember the ids and ports it handed out. */
static void fuzz_note(struct rng *r, unsigned int cmd, unsigned int slot,
		      const union fuzz_arg *u, unsigned char *scratch)
{
	switch (cmd) {
	case RDMAXFER_CMD_LISTEN:
		note_id(slot, K_LISTENER, u->l.listen_id);
		pthread_mutex_lock(&lock);
		ports[nport++ % 8] = u->l.addr.port;
		pthread_mutex_unlock(&lock);
		break;
	case RDMAXFER_CMD_ACCEPT:
		note_id(slot, K_CONN, u->a.conn_id);
		break;
	case RDMAXFER_CMD_CONNECT:
		note_id(slot, K_CONN, u->c.conn_id);
		break;
	case RDMAXFER_CMD_REG_BUF:
		note_id(slot, K_BUF, u->rb.buf_id);
		break;
	case RDMAXFER_CMD_EXPOSE:
		note_id(slot, K_WIN, u->e.window_id);
		break;
	case RDMAXFER_CMD_REAP:
		note_events(slot, u->rp.completions, u->rp.count, scratch);
		break;
	case RDMAXFER_CMD_RING_SETUP:
		fuzz_ring(r, slot, u->rs.mmap_size);
		break;
	}
}

/* One random ioctl with random arguments on a random file. */
static void fuzz_one(struct rng *r, unsigned char *scratch)
{
	unsigned int slot = below(r, NFDS), cmd = below(r, NCMDS);
	union fuzz_arg u;

	if (cmd == RDMAXFER_CMD_SUBMIT) {
		fuzz_submit(r, slot, scratch);
		return;
	}
	memset(&u, 0, sizeof(u));
	fuzz_query_args(r, cmd, &u, scratch);
	fuzz_conn_args(r, cmd, slot, &u, scratch);
	fuzz_data_args(r, cmd, slot, &u, scratch);
	if (below(r, 32) == 0)
		u.info.flags = (__u32)edge(r);
	if (!do_ioctl(slot_fd(slot), cmd, &u))
		fuzz_note(r, cmd, slot, &u, scratch);
}

/* Replace a region: the old mapping goes (maybe still registered). */
static void remap_region(struct rng *r)
{
	unsigned int i = below(r, NREGIONS);
	size_t len = PAGE * (1 + below(r, REGION_MAX / PAGE));
	unsigned char *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	memset(p, (int)i, len);
	pthread_mutex_lock(&lock);
	/* the old one is unmapped: a registration keeps its pages pinned */
	munmap(regions[i].p, regions[i].len);
	regions[i].p = p;
	regions[i].len = len;
	pthread_mutex_unlock(&lock);
	__atomic_fetch_add(&remaps, 1, __ATOMIC_RELAXED);
}

/*
 * Build something for the random calls to work on: a connection from file
 * @b to a listener of file @a, a buffer on each side and a window exposed
 * each way, all noted in the id pools (the peer windows through a REAP).
 * Errors are fine: other threads are closing things meanwhile.
 */
static void scaffold(unsigned int a, unsigned int b, struct rng *r, unsigned char *scratch)
{
	struct rdmaxfer_listen l = { .size = sizeof(l), .addr = rdx_addr(addr4, 0), .backlog = 4 };
	struct rdmaxfer_connect cn = { .size = sizeof(cn), .timeout_ns = SEC };
	struct rdmaxfer_accept ac = { .size = sizeof(ac), .timeout_ns = SEC };
	struct rdmaxfer_reg_buf rb = { .size = sizeof(rb),
				       .access = RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE };
	struct rdmaxfer_expose e = { .size = sizeof(e), .length = PAGE,
				     .access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE };
	struct rdmaxfer_reap rp = { .size = sizeof(rp), .timeout_ns = 100 * 1000000LL };
	unsigned int side, sl;
	__u32 conn;
	struct region g;

	/* half of them with a key: the handshake under everything else */
	l.key_id = below(r, 2) ? keys[0] : 0;
	cn.key_id = l.key_id;
	if (do_ioctl(slot_fd(a), RDMAXFER_CMD_LISTEN, &l))
		return;
	note_id(a, K_LISTENER, l.listen_id);
	cn.addr = rdx_addr(addr4, l.addr.port);
	if (do_ioctl(slot_fd(b), RDMAXFER_CMD_CONNECT, &cn))
		return;
	note_id(b, K_CONN, cn.conn_id);
	ac.listen_id = l.listen_id;
	if (do_ioctl(slot_fd(a), RDMAXFER_CMD_ACCEPT, &ac))
		return;
	note_id(a, K_CONN, ac.conn_id);
	for (side = 0; side < 2; side++) {
		sl = side ? b : a;
		conn = side ? cn.conn_id : ac.conn_id;
		pthread_mutex_lock(&lock);
		g = regions[below(r, NREGIONS)];
		pthread_mutex_unlock(&lock);
		rb.addr = U64_PTR(g.p);
		rb.length = g.len < 4 * PAGE ? g.len : 4 * PAGE;
		if (do_ioctl(slot_fd(sl), RDMAXFER_CMD_REG_BUF, &rb))
			continue;
		note_id(sl, K_BUF, rb.buf_id);
		e.conn_id = conn;
		e.buf_id = rb.buf_id;
		e.length = rb.length;
		if (!do_ioctl(slot_fd(sl), RDMAXFER_CMD_EXPOSE, &e))
			note_id(sl, K_WIN, e.window_id);
	}
	for (side = 0; side < 2; side++) {
		sl = side ? b : a;
		rp.count = 32;
		rp.completions = U64_PTR(scratch);
		if (!do_ioctl(slot_fd(sl), RDMAXFER_CMD_REAP, &rp))
			note_events(sl, rp.completions, rp.count, scratch);
	}
}

/* Close one of the files (with whatever it holds) and open a new one. */
static void reopen_fd(struct rng *r)
{
	unsigned int i = below(r, NFDS);
	int fd = open(DEVPATH, O_RDWR | O_CLOEXEC), old;

	if (fd < 0)
		return;
	pthread_mutex_lock(&lock);
	old = slots[i].fd;
	memset(&slots[i], 0, sizeof(slots[i]));
	slots[i].fd = fd;
	pthread_mutex_unlock(&lock);
	close(old);
}

/* fork: the child writes to every region and issues a few ioctls, then exits. */
static void fork_child(struct rng *r, unsigned char *scratch)
{
	struct rng cr = { rnd(r) };
	pid_t pid;
	int i;

	/* no other thread may hold the lock the child will need */
	pthread_mutex_lock(&lock);
	pid = fork();
	pthread_mutex_unlock(&lock);
	if (pid < 0)
		return;
	if (pid == 0) {
		for (i = 0; i < NREGIONS; i++)
			if (regions[i].p)
				regions[i].p[0]++;
		for (i = 0; i < 8; i++)
			fuzz_one(&cr, scratch);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	__atomic_fetch_add(&forks, 1, __ATOMIC_RELAXED);
}

/* An ioctl the module does not have, or with a size field that lies. */
static void fuzz_garbage(struct rng *r, unsigned char *scratch)
{
	unsigned int cmd;

	switch (below(r, 3)) {
	case 0:
		cmd = _IO(RDMAXFER_TYPE, NCMDS + below(r, 200));
		break;
	case 1:
		cmd = _IOWR(RDMAXFER_TYPE, below(r, NCMDS), struct rdmaxfer_info);
		break;
	default:
		cmd = (unsigned int)rnd(r);
		break;
	}
	*(__u32 *)scratch = (__u32)edge(r);
	ioctl(slot_fd(below(r, NFDS)), cmd, below(r, 2) ? (void *)scratch : (void *)(uintptr_t)pick_ptr(r, scratch));
	__atomic_fetch_add(&garbage, 1, __ATOMIC_RELAXED);
}

static void *thread_run(void *arg)
{
	struct rng r = { seed ^ (__u64)(uintptr_t)arg * 0x2545F4914F6CDD1DULL };
	unsigned char *scratch;

	/* scratch space with an inaccessible page after it: a count too large
	 * for it makes the kernel fault there, not write over our heap */
	scratch = mmap(NULL, SCRATCH + PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (scratch == MAP_FAILED || mprotect(scratch + SCRATCH, PAGE, PROT_NONE))
		return NULL;
	while (!stop) {
		unsigned int what = below(&r, 200);

		if (what == 0)
			remap_region(&r);
		else if (what == 1)
			reopen_fd(&r);
		else if (what == 2)
			fork_child(&r, scratch);
		else if (what == 3)
			scaffold(below(&r, NFDS), below(&r, NFDS), &r, scratch);
		else if (what < 8)
			fuzz_garbage(&r, scratch);
		else
			fuzz_one(&r, scratch);
	}
	munmap(scratch, SCRATCH + PAGE);
	return NULL;
}

/*
 * After the storm: does a fresh pair of files still connect, register,
 * expose and move one checked WRITE?  Returns NULL or what failed.
 */
static const char *works_after(void)
{
	int s = open(DEVPATH, O_RDWR | O_CLOEXEC), c = open(DEVPATH, O_RDWR | O_CLOEXEC);
	struct rdmaxfer_listen l = { .size = sizeof(l), .addr = rdx_addr(addr4, 0) };
	struct rdmaxfer_connect cn = { .size = sizeof(cn), .timeout_ns = 20 * SEC };
	struct rdmaxfer_accept a = { .size = sizeof(a), .timeout_ns = 20 * SEC };
	struct rdmaxfer_reg_buf rb = { .size = sizeof(rb), .length = PAGE,
				       .access = RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE };
	struct rdmaxfer_expose e = { .size = sizeof(e), .length = PAGE,
				     .access = RDMAXFER_REMOTE_WRITE };
	struct rdmaxfer_completion comp[4];
	struct rdmaxfer_reap rp = { .size = sizeof(rp), .count = 1, .timeout_ns = 20 * SEC,
				    .completions = U64_PTR(comp) };
	struct rdmaxfer_op op = { .opcode = RDMAXFER_OP_WRITE, .length = PAGE, .user_data = 7 };
	struct rdmaxfer_submit sb = { .size = sizeof(sb), .count = 1, .op_size = sizeof(op),
				      .ops = U64_PTR(&op) };
	unsigned char *src = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *dst = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const char *why = NULL;
	__s64 end;
	int n = 0;

	if (s < 0 || c < 0 || src == MAP_FAILED || dst == MAP_FAILED)
		return "open or mmap";
	memset(src, 0x5a, PAGE);
	memset(dst, 0, PAGE);
	if (do_ioctl(s, RDMAXFER_CMD_LISTEN, &l))
		why = "LISTEN";
	cn.addr = rdx_addr(addr4, l.addr.port);
	a.listen_id = l.listen_id;
	if (!why && do_ioctl(c, RDMAXFER_CMD_CONNECT, &cn))
		why = "CONNECT";
	if (!why && do_ioctl(s, RDMAXFER_CMD_ACCEPT, &a))
		why = "ACCEPT";
	rb.addr = U64_PTR(dst);
	if (!why && do_ioctl(s, RDMAXFER_CMD_REG_BUF, &rb))
		why = "REG_BUF (server)";
	e.conn_id = a.conn_id;
	e.buf_id = rb.buf_id;
	if (!why && do_ioctl(s, RDMAXFER_CMD_EXPOSE, &e))
		why = "EXPOSE";
	rb.addr = U64_PTR(src);
	if (!why && do_ioctl(c, RDMAXFER_CMD_REG_BUF, &rb))
		why = "REG_BUF (client)";
	op.conn_id = cn.conn_id;
	op.buf_id = rb.buf_id;
	op.window_id = e.window_id;
	/* the WINDOW event may come after EXPOSE returns: retry ENOENT briefly */
	end = now_ns() + 20 * SEC;
	while (!why && (n = do_ioctl(c, RDMAXFER_CMD_SUBMIT, &sb)) == ENOENT && now_ns() < end)
		usleep(10000);
	if (!why && n)
		why = "SUBMIT";
	while (!why) {
		rp.count = 1;
		if (do_ioctl(c, RDMAXFER_CMD_REAP, &rp) || !rp.count) {
			why = "REAP (no completion)";
		} else if (comp[0].user_data == 7) {
			if (comp[0].status)
				why = "the WRITE failed";
			else if (memcmp(src, dst, PAGE))
				why = "the WRITE's data did not arrive";
			break;
		}
	}
	close(c);
	close(s);
	munmap(src, PAGE);
	munmap(dst, PAGE);
	return why;
}

static void usage(void)
{
	fprintf(stderr, "usage: fuzz_ioctl [-s SEED] [-t SECONDS] [-j THREADS] [-a ADDR]\n");
	exit(2);
}

/* The regions REG_BUF picks from: anonymous and memfd memory, filled. */
static int map_regions(void)
{
	unsigned int i;

	for (i = 0; i < NREGIONS; i++) {
		int mfd = i % 2 ? memfd_create("fuzz", 0) : -1;
		size_t len = PAGE * (1 + i * 37);

		if (mfd >= 0 && ftruncate(mfd, (off_t)len))
			return -1;
		regions[i].p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    mfd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, mfd, 0);
		if (mfd >= 0)
			close(mfd);
		if (regions[i].p == MAP_FAILED)
			return -1;
		memset(regions[i].p, (int)i, len);
		regions[i].len = len;
	}
	return 0;
}

/* Print each command's results by errno; returns the number of ioctls. */
static __u64 print_counts(void)
{
	unsigned int i, e;
	__u64 total = 0;

	for (i = 0; i < NCMDS; i++) {
		char line[1024];
		int len = 0;
		__u64 sum = 0;

		for (e = 0; e < MAXERR; e++) {
			if (!counts[i][e])
				continue;
			sum += counts[i][e];
			len += snprintf(line + len, sizeof(line) - len, " %s %lu",
					e == 0 ? "ok" : e == MAXERR - 1 ? "other" : strerrorname_np((int)e) ?: "?",
					counts[i][e]);
			if (len >= (int)sizeof(line))
				break;
		}
		total += sum;
		printf("# %-12s %8llu:%s\n", cmd_names[i], (unsigned long long)sum, line);
	}
	return total;
}

int main(int argc, char **argv)
{
	unsigned int secs = 30, nthreads = 4, i;
	pthread_t th[64];
	const char *why;
	__u64 total;
	int opt;

	seed = (__u64)time(NULL) ^ ((__u64)getpid() << 32);
	while ((opt = getopt(argc, argv, "s:t:j:a:")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			secs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			nthreads = (unsigned int)strtoul(optarg, NULL, 0);
			if (!nthreads || nthreads > 64)
				usage();
			break;
		case 'a':
			addr4 = optarg;
			break;
		default:
			usage();
		}
	}
	printf("TAP version 13\n1..2\n");
	printf("# seed %llu (replay: fuzz_ioctl -s %llu -t %u -j %u), %u s, %u threads\n",
	       (unsigned long long)seed, (unsigned long long)seed, secs, nthreads, secs, nthreads);
	fflush(stdout);
	if (access(DEVPATH, R_OK | W_OK)) {
		printf("ok 1 survived # SKIP " DEVPATH " missing: rdmaxfer.ko is not loaded\n");
		printf("ok 2 works_after # SKIP\n");
		return 4;
	}
	switch (addr4 ? 0 : test_env_try()) {
	case 0:
		break;
	case -2:
		printf("# %s\nnot ok 1 survived # not run\nnot ok 2 works_after # not run\n",
		       test_env()->why);
		return 1;
	default:
		printf("ok 1 survived # SKIP no RDMA device to test on: %s\n", test_env()->why);
		printf("ok 2 works_after # SKIP\n");
		return 4;
	}
	if (!addr4)
		addr4 = test_env()->addr;
	if (test_env()->silent && *test_env()->silent)
		silent = test_env()->silent;
	signal(SIGPIPE, SIG_IGN);
	guard = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < NFDS; i++)
		slots[i].fd = open(DEVPATH, O_RDWR | O_CLOEXEC);
	add_keys();
	if (map_regions())
		return 2;
	/* something to work on from the start: connections with windows both ways */
	{
		struct rng r0 = { seed };
		unsigned char *sc = mmap(NULL, SCRATCH, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (sc == MAP_FAILED)
			return 2;
		scaffold(0, 1, &r0, sc);
		scaffold(2, 3, &r0, sc);
		scaffold(1, 2, &r0, sc);
		munmap(sc, SCRATCH);
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, thread_run, (void *)(uintptr_t)(i + 1));
	sleep(secs);
	stop = 1;
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NFDS; i++)
		close(slots[i].fd);

	total = print_counts();
	printf("# %llu ioctls in %u s (%llu/s), %lu garbage commands, %lu forks, %lu remaps, %lu rings mapped\n",
	       (unsigned long long)total, secs, (unsigned long long)(secs ? total / secs : 0),
	       garbage, forks, remaps, rings);
	printf("ok 1 survived\n");
	fflush(stdout);
	why = works_after();
	if (why) {
		printf("# after fuzzing: %s\nnot ok 2 works_after\n", why);
		return 1;
	}
	printf("ok 2 works_after\n");
	return 0;
}
