// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer bench - the threads that post and reap (measure_bench.c sets
 * them up and reads what they counted).
 *
 * The connections are shared out among --threads threads, each a
 * contiguous run of them.  Every phase (one size) lies between two gates
 * the main thread passes too; in it a thread keeps --depth operations in
 * flight on each of its connections: it fills a connection's pipe with
 * as few SUBMITs as max_batch allows, reaps what completed in batches
 * and refills exactly that many with one SUBMIT.  A thread with one
 * connection waits for its completions in REAP (or on the completion
 * ring: librdmaxfer); one with several takes what each has without
 * waiting, in turn, and when none had anything and none could post,
 * sleeps in epoll_wait() on the files of those not done yet (EPOLLIN: the
 * ring or the queue holds something), as perftest's `-q N` runs N QPs from
 * one process.
 *
 * A connection's phase ends when its operations (and, with --bidir send,
 * their echoes) are all done: --iters of them, or as many as were posted
 * before the --duration deadline.  Any failure stops every thread
 * (bench_fail(), bench_abort); a connection from which nothing comes for
 * SESSION_IDLE_TIMEOUT_S is one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "bench.h"

/* What one step of a connection did (phase_step()). */
enum bench_step { STEP_IDLE, STEP_PROGRESS, STEP_DONE, STEP_FAILED };

/* --- the gates -------------------------------------------------------- */

void gate_init(struct gate *g, unsigned int parties)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->parties = parties;
	g->waiting = 0;
	g->gen = 0;
}

static void gate_open_locked(struct gate *g)
{
	g->waiting = 0;
	g->gen++;
	pthread_cond_broadcast(&g->cond);
}

void gate_wait(struct gate *g)
{
	unsigned long gen;

	pthread_mutex_lock(&g->lock);
	gen = g->gen;
	if (++g->waiting >= g->parties)
		gate_open_locked(g);
	else
		while (gen == g->gen)
			pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void gate_set_parties(struct gate *g, unsigned int parties)
{
	pthread_mutex_lock(&g->lock);
	g->parties = parties;
	if (g->waiting && g->waiting >= parties)
		gate_open_locked(g);
	pthread_mutex_unlock(&g->lock);
}

/* --- a connection's operations ------------------------------------------ */

/* Post @n operations; returns how many were posted (EAGAIN: fewer), or -1. */
static int submit_ops(struct bench_run *r, struct bconn *bc, struct rdmaxfer_op *ops, unsigned int n)
{
	unsigned int done = 0;
	uint32_t posted;
	int err;

	while (done < n) {
		err = rdx_submit(bc->s.fd, &ops[done],
				 n - done < r->max_batch ? n - done : r->max_batch, &posted);
		if (!err) {
			done += posted;
			continue;
		}
		if (err == EINTR)
			continue;
		if (err == EAGAIN)	/* max_pending: reap first */
			break;
		if (err == ENOTCONN || err == ECONNRESET || err == ENODEV)
			bench_fail("connection to %s lost", bc->s.peer);
		else
			bench_fail("SUBMIT of %s to %s failed: %s", cli_op_name(ops[done].opcode),
				   bc->s.peer, strerror(err));
		return -1;
	}
	return (int)done;
}

static void build_op(struct bench_run *r, struct bconn *bc, struct rdmaxfer_op *op)
{
	const struct bench_opts *o = r->o;

	memset(op, 0, sizeof(*op));
	switch (o->op) {
	case BOP_WRITE:
	case BOP_READ:
		if (o->bidir)
			op->opcode = bc->k & 1 ? RDMAXFER_OP_READ : RDMAXFER_OP_WRITE;
		else
			op->opcode = o->op == BOP_WRITE ? RDMAXFER_OP_WRITE : RDMAXFER_OP_READ;
		op->window_id = bc->s.window_id;
		op->remote_offset = (((uint64_t)bc->idx * r->depth + bc->k % r->depth) % r->nslots) *
				    r->size;
		break;
	case BOP_SEND:
		op->opcode = RDMAXFER_OP_SEND;
		/* into the server's sink slots: its kernel drops them (proto.h) */
		if (!o->bidir && (bc->s.bench_flags & PROTO_BF_KSINK))
			op->imm_data = PROTO_SINK_IMM;
		break;
	case BOP_FADD:
	case BOP_CAS:
		/* CAS: mostly a failed comparison, still one atomic operation */
		op->opcode = o->op == BOP_FADD ? RDMAXFER_OP_FADD : RDMAXFER_OP_CAS;
		op->window_id = bc->s.window_id;
		op->remote_offset = (((uint64_t)bc->idx * r->depth + bc->k % r->depth) % r->nslots) *
				    r->size;
		op->compare_add = o->op == BOP_FADD ? 1 : bc->k;
		op->swap = bc->k + 1;
		break;
	}
	/* --windows (never with send): window k % N, slot (k / N) of it */
	if (o->windows) {
		op->window_id = bc->s.more_wins[bc->k % o->windows];
		op->remote_offset = (bc->k / o->windows % r->nslots) * r->size;
	}
	op->conn_id = bc->s.conn_id;
	op->buf_id = bc->buf_id;
	op->length = r->size;
	op->user_data = BENCH_OP_TAG | op->opcode;
	bc->k++;
}

/* Take one echo off the connection (its RECV event came). */
static int take_echo(struct bconn *bc)
{
	uint32_t len;
	int err;

	while ((err = rdx_recv(bc->s.fd, bc->s.conn_id, bc->rbuf, bc->s.ci.max_send_size, &len))) {
		if (err == EINTR)
			continue;
		if (err == EAGAIN)
			return 0;
		bench_fail("RECV from %s failed: %s", bc->s.peer, strerror(err));
		return -1;
	}
	bc->done++;
	bc->bytes += len;
	return 1;
}

/* Before a phase: nothing posted, nothing counted. */
static void phase_begin(struct bconn *bc)
{
	bc->done = bc->bytes = bc->sent = 0;
	bc->t_first = bc->t_last = 0;
	bc->posted = bc->echoes = 0;
	bc->inflight = 0;
	bc->idle_from = 0;
	bc->finished = false;
}

/*
 * One step of a connection's phase: fill its pipe, then take what completed,
 * waiting up to @wait_ns for it (0: not at all).  Returns STEP_IDLE when it
 * neither posted nor took anything, STEP_DONE when the phase of the
 * connection is over, STEP_FAILED after bench_fail() (or another thread's).
 */
static enum bench_step phase_step(struct bench_run *r, struct bconn *bc, int64_t wait_ns)
{
	const struct bench_opts *o = r->o;
	bool echo = o->op == BOP_SEND && o->bidir;
	uint64_t target = o->iters ? o->iters : UINT64_MAX;
	bool more = bc->posted < target && (o->iters || now_ns() < r->deadline);
	uint64_t outstanding = echo ? bc->posted - bc->echoes : bc->inflight;
	bool progress = false;
	unsigned int i, n = 0;
	uint64_t t;
	int m, got;

	if (bench_abort)
		return STEP_FAILED;
	/* fill the pipe */
	while (more && outstanding + n < r->depth && bc->posted + n < target)
		build_op(r, bc, &bc->ops[n++]);
	if (n) {
		if (!bc->t_first)
			bc->t_first = now_ns();
		m = submit_ops(r, bc, bc->ops, n);
		if (m < 0)
			return STEP_FAILED;
		bc->posted += (unsigned int)m;
		bc->inflight += (unsigned int)m;
		progress = m > 0;
	}
	if (!bc->inflight && (!echo || bc->echoes == bc->posted))
		return more ? STEP_PROGRESS : STEP_DONE;
	/* take what completed */
	got = rdx_ring_reap(bc->s.fd, &bc->s.ring, bc->comp, BENCH_REAP_MAX, wait_ns);
	if (got < 0) {
		if (got == -EINTR)
			return STEP_PROGRESS;
		bench_fail("REAP failed: %s", strerror(-got));
		return STEP_FAILED;
	}
	t = now_ns();
	if (!got) {
		if (!bc->idle_from) {
			bc->idle_from = t;
		} else if (t - bc->idle_from > (uint64_t)SESSION_IDLE_TIMEOUT_S * 1000000000ull) {
			bench_fail("no completions from %s for %d s", bc->s.peer,
				   SESSION_IDLE_TIMEOUT_S);
			return STEP_FAILED;
		}
		return progress ? STEP_PROGRESS : STEP_IDLE;
	}
	bc->idle_from = 0;
	for (i = 0; i < (unsigned int)got; i++) {
		const struct rdmaxfer_completion *c = &bc->comp[i];

		if (c->opcode < RDMAXFER_EVENT_WINDOW && (c->user_data & BENCH_OP_TAG)) {
			if (c->status) {
				bench_op_failed(&bc->s, c, got - i - 1);
				return STEP_FAILED;
			}
			bc->inflight--;
			bc->done++;
			bc->bytes += c->bytes;
			if (c->opcode == RDMAXFER_OP_SEND)
				bc->sent++;
			bc->t_last = t;
		} else if (echo && c->opcode == RDMAXFER_EVENT_RECV) {
			m = take_echo(bc);
			if (m < 0)
				return STEP_FAILED;
			bc->echoes += (unsigned int)m;
			bc->t_last = t;
		} else if (bench_event(&bc->s, c)) {
			return STEP_FAILED;
		}
	}
	return STEP_PROGRESS;
}

/*
 * Sleep until one of @bt's unfinished connections has something to take,
 * or a second passed.  epoll, not poll(): a thread may drive 256 files,
 * and poll() would queue itself on each of them every time it sleeps.
 * Returns 0, or -1 after bench_fail().
 */
static int wait_any(struct bthread *bt)
{
	struct epoll_event ev[16];

	if (epoll_wait(bt->epfd, ev, 16, 1000) < 0 && errno != EINTR) {
		bench_fail("epoll_wait failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Watch (@on) or stop watching connection @bc's file in @bt's epoll set. */
static int watch(struct bthread *bt, struct bconn *bc, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (!epoll_ctl(bt->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, bc->s.fd, &ev))
		return 0;
	bench_fail("epoll_ctl failed: %s", strerror(errno));
	return -1;
}

/* One phase of @bt's connections: until each is done, or anything failed. */
static void run_phase(struct bthread *bt)
{
	struct bench_run *r = bt->run;
	struct bconn *c = &r->c[bt->first];
	bool several = bt->n > 1;
	int64_t wait_ns = several ? 0 : 1000000000;
	unsigned int left = 0, i;
	enum bench_step step;
	bool progress;

	for (i = 0; i < bt->n; i++) {
		phase_begin(&c[i]);
		if (several && watch(bt, &c[i], true))
			goto out;
		left++;
	}
	while (left) {
		progress = false;
		for (i = 0; i < bt->n; i++) {
			if (c[i].finished)
				continue;
			step = phase_step(r, &c[i], wait_ns);
			if (step == STEP_FAILED)
				goto out;
			if (step == STEP_DONE) {
				c[i].finished = true;
				left--;
				if (several && watch(bt, &c[i], false))
					goto out;
			}
			progress |= step != STEP_IDLE;
		}
		if (left && !progress && several && wait_any(bt))
			goto out;
	}
out:
	/* what a failure left in the set (a connection not yet finished, or not added) */
	for (i = 0; i < bt->n; i++)
		if (several && !c[i].finished)
			epoll_ctl(bt->epfd, EPOLL_CTL_DEL, c[i].s.fd, NULL);
}

void *bench_thread(void *arg)
{
	struct bthread *bt = arg;
	struct bench_run *r = bt->run;

	for (;;) {
		gate_wait(&r->go);
		if (r->quit)
			break;
		if (!bench_abort)
			run_phase(bt);
		gate_wait(&r->done);
	}
	return NULL;
}
