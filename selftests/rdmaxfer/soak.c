// SPDX-License-Identifier: GPL-2.0
/*
 * soak - many threads run the whole life of a connection over and over
 * while the RDMA device under them is deleted and added again.
 *
 * Each of RDMAXFER_SOAK_THREADS threads (default 64) loops for
 * RDMAXFER_SOAK_SECS seconds (default 20): open two files, LISTEN on one,
 * CONNECT from the other, ACCEPT, REG_BUF on both, EXPOSE a window, wait for
 * its WINDOW event, SUBMIT a WRITE, a READ and a SEND, REAP their
 * completions, REVOKE, close both files.  Meanwhile another thread deletes
 * the device (Soft-RoCE, or Soft-iWARP with RDMAXFER_TEST_PROVIDER=siw) every
 * two seconds and adds it back (`rdma link delete/add`), so every step also
 * meets a device that is going or gone.
 * The device is rxe_env.sh's own (test_env_try()): one named by the caller
 * is not deleted, and the test skips.
 *
 * What must hold:
 *  - nothing hangs: every call returns, every thread finishes;
 *  - every posted operation completes exactly once, with status 0 or an
 *    error that says the connection or device went away;
 *  - a call that fails says so with an errno of a vanished device or
 *    connection or a refused connect, never one that blames its arguments
 *    (EINVAL, EFAULT, ENOTTY, EBADF, E2BIG) and never ENOENT for an id it
 *    was just given (ids stay until CLOSE; a window's goes with its
 *    connection's teardown, so REVOKE may say ENOENT once the connection
 *    is down, and only then);
 *  - afterwards, with the device back, a clean round works.
 * Pins, RDMA objects, kmemleak and the kernel log are the runner's
 * post-check and dmesg_check.sh's.  Prints the rounds done, the operations
 * completed and the errnos seen per step.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest.h"
#include "rdmaxfer_test.h"

#define BUF_LEN		(64 * 1024)
#define STEP_TMO	(15 * SEC)	/* a connect, an accept, a window, a completion */
#define NOPS		3

static const char *addr4;	/* test_env()->addr */
static __s64 deadline;
static int stop_rxe;

enum step { S_OPEN, S_LISTEN, S_CONNECT, S_ACCEPT, S_REG, S_EXPOSE, S_WINDOW, S_SUBMIT,
	    S_COMPLETION, S_REVOKE, S_NSTEPS };
static const char *const step_name[S_NSTEPS] = {
	"open", "listen", "connect", "accept", "reg_buf", "expose", "window", "submit",
	"completion", "revoke",
};

#define MAX_ERRNO	200
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long errs[S_NSTEPS][MAX_ERRNO];
static unsigned long rounds, clean_rounds, ops_ok, ops_failed, bad, dup_or_lost;
static unsigned long rxe_cycles;

/* An errno that a vanished device or connection (or a refused connect) explains. */
static int fine_errno(enum step s, int e)
{
	switch (e) {
	case ENODEV: case ENOTCONN: case ECONNRESET: case ECONNREFUSED: case ECONNABORTED:
	case ETIMEDOUT: case EHOSTUNREACH: case ENETUNREACH: case EADDRNOTAVAIL:
	case ECANCELED: case EIO: case EREMOTEIO: case EADDRINUSE: case ENOMEM:
		return 1;
	case EAGAIN:	/* accept/connect: nothing came in time */
		return s == S_ACCEPT || s == S_WINDOW;
	default:
		return 0;
	}
}

static void count_err(enum step s, int e)
{
	pthread_mutex_lock(&stats_lock);
	errs[s][e > 0 && e < MAX_ERRNO ? e : 0]++;
	if (!fine_errno(s, e)) {
		bad++;
		ksft_print_msg("%s: unexpected %s (%d)\n", step_name[s], strerror(e), e);
	}
	pthread_mutex_unlock(&stats_lock);
}

/* Wait for the WINDOW event; other events (DISCONNECTED) end the round. */
static int wait_window(int fd, __u32 *win)
{
	struct rdmaxfer_completion c;
	__s64 end = now_ns() + STEP_TMO;
	int n;

	while (now_ns() < end) {
		n = rdx_reap(fd, &c, 1, 200 * MS);
		if (n < 0)
			return -n;
		if (!n)
			continue;
		if (c.opcode == RDMAXFER_EVENT_WINDOW) {
			*win = c.window_id;
			return 0;
		}
		if (c.opcode == RDMAXFER_EVENT_DISCONNECTED)
			return c.status ? -c.status : ECONNRESET;
	}
	return EAGAIN;
}

/*
 * Take the completions of the @posted operations (user_data 0..posted-1),
 * skipping events.  Returns 0 when each came once, -1 on a duplicate, a
 * stranger or a missing one.  *@failed is set if one failed.
 */
static int take_ops(int fd, unsigned int posted, int *failed)
{
	struct rdmaxfer_completion c[8];
	unsigned int seen = 0, got = 0;
	__s64 end = now_ns() + STEP_TMO;
	int n, i;

	*failed = 0;
	while (got < posted && now_ns() < end) {
		n = rdx_reap(fd, c, 8, 200 * MS);
		if (n < 0) {
			count_err(S_COMPLETION, -n);
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (c[i].opcode >= 0x100)
				continue;	/* an event */
			if (c[i].user_data >= posted || (seen & (1u << c[i].user_data)))
				return -1;
			seen |= 1u << c[i].user_data;
			got++;
			if (c[i].status) {
				*failed = 1;
				count_err(S_COMPLETION, -c[i].status);
			}
		}
	}
	return got == posted ? 0 : -1;
}

/* Is connection @id of @fd down (or gone with its device)? */
static int conn_down(int fd, __u32 id)
{
	struct rdmaxfer_conn_info ci;
	int e = rdx_query_conn(fd, id, &ci);

	if (e)
		return e == ENOTCONN || e == ENODEV;
	return ci.state == RDMAXFER_CONN_DISCONNECTED;
}

/* One round; returns 1 if every step succeeded. */
static int round_trip(unsigned char *cmem, unsigned char *smem)
{
	struct rdmaxfer_op ops[NOPS];
	__u32 lid, cconn, sconn, cbuf, sbuf, win, rwin, posted = 0;
	int srv, cli, e, failed, ok = 0;
	__u16 port;

	srv = open(DEVPATH, O_RDWR | O_CLOEXEC);
	cli = open(DEVPATH, O_RDWR | O_CLOEXEC);
	if (srv < 0 || cli < 0) {
		count_err(S_OPEN, errno);
		goto out;
	}
	e = rdx_listen(srv, rdx_addr(addr4, 0), 1, &lid, &port);
	if (e) {
		count_err(S_LISTEN, e);
		goto out;
	}
	e = rdx_connect(cli, rdx_addr(addr4, port), STEP_TMO, &cconn, NULL);
	if (e) {
		count_err(S_CONNECT, e);
		goto out;
	}
	e = rdx_accept(srv, lid, STEP_TMO, &sconn, NULL);
	if (e) {
		count_err(S_ACCEPT, e);
		goto out;
	}
	e = rdx_reg_buf(cli, cmem, BUF_LEN, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &cbuf);
	if (!e)
		e = rdx_reg_buf(srv, smem, BUF_LEN, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &sbuf);
	if (e) {
		count_err(S_REG, e);
		goto out;
	}
	e = rdx_expose(srv, sconn, sbuf, 0, BUF_LEN,
		       RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE, &win);
	if (e) {
		count_err(S_EXPOSE, e);
		goto out;
	}
	e = wait_window(cli, &rwin);
	if (e) {
		count_err(S_WINDOW, e);
		goto out;
	}
	ops[0] = mkop(RDMAXFER_OP_WRITE, cconn, cbuf, 0, rwin, 0, BUF_LEN, 0);
	ops[1] = mkop(RDMAXFER_OP_READ, cconn, cbuf, 0, rwin, 0, BUF_LEN, 1);
	ops[2] = mkop(RDMAXFER_OP_SEND, cconn, cbuf, 0, 0, 0, 64, 2);
	e = rdx_submit(cli, ops, NOPS, &posted);
	if (e && e != EINTR) {
		count_err(S_SUBMIT, e);
		goto out;
	}
	if (take_ops(cli, posted, &failed)) {
		pthread_mutex_lock(&stats_lock);
		dup_or_lost++;
		ksft_print_msg("round: the completions of %u operations did not come once each\n",
			       posted);
		pthread_mutex_unlock(&stats_lock);
		goto out;
	}
	pthread_mutex_lock(&stats_lock);
	if (failed)
		ops_failed += posted;
	else
		ops_ok += posted;
	pthread_mutex_unlock(&stats_lock);
	/*
	 * The connection's teardown takes its windows: after a failed
	 * operation, or when the device went away after the operations completed.
	 * ENOENT is right then, and only then.
	 */
	e = rdx_revoke(srv, win);
	if (e && e != ENOTCONN && !(e == ENOENT && (failed || conn_down(srv, sconn))))
		count_err(S_REVOKE, e);
	ok = !failed && !e && posted == NOPS;
out:
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	return ok;
}

static void *worker(void *arg)
{
	unsigned char *cmem = map_anon(BUF_LEN), *smem = map_anon(BUF_LEN);
	unsigned long n = 0, good = 0;

	(void)arg;
	if (!cmem || !smem)
		return NULL;
	while (now_ns() < deadline) {
		if (round_trip(cmem, smem))
			good++;
		else
			usleep(50000);	/* the device may be gone: do not spin */
		n++;
	}
	pthread_mutex_lock(&stats_lock);
	rounds += n;
	clean_rounds += good;
	pthread_mutex_unlock(&stats_lock);
	munmap(cmem, BUF_LEN);
	munmap(smem, BUF_LEN);
	return NULL;
}

/* The device's provider, as `rdma link add ... type` takes it (rxe_env.sh) */
static const char *provider(void)
{
	const char *p = test_env_var("RDMAXFER_TEST_PROVIDER");

	return *p ? p : "rxe";
}

/* rdma COMMAND... about the test's device (%s: its name, then its netdev): its exit status */
static int rdma_cmd(const char *fmt)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), fmt, test_env()->dev, test_env()->netdev);
	return system(cmd);
}

static int rxe_add(void)
{
	char add[128];
	int i;

	if (!rdma_cmd("rdma link show '%s/1' >/dev/null 2>&1"))
		return 0;
	snprintf(add, sizeof(add), "rdma link add '%%s' type '%s' netdev '%%s'", provider());
	if (rdma_cmd(add))
		return -1;
	for (i = 0; i < 100; i++) {	/* ACTIVE within 10 s */
		if (!rdma_cmd("rdma link show '%s/1' 2>/dev/null | grep -q ACTIVE"))
			return 0;
		usleep(100000);
	}
	return -1;
}

static void *rxe_cycler(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_rxe, __ATOMIC_ACQUIRE) && now_ns() < deadline - 2 * SEC) {
		usleep(2000000);
		if (rdma_cmd("rdma link delete '%s'"))
			continue;
		usleep(300000);
		if (rxe_add())
			ksft_print_msg("could not add %s back on %s\n", test_env()->dev,
				       test_env()->netdev);
		pthread_mutex_lock(&stats_lock);
		rxe_cycles++;
		pthread_mutex_unlock(&stats_lock);
	}
	return NULL;
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : def;
}

int main(void)
{
	long nthreads = env_long("RDMAXFER_SOAK_THREADS", 64);
	long secs = env_long("RDMAXFER_SOAK_SECS", 20);
	unsigned char *cmem, *smem;
	pthread_t *th, cyc;
	long i;
	int e;

	ksft_print_header();
	if (access(DEVPATH, R_OK | W_OK))
		ksft_exit_skip("no %s\n", DEVPATH);
	e = test_env_try();
	if (e == -2)
		ksft_exit_fail_msg("%s\n", test_env()->why);
	if (e)
		ksft_exit_skip("no RDMA device to test on: %s\n", test_env()->why);
	if (!test_env()->own)
		ksft_exit_skip("deletes and re-adds %s: runs only on a device of its own (unset RDMAXFER_TEST_DEV)\n",
			       test_env()->dev);
	addr4 = test_env()->addr;
	if (nthreads < 1 || nthreads > 256 || secs < 1)
		ksft_exit_fail_msg("bad RDMAXFER_SOAK_THREADS or RDMAXFER_SOAK_SECS\n");
	ksft_set_plan(4);

	th = calloc(nthreads, sizeof(*th));
	if (!th)
		ksft_exit_fail_msg("out of memory\n");
	deadline = now_ns() + secs * SEC;
	e = pthread_create(&cyc, NULL, rxe_cycler, NULL);
	for (i = 0; !e && i < nthreads; i++)
		e = pthread_create(&th[i], NULL, worker, NULL);
	if (e)
		ksft_exit_fail_msg("pthread_create: %s\n", strerror(e));
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);	/* the runner's timeout catches a hang */
	__atomic_store_n(&stop_rxe, 1, __ATOMIC_RELEASE);
	pthread_join(cyc, NULL);

	ksft_print_msg("%ld threads, %ld s: %lu rounds (%lu clean), %lu operations completed, %lu with an error; %s deleted and added %lu times\n",
		       nthreads, secs, rounds, clean_rounds, ops_ok + ops_failed, ops_failed,
		       test_env()->dev, rxe_cycles);
	for (i = 0; i < S_NSTEPS; i++) {
		char line[512];
		int len = 0, k;

		for (k = 0; k < MAX_ERRNO; k++)
			if (errs[i][k])
				len += snprintf(line + len, sizeof(line) - len, " %s:%lu",
						k ? strerrorname_np(k) ?: "?" : "other",
						errs[i][k]);
		if (len)
			ksft_print_msg("  %s errors:%s\n", step_name[i], line);
	}
	ksft_test_result(!dup_or_lost, "every_operation_completes_once\n");
	ksft_test_result(!bad, "errors_only_from_vanished_device_or_connection\n");
	ksft_test_result(rxe_cycles > 0 && clean_rounds > 0,
			 "soak_ran_with_device_removals\n");

	/* the device back, one clean round */
	e = rxe_add();
	cmem = map_anon(BUF_LEN);
	smem = map_anon(BUF_LEN);
	ksft_test_result(!e && cmem && smem && round_trip(cmem, smem), "clean_round_after_soak\n");
	ksft_finished();
}
