// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer serve - receive slots, echo and sink, for ping and bench.
 *
 * A BENCH_BEGIN that asks for receive slots gets them posted on its
 * connection (slots_post()): the client's messages then land there with
 * no copy, and each slot goes back on the connection at the end of the
 * REAP round (flush_reposts()).  Echo slots are answered by the kernel,
 * sink slots dropped by it (their counts come from QUERY_CONN,
 * sink_count()).  Without slots, ECHO mode SENDs each message back from a
 * ring of ECHO_BUFS registered buffers, batched per REAP round
 * (flush_echoes()); an echo not sent within ECHO_STALL_S drops its client.
 * See serve.c for the whole server.
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

static volatile sig_atomic_t echo_stalled;	/* SIGALRM during an echo SUBMIT */

void on_alarm(int sig)
{
	(void)sig;
	echo_stalled = 1;
}

/* Free a connection's receive slots (CLOSE has completed them all). */
void slots_free(struct server *srv, struct sconn *sc)
{
	unsigned int i;

	if (sc->slots_buf)
		rdx_dereg_buf(srv->fd, sc->slots_buf);
	if (sc->slots)
		munmap(sc->slots, (size_t)sc->nslots * sc->slot_len);
	/* reposts not submitted yet name the buffer */
	for (i = 0; i < srv->repost_nops; i++)
		if (srv->repost_ops[i].conn_id == sc->id)
			srv->repost_ops[i].conn_id = 0;
	sc->slots = NULL;
	sc->slots_buf = 0;
	sc->nslots = 0;
}

/*
 * Post receive slots for the client's messages of up to @len bytes, about
 * @want of them (within SLOTS_MAX and SLOTS_BYTES); @echo: echo slots, which
 * the kernel answers by itself; else sink slots where the kernel has them
 * (sc->slots_sink: it drops the data messages sent with PROTO_SINK_IMM).
 * Returns 0 or the errno.
 */
int slots_post(struct server *srv, struct sconn *sc, uint64_t len, uint64_t want,
		      bool echo)
{
	struct rdmaxfer_op ops[SLOTS_MAX];
	struct rdmaxfer_conn_info ci;
	uint32_t n, i, posted;
	int err;

	if (sc->slots)
		return len <= sc->slot_len && echo == sc->slots_echo ? 0 : EINVAL;
	err = rdx_query_conn(srv->fd, sc->id, &ci);
	if (err)
		return err;
	if (!(ci.conn_flags & RDMAXFER_CONN_F_RECV_SLOTS))
		return EOPNOTSUPP;
	if (len < 4096)
		len = 4096;	/* room for control messages and small sizes alike */
	if (len > ci.max_msg_size)
		return EMSGSIZE;
	n = want < SLOTS_MAX ? (uint32_t)want : SLOTS_MAX;
	if ((uint64_t)n * len > SLOTS_BYTES)
		n = (uint32_t)(SLOTS_BYTES / len);
	if (n < 4)
		n = 4;
	sc->slot_len = (uint32_t)len;
	sc->nslots = n;
	sc->slots_echo = echo;
	sc->slots_sink = !echo && (srv->info.features & RDMAXFER_FEATURE_SINK_SLOTS);
	sc->slots = mmap(NULL, (size_t)n * len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc->slots == MAP_FAILED) {
		sc->slots = NULL;
		return ENOMEM;
	}
	err = rdx_reg_buf(srv->fd, sc->slots, (uint64_t)n * len,
			  RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &sc->slots_buf);
	if (err) {
		slots_free(srv, sc);
		return err;
	}
	for (i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].opcode = RDMAXFER_OP_RECV;
		ops[i].flags = echo ? RDMAXFER_RECV_ECHO : sc->slots_sink ? RDMAXFER_RECV_SINK : 0;
		ops[i].imm_data = sc->slots_sink ? PROTO_SINK_IMM : 0;
		ops[i].conn_id = sc->id;
		ops[i].buf_id = sc->slots_buf;
		ops[i].buf_offset = (uint64_t)i * len;
		ops[i].length = len;
		ops[i].user_data = SLOT_TAG | i;
	}
	/* slots posted stay until the connection ends (finish_conn() frees them) */
	for (i = 0; !err && i < n; i += posted)
		err = rdx_submit(srv->fd, &ops[i], n - i, &posted);
	return err;
}

/* Post the slots collected in repost_ops again (one SUBMIT). */
void flush_reposts(struct server *srv)
{
	unsigned int i, n = 0;

	for (i = 0; i < srv->repost_nops; i++)
		if (srv->repost_ops[i].conn_id)
			srv->repost_ops[n++] = srv->repost_ops[i];
	/*
	 * As few SUBMITs as can be.  One that fails posted nothing (a
	 * connection went down: its slots go with it): its first slot goes
	 * alone, then the rest again, so the other connections get theirs.
	 */
	i = 0;
	while (i < n) {
		uint32_t posted = 0;
		int err = rdx_submit(srv->fd, &srv->repost_ops[i], n - i, &posted);

		if (!err)
			i += posted;
		else if (err != EINTR)
			rdx_submit(srv->fd, &srv->repost_ops[i++], 1, NULL);
	}
	srv->repost_nops = 0;
}

/* What the connection's sink slots dropped so far (QUERY_CONN).  0 or the errno. */
int sink_count(struct server *srv, struct sconn *sc, uint64_t *msgs, uint64_t *bytes)
{
	struct rdmaxfer_conn_info ci;
	int err = rdx_query_conn(srv->fd, sc->id, &ci);

	*msgs = err ? 0 : ci.sink_msgs;
	*bytes = err ? 0 : ci.sink_bytes;
	return err;
}

static void repost_slot(struct server *srv, struct sconn *sc, uint32_t slot)
{
	struct rdmaxfer_op *op;

	if (srv->repost_nops == REAP_MAX)
		flush_reposts(srv);
	op = &srv->repost_ops[srv->repost_nops++];
	memset(op, 0, sizeof(*op));
	op->opcode = RDMAXFER_OP_RECV;
	op->conn_id = sc->id;
	op->buf_id = sc->slots_buf;
	op->buf_offset = (uint64_t)slot * sc->slot_len;
	op->length = sc->slot_len;
	op->user_data = SLOT_TAG | slot;
	if (sc->slots_sink) {
		op->flags = RDMAXFER_RECV_SINK;
		op->imm_data = PROTO_SINK_IMM;
	}
}

/*
 * SUBMIT for echoes, bounded in time.  An echo SEND waits for the client's
 * credit, which comes back only when the client takes its messages; a
 * client that keeps sending in ECHO mode without taking its echoes (more
 * than PROTO_ECHO_WINDOW unanswered) would block the one event loop, and
 * with it every client (and SIGTERM, which is let in only in ppoll).  So
 * the SUBMIT is interrupted by SIGALRM after ECHO_STALL_S seconds, and the
 * connection of the first echo that did not go out is dropped.  Returns 0
 * or the errno, *@posted the number of echoes posted.
 */
int submit_echoes(struct server *srv, const struct rdmaxfer_op *ops, uint32_t n,
			 uint32_t *posted)
{
	struct itimerval arm = { .it_value = { .tv_sec = ECHO_STALL_S } }, off = { 0 };
	int err;

	echo_stalled = 0;
	setitimer(ITIMER_REAL, &arm, NULL);
	err = rdx_submit(srv->fd, ops, n, posted);
	setitimer(ITIMER_REAL, &off, NULL);
	return err;
}

/* The echo at @op could not be sent in ECHO_STALL_S: drop its client. */
static void drop_stalled(struct server *srv, const struct rdmaxfer_op *op)
{
	struct sconn *sc = find_conn(srv, op->conn_id);

	if (!sc)
		return;
	warnx_("connection %llu from %s does not take its echoes (more than %u unanswered): dropped",
	       (unsigned long long)sc->num, sc->peer, PROTO_ECHO_WINDOW);
	drop_conn(srv, sc);
}

/* Submit the echo SENDs collected so far (one SUBMIT for all of them). */
void flush_echoes(struct server *srv)
{
	struct rdmaxfer_op *ops = srv->echo_ops;
	unsigned int i, done = 0, n = srv->echo_nops;
	uint32_t posted;
	int err;

	while (done < n) {
		err = submit_echoes(srv, &ops[done], n - done, &posted);
		if (!err) {
			for (i = done; i < done + posted; i++)
				ops[i].user_data = 0;	/* posted: freed on completion */
			srv->echoed += posted;
			done += posted;
			continue;
		}
		if (err == EINTR && !echo_stalled)
			continue;
		if (err == EINTR)
			drop_stalled(srv, &ops[done]);
		else if (err != ENOTCONN && err != ECONNRESET && err != ENOENT) {
			warnx_("echoing messages failed: %s", strerror(err));
			break;
		}
		/* a connection went down: the others still get their echoes */
		for (i = done; i < n; i++) {
			do {
				err = submit_echoes(srv, &ops[i], 1, NULL);
				if (err == EINTR && echo_stalled)
					drop_stalled(srv, &ops[i]);
			} while (err == EINTR && !echo_stalled);
			if (!err) {
				ops[i].user_data = 0;
				srv->echoed++;
			}
		}
		break;
	}
	/* slots of echoes that were not posted are free again */
	for (i = 0; i < n; i++) {
		if (ops[i].user_data & SLOT_ECHO_TAG)
			slot_echo_done(srv, ops[i].conn_id, ops[i].user_data);
		else if (ops[i].user_data)
			srv->echo_free[srv->echo_nfree++] = (uint32_t)(ops[i].user_data & ~ECHO_TAG);
	}
	srv->echo_nops = 0;
}

/*
 * A receive slot completed: a control message, or the client's data, in
 * place (no RECV).  The slot goes back on the connection at the end of the
 * REAP round, or, echoed, once its echo is sent.
 */
void handle_slot(struct server *srv, struct sconn *sc, const struct rdmaxfer_completion *c)
{
	uint32_t slot = (uint32_t)(c->user_data & 0xffffff), len = (uint32_t)c->bytes;
	struct rdmaxfer_op *op;
	struct proto_msg m;
	unsigned char *p;

	if (c->status || !sc->slots || slot >= sc->nslots)
		return;		/* flushed: the connection is going */
	if (c->bytes > sc->slot_len) {
		/* the kernel never completes one so; trust no length beyond the slot */
		warnx_("connection %llu from %s: a slot completed with %llu bytes (slot %u bytes), dropping it",
		       (unsigned long long)sc->num, sc->peer, (unsigned long long)c->bytes,
		       sc->slot_len);
		drop_conn(srv, sc);
		return;
	}
	p = sc->slots + (uint64_t)slot * sc->slot_len;
	if (!proto_decode(&m, p, len)) {
		repost_slot(srv, sc, slot);
		flush_echoes(srv);	/* answers go after the echoes of earlier messages */
		handle_ctl(srv, sc, &m);	/* may drop the connection */
		return;
	}
	if (!sc->bench) {
		sc->msgs++;
		sc->msg_bytes += len;
		srv->msgs++;
		srv->msg_bytes += len;
		output_message(srv, p, len);
		repost_slot(srv, sc, slot);
		return;
	}
	sc->b_msgs++;
	sc->b_bytes += len;
	sc->bench_msgs++;
	srv->bench_msgs++;
	srv->bench_bytes += len;
	if (sc->bench != PROTO_BF_ECHO) {
		repost_slot(srv, sc, slot);
		return;
	}
	if (srv->echo_nops == REAP_MAX)
		flush_echoes(srv);
	op = &srv->echo_ops[srv->echo_nops++];
	memset(op, 0, sizeof(*op));
	op->opcode = RDMAXFER_OP_SEND;
	op->conn_id = sc->id;
	op->buf_id = sc->slots_buf;
	op->buf_offset = (uint64_t)slot * sc->slot_len;
	op->length = len;
	op->user_data = SLOT_ECHO_TAG | slot;
}

/* An echo sent from a receive slot completed (or was not sent): repost the slot. */
void slot_echo_done(struct server *srv, uint32_t conn_id, uint64_t user_data)
{
	struct sconn *sc = find_conn(srv, conn_id);
	uint32_t slot = (uint32_t)(user_data & 0xffffff);

	if (sc && sc->slots && slot < sc->nslots)
		repost_slot(srv, sc, slot);
}

/* An echo SEND completed: its buffer is free, blocked connections may go on. */
void echo_done(struct server *srv, uint64_t user_data)
{
	uint32_t eb = (uint32_t)(user_data & ~ECHO_TAG);
	unsigned int i;

	if (eb >= ECHO_BUFS || srv->echo_nfree >= ECHO_BUFS)
		return;
	srv->echo_free[srv->echo_nfree++] = eb;
	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id && srv->conns[i].echo_blocked) {
			srv->conns[i].echo_blocked = false;
			srv->conns[i].recv_pending = true;
		}
}
