// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - what bench and ping share as clients of `rdmaxfer serve`:
 * one failure line for all threads (bench_fail()), an operation's or the
 * connection's failure, the events a measurement may see, the server's
 * CPU time (PROTO_CPU_REQ) and the BENCH_BEGIN/BENCH_END exchange
 * (proto.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "measure.h"
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static bool fail_said;
volatile int bench_abort;

void bench_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&fail_lock);
	if (!fail_said)
		warnx_("%s", msg);
	fail_said = true;
	bench_abort = 1;
	pthread_mutex_unlock(&fail_lock);
}

/*
 * The status of the connection's DISCONNECTED event: among the @left
 * entries after @c in the batch just reaped, else from REAP
 * (session_disconnect_status()).  1 if none.
 */
static int disconnect_status(struct session *s, const struct rdmaxfer_completion *c,
			     unsigned int left)
{
	unsigned int i;

	for (i = 1; i <= left; i++)
		if (c[i].opcode == RDMAXFER_EVENT_DISCONNECTED)
			return c[i].status;
	return session_disconnect_status(s);
}

/*
 * Operation @c of a reaped batch failed (@left entries follow it).  A
 * flushed one says only that the connection went down: the reason is in
 * the DISCONNECTED event, if it comes.
 */
void bench_op_failed(struct session *s, const struct rdmaxfer_completion *c, unsigned int left)
{
	int why;

	if (c->status != -ECANCELED) {
		bench_fail("%s to %s failed: %s", cli_op_name(c->opcode), s->peer,
			   status_words(c->status));
		return;
	}
	why = disconnect_status(s, c, left);
	if (why != 1)
		bench_fail("connection to %s lost: %s", s->peer, status_words(why));
	else
		bench_fail("connection to %s lost (%s flushed)", s->peer,
			   cli_op_name(c->opcode));
}

int bench_event(struct session *s, const struct rdmaxfer_completion *c)
{
	switch (c->opcode) {
	case RDMAXFER_EVENT_WINDOW:
	case RDMAXFER_EVENT_WRITE_IMM:
	case RDMAXFER_EVENT_CONNECTED:
		return 0;
	case RDMAXFER_EVENT_RECV:
		s->msgs_ready++;
		return 0;
	case RDMAXFER_EVENT_WINDOW_REVOKED:
		if (c->window_id != s->window_id)
			return 0;
		bench_fail("%s revoked its window", s->peer);
		return -1;
	case RDMAXFER_EVENT_DISCONNECTED:
		bench_fail("connection to %s lost: %s", s->peer, status_words(c->status));
		return -1;
	default:		/* the session's own control SEND */
		if (s->inflight)
			s->inflight--;
		if (c->status) {
			bench_op_failed(s, c, 0);
			return -1;
		}
		return 0;
	}
}

int bench_server_cpu(struct session *s, struct srv_cpu *c)
{
	struct proto_msg req = { .type = PROTO_CPU_REQ }, rep;

	if (session_call(s, &req, PROTO_CPU, &rep)) {
		bench_abort = 1;
		return -1;
	}
	c->wall = now_sec();
	c->cpu_us = rep.offset;
	c->busy = rep.length;
	c->total = rep.round_len;
	c->hz = rep.status ? 0 : rep.round;
	return 0;
}

int bench_begin(struct session *s, uint32_t mode, uint64_t slot_len, uint64_t nslots)
{
	struct proto_msg req = { .type = PROTO_BENCH_BEGIN, .flags = mode, .length = slot_len,
				 .round_len = nslots }, rep;

	if (session_call(s, &req, PROTO_BENCH_READY, &rep)) {
		bench_abort = 1;
		return -1;
	}
	if (rep.status) {
		bench_fail("%s refused to %s messages: %s", s->peer,
			   mode == PROTO_BF_ECHO ? "echo" : "sink", strerror((int)rep.status));
		return -1;
	}
	s->bench_flags = rep.flags;
	return 0;
}

int bench_end(struct session *s, uint64_t *msgs, uint64_t *bytes)
{
	struct proto_msg req = { .type = PROTO_BENCH_END }, rep;

	if (session_call(s, &req, PROTO_BENCH_DONE, &rep)) {
		bench_abort = 1;
		return -1;
	}
	*msgs = rep.offset;
	*bytes = rep.length;
	return 0;
}
