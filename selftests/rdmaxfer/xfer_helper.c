// SPDX-License-Identifier: GPL-2.0
/*
 * xfer_helper - small rdmaxfer endpoints for the shell selftests (teardown.sh),
 * which start them in the background and kill them, or the device under them,
 * mid-transfer.  Each prints one line per thing that happened, flushed, so
 * the script can wait for it in a log file.
 *
 *   xfer_helper serve ADDR PORT SIZE [N]
 *	listen on ADDR:PORT (0: any port), print "listening PORT"; accept every
 *	client, expose a SIZE-byte window (READ | WRITE) to it ("accepted ID");
 *	on a disconnect print "disconnected ID status S" and close it; exit 0
 *	after N disconnects (default: never), 1 on an error.
 *   xfer_helper blast ADDR PORT SIZE
 *	connect, wait for the window, and WRITE SIZE bytes into it over and
 *	over with several operations in flight; "blasting" after the first
 *	completion.  Never ends on its own: on the first error (a failed
 *	completion, a disconnect, a failed SUBMIT) it prints "error ...",
 *	waits for every operation still in flight ("drained N") and exits 1;
 *	if they do not all complete within 30 s it prints "hang ..." and exits 3.
 *   xfer_helper write ADDR PORT SIZE
 *	connect, WRITE SIZE bytes of a pattern into the window, READ them back,
 *	compare: "ok SIZE" and exit 0, or exit 1.
 *   xfer_helper hold
 *	open /dev/rdmaxfer, print "ready", sleep until killed.
 *   xfer_helper park ADDR PORT BACKLOG
 *	listen on ADDR:PORT (0: any port) with BACKLOG, print "listening PORT",
 *	never ACCEPT: the kernel completes up to BACKLOG connections and keeps
 *	them queued.  Until killed.
 *   xfer_helper conns ADDR PORT N
 *	connect N times; "connected K" (K of N succeeded, the others were
 *	refused or timed out), then sleep until killed.
 *   xfer_helper idle ADDR PORT
 *	connect, wait for the server's window, expose a 1 MiB buffer of ours
 *	to the server, print "idle CONN" and do nothing more until the
 *	connection goes down: "disconnected status S" and exit 0.
 *   xfer_helper deaf ADDR PORT SIZE
 *	listen on ADDR:PORT (0: any port), print "listening PORT"; ACCEPT every
 *	client and expose a SIZE-byte window (READ | WRITE) to it ("accepted
 *	ID"), but never REAP: the events peers cause pile up.  At SIGUSR1,
 *	REAP everything queued (RECV every message) and print one line
 *	"reaped windows W revoked R imm I recv M disconnected D order O",
 *	O 1 if the windows, revocations, immediates and messages came in
 *	sequence (evil_peer flood numbers them 0, 1, ...; windows from 1),
 *	else 0; then sleep until killed.
 *   xfer_helper relisten ADDR SECS
 *	until SIGUSR1 or for at most SECS seconds, LISTEN on ADDR (any port)
 *	and CLOSE the listener, over and over, while the test deletes the
 *	device under it; then "relistened OK failed F" and one
 *	"errno E count N" line per errno.  Exit 0 if every failure said the
 *	device is gone (ENODEV), 1 if one blamed the arguments or was
 *	anything else ("unexpected ...").
 *   xfer_helper stuck ADDR PORT
 *	listen on ADDR:PORT (0: any port), print "listening PORT", ACCEPT one
 *	client, expose a 1 MiB window to it and wait for the client's window
 *	("window ID").  At SIGUSR1, READ 4 KiB from that window and, right
 *	after, EXPOSE the buffer once more ("exposing"): with a peer that
 *	never answers the READ, the EXPOSE waits for its registration behind
 *	it.  Prints "exposed: RESULT" if EXPOSE returns, then sleeps until
 *	killed.  The test SIGKILLs it while it waits.
 *   xfer_helper knock ADDR PORT N
 *	a TCP peer, not an RDMA one: N times, open a TCP connection to
 *	ADDR:PORT (an iWARP listener's port is a TCP port) and close it as
 *	soon as it is established, with no byte sent, often before the
 *	listener's provider accepted it; then exit: "knocked K" (K of N
 *	were established).
 *   xfer_helper slotwait ADDR PORT LEN
 *	listen on ADDR:PORT, ACCEPT one client, expose a 1 MiB window to it,
 *	post one receive slot of LEN bytes and print "posted"; then report
 *	what comes for 20 s or until the connection is down: "slot status S
 *	bytes B imm I" for the slot's completion, "disconnected status S".
 *	Exit 0 if nothing completed the slot with more than LEN bytes, 1 if
 *	something did.
 *   xfer_helper conntime ADDR PORT N KEYFILE|-
 *	N connections to ADDR:PORT one after the other, each closed at once,
 *	proving the key in KEYFILE (loaded as a logon key of this process;
 *	"-": no key): "connects K refused R p50_us P max_us M", the times of
 *	CONNECT.  Exit 0 if none was refused.
 *   xfer_helper keywatch ADDR PORT KEYFILE SECS
 *	LISTEN on ADDR:PORT with the key in KEYFILE and print "listening
 *	PORT"; for SECS, print every event the file gets ("event OPCODE conn
 *	C status S") and ACCEPT what is queued ("accepted C").  Exit 0.
 *   xfer_helper query INDEX
 *	LIST_DEVICES, and QUERY_DEVICE and QUERY_PORT (port 1) of device
 *	INDEX: "devices N device E port E", E "ok" or the errno's name.
 *   xfer_helper probe
 *	exit 0 if the module does transfers (RDMAXFER_FEATURE_TRANSFER), else 4.
 *   xfer_helper stall INDEX
 *	QUERY_PORT of port 1 of device INDEX with the GID array in a page
 *	whose faults a userfaultfd never resolves, so the ioctl blocks in its
 *	copy to userspace; "stalling" just before.  Until killed.  Exit 4 if
 *	userfaultfd is not available.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/keyctl.h>
#include <linux/userfaultfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/rdmaxfer.h>

#include "librdmaxfer.h"

#define DEVPATH "/dev/" RDMAXFER_DEVNAME
#define U64_PTR(p) ((__u64)(uintptr_t)(p))
#define SEC 1000000000LL
#define MAX_DEPTH 16

static int fd;

static void die(const char *what, int err)
{
	printf("error %s: %s\n", what, strerror(err));
	exit(1);
}

/* An ioctl on the one open file: 0 or the errno. */
static int xioctl(unsigned long cmd, void *arg)
{
	return rdx_ioctl(fd, cmd, arg);
}

static struct rdmaxfer_addr mkaddr(const char *host, unsigned int port)
{
	struct rdmaxfer_addr a = rdx_addr(host, port);

	if (!a.family)
		die("address", EINVAL);
	return a;
}

static unsigned long long size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K': case 'k': v <<= 10; break;
	case 'M': case 'm': v <<= 20; break;
	case 'G': case 'g': v <<= 30; break;
	}
	if (!v)
		die("size", EINVAL);
	return v;
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

static __u32 reg(void *p, __u64 len)
{
	__u32 id;
	int e = rdx_reg_buf(fd, p, len, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &id);

	if (e)
		die("REG_BUF", e);
	return id;
}

/* One completion or event; 0 if none came within tmo. */
static int reap1(struct rdmaxfer_completion *c, __s64 tmo)
{
	int n;

	do
		n = rdx_reap(fd, c, 1, tmo);
	while (n == -EINTR);
	if (n < 0)
		die("REAP", -n);
	return n;
}

static void close_id(__u32 id)
{
	rdx_close(fd, id);
}

static int serve(const char *host, unsigned int port, __u64 size, long count)
{
	struct rdmaxfer_listen l = { .size = sizeof(l), .addr = mkaddr(host, port) };
	struct rdmaxfer_completion c;
	void *mem = map(size);
	__u32 buf;
	long gone = 0;
	int e;

	buf = reg(mem, size);
	e = xioctl(RDMAXFER_IOC_LISTEN, &l);
	if (e)
		die("LISTEN", e);
	printf("listening %u\n", l.addr.port);
	for (;;) {
		if (!reap1(&c, -1))
			continue;
		if (c.opcode == RDMAXFER_EVENT_CONNECTED) {
			struct rdmaxfer_accept a = {
				.size = sizeof(a), .listen_id = l.listen_id, .timeout_ns = 0,
			};

			while (!(e = xioctl(RDMAXFER_IOC_ACCEPT, &a))) {
				struct rdmaxfer_expose x = {
					.size = sizeof(x), .conn_id = a.conn_id, .buf_id = buf,
					.length = size,
					.access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE,
				};

				e = xioctl(RDMAXFER_IOC_EXPOSE, &x);
				if (e)
					printf("expose %u: %s\n", a.conn_id, strerror(e));
				else
					printf("accepted %u\n", a.conn_id);
			}
			if (e != EAGAIN)
				printf("accept: %s\n", strerror(e));
		} else if (c.opcode == RDMAXFER_EVENT_DISCONNECTED) {
			printf("disconnected %u status %d\n", c.conn_id, c.status);
			close_id(c.conn_id);
			if (count > 0 && ++gone >= count)
				return 0;
		} else if (c.opcode >= 0x100) {
			printf("event %#x conn %u status %d\n", c.opcode, c.conn_id, c.status);
		}
	}
}

/* Connect and wait for the server's window: its id and length. */
static __u32 client(const char *host, unsigned int port, __u32 *win, __u64 *wlen,
		    struct rdmaxfer_conn_info *ci)
{
	struct rdmaxfer_connect k = {
		.size = sizeof(k), .addr = mkaddr(host, port), .timeout_ns = 10 * SEC,
	};
	struct rdmaxfer_completion c;
	int e = xioctl(RDMAXFER_IOC_CONNECT, &k);

	if (e) {
		printf("error CONNECT: %s (reject reason %u)\n", strerror(e), k.reject_reason);
		exit(1);
	}
	memset(ci, 0, sizeof(*ci));
	ci->size = sizeof(*ci);
	ci->conn_id = k.conn_id;
	e = xioctl(RDMAXFER_IOC_QUERY_CONN, ci);
	if (e)
		die("QUERY_CONN", e);
	do {
		if (!reap1(&c, 10 * SEC)) {
			printf("error no window from the server\n");
			exit(1);
		}
	} while (c.opcode != RDMAXFER_EVENT_WINDOW);
	*win = c.window_id;
	*wlen = c.bytes;
	return k.conn_id;
}

static int idle(const char *host, unsigned int port)
{
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_completion c;
	struct rdmaxfer_expose x = {
		.size = sizeof(x), .length = 1 << 20,
		.access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE,
	};
	__u64 wlen;
	__u32 win;
	int e;

	x.conn_id = client(host, port, &win, &wlen, &ci);
	x.buf_id = reg(map(x.length), x.length);
	e = xioctl(RDMAXFER_IOC_EXPOSE, &x);
	if (e)
		die("EXPOSE", e);
	printf("idle %u\n", x.conn_id);
	for (;;) {
		if (reap1(&c, -1) && c.opcode == RDMAXFER_EVENT_DISCONNECTED) {
			printf("disconnected status %d\n", c.status);
			return 0;
		}
	}
}

static int submit1(struct rdmaxfer_op *op)
{
	int e;

	do
		e = rdx_submit(fd, op, 1, NULL);
	while (e == EINTR);
	return e;
}

static int blast(const char *host, unsigned int port, __u64 size)
{
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_completion c;
	struct rdmaxfer_op op;
	unsigned int depth, inflight = 0;
	unsigned long long done = 0;
	__u64 wlen, chunk;
	__u32 conn, win, buf;
	void *mem;
	int e, failed = 0;

	conn = client(host, port, &win, &wlen, &ci);
	if (size > wlen)
		size = wlen;
	chunk = size < ci.max_op_size ? size : ci.max_op_size;
	depth = ci.queue_depth < MAX_DEPTH ? ci.queue_depth : MAX_DEPTH;
	if (!depth)
		depth = 1;
	mem = map(chunk);
	memset(mem, 0x5a, chunk);
	buf = reg(mem, chunk);
	memset(&op, 0, sizeof(op));
	op.opcode = RDMAXFER_OP_WRITE;
	op.conn_id = conn;
	op.buf_id = buf;
	op.window_id = win;
	op.length = chunk;

	while (!failed) {
		while (inflight < depth) {
			op.remote_offset = (op.user_data * chunk) % (wlen - chunk + 1);
			e = submit1(&op);
			if (e) {
				printf("error SUBMIT: %s\n", strerror(e));
				failed = 1;
				break;
			}
			op.user_data++;
			inflight++;
		}
		if (failed)
			break;
		if (!reap1(&c, 30 * SEC)) {
			printf("hang: no completion in 30 s with %u in flight\n", inflight);
			return 3;
		}
		if (c.opcode < 0x100) {
			inflight--;
			if (c.status) {
				printf("error completion status %d (%s) wc_status %u\n", c.status,
				       strerror(-c.status), c.wc_status);
				failed = 1;
			} else if (++done == 1) {
				printf("blasting\n");
			}
		} else if (c.opcode == RDMAXFER_EVENT_DISCONNECTED) {
			printf("error disconnected status %d\n", c.status);
			failed = 1;
		}
	}
	/* every operation still in flight completes, once */
	while (inflight) {
		if (!reap1(&c, 30 * SEC)) {
			printf("hang: %u operations never completed\n", inflight);
			return 3;
		}
		if (c.opcode < 0x100)
			inflight--;
		else if (c.opcode == RDMAXFER_EVENT_DISCONNECTED)
			printf("disconnected status %d\n", c.status);
	}
	printf("drained after %llu good operations\n", done);
	return 1;
}

static int run(struct rdmaxfer_op *op)
{
	struct rdmaxfer_completion c;
	int e = submit1(op);

	if (e)
		die("SUBMIT", e);
	do {
		if (!reap1(&c, 60 * SEC)) {
			printf("error no completion in 60 s\n");
			exit(1);
		}
	} while (c.opcode >= 0x100);
	if (c.status) {
		printf("error completion status %d wc_status %u\n", c.status, c.wc_status);
		exit(1);
	}
	return 0;
}

static int write_verify(const char *host, unsigned int port, __u64 size)
{
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_op op;
	unsigned char *mem;
	__u64 wlen, off, i;
	__u32 conn, win, buf;

	conn = client(host, port, &win, &wlen, &ci);
	if (size > wlen)
		size = wlen;
	mem = map(2 * size);
	for (i = 0; i < size; i++)
		mem[i] = (unsigned char)(i * 131 + 7);
	buf = reg(mem, 2 * size);
	memset(&op, 0, sizeof(op));
	op.conn_id = conn;
	op.buf_id = buf;
	op.window_id = win;
	for (off = 0; off < size; off += op.length) {
		op.length = size - off < ci.max_op_size ? size - off : ci.max_op_size;
		op.opcode = RDMAXFER_OP_WRITE;
		op.buf_offset = off;
		op.remote_offset = off;
		run(&op);
		op.opcode = RDMAXFER_OP_READ;
		op.buf_offset = size + off;
		run(&op);
	}
	if (memcmp(mem, mem + size, size)) {
		printf("error data read back differs\n");
		return 1;
	}
	printf("ok %llu\n", (unsigned long long)size);
	close_id(conn);
	return 0;
}

/* A QUERY_PORT that blocks in copy_to_user() on a never-resolved fault. */
static int stall(unsigned int index)
{
	struct rdmaxfer_gid *gids;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct rdmaxfer_port_info pi = { .size = sizeof(pi), .index = index, .port = 1,
					 .num_gids = 4 };
	long page = sysconf(_SC_PAGESIZE);
	int uffd;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		printf("no userfaultfd: %s\n", strerror(errno));
		return 4;
	}
	gids = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gids == MAP_FAILED)
		die("mmap", errno);
	reg.range.start = (uintptr_t)gids;
	reg.range.len = page;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		printf("no userfaultfd: %s\n", strerror(errno));
		return 4;
	}
	pi.gids = (uintptr_t)gids;
	printf("stalling\n");
	/* nobody reads uffd: the kernel's copy to gids waits until we are killed */
	xioctl(RDMAXFER_IOC_QUERY_PORT, &pi);
	printf("returned\n");
	return 1;
}

static const char *err_name(int e)
{
	return e ? strerrorname_np(e) ?: "?" : "ok";
}

static int query(unsigned int index)
{
	struct rdmaxfer_device_info di;
	struct rdmaxfer_port_info pi;
	struct rdmaxfer_gid gid;
	uint32_t idx, n = 0;
	int e;

	e = rdx_list_devices(fd, &idx, 1, &n);
	if (e)
		die("LIST_DEVICES", e);
	printf("devices %u", n);
	printf(" device %s", err_name(rdx_query_device(fd, index, &di)));
	printf(" port %s\n", err_name(rdx_query_port(fd, index, 1, &gid, 1, &pi)));
	return 0;
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* deaf: reap what piled up, check it is all there and in order */
static void deaf_reap(void)
{
	unsigned long win = 0, rev = 0, imm = 0, msgs = 0, disc = 0;
	struct rdmaxfer_completion c;
	char m[64], want[64];
	int order = 1, e;

	while (reap1(&c, 0)) {
		switch (c.opcode) {
		case RDMAXFER_EVENT_WINDOW:
			order &= c.window_id == ++win;
			break;
		case RDMAXFER_EVENT_WINDOW_REVOKED:
			order &= c.window_id == ++rev;
			break;
		case RDMAXFER_EVENT_WRITE_IMM:
			order &= c.imm_data == imm++;
			break;
		case RDMAXFER_EVENT_RECV: {
			struct rdmaxfer_recv r = {
				.size = sizeof(r), .conn_id = c.conn_id, .length = sizeof(m) - 1,
				.addr = U64_PTR(m),
			};

			e = xioctl(RDMAXFER_IOC_RECV, &r);
			if (e)
				die("RECV", e);
			m[r.length] = 0;
			snprintf(want, sizeof(want), "flood %08lu\n", msgs++);
			order &= !strcmp(m, want);
			break;
		}
		case RDMAXFER_EVENT_DISCONNECTED:
			disc++;
			break;
		}
	}
	printf("reaped windows %lu revoked %lu imm %lu recv %lu disconnected %lu order %d\n",
	       win, rev, imm, msgs, disc, order);
}

static void __attribute__((noreturn)) deaf(const char *host, unsigned int port, __u64 size)
{
	struct rdmaxfer_listen l = { .size = sizeof(l), .addr = mkaddr(host, port) };
	struct sigaction sa = { .sa_handler = on_usr1 };
	void *mem = map(size);
	__u32 buf = reg(mem, size);
	int e;

	sigaction(SIGUSR1, &sa, NULL);
	e = xioctl(RDMAXFER_IOC_LISTEN, &l);
	if (e)
		die("LISTEN", e);
	printf("listening %u\n", l.addr.port);
	while (!got_usr1) {
		struct rdmaxfer_accept a = {
			.size = sizeof(a), .listen_id = l.listen_id, .timeout_ns = SEC / 5,
		};
		struct rdmaxfer_expose x = {
			.size = sizeof(x), .buf_id = buf, .length = size,
			.access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE,
		};

		e = xioctl(RDMAXFER_IOC_ACCEPT, &a);
		if (e == ETIMEDOUT || e == EINTR)
			continue;
		if (e)
			die("ACCEPT", e);
		x.conn_id = a.conn_id;
		e = xioctl(RDMAXFER_IOC_EXPOSE, &x);
		if (e)
			printf("expose %u: %s\n", a.conn_id, strerror(e));
		else
			printf("accepted %u\n", a.conn_id);
	}
	deaf_reap();
	for (;;)
		pause();
}

/* LISTEN on host:port, say "listening PORT", ACCEPT one client (tmo as ACCEPT's). */
static __u32 accept_one(const char *host, unsigned int port, __s64 tmo)
{
	struct rdmaxfer_listen l = { .size = sizeof(l), .addr = mkaddr(host, port) };
	struct rdmaxfer_accept a = { .size = sizeof(a), .timeout_ns = tmo };
	int e;

	e = xioctl(RDMAXFER_IOC_LISTEN, &l);
	if (e)
		die("LISTEN", e);
	printf("listening %u\n", l.addr.port);
	a.listen_id = l.listen_id;
	do
		e = xioctl(RDMAXFER_IOC_ACCEPT, &a);
	while (e == EINTR);
	if (e)
		die("ACCEPT", e);
	return a.conn_id;
}

static int slot_wait(const char *host, unsigned int port, __u64 len)
{
	struct rdmaxfer_expose x = {
		.size = sizeof(x), .length = 1 << 20, .access = RDMAXFER_REMOTE_WRITE,
	};
	struct rdmaxfer_op op = { .opcode = RDMAXFER_OP_RECV, .length = len, .user_data = 77 };
	struct rdmaxfer_completion c;
	struct timespec t0, t;
	int e, bad = 0;

	x.conn_id = accept_one(host, port, 30 * SEC);
	x.buf_id = reg(map(1 << 20), 1 << 20);
	e = xioctl(RDMAXFER_IOC_EXPOSE, &x);
	if (e)
		die("EXPOSE", e);
	op.conn_id = x.conn_id;
	op.buf_id = reg(map(1 << 20), 1 << 20);
	e = submit1(&op);
	if (e)
		die("SUBMIT RECV", e);
	printf("posted\n");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (reap1(&c, SEC)) {
			if (c.opcode == RDMAXFER_OP_RECV) {
				printf("slot status %d bytes %llu imm %#x\n", c.status,
				       (unsigned long long)c.bytes, c.imm_data);
				bad |= c.bytes > len;
			} else if (c.opcode == RDMAXFER_EVENT_DISCONNECTED) {
				printf("disconnected status %d\n", c.status);
				break;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 20);
	return bad;
}

/* The serial of a logon key of this process holding KEYFILE's bytes. */
static __s32 load_key(const char *keyfile)
{
	unsigned char key[RDMAXFER_KEY_MAX];
	size_t len = 0;
	__s32 serial;
	FILE *f;

	f = fopen(keyfile, "rb");
	if (f) {
		len = fread(key, 1, sizeof(key), f);
		fclose(f);
	}
	serial = (__s32)syscall(__NR_add_key, "logon", "rdmaxfer:xfer_helper", key, len,
				KEY_SPEC_PROCESS_KEYRING);
	if (serial <= 0)
		die("add_key", errno);
	return serial;
}

/*
 * keywatch: LISTEN with the key in KEYFILE, print "listening PORT", then
 * for SECS print every event or completion the file gets and ACCEPT
 * whatever is queued: "event OPCODE conn C" and "accepted C".  Exit 0.
 */
static int key_watch(const char *host, unsigned int port, const char *keyfile, int secs)
{
	struct rdmaxfer_listen l = {
		.size = sizeof(l), .addr = mkaddr(host, port), .key_id = load_key(keyfile),
	};
	struct rdmaxfer_completion c;
	struct timespec t0, t;
	int e = xioctl(RDMAXFER_IOC_LISTEN, &l);

	if (e)
		die("LISTEN", e);
	printf("listening %u\n", l.addr.port);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct rdmaxfer_accept a = { .size = sizeof(a), .listen_id = l.listen_id };

		if (reap1(&c, SEC / 5))
			printf("event %#x conn %u status %d\n", c.opcode, c.conn_id, c.status);
		if (!xioctl(RDMAXFER_IOC_ACCEPT, &a))
			printf("accepted %u\n", a.conn_id);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < secs);
	return 0;
}

static void __attribute__((noreturn)) park(const char *host, unsigned int port,
					  unsigned int backlog)
{
	struct rdmaxfer_listen l = {
		.size = sizeof(l), .addr = mkaddr(host, port), .backlog = backlog,
	};
	int e = xioctl(RDMAXFER_IOC_LISTEN, &l);

	if (e)
		die("LISTEN", e);
	printf("listening %u\n", l.addr.port);
	for (;;)
		pause();
}

static void __attribute__((noreturn)) conns(const char *host, unsigned int port,
					   unsigned int n)
{
	unsigned int i, ok = 0;

	for (i = 0; i < n; i++) {
		struct rdmaxfer_connect k = {
			.size = sizeof(k), .addr = mkaddr(host, port), .timeout_ns = 10 * SEC,
		};

		ok += !xioctl(RDMAXFER_IOC_CONNECT, &k);
	}
	printf("connected %u\n", ok);
	for (;;)
		pause();
}

/*
 * conntime: N connections one after the other, each closed at once, with
 * the key in KEYFILE ("-": none) loaded as a logon key of this process;
 * prints how many came up and the CONNECT times (p50, max, in us).
 */
static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int conn_time(const char *host, unsigned int port, unsigned int n, const char *keyfile)
{
	unsigned int i, ok = 0, refused = 0;
	__s32 serial = 0;
	__u64 *us;

	if (strcmp(keyfile, "-"))
		serial = load_key(keyfile);
	us = calloc(n ? n : 1, sizeof(*us));
	if (!us)
		die("calloc", ENOMEM);
	for (i = 0; i < n; i++) {
		struct rdmaxfer_connect k = {
			.size = sizeof(k), .addr = mkaddr(host, port), .timeout_ns = 10 * SEC,
			.key_id = serial,
		};
		struct rdmaxfer_close c = { .size = sizeof(c) };
		struct timespec t0, t1;
		int e;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		e = xioctl(RDMAXFER_IOC_CONNECT, &k);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (e) {
			printf("connect %u: %s (reason %u)\n", i, strerror(e), k.reject_reason);
			refused++;
			continue;
		}
		us[ok++] = (__u64)(t1.tv_sec - t0.tv_sec) * 1000000 +
			   (t1.tv_nsec - t0.tv_nsec) / 1000;
		c.id = k.conn_id;
		xioctl(RDMAXFER_IOC_CLOSE, &c);
	}
	qsort(us, ok, sizeof(*us), cmp_u64);
	printf("connects %u refused %u p50_us %llu max_us %llu\n", ok, refused,
	       ok ? (unsigned long long)us[ok / 2] : 0ULL,
	       ok ? (unsigned long long)us[ok - 1] : 0ULL);
	free(us);
	return refused ? 1 : 0;
}

static int knock(const char *host, unsigned int port, unsigned int n)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	unsigned int i, ok = 0;
	int first = 0;
	socklen_t len;

	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		len = sizeof(*sin6);
	} else {
		die("knock: not an address", EINVAL);
	}
	for (i = 0; i < n; i++) {
		int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0)
			die("socket", errno);
		if (!connect(s, (struct sockaddr *)&ss, len))
			ok++;
		else if (!first)
			first = errno;
		close(s);
	}
	printf("knocked %u%s%s\n", ok, first ? " first error " : "",
	       first ? strerrorname_np(first) ?: "?" : "");
	return 0;
}

static int relisten(const char *host, int secs)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	unsigned long ok = 0, failed = 0, count[256] = { 0 };
	struct timespec t;
	int e, bad = 0;
	__s64 end;

	sigaction(SIGUSR1, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t);
	end = t.tv_sec * SEC + t.tv_nsec + secs * SEC;
	do {
		struct rdmaxfer_listen l = { .size = sizeof(l), .addr = mkaddr(host, 0) };

		e = xioctl(RDMAXFER_IOC_LISTEN, &l);
		if (!e) {
			ok++;
			close_id(l.listen_id);
		} else {
			failed++;
			count[e & 255]++;
			if (e != ENODEV && !bad++)
				printf("unexpected LISTEN error: %s (%d)\n", strerror(e), e);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!got_usr1 && t.tv_sec * SEC + t.tv_nsec < end);
	printf("relistened %lu failed %lu\n", ok, failed);
	for (e = 0; e < 256; e++)
		if (count[e])
			printf("errno %s count %lu\n", strerrorname_np(e) ?: "?", count[e]);
	return bad ? 1 : 0;
}

static void __attribute__((noreturn)) stuck(const char *host, unsigned int port)
{
	struct rdmaxfer_expose x = {
		.size = sizeof(x), .length = 1 << 20,
		.access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE,
	};
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct rdmaxfer_completion c = { 0 };
	struct rdmaxfer_op op;
	int e;

	sigaction(SIGUSR1, &sa, NULL);
	x.buf_id = reg(map(x.length), x.length);
	x.conn_id = accept_one(host, port, -1);
	e = xioctl(RDMAXFER_IOC_EXPOSE, &x);
	if (e)
		die("EXPOSE", e);
	do {
		if (!reap1(&c, -1))
			continue;
		if (c.opcode == RDMAXFER_EVENT_DISCONNECTED)
			die("waiting for the client's window", ENOTCONN);
	} while (c.opcode != RDMAXFER_EVENT_WINDOW);
	printf("window %u\n", c.window_id);
	while (!got_usr1)
		pause();
	memset(&op, 0, sizeof(op));
	op.opcode = RDMAXFER_OP_READ;
	op.conn_id = x.conn_id;
	op.buf_id = x.buf_id;
	op.length = 4096;
	op.window_id = c.window_id;
	e = submit1(&op);
	if (e)
		die("SUBMIT", e);
	printf("exposing\n");
	e = xioctl(RDMAXFER_IOC_EXPOSE, &x);
	printf("exposed: %s\n", e ? strerror(e) : "ok");
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		goto usage;
	fd = open(DEVPATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open " DEVPATH, errno);
	if (!strcmp(argv[1], "probe")) {
		struct rdmaxfer_info info = { .size = sizeof(info) };

		if (xioctl(RDMAXFER_IOC_GET_INFO, &info))
			return 4;
		return info.features & RDMAXFER_FEATURE_TRANSFER ? 0 : 4;
	}
	if (!strcmp(argv[1], "hold")) {
		printf("ready\n");
		for (;;)
			pause();
	}
	if (!strcmp(argv[1], "query") && argc == 3)
		return query((unsigned int)atoi(argv[2]));
	if (!strcmp(argv[1], "stall") && argc == 3)
		return stall((unsigned int)atoi(argv[2]));
	if (!strcmp(argv[1], "idle") && argc == 4)
		return idle(argv[2], atoi(argv[3]));
	if (!strcmp(argv[1], "stuck") && argc == 4)
		stuck(argv[2], atoi(argv[3]));
	if (!strcmp(argv[1], "relisten") && argc == 4)
		return relisten(argv[2], atoi(argv[3]));
	if (argc < 5)
		goto usage;
	if (!strcmp(argv[1], "slotwait"))
		return slot_wait(argv[2], atoi(argv[3]), size_arg(argv[4]));
	if (!strcmp(argv[1], "keywatch") && argc == 6)
		return key_watch(argv[2], (unsigned int)atoi(argv[3]), argv[4], atoi(argv[5]));
	if (!strcmp(argv[1], "conntime") && argc == 6)
		return conn_time(argv[2], (unsigned int)atoi(argv[3]), (unsigned int)atoi(argv[4]),
				 argv[5]);
	if (!strcmp(argv[1], "knock"))
		return knock(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "serve"))
		return serve(argv[2], atoi(argv[3]), size_arg(argv[4]),
			     argc > 5 ? atol(argv[5]) : 0);
	if (!strcmp(argv[1], "blast"))
		return blast(argv[2], atoi(argv[3]), size_arg(argv[4]));
	if (!strcmp(argv[1], "write"))
		return write_verify(argv[2], atoi(argv[3]), size_arg(argv[4]));
	if (!strcmp(argv[1], "park"))
		park(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "conns"))
		conns(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "deaf"))
		deaf(argv[2], atoi(argv[3]), size_arg(argv[4]));
usage:
	fprintf(stderr, "usage: xfer_helper serve ADDR PORT SIZE [N] | blast ADDR PORT SIZE | write ADDR PORT SIZE | idle ADDR PORT | park ADDR PORT BACKLOG | deaf ADDR PORT SIZE | conns ADDR PORT N | relisten ADDR SECS | stuck ADDR PORT | knock ADDR PORT N | slotwait ADDR PORT LEN | conntime ADDR PORT N KEYFILE|- | keywatch ADDR PORT KEYFILE SECS | hold | probe | query INDEX | stall INDEX\n");
	return 2;
}
