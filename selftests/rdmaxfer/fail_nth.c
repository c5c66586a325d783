// SPDX-License-Identifier: GPL-2.0
/*
 * fail_nth - every allocation on the path of each ioctl fails once.
 *
 * The technique is syzkaller's: write N to /proc/thread-self/fail-nth, make
 * the call, read the file back.  The kernel fails the N-th fault-injection
 * point this thread reaches (every slab and page allocation, with failslab
 * and fail_page_alloc set up to include sleeping allocations), and the
 * file reads 0 if that happened.  N goes 1, 2, 3 ... until the call gets
 * through without a fault: N - 1 is the number of fault sites on the path
 * (including those inside rdma_cm, ib_core and the provider that the call
 * reaches from this thread).
 *
 * After every faulted call: it failed with a clean errno (never EINVAL,
 * EFAULT, ENOTTY, EBADF, E2BIG or ENOENT, which would blame the caller's
 * arguments) and changed nothing (no id, no window, no completion, no
 * event that says otherwise), or it succeeded anyway (a fault it could
 * absorb, or one in a best-effort step such as sending a DREQ), and then
 * what it made must work: a listener accepts, a connection carries a SEND,
 * a buffer is the source of a WRITE, a window serves a READ, an operation
 * completes once and successfully.  Each path ends with the call working
 * and the files' counts (connections, buffers, windows, pinned bytes) back
 * where they were.  Pins, RDMA objects, kmemleak and the kernel log are the
 * runner's post-check after the whole file.
 *
 * On the debug kernel every other site is kmemleak's own bookkeeping
 * allocation after a successful one; kmemleak falls back to its memory
 * pool, so most of the "absorbed" faults are those.
 *
 * Paths: LISTEN, CONNECT, ACCEPT, the same with a key (and LISTEN with an
 * allow-list), REG_BUF, EXPOSE (on base and on huge
 * pages, where a fault makes it fall back to base pages), REVOKE, SUBMIT of
 * each operation, CLOSE of a connection and of a listener, RING_SETUP.
 * Connection setup in rdma_cm's handlers (the listener's CONNECT_REQUEST:
 * the passive side; the client's ROUTE_RESOLVED) runs in kernel worker
 * threads that fail-nth, a per-thread setting, cannot reach: the module
 * makes each step there a
 * site of its own fault attribute (debugfs fail_rdmaxfer_cm, see
 * kmod/conn.c "Fault injection"), which the paths "CM setup" and "CM
 * setup with a key" (the handshake's proofs on both sides) sweep the same
 * way (space = N, times = 1: the N-th site reached fails), around a
 * CONNECT to our own listener, so both sides' sites fail in turn.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
 * debugfs (the rig's debug kernel); skips elsewhere.  Restores the debugfs
 * settings it changes.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/keyctl.h>

#include "kselftest.h"
#include "rdmaxfer_test.h"

#define MAX_SITES	4000
#define CALL_TMO	(10 * SEC)
#define BUF_LEN		(256 * 1024)
#define FI		"/sys/kernel/debug/"
#define FI_CM		FI "fail_rdmaxfer_cm/"

static const char *addr4;	/* argv[1], else the test device's (test_env_try()) */
static int nth_fd = -1;
static int cm_mode;		/* arm fail_rdmaxfer_cm instead of fail-nth */

/* --- fault injection settings ------------------------------------------- */

static const char *const fi_knobs[][2] = {
	{ FI "failslab/ignore-gfp-wait", "N" },
	{ FI "failslab/verbose", "0" },
	{ FI "fail_page_alloc/ignore-gfp-wait", "N" },
	{ FI "fail_page_alloc/ignore-gfp-highmem", "N" },
	{ FI "fail_page_alloc/min-order", "0" },
	{ FI "fail_page_alloc/verbose", "0" },
};
#define NKNOBS (sizeof(fi_knobs) / sizeof(fi_knobs[0]))
static char fi_saved[NKNOBS][32];

static int put_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	close(fd);
	return ok ? 0 : -1;
}

static int get_str(const char *path, char *v, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, v, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	v[n] = 0;
	v[strcspn(v, "\n")] = 0;
	return 0;
}

static void fi_restore(void)
{
	unsigned int i;

	/* never leave connection setup armed for the tests after this one */
	put_str(FI_CM "probability", "0");

	for (i = 0; i < NKNOBS; i++)
		if (fi_saved[i][0])
			put_str(fi_knobs[i][0], fi_saved[i]);
}

static const char *fi_setup(void)
{
	unsigned int i;

	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (nth_fd < 0)
		return "no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION; make check KERNEL=debug)";
	if (access(FI "failslab", F_OK))
		mount("debugfs", FI, "debugfs", 0, NULL);
	for (i = 0; i < NKNOBS; i++) {
		if (get_str(fi_knobs[i][0], fi_saved[i], sizeof(fi_saved[i])))
			return "no failslab/fail_page_alloc in debugfs (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_DEBUG_FS)";
	}
	atexit(fi_restore);
	for (i = 0; i < NKNOBS; i++)
		if (put_str(fi_knobs[i][0], fi_knobs[i][1]))
			return "cannot set the fault injection knobs in debugfs";
	return NULL;
}

/*
 * fail_rdmaxfer_cm: the n-th site reached fails, once (n = 0: off).  With
 * space n, the sites before it pass (each takes 1 from space), and it fails
 * where space is down to 1.
 */
static void cm_arm(unsigned int n)
{
	char b[16];

	snprintf(b, sizeof(b), "%u", n);
	if (put_str(FI_CM "probability", "0") || put_str(FI_CM "times", "1") ||
	    put_str(FI_CM "space", b) || put_str(FI_CM "interval", "1") ||
	    put_str(FI_CM "verbose", "0") || (n && put_str(FI_CM "probability", "100")))
		ksft_exit_fail_msg("setting " FI_CM ": %s\n", strerror(errno));
}

/* Arm: the n-th fault site this thread (cm_mode: connection setup) reaches fails. */
static void nth_arm(unsigned int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%u", n);

	if (cm_mode) {
		cm_arm(n);
		return;
	}
	if (pwrite(nth_fd, b, len, 0) != len)
		ksft_exit_fail_msg("write fail-nth: %s\n", strerror(errno));
}

/* Disarm; true if the fault was injected. */
static int nth_fired(void)
{
	char b[16] = "";
	int fired;

	if (cm_mode) {
		if (get_str(FI_CM "times", b, sizeof(b)))
			ksft_exit_fail_msg("reading " FI_CM "times: %s\n", strerror(errno));
		cm_arm(0);
		return atoi(b) == 0;
	}
	if (pread(nth_fd, b, sizeof(b) - 1, 0) <= 0)
		ksft_exit_fail_msg("read fail-nth: %s\n", strerror(errno));
	fired = atoi(b) == 0;
	if (pwrite(nth_fd, "0", 1, 0) != 1)
		ksft_exit_fail_msg("write fail-nth: %s\n", strerror(errno));
	return fired;
}

/* --- what every path starts from ----------------------------------------- */

static struct {
	int srv, cli;
	__u32 lid, sconn, cconn;
	__u16 port;
	unsigned char *smem, *cmem;
	__u32 sbuf, cbuf, win;
	bool atomics;		/* the device does atomics (siw has none) */
	__s32 key;		/* a logon key of this process */
	__u32 klid;		/* a listener with it */
	__u16 kport;
} s;

/* The counts a path must leave as it found them. */
struct snap {
	__u32 conns[2], bufs[2], windows[2];
	__u64 pinned[2];
};

static void snap(struct snap *sn)
{
	struct rdmaxfer_stats st;
	int i, fds[2] = { s.srv, s.cli };

	for (i = 0; i < 2; i++) {
		memset(&st, 0, sizeof(st));
		rdx_stats(fds[i], &st);
		sn->conns[i] = st.num_conns;
		sn->bufs[i] = st.num_bufs;
		sn->windows[i] = st.num_windows;
		sn->pinned[i] = st.pinned_bytes;
	}
}

/*
 * Reap whatever either file has (events of the peer, completions); RECV
 * the messages so that their credits go back.  Returns how many operation
 * completions there were.
 */
static int drain(__s64 tmo)
{
	struct rdmaxfer_completion c[16];
	int fds[2] = { s.srv, s.cli }, i, k, n, ops = 0;
	char msg[4096];

	for (i = 0; i < 2; i++) {
		while ((n = rdx_reap(fds[i], c, 16, i ? tmo : 0)) > 0) {
			for (k = 0; k < n; k++) {
				if (c[k].opcode < 0x100)
					ops++;
				else if (c[k].opcode == RDMAXFER_EVENT_RECV)
					rdx_recv(fds[i], c[k].conn_id, msg, sizeof(msg), NULL);
			}
		}
	}
	return ops;
}

static int setup(void)
{
	__u32 access = RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE;
	struct rdmaxfer_device_info di;
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_completion c;

	s.srv = open(DEVPATH, O_RDWR | O_CLOEXEC);
	s.cli = open(DEVPATH, O_RDWR | O_CLOEXEC);
	s.smem = map_anon(BUF_LEN);
	s.cmem = map_anon(BUF_LEN);
	if (s.srv < 0 || s.cli < 0 || !s.smem || !s.cmem)
		return -1;
	/* touched: REG_BUF's pinning allocates no page on the paths swept */
	memset(s.smem, 0, BUF_LEN);
	memset(s.cmem, 0, BUF_LEN);
	s.key = (__s32)syscall(__NR_add_key, "logon", "rdmaxfer:fail_nth", "0123456789abcdef0123",
			       (size_t)20, KEY_SPEC_PROCESS_KEYRING);
	if (s.key <= 0 ||
	    rdx_listen_auth(s.srv, rdx_addr(addr4, 0), 16, s.key, NULL, 0, &s.klid, &s.kport) ||
	    rdx_listen(s.srv, rdx_addr(addr4, 0), 16, &s.lid, &s.port) ||
	    rdx_connect(s.cli, rdx_addr(addr4, s.port), CALL_TMO, &s.cconn, NULL) ||
	    rdx_accept(s.srv, s.lid, CALL_TMO, &s.sconn, NULL) ||
	    rdx_query_conn(s.cli, s.cconn, &ci) ||
	    rdx_query_device(s.cli, ci.dev_index, &di) ||
	    rdx_reg_buf(s.srv, s.smem, BUF_LEN, access, &s.sbuf) ||
	    rdx_reg_buf(s.cli, s.cmem, BUF_LEN, access, &s.cbuf))
		return -1;
	/* a window with REMOTE_ATOMIC is EOPNOTSUPP on a device without atomics */
	s.atomics = di.caps & RDMAXFER_DEVICE_CAP_ATOMIC;
	if (rdx_expose(s.srv, s.sconn, s.sbuf, 0, BUF_LEN, RDMAXFER_REMOTE_READ |
		       RDMAXFER_REMOTE_WRITE | (s.atomics ? RDMAXFER_REMOTE_ATOMIC : 0), &s.win))
		return -1;
	/* the client learns the window */
	while (rdx_reap(s.cli, &c, 1, CALL_TMO) == 1)
		if (c.opcode == RDMAXFER_EVENT_WINDOW)
			return 0;
	return -1;
}

/* --- the sweep ------------------------------------------------------------ */

/*
 * One path.  prep() makes what the call needs (not under fault injection)
 * and may fail the path; call() makes the call and returns 0 or an errno;
 * check() looks, after a failed call, that nothing changed (0 if so); undo()
 * takes back a call that succeeded, and whatever prep() left (0 if it could,
 * else it says why).
 */
struct path {
	const char *name;
	int (*prep)(void);
	int (*call)(void);
	int (*check)(int err);
	int (*undo)(int err);
};

static int bad_errno(int e)
{
	return e == EINVAL || e == EFAULT || e == ENOTTY || e == EBADF || e == E2BIG ||
	       e == ENOENT;
}

static void sweep(const struct path *p)
{
	unsigned int n, faulted = 0, absorbed = 0, errs[160] = { 0 };
	struct snap before, after;
	char hist[512] = "";
	int err, fired, bad = 0, e;
	size_t l = 0;

	drain(0);
	snap(&before);
	for (n = 1; n <= MAX_SITES; n++) {
		if (p->prep && p->prep()) {
			ksft_test_result_fail("%s: setting up step %u failed\n", p->name, n);
			return;
		}
		alarm(120);	/* a call that never returns is a failure */
		nth_arm(n);
		err = p->call();
		fired = nth_fired();
		alarm(0);
		if (!fired) {
			if (err) {
				ksft_print_msg("%s: %s without a fault\n", p->name, strerror(err));
				bad++;
			}
			if (p->undo && p->undo(err))
				bad++;
			break;
		}
		faulted++;
		if (!err) {
			absorbed++;
		} else {
			errs[err < 160 ? err : 0]++;
			if (bad_errno(err)) {
				ksft_print_msg("%s: fault %u: %s\n", p->name, n, strerror(err));
				bad++;
			} else if (p->check && p->check(err)) {
				ksft_print_msg("%s: fault %u (%s) left a change behind\n",
					       p->name, n, strerror(err));
				bad++;
			}
		}
		if (p->undo && p->undo(err))
			bad++;
	}
	if (n > MAX_SITES) {
		ksft_test_result_fail("%s: still faulting after %u sites\n", p->name, MAX_SITES);
		return;
	}
	drain(100 * MS);
	/* teardown of what was undone may be asynchronous: give it a moment */
	for (e = 0; e < 50; e++) {
		snap(&after);
		if (!memcmp(&before, &after, sizeof(before)))
			break;
		usleep(100000);
	}
	if (memcmp(&before, &after, sizeof(before))) {
		ksft_print_msg("%s: left behind: conns %u/%u -> %u/%u, bufs %u/%u -> %u/%u, windows %u/%u -> %u/%u, pinned %llu/%llu -> %llu/%llu\n",
			       p->name, before.conns[0], before.conns[1], after.conns[0],
			       after.conns[1], before.bufs[0], before.bufs[1], after.bufs[0],
			       after.bufs[1], before.windows[0], before.windows[1],
			       after.windows[0], after.windows[1],
			       (unsigned long long)before.pinned[0],
			       (unsigned long long)before.pinned[1],
			       (unsigned long long)after.pinned[0],
			       (unsigned long long)after.pinned[1]);
		bad++;
	}
	for (e = 0; e < 160; e++)
		if (errs[e] && l < sizeof(hist) - 32)
			l += snprintf(hist + l, sizeof(hist) - l, " %s %u",
				      e ? strerror(e) : "other", errs[e]);
	ksft_print_msg("%-10s %4u fault sites: %u failed cleanly (%s ), %u absorbed\n",
		       p->name, faulted, faulted - absorbed, l ? hist + 1 : "none", absorbed);
	ksft_test_result(!bad, "%s\n", p->name);
}

/* --- the paths --------------------------------------------------------------- */

static __u32 made, made2;	/* what a call created */
static __u16 made_port;
static __u32 tmp_conn, tmp_sconn;

/* One SEND of 8 bytes from the client on cconn arrives at the server's sconn. */
static int send_works(__u32 cconn, __u32 sconn)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_SEND, cconn, s.cbuf, 0, 0, 0, 8, 7);
	struct rdmaxfer_completion c;
	char m[8];
	int n, got = 0;

	if (rdx_submit(s.cli, &op, 1, NULL))
		return 0;
	while (!got && (n = rdx_reap(s.srv, &c, 1, CALL_TMO)) == 1)
		got = c.opcode == RDMAXFER_EVENT_RECV && c.conn_id == sconn;
	if (!got || rdx_recv(s.srv, sconn, m, sizeof(m), NULL))
		return 0;
	while ((n = rdx_reap(s.cli, &c, 1, CALL_TMO)) == 1 && c.opcode >= 0x100)
		;
	return n == 1 && c.user_data == 7 && !c.status;
}

/* One READ of 4 KiB from the server's window win (announced to the client) works. */
static int read_works(__u32 win, __u32 buf)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_READ, s.cconn, buf, 0, win, 0, 4096, 9);
	struct rdmaxfer_completion c;
	int n;

	if (rdx_submit(s.cli, &op, 1, NULL))
		return 0;
	while ((n = rdx_reap(s.cli, &c, 1, CALL_TMO)) == 1 && c.opcode >= 0x100)
		;
	return n == 1 && c.user_data == 9 && !c.status;
}

static int no_new_conn(int err)
{
	struct rdmaxfer_stats st;

	(void)err;
	return rdx_stats(s.cli, &st) || st.num_conns != 1;
}

static int call_listen(void)
{
	return rdx_listen(s.srv, rdx_addr(addr4, 0), 4, &made, &made_port);
}

/*
 * A listener that LISTEN returned (@key: with that key) accepts a
 * connection that carries a SEND.
 */
static int listener_works(int err, __s32 key, const char *what)
{
	int ok;

	if (err)
		return 0;
	ok = !rdx_connect_key(s.cli, rdx_addr(addr4, made_port), CALL_TMO, key, &tmp_conn, NULL);
	ok = ok && !rdx_accept(s.srv, made, CALL_TMO, &tmp_sconn, NULL) &&
	     send_works(tmp_conn, tmp_sconn);
	if (!ok)
		ksft_print_msg("%s: the listener it made does not work\n", what);
	rdx_close(s.cli, tmp_conn);
	rdx_close(s.srv, tmp_sconn);
	rdx_close(s.srv, made);
	drain(0);
	return !ok;
}

static int undo_listen(int err)
{
	return listener_works(err, 0, "LISTEN");
}

static int call_connect(void)
{
	return rdx_connect(s.cli, rdx_addr(addr4, s.port), CALL_TMO, &made, NULL);
}

/*
 * A connection that CONNECT returned carries a SEND.  Close what the server
 * queued (on listener @lid) of a connection the client gave up on, and ours.
 */
static int connection_works(int err, __u32 lid, const char *what)
{
	int ok = 1;
	__u32 id;

	if (!err) {
		ok = !rdx_accept(s.srv, lid, CALL_TMO, &tmp_sconn, NULL) &&
		     send_works(made, tmp_sconn);
		if (!ok)
			ksft_print_msg("%s: the connection it made does not work\n", what);
		rdx_close(s.cli, made);
		rdx_close(s.srv, tmp_sconn);
	}
	while (!rdx_accept(s.srv, lid, 0, &id, NULL))
		rdx_close(s.srv, id);
	drain(0);
	return !ok;
}

static int undo_connect(int err)
{
	return connection_works(err, s.lid, "CONNECT");
}

/* With a key and an allow-list of our own address: as LISTEN. */
static int call_listen_key(void)
{
	struct rdmaxfer_prefix p = { .family = AF_INET, .prefix_len = 32 };

	inet_pton(AF_INET, addr4, p.addr);
	return rdx_listen_auth(s.srv, rdx_addr(addr4, 0), 4, s.key, &p, 1, &made, &made_port);
}

static int undo_listen_key(int err)
{
	return listener_works(err, s.key, "LISTEN with a key");
}

static int call_connect_key(void)
{
	return rdx_connect_key(s.cli, rdx_addr(addr4, s.kport), CALL_TMO, s.key, &made, NULL);
}

static int undo_connect_key(int err)
{
	return connection_works(err, s.klid, "CONNECT with a key");
}

static int prep_accept(void)
{
	return rdx_connect(s.cli, rdx_addr(addr4, s.port), CALL_TMO, &tmp_conn, NULL);
}

static int call_accept(void)
{
	return rdx_accept(s.srv, s.lid, CALL_TMO, &made, NULL);
}

static int undo_accept(int err)
{
	int ret = err ? 0 : rdx_close(s.srv, made);
	__u32 id;

	/* a failed ACCEPT may have kept the connection queued, or dropped it */
	while (!rdx_accept(s.srv, s.lid, 0, &id, NULL))
		rdx_close(s.srv, id);
	rdx_close(s.cli, tmp_conn);
	drain(0);
	return ret;
}

static int call_reg_buf(void)
{
	return rdx_reg_buf(s.cli, s.cmem, BUF_LEN, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &made);
}

static int check_reg_buf(int err)
{
	struct rdmaxfer_stats st;

	(void)err;
	return rdx_stats(s.cli, &st) || st.num_bufs != 1;
}

/* A buffer that REG_BUF returned is the destination of a READ. */
static int undo_reg_buf(int err)
{
	int ok;

	if (err)
		return 0;
	ok = read_works(s.win, made);
	if (!ok)
		ksft_print_msg("REG_BUF: the buffer it made does not work\n");
	return rdx_dereg_buf(s.cli, made) || !ok;
}

static int call_expose(void)
{
	return rdx_expose(s.srv, s.sconn, s.sbuf, 0, 64 * 1024, RDMAXFER_REMOTE_READ, &made);
}

static int check_expose(int err)
{
	struct rdmaxfer_stats st;

	(void)err;
	return rdx_stats(s.srv, &st) || st.num_windows != 1;
}

/* A window that EXPOSE returned is announced to the peer and serves a READ. */
static int undo_expose(int err)
{
	struct rdmaxfer_completion c;
	int ok = 0, n;

	if (err)
		return 0;
	while (!ok && (n = rdx_reap(s.cli, &c, 1, CALL_TMO)) == 1)
		ok = c.opcode == RDMAXFER_EVENT_WINDOW && c.window_id == made;
	ok = ok && read_works(made, s.cbuf);
	if (!ok)
		ksft_print_msg("EXPOSE: the window it made does not work\n");
	ok = !rdx_revoke(s.srv, made) && ok;
	drain(0);
	return !ok;
}

static int prep_revoke(void)
{
	return rdx_expose(s.srv, s.sconn, s.sbuf, 0, 64 * 1024, RDMAXFER_REMOTE_READ, &made2);
}

static int call_revoke(void)
{
	return rdx_revoke(s.srv, made2);
}

/* A REVOKE that failed left the window: a second one must find it. */
static int undo_revoke(int err)
{
	int ret = 0;

	if (err) {
		ret = rdx_revoke(s.srv, made2);
		if (ret)
			ksft_print_msg("REVOKE failed (%s) but the window is gone (%s)\n",
				       strerror(err), strerror(ret));
	}
	drain(0);
	return ret;
}

/*
 * EXPOSE of a window on huge pages.  Such a window is registered with huge
 * FRWR pages (kmod/window.c, "Huge-page segments"); a fault while its segments
 * are mapped does not fail EXPOSE but makes it fall back to base pages.  The
 * window here takes two huge segments; a call that absorbed a fault may have
 * either layout (read from a trace instance of our own), and its window
 * must serve READs at both ends with the buffer's bytes.  Set up without
 * fault injection by huge_setup(), which says why it cannot be (no huge
 * pages, no tracefs, a device that takes no huge FRWR pages).
 */
#define HUGE_WIN	(18UL << 20)	/* 16 MiB + 2 MiB: two huge segments */
#define HUGE_SEGS	2

static struct {
	unsigned char *mem;
	__u32 buf;
	long reserved;
	unsigned int fallbacks;
	char tdir[256];
} hg;

static int call_expose_huge(void)
{
	expose_trace_clear(hg.tdir);
	return rdx_expose(s.srv, s.sconn, hg.buf, 0, HUGE_WIN, RDMAXFER_REMOTE_READ, &made);
}

/* A READ of 4 KiB at @roff of window @win brings the buffer's bytes there. */
static int huge_read_matches(__u32 win, __u64 roff)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_READ, s.cconn, s.cbuf, 0, win, roff, 4096, 11);
	struct rdmaxfer_completion c;
	int n;

	memset(s.cmem, 0, 4096);
	if (rdx_submit(s.cli, &op, 1, NULL))
		return 0;
	while ((n = rdx_reap(s.cli, &c, 1, CALL_TMO)) == 1 && c.opcode >= 0x100)
		;
	return n == 1 && c.user_data == 11 && !c.status && !memcmp(s.cmem, hg.mem + roff, 4096);
}

static int undo_expose_huge(int err)
{
	struct rdmaxfer_completion c;
	int ok = 0, n, segs;

	if (err)
		return 0;
	while (!ok && (n = rdx_reap(s.cli, &c, 1, CALL_TMO)) == 1)
		ok = c.opcode == RDMAXFER_EVENT_WINDOW && c.window_id == made;
	segs = expose_trace_segments(hg.tdir, made);
	if (segs > HUGE_SEGS) {
		hg.fallbacks++;
	} else if (segs != HUGE_SEGS) {
		ksft_print_msg("EXPOSE on huge pages: window of %d segments\n", segs);
		ok = 0;
	}
	ok = ok && huge_read_matches(made, 0) && huge_read_matches(made, HUGE_WIN - 4096);
	if (!ok)
		ksft_print_msg("EXPOSE on huge pages: the window it made does not work\n");
	ok = !rdx_revoke(s.srv, made) && ok;
	drain(0);
	return !ok;
}

/* NULL, or why the path cannot run here. */
static const char *huge_setup(void)
{
	const char *how;
	size_t i;
	int segs, err;

	hg.mem = huge_map(HUGE_WIN, &how, &hg.reserved);
	if (!hg.mem)
		return "no memory for the huge-page window";
	if (!strcmp(how, "base pages"))
		return "no huge pages (no THP, and vm.nr_hugepages could not be raised)";
	if (!expose_trace_start(hg.tdir, sizeof(hg.tdir), "rdmaxfer_fail_nth"))
		return "no tracefs instance to read the window's layout from";
	for (i = 0; i < HUGE_WIN; i++)
		hg.mem[i] = (unsigned char)(i * 7 + i / 4096);
	if (rdx_reg_buf(s.srv, hg.mem, HUGE_WIN, RDMAXFER_BUF_READ, &hg.buf))
		return "REG_BUF of the huge-page buffer failed";
	err = call_expose_huge();
	if (err)
		return "EXPOSE of the huge-page window failed without a fault";
	segs = expose_trace_segments(hg.tdir, made);
	rdx_revoke(s.srv, made);
	drain(0);
	if (segs != HUGE_SEGS)
		return "the device does not register this window with huge pages";
	return NULL;
}

static void huge_teardown(void)
{
	if (hg.buf)
		rdx_dereg_buf(s.srv, hg.buf);
	if (hg.tdir[0])
		rmdir(hg.tdir);
	if (hg.mem)
		munmap(hg.mem, HUGE_WIN);
	huge_unreserve(hg.reserved);
}

static __u16 op_kind;

static int call_submit(void)
{
	struct rdmaxfer_op op = mkop(op_kind, s.cconn, s.cbuf, 0, s.win, 0, 4096, 0x5eed);
	__u32 posted = 0;
	int ret;

	if (op_kind == RDMAXFER_OP_SEND) {
		op.window_id = 0;
		op.length = 64;
	}
	if (op_kind == RDMAXFER_OP_CAS || op_kind == RDMAXFER_OP_FADD) {
		op.buf_id = 0;
		op.length = 8;
		op.compare_add = 1;
	}
	ret = rdx_submit(s.cli, &op, 1, &posted);
	if (!ret && posted != 1)
		ret = EIO;
	return ret;
}

/* A SUBMIT that failed posted nothing: no completion comes. */
static int check_submit(int err)
{
	(void)err;
	return drain(50 * MS) != 0;
}

/* A posted operation completes exactly once (successfully or not). */
static int undo_submit(int err)
{
	struct rdmaxfer_completion c;
	int n;

	if (err)
		return 0;
	do
		n = rdx_reap(s.cli, &c, 1, CALL_TMO);
	while (n == 1 && c.opcode >= 0x100);
	if (n != 1 || c.user_data != 0x5eed) {
		ksft_print_msg("SUBMIT of opcode %u: no completion (%d)\n", op_kind, n);
		return -1;
	}
	if (c.status) {
		ksft_print_msg("SUBMIT of opcode %u: posted, then completed with %s\n", op_kind,
			       strerror(-c.status));
		return -1;
	}
	if (drain(50 * MS)) {
		ksft_print_msg("SUBMIT of opcode %u: a second completion\n", op_kind);
		return -1;
	}
	return 0;
}

/* The next operation completion on @fd, or -1. */
static int reap_op(int fd, struct rdmaxfer_completion *c)
{
	int n;

	do
		n = rdx_reap(fd, c, 1, CALL_TMO);
	while (n == 1 && c->opcode >= 0x100);
	return n == 1 ? 0 : -1;
}

/* A slot on the client's side of the connection. */
static int call_recv(void)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_RECV, s.cconn, s.cbuf, 8192, 0, 0, 4096, 0x5eed);

	return rdx_submit(s.cli, &op, 1, NULL);
}

/* A posted slot takes the next message of the peer, exactly once. */
static int undo_recv(int err)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_SEND, s.sconn, s.sbuf, 0, 0, 0, 8, 0x5e4d);
	struct rdmaxfer_completion c;

	if (err)
		return 0;
	if (wait_peer_slots(s.srv, s.sconn, CALL_TMO) || rdx_submit(s.srv, &op, 1, NULL) ||
	    reap_op(s.srv, &c) || c.status) {
		ksft_print_msg("SUBMIT RECV: the peer could not send into the slot\n");
		return -1;
	}
	if (reap_op(s.cli, &c) || c.user_data != 0x5eed || c.status || c.bytes != 8) {
		ksft_print_msg("SUBMIT RECV: the slot did not complete once with the message\n");
		return -1;
	}
	return drain(50 * MS) ? -1 : 0;
}

/*
 * A slot on the server's side, for a zero-copy SEND of the client; each
 * step posts one, and those of failed steps stay posted: they must not
 * overlap (a slot's memory is the kernel's while it is posted: the
 * module's own messages may pass through it).
 */
static int prep_send_slot(void)
{
	static unsigned int k;
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_RECV, s.sconn, s.sbuf, 8192 + (k++ % 48) * 4096,
				     0, 0, 4096, 0x510);

	if (rdx_submit(s.srv, &op, 1, NULL))
		return -1;
	return wait_peer_slots(s.cli, s.cconn, CALL_TMO);
}

static int call_send_slot(void)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_SEND, s.cconn, s.cbuf, 0, 0, 0, 64, 0x5eed);

	return rdx_submit(s.cli, &op, 1, NULL);
}

/* Posted: the SEND completes once, into one slot. */
static int undo_send_slot(int err)
{
	struct rdmaxfer_completion c = { 0 };

	if (err)
		return 0;
	if (reap_op(s.cli, &c) || c.user_data != 0x5eed || c.status) {
		ksft_print_msg("zero-copy SEND: no completion, or an error\n");
		return -1;
	}
	if (reap_op(s.srv, &c) || c.user_data != 0x510 || c.status || c.bytes != 64) {
		ksft_print_msg("zero-copy SEND: the slot did not get it (opcode %u user_data %#llx status %d wc_status %u bytes %llu)\n",
			       c.opcode, (unsigned long long)c.user_data, c.status, c.wc_status,
			       (unsigned long long)c.bytes);
		return -1;
	}
	return drain(50 * MS) ? -1 : 0;
}

static int prep_close_conn(void)
{
	if (rdx_connect(s.cli, rdx_addr(addr4, s.port), CALL_TMO, &tmp_conn, NULL))
		return -1;
	return rdx_accept(s.srv, s.lid, CALL_TMO, &tmp_sconn, NULL);
}

static int call_close_conn(void)
{
	return rdx_close(s.cli, tmp_conn);
}

static int undo_close_conn(int err)
{
	int ret = err ? rdx_close(s.cli, tmp_conn) : 0;

	if (ret)
		ksft_print_msg("CLOSE failed (%s) and the connection is gone\n", strerror(err));
	rdx_close(s.srv, tmp_sconn);
	drain(0);
	return ret;
}

static int prep_close_listener(void)
{
	return rdx_listen(s.srv, rdx_addr(addr4, 0), 4, &made, NULL);
}

static int call_close_listener(void)
{
	return rdx_close(s.srv, made);
}

static int undo_close_listener(int err)
{
	int ret = err ? rdx_close(s.srv, made) : 0;

	if (ret)
		ksft_print_msg("CLOSE failed (%s) and the listener is gone\n", strerror(err));
	return ret;
}

/* RING_SETUP on a file of its own (a ring is set up once per file). */
static int ring_fd = -1;

static int prep_ring(void)
{
	ring_fd = open(DEVPATH, O_RDWR | O_CLOEXEC);
	return ring_fd < 0 ? -1 : 0;
}

static int call_ring(void)
{
	struct rdmaxfer_ring_setup rs = { .size = sizeof(rs), .entries = 1024 };

	return rdx_ioctl(ring_fd, RDMAXFER_IOC_RING_SETUP, &rs);
}

/* A RING_SETUP that failed made no ring: nothing to map. */
static int check_ring(int err)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ring_fd, 0);

	(void)err;
	if (p == MAP_FAILED)
		return errno != EINVAL;
	munmap(p, 4096);
	return 1;
}

/* A ring that was set up maps, and says what it is. */
static int undo_ring(int err)
{
	size_t len = (256 + 48 * 1024 + 4095) & ~4095UL;
	struct rdmaxfer_ring *r;
	int ret = 0;

	if (!err) {
		r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
		if (r == MAP_FAILED || r->mask != 1023 || r->tail || r->flags) {
			ksft_print_msg("RING_SETUP: the ring does not map, or is not as set up\n");
			ret = -1;
		}
		if (r != MAP_FAILED)
			munmap(r, len);
	}
	close(ring_fd);
	ring_fd = -1;
	return ret;
}

/* After all of it, the first connection still moves data. */
static int works_after(void)
{
	struct rdmaxfer_op op = mkop(RDMAXFER_OP_WRITE, s.cconn, s.cbuf, 0, s.win, 0, 4096, 1);
	struct rdmaxfer_completion c;

	memset(s.cmem, 0xa5, 4096);
	if (rdx_submit(s.cli, &op, 1, NULL) || rdx_reap(s.cli, &c, 1, CALL_TMO) != 1)
		return 0;
	return c.opcode == RDMAXFER_OP_WRITE && !c.status && !memcmp(s.smem, s.cmem, 4096);
}

int main(int argc, char **argv)
{
	static const struct { __u16 op; const char *name; } ops[] = {
		{ RDMAXFER_OP_WRITE, "SUBMIT WRITE" }, { RDMAXFER_OP_READ, "SUBMIT READ" },
		{ RDMAXFER_OP_SEND, "SUBMIT SEND" }, { RDMAXFER_OP_WRITE_IMM, "SUBMIT WRITE_IMM" },
		{ RDMAXFER_OP_CAS, "SUBMIT CAS" }, { RDMAXFER_OP_FADD, "SUBMIT FADD" },
	};
	const struct path paths[] = {
		{ "LISTEN", NULL, call_listen, NULL, undo_listen },
		{ "CONNECT", NULL, call_connect, no_new_conn, undo_connect },
		{ "ACCEPT", prep_accept, call_accept, NULL, undo_accept },
		{ "LISTEN with a key", NULL, call_listen_key, NULL, undo_listen_key },
		{ "CONNECT with a key", NULL, call_connect_key, no_new_conn, undo_connect_key },
		{ "REG_BUF", NULL, call_reg_buf, check_reg_buf, undo_reg_buf },
		{ "EXPOSE", NULL, call_expose, check_expose, undo_expose },
		{ "REVOKE", prep_revoke, call_revoke, NULL, undo_revoke },
		{ "CLOSE conn", prep_close_conn, call_close_conn, NULL, undo_close_conn },
		{ "CLOSE listener", prep_close_listener, call_close_listener, NULL,
		  undo_close_listener },
		{ "RING_SETUP", prep_ring, call_ring, check_ring, undo_ring },
	};
	const struct path slot_paths[] = {
		{ "SUBMIT RECV", NULL, call_recv, check_submit, undo_recv },
		{ "SUBMIT SEND into a slot", prep_send_slot, call_send_slot, check_submit,
		  undo_send_slot },
	};
	unsigned int i;
	const char *why;

	(void)argc;
	ksft_print_header();
	if (access(DEVPATH, F_OK))
		ksft_exit_skip(DEVPATH " missing: rdmaxfer.ko is not loaded\n");
	if (argv[1]) {
		addr4 = argv[1];
	} else {
		int r = test_env_try();

		if (r == -2)
			ksft_exit_fail_msg("%s\n", test_env()->why);
		if (r)
			ksft_exit_skip("no RDMA device to test on: %s\n", test_env()->why);
		addr4 = test_env()->addr;
	}
	why = fi_setup();
	if (why)
		ksft_exit_skip("%s\n", why);
	if (setup())
		ksft_exit_fail_msg("setting up a connection on %s failed: %s\n", addr4,
				   strerror(errno));
	ksft_set_plan(sizeof(paths) / sizeof(paths[0]) + sizeof(ops) / sizeof(ops[0]) +
		      sizeof(slot_paths) / sizeof(slot_paths[0]) + 5);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		sweep(&paths[i]);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct path p = { ops[i].name, NULL, call_submit, check_submit, undo_submit };

		op_kind = ops[i].op;
		if (!s.atomics && (op_kind == RDMAXFER_OP_CAS || op_kind == RDMAXFER_OP_FADD)) {
			ksft_test_result_skip("%s: the device has no atomics (atomic_cap NONE)\n",
					      p.name);
			continue;
		}
		sweep(&p);
	}
	why = huge_setup();
	if (why) {
		ksft_test_result_skip("EXPOSE on huge pages: %s\n", why);
		ksft_test_result_skip("EXPOSE on huge pages falls back: %s\n", why);
	} else {
		struct path p = { "EXPOSE on huge pages", NULL, call_expose_huge, check_expose,
				  undo_expose_huge };

		sweep(&p);
		ksft_test_result(hg.fallbacks > 0,
				 "EXPOSE on huge pages falls back: %u times to base pages\n",
				 hg.fallbacks);
	}
	huge_teardown();
	/* after the copy path: once a side posted slots, its peer's SENDs go zero-copy */
	for (i = 0; i < sizeof(slot_paths) / sizeof(slot_paths[0]); i++)
		sweep(&slot_paths[i]);
	if (access(FI_CM "space", F_OK)) {
		ksft_test_result_skip("CM setup: no " FI_CM " (a module without it, or no debugfs)\n");
		ksft_test_result_skip("CM setup with a key: no " FI_CM "\n");
	} else {
		struct path p = { "CM setup", NULL, call_connect, no_new_conn, undo_connect };
		struct path pk = { "CM setup with a key", NULL, call_connect_key, no_new_conn,
				   undo_connect_key };

		cm_mode = 1;
		sweep(&p);
		sweep(&pk);
		cm_mode = 0;
		cm_arm(0);
	}
	ksft_test_result(works_after(), "works_after\n");
	close(s.cli);
	close(s.srv);
	ksft_finished();
}
