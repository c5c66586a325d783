/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer CLI - the application protocol between `rdmaxfer serve` and the
 * clients `write`, `read`, `send`, `ping` and `bench`.
 *
 * The kernel module moves bytes (RDMA WRITE/READ into a window, SEND into the
 * peer's message queue, WRITE_WITH_IMM notifications); this small protocol on
 * top tells the server what the bytes mean.  It uses two carriers:
 *
 * 1. Control messages: SENDs of exactly sizeof(struct proto_msg) (64) bytes
 *    that start with the 8-byte magic "RDXFCTL1".  Every other SEND is user
 *    data (`rdmaxfer send`), which the server prints or appends to --out.  A
 *    client never sends user data that looks like a control message (it
 *    splits such a chunk in two).  All integers are little-endian.
 *
 *    client -> server              server -> client
 *    WRITE_BEGIN offset length     WRITE_READY status
 *                round_len flags
 *    (rounds, see 2.)              ROUND_DONE round offset length crc status
 *    CSUM_REQ offset length        CSUM offset length crc status
 *    SYNC                          SYNC_ACK            (all earlier messages handled)
 *    BENCH_BEGIN flags             BENCH_READY status  (see 3.)
 *    BENCH_END                     BENCH_DONE offset=messages length=bytes
 *    CPU_REQ                       CPU offset=cpu_us length=busy round_len=total
 *                                      round=clk_tck status
 *    WINS_REQ length=n             WINS offset=us length=exposed status  (see 4.)
 *    anything else                 ERROR status=EPROTO
 *
 *    status is 0 or a positive Linux errno (ERANGE: outside the window,
 *    EIO: the server could not save the data to --out, EPROTO: malformed).
 *    crc is CRC32C (Castagnoli) of the bytes in the server's window, computed
 *    by the server (ROUND_DONE carries it only when WRITE_BEGIN had
 *    PROTO_F_VERIFY; else 0).
 *
 * 2. Write rounds.  `write` of L bytes at window offset O: WRITE_BEGIN
 *    (O, L, R = round length, flags) and wait for WRITE_READY.  With O = 0
 *    the data may be longer than the window: it goes in rounds of R bytes
 *    (R <= window length; the last round may be shorter); with O > 0 it must
 *    fit (O + L <= window, one round).  Round
 *    r (0, 1, ...) puts bytes [r*R, min((r+1)*R, L)) of the data at window
 *    offset O with RDMA WRITEs, the last piece of the round as a
 *    WRITE_WITH_IMM posted after the others on the same connection (which
 *    executes them in order), with
 *
 *        imm = r (bits 0..30) | PROTO_IMM_LAST (bit 31) on the last round.
 *
 *    The WRITE_IMM event tells the server where the round ends (event offset
 *    + bytes); it checks the round against WRITE_BEGIN, saves it to --out at
 *    file position O + r*R (round 0 also saves window bytes [0, O)), computes
 *    the CRC32C if asked, and answers ROUND_DONE.  The client waits for
 *    ROUND_DONE (and compares the CRC with its own with --verify) before it
 *    overwrites the window with the next round.  WRITE_BEGIN with L = 0 is a
 *    write of nothing: --out becomes empty, no round follows.
 *
 *    Pipelined rounds: with PROTO_F_PIPE in WRITE_BEGIN (O + 2R <= window)
 *    round r goes to window offset O + (r % 2) * R instead of O, so that the
 *    client may write round r + 1 into one half while the server saves
 *    round r from the other: the client waits for ROUND_DONE of round r - 1
 *    (not r) before it writes round r + 1.  A server that does pipelined
 *    rounds says so with PROTO_F_PIPE in WRITE_READY's flags; an older one
 *    answers flags 0 and has taken WRITE_BEGIN as plain rounds of R bytes
 *    at O, which the client then writes one at a time.
 *
 * A client that writes without WRITE_BEGIN (another program) still gets its
 * data saved: on disconnect the server writes window bytes [0, highest byte
 * notified by a WRITE_IMM) to --out.
 *
 * 3. Measurements (`rdmaxfer ping` and `bench`).  BENCH_BEGIN with exactly
 *    one of the flags PROTO_BF_SINK and PROTO_BF_ECHO puts this connection
 *    in a bench mode and zeroes its bench counters; BENCH_READY answers it
 *    (status EINVAL for other flags).  In SINK mode the server takes every
 *    data message (RECV) as soon as it sees it, counts it and throws it
 *    away: nothing is printed or saved.  In ECHO mode it SENDs every data
 *    message back unchanged, in order, and counts it; control messages
 *    are still answered in both modes.  An echoing client keeps at most
 *    PROTO_ECHO_WINDOW messages unanswered: a message's credit comes back
 *    only when its receiver takes it, and a server waiting for the
 *    client's credits to echo stops serving everybody.  BENCH_END answers
 *    BENCH_DONE with offset = data messages and length = their bytes
 *    received since BENCH_BEGIN, and puts the connection back in the
 *    normal mode (messages printed).  The client checks that the server
 *    got exactly what it sent.  Data messages never look like control
 *    messages (proto_looks_like_ctl()).
 *
 *    BENCH_BEGIN may ask for receive slots: length = the largest message
 *    to come, round_len = how many the client keeps in flight.  The
 *    server then posts that many slots (at most 128 and 16 MiB, at least
 *    4, each at least 4 KiB) for the connection before it answers, and
 *    the client's SENDs land there with no copy from then on (the
 *    kernel's announcement of the slots travels ahead of BENCH_READY);
 *    its control messages too, which the server tells apart as always.
 *    The slots stay until the connection ends.  PROTO_BF_KECHO (needs a
 *    length) posts echo slots instead (RDMAXFER_RECV_ECHO): the server's
 *    kernel sends every message straight back from its completion
 *    handler, and the server process never sees one again, control
 *    messages included: the connection echoes until it is closed (no
 *    BENCH_END; the client checks every echo).  BENCH_READY's status:
 *    EOPNOTSUPP (the client's kernel has no slots), EMSGSIZE (longer than
 *    the connection's max_msg_size), ENOMEM, EINVAL (slots posted before
 *    were shorter).
 *
 *    In SINK mode with slots, a server whose kernel has sink slots
 *    (RDMAXFER_RECV_SINK) posts those and answers BENCH_READY with flags
 *    PROTO_BF_KSINK: the client then SENDs its data messages with the
 *    immediate PROTO_SINK_IMM, and the server's kernel drops and counts
 *    them without waking the server (control messages, immediate 0, still
 *    reach it); BENCH_DONE adds the kernel's count (QUERY_CONN's
 *    sink_msgs and sink_bytes since BENCH_BEGIN) to its own.  Without the
 *    flag the client sends immediate 0 and the server sinks in userspace.
 *
 *    CPU_REQ asks for the server's CPU use now: CPU carries offset = CPU
 *    time of the serve process (user + system, all threads) in
 *    microseconds, length and round_len = busy and total ticks of all CPUs
 *    of its machine (/proc/stat, busy = total - idle - iowait), round =
 *    the ticks per second (sysconf(_SC_CLK_TCK)); status ENOENT with
 *    length = round_len = 0 when /proc/stat cannot be read.  Two answers
 *    give the server's CPU use between them; the client times them with
 *    its own clock.  WRITE and READ benchmarks need nothing else from the
 *    server: its RDMA device answers them.
 *
 * 4. Many windows (`bench --windows N`).  WINS_REQ with length = n asks
 *    the server to replace the connection's window by n windows of its
 *    buffer, window i over bytes [i*W/n, (i+1)*W/n) (W = the buffer's
 *    size), with the same access: it revokes the first window (the client
 *    sees it go) and exposes the n.  They stay until the connection ends.
 *    WINS answers once the last ADVERT went out (the ADVERTs arrive
 *    first): length = windows exposed, offset = the microseconds the
 *    server spent exposing them, status 0, EINVAL (n = 0, n >
 *    PROTO_MAX_WINS, or windows of less than 4 KiB), EBUSY (the connection
 *    asked before), ENOSPC (past the server's budget for all connections;
 *    nothing was revoked), or the error of EXPOSE number length + 1
 *    (ENOSPC: the connection takes no more, e.g. 256 from a module before
 *    1,024).
 */
#ifndef RDMAXFER_PROTO_H
#define RDMAXFER_PROTO_H

#include <stdint.h>

#define PROTO_MAGIC		"RDXFCTL1"	/* 8 bytes, no NUL on the wire */
#define PROTO_MAGIC_LEN		8

enum proto_type {
	PROTO_WRITE_BEGIN = 1,
	PROTO_WRITE_READY = 2,
	PROTO_ROUND_DONE = 3,
	PROTO_CSUM_REQ = 4,
	PROTO_CSUM = 5,
	PROTO_SYNC = 6,
	PROTO_SYNC_ACK = 7,
	PROTO_ERROR = 8,
	PROTO_BENCH_BEGIN = 9,
	PROTO_BENCH_READY = 10,
	PROTO_BENCH_END = 11,
	PROTO_BENCH_DONE = 12,
	PROTO_CPU_REQ = 13,
	PROTO_CPU = 14,
	PROTO_WINS_REQ = 15,
	PROTO_WINS = 16,
};

/* Most windows one WINS_REQ asks for: what one connection may carry. */
#define PROTO_MAX_WINS		1024

/* WRITE_BEGIN flags */
#define PROTO_F_VERIFY		1u	/* ROUND_DONE carries the CRC32C of the round */
#define PROTO_F_PIPE		2u	/* rounds alternate between two halves (2.) */

/* BENCH_BEGIN flags: exactly one */
#define PROTO_BF_SINK		1u	/* count and discard data messages */
#define PROTO_BF_ECHO		2u	/* SEND every data message back */
#define PROTO_BF_KECHO		4u	/* the kernel echoes, from echo slots */
/* BENCH_READY flags */
#define PROTO_BF_KSINK		8u	/* sink slots: data messages with PROTO_SINK_IMM */

/* The immediate of data messages for sink slots ("SNK"). */
#define PROTO_SINK_IMM		0x00534e4bu

/* Most data messages an echoing client may have unanswered. */
#define PROTO_ECHO_WINDOW	16

/* The immediate data of the WRITE_WITH_IMM that ends a round. */
#define PROTO_IMM_LAST		0x80000000u
#define PROTO_IMM_ROUND_MASK	0x7fffffffu

/* On the wire, little-endian, no padding: 64 bytes. */
struct proto_msg {
	uint8_t magic[PROTO_MAGIC_LEN];
	uint32_t type;
	uint32_t flags;
	uint64_t offset;
	uint64_t length;
	uint64_t round_len;
	uint32_t round;
	uint32_t status;
	uint32_t crc;
	uint32_t reserved[3];
};

_Static_assert(sizeof(struct proto_msg) == 64, "proto_msg is 64 bytes on the wire");

/* Host-order view <-> wire (session.c). */
void proto_encode(struct proto_msg *wire, const struct proto_msg *host);
/* Returns 0 if @buf of @len bytes is a control message (decoded into @host). */
int proto_decode(struct proto_msg *host, const void *buf, size_t len);
/* Does a user message of @len bytes at @buf look like a control message? */
int proto_looks_like_ctl(const void *buf, size_t len);
const char *proto_type_name(uint32_t type);

#endif /* RDMAXFER_PROTO_H */
