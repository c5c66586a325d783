// SPDX-License-Identifier: GPL-2.0
/* rdmaxfer ping - being written (issue 4). */
#include "bench.h"

int cmd_ping(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return fail("ping: not built yet");
}
