// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - command-line front end of the rdmaxfer kernel module.
 *
 * Usage: rdmaxfer COMMAND [OPTIONS]; see usage() and Documentation/cli.md.
 */
#include <string.h>
#include <unistd.h>

#include "rdmaxfer.h"
#include "measure.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "info", cmd_info, "show the module and the RDMA devices it sees" },
	{ "serve", cmd_serve, "serve write, read and send clients from a window" },
	{ "write", cmd_write, "RDMA WRITE a file or a pattern into a server's window" },
	{ "read", cmd_read, "RDMA READ from a server's window into a file or stdout" },
	{ "send", cmd_send, "SEND a message or a file to a server, which prints it" },
	{ "atomic", cmd_atomic, "one RDMA atomic (fadd, cas) on a server's window" },
	{ "ping", cmd_ping, "measure round-trip latency to a server (RDMA, TCP or UDP)" },
	{ "bench", cmd_bench, "measure bandwidth and message rate to a server" },
	{ "regbench", cmd_regbench, "measure memory registration cost, kernel vs ibv_reg_mr" },
	{ "stats", cmd_stats, "show the module's operation counters" },
};

#define NUM_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: rdmaxfer COMMAND [OPTIONS]\n"
		"       rdmaxfer --version | --help\n"
		"\n"
		"Commands:\n");
	for (i = 0; i < NUM_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f,
		"\n"
		"'rdmaxfer COMMAND --help' describes a command.  Exit status: 0 success,\n"
		"1 failure, 2 usage error.  The module must be loaded (/dev/rdmaxfer).\n");
}

static int version(void)
{
	struct rdmaxfer_info mi;
	int fd;

	printf("rdmaxfer %s (ABI %u)\n", CLI_VERSION, RDMAXFER_ABI_VERSION);
	fd = cli_open();
	if (fd < 0)
		return EXIT_FAIL;
	if (cli_get_info(fd, &mi)) {
		close(fd);
		return EXIT_FAIL;
	}
	printf("module %s (ABI %u)\n", mi.version, mi.abi_version);
	close(fd);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return version();
	for (i = 0; i < NUM_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return usage_error(NULL, "unknown option '%s'", argv[1]);
	return usage_error(NULL, "unknown command '%s'", argv[1]);
}
