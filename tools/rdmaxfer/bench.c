// SPDX-License-Identifier: GPL-2.0
/* rdmaxfer bench - being written (issue 4). */
#include "bench.h"

int cmd_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return fail("bench: not built yet");
}
