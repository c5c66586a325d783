/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer_test.h - for the C selftests: the RDMA device they run on
 * (test_env_try(), see rxe_env.sh), a clock, anonymous memory and an
 * operation builder.  The thin wrappers of the /dev/rdmaxfer ioctls
 * (rdx_listen(), rdx_submit(), ...: each issues one ioctl and returns 0 or
 * the errno it failed with, and copies out the id it created) are
 * librdmaxfer's, shared with the CLI (tools/lib/rdmaxfer/librdmaxfer.h) and
 * built into every test program.  Also memory on huge pages and a trace
 * instance that shows how a window was registered (huge_*(), expose_trace_*()).
 * Nothing here checks anything; the tests do.
 */
#ifndef RDMAXFER_TEST_H
#define RDMAXFER_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#include "librdmaxfer.h"

#define DEVPATH		"/dev/" RDMAXFER_DEVNAME
#define U64_PTR(p)	((__u64)(uintptr_t)(p))
#define MS		1000000LL
#define SEC		1000000000LL

static inline __s64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__s64)ts.tv_sec * SEC + ts.tv_nsec;
}

/*
 * Write a line into the kernel's trace buffer, next to the rdmaxfer:*
 * events of a test being diagnosed (testing.md, "Tracing"); nothing where
 * tracefs is not mounted or not writable.
 */
static inline __attribute__((format(printf, 1, 2))) void trace_note(const char *fmt, ...)
{
	int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY | O_CLOEXEC);
	va_list ap;

	if (fd < 0)
		return;
	va_start(ap, fmt);
	vdprintf(fd, fmt, ap);
	va_end(ap);
	close(fd);
}

/*
 * A kernel with kmemleak: the rig's debug kernel (KASAN, lockdep), where
 * every kernel instruction costs several times more under TCG (~3 MiB/s
 * through Soft-RoCE).  Tests move less data and loop fewer times there,
 * never over fewer paths: what they skip of their volume, the other
 * kernels run (Documentation/testing.md, "The debug kernel").
 */
static inline int debug_kernel(void)
{
	return !access("/sys/kernel/debug/kmemleak", F_OK);
}

/*
 * The RDMA device a test runs on, from the RDMAXFER_TEST_* variables that
 * rxe_env.sh (next to the test programs) defines: dev, netdev, addr, addr6
 * (on dev), other (an address of this host not on dev), silent (an unused
 * address on dev's subnet, or ""), netdev2 (for a second Soft-RoCE device,
 * or ""), own (1: made by rxe_env.sh, the test may delete and re-add it).
 */
struct test_env {
	const char *dev, *netdev, *addr, *addr6, *other, *silent, *netdev2;
	int own;
	pid_t owner;		/* the process that made it, 0: the caller's */
	char dir[4096];		/* where rxe_env.sh is, when made here */
	char script[4200];	/* dir/rxe_env.sh */
	char why[512];		/* why there is none */
};

static inline struct test_env *test_env(void)
{
	static struct test_env env;

	return &env;
}

static inline const char *test_env_var(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "";
}

/*
 * Run "rxe_env.sh down" (its report on stderr): its exit status, -1 if it
 * did not run.  Only fork, execve and waitpid: async-signal-safe.
 */
static inline int test_env_run_down(void)
{
	extern char **environ;
	char *argv[] = { test_env()->script, "down", NULL };
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		dup2(2, 1);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* atexit: remove a device made by test_env_try(); RDMA objects left on it fail the program */
static inline void test_env_down(void)
{
	if (test_env()->owner != getpid())
		return;		/* a child of the harness, or not ours */
	test_env()->owner = 0;
	if (test_env_run_down()) {
		fflush(stdout);
		_exit(1);	/* KSFT_FAIL: rxe_env.sh said what was left */
	}
}

/* SIGTERM (the runner's timeout), SIGINT, SIGHUP: remove the device, then die */
static inline void test_env_on_signal(int sig)
{
	if (test_env()->owner == getpid()) {
		test_env()->owner = 0;
		test_env_run_down();
	}
	_exit(128 + sig);
}

/*
 * test_env_try - find or make the RDMA device to test on
 *
 * With RDMAXFER_TEST_DEV set (by a shell test that made the device, or for a
 * host's own device) it is used as it is.  Else "rxe_env.sh up" makes one,
 * its variables are exported (for programs the test starts), and it is
 * removed when this process exits, also on SIGTERM, SIGINT and SIGHUP.
 * Returns 0; -1 with the reason in test_env()->why when there is no device
 * to be had here (skip); -2 when rxe_env.sh failed otherwise (fail).
 */
static inline int test_env_try(void)
{
	struct test_env *e = test_env();
	char *dir = e->dir, line[512], *eq;
	ssize_t n;
	FILE *f;
	int st;

	if (!*test_env_var("RDMAXFER_TEST_DEV")) {
		n = readlink("/proc/self/exe", dir, sizeof(e->dir) - 1);
		if (n <= 0) {
			snprintf(e->why, sizeof(e->why), "cannot read /proc/self/exe");
			return -1;
		}
		dir[n] = 0;
		*strrchr(dir, '/') = 0;
		snprintf(e->script, sizeof(e->script), "%.4000s/rxe_env.sh", dir);
		snprintf(line, sizeof(line), "'%.400s/rxe_env.sh' up 2>&1", dir);
		f = popen(line, "r");
		if (!f) {
			snprintf(e->why, sizeof(e->why), "cannot run %.400s/rxe_env.sh", dir);
			return -1;
		}
		e->why[0] = 0;
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			eq = strchr(line, '=');
			if (eq && !strncmp(line, "RDMAXFER_TEST_", 14) && !strchr(eq, ' ')) {
				*eq = 0;
				setenv(line, eq + 1, 1);
			} else {
				snprintf(e->why + strlen(e->why), sizeof(e->why) - strlen(e->why),
					 "%s", line);
			}
		}
		st = pclose(f);
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 4)
			return -1;	/* KSFT_SKIP: it said why */
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			char msg[sizeof(e->why)];

			snprintf(msg, sizeof(msg), "rxe_env.sh up failed (status %d): %.400s", st,
				 e->why);
			memcpy(e->why, msg, sizeof(msg));
			return -2;
		}
		e->owner = getpid();
		atexit(test_env_down);
		signal(SIGTERM, test_env_on_signal);
		signal(SIGINT, test_env_on_signal);
		signal(SIGHUP, test_env_on_signal);
	} else if (!*test_env_var("RDMAXFER_TEST_ADDR") || !*test_env_var("RDMAXFER_TEST_ADDR6")) {
		snprintf(e->why, sizeof(e->why),
			 "RDMAXFER_TEST_DEV is set: set RDMAXFER_TEST_ADDR and RDMAXFER_TEST_ADDR6 too");
		return -1;
	}
	e->dev = test_env_var("RDMAXFER_TEST_DEV");
	e->netdev = test_env_var("RDMAXFER_TEST_NETDEV");
	e->addr = test_env_var("RDMAXFER_TEST_ADDR");
	e->addr6 = test_env_var("RDMAXFER_TEST_ADDR6");
	e->other = test_env_var("RDMAXFER_TEST_OTHER");
	e->silent = test_env_var("RDMAXFER_TEST_SILENT");
	e->netdev2 = test_env_var("RDMAXFER_TEST_NETDEV2");
	e->own = !strcmp(test_env_var("RDMAXFER_TEST_OWN"), "1");
	return 0;
}

/*
 * test_env_try() for a kselftest program: on no device, exit with a skip
 * (KSFT_SKIP) that says why; when rxe_env.sh failed otherwise, a failure.
 * A macro: only the programs that use it need kselftest's functions.
 */
#define TEST_ENV_OR_EXIT()								\
	do {										\
		int _r = test_env_try();						\
											\
		if (_r) {								\
			ksft_print_header();						\
			if (_r == -2)							\
				ksft_exit_fail_msg("%s\n", test_env()->why);		\
			ksft_exit_skip("no RDMA device to test on: %s\n", test_env()->why); \
		}									\
	} while (0)

/* Is the running kernel at least major.minor (for behaviour no interface reveals)? */
static inline int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

/* Anonymous memory, page aligned; NULL on failure. */
static inline unsigned char *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Wait up to @tmo until @fd's side of connection @conn knows that its peer
 * posted receive slots (QUERY_CONN: RDMAXFER_CONN_F_PEER_SLOTS): 0, or -1.
 */
static inline int wait_peer_slots(int fd, __u32 conn, __s64 tmo)
{
	struct rdmaxfer_conn_info ci;
	__s64 end = now_ns() + tmo;

	do {
		if (rdx_query_conn(fd, conn, &ci))
			return -1;
		if (ci.conn_flags & RDMAXFER_CONN_F_PEER_SLOTS)
			return 0;
		usleep(1000);
	} while (now_ns() < end);
	return -1;
}

static inline struct rdmaxfer_op mkop(__u16 opcode, __u32 conn, __u32 buf, __u64 boff,
				      __u32 win, __u64 roff, __u64 len, __u64 user_data)
{
	struct rdmaxfer_op op;

	memset(&op, 0, sizeof(op));
	op.opcode = opcode;
	op.conn_id = conn;
	op.buf_id = buf;
	op.buf_offset = boff;
	op.window_id = win;
	op.remote_offset = roff;
	op.length = len;
	op.user_data = user_data;
	return op;
}

/* --- huge pages, and how a window was registered ------------------------ */

#define HUGE_LEN	(2UL << 20)	/* PMD_SIZE on x86-64 */
#define NR_HUGEPAGES	"/proc/sys/vm/nr_hugepages"

/* A number from a sysfs or procfs file, or -1. */
static inline long sysfs_read(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* Best effort: callers look at what they got (the tests skip without it). */
static inline void sysfs_write(const char *path, long v)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	snprintf(buf, sizeof(buf), "%ld\n", v);
	if (write(fd, buf, strlen(buf)) < 0) {
		/* best effort: the caller reads the value back */
	}
	close(fd);
}

/*
 * Anonymous memory that starts on a huge-page boundary, asking for
 * transparent huge pages; NULL on failure.
 */
static inline unsigned char *huge_map_aligned(size_t len)
{
	unsigned char *p = map_anon(len + HUGE_LEN);
	size_t head;

	if (!p)
		return NULL;
	head = (HUGE_LEN - (uintptr_t)p % HUGE_LEN) % HUGE_LEN;
	if (head)
		munmap(p, head);
	munmap(p + head + len, HUGE_LEN - head);
	madvise(p + head, len, MADV_HUGEPAGE);	/* "always" needs no advice */
	return p + head;
}

/* KiB of the mapping at @p backed by transparent huge pages (smaps), or -1. */
static inline long huge_anon_kib(const void *p)
{
	char line[256];
	unsigned long lo, hi;
	long kib = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {	/* a mapping's first line */
			if (in)
				break;
			in = lo <= (uintptr_t)p && (uintptr_t)p < hi;
		} else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) {
			break;
		}
	}
	fclose(f);
	return kib;
}

/*
 * @len bytes (a multiple of HUGE_LEN) on huge pages, starting on one,
 * faulted in: transparent huge pages, else hugetlb pages (*@reserved: how
 * many this reserved, give them back with huge_unreserve()), else whatever
 * anonymous memory the kernel gave (*@how says which).  NULL on failure.
 */
static inline unsigned char *huge_map(size_t len, const char **how, long *reserved)
{
	unsigned char *p = huge_map_aligned(len);
	void *h;
	long nr;

	*reserved = 0;
	*how = "base pages";
	if (!p)
		return NULL;
	memset(p, 1, len);	/* fault it in: huge pages where it can */
	if (huge_anon_kib(p) >= (long)(len / 1024)) {
		*how = "transparent huge pages";
		return p;
	}
	nr = sysfs_read(NR_HUGEPAGES);
	if (nr >= 0) {
		sysfs_write(NR_HUGEPAGES, nr + (long)(len / HUGE_LEN));
		*reserved = sysfs_read(NR_HUGEPAGES) - nr;
	}
	h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		 -1, 0);
	if (h == MAP_FAILED) {
		if (*reserved > 0)
			sysfs_write(NR_HUGEPAGES, nr);
		*reserved = 0;
		return p;
	}
	munmap(p, len);
	memset(h, 1, len);
	*how = "hugetlb pages";
	return h;
}

/* Give back the hugetlb pages huge_map() reserved (after munmap()). */
static inline void huge_unreserve(long reserved)
{
	if (reserved > 0)
		sysfs_write(NR_HUGEPAGES, sysfs_read(NR_HUGEPAGES) - reserved);
}

/* Write @val to the tracefs file @file of the instance at @dir. */
static inline bool trace_write(const char *dir, const char *file, const char *val)
{
	char path[512];
	bool ok;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ok = fd >= 0 && write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * A trace instance of the caller's own, /sys/kernel/tracing/instances/
 * @name, with the rdmaxfer_window_expose event on (other tests' tracing is
 * not disturbed).  Writes its directory to @dir: true if tracefs gave one.
 * (The rig boots its guests with trace_options=norecord-cmd: testing.md.)
 */
static inline bool expose_trace_start(char *dir, size_t dirlen, const char *name)
{
	if (access("/sys/kernel/tracing/instances", F_OK))
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);	/* as observe.sh */
	snprintf(dir, dirlen, "/sys/kernel/tracing/instances/%s", name);
	rmdir(dir);
	if (mkdir(dir, 0700))
		return false;
	if (trace_write(dir, "events/rdmaxfer/rdmaxfer_window_expose/enable", "1"))
		return true;
	rmdir(dir);
	return false;
}

/* Empty the instance's buffer (so that it never wraps in a long test). */
static inline void expose_trace_clear(const char *dir)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
}

/*
 * The segments (MRs) window @win was registered with, from the last
 * rdmaxfer_window_expose event in the instance at @dir: -1 if none.
 */
static inline int expose_trace_segments(const char *dir, __u32 win)
{
	static char buf[1 << 16];
	char path[512], key[32], *at, *last = NULL;
	int fd, segs = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	snprintf(key, sizeof(key), " window=%u ", win);
	for (at = strstr(buf, key); at; at = strstr(at + 1, key))
		last = at;
	if (last && (at = strstr(last, "segments=")))
		segs = atoi(at + strlen("segments="));
	return segs;
}

#endif /* RDMAXFER_TEST_H */
