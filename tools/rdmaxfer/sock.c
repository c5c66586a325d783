// SPDX-License-Identifier: GPL-2.0
/* rdmaxfer sockets baseline - being written (issue 4). */
#include "bench.h"

int sock_ping(const struct ping_opts *o, uint64_t *ns)
{
	(void)o;
	(void)ns;
	return fail("--transport tcp|udp: not built yet");
}

int sock_bench_size(const struct bench_opts *o, uint64_t size, struct bench_row *row)
{
	(void)o;
	(void)size;
	(void)row;
	return fail("--transport tcp|udp: not built yet");
}

int sock_server_start(const char *bind_addr, uint16_t port)
{
	(void)bind_addr;
	(void)port;
	return 0;
}
