// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer write | read | send - the clients of `rdmaxfer serve`.
 *
 * write HOST (--file F | --size N) [--offset O] [--verify]
 *	Connects, waits for the server's window, and RDMA WRITEs the data to
 *	window offset O.  The protocol is in proto.h: WRITE_BEGIN, then rounds
 *	(only when O is 0: a file longer than the window streams through it),
 *	each ended by a WRITE_WITH_IMM with imm = round | PROTO_IMM_LAST on the
 *	last round, and acknowledged by the server's ROUND_DONE after it saved
 *	the round to its --out.  Data that fits the window goes in one round;
 *	more goes in pipelined rounds of half the window, alternating between
 *	its halves, so that reading the file, the RDMA and the server's saving
 *	overlap (write_rounds()).  With --verify the acknowledgement carries
 *	the CRC32C of the round as it is in the server's memory, which must
 *	equal the CRC32C of what we sent; that half of the window is not
 *	overwritten before.  --size N writes N bytes
 *	of a deterministic pattern (byte p of the stream is byte p % 8 of
 *	splitmix64(p / 8), little-endian).
 *
 * read HOST --size N [--offset O] [--out F] [--verify]
 *	RDMA READs N bytes from window offset O (O + N must fit the window) in
 *	pieces of at most READ_PIECE bytes into F or stdout, the next piece
 *	arriving while the last one is written out.  --verify asks the
 *	server for the CRC32C of those window bytes (CSUM_REQ) and compares it
 *	with the CRC32C of what arrived.
 *
 * send HOST (--file F | --message TEXT)
 *	SENDs the file, or TEXT plus a newline, as messages of at most the
 *	peer's max_send_size bytes (a larger file goes as several messages,
 *	in order), SEND_BATCH_MSGS at a time, each batch followed by a SYNC
 *	round trip; when send returns, the server has printed them all.
 *
 * Times and MiB/s cover the data phase: from the first operation to the
 * last acknowledgement (connection set-up and registration excluded).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session.h"

#define READ_PIECE	(16ull << 20)	/* each half of the local buffer of `read` */
#define WRITE_PIPE_ALIGN	4096u	/* pipelined rounds are multiples of this */
#define SEND_PIECE	(4ull << 20)	/* local buffer of `send --file` */
/*
 * Messages sent before waiting for the server to take them (SYNC): the
 * module queues at most 128 messages a receiver has not RECV'd and drops the
 * connection (ENOBUFS) beyond that, so a sender must not run ahead of a
 * server that is busy (setting up its window, writing to a slow --out).
 */
#define SEND_BATCH_MSGS	32

/* --- data ------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The pattern of `write --size`: bytes [pos, pos + len) of the stream. */
static void fill_pattern(unsigned char *buf, uint64_t len, uint64_t pos)
{
	uint64_t v;

	while (len && (pos & 7)) {
		*buf++ = (unsigned char)(splitmix64(pos >> 3) >> (8 * (pos & 7)));
		pos++;
		len--;
	}
	while (len >= 8) {
		v = htole64(splitmix64(pos >> 3));
		memcpy(buf, &v, 8);
		buf += 8;
		pos += 8;
		len -= 8;
	}
	while (len) {
		*buf++ = (unsigned char)(splitmix64(pos >> 3) >> (8 * (pos & 7)));
		pos++;
		len--;
	}
}

/* Bytes in part @k of @total bytes cut into parts of @part (the last may be short). */
static uint64_t part_len(uint64_t total, uint64_t part, uint64_t k)
{
	uint64_t left = total - k * part;

	return left < part ? left : part;
}

/* Read exactly @len bytes at @pos of @fd.  Prints the error. */
static int read_exact(int fd, const char *name, void *buf, uint64_t len, uint64_t pos)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			warnx_("reading %s failed: %s", name, strerror(errno));
			return -1;
		}
		if (n == 0) {
			warnx_("%s got shorter while it was being sent", name);
			return -1;
		}
		p += n;
		pos += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int write_all(int fd, const char *name, const void *buf, uint64_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			warnx_("writing %s failed: %s", name, strerror(errno));
			return -1;
		}
		p += n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Open a data file for reading; its size in *size.  Prints the error. */
static int open_input(const char *name, uint64_t *size)
{
	struct stat st;
	int fd = open(name, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		warnx_("cannot open %s: %s", name, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		warnx_("%s is not a regular file", name);
		close(fd);
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* --- options ---------------------------------------------------------- */

/* getopt values of the options only these commands take (opts.c: the others) */
enum {
	OPT_FILE = 'f', OPT_OFFSET = 'o', OPT_OUT = 'O', OPT_VERIFY = 'v', OPT_MESSAGE = 'm',
};

struct client_opts {
	struct common_opts co;	/* HOST, --port, --size, --json */
	const char *file;
	const char *out;
	const char *message;
	uint64_t offset;
	bool verify;
	int32_t key;		/* --key, --key-file: its serial; 0: none */
};

/*
 * Parse the options of client command @cmd ("write " etc., for usage
 * errors) into @o.  Returns -1 when parsed, else an exit code (help printed,
 * or a usage error).
 */
static int parse_client(int argc, char **argv, const struct option *opts, const char *cmd,
			struct client_opts *o, void (*help)(FILE *))
{
	int c, ret;

	common_init(&o->co, cmd, help, CO_HOST);
	while ((c = common_getopt(&o->co, argc, argv, opts, &ret)) > 0) {
		switch (c) {
		case OPT_FILE:
			o->file = optarg;
			break;
		case OPT_OUT:
			o->out = optarg;
			break;
		case OPT_MESSAGE:
			o->message = optarg;
			break;
		case OPT_OFFSET:
			if (parse_size(optarg, &o->offset))
				return usage_error(cmd, "bad --offset '%s' (bytes, with K, M, G suffixes)", optarg);
			break;
		case OPT_VERIFY:
			o->verify = true;
			break;
		}
	}
	if (ret < 0)
		ret = key_resolve(&o->co, &o->key);
	return ret;
}

static double mib_per_s(uint64_t bytes, double secs)
{
	if (secs < 1e-9)
		secs = 1e-9;
	return (double)bytes / 1048576.0 / secs;
}

/* The result of write/read, human or JSON.  Returns an exit code. */
static int report(const struct client_opts *o, const char *op, uint64_t bytes, double secs,
		  uint64_t rounds, uint64_t window, bool verified, FILE *human)
{
	if (o->co.json) {
		json_begin_object(NULL);
		json_string("op", op);
		json_string("host", o->co.host);
		json_u64("port", o->co.port);
		json_u64("bytes", bytes);
		json_u64("offset", o->offset);
		if (rounds)
			json_u64("rounds", rounds);
		json_u64("window", window);
		json_double("seconds", secs);
		json_double("mib_per_s", mib_per_s(bytes, secs));
		if (o->verify)
			json_bool("verified", verified);
		json_end_object();
		json_end_document();
	} else {
		fprintf(human, "%s %llu bytes in %.3f s (%.1f MiB/s)",
			!strcmp(op, "write") ? "wrote" : "read", (unsigned long long)bytes, secs,
			mib_per_s(bytes, secs));
		if (rounds > 1)
			fprintf(human, ", %llu rounds", (unsigned long long)rounds);
		if (o->verify)
			fputs(verified ? ", verified" : ", NOT verified", human);
		fputc('\n', human);
	}
	if (fflush(stdout) || fflush(human))
		return fail("writing output failed: %s", strerror(errno));
	return EXIT_OK;
}

static int does_not_fit(struct session *s, const char *op, uint64_t len, uint64_t off)
{
	char a[48], b[48];

	format_bytes(len, a, sizeof(a));
	format_bytes(s->window_len, b, sizeof(b));
	return fail("a %s of %s at offset %llu does not fit the window of %s at %s", op, a,
		    (unsigned long long)off, b, s->peer);
}

/* --- write ------------------------------------------------------------ */

static void write_help(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer write HOST [--port N] (--file F | --size BYTES) [--offset BYTES]\n"
		"                      [--verify] [--key KEY | --key-file F] [--json]\n"
		"\n"
		"RDMA WRITE a file, or BYTES of a test pattern, into the window of\n"
		"'rdmaxfer serve' at HOST, at --offset (default 0).  With offset 0, data\n"
		"larger than the window goes in window-sized rounds that the server saves\n"
		"to its --out one by one; with an offset the data must fit the window.\n"
		"\n"
		"  --port N      server port (default %u)\n"
		"  --key KEY     prove the key KEY (a keyring serial or description) to the server\n"
		"  --key-file F  the same with the key in file F (16 to 256 bytes)\n"
		"  --file F      the data to write\n"
		"  --size BYTES  write BYTES of a deterministic pattern (K, M, G suffixes)\n"
		"  --offset B    window offset to write at\n"
		"  --verify      compare a CRC32C of each round, computed by the server on\n"
		"                its memory, with ours\n"
		"  --json        one JSON object on stdout\n",
		RDMAXFER_DEFAULT_PORT);
}

/*
 * The rounds of a write (proto.h, 2.).  Round r is read from the file (or
 * made from the pattern) into local half r % 2 of @buf while round r - 1 is
 * on the wire, and, pipelined, written into window half r % 2 while the
 * server saves round r - 1 from the other: each side's copy overlaps the
 * RDMA.  Unpipelined (an older server) the window has one round at a time.
 */
struct write_state {
	struct session *s;
	const struct client_opts *o;
	int in;				/* the file, or -1: the pattern */
	unsigned char *buf;		/* two halves of round_len bytes */
	uint32_t buf_id;
	uint64_t total, round_len, rounds;
	bool pipe;
	uint32_t crc[4];		/* --verify: CRC32C of round r in [r % 4] */
	double t0;
};

static uint64_t round_bytes(const struct write_state *w, uint64_t r)
{
	return part_len(w->total, w->round_len, r);
}

/* Round @r of the data into its local half. */
static int write_fill(struct write_state *w, uint64_t r)
{
	unsigned char *half = w->buf + (r & 1) * w->round_len;
	uint64_t len = round_bytes(w, r), pos = r * w->round_len;

	if (w->in >= 0) {
		if (read_exact(w->in, w->o->file, half, len, pos)) {
			progress_end(w->s->prog);
			return -1;
		}
	} else {
		fill_pattern(half, len, pos);
	}
	if (w->o->verify)
		w->crc[r & 3] = crc32c(0, half, len);
	return 0;
}

/* Post round @r: WRITEs, the last a WRITE_IMM with the round number. */
static int write_post(struct write_state *w, uint64_t r)
{
	uint64_t at = w->o->offset + (w->pipe && (r & 1) ? w->round_len : 0);
	uint32_t imm = (uint32_t)(r & PROTO_IMM_ROUND_MASK);

	if (r + 1 == w->rounds)
		imm |= PROTO_IMM_LAST;
	return session_rdma_post(w->s, RDMAXFER_OP_WRITE, w->buf_id, (r & 1) * w->round_len, at,
				 round_bytes(w, r), true, imm);
}

/* The server's ROUND_DONE for round @r, checked (and its CRC with --verify). */
static int write_ack(struct write_state *w, uint64_t r)
{
	struct session *s = w->s;
	uint64_t len = round_bytes(w, r);
	struct proto_msg rep;

	if (session_ctl_recv(s, "the acknowledgement of the round", PROTO_ROUND_DONE, &rep))
		return -1;
	if (rep.status) {
		progress_end(s->prog);
		fail("%s could not take round %llu of the write: %s", s->peer,
		     (unsigned long long)r,
		     rep.status == EIO ? "saving it to its --out failed" : strerror((int)rep.status));
		return -1;
	}
	if (rep.round != (uint32_t)(r & PROTO_IMM_ROUND_MASK) || rep.length != len) {
		progress_end(s->prog);
		fail("protocol error: %s acknowledged round %u (%llu bytes), we wrote round %llu (%llu bytes)",
		     s->peer, rep.round, (unsigned long long)rep.length,
		     (unsigned long long)r, (unsigned long long)len);
		return -1;
	}
	if (w->o->verify && rep.crc != w->crc[r & 3]) {
		progress_end(s->prog);
		if (w->o->co.json)
			report(w->o, "write", r * w->round_len, now_sec() - w->t0, r + 1,
			       s->window_len, false, stdout);
		fail("verification failed: bytes %llu..%llu in the window of %s have CRC32C %08x, we sent %08x",
		     (unsigned long long)(r * w->round_len),
		     (unsigned long long)(r * w->round_len + len - 1), s->peer, rep.crc,
		     w->crc[r & 3]);
		return -1;
	}
	return 0;
}

/*
 * The data phase of a write, then the report.  The session is closed
 * before the report is printed.  Returns the exit status.
 */
static int write_rounds(struct write_state *w)
{
	struct session *s = w->s;
	uint64_t r, acked = 0;
	struct progress prog;
	double secs;
	int ret = EXIT_FAIL;

	progress_start(&prog, "write", w->total);
	s->prog = &prog;
	w->t0 = now_sec();
	if (w->rounds && write_fill(w, 0))
		goto out;
	for (r = 0; r < w->rounds; r++) {
		/* round r's half of the window is free once r - 2 (r - 1) is saved */
		while (acked + w->pipe < r)
			if (write_ack(w, acked++))
				goto out;
		/* round r - 1 has left its local half, which round r + 1 takes */
		if (session_drain(s) || write_post(w, r))
			goto out;
		if (r + 1 < w->rounds && write_fill(w, r + 1))
			goto out;
	}
	if (session_drain(s))
		goto out;
	while (acked < w->rounds)
		if (write_ack(w, acked++))
			goto out;
	secs = now_sec() - w->t0;
	progress_end(&prog);
	s->prog = NULL;
	session_close(s);
	ret = report(w->o, "write", w->total, secs, w->rounds, s->window_len, true, stdout);
out:
	progress_end(&prog);
	s->prog = NULL;
	return ret;
}

int cmd_write(int argc, char **argv)
{
	static const struct option opts[] = {
		OPTION_PORT,
		{ "file", required_argument, NULL, OPT_FILE },
		OPTION_SIZE,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct client_opts o = { 0 };
	struct session s = { .fd = -1 };
	struct proto_msg req = { 0 }, rep;
	struct write_state w = { 0 };
	uint64_t total, buf_len = 0;
	unsigned char *buf = NULL;
	int in = -1, ret = EXIT_FAIL;

	ret = parse_client(argc, argv, opts, "write ", &o, write_help);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	if (!o.file == !o.co.have_size)
		return usage_error("write ", "give exactly one of --file and --size");
	if (o.co.have_size && !o.co.size)
		return usage_error("write ", "--size must be at least 1 byte");

	if (o.file) {
		in = open_input(o.file, &total);
		if (in < 0)
			return EXIT_FAIL;
	} else {
		total = o.co.size;
	}

	if (session_open(&s, o.co.host, o.co.port, o.key) || session_wait_window(&s, RDMAXFER_REMOTE_WRITE))
		goto out;
	if (o.offset > s.window_len || (o.offset && total > s.window_len - o.offset)) {
		does_not_fit(&s, "write", total, o.offset);
		goto out;
	}
	/* more than a window: pipelined rounds of half a window (page multiples) */
	w.round_len = s.window_len - o.offset;
	w.pipe = total > w.round_len && w.round_len >= 2 * WRITE_PIPE_ALIGN;
	if (w.pipe)
		w.round_len = w.round_len / 2 / WRITE_PIPE_ALIGN * WRITE_PIPE_ALIGN;
	w.rounds = total ? (total - 1) / w.round_len + 1 : 0;
	buf_len = w.rounds > 1 ? 2 * w.round_len : total;
	buf = map_anon(buf_len);
	if (!buf || session_reg(&s, buf, buf_len ? buf_len : 1, RDMAXFER_BUF_READ, &w.buf_id))
		goto out;

	req.type = PROTO_WRITE_BEGIN;
	req.offset = o.offset;
	req.length = total;
	req.round_len = w.round_len;
	req.flags = (o.verify ? PROTO_F_VERIFY : 0) | (w.pipe ? PROTO_F_PIPE : 0);
	if (session_call(&s, &req, PROTO_WRITE_READY, &rep))
		goto out;
	if (rep.status) {
		fail("%s refused the write: %s", s.peer,
		     rep.status == ERANGE ? "it does not fit the window" : strerror((int)rep.status));
		goto out;
	}
	/* a server without pipelined rounds took them as rounds of round_len at 0 */
	w.pipe = w.pipe && (rep.flags & PROTO_F_PIPE);
	w.s = &s;
	w.o = &o;
	w.in = in;
	w.buf = buf;
	w.total = total;
	ret = write_rounds(&w);
out:
	session_close(&s);
	if (buf)
		munmap(buf, buf_len ? buf_len : 1);
	if (in >= 0)
		close(in);
	return ret;
}

/* --- read ------------------------------------------------------------- */

static void read_help(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer read HOST [--port N] --size BYTES [--offset BYTES] [--out F]\n"
		"                     [--verify] [--key KEY | --key-file F] [--json]\n"
		"\n"
		"RDMA READ BYTES from the window of 'rdmaxfer serve' at HOST, from --offset\n"
		"(default 0), into F or stdout (then the summary goes to stderr).\n"
		"\n"
		"  --port N      server port (default %u)\n"
		"  --key KEY     prove the key KEY (a keyring serial or description) to the server\n"
		"  --key-file F  the same with the key in file F (16 to 256 bytes)\n"
		"  --size BYTES  how much to read (K, M, G suffixes); must fit the window\n"
		"  --offset B    window offset to read from\n"
		"  --out F       write the data to F instead of stdout\n"
		"  --verify      compare a CRC32C of the server's window bytes with ours\n"
		"  --json        one JSON object on stdout (needs --out)\n",
		RDMAXFER_DEFAULT_PORT);
}

/*
 * The data phase of a read: --size bytes from the window at --offset, in
 * pieces of at most @piece bytes through the two halves of local buffer
 * @buf (@buf_id), to @out: piece k + 1 is READ into one half while piece k
 * is written out from the other.  *@crc is their CRC32C with --verify,
 * *@secs the time it took.  Returns 0 or -1 (printed).
 */
static int read_pieces(struct session *s, const struct client_opts *o, unsigned char *buf,
		       uint32_t buf_id, uint64_t piece, int out, const char *out_name,
		       uint32_t *crc, double *secs)
{
	uint64_t k, n = (o->co.size - 1) / piece + 1;
	struct progress prog;
	double t0;
	int ret = -1;

	progress_start(&prog, "read", o->co.size);
	s->prog = &prog;
	t0 = now_sec();
	for (k = 0; k <= n; k++) {
		/* piece k - 1 has arrived; post piece k, then write out k - 1 */
		if (session_drain(s))
			goto out;
		if (k < n && session_rdma_post(s, RDMAXFER_OP_READ, buf_id, (k & 1) * piece,
					       o->offset + k * piece,
					       part_len(o->co.size, piece, k), false, 0))
			goto out;
		if (k) {
			const unsigned char *half = buf + ((k - 1) & 1) * piece;
			uint64_t len = part_len(o->co.size, piece, k - 1);

			if (o->verify)
				*crc = crc32c(*crc, half, len);
			if (write_all(out, out_name, half, len)) {
				progress_end(&prog);
				goto out;
			}
		}
	}
	*secs = now_sec() - t0;
	ret = 0;
out:
	progress_end(&prog);
	s->prog = NULL;
	return ret;
}

/*
 * --verify of a read: the server's CRC32C of the window bytes read
 * (CSUM_REQ) must be @crc.  Returns 0 or -1 (printed; with --json the
 * report says "verified": false first).
 */
static int read_verify(struct session *s, const struct client_opts *o, uint32_t crc, double secs)
{
	struct proto_msg req = { 0 }, rep;

	req.type = PROTO_CSUM_REQ;
	req.offset = o->offset;
	req.length = o->co.size;
	if (session_call(s, &req, PROTO_CSUM, &rep))
		return -1;
	if (rep.status) {
		fail("%s could not checksum its window: %s", s->peer, strerror((int)rep.status));
		return -1;
	}
	if (rep.crc != crc) {
		if (o->co.json)
			report(o, "read", o->co.size, secs, 0, s->window_len, false, stdout);
		fail("verification failed: the window of %s has CRC32C %08x at offset %llu, length %llu; we received %08x",
		     s->peer, rep.crc, (unsigned long long)o->offset,
		     (unsigned long long)o->co.size, crc);
		return -1;
	}
	return 0;
}

int cmd_read(int argc, char **argv)
{
	static const struct option opts[] = {
		OPTION_PORT,
		OPTION_SIZE,
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct client_opts o = { 0 };
	struct session s = { .fd = -1 };
	uint64_t piece = 0, buf_len = 0;
	unsigned char *buf = NULL;
	uint32_t buf_id, crc = 0;
	const char *out_name;
	double secs = 0;
	int out = STDOUT_FILENO, ret;

	ret = parse_client(argc, argv, opts, "read ", &o, read_help);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	if (!o.co.have_size)
		return usage_error("read ", "missing --size");
	if (!o.co.size)
		return usage_error("read ", "--size must be at least 1 byte");
	if (o.co.json && !o.out)
		return usage_error("read ", "--json needs --out (without it the data goes to stdout)");
	out_name = o.out ? o.out : "stdout";
	if (o.out) {
		out = open(o.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out < 0)
			return fail("cannot create %s: %s", o.out, strerror(errno));
	}

	if (session_open(&s, o.co.host, o.co.port, o.key) || session_wait_window(&s, RDMAXFER_REMOTE_READ))
		goto out;
	if (o.offset > s.window_len || o.co.size > s.window_len - o.offset) {
		does_not_fit(&s, "read", o.co.size, o.offset);
		goto out;
	}
	piece = o.co.size < READ_PIECE ? o.co.size : READ_PIECE;
	buf_len = o.co.size > piece ? 2 * piece : piece;
	buf = map_anon(buf_len);
	if (!buf || session_reg(&s, buf, buf_len, RDMAXFER_BUF_WRITE, &buf_id))
		goto out;
	if (read_pieces(&s, &o, buf, buf_id, piece, out, out_name, &crc, &secs))
		goto out;
	if (o.verify && read_verify(&s, &o, crc, secs))
		goto out;
	if (o.out && close(out)) {
		out = -1;
		fail("writing %s failed: %s", o.out, strerror(errno));
		goto out;
	}
	out = -1;
	session_close(&s);
	ret = report(&o, "read", o.co.size, secs, 0, s.window_len, true, o.out ? stdout : stderr);
out:
	session_close(&s);
	if (buf)
		munmap(buf, buf_len);
	if (o.out && out >= 0)
		close(out);
	return ret;
}

/* --- send ------------------------------------------------------------- */

static void send_help(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer send HOST [--port N] (--file F | --message TEXT)\n"
		"                     [--key KEY | --key-file F] [--json]\n"
		"\n"
		"SEND a message to 'rdmaxfer serve' at HOST, which prints it (or appends it\n"
		"to its --out).  A file larger than the largest message the server accepts\n"
		"goes as several messages, in order.  Returns when the server has taken\n"
		"them all.\n"
		"\n"
		"  --port N        server port (default %u)\n"
		"  --key KEY       prove the key KEY (a keyring serial or description) to the server\n"
		"  --key-file F    the same with the key in file F (16 to 256 bytes)\n"
		"  --file F        send the bytes of F\n"
		"  --message TEXT  send TEXT followed by a newline\n"
		"  --json          one JSON object on stdout\n",
		RDMAXFER_DEFAULT_PORT);
}

int cmd_send(int argc, char **argv)
{
	static const struct option opts[] = {
		OPTION_PORT,
		{ "file", required_argument, NULL, OPT_FILE },
		{ "message", required_argument, NULL, OPT_MESSAGE },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct client_opts o = { 0 };
	struct session s = { .fd = -1 };
	struct proto_msg req = { 0 }, rep;
	struct progress prog;
	uint64_t total, piece, batch, done = 0;
	unsigned char *buf = NULL;
	uint32_t buf_id;
	double t0, secs;
	int in = -1, ret;

	ret = parse_client(argc, argv, opts, "send ", &o, send_help);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	if (!o.file == !o.message)
		return usage_error("send ", "give exactly one of --file and --message");
	if (o.file) {
		in = open_input(o.file, &total);
		if (in < 0)
			return EXIT_FAIL;
	} else {
		total = strlen(o.message) + 1;
	}
	piece = total < SEND_PIECE ? total : SEND_PIECE;

	if (session_open(&s, o.co.host, o.co.port, o.key))
		goto out;
	buf = map_anon(piece);
	if (!buf || session_reg(&s, buf, piece ? piece : 1, RDMAXFER_BUF_READ, &buf_id))
		goto out;
	if (o.message) {
		memcpy(buf, o.message, total - 1);
		buf[total - 1] = '\n';
	}

	progress_start(&prog, "send", total);
	s.prog = &prog;
	t0 = now_sec();
	req.type = PROTO_SYNC;
	batch = (uint64_t)SEND_BATCH_MSGS * s.ci.max_send_size;
	do {
		uint64_t len = total - done < piece ? total - done : piece, pos;

		if (in >= 0 && read_exact(in, o.file, buf, len, done)) {
			progress_end(&prog);
			goto out;
		}
		for (pos = 0; pos < len || !total; pos += batch) {
			uint64_t n = len - pos < batch ? len - pos : batch;

			if (session_send(&s, buf_id, buf, pos, n) || session_drain(&s) ||
			    session_call(&s, &req, PROTO_SYNC_ACK, &rep))
				goto out;
			if (!total)
				break;
		}
		done += len;
	} while (done < total);
	secs = now_sec() - t0;
	progress_end(&prog);
	s.prog = NULL;
	session_close(&s);

	if (o.co.json) {
		json_begin_object(NULL);
		json_string("op", "send");
		json_string("host", o.co.host);
		json_u64("port", o.co.port);
		json_u64("bytes", total);
		json_u64("messages", s.msgs_sent);
		json_double("seconds", secs);
		json_double("mib_per_s", mib_per_s(total, secs));
		json_end_object();
		json_end_document();
	} else {
		printf("sent %llu bytes in %llu message%s in %.3f s (%.1f MiB/s)\n",
		       (unsigned long long)total, (unsigned long long)s.msgs_sent,
		       s.msgs_sent == 1 ? "" : "s", secs, mib_per_s(total, secs));
	}
	ret = fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
out:
	session_close(&s);
	if (buf)
		munmap(buf, piece ? piece : 1);
	if (in >= 0)
		close(in);
	return ret;
}
