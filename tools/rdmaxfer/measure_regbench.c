// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer regbench - what registering memory costs, in the kernel path of
 * rdmaxfer and with userspace ibv_reg_mr() on the same RDMA device.
 *
 * One process, two open files of /dev/rdmaxfer: one LISTENs on the
 * device's address (port 0: the kernel picks a free port), the other
 * CONNECTs to it, the first ACCEPTs; no `serve` is needed.  Over that
 * loopback the ADVERT's delivery, the receiving side's work included, runs
 * inside EXPOSE (on Soft-RoCE in its unlock of the connection).  With HOST
 * the one file connects to a `serve` there instead, and EXPOSE costs what
 * it costs a client whose peer is another host; each repetition starts on
 * an idle connection (rb_settle()).  For each size,
 * an anonymous buffer is mapped (from 2 MiB on, starting on a 2 MiB
 * boundary, for huge pages) and written page by page first, so that no
 * page fault is timed.  One kernel repetition is, each ioctl timed alone
 * with CLOCK_MONOTONIC:
 *
 *	REG_BUF		pin (FOLL_LONGTERM, charged to RLIMIT_MEMLOCK)
 *	EXPOSE		DMA-map + ib_alloc_mr + FRWR registration of every
 *			segment, waiting for the REG_MR completions, then
 *			post the ADVERT to the peer
 *	REVOKE		tell the peer, deregister the MRs, unmap
 *	DEREG_BUF	unpin
 *
 * A window is at most the connection's max_window_size (Soft-RoCE: about
 * 508 MiB), so a larger buffer is exposed as several windows and their
 * EXPOSE (and REVOKE) times are summed.  The userspace repetition is
 * ibv_reg_mr() (pin + build the device's page table) and ibv_dereg_mr() of
 * the same buffer with the same access, on a PD of its own.  The reported
 * value is the median of the repetitions; total is the median of the
 * per-repetition sums of REG_BUF and EXPOSE.  Events the peer side gets
 * (WINDOW, WINDOW_REVOKED) are reaped between repetitions, untimed.
 *
 * A size that cannot be measured here (not enough memory, over the
 * locked-memory limit) is a skipped row with its reason, not a failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netpacket/packet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "regbench.h"

static const uint64_t default_sizes[] = {
	4ull << 10, 16ull << 10, 64ull << 10, 256ull << 10, 1ull << 20, 4ull << 20,
	16ull << 20, 64ull << 20, 256ull << 20, 1ull << 30,
};

/* --- small helpers ---------------------------------------------------- */

static double us_between(uint64_t a, uint64_t b)
{
	return (double)(b - a) / 1000.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of @n values (sorts them); the mean of the middle two for even n. */
static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A number from /proc/meminfo in bytes, or 0 if unknown. */
static uint64_t meminfo(const char *key)
{
	unsigned long long kb = 0;
	char line[128];
	size_t n = strlen(key);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			if (sscanf(line + n + 1, "%llu", &kb) != 1)
				kb = 0;
			break;
		}
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* Does this process have CAP_IPC_LOCK (no RLIMIT_MEMLOCK for pins)? */
static bool have_ipc_lock(void)
{
	unsigned long long caps = 0;
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return found && (caps >> CAP_IPC_LOCK_BIT) & 1;
}

/*
 * The transparent huge page mode the buffers get: "always", "madvise",
 * "never", "?" (unknown), or "off" with --no-thp.
 */
static void thp_mode(char *buf, size_t len, bool off)
{
	char line[128], *a, *b;
	FILE *f;

	snprintf(buf, len, off ? "off" : "?");
	if (off)
		return;
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		a = strchr(line, '[');
		b = a ? strchr(a, ']') : NULL;
		if (a && b) {
			*b = 0;
			snprintf(buf, len, "%s", a + 1);
		}
	}
	fclose(f);
}

/* --- one repetition ----------------------------------------------------- */

struct rb_sample {
	double reg, expose, revoke, dereg;
};

/*
 * REG_BUF, EXPOSE every window, REVOKE them, DEREG_BUF, each timed.
 * Returns 0, 1 when the size cannot be measured here (@why says why), or
 * -1 (error line printed).  Whatever happens, nothing stays registered.
 */
static int kernel_rep(struct regbench *rb, void *buf, uint64_t size, struct rb_sample *s,
		      char *why, size_t whylen)
{
	uint32_t win[RB_MAX_WINDOWS], buf_id;
	uint64_t off, len = 0, t0, t1;
	unsigned int nwin = 0, i;
	int ret = 0, err;

	if (rb->sfd < 0 && rb_settle(rb))	/* HOST: start on an idle connection */
		return -1;
	t0 = now_ns();
	err = rdx_reg_buf(rb->cfd, buf, size, RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE, &buf_id);
	if (err) {
		if (err == ENOMEM) {
			snprintf(why, whylen, "REG_BUF: over RLIMIT_MEMLOCK or out of memory");
			return 1;
		}
		return fail("REG_BUF of %llu bytes failed: %s", (unsigned long long)size,
			    strerror(err));
	}
	t1 = now_ns();
	s->reg = us_between(t0, t1);

	t0 = now_ns();
	for (off = 0; off < size; off += rb->max_window) {
		len = size - off < rb->max_window ? size - off : rb->max_window;
		err = rdx_expose(rb->cfd, rb->cconn, buf_id, off, len,
				 RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE, &win[nwin]);
		if (err)
			break;
		nwin++;
	}
	t1 = now_ns();
	s->expose = us_between(t0, t1);
	if (err == ENOMEM) {
		snprintf(why, whylen, "EXPOSE: out of memory");
		ret = 1;
	} else if (err) {
		ret = fail("EXPOSE of %llu bytes at offset %llu failed: %s",
			   (unsigned long long)len, (unsigned long long)off, strerror(err));
	}

	t0 = now_ns();
	for (i = 0; i < nwin; i++) {
		err = rdx_revoke(rb->cfd, win[i]);
		if (err && !ret)
			ret = fail("REVOKE failed: %s", strerror(err));
	}
	t1 = now_ns();
	s->revoke = us_between(t0, t1);

	t0 = now_ns();
	err = rdx_dereg_buf(rb->cfd, buf_id);
	if (err && !ret)
		ret = fail("DEREG_BUF failed: %s", strerror(err));
	t1 = now_ns();
	s->dereg = us_between(t0, t1);
	if (rb_drain(rb) && !ret)
		ret = -1;
	return ret;
}

/* ibv_reg_mr + ibv_dereg_mr, timed.  Returns 0, 1 (@why) or -1. */
static int ibv_rep(struct regbench *rb, void *buf, uint64_t size, double *reg, double *dereg,
		   char *why, size_t whylen)
{
	struct ibv_mr *mr;
	uint64_t t0, t1;
	int ret;

	t0 = now_ns();
	mr = ibv_reg_mr(rb->pd, buf, size,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	t1 = now_ns();
	if (!mr) {
		if (errno == ENOMEM || errno == EAGAIN) {
			snprintf(why, whylen, "ibv_reg_mr: over RLIMIT_MEMLOCK or out of memory");
			return 1;
		}
		return fail("ibv_reg_mr of %llu bytes on %s failed: %s", (unsigned long long)size,
			    rb->devname, strerror(errno));
	}
	*reg = us_between(t0, t1);
	t0 = now_ns();
	ret = ibv_dereg_mr(mr);
	t1 = now_ns();
	if (ret)
		return fail("ibv_dereg_mr failed: %s", strerror(ret));
	*dereg = us_between(t0, t1);
	return 0;
}

/* --- one size ----------------------------------------------------------- */

/* Why @size cannot be measured here, or false if it can be tried. */
static bool size_skip(const struct regbench *rb, uint64_t size, char *why, size_t len)
{
	uint64_t avail = meminfo("MemAvailable");
	struct rlimit rl;
	char a[48], b[48];

	if (size > rb->info.max_buf_size) {
		format_bytes(rb->info.max_buf_size, a, sizeof(a));
		snprintf(why, len, "larger than the module's max_buf_size (%s)", a);
		return true;
	}
	if ((size + rb->max_window - 1) / rb->max_window > RB_MAX_WINDOWS) {
		snprintf(why, len, "needs more than %u windows", RB_MAX_WINDOWS);
		return true;
	}
	if (avail && size + RB_MEM_HEADROOM > avail) {
		snprintf(why, len, "not enough memory (MemAvailable %llu MiB)",
			 (unsigned long long)(avail >> 20));
		return true;
	}
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    size > rl.rlim_cur && !have_ipc_lock()) {
		format_bytes(rl.rlim_cur, b, sizeof(b));
		snprintf(why, len, "over RLIMIT_MEMLOCK (ulimit -l: %s)", b);
		return true;
	}
	return false;
}

/*
 * An anonymous mapping of @size bytes starting on a 2 MiB boundary, as a
 * program that wants transparent huge pages lays out its buffers (a
 * mapping that does not start on one gets huge pages only inside, and
 * rdmaxfer registers huge pages only from a window's start: window.c).
 */
static char *map_buffer(uint64_t size)
{
	uint64_t align = RB_HUGE_ALIGN, head;
	char *p;

	if (size < align)
		return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return p;
	head = (align - (uintptr_t)p % align) % align;
	if (head)
		munmap(p, head);
	munmap(p + head + size, align - head);
	return p + head;
}

static int measure(struct regbench *rb, const struct rb_opts *o, struct rb_row *r)
{
	double *v[7];
	struct rb_sample s = { 0 };
	unsigned int i, k, n;
	uint64_t off;
	char *buf;
	int ret = -1, st;

	r->pages = (r->size + (uint64_t)rb->page - 1) / (uint64_t)rb->page;
	r->windows = (unsigned int)((r->size + rb->max_window - 1) / rb->max_window);
	if (size_skip(rb, r->size, r->skip, sizeof(r->skip)))
		return 0;
	n = o->reps;
	if (!o->reps_given && r->size > RB_BIG_SIZE && n > RB_BIG_REPS)
		n = RB_BIG_REPS;
	r->reps = n;

	buf = map_buffer(r->size);
	if (buf == MAP_FAILED) {
		snprintf(r->skip, sizeof(r->skip), "cannot map the buffer: %s", strerror(errno));
		return 0;
	}
	if (o->no_thp && madvise(buf, r->size, MADV_NOHUGEPAGE))
		warnx_("madvise(MADV_NOHUGEPAGE) failed: %s", strerror(errno));
	/* fault every page in now: page faults are not what is measured */
	for (off = 0; off < r->size; off += (uint64_t)rb->page)
		buf[off] = (char)off;
	for (k = 0; k < 7; k++) {
		v[k] = calloc(n, sizeof(double));
		if (!v[k]) {
			while (k--)
				free(v[k]);
			munmap(buf, r->size);
			return fail("out of memory");
		}
	}

	for (i = 0; i < n; i++) {
		st = kernel_rep(rb, buf, r->size, &s, r->skip, sizeof(r->skip));
		if (st < 0)
			goto out;
		if (st > 0) {
			ret = 0;
			goto out;
		}
		v[0][i] = s.reg;
		v[1][i] = s.expose;
		v[2][i] = s.reg + s.expose;
		v[3][i] = s.revoke;
		v[4][i] = s.dereg;
	}
	for (i = 0; rb->pd && i < n; i++) {
		st = ibv_rep(rb, buf, r->size, &v[5][i], &v[6][i], r->ibv_skip,
			     sizeof(r->ibv_skip));
		if (st < 0)
			goto out;
		if (st > 0)
			break;
	}
	if (!rb->pd)
		snprintf(r->ibv_skip, sizeof(r->ibv_skip), "--no-ibv");
	r->reg = median(v[0], n);
	r->expose = median(v[1], n);
	r->total = median(v[2], n);
	r->revoke = median(v[3], n);
	r->dereg = median(v[4], n);
	if (!r->ibv_skip[0]) {
		r->ibv_reg = median(v[5], n);
		r->ibv_dereg = median(v[6], n);
	}
	ret = 0;
out:
	for (k = 0; k < 7; k++)
		free(v[k]);
	munmap(buf, r->size);
	return ret;
}

/* --- output ------------------------------------------------------------- */

static void print_human_head(const struct regbench *rb, const struct rb_opts *o)
{
	char win[48], thp[32];

	format_bytes(rb->max_window, win, sizeof(win));
	thp_mode(thp, sizeof(thp), o->no_thp);
	printf("regbench on %s (%s %s), page %ld bytes, window limit %s, THP %s\n", rb->devname,
	       o->host ? "windows advertised to the serve at" : "loopback over", rb->where,
	       rb->page, win, thp);
	if (o->reps_given || o->reps <= RB_BIG_REPS)
		printf("median of %u repetitions", o->reps);
	else
		printf("median of %u repetitions (%u above 64 MiB)", o->reps, RB_BIG_REPS);
	printf("; pages are faulted in before timing\n");
	printf("%10s %8s %4s | %10s %10s %10s %9s %10s %10s | %10s %9s %10s\n",
	       "size", "pages", "win", "reg_us", "expose_us", "total_us", "ns/page", "revoke_us",
	       "dereg_us", "ibv_reg_us", "ns/page", "ibv_dereg");
}

static void print_human_row(const struct rb_row *r)
{
	char sz[48];

	format_bytes(r->size, sz, sizeof(sz));
	if (r->skip[0]) {
		printf("%10s %8" PRIu64 " %4s | skipped: %s\n", sz, r->pages, "-", r->skip);
		return;
	}
	printf("%10s %8" PRIu64 " %4u | %10.1f %10.1f %10.1f %9.1f %10.1f %10.1f |", sz, r->pages,
	       r->windows, r->reg, r->expose, r->total, r->total * 1000.0 / (double)r->pages,
	       r->revoke, r->dereg);
	if (r->ibv_skip[0])
		printf(" skipped: %s\n", r->ibv_skip);
	else
		printf(" %10.1f %9.1f %10.1f\n", r->ibv_reg, r->ibv_reg * 1000.0 / (double)r->pages,
		       r->ibv_dereg);
	fflush(stdout);
}

static void print_json(const struct regbench *rb, const struct rb_opts *o,
		       const struct rb_row *rows)
{
	char thp[32];
	unsigned int i;

	thp_mode(thp, sizeof(thp), o->no_thp);
	json_begin_object(NULL);
	json_string("device", rb->devname);
	json_string("address", rb->where);
	json_string("peer", o->host ? "serve" : "loopback");
	json_u64("page_size", (uint64_t)rb->page);
	json_u64("max_window_size", rb->max_window);
	json_string("thp", thp);
	json_begin_array("rows");
	for (i = 0; i < o->nsizes; i++) {
		const struct rb_row *r = &rows[i];

		json_begin_object(NULL);
		json_u64("size", r->size);
		json_u64("pages", r->pages);
		if (r->skip[0]) {
			json_string("skipped", r->skip);
			json_end_object();
			continue;
		}
		json_u64("reps", r->reps);
		json_u64("windows", r->windows);
		json_double("reg_us", r->reg);
		json_double("expose_us", r->expose);
		json_double("kernel_total_us", r->total);
		json_double("kernel_per_page_ns", r->total * 1000.0 / (double)r->pages);
		json_double("revoke_us", r->revoke);
		json_double("dereg_us", r->dereg);
		if (r->ibv_skip[0]) {
			json_string("ibv_skipped", r->ibv_skip);
		} else {
			json_double("ibv_reg_mr_us", r->ibv_reg);
			json_double("ibv_per_page_ns", r->ibv_reg * 1000.0 / (double)r->pages);
			json_double("ibv_dereg_mr_us", r->ibv_dereg);
		}
		json_end_object();
	}
	json_end_array();
	json_end_object();
	json_end_document();
}

/* --- options and the command -------------------------------------------- */

static void regbench_usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer regbench [HOST [--port N] [--key KEY | --key-file F]] [--sizes LIST]\n"
		"                         [--reps N] [--bind ADDR | --device NAME] [--no-ibv] [--no-thp]\n"
		"                         [--json]\n"
		"\n"
		"Time memory registration for each size: in the kernel path (REG_BUF pins,\n"
		"EXPOSE DMA-maps and registers FRWR MRs and tells the peer, REVOKE undoes it,\n"
		"DEREG_BUF unpins) over a loopback connection of this process, or over a\n"
		"connection to 'rdmaxfer serve' on HOST, and userspace ibv_reg_mr and\n"
		"ibv_dereg_mr on the same device.  Medians per call, and per page.\n"
		"\n"
		"  HOST           a serve's address: its host receives the windows' ADVERTs\n"
		"                 (default: a loopback connection, whose peer's work on them\n"
		"                 is timed as part of EXPOSE)\n"
		"  --port N       the serve's port (default %u)\n"
		"  --key KEY      prove the key KEY (a keyring serial or description) to the serve\n"
		"  --key-file F   the same with the key in file F (16 to 256 bytes)\n"
		"  --sizes LIST   comma-separated sizes with K, M, G suffixes\n"
		"                 (default 4K,16K,64K,256K,1M,4M,16M,64M,256M,1G)\n"
		"  --reps N       repetitions per size (default %u; at most %u above 64 MiB\n"
		"                 unless given)\n"
		"  --bind ADDR    the loopback connection's local address (default: the first RDMA\n"
		"                 device with an IP address on an active port)\n"
		"  --device NAME  use this RDMA device (e.g. rxe0)\n"
		"  --no-ibv       do not measure ibv_reg_mr\n"
		"  --no-thp       back the buffers with 4 KiB pages only (MADV_NOHUGEPAGE)\n"
		"  --json         one JSON object on stdout\n"
		"  --help         this text\n",
		RDMAXFER_DEFAULT_PORT, RB_DEFAULT_REPS, RB_BIG_REPS);
}

/* Parse "4K,1M,...": no empty item, none 0.  Returns 0 or -1. */
static int parse_sizes(char *list, struct rb_opts *o)
{
	char *tok;

	o->nsizes = 0;
	while ((tok = strsep(&list, ",")) != NULL) {
		if (o->nsizes == RB_MAX_SIZES || parse_size(tok, &o->sizes[o->nsizes]) ||
		    !o->sizes[o->nsizes])
			return -1;
		o->nsizes++;
	}
	return 0;
}

/* Returns -1 when parsed, else an exit code. */
static int parse_regbench(int argc, char **argv, struct rb_opts *o)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		OPTION_PORT,
		OPTION_KEY,
		OPTION_BIND,
		{ "device", required_argument, NULL, 'd' },
		{ "no-ibv", no_argument, NULL, 'n' },
		{ "no-thp", no_argument, NULL, 't' },
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct common_opts co;
	char *copy;
	uint64_t v;
	int c, bad, ret;

	memcpy(o->sizes, default_sizes, sizeof(default_sizes));
	o->nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
	o->reps = RB_DEFAULT_REPS;
	common_init(&co, "regbench ", regbench_usage, CO_HOST | CO_HOST_OPT);
	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0) {
		switch (c) {
		case 's':
			copy = strdup(optarg);
			if (!copy)
				return fail("out of memory");
			bad = parse_sizes(copy, o);
			free(copy);
			if (bad)
				return usage_error("regbench ", "bad --sizes '%s' (comma-separated sizes of at least 1 byte, with K, M, G suffixes, at most %d)",
						   optarg, RB_MAX_SIZES);
			break;
		case 'r':
			if (parse_uint(optarg, RB_MAX_REPS, &v) || !v)
				return usage_error("regbench ", "bad --reps '%s' (1 .. %d)", optarg,
						   RB_MAX_REPS);
			o->reps = (unsigned int)v;
			o->reps_given = true;
			break;
		case 'd':
			if (!*optarg || strlen(optarg) >= RDMAXFER_NAME_LEN)
				return usage_error("regbench ", "bad --device '%s'", optarg);
			o->device = optarg;
			break;
		case 'n':
			o->no_ibv = true;
			break;
		case 't':
			o->no_thp = true;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	o->host = co.host;
	o->port = co.port;
	o->bind = co.bind;
	o->json = co.json;
	if (o->bind && o->device)
		return usage_error("regbench ", "give at most one of --bind and --device");
	if (o->host && o->bind)
		return usage_error("regbench ", "--bind is for the loopback connection: not with HOST");
	if (!o->host && (co.key || co.key_file))
		return usage_error("regbench ", "--key and --key-file are for a serve on HOST: give HOST");
	return key_resolve(&co, &o->key);
}

/* Nothing of ours may stay pinned or registered; then close everything. */
static int rb_close(struct regbench *rb, bool check)
{
	struct rdmaxfer_stats st;
	int ret = 0, err;

	if (rb->settle_buf) {
		err = rdx_dereg_buf(rb->cfd, rb->settle_buf);
		if (err && check)
			ret = fail("DEREG_BUF failed: %s", strerror(err));
		rb->settle_buf = 0;
	}
	if (check && rb->cfd >= 0 && !ret) {
		err = rdx_stats(rb->cfd, &st);
		if (err)
			ret = fail("STATS failed: %s", strerror(err));
		else if (st.pinned_bytes || st.num_bufs || st.num_windows)
			ret = fail("left behind: %llu bytes pinned, %u buffers, %u windows",
				   (unsigned long long)st.pinned_bytes, st.num_bufs,
				   st.num_windows);
	}
	if (rb->cconn)
		rdx_close(rb->cfd, rb->cconn);
	if (rb->sconn)
		rdx_close(rb->sfd, rb->sconn);
	if (rb->listen_id)
		rdx_close(rb->sfd, rb->listen_id);
	if (rb->pd)
		ibv_dealloc_pd(rb->pd);
	if (rb->ibv)
		ibv_close_device(rb->ibv);
	if (rb->cfd >= 0)
		close(rb->cfd);
	if (rb->sfd >= 0)
		close(rb->sfd);
	rb->cconn = rb->sconn = rb->listen_id = 0;
	rb->pd = NULL;
	rb->ibv = NULL;
	rb->cfd = rb->sfd = -1;
	return ret;
}

int cmd_regbench(int argc, char **argv)
{
	struct regbench rb = { .sfd = -1, .cfd = -1 };
	struct rb_opts o = { 0 }, warm = { .reps = 1, .reps_given = true };
	struct rb_row *rows = NULL, w = { 0 };
	unsigned int i;
	int ret = EXIT_FAIL, c;

	c = parse_regbench(argc, argv, &o);
	if (c >= 0)
		return c;
	rb.page = sysconf(_SC_PAGESIZE);
	rows = calloc(o.nsizes, sizeof(*rows));
	if (!rows)
		return fail("out of memory");

	rb.cfd = cli_open_transfer(&rb.info);
	if (rb.cfd < 0)
		goto out;
	if (!o.host) {
		rb.sfd = cli_open();
		if (rb.sfd < 0)
			goto out;
	}
	if (rb_connect(&rb, &o))
		goto out;
	if (!o.no_ibv && rb_open_ibv(&rb))
		goto out;

	/* one page through both paths first, untimed: first-use costs */
	w.size = (uint64_t)rb.page;
	if (measure(&rb, &warm, &w))
		goto out;

	if (!o.json)
		print_human_head(&rb, &o);
	for (i = 0; i < o.nsizes; i++) {
		rows[i].size = o.sizes[i];
		if (measure(&rb, &o, &rows[i]))
			goto out;
		if (!o.json)
			print_human_row(&rows[i]);
	}
	if (rb_close(&rb, true))
		goto out_free;
	if (o.json)
		print_json(&rb, &o, rows);
	ret = fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
	goto out_free;
out:
	rb_close(&rb, false);
out_free:
	free(rows);
	return ret;
}
