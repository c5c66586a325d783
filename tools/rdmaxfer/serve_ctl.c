// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer serve - messages: the control messages of proto.h (WRITE_BEGIN,
 * CSUM_REQ, SYNC, BENCH_BEGIN, BENCH_END, CPU_REQ, WINS_REQ) and their
 * answers from CTL_ANSWERS registered answer buffers, user data to stdout
 * or --out, and the end of a write round (WRITE_IMM: save, CRC32C,
 * ROUND_DONE).  A REAP round marks the connections with messages; each is
 * drained once per round (recv_marked()).  See serve.c for the whole server.
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

/* --- control messages ------------------------------------------------- */

static void reply(struct server *srv, struct sconn *sc, const struct proto_msg *m)
{
	struct rdmaxfer_op op = { .opcode = RDMAXFER_OP_SEND };
	unsigned int ans;
	int err;

	for (ans = 0; ans < CTL_ANSWERS && srv->ctl_busy[ans]; ans++)
		;
	if (ans == CTL_ANSWERS || sc->replies >= MAX_REPLIES_PER_CONN) {
		warnx_("connection %llu from %s: too many requests in flight, dropping it",
		       (unsigned long long)sc->num, sc->peer);
		drop_conn(srv, sc);
		return;
	}
	proto_encode(&srv->ctl[ans], m);
	op.conn_id = sc->id;
	op.buf_id = srv->ctl_buf;
	op.buf_offset = (uint64_t)ans * sizeof(struct proto_msg);
	op.length = sizeof(struct proto_msg);
	op.user_data = ans + 1;
	while ((err = rdx_submit(srv->fd, &op, 1, NULL))) {
		if (err == EINTR)
			continue;
		/* ENOTCONN: its DISCONNECTED event is on the way */
		if (err != ENOTCONN && err != ECONNRESET)
			warnx_("connection %llu from %s: cannot answer: %s",
			       (unsigned long long)sc->num, sc->peer, strerror(err));
		return;
	}
	srv->ctl_busy[ans] = true;
	sc->replies++;
}

/* The CPU answer (proto.h, 3.): this process, and the machine's ticks. */
static void cpu_answer(struct proto_msg *r)
{
	struct cpu_snap cs;
	struct rusage ru;
	long hz = sysconf(_SC_CLK_TCK);

	r->type = PROTO_CPU;
	if (!getrusage(RUSAGE_SELF, &ru))
		r->offset = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
			    (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
	cpu_snap(&cs);
	r->length = cs.busy;
	r->round_len = cs.total;
	r->round = hz > 0 ? (uint32_t)hz : 0;
	if (!cs.total || hz <= 0)
		r->status = ENOENT;
}

void handle_ctl(struct server *srv, struct sconn *sc, const struct proto_msg *m)
{
	struct proto_msg r = { 0 };

	switch (m->type) {
	case PROTO_WRITE_BEGIN:
		r.type = PROTO_WRITE_READY;
		if (m->offset > srv->size ||
		    (m->length && (!m->round_len || m->round_len > srv->size - m->offset))) {
			r.status = ERANGE;
			break;
		}
		/* pipelined rounds need two of them in the window */
		if ((m->flags & PROTO_F_PIPE) &&
		    (!m->round_len || m->round_len > (srv->size - m->offset) / 2)) {
			r.status = ERANGE;
			break;
		}
		r.flags = m->flags & PROTO_F_PIPE;
		sc->session = true;
		sc->s_flags = m->flags;
		sc->s_off = m->offset;
		sc->s_total = m->length;
		sc->s_round_len = m->round_len;
		sc->s_done = 0;
		sc->s_round = 0;
		if (srv->out_fd >= 0) {
			sc->saved = true;
			if (out_truncate(srv)) {
				out_error(srv, "truncating");
				r.status = EIO;
			}
		}
		break;
	case PROTO_CSUM_REQ:
		r.type = PROTO_CSUM;
		r.offset = m->offset;
		r.length = m->length;
		if (m->offset > srv->size || m->length > srv->size - m->offset)
			r.status = ERANGE;
		else
			r.crc = crc32c(0, srv->win + m->offset, m->length);
		break;
	case PROTO_SYNC:
		r.type = PROTO_SYNC_ACK;
		fflush(stdout);
		break;
	case PROTO_BENCH_BEGIN:
		r.type = PROTO_BENCH_READY;
		if ((m->flags != PROTO_BF_SINK && m->flags != PROTO_BF_ECHO &&
		     m->flags != PROTO_BF_KECHO) || (m->flags == PROTO_BF_KECHO && !m->length)) {
			r.status = EINVAL;
			break;
		}
		if (m->flags == PROTO_BF_ECHO && !srv->echo) {
			r.status = ENOMEM;
			break;
		}
		/* length: the largest message to come, round_len: how many in flight */
		if (m->length) {
			r.status = (uint32_t)slots_post(srv, sc, m->length, m->round_len,
							m->flags == PROTO_BF_KECHO);
			if (r.status)
				break;
		}
		sc->bench = m->flags;
		sc->b_msgs = 0;
		sc->b_bytes = 0;
		if (m->flags == PROTO_BF_SINK && sc->slots_sink) {
			r.status = (uint32_t)sink_count(srv, sc, &sc->sink_msgs0, &sc->sink_bytes0);
			r.flags = PROTO_BF_KSINK;
		}
		break;
	case PROTO_BENCH_END:
		r.type = PROTO_BENCH_DONE;
		r.offset = sc->b_msgs;
		r.length = sc->b_bytes;
		if (sc->bench == PROTO_BF_SINK && sc->slots_sink) {
			uint64_t msgs, bytes;

			r.status = (uint32_t)sink_count(srv, sc, &msgs, &bytes);
			r.offset += msgs - sc->sink_msgs0;
			r.length += bytes - sc->sink_bytes0;
		}
		sc->bench = 0;
		break;
	case PROTO_CPU_REQ:
		cpu_answer(&r);
		break;
	case PROTO_WINS_REQ:
		if (!expose_more(srv, sc, m->length, &r))
			return;
		break;
	default:
		r.type = PROTO_ERROR;
		r.status = EPROTO;
	}
	reply(srv, sc, &r);
}

/* A message that is not a control message: the user's data. */
void output_message(struct server *srv, const unsigned char *p, uint32_t len)
{
	if (srv->out_fd >= 0) {
		if (out_write(srv, p, len, -1))
			out_error(srv, "appending a message to");
		return;
	}
	if (srv->json) {
		fwrite(p, 1, len, stderr);
		fflush(stderr);
		return;
	}
	if (len) {
		fwrite(p, 1, len, stdout);
		srv->stdout_at_bol = p[len - 1] == '\n';
		fflush(stdout);
	}
}

/*
 * Take every message queued on the connection.  Not one per RECV event:
 * messages may arrive (and their events be queued) before we accepted the
 * connection, so events and messages are not paired up; a RECV event whose
 * message was taken already finds the queue empty (EAGAIN).  In ECHO mode
 * a message is received straight into a free buffer of the echo ring and
 * queued for flush_echoes(); with no free buffer, the rest waits.
 */
void handle_recv(struct server *srv, struct sconn *sc)
{
	uint32_t id = sc->id, eb = 0, room, len;
	struct proto_msg m;
	unsigned char *p;
	bool echo;
	int err;

	sc->recv_pending = false;
	while (sc->id == id) {		/* a control message may drop it */
		echo = sc->bench == PROTO_BF_ECHO;
		if (echo) {
			if (!srv->echo_nfree || srv->echo_nops == REAP_MAX)
				flush_echoes(srv);
			if (!srv->echo_nfree) {
				sc->echo_blocked = true;
				return;
			}
			eb = srv->echo_free[srv->echo_nfree - 1];
			p = srv->echo + (uint64_t)eb * srv->echo_stride;
			room = srv->echo_stride;
		} else {
			p = srv->rbuf;
			room = srv->rbuf_len;
		}
		err = rdx_recv(srv->fd, id, p, room, &len);
		if (err) {
			if (err == EINTR)
				continue;
			if (err == EMSGSIZE && !echo && len > srv->rbuf_len) {
				unsigned char *q = realloc(srv->rbuf, len);

				if (q) {
					srv->rbuf = q;
					srv->rbuf_len = len;
					continue;
				}
				err = errno;	/* realloc's: say that */
			}
			if (err != EAGAIN && err != ENOTCONN && err != ENOENT)
				warnx_("connection %llu from %s: RECV failed: %s",
				       (unsigned long long)sc->num, sc->peer, strerror(err));
			return;
		}
		if (!proto_decode(&m, p, len)) {
			/* answers go after the echoes of earlier messages */
			flush_echoes(srv);
			handle_ctl(srv, sc, &m);
			continue;
		}
		if (sc->bench) {
			sc->b_msgs++;
			sc->b_bytes += len;
			sc->bench_msgs++;
			srv->bench_msgs++;
			srv->bench_bytes += len;
			if (echo) {
				struct rdmaxfer_op *op = &srv->echo_ops[srv->echo_nops++];

				memset(op, 0, sizeof(*op));
				op->opcode = RDMAXFER_OP_SEND;
				op->conn_id = id;
				op->buf_id = srv->echo_buf;
				op->buf_offset = (uint64_t)eb * srv->echo_stride;
				op->length = len;
				op->user_data = ECHO_TAG | eb;
				srv->echo_nfree--;
			}
			continue;
		}
		sc->msgs++;
		sc->msg_bytes += len;
		srv->msgs++;
		srv->msg_bytes += len;
		output_message(srv, p, len);
	}
}

/* A WRITE_IMM landed: the end of a round (proto.h). */
void handle_imm(struct server *srv, struct sconn *sc, const struct rdmaxfer_completion *c)
{
	struct proto_msg r = { .type = PROTO_ROUND_DONE };
	uint64_t end, len, expect, at;

	if (c->window_id != sc->window_id || c->value > srv->size || c->bytes > srv->size - c->value)
		return;		/* not our window: the kernel would not do that */
	end = c->value + c->bytes;
	if (end > sc->highest)
		sc->highest = end;
	if (!sc->session) {	/* a client without WRITE_BEGIN */
		sc->written += c->bytes;
		srv->bytes_written += c->bytes;
		return;
	}
	expect = sc->s_total - sc->s_done < sc->s_round_len ? sc->s_total - sc->s_done :
							       sc->s_round_len;
	/* a pipelined round r is in the half at O + (r % 2) * R */
	at = sc->s_off;
	if ((sc->s_flags & PROTO_F_PIPE) && (sc->s_round & 1))
		at += sc->s_round_len;
	len = end >= at ? end - at : 0;
	r.round = c->imm_data & PROTO_IMM_ROUND_MASK;
	r.offset = at;
	r.length = len;
	if (r.round != (uint32_t)(sc->s_round & PROTO_IMM_ROUND_MASK) || len != expect || !len) {
		r.status = EPROTO;
		reply(srv, sc, &r);
		return;
	}
	if (srv->out_fd >= 0) {
		if ((sc->s_round == 0 && sc->s_off &&
		     out_write(srv, srv->win, sc->s_off, 0)) ||
		    out_write(srv, srv->win + at, len, (int64_t)(sc->s_off + sc->s_done))) {
			out_error(srv, "saving to");
			r.status = EIO;
		}
	}
	if (sc->s_flags & PROTO_F_VERIFY)
		r.crc = crc32c(0, srv->win + at, len);
	sc->s_done += len;
	sc->s_round++;
	sc->rounds++;
	sc->written += len;
	srv->rounds++;
	srv->bytes_written += len;
	reply(srv, sc, &r);
}

/* Handle the messages of every connection a REAP round marked. */
void recv_marked(struct server *srv)
{
	unsigned int i;

	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id && srv->conns[i].recv_pending)
			handle_recv(srv, &srv->conns[i]);
	if (srv->echo_nops)
		flush_echoes(srv);
}
