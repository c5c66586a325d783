// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - what ping, bench and the sockets baseline share: option
 * parsing, CPU accounting, latency statistics and the bandwidth table.
 *
 * Latency: all samples are kept (ping --count is bounded) and sorted, so
 * the percentiles are exact order statistics (nearest rank), not estimates.
 * Bandwidth: MiB/s is 2^20 bytes per second, the unit perftest prints as
 * "MB/sec"; Mpps is millions of completed operations per second.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "measure.h"

void cpu_snap(struct cpu_snap *s)
{
	unsigned long long v[10] = { 0 };
	struct rusage ru;
	FILE *f;
	int i, n;

	s->wall = now_sec();
	s->proc = 0;
	if (!getrusage(RUSAGE_SELF, &ru))
		s->proc = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			  ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	s->busy = 0;
	s->total = 0;
	f = fopen("/proc/stat", "r");
	if (!f)
		return;
	/* cpu user nice system idle iowait irq softirq steal guest guest_nice */
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (n < 4)
		return;
	/* guest time is already counted in user */
	for (i = 0; i < 8 && i < n; i++)
		s->total += v[i];
	s->busy = s->total - v[3] - (n > 4 ? v[4] : 0);
}

double cpu_proc_pct(const struct cpu_snap *a, const struct cpu_snap *b)
{
	double wall = b->wall - a->wall;

	return wall > 0 ? 100.0 * (b->proc - a->proc) / wall : -1;
}

double cpu_sys_pct(const struct cpu_snap *a, const struct cpu_snap *b)
{
	double wall = b->wall - a->wall;
	long hz = sysconf(_SC_CLK_TCK);

	if (!a->total || !b->total || b->total <= a->total || wall <= 0 || hz <= 0)
		return -1;
	return 100.0 * (double)(b->busy - a->busy) / hz / wall;
}

int parse_bench_op(const char *s, enum bench_op *op)
{
	if (!strcmp(s, "write"))
		*op = BOP_WRITE;
	else if (!strcmp(s, "read"))
		*op = BOP_READ;
	else if (!strcmp(s, "send"))
		*op = BOP_SEND;
	else if (!strcmp(s, "fadd"))
		*op = BOP_FADD;
	else if (!strcmp(s, "cas"))
		*op = BOP_CAS;
	else
		return -1;
	return 0;
}

int parse_transport(const char *s, enum bench_transport *t)
{
	if (!strcmp(s, "rdma"))
		*t = BT_RDMA;
	else if (!strcmp(s, "tcp"))
		*t = BT_TCP;
	else if (!strcmp(s, "udp"))
		*t = BT_UDP;
	else
		return -1;
	return 0;
}

const char *bench_op_name(enum bench_op op)
{
	static const char *const names[] = {
		[BOP_WRITE] = "write", [BOP_READ] = "read", [BOP_SEND] = "send",
		[BOP_FADD] = "fadd", [BOP_CAS] = "cas",
	};

	return names[op];
}

const char *transport_name(enum bench_transport t)
{
	return t == BT_RDMA ? "rdma" : t == BT_TCP ? "tcp" : "udp";
}

/* "MIN:MAX", both sizes with suffixes, 1 <= MIN <= MAX. */
int parse_sweep(const char *s, uint64_t *min, uint64_t *max)
{
	const char *colon = strchr(s, ':');
	char lo[64];

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(lo))
		return -1;
	memcpy(lo, s, colon - s);
	lo[colon - s] = '\0';
	if (parse_size(lo, min) || parse_size(colon + 1, max))
		return -1;
	return *min && *min <= *max ? 0 : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted @ns: the smallest sample >= p% of all. */
static double pct_us(const uint64_t *ns, uint64_t n, double p)
{
	uint64_t rank = (uint64_t)ceil(p / 100.0 * n);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return ns[rank - 1] / 1000.0;
}

static void histogram(const uint64_t *ns, uint64_t n, bool json)
{
	uint64_t counts[64] = { 0 }, i;
	unsigned int b, lo = 63, hi = 0;

	/* bucket b holds samples in [2^b, 2^(b+1)) ns */
	for (i = 0; i < n; i++) {
		b = ns[i] ? 63 - __builtin_clzll(ns[i]) : 0;
		counts[b]++;
		if (b < lo)
			lo = b;
		if (b > hi)
			hi = b;
	}
	if (json)
		json_begin_array("histogram");
	else
		printf("%12s %12s %10s  %s\n", "from_us", "to_us", "count", "");
	for (b = lo; n && b <= hi; b++) {
		if (json) {
			json_begin_object(NULL);
			json_double("from_us", (double)(1ull << b) / 1000.0);
			json_double("to_us", (double)(2ull << b) / 1000.0);
			json_u64("count", counts[b]);
			json_end_object();
		} else {
			unsigned int bar = (unsigned int)(50.0 * counts[b] / n + 0.5);
			char stars[51];

			memset(stars, '#', bar);
			stars[bar] = '\0';
			printf("%12.3f %12.3f %10llu  %s\n", (double)(1ull << b) / 1000.0,
			       (double)(2ull << b) / 1000.0, (unsigned long long)counts[b], stars);
		}
	}
	if (json)
		json_end_array();
}

void lat_report(const struct ping_opts *o, uint64_t *ns, uint64_t n)
{
	double sum = 0, mean;
	uint64_t i;

	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += ns[i];
	mean = n ? sum / n / 1000.0 : 0;
	if (o->json) {
		json_begin_object(NULL);
		json_string("transport", transport_name(o->transport));
		json_string("op", bench_op_name(o->op));
		json_u64("size", o->size);
		json_u64("count", n);
		json_double("min_us", n ? ns[0] / 1000.0 : 0);
		json_double("p50_us", n ? pct_us(ns, n, 50) : 0);
		json_double("p99_us", n ? pct_us(ns, n, 99) : 0);
		json_double("p999_us", n ? pct_us(ns, n, 99.9) : 0);
		json_double("max_us", n ? ns[n - 1] / 1000.0 : 0);
		json_double("mean_us", mean);
		if (o->histogram)
			histogram(ns, n, true);
		json_end_object();
		json_end_document();
		return;
	}
	printf("%s %s ping to %s, %llu bytes, %llu round trips (microseconds):\n",
	       transport_name(o->transport), bench_op_name(o->op), o->host,
	       (unsigned long long)o->size, (unsigned long long)n);
	printf("%10s %10s %10s %10s %10s %10s\n", "min", "p50", "p99", "p99.9", "max", "mean");
	if (n)
		printf("%10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", ns[0] / 1000.0,
		       pct_us(ns, n, 50), pct_us(ns, n, 99), pct_us(ns, n, 99.9),
		       ns[n - 1] / 1000.0, mean);
	if (o->histogram)
		histogram(ns, n, false);
}

void bench_table_begin(const struct bench_opts *o)
{
	if (o->json) {
		json_begin_object(NULL);
		json_string("transport", transport_name(o->transport));
		json_string("op", bench_op_name(o->op));
		json_u64("depth", o->depth);
		json_u64("conns", o->conns);
		if (o->transport == BT_RDMA)
			json_u64("threads", o->threads);
		if (o->windows) {
			json_u64("windows", o->windows);
			json_double("expose_us_per_window",
				    (double)o->expose_us / o->windows / o->conns);
		}
		json_bool("bidir", o->bidir);
		json_begin_array("rows");
		return;
	}
	printf("%s %s bandwidth to %s, depth %u, %u connection%s", transport_name(o->transport),
	       bench_op_name(o->op), o->host, o->depth, o->conns, o->conns == 1 ? "" : "s");
	if (o->transport == BT_RDMA && o->conns > 1)
		printf(" on %u thread%s", o->threads, o->threads == 1 ? "" : "s");
	printf("%s\n", o->bidir ? ", both directions" : "");
	if (o->windows)
		printf("%u windows per connection, exposed in %.1f us each\n", o->windows,
		       (double)o->expose_us / o->windows / o->conns);
	printf("%12s %12s %12s %12s %10s %10s\n", "bytes", "iterations", "MiB/s", "Mpps",
	       "cpu_cli%", "cpu_srv%");
	fflush(stdout);
}

static void cpu_col(double v)
{
	if (v < 0)
		printf(" %10s", "-");
	else
		printf(" %10.1f", v);
}

static void json_cpu(const char *key, double v)
{
	if (v >= 0)
		json_double(key, v);
}

void bench_table_row(const struct bench_opts *o, const struct bench_row *r)
{
	double bw = r->secs > 0 ? r->bytes / r->secs / 1048576.0 : 0;
	double mpps = r->secs > 0 ? r->iters / r->secs / 1e6 : 0;

	if (o->json) {
		json_begin_object(NULL);
		json_u64("size", r->size);
		json_u64("iters", r->iters);
		json_u64("bytes", r->bytes);
		json_double("secs", r->secs);
		json_double("bw_mib_s", bw);
		json_double("msg_rate_mpps", mpps);
		json_cpu("cpu_client_pct", r->cpu_client);
		json_cpu("cpu_client_sys_pct", r->cpu_client_sys);
		json_cpu("cpu_server_pct", r->cpu_server);
		json_cpu("cpu_server_sys_pct", r->cpu_server_sys);
		if (o->transport == BT_UDP)
			json_u64("lost", r->lost);
		json_end_object();
		return;
	}
	printf("%12llu %12llu %12.2f %12.6f", (unsigned long long)r->size,
	       (unsigned long long)r->iters, bw, mpps);
	cpu_col(r->cpu_client);
	cpu_col(r->cpu_server);
	if (o->transport == BT_UDP && r->lost)
		printf("  (%llu datagrams lost)", (unsigned long long)r->lost);
	printf("\n");
	fflush(stdout);
}

void bench_table_end(const struct bench_opts *o)
{
	if (o->json) {
		json_end_array();
		json_end_object();
		json_end_document();
	}
}
