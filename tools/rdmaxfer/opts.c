// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - the options several commands share, parsed in one place.
 *
 * A command parses its options with
 *
 *	common_init(&co, "serve ", serve_usage, CO_...);
 *	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0)
 *		switch (c) { its own options }
 *	if (ret >= 0)
 *		return ret;
 *
 * common_getopt() runs getopt_long() (optstring ":", opterr 0: getopt
 * prints nothing, and a missing value is told apart) over the command's
 * table and returns only the command's own options.  The rest it handles
 * itself: --port, --bind, --size, --json, --help, --key and --key-file
 * (OPTION_* entries of the table), a missing value and an unknown option; and after the last
 * option what follows them: one HOST for the clients (write, read, send,
 * ping, bench), nothing for the others.  The few ways commands differ in
 * the shared options are the CO_* flags (rdmaxfer.h): serve takes --port 0
 * as "any port" and checks --bind only after all options, the measurements
 * want a --size of at least 1.
 *
 * At the end *ret is -1 to go on, else the exit status to return: EXIT_OK
 * after --help, EXIT_USAGE after one usage error line.  A command's own
 * checks (an option's value, options that exclude each other) print their
 * usage error themselves, with the same usage_error() and command name.
 */
#include <getopt.h>
#include <string.h>

#include "rdmaxfer.h"

/* No shared option given yet, for command @cmd with help @help and CO_* @flags. */
void common_init(struct common_opts *co, const char *cmd, void (*help)(FILE *f),
		 unsigned int flags)
{
	memset(co, 0, sizeof(*co));
	co->cmd = cmd;
	co->help = help;
	co->flags = flags;
	co->port = RDMAXFER_DEFAULT_PORT;
}

/* --size, at least 1 with CO_SIZE_MIN1.  Returns -1 or EXIT_USAGE. */
static int common_size(struct common_opts *co, const char *arg)
{
	if (co->flags & CO_SIZE_MIN1) {
		if (parse_size(arg, &co->size) || !co->size)
			return usage_error(co->cmd, "bad --size '%s' (bytes, at least 1, with K, M, G suffixes)",
					   arg);
	} else if (parse_size(arg, &co->size)) {
		return usage_error(co->cmd, "bad --size '%s' (bytes, with K, M, G suffixes)", arg);
	}
	co->have_size = true;
	return -1;
}

/* A shared option, or getopt's ':' or '?'.  Returns -1, or the exit status. */
static int common_opt(struct common_opts *co, int c, char **argv)
{
	struct rdmaxfer_addr a;
	uint64_t v;

	switch (c) {
	case OPT_PORT:
		if (parse_uint(optarg, 65535, &v))
			return usage_error(co->cmd, "bad --port '%s' (0 .. 65535)", optarg);
		co->port = v || (co->flags & CO_PORT_ANY) ? (uint16_t)v : RDMAXFER_DEFAULT_PORT;
		return -1;
	case OPT_BIND:
		if (!(co->flags & CO_BIND_LATE) && parse_addr(optarg, 0, &a))
			return usage_error(co->cmd, "'%s' is not an IPv4 or IPv6 address", optarg);
		co->bind = optarg;
		return -1;
	case OPT_SIZE:
		return common_size(co, optarg);
	case OPT_JSON:
		co->json = true;
		return -1;
	case OPT_KEY:
		co->key = optarg;
		return -1;
	case OPT_KEY_FILE:
		co->key_file = optarg;
		return -1;
	case OPT_HELP:
		co->help(stdout);
		return EXIT_OK;
	case ':':
		return usage_error(co->cmd, "option '%s' needs a value", argv[optind - 1]);
	default:
		return usage_error(co->cmd, "unknown option '%s'", argv[optind - 1]);
	}
}

/* The arguments after the options.  Returns -1, or the exit status. */
static int common_args(struct common_opts *co, int argc, char **argv)
{
	struct rdmaxfer_addr a;

	if (!(co->flags & CO_HOST)) {
		if (optind < argc)
			return usage_error(co->cmd, "unexpected argument '%s'", argv[optind]);
	} else {
		if (optind >= argc && (co->flags & CO_HOST_OPT))
			goto bind;
		if (optind >= argc)
			return usage_error(co->cmd, "missing HOST (the server's IPv4 or IPv6 address)");
		if (optind + 1 < argc)
			return usage_error(co->cmd, "unexpected argument '%s'", argv[optind + 1]);
		co->host = argv[optind];
		if (parse_addr(co->host, co->port, &a))
			return usage_error(co->cmd, "'%s' is not an IPv4 or IPv6 address", co->host);
	}
bind:
	if (co->bind && (co->flags & CO_BIND_LATE) && parse_addr(co->bind, 0, &a))
		return usage_error(co->cmd, "'%s' is not an IPv4 or IPv6 address", co->bind);
	return -1;
}

/*
 * The next of the command's own options (its getopt value), or 0 when the
 * options are over or one failed: then *@ret is -1 to go on, or the exit
 * status.
 */
int common_getopt(struct common_opts *co, int argc, char **argv, const struct option *opts,
		  int *ret)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c < OPT_PORT && c != ':' && c != '?')
			return c;
		*ret = common_opt(co, c, argv);
		if (*ret >= 0)
			return 0;
	}
	*ret = common_args(co, argc, argv);
	return 0;
}

/*
 * Options of a command that takes only [--json] and --help ("info ",
 * "stats ": the name with a trailing space, for the usage hint).  Returns
 * -1 to go on, else the exit status to return.
 */
int parse_json_only(int argc, char **argv, const char *cmd, void (*usage)(FILE *f),
		    bool *json)
{
	static const struct option opts[] = {
		OPTION_JSON,
		OPTION_HELP,
		OPTION_END,
	};
	struct common_opts co;
	int ret;

	common_init(&co, cmd, usage, 0);
	while (common_getopt(&co, argc, argv, opts, &ret) > 0)
		;		/* no option of their own */
	*json = co.json;
	return ret;
}
