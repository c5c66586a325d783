/* SPDX-License-Identifier: GPL-2.0 */
/*
 * labs.h - the few helpers the course's verbs programs in tools/labs share:
 * clocks, CPU time, sizes and a latency summary.  Each program is meant to be
 * read on its own; nothing here touches RDMA.
 */
#ifndef RDMAXFER_LABS_H
#define RDMAXFER_LABS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Nanoseconds of CLOCK_MONOTONIC. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* CPU time of this process so far (user + system), in nanoseconds. */
static inline uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/*
 * CPU time all CPUs of the machine have spent not idle so far (user, nice,
 * system, irq, softirq, steal of /proc/stat's "cpu" line), in nanoseconds;
 * 0 if unreadable.  Ticks of 1/USER_HZ: measure over many round trips.
 */
static inline uint64_t system_busy_ns(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;

	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7]);
		fclose(f);
	}
	if (n != 8)
		return 0;
	return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * (1000000000ull / sysconf(_SC_CLK_TCK));
}

/* "4096", "64K", "1M", "1G" -> bytes; 0 for anything else. */
static inline uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return 0;
	switch (*end) {
	case 'K': case 'k':
		v <<= 10, end++;
		break;
	case 'M': case 'm':
		v <<= 20, end++;
		break;
	case 'G': case 'g':
		v <<= 30, end++;
		break;
	}
	return *end ? 0 : v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * print_latency - one line: what was measured, its round trips in µs
 * (min, p50, p99, max, mean), the CPU this process spent per round trip and
 * what the whole machine's CPUs spent (both ends, interrupts and softirqs
 * included; sys from system_busy_ns()).  Sorts ns[].
 */
static inline void print_latency(const char *what, uint64_t *ns, size_t n, uint64_t cpu,
				 uint64_t sys)
{
	uint64_t sum = 0;
	size_t i;

	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += ns[i];
	printf("%s: %zu round trips, us: min %.1f p50 %.1f p99 %.1f max %.1f mean %.1f; "
	       "cpu %.1f us per round trip (%.0f%% of the time), all CPUs %.1f us\n",
	       what, n, ns[0] / 1e3, ns[n / 2] / 1e3, ns[(n * 99) / 100] / 1e3,
	       ns[n - 1] / 1e3, sum / 1e3 / n, cpu / 1e3 / n, 100.0 * cpu / sum, sys / 1e3 / n);
}

/*
 * print_steps - where the time of a round trip goes (exercise D): the
 * medians of the moments, counted from the start of each round trip, at
 * which step a (and b, if given) was done, and of the round trip itself
 * (rtt[], sorted by print_latency()).  Sorts a[] and b[].
 */
static inline void print_steps(const char *what_a, uint64_t *a, const char *what_b, uint64_t *b,
			       const uint64_t *rtt, size_t n)
{
	if (!n)
		return;
	qsort(a, n, sizeof(*a), cmp_u64);
	printf("  steps, medians from the start of a round trip: %s at %.1f us", what_a,
	       a[n / 2] / 1e3);
	if (b) {
		qsort(b, n, sizeof(*b), cmp_u64);
		printf(", %s at %.1f us", what_b, b[n / 2] / 1e3);
	}
	printf(", the answer at %.1f us\n", rtt[n / 2] / 1e3);
}

#endif
