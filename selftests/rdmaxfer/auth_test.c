// SPDX-License-Identifier: GPL-2.0
/*
 * auth_test - who may connect and what a peer can cost: LISTEN and CONNECT
 * with keys from the kernel keyring (the handshake proves both ends hold
 * the same one), a listener's allow-list, and the cap on a file's
 * connections (max_conns_per_file), on a real device.
 *
 * Both ends run in this process on the device rxe_env.sh makes or names
 * (test_env_try()), each with its own open file, as in xfer_test.  Keys
 * are "logon" keys added to this process's keyring by each test (the
 * harness runs every test in a child of its own), so the module finds
 * them with the test's credentials.  Each refusal is checked for what the
 * client is told (reject_reason), for what the server's user sees (no
 * connection to ACCEPT) and for the counters (STATS file_auth).
 *
 * Built twice, natively and as a 32-bit binary (compat_ioctl).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/keyctl.h>

#include <linux/rdmaxfer.h>

#include "kselftest_harness.h"
#include "rdmaxfer_test.h"

#define TMO (10 * SEC)
#define MAX_CONNS_PARAM	"/sys/module/rdmaxfer/parameters/max_conns_per_file"
#define USER_CONNS_PARAM "/sys/module/rdmaxfer/parameters/max_conns_per_user"

static const char *test_addr4;

static int32_t add_key(const char *type, const char *desc, const void *data, size_t len)
{
	long r = syscall(__NR_add_key, type, desc, data, len, KEY_SPEC_PROCESS_KEYRING);

	return r < 0 ? -errno : (int32_t)r;
}

/* A logon key "rdmaxfer:<name>" of @len bytes, each @fill. */
static int32_t logon_key(const char *name, unsigned char fill, size_t len)
{
	unsigned char secret[512];
	char desc[64];

	memset(secret, fill, sizeof(secret));
	snprintf(desc, sizeof(desc), "rdmaxfer:%s", name);
	return add_key("logon", desc, secret, len);
}

static struct rdmaxfer_auth_counters auth_counters(int fd)
{
	struct rdmaxfer_stats st;
	struct rdmaxfer_auth_counters none = { 0 };

	if (rdx_stats(fd, &st))
		return none;
	return st.file_auth;
}

/* Wait until the file's auth_failed counter reaches @n (the server counts as the peer goes). */
static int wait_auth_failed(int fd, uint64_t n)
{
	int64_t end = now_ns() + TMO;

	while (auth_counters(fd).auth_failed < n) {
		if (now_ns() > end)
			return -1;
		usleep(20000);
	}
	return 0;
}

static struct rdmaxfer_prefix prefix4(const char *a, unsigned int len)
{
	struct rdmaxfer_prefix p = { .family = AF_INET, .prefix_len = len };

	inet_pton(AF_INET, a, p.addr);
	return p;
}

static struct rdmaxfer_prefix prefix6(const char *a, unsigned int len)
{
	struct rdmaxfer_prefix p = { .family = AF_INET6, .prefix_len = len };

	inet_pton(AF_INET6, a, p.addr);
	return p;
}

FIXTURE(auth) {
	int srv, cli;
	__u32 lid;
	__u16 port;
};

FIXTURE_SETUP(auth)
{
	struct rdmaxfer_info info;

	self->srv = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->srv) TH_LOG("open " DEVPATH ": %s", strerror(errno));
	self->cli = open(DEVPATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->cli);
	ASSERT_EQ(0, rdx_get_info(self->srv, &info));
	ASSERT_TRUE(info.features & RDMAXFER_FEATURE_AUTH);
	ASSERT_TRUE(info.features & RDMAXFER_FEATURE_ALLOW_LIST);
}

static long saved_max_conns = -1;	/* max_conns_per_file, while a test changed it */
static long saved_user_conns = -1;	/* max_conns_per_user, likewise */

FIXTURE_TEARDOWN(auth)
{
	if (saved_max_conns > 0)
		sysfs_write(MAX_CONNS_PARAM, saved_max_conns);
	if (saved_user_conns > 0)
		sysfs_write(USER_CONNS_PARAM, saved_user_conns);
	close(self->cli);
	close(self->srv);
}

/* Listen with @key and @allow; 0 or the errno. */
static int auth_listen(FIXTURE_DATA(auth) *self, int32_t key,
		       const struct rdmaxfer_prefix *allow, uint32_t n)
{
	return rdx_listen_auth(self->srv, rdx_addr(test_addr4, 0), 0, key, allow, n,
			       &self->lid, &self->port);
}

static int auth_connect(FIXTURE_DATA(auth) *self, int32_t key, __u32 *conn, __u32 *reason)
{
	*reason = 0;
	return rdx_connect_key(self->cli, rdx_addr(test_addr4, self->port), TMO, key, conn,
			       reason);
}

/*
 * A window of the server's, written by the client: the connection moves
 * data after the handshake, both ways of the control channel included.
 */
static void write_through(struct __test_metadata *_metadata, FIXTURE_DATA(auth) *self,
			  __u32 sconn, __u32 cconn)
{
	unsigned char *smem = map_anon(65536), *cmem = map_anon(65536);
	struct rdmaxfer_completion c;
	struct rdmaxfer_op op;
	__u32 sbuf, cbuf, win, posted;
	int64_t end;

	ASSERT_TRUE(smem && cmem);
	memset(cmem, 0x5a, 65536);
	ASSERT_EQ(0, rdx_reg_buf(self->srv, smem, 65536, RDMAXFER_BUF_WRITE, &sbuf));
	ASSERT_EQ(0, rdx_reg_buf(self->cli, cmem, 65536, RDMAXFER_BUF_READ, &cbuf));
	ASSERT_EQ(0, rdx_expose(self->srv, sconn, sbuf, 0, 65536, RDMAXFER_REMOTE_WRITE, &win));
	end = now_ns() + TMO;
	do {
		ASSERT_LT(now_ns(), end) TH_LOG("no RDMAXFER_EVENT_WINDOW");
		ASSERT_LE(0, rdx_reap(self->cli, &c, 1, TMO));
	} while (c.opcode != RDMAXFER_EVENT_WINDOW);
	ASSERT_EQ(win, c.window_id);
	op = mkop(RDMAXFER_OP_WRITE, cconn, cbuf, 0, win, 0, 65536, 7);
	ASSERT_EQ(0, rdx_submit(self->cli, &op, 1, &posted));
	do {
		ASSERT_LT(now_ns(), end) TH_LOG("no completion of the WRITE");
		ASSERT_LE(0, rdx_reap(self->cli, &c, 1, TMO));
	} while (c.opcode != RDMAXFER_OP_WRITE);
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(0, memcmp(smem, cmem, 65536));
	munmap(smem, 65536);
	munmap(cmem, 65536);
}

/* Both ends hold the key: connected, counted on both sides, and data moves. */
TEST_F(auth, same_key_connects)
{
	int32_t key = logon_key("same", 0x11, 32);
	__u32 cconn, sconn, reason;

	ASSERT_LT(0, key) TH_LOG("add_key: %s", strerror(-key));
	ASSERT_EQ(0, auth_listen(self, key, NULL, 0));
	ASSERT_EQ(0, auth_connect(self, key, &cconn, &reason)) TH_LOG("reason %u", reason);
	ASSERT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
	EXPECT_EQ(1, auth_counters(self->cli).auth_ok);
	EXPECT_EQ(1, auth_counters(self->srv).auth_ok);
	EXPECT_EQ(0, auth_counters(self->srv).auth_failed);
	write_through(_metadata, self, sconn, cconn);
}

/* A "user" key of the maximum length does as well as a logon key. */
TEST_F(auth, user_key_of_max_length)
{
	unsigned char secret[RDMAXFER_KEY_MAX];
	__u32 cconn, sconn, reason;
	int32_t key;

	memset(secret, 0xa7, sizeof(secret));
	key = add_key("user", "rdmaxfer-test-user", secret, sizeof(secret));
	ASSERT_LT(0, key);
	ASSERT_EQ(0, auth_listen(self, key, NULL, 0));
	ASSERT_EQ(0, auth_connect(self, key, &cconn, &reason)) TH_LOG("reason %u", reason);
	ASSERT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
}

/* A client without a key meets a listener with one: refused before a QP. */
TEST_F(auth, no_key_refused)
{
	int32_t key = logon_key("nokey", 0x22, 16);
	__u32 cconn, sconn, reason;

	ASSERT_LT(0, key);
	ASSERT_EQ(0, auth_listen(self, key, NULL, 0));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, 0, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_REQUIRED, reason);
	EXPECT_EQ(EAGAIN, rdx_accept(self->srv, self->lid, 0, &sconn, NULL));
	EXPECT_EQ(1, auth_counters(self->srv).auth_failed);
	EXPECT_EQ(0, auth_counters(self->srv).auth_ok);
}

/*
 * A client with another key: its own side finds the server's proof wrong
 * and refuses; the server never hands the connection out and counts the
 * client that left without a proof.
 */
TEST_F(auth, wrong_key_refused)
{
	int32_t key = logon_key("right", 0x33, 32), other = logon_key("wrong", 0x34, 32);
	__u32 cconn, sconn, reason;

	ASSERT_LT(0, key);
	ASSERT_LT(0, other);
	ASSERT_EQ(0, auth_listen(self, key, NULL, 0));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, other, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_FAILED, reason);
	EXPECT_EQ(1, auth_counters(self->cli).auth_failed);
	EXPECT_EQ(0, auth_counters(self->cli).auth_ok);
	EXPECT_EQ(0, wait_auth_failed(self->srv, 1));
	EXPECT_EQ(EAGAIN, rdx_accept(self->srv, self->lid, 0, &sconn, NULL));
	EXPECT_EQ(0, auth_counters(self->srv).auth_ok);
	/* a key of a different length is another key too */
	key = logon_key("short", 0x33, 16);
	other = logon_key("long", 0x33, 17);
	ASSERT_EQ(0, rdx_close(self->srv, self->lid));
	ASSERT_EQ(0, auth_listen(self, key, NULL, 0));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, other, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_FAILED, reason);
}

/* A client with a key meets a listener without one: refused, and told why. */
TEST_F(auth, keyless_listener_refuses_keyed_client)
{
	int32_t key = logon_key("keyless", 0x44, 32);
	__u32 cconn, sconn, reason;

	ASSERT_LT(0, key);
	ASSERT_EQ(0, auth_listen(self, 0, NULL, 0));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, key, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_UNAVAILABLE, reason);
	EXPECT_EQ(EAGAIN, rdx_accept(self->srv, self->lid, 0, &sconn, NULL));
	/* and without keys on either side, as before */
	EXPECT_EQ(0, auth_connect(self, 0, &cconn, &reason));
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
}

/*
 * The listener's key revoked: new clients are refused at once; the
 * connection made before stays and still moves data.
 */
TEST_F(auth, revoked_key_refuses_new_keeps_live)
{
	int32_t key = logon_key("revoke", 0x55, 32);
	__u32 c1, s1, c2, reason;

	ASSERT_LT(0, key);
	ASSERT_EQ(0, auth_listen(self, key, NULL, 0));
	ASSERT_EQ(0, auth_connect(self, key, &c1, &reason)) TH_LOG("reason %u", reason);
	ASSERT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &s1, NULL));
	ASSERT_EQ(0, syscall(__NR_keyctl, KEYCTL_REVOKE, key));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, 0, &c2, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_REQUIRED, reason);
	/* our own copy of the key is revoked too: CONNECT cannot name it */
	EXPECT_EQ(EKEYREVOKED, auth_connect(self, key, &c2, &reason));
	/* a client with a good key of its own: the server's is gone */
	key = logon_key("revoke2", 0x55, 32);
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, key, &c2, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_UNAVAILABLE, reason);
	write_through(_metadata, self, s1, c1);
}

/* Keys LISTEN and CONNECT refuse, and what they say. */
TEST_F(auth, bad_keys)
{
	struct rdmaxfer_connect c = { .size = sizeof(c) };
	int32_t ring, shrt, lng;
	unsigned char big[RDMAXFER_KEY_MAX + 1];
	__u32 conn, reason;

	memset(big, 1, sizeof(big));
	shrt = logon_key("short8", 1, RDMAXFER_KEY_MIN - 1);
	lng = add_key("user", "rdmaxfer-test-long", big, sizeof(big));
	ring = add_key("keyring", "rdmaxfer-test-ring", NULL, 0);
	ASSERT_LT(0, shrt);
	ASSERT_LT(0, lng);
	ASSERT_LT(0, ring);
	EXPECT_EQ(EKEYREJECTED, auth_listen(self, shrt, NULL, 0));
	EXPECT_EQ(EKEYREJECTED, auth_listen(self, lng, NULL, 0));
	EXPECT_EQ(EKEYREJECTED, auth_listen(self, ring, NULL, 0));
	EXPECT_EQ(ENOKEY, auth_listen(self, -1, NULL, 0));	/* a special id */
	EXPECT_EQ(ENOKEY, auth_listen(self, 0x7ffffff0, NULL, 0));
	ASSERT_EQ(0, auth_listen(self, 0, NULL, 0));
	EXPECT_EQ(EKEYREJECTED, auth_connect(self, shrt, &conn, &reason));
	EXPECT_EQ(ENOKEY, auth_connect(self, 0x7ffffff0, &conn, &reason));
	c.addr = rdx_addr(test_addr4, self->port);
	c.__reserved = 1;
	EXPECT_EQ(EINVAL, rdx_ioctl(self->cli, RDMAXFER_IOC_CONNECT, &c));
	/* nothing was left behind: no connection on either side */
	struct rdmaxfer_stats st;

	ASSERT_EQ(0, rdx_stats(self->cli, &st));
	EXPECT_EQ(0, st.num_conns);
}

/* The allow-list: checked before a QP, IPv4 and IPv6, counted. */
TEST_F(auth, allow_list)
{
	struct rdmaxfer_prefix other[] = { prefix4("198.51.100.0", 24), prefix6("2001:db8:ffff::", 48) };
	struct rdmaxfer_prefix mine[3];
	__u32 cconn, sconn, reason;
	struct rdmaxfer_stats st;

	ASSERT_EQ(0, auth_listen(self, 0, other, 2));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, 0, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_NOT_ALLOWED, reason);
	EXPECT_EQ(1, auth_counters(self->srv).not_allowed);
	EXPECT_EQ(EAGAIN, rdx_accept(self->srv, self->lid, 0, &sconn, NULL));
	ASSERT_EQ(0, rdx_stats(self->srv, &st));
	EXPECT_EQ(0, st.num_conns);
	ASSERT_EQ(0, rdx_close(self->srv, self->lid));

	/* our own address, exactly */
	mine[0] = other[0];
	mine[1] = prefix4(test_addr4, 32);
	mine[2] = other[1];
	ASSERT_EQ(0, auth_listen(self, 0, mine, 3));
	EXPECT_EQ(0, auth_connect(self, 0, &cconn, &reason)) TH_LOG("reason %u", reason);
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
	ASSERT_EQ(0, rdx_close(self->srv, self->lid));

	/* a /0 of the family lets everyone of it in; of the other family, nobody */
	mine[0] = prefix6("::", 0);
	ASSERT_EQ(0, auth_listen(self, 0, mine, 1));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, 0, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_NOT_ALLOWED, reason);
	ASSERT_EQ(0, rdx_close(self->srv, self->lid));
	mine[0] = prefix4("0.0.0.0", 0);
	ASSERT_EQ(0, auth_listen(self, 0, mine, 1));
	EXPECT_EQ(0, auth_connect(self, 0, &cconn, &reason));
}

/* An allow-list and a key together: both must pass. */
TEST_F(auth, allow_list_and_key)
{
	struct rdmaxfer_prefix mine = prefix4(test_addr4, 24);
	int32_t key = logon_key("both", 0x66, 32);
	__u32 cconn, sconn, reason;

	mine.addr[3] = 0;
	ASSERT_EQ(0, auth_listen(self, key, &mine, 1));
	EXPECT_EQ(ECONNREFUSED, auth_connect(self, 0, &cconn, &reason));
	EXPECT_EQ(RDMAXFER_REJECT_AUTH_REQUIRED, reason);
	EXPECT_EQ(0, auth_connect(self, key, &cconn, &reason)) TH_LOG("reason %u", reason);
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
}

/* Allow-lists LISTEN refuses. */
TEST_F(auth, bad_allow_lists)
{
	struct rdmaxfer_prefix p[RDMAXFER_MAX_ALLOW + 1];
	unsigned int i;

	for (i = 0; i <= RDMAXFER_MAX_ALLOW; i++)
		p[i] = prefix4("198.51.100.0", 24);
	EXPECT_EQ(EINVAL, auth_listen(self, 0, p, RDMAXFER_MAX_ALLOW + 1));
	p[0] = prefix4("198.51.100.1", 24);		/* bits past the prefix */
	EXPECT_EQ(EINVAL, auth_listen(self, 0, p, 1));
	p[0] = prefix4("198.51.100.0", 33);
	EXPECT_EQ(EINVAL, auth_listen(self, 0, p, 1));
	p[0] = prefix6("2001:db8::", 129);
	EXPECT_EQ(EINVAL, auth_listen(self, 0, p, 1));
	p[0] = prefix4("198.51.100.0", 24);
	p[0].family = 0;
	EXPECT_EQ(EINVAL, auth_listen(self, 0, p, 1));
	p[0] = prefix4("198.51.100.0", 24);
	p[0].__reserved[4] = 1;
	EXPECT_EQ(EINVAL, auth_listen(self, 0, p, 1));
	EXPECT_EQ(EFAULT, rdx_listen_auth(self->srv, rdx_addr(test_addr4, 0), 0, 0,
					  (void *)16, 1, &self->lid, &self->port));
	/* the full length is fine */
	for (i = 0; i < RDMAXFER_MAX_ALLOW; i++)
		p[i] = prefix4("198.51.100.0", 24);
	EXPECT_EQ(0, auth_listen(self, 0, p, RDMAXFER_MAX_ALLOW));
}

/*
 * max_conns_per_file bounds a file's connections, made or accepted: past
 * it CONNECT is EMFILE, and so is ACCEPT, which leaves the connection
 * queued (a listener's queue is bounded by its backlog, not by the file's
 * count, so peers cannot use it up); with the limit raised, ACCEPT takes it.
 */
TEST_F(auth, max_conns_per_file)
{
	__u32 c[3], sconn, reason;
	int other = open(DEVPATH, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, other);
	saved_max_conns = sysfs_read(MAX_CONNS_PARAM);
	ASSERT_LT(0, saved_max_conns) TH_LOG("no %s", MAX_CONNS_PARAM);
	sysfs_write(MAX_CONNS_PARAM, 2);
	ASSERT_EQ(2, sysfs_read(MAX_CONNS_PARAM));
	ASSERT_EQ(0, auth_listen(self, 0, NULL, 0));
	EXPECT_EQ(0, auth_connect(self, 0, &c[0], &reason));
	EXPECT_EQ(0, auth_connect(self, 0, &c[1], &reason));
	EXPECT_EQ(EMFILE, auth_connect(self, 0, &c[2], &reason));
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
	/* a third peer (another file) gets in, and waits for room to be accepted */
	EXPECT_EQ(0, rdx_connect(other, rdx_addr(test_addr4, self->port), TMO, &c[2], &reason));
	EXPECT_EQ(EMFILE, rdx_accept(self->srv, self->lid, 0, &sconn, NULL));
	sysfs_write(MAX_CONNS_PARAM, saved_max_conns);
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &sconn, NULL));
	close(other);
}

/*
 * max_conns_per_user bounds the connections of all the files one user
 * opened (every file of this test is root's): past it CONNECT is EMFILE in
 * any of them and ACCEPT leaves the connection queued; a connection that
 * goes gives its count back.
 */
TEST_F(auth, max_conns_per_user)
{
	__u32 c[3], s0, s1, reason;
	int other = open(DEVPATH, O_RDWR | O_CLOEXEC), ret;
	int64_t end;

	ASSERT_LE(0, other);
	saved_user_conns = sysfs_read(USER_CONNS_PARAM);
	ASSERT_LT(0, saved_user_conns) TH_LOG("no %s", USER_CONNS_PARAM);
	/* this test's own connections only: others of root's would count too */
	sysfs_write(USER_CONNS_PARAM, 3);
	ASSERT_EQ(3, sysfs_read(USER_CONNS_PARAM));
	ASSERT_EQ(0, auth_listen(self, 0, NULL, 0));
	EXPECT_EQ(0, auth_connect(self, 0, &c[0], &reason));
	EXPECT_EQ(0, auth_connect(self, 0, &c[1], &reason));
	EXPECT_EQ(0, rdx_accept(self->srv, self->lid, TMO, &s0, NULL));
	/* three: another file of the same user cannot connect, nor ACCEPT take more */
	EXPECT_EQ(EMFILE, rdx_connect(other, rdx_addr(test_addr4, self->port), TMO, &c[2],
				      &reason));
	EXPECT_EQ(EMFILE, rdx_accept(self->srv, self->lid, 0, &s1, NULL));
	/* one goes (both its ends: the client's CLOSE, then the server's teardown) */
	EXPECT_EQ(0, rdx_close(self->cli, c[0]));
	end = now_ns() + TMO;
	do {
		ret = rdx_accept(self->srv, self->lid, 0, &s1, NULL);
		if (ret == EMFILE)
			usleep(10000);
	} while (ret == EMFILE && now_ns() < end);
	EXPECT_EQ(0, ret) TH_LOG("ACCEPT after a CLOSE: %s", strerror(ret));
	sysfs_write(USER_CONNS_PARAM, saved_user_conns);
	EXPECT_EQ(0, rdx_connect(other, rdx_addr(test_addr4, self->port), TMO, &c[2], &reason));
	close(other);
}

int main(int argc, char **argv)
{
	TEST_ENV_OR_EXIT();
	test_addr4 = test_env()->addr;
	if (access(DEVPATH, F_OK)) {
		ksft_print_header();
		ksft_exit_skip(DEVPATH " missing: rdmaxfer.ko is not loaded\n");
	}
	return test_harness_run(argc, argv);
}
