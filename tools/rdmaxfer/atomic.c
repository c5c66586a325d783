// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer atomic - one RDMA atomic on the window of `rdmaxfer serve --atomic`.
 *
 * atomic HOST --op fadd [--add N] [--offset O]
 * atomic HOST --op cas --compare C --swap S [--offset O]
 *	Connects, waits for the server's window (which must allow REMOTE_ATOMIC:
 *	serve --atomic, on a device with atomics), and posts one 8-byte
 *	fetch-and-add or compare-and-swap at window offset O (a multiple of 8;
 *	the adapter does it on the server's memory, its CPU takes no part).
 *	Prints the value before the operation, and the value after (for cas:
 *	whether it swapped).  Values are unsigned 64-bit, decimal or 0x hex; the
 *	window holds them in the server's byte order (little-endian on x86).
 *	--add takes a negative number too (added modulo 2^64).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

enum { OPT_OP = 'o', OPT_OFFSET = 'f', OPT_ADD = 'a', OPT_COMPARE = 'c', OPT_SWAP = 's' };

struct atomic_opts {
	struct common_opts co;	/* HOST, --port, --json */
	uint16_t opcode;	/* RDMAXFER_OP_FADD or _CAS, 0: not given */
	uint64_t offset;
	uint64_t add, compare, swap;
	bool have_add, have_compare, have_swap;
	int32_t key;		/* --key, --key-file: its serial; 0: none */
};

static void atomic_help(FILE *f)
{
	fprintf(f,
		"usage: rdmaxfer atomic HOST [--port N] --op fadd [--add N] [--offset BYTES]\n"
		"                            [--key KEY] [--json]\n"
		"       rdmaxfer atomic HOST [--port N] --op cas --compare N --swap N\n"
		"                            [--offset BYTES] [--key KEY] [--json]\n"
		"\n"
		"One 8-byte RDMA atomic on the window of 'rdmaxfer serve --atomic' at HOST,\n"
		"done by the adapters without the server's CPU; prints the value before it.\n"
		"\n"
		"  --port N          server port (default %u)\n"
		"  --key KEY         prove the key KEY (a keyring serial or description) to the server\n"
		"  --key-file F      the same with the key in file F (16 to 256 bytes)\n"
		"  --op fadd|cas     fetch-and-add, or compare-and-swap\n"
		"  --offset BYTES    where in the window (a multiple of 8; default 0)\n"
		"  --add N           fadd: the value added (default 1; negative: subtracted)\n"
		"  --compare N       cas: the value expected there\n"
		"  --swap N          cas: the value stored if it is there\n"
		"  --json            one JSON object on stdout\n"
		"\n"
		"Values are unsigned 64-bit numbers, decimal or 0x hex, in the server's byte\n"
		"order in its window.\n",
		RDMAXFER_DEFAULT_PORT);
}

/* An unsigned 64-bit value, decimal or 0x hex; @neg: "-N" too (2^64 - N). */
static int parse_value(const char *s, bool neg, uint64_t *v)
{
	bool minus = neg && *s == '-';
	unsigned long long x;
	char *end;

	if (minus)
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*v = minus ? -(uint64_t)x : x;
	return 0;
}

/* Returns -1 when parsed, else an exit code. */
static int parse_atomic(int argc, char **argv, struct atomic_opts *o)
{
	static const struct option opts[] = {
		OPTION_PORT,
		{ "op", required_argument, NULL, OPT_OP },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "add", required_argument, NULL, OPT_ADD },
		{ "compare", required_argument, NULL, OPT_COMPARE },
		{ "swap", required_argument, NULL, OPT_SWAP },
		OPTION_KEY,
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->add = 1;
	common_init(&o->co, "atomic ", atomic_help, CO_HOST);
	while ((c = common_getopt(&o->co, argc, argv, opts, &ret)) > 0) {
		switch (c) {
		case OPT_OP:
			if (!strcmp(optarg, "fadd"))
				o->opcode = RDMAXFER_OP_FADD;
			else if (!strcmp(optarg, "cas"))
				o->opcode = RDMAXFER_OP_CAS;
			else
				return usage_error("atomic ", "bad --op '%s' (fadd or cas)", optarg);
			break;
		case OPT_OFFSET:
			if (parse_size(optarg, &o->offset) || o->offset % 8)
				return usage_error("atomic ", "bad --offset '%s' (bytes, a multiple of 8)",
						   optarg);
			break;
		case OPT_ADD:
			if (parse_value(optarg, true, &o->add))
				return usage_error("atomic ", "bad --add '%s' (a 64-bit number)", optarg);
			o->have_add = true;
			break;
		case OPT_COMPARE:
			if (parse_value(optarg, false, &o->compare))
				return usage_error("atomic ", "bad --compare '%s' (an unsigned 64-bit number)",
						   optarg);
			o->have_compare = true;
			break;
		case OPT_SWAP:
			if (parse_value(optarg, false, &o->swap))
				return usage_error("atomic ", "bad --swap '%s' (an unsigned 64-bit number)",
						   optarg);
			o->have_swap = true;
			break;
		}
	}
	if (ret >= 0)
		return ret;
	if (!o->opcode)
		return usage_error("atomic ", "missing --op (fadd or cas)");
	if (o->opcode == RDMAXFER_OP_CAS && (!o->have_compare || !o->have_swap || o->have_add))
		return usage_error("atomic ", "--op cas takes --compare and --swap (not --add)");
	if (o->opcode == RDMAXFER_OP_FADD && (o->have_compare || o->have_swap))
		return usage_error("atomic ", "--op fadd takes --add (not --compare or --swap)");
	return key_resolve(&o->co, &o->key);
}

int cmd_atomic(int argc, char **argv)
{
	struct session s = { .fd = -1 };
	struct atomic_opts o;
	bool cas, swapped;
	uint64_t old, now;
	int ret;

	ret = parse_atomic(argc, argv, &o);
	if (ret >= 0)
		return ret;
	cas = o.opcode == RDMAXFER_OP_CAS;
	ret = EXIT_FAIL;
	if (session_open(&s, o.co.host, o.co.port, o.key) ||
	    session_wait_window(&s, RDMAXFER_REMOTE_ATOMIC))
		goto out;
	if (o.offset > s.window_len || s.window_len - o.offset < 8) {
		fail("offset %llu is past the last 8 bytes of the window of %s (%llu bytes)",
		     (unsigned long long)o.offset, s.peer, (unsigned long long)s.window_len);
		goto out;
	}
	if (session_atomic(&s, o.opcode, o.offset, cas ? o.compare : o.add, o.swap, &old))
		goto out;
	swapped = cas && old == o.compare;
	now = cas ? (swapped ? o.swap : old) : old + o.add;
	if (o.co.json) {
		json_begin_object(NULL);
		json_string("op", cas ? "cas" : "fadd");
		json_string("host", o.co.host);
		json_u64("port", o.co.port);
		json_u64("offset", o.offset);
		json_u64("old", old);
		json_u64("new", now);
		if (cas)
			json_bool("swapped", swapped);
		json_end_object();
		json_end_document();
	} else if (cas) {
		printf("cas at offset %llu: old %llu (0x%llx), %s\n", (unsigned long long)o.offset,
		       (unsigned long long)old, (unsigned long long)old,
		       swapped ? "swapped" : "not swapped");
	} else {
		printf("fadd at offset %llu: old %llu (0x%llx), new %llu\n",
		       (unsigned long long)o.offset, (unsigned long long)old,
		       (unsigned long long)old, (unsigned long long)now);
	}
	ret = fflush(stdout) ? fail("writing output failed: %s", strerror(errno)) : EXIT_OK;
out:
	session_close(&s);
	return ret;
}
