/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer bench - what measure_bench.c (options, connections, phases,
 * the command) and bench_run.c (the threads that post and reap) share.
 */
#ifndef RDMAXFER_CLI_BENCH_H
#define RDMAXFER_CLI_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "session.h"
#include "measure.h"

#define BENCH_REAP_MAX		256

struct bench_run;

/* One connection: its session, its buffer, and its state in the phase. */
struct bconn {
	struct session s;
	struct bench_run *run;
	unsigned int idx;
	unsigned char *buf;		/* local data: largest size bytes */
	uint64_t buf_len;
	uint32_t buf_id;
	unsigned char *rbuf;		/* echoes land here (RECV) */
	struct rdmaxfer_op *ops;	/* depth entries */
	struct rdmaxfer_completion comp[BENCH_REAP_MAX];
	uint64_t k;			/* operations posted, all sizes */
	/* the phase (bench_run.c) */
	uint64_t posted, echoes;	/* this phase */
	unsigned int inflight;
	uint64_t idle_from;		/* now_ns() since which nothing came, or 0 */
	bool finished;
	/* the last phase's result */
	uint64_t done, bytes;		/* completed operations and echoes */
	uint64_t sent;			/* SENDs posted */
	uint64_t t_first, t_last;
};

/* One thread: it drives connections first .. first + n - 1 of the run. */
struct bthread {
	struct bench_run *run;
	unsigned int first, n;
	int epfd;			/* when n > 1: the files of its connections */
	pthread_t th;
	bool started;
};

/*
 * A barrier whose number of parties can shrink (a thread that could not be
 * created), which pthread_barrier_t cannot do.
 */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int parties, waiting;
	unsigned long gen;
};

struct bench_run {
	const struct bench_opts *o;
	unsigned int depth;		/* effective */
	unsigned int max_batch;
	uint64_t size;
	uint64_t nslots;		/* window / size (--windows: the shortest one's) */
	uint64_t deadline;		/* --duration: now_ns() to stop submitting */
	uint64_t expose_us;		/* --windows: serve's EXPOSE time, all connections */
	bool quit;
	struct gate go, done;		/* phase start and end: threads + main */
	struct bconn *c;		/* o->conns */
	struct bthread *t;		/* o->threads */
};

void gate_init(struct gate *g, unsigned int parties);
void gate_wait(struct gate *g);
void gate_set_parties(struct gate *g, unsigned int parties);

/* A bench thread (@arg: its struct bthread): a phase between each two gates. */
void *bench_thread(void *arg);

#endif
