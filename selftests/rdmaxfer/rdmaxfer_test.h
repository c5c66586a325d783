/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer_test.h - for the C selftests: the RDMA device they run on
 * (test_env_up(), see rxe_env.sh), and thin wrappers of the /dev/rdmaxfer
 * ioctls: each issues one ioctl and returns 0 or the errno it failed with,
 * and copies out the id it created.  Nothing here checks anything; the
 * tests do.
 */
#ifndef RDMAXFER_TEST_H
#define RDMAXFER_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#define DEVPATH		"/dev/" RDMAXFER_DEVNAME
#define U64_PTR(p)	((__u64)(uintptr_t)(p))
#define MS		1000000LL
#define SEC		1000000000LL

static inline int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

static inline __s64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__s64)ts.tv_sec * SEC + ts.tv_nsec;
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

/* atexit: remove a device made by test_env_try(); RDMA objects left on it fail the program */
static inline void test_env_down(void)
{
	char cmd[4200];

	if (test_env()->owner != getpid())
		return;		/* a child of the harness, or not ours */
	test_env()->owner = 0;
	snprintf(cmd, sizeof(cmd), "'%.4000s/rxe_env.sh' down >&2", test_env()->dir);
	if (system(cmd)) {
		fflush(stdout);
		_exit(1);	/* KSFT_FAIL: rxe_env.sh said what was left */
	}
}

/*
 * test_env_try - find or make the RDMA device to test on
 *
 * With RDMAXFER_TEST_DEV set (by a shell test that made the device, or for a
 * host's own device) it is used as it is.  Else "rxe_env.sh up" makes one,
 * its variables are exported (for programs the test starts), and it is
 * removed when this process exits.  Returns 0, or -1 with the reason in
 * test_env()->why.
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
			if (eq && !strncmp(line, "RDMAXFER_TEST_", 14)) {
				*eq = 0;
				setenv(line, eq + 1, 1);
			} else {
				snprintf(e->why + strlen(e->why), sizeof(e->why) - strlen(e->why),
					 "%s", line);
			}
		}
		st = pclose(f);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			if (!e->why[0])
				snprintf(e->why, sizeof(e->why), "rxe_env.sh up failed");
			return -1;
		}
		e->owner = getpid();
		atexit(test_env_down);
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

/* An IPv4 or IPv6 address in text; family 0 if it is neither. */
static inline struct rdmaxfer_addr mkaddr(const char *host, __u16 port)
{
	struct rdmaxfer_addr a;

	memset(&a, 0, sizeof(a));
	a.port = port;
	if (inet_pton(AF_INET, host, a.addr) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, host, a.addr) == 1)
		a.family = AF_INET6;
	return a;
}

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

static inline int do_listen(int fd, struct rdmaxfer_addr addr, __u32 backlog, __u32 *id,
			    __u16 *port)
{
	struct rdmaxfer_listen l = { .size = sizeof(l), .addr = addr, .backlog = backlog };
	int ret = xioctl(fd, RDMAXFER_IOC_LISTEN, &l);

	if (!ret) {
		*id = l.listen_id;
		if (port)
			*port = l.addr.port;
	}
	return ret;
}

/* CONNECT; *reason (if given) is the peer's reject reason. */
static inline int do_connect(int fd, struct rdmaxfer_addr addr, __s64 tmo, __u32 *id,
			     __u32 *reason)
{
	struct rdmaxfer_connect c = { .size = sizeof(c), .addr = addr, .timeout_ns = tmo };
	int ret = xioctl(fd, RDMAXFER_IOC_CONNECT, &c);

	if (reason)
		*reason = c.reject_reason;
	if (!ret)
		*id = c.conn_id;
	return ret;
}

/* ACCEPT; *peer (if given) is the peer's address. */
static inline int do_accept(int fd, __u32 lid, __s64 tmo, __u32 *id, struct rdmaxfer_addr *peer)
{
	struct rdmaxfer_accept a = { .size = sizeof(a), .listen_id = lid, .timeout_ns = tmo };
	int ret = xioctl(fd, RDMAXFER_IOC_ACCEPT, &a);

	if (!ret) {
		*id = a.conn_id;
		if (peer)
			*peer = a.peer;
	}
	return ret;
}

static inline int do_close(int fd, __u32 id)
{
	struct rdmaxfer_close c = { .size = sizeof(c), .id = id };

	return xioctl(fd, RDMAXFER_IOC_CLOSE, &c);
}

static inline int reg_buf(int fd, const void *addr, __u64 len, __u32 access, __u32 *id)
{
	struct rdmaxfer_reg_buf r = {
		.size = sizeof(r), .addr = U64_PTR(addr), .length = len, .access = access,
	};
	int ret = xioctl(fd, RDMAXFER_IOC_REG_BUF, &r);

	if (!ret && id)
		*id = r.buf_id;
	return ret;
}

static inline int dereg_buf(int fd, __u32 id)
{
	struct rdmaxfer_dereg_buf d = { .size = sizeof(d), .buf_id = id };

	return xioctl(fd, RDMAXFER_IOC_DEREG_BUF, &d);
}

static inline int do_expose(int fd, __u32 conn, __u32 buf, __u64 off, __u64 len,
			    __u32 access, __u32 *win)
{
	struct rdmaxfer_expose e = {
		.size = sizeof(e), .conn_id = conn, .buf_id = buf, .offset = off,
		.length = len, .access = access,
	};
	int ret = xioctl(fd, RDMAXFER_IOC_EXPOSE, &e);

	if (!ret && win)
		*win = e.window_id;
	return ret;
}

static inline int do_revoke(int fd, __u32 win)
{
	struct rdmaxfer_revoke r = { .size = sizeof(r), .window_id = win };

	return xioctl(fd, RDMAXFER_IOC_REVOKE, &r);
}

/* SUBMIT; *posted (if given) is the count the kernel says it posted. */
static inline int submit_n(int fd, struct rdmaxfer_op *ops, __u32 n, __u32 *posted)
{
	struct rdmaxfer_submit s = {
		.size = sizeof(s), .count = n, .op_size = sizeof(*ops), .ops = U64_PTR(ops),
	};
	int ret = xioctl(fd, RDMAXFER_IOC_SUBMIT, &s);

	if (posted)
		*posted = s.count;
	return ret;
}

/* REAP up to n completions, waiting up to tmo ns; the count, or -errno. */
static inline int reap_n(int fd, struct rdmaxfer_completion *c, __u32 n, __s64 tmo)
{
	struct rdmaxfer_reap r = {
		.size = sizeof(r), .count = n, .timeout_ns = tmo, .completions = U64_PTR(c),
	};
	int ret = xioctl(fd, RDMAXFER_IOC_REAP, &r);

	return ret ? -ret : (int)r.count;
}

static inline int do_recv(int fd, __u32 conn, void *p, __u32 len)
{
	struct rdmaxfer_recv r = {
		.size = sizeof(r), .conn_id = conn, .length = len, .addr = U64_PTR(p),
	};

	return xioctl(fd, RDMAXFER_IOC_RECV, &r);
}

static inline int get_stats(int fd, struct rdmaxfer_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return xioctl(fd, RDMAXFER_IOC_STATS, st);
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

#endif /* RDMAXFER_TEST_H */
