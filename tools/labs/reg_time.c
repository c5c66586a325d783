// SPDX-License-Identifier: GPL-2.0
/*
 * reg_time - what ibv_reg_mr() costs, per buffer size: the course's
 * exercise 2 ("time ibv_reg_mr for different buffer sizes") and its
 * exercise A (pages and translation entries of a registration), on the
 * device the guest really has.  Plain libibverbs; it does not use rdmaxfer.
 *
 *   reg_time [-d DEVICE] [-r REPS] [--touch] [--offset N] [SIZE ...]
 *                                                      (default 4K 1M 64M 256M)
 *
 * Each repetition maps fresh anonymous memory, as malloc() does for a large
 * buffer, and times ibv_reg_mr() on it.  Untouched memory has no pages yet:
 * the registration pins them (pin_user_pages() in the kernel, FOLL_LONGTERM)
 * and so first faults every one of them in, zeroing 4 KiB each; --touch
 * writes the buffer before timing, so only the pinning and the device's
 * translation entries are left.  The median of REPS (default 9) is printed
 * with the cost per 4 KiB page and the size of a table of 8-byte page
 * addresses, exercise A's model of what a NIC holds.  --offset N registers
 * SIZE bytes that start N bytes into the mapping, the course's failure 3 (a
 * buffer that is not page-aligned): the registration covers every page the
 * bytes touch, and is neither refused nor slower for it.
 *
 * Exit: 0, 1 a registration failed (the error is printed: past
 * RLIMIT_MEMLOCK it is "Cannot allocate memory"), 2 usage or no device.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <sys/mman.h>
#include "labs.h"

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	if (!ctx)
		fprintf(stderr, "reg_time: no RDMA device%s%s\n", name ? " " : "", name ? name : "");
	ibv_free_device_list(list);
	return ctx;
}

/*
 * reg_once - map off + size bytes, optionally touch them, time ibv_reg_mr()
 * of the size bytes at off: ns or 0.
 */
static uint64_t reg_once(struct ibv_pd *pd, size_t off, size_t size, int touch)
{
	char *buf = mmap(NULL, off + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	struct ibv_mr *mr;
	uint64_t t;

	if (buf == MAP_FAILED) {
		perror("reg_time: mmap");
		return 0;
	}
	if (touch)
		memset(buf, 1, off + size);
	t = now_ns();
	mr = ibv_reg_mr(pd, buf + off, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	t = now_ns() - t;
	if (!mr)
		fprintf(stderr, "reg_time: ibv_reg_mr(%zu bytes): %s\n", size, strerror(errno));
	else
		ibv_dereg_mr(mr);
	munmap(buf, off + size);
	return mr ? t : 0;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "4K", "1M", "64M", "256M" };
	static const struct option lopts[] = {
		{ "touch", 0, NULL, 't' }, { "reps", 1, NULL, 'r' }, { "device", 1, NULL, 'd' },
		{ "offset", 1, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	const char *dev = NULL, *const *sizes = defaults;
	int c, i, r, nsizes = 4, reps = 9, touch = 0;
	size_t off = 0;
	char *end;
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint64_t ns[101];

	while ((c = getopt_long(argc, argv, "d:o:r:t", lopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > 101)
				goto usage;
			break;
		case 't':
			touch = 1;
			break;
		case 'o':
			off = strtoul(optarg, &end, 0);
			if (*end || !*optarg || off > 1 << 20)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind < argc) {
		sizes = (const char *const *)argv + optind;
		nsizes = argc - optind;
	}
	for (i = 0; i < nsizes; i++)
		if (!parse_size(sizes[i]))
			goto usage;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* in order with the errors on stderr */
	ctx = open_device(dev);
	if (!ctx)
		return 2;
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_device(ctx, &attr)) {
		perror("reg_time: ibv_alloc_pd/ibv_query_device");
		return 2;
	}
	printf("device %s: page_size_cap 0x%" PRIx64 ", max_mr_size 0x%" PRIx64 ", max_mr %d; "
	       "buffers %s, starting %zu bytes into a page\n", ibv_get_device_name(ctx->device),
	       attr.page_size_cap, (uint64_t)attr.max_mr_size, attr.max_mr,
	       touch ? "written before registering (--touch)" : "untouched (fresh mmap)",
	       off % 4096);
	for (i = 0; i < nsizes; i++) {
		size_t size = parse_size(sizes[i]);
		size_t pages = (off % 4096 + size + 4095) / 4096;	/* the pages it touches */

		for (r = 0; r < reps; r++) {
			ns[r] = reg_once(pd, off, size, touch);
			if (!ns[r])
				return 1;
		}
		qsort(ns, reps, sizeof(ns[0]), cmp_u64);
		printf("size %11zu: %8zu pages, reg %10.1f us (median of %d, min %.1f), "
		       "%6.0f ns/page; 8-byte page table %zu bytes\n", size, pages,
		       ns[reps / 2] / 1e3, reps, ns[0] / 1e3, (double)ns[reps / 2] / pages,
		       pages * 8);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
usage:
	fprintf(stderr, "usage: reg_time [-d DEVICE] [-r REPS (1-101)] [--touch] [--offset N] "
		"[SIZE ...]\n");
	return 2;
}
