// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer serve - the server of write, read and send.
 *
 * serve [--bind ADDR] [--port N] [--size BYTES] [--in FILE] [--out FILE]
 *       [--count N] [--max-per-host N] [--atomic] [--json]
 *
 * Listens on ADDR (default "::", which takes IPv4 and IPv6 clients; if IPv6
 * is not available, 0.0.0.0; with an iWARP device, each address instead: see
 * listen.c) and serves any number of clients at the same
 * time (up to SERVE_MAX_CONNS, as far as the module lets one file have
 * connections; more wait in the kernel's backlog), all from one event loop
 * on one open file: poll, then REAP completions and events.  One peer
 * address may hold at most --max-per-host of them (default SERVE_PER_HOST,
 * an eighth of SERVE_MAX_CONNS): a client that opens
 * connections it never uses cannot take them all, its extra connections
 * are closed as soon as they are accepted ("refused") while other hosts
 * are still served.
 *
 * There is ONE window, shared by all connections, like one piece of remote
 * memory: at start-up --size bytes (default SERVE_DEFAULT_SIZE, 64 MiB) of
 * anonymous memory are mapped, preloaded from --in (a shorter file leaves
 * the rest zero; a longer one is refused) and registered once.  Each
 * accepted connection gets that buffer EXPOSEd to it (its own window id and
 * keys, REMOTE_READ | REMOTE_WRITE, with --atomic also REMOTE_ATOMIC for
 * `rdmaxfer atomic` and `bench --op fadd|cas`, offset 0, --size bytes; a
 * device without atomics gets the window without them); CLOSE at the
 * end of the connection revokes its window, the memory stays registered
 * until serve exits.  So what one client writes, the next one reads back.
 * Concurrent clients see the same bytes: writers to overlapping ranges race
 * (the last write wins, as with shared memory), and a client in the middle
 * of a multi-round write (a file larger than the window) leaves each round
 * in the window, where other clients see it until the next round.  If the
 * RDMA device of a connection cannot register a window of --size (EXPOSE:
 * EINVAL, QUERY_CONN.max_window_size is smaller), serve says so in one line
 * and exits 1 when no connection got the window yet, else drops that
 * connection.  Then the server follows the protocol of proto.h:
 *
 *  - messages: control messages are answered (WRITE_BEGIN, CSUM_REQ, SYNC,
 *    BENCH_BEGIN, BENCH_END, CPU_REQ); every other message is user data,
 *    written as it is to stdout, or appended to --out (with --json and no
 *    --out: to stderr, since stdout carries only the JSON object) -- except
 *    on a connection that `ping` or `bench` put in SINK mode (data messages
 *    are counted and dropped) or ECHO mode (SENT back as they are, from a
 *    ring of ECHO_BUFS registered message buffers: a message is RECV'd
 *    straight into a free one, whose SEND is batched with the others of
 *    the same REAP round; with none free the connection's messages wait
 *    in the kernel until a SEND completes).  A BENCH_BEGIN that asks for
 *    receive slots gets them posted on its connection (slots_post()): the
 *    client's messages then land there with no copy and are handled from
 *    the slot's completion, which goes back on the connection at the end
 *    of the REAP round (echoed: when its echo is sent);
 *  - WRITE_IMM events end a write round: the round is saved to --out (a
 *    write truncates --out first, so --out holds the last write's data, and
 *    for a write at offset O also window bytes [0, O) as they are then),
 *    its CRC32C computed when the client asked, and ROUND_DONE sent;
 *  - DISCONNECTED ends the connection: if the client wrote without
 *    WRITE_BEGIN (another program), window bytes [0, highest byte notified by
 *    WRITE_IMM) go to --out; then the connection is closed (its window
 *    revoked) and, in human mode, a summary line printed.
 *
 * --count N: exit after N connections have ended (the listener closes once N
 * were accepted).  Without it, serve runs until SIGINT or SIGTERM, which end
 * it cleanly (exit 0, live connections closed and saved).  --json prints one
 * object at exit: connections, bytes_written, rounds, messages, ...
 * Human output on stdout: a "listening on ..." line once ready, then one
 * line per finished connection, between the messages.
 *
 * RECV events are not handled one by one: a REAP round marks the
 * connections that have messages, and each is drained (RECV until EAGAIN)
 * once per round, before any later event of the same connection (a
 * WRITE_IMM, DISCONNECTED) is acted on, so the order of messages and
 * events is kept while a stream of SENDs costs one RECV per message, not
 * two.
 *
 * This file has the options, the set-up, the event loop and the report;
 * serve.h lists the others (connections, messages, slots and echo).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "serve.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

void say(struct server *srv, const char *fmt, ...)
{
	va_list ap;

	if (srv->json)
		return;
	if (!srv->stdout_at_bol)
		putchar('\n');
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	srv->stdout_at_bol = true;
	fflush(stdout);
}

/*
 * Write to --out at @pos; @pos < 0 (and always when --out cannot seek: a
 * pipe, a terminal) appends.
 */
int out_write(struct server *srv, const void *buf, uint64_t len, int64_t pos)
{
	const unsigned char *p = buf;

	if (pos < 0 && srv->out_seekable) {
		off_t end = lseek(srv->out_fd, 0, SEEK_END);

		if (end < 0)
			return -1;
		pos = end;
	}
	while (len) {
		size_t n1 = len > (1u << 30) ? (1u << 30) : len;
		ssize_t n = srv->out_seekable ? pwrite(srv->out_fd, p, n1, (off_t)pos) :
						write(srv->out_fd, p, n1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		pos += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

void out_error(struct server *srv, const char *what)
{
	if (!srv->out_failed)
		warnx_("%s %s failed: %s", what, srv->out_name, strerror(errno));
	srv->out_failed = true;
}

/* Empty --out for a new write (only a regular file can be). */
int out_truncate(struct server *srv)
{
	return srv->out_regular ? ftruncate(srv->out_fd, 0) : 0;
}

/* REAP everything there is and act on it.  Returns -1 on a fatal error. */
static int reap_all(struct server *srv)
{
	struct rdmaxfer_completion c[REAP_MAX];
	struct sconn *sc;
	int i, n;

	do {
		n = rdx_reap(srv->fd, c, REAP_MAX, 0);
		if (n < 0) {
			if (n == -EINTR)
				return 0;
			warnx_("REAP failed: %s", strerror(-n));
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (c[i].opcode == RDMAXFER_EVENT_CONNECTED) {
				accept_all(srv);
				continue;
			}
			if (c[i].opcode == RDMAXFER_OP_SEND && (c[i].user_data & SLOT_ECHO_TAG)) {
				slot_echo_done(srv, c[i].conn_id, c[i].user_data);
				continue;
			}
			if (c[i].opcode == RDMAXFER_OP_SEND && (c[i].user_data & ECHO_TAG)) {
				echo_done(srv, c[i].user_data);
				continue;
			}
			if (c[i].opcode == RDMAXFER_OP_SEND && c[i].user_data &&
			    c[i].user_data <= CTL_ANSWERS)
				srv->ctl_busy[c[i].user_data - 1] = false;
			sc = find_conn(srv, c[i].conn_id);
			if (!sc && c[i].opcode != RDMAXFER_OP_SEND) {
				/* an event may come before the CONNECTED one */
				accept_all(srv);
				sc = find_conn(srv, c[i].conn_id);
			}
			if (!sc)
				continue;
			/* messages first: they came before this event */
			if (sc->recv_pending && c[i].opcode != RDMAXFER_OP_SEND &&
			    c[i].opcode != RDMAXFER_EVENT_RECV) {
				handle_recv(srv, sc);
				if (srv->echo_nops)
					flush_echoes(srv);
				if (find_conn(srv, c[i].conn_id) != sc)
					continue;
			}
			switch (c[i].opcode) {
			case RDMAXFER_OP_SEND:
				if (sc->replies)
					sc->replies--;
				break;
			case RDMAXFER_EVENT_RECV:
				sc->recv_pending = true;
				break;
			case RDMAXFER_OP_RECV:
				handle_slot(srv, sc, &c[i]);
				break;
			case RDMAXFER_EVENT_WRITE_IMM:
				handle_imm(srv, sc, &c[i]);
				break;
			case RDMAXFER_EVENT_DISCONNECTED:
				finish_conn(srv, sc, c[i].status);
				accept_all(srv);
				break;
			default:
				break;
			}
		}
		recv_marked(srv);
		flush_reposts(srv);
	} while (n == REAP_MAX);
	return 0;
}

/* --- set-up ----------------------------------------------------------- */

static int do_listen(struct server *srv, const char *bind_addr, uint16_t port)
{
	const char *addr = bind_addr ? bind_addr : "::";
	struct rdmaxfer_addr la;
	char where[512], sz[48], socks[64];
	int err;

	if (!bind_addr && have_iwarp(srv->fd)) {
		err = listen_each_address(srv->fd, &srv->admit, &port, srv->listen_ids,
					  &srv->nlisten, where, sizeof(where));
		if (err > 0)
			return err;
		if (!err) {
			srv->port = port;
			goto listening;
		}
	}
	for (;;) {
		if (parse_addr(addr, port, &la))
			return usage_error("serve ", "'%s' is not an IPv4 or IPv6 address", addr);
		err = rdx_listen_auth(srv->fd, la, 0, srv->admit.key, srv->admit.allow,
				      srv->admit.nallow, &srv->listen_ids[0], &srv->port);
		if (!err)
			break;
		/* the default: IPv4 only if IPv6 is not there */
		if (!bind_addr && !strcmp(addr, "::") &&
		    (err == EAFNOSUPPORT || err == EINVAL || err == ENODEV)) {
			addr = "0.0.0.0";
			continue;
		}
		return listen_failed(addr, port, err);
	}
	srv->nlisten = 1;
	la.port = srv->port;	/* LISTEN's answer: the port it got */
	format_addr(&la, where, sizeof(where));
	if (!bind_addr && !strcmp(addr, "::"))
		strncat(where, " (IPv6 and IPv4)", sizeof(where) - strlen(where) - 1);
	else if (bind_addr && la.family == AF_INET6 && !memcmp(la.addr, in6addr_any.s6_addr, 16) &&
		 have_iwarp(srv->fd))
		strncat(where, " (IPv6 only where the device is iWARP: '::' takes no IPv4 client there)",
			sizeof(where) - strlen(where) - 1);
listening:
	format_bytes(srv->size, sz, sizeof(sz));
	/*
	 * The sockets baseline of ping and bench: TCP and UDP on port
	 * sock_port(), never the RDMA port (on iWARP that is a TCP port the
	 * RDMA listener holds), up before "listening" is said (scripts wait
	 * for it).
	 */
	socks[0] = 0;
	if (!sock_server_start(bind_addr, sock_port(srv->port)))
		snprintf(socks, sizeof(socks), "; sockets baseline on TCP and UDP port %u",
			 sock_port(srv->port));
	say(srv, "listening on %s, window %s, shared by all clients%s", where, sz, socks);
	if (!srv->admit.key)
		warnx_("warning: no --key: any host that can reach this port%s can read and write the window (see rdmaxfer(1), WHO MAY CONNECT)",
		       srv->admit.nallow ? " from an --allow prefix" : "");
	return EXIT_OK;
}

static void serve_usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer serve [--bind ADDR] [--port N] [--size BYTES] [--in FILE]\n"
		"                      [--out FILE] [--count N] [--max-per-host N] [--atomic]\n"
		"                      [--key KEY | --key-file F] [--allow PREFIX]... [--json]\n"
		"\n"
		"Serve 'rdmaxfer write', 'read', 'send', 'ping' and 'bench' from one\n"
		"window of --size bytes, like one piece of remote memory: all clients WRITE\n"
		"into and READ from the same bytes, so a 'read' sees what an earlier 'write'\n"
		"left there; messages are printed (those of ping and bench are counted,\n"
		"dropped or echoed).  Several clients are served at the same time; they\n"
		"share the window: concurrent writes to the same bytes race (the last one\n"
		"wins), and a write larger than the window passes through it round by\n"
		"round, so other clients may see any of its rounds.\n"
		"\n"
		"  --bind ADDR   listen address (default '::', IPv6 and IPv4; with an\n"
		"                iWARP device each address of this host instead)\n"
		"  --port N      port (default %u; 0: any, printed)\n"
		"  --size BYTES  window size (default 64M; K, M, G suffixes)\n"
		"  --in FILE     preload the window from FILE (at most --size bytes; the\n"
		"                rest is zero)\n"
		"  --out FILE    save what clients write to FILE (the last write; a\n"
		"                write larger than the window is saved round by round,\n"
		"                a write at an offset with the window bytes before it),\n"
		"                and append their messages to it instead of stdout\n"
		"  --count N     exit after N client connections have ended\n"
		"  --max-per-host N\n"
		"                connections one client address may hold at the same\n"
		"                time (default %u of %u); more are refused\n"
		"  --atomic      the window also allows RDMA atomics (rdmaxfer atomic,\n"
		"                bench --op fadd|cas), where the device has them\n"
		"  --key KEY     only clients that prove the key KEY connect (a keyring\n"
		"                serial, or a logon or user key's description)\n"
		"  --key-file F  the same with the key in file F (16 to 256 bytes)\n"
		"  --allow PREFIX\n"
		"                only clients from ADDR[/BITS] connect (repeatable, up\n"
		"                to %u; checked before anything is set up for them)\n"
		"  --json        one JSON object at exit (messages then go to --out or stderr)\n"
		"\n"
		"Without --key, any host that can reach the port can read and write the\n"
		"window.  Without --count, serve runs until SIGINT or SIGTERM (exit 0).\n",
		RDMAXFER_DEFAULT_PORT, SERVE_PER_HOST, SERVE_MAX_CONNS, RDMAXFER_MAX_ALLOW);
}

/*
 * --in must be a regular file no larger than the window.  Returns 0, or
 * EXIT_FAIL with the error printed.
 */
static int check_in_file(const struct server *srv)
{
	struct stat st;
	char sz[48];

	if (stat(srv->in_name, &st))
		return fail("cannot open %s: %s", srv->in_name, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail("%s is not a regular file", srv->in_name);
	if ((uint64_t)st.st_size > srv->size) {
		format_bytes(srv->size, sz, sizeof(sz));
		return fail("%s (%llu bytes) is larger than the window (--size %s)",
			    srv->in_name, (unsigned long long)st.st_size, sz);
	}
	return 0;
}

/*
 * The options of serve into @srv, and the checks that need no device.
 * Returns -1 to go on, else the exit status (help printed, or an error).
 */
static int serve_parse(struct server *srv, int argc, char **argv)
{
	static const struct option opts[] = {
		OPTION_BIND,
		OPTION_PORT,
		OPTION_SIZE,
		{ "in", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'o' },
		{ "count", required_argument, NULL, 'c' },
		{ "max-per-host", required_argument, NULL, 'm' },
		{ "atomic", no_argument, NULL, 'a' },
		{ "allow", required_argument, NULL, 'A' },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct common_opts co;
	uint64_t v;
	int c, ret;

	common_init(&co, "serve ", serve_usage, CO_PORT_ANY | CO_SIZE_MIN1 | CO_BIND_LATE);
	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0) {
		switch (c) {
		case 'i':
			srv->in_name = optarg;
			break;
		case 'o':
			srv->out_name = optarg;
			break;
		case 'c':
			if (parse_uint(optarg, UINT64_MAX, &v) || !v)
				return usage_error("serve ", "bad --count '%s' (a number, at least 1)", optarg);
			srv->count = v;
			break;
		case 'm':
			if (parse_uint(optarg, SERVE_MAX_CONNS, &v) || !v)
				return usage_error("serve ", "bad --max-per-host '%s' (1 .. %u)", optarg,
						   SERVE_MAX_CONNS);
			srv->max_per_host = (unsigned int)v;
			break;
		case 'a':
			srv->atomic = true;
			break;
		case 'A':
			if (srv->admit.nallow == RDMAXFER_MAX_ALLOW)
				return usage_error("serve ", "more than %u --allow", RDMAXFER_MAX_ALLOW);
			ret = parse_prefix("serve ", optarg, &srv->admit.allow[srv->admit.nallow++]);
			if (ret >= 0)
				return ret;
			break;
		}
	}
	if (ret < 0)
		ret = key_resolve(&co, &srv->admit.key);
	if (ret >= 0)
		return ret;
	srv->bind_addr = co.bind;
	srv->port = co.port;
	if (co.have_size)
		srv->size = co.size;
	srv->json = co.json;
	if (srv->size > SIZE_MAX)
		return fail("--size is too large for this machine");
	if (srv->in_name && check_in_file(srv))
		return EXIT_FAIL;
	return -1;
}

/* Is --size more than the module registers or exposes?  Then say so (true). */
static bool window_over_module(struct server *srv)
{
	uint64_t m = srv->info.max_window_size;
	char sz[48], mx[48];

	if ((!srv->info.max_window_size || srv->size <= srv->info.max_window_size) &&
	    (!srv->info.max_buf_size || srv->size <= srv->info.max_buf_size))
		return false;
	if (srv->info.max_buf_size && srv->info.max_buf_size < m)
		m = srv->info.max_buf_size;
	format_bytes(srv->size, sz, sizeof(sz));
	format_bytes(m, mx, sizeof(mx));
	fail("a window of %s is larger than the module allows (%s)", sz, mx);
	return true;
}

/* Create --out (truncated).  Returns 0, or -1 with the error printed. */
static int open_out(struct server *srv)
{
	struct stat st;

	srv->out_fd = open(srv->out_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (srv->out_fd < 0) {
		fail("cannot create %s: %s", srv->out_name, strerror(errno));
		return -1;
	}
	srv->out_regular = !fstat(srv->out_fd, &st) && S_ISREG(st.st_mode);
	srv->out_seekable = lseek(srv->out_fd, 0, SEEK_CUR) >= 0;
	return 0;
}

/*
 * The RECV buffer and the CTL_ANSWERS registered buffers of control answers.
 * Returns 0, or -1 with the error printed.
 */
static int setup_ctl(struct server *srv)
{
	int err;

	srv->rbuf_len = srv->info.max_send_size > 4096 ? srv->info.max_send_size : 4096;
	srv->rbuf = malloc(srv->rbuf_len);
	/* populated before REG_BUF: see map_anon() */
	srv->ctl = mmap(NULL, CTL_ANSWERS * sizeof(*srv->ctl), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!srv->rbuf || srv->ctl == MAP_FAILED) {
		srv->ctl = NULL;
		fail("out of memory");
		return -1;
	}
	err = rdx_reg_buf(srv->fd, srv->ctl, CTL_ANSWERS * sizeof(*srv->ctl), RDMAXFER_BUF_READ,
			  &srv->ctl_buf);
	if (err) {
		fail("cannot register memory: %s", strerror(err));
		return -1;
	}
	return 0;
}

/*
 * The echo ring of ping and bench: ECHO_BUFS registered message buffers.
 * Without it (no memory), ECHO mode is refused; nothing is printed.
 */
static void setup_echo_ring(struct server *srv)
{
	unsigned int i;

	srv->echo_stride = (srv->info.max_send_size + 4095) & ~4095u;
	if (srv->echo_stride < 4096)
		srv->echo_stride = 4096;
	srv->echo = mmap(NULL, (size_t)ECHO_BUFS * srv->echo_stride, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (srv->echo == MAP_FAILED) {
		srv->echo = NULL;
		return;
	}
	if (rdx_reg_buf(srv->fd, srv->echo, (uint64_t)ECHO_BUFS * srv->echo_stride,
			RDMAXFER_BUF_READ, &srv->echo_buf)) {
		munmap(srv->echo, (size_t)ECHO_BUFS * srv->echo_stride);
		srv->echo = NULL;
		return;
	}
	for (i = 0; i < ECHO_BUFS; i++)
		srv->echo_free[srv->echo_nfree++] = ECHO_BUFS - 1 - i;
}

/*
 * The shared window: --size bytes, populated before REG_BUF (see
 * map_anon(): a pin of never-written memory may see the zero page on older
 * kernels), preloaded from --in, registered once.  Returns 0, or -1 with
 * the error printed.
 */
static int setup_window(struct server *srv)
{
	char sz[48];
	int err;

	srv->win = mmap(NULL, srv->size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (srv->win == MAP_FAILED) {
		srv->win = NULL;
		format_bytes(srv->size, sz, sizeof(sz));
		fail("cannot allocate a window of %s: %s", sz, strerror(errno));
		return -1;
	}
	if (srv->in_name) {
		err = preload(srv, srv->win);
		if (err) {
			fail("cannot read %s: %s", srv->in_name, strerror(err));
			return -1;
		}
	}
	err = rdx_reg_buf(srv->fd, srv->win, srv->size, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE,
			  &srv->buf_id);
	if (err) {
		format_bytes(srv->size, sz, sizeof(sz));
		if (err == ENOMEM)
			fail("cannot register a window of %s: out of memory or over the locked-memory limit (ulimit -l)",
			     sz);
		else
			fail("cannot register a window of %s: %s", sz, strerror(err));
		return -1;
	}
	return 0;
}

/*
 * Open the device and set up everything serving needs: --out, the control
 * answer ring, the echo ring and the window.  Returns 0, or -1 with the
 * error printed.
 */
static int serve_setup(struct server *srv)
{
	srv->fd = cli_open_transfer(&srv->info);
	if (srv->fd < 0 || window_over_module(srv))
		return -1;
	if (srv->out_name && open_out(srv))
		return -1;
	if (setup_ctl(srv))
		return -1;
	setup_echo_ring(srv);
	return setup_window(srv);
}

/*
 * SIGINT and SIGTERM stop the loop; they are blocked, and only let in
 * during ppoll() with the mask left in @orig.  SIGALRM interrupts a
 * stalled echo SUBMIT (submit_echoes()).
 */
static void serve_signals(sigset_t *orig)
{
	struct sigaction sa, old;
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, orig);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	/* no SA_RESTART: the alarm interrupts a stalled echo SUBMIT */
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_signal;
	/* a background job of a non-interactive shell ignores SIGINT: keep that */
	if (!sigaction(SIGINT, NULL, &old) && old.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
}

/*
 * Serve until SIGINT or SIGTERM, until --count connections have ended, or
 * until a fatal error; then finish the connections still open.  Returns 0,
 * or -1 when serving failed (the error was printed).
 */
static int serve_loop(struct server *srv, const sigset_t *orig)
{
	unsigned int i;

	srv->start = now_sec();
	while (!stop_signal) {
		struct pollfd pfd = { .fd = srv->fd, .events = POLLIN };
		struct timespec ts = { .tv_sec = 1 };

		if (srv->fatal || (srv->count && srv->finished >= srv->count))
			break;
		if (ppoll(&pfd, 1, &ts, orig) < 0 && errno != EINTR) {
			fail("poll failed: %s", strerror(errno));
			return -1;
		}
		if (reap_all(srv))
			return -1;
	}
	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id)
			finish_conn(srv, &srv->conns[i], 0);
	return srv->fatal ? -1 : 0;
}

/*
 * The end of a run: the --json object, then stdout and --out must have been
 * written completely.  Returns the exit status.
 */
static int serve_report(struct server *srv)
{
	int ret = EXIT_FAIL;

	if (srv->json) {
		json_begin_object(NULL);
		json_u64("connections", srv->finished);
		json_u64("bytes_written", srv->bytes_written);
		json_u64("rounds", srv->rounds);
		json_u64("messages", srv->msgs);
		json_u64("message_bytes", srv->msg_bytes);
		json_u64("bench_messages", srv->bench_msgs);
		json_u64("bench_bytes", srv->bench_bytes);
		json_u64("echoed", srv->echoed);
		json_u64("errors", srv->errors);
		json_u64("refused", srv->refused);
		json_u64("window", srv->size);
		json_double("seconds", now_sec() - srv->start);
		json_end_object();
		json_end_document();
	}
	if (fflush(stdout))
		fail("writing output failed: %s", strerror(errno));
	else if (srv->out_fd >= 0 && close(srv->out_fd))
		out_error(srv, "writing");
	else
		ret = srv->out_failed ? EXIT_FAIL : EXIT_OK;
	srv->out_fd = -1;
	return ret;
}

int cmd_serve(int argc, char **argv)
{
	static struct server srv;
	sigset_t orig;
	int ret;

	memset(&srv, 0, sizeof(srv));
	srv.fd = -1;
	srv.out_fd = -1;
	srv.size = SERVE_DEFAULT_SIZE;
	srv.stdout_at_bol = true;
	srv.max_per_host = SERVE_PER_HOST;
	ret = serve_parse(&srv, argc, argv);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	if (!serve_setup(&srv)) {
		serve_signals(&orig);
		if (do_listen(&srv, srv.bind_addr, srv.port) == EXIT_OK && !serve_loop(&srv, &orig))
			ret = serve_report(&srv);
	}
	if (srv.fd >= 0)
		close(srv.fd);		/* closes everything, deregisters the window */
	if (srv.win)
		munmap(srv.win, srv.size);
	if (srv.echo)
		munmap(srv.echo, (size_t)ECHO_BUFS * srv.echo_stride);
	if (srv.out_fd >= 0)
		close(srv.out_fd);
	free(srv.rbuf);
	return ret;
}
