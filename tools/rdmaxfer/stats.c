// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer stats - the module's counters (RDMAXFER_IOC_STATS): those of the
 * module since it was loaded ("global"), and those of the file the command
 * opened ("file": zero for a new file, shown for completeness and because
 * the JSON layout is the one other tools may reuse).
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "rdmaxfer.h"

static const struct {
	unsigned int op;
	const char *name;
} ops[] = {
	{ RDMAXFER_OP_WRITE, "write" },
	{ RDMAXFER_OP_READ, "read" },
	{ RDMAXFER_OP_SEND, "send" },
	{ RDMAXFER_OP_WRITE_IMM, "write_imm" },
	{ RDMAXFER_OP_CAS, "cas" },
	{ RDMAXFER_OP_FADD, "fadd" },
};

#define NUM_OPS (sizeof(ops) / sizeof(ops[0]))

static const struct {
	const char *name;
	size_t off;
} scalars[] = {
	{ "recv_msgs", offsetof(struct rdmaxfer_counters, recv_msgs) },
	{ "recv_bytes", offsetof(struct rdmaxfer_counters, recv_bytes) },
	{ "writes_imm_in", offsetof(struct rdmaxfer_counters, writes_imm_in) },
	{ "conns", offsetof(struct rdmaxfer_counters, conns) },
	{ "conn_errors", offsetof(struct rdmaxfer_counters, conn_errors) },
	{ "protocol_errors", offsetof(struct rdmaxfer_counters, protocol_errors) },
};

#define NUM_SCALARS (sizeof(scalars) / sizeof(scalars[0]))

static uint64_t scalar(const struct rdmaxfer_counters *c, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)c + scalars[i].off, sizeof(v));
	return v;
}

static const struct {
	const char *name;
	size_t off;
} auths[] = {
	{ "auth_ok", offsetof(struct rdmaxfer_auth_counters, auth_ok) },
	{ "auth_failed", offsetof(struct rdmaxfer_auth_counters, auth_failed) },
	{ "not_allowed", offsetof(struct rdmaxfer_auth_counters, not_allowed) },
};

#define NUM_AUTHS (sizeof(auths) / sizeof(auths[0]))

static uint64_t auth(const struct rdmaxfer_auth_counters *a, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)a + auths[i].off, sizeof(v));
	return v;
}

static void json_counters(const char *key, const struct rdmaxfer_counters *c,
			  const struct rdmaxfer_auth_counters *a)
{
	size_t i;

	json_begin_object(key);
	json_begin_object("ops");
	for (i = 0; i < NUM_OPS; i++)
		json_u64(ops[i].name, c->ops[ops[i].op]);
	json_end_object();
	json_begin_object("bytes");
	for (i = 0; i < NUM_OPS; i++)
		json_u64(ops[i].name, c->bytes[ops[i].op]);
	json_end_object();
	json_begin_object("errors");
	for (i = 0; i < NUM_OPS; i++)
		json_u64(ops[i].name, c->errors[ops[i].op]);
	json_end_object();
	for (i = 0; i < NUM_SCALARS; i++)
		json_u64(scalars[i].name, scalar(c, i));
	for (i = 0; i < NUM_AUTHS; i++)
		json_u64(auths[i].name, auth(a, i));
	json_end_object();
}

static void print_human(const struct rdmaxfer_stats *st)
{
	size_t i;

	printf("%-16s %20s %20s\n", "counter", "global", "this file");
	for (i = 0; i < NUM_OPS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%s ops", ops[i].name);
		printf("%-16s %20llu %20llu\n", name,
		       (unsigned long long)st->global.ops[ops[i].op],
		       (unsigned long long)st->file.ops[ops[i].op]);
		snprintf(name, sizeof(name), "%s bytes", ops[i].name);
		printf("%-16s %20llu %20llu\n", name,
		       (unsigned long long)st->global.bytes[ops[i].op],
		       (unsigned long long)st->file.bytes[ops[i].op]);
		snprintf(name, sizeof(name), "%s errors", ops[i].name);
		printf("%-16s %20llu %20llu\n", name,
		       (unsigned long long)st->global.errors[ops[i].op],
		       (unsigned long long)st->file.errors[ops[i].op]);
	}
	for (i = 0; i < NUM_SCALARS; i++)
		printf("%-16s %20llu %20llu\n", scalars[i].name,
		       (unsigned long long)scalar(&st->global, i),
		       (unsigned long long)scalar(&st->file, i));
	for (i = 0; i < NUM_AUTHS; i++)
		printf("%-16s %20llu %20llu\n", auths[i].name,
		       (unsigned long long)auth(&st->global_auth, i),
		       (unsigned long long)auth(&st->file_auth, i));
	printf("this file now: %llu bytes pinned, %u connections, %u buffers, %u windows\n",
	       (unsigned long long)st->pinned_bytes, st->num_conns, st->num_bufs, st->num_windows);
}

static void stats_usage(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer stats [--json]\n"
		"\n"
		"Show the module's counters since it was loaded (operations, bytes and\n"
		"errors by kind, messages, connections, who was let in) and those of this command's own\n"
		"open file (zero: shown for completeness).\n"
		"\n"
		"  --json    one JSON object on stdout\n"
		"  --help    this text\n");
}

int cmd_stats(int argc, char **argv)
{
	struct rdmaxfer_stats st;
	struct rdmaxfer_info mi;
	bool json = false;
	int fd, c;

	c = parse_json_only(argc, argv, "stats ", stats_usage, &json);
	if (c >= 0)
		return c;

	fd = cli_open_transfer(&mi);
	if (fd < 0)
		return EXIT_FAIL;
	c = rdx_stats(fd, &st);
	if (c) {
		close(fd);
		return fail("STATS failed: %s", strerror(c));
	}
	close(fd);

	if (json) {
		json_begin_object(NULL);
		json_counters("global", &st.global, &st.global_auth);
		json_counters("file", &st.file, &st.file_auth);
		json_u64("pinned_bytes", st.pinned_bytes);
		json_u64("num_conns", st.num_conns);
		json_u64("num_bufs", st.num_bufs);
		json_u64("num_windows", st.num_windows);
		json_end_object();
		json_end_document();
	} else {
		print_human(&st);
	}
	return fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
}
