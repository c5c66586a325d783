// SPDX-License-Identifier: GPL-2.0
/* rdmaxfer regbench - being written (issue 4). */
#include "bench.h"

int cmd_regbench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return fail("regbench: not built yet");
}
