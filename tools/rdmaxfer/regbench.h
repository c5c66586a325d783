/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer regbench - what measure_regbench.c (the measurement, the
 * output, the command) and regbench_conn.c (the device, the connection:
 * loopback or to a serve, the ibv_reg_mr side's PD) share.
 */
#ifndef RDMAXFER_CLI_REGBENCH_H
#define RDMAXFER_CLI_REGBENCH_H

#include <infiniband/verbs.h>

#include "measure.h"

#define RB_MAX_SIZES		64
#define RB_DEFAULT_REPS		5
#define RB_BIG_SIZE		(64ull << 20)	/* above: at most RB_BIG_REPS */
#define RB_BIG_REPS		3
#define RB_MAX_REPS		1000
#define RB_MAX_WINDOWS		64
#define RB_MEM_HEADROOM		(128ull << 20)	/* left to the rest of the system */
#define RB_TIMEOUT_NS		(10ll * 1000000000)
#define RB_HUGE_ALIGN		(2ull << 20)	/* buffers from 2 MiB on start there */
#define CAP_IPC_LOCK_BIT	14


struct rb_opts {
	uint64_t sizes[RB_MAX_SIZES];
	unsigned int nsizes;
	unsigned int reps;
	bool reps_given;
	const char *host;		/* HOST: a serve there is the peer; NULL: loopback */
	uint16_t port;
	int32_t key;
	const char *bind;
	const char *device;
	bool json;
	bool no_ibv;
	bool no_thp;
};

struct rb_row {
	uint64_t size;
	uint64_t pages;
	unsigned int reps;
	unsigned int windows;
	char skip[160];			/* the whole row was not measured: why */
	char ibv_skip[160];		/* ibv_reg_mr was not measured: why */
	/* medians, microseconds */
	double reg, expose, total, revoke, dereg;
	double ibv_reg, ibv_dereg;
};

struct regbench {
	int sfd, cfd;			/* listening/accepting file (loopback only), connecting file */
	uint32_t listen_id, sconn, cconn;
	struct rdmaxfer_info info;
	struct rdmaxfer_addr addr;
	char where[96];			/* the address, for messages */
	char devname[RDMAXFER_NAME_LEN];
	uint64_t max_window;
	long page;
	struct ibv_context *ibv;
	struct ibv_pd *pd;
	/* HOST: the serve's window, and the buffer rb_settle() READs it into */
	uint32_t peer_win;
	uint32_t settle_buf;
};

int rb_connect(struct regbench *rb, const struct rb_opts *o);
int rb_open_ibv(struct regbench *rb);
int rb_drain(struct regbench *rb);
int rb_settle(struct regbench *rb);

#endif
