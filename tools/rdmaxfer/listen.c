// SPDX-License-Identifier: GPL-2.0
/*
 * Where a server listens: what LISTEN's errors mean to a user, and the
 * wildcard on iWARP.
 *
 * On RoCE and InfiniBand one LISTEN on "::" takes IPv4 and IPv6 clients.
 * rdma_cm's iWARP path cannot: iw_conn_req_handler() looks the v4-mapped
 * local address of an IPv4 client up as an IPv6 address, finds none and
 * rejects the connection (the client hears "refused"), and "::" next to
 * "0.0.0.0" on one port is a conflict there (the port is the RNIC's TCP
 * port).  Listeners on single addresses of either family do not collide,
 * so where a device is iWARP `serve` without --bind listens on each address
 * of the host instead (listen_each_address()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "rdmaxfer.h"

int listen_failed(const char *addr, uint16_t port, int err)
{
	static const uint8_t zero[16];
	struct rdmaxfer_addr any;

	/*
	 * rdma_cm reports a port in use as EADDRNOTAVAIL when the id
	 * reuses addresses (a bind conflict is found at listen time)
	 */
	if (err == EADDRNOTAVAIL && parse_addr(addr, 0, &any) == 0 &&
	    !memcmp(any.addr, zero, sizeof(zero)))
		err = EADDRINUSE;
	if (key_error(err))
		return fail("cannot listen with that key: %s", key_error(err));
	switch (err) {
	case EADDRINUSE:
		return fail("cannot listen on %s port %u: the port is in use (another rdmaxfer serve?)",
			    addr, port);
	case EADDRNOTAVAIL:
		return fail("cannot listen on %s port %u: the address is not on this host, or the port is in use",
			    addr, port);
	case ENODEV:
		return fail("cannot listen on %s: no RDMA device for that address (see 'rdma link')",
			    addr);
	default:
		return fail("cannot listen on %s port %u: %s", addr, port, strerror(err));
	}
}

bool have_iwarp(int fd)
{
	struct rdmaxfer_device_info di;
	uint32_t idx[64], n = 0, i;

	if (rdx_list_devices(fd, idx, 64, &n))
		return false;
	for (i = 0; i < n && i < 64; i++)
		if (!rdx_query_device(fd, idx[i], &di) && di.node_type == RDMAXFER_NODE_RNIC)
			return true;
	return false;
}

/* @ifa's address as a LISTEN address (port 0); false for one not to listen on */
static bool listen_address(const struct ifaddrs *ifa, struct rdmaxfer_addr *la)
{
	const struct sockaddr *sa = ifa->ifa_addr;
	const struct in6_addr *a6;

	if (!sa || (ifa->ifa_flags & (IFF_LOOPBACK | IFF_UP)) != IFF_UP)
		return false;
	memset(la, 0, sizeof(*la));
	switch (sa->sa_family) {
	case AF_INET:
		la->family = AF_INET;
		memcpy(la->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	case AF_INET6:
		a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LINKLOCAL(a6) || IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_V4MAPPED(a6))
			return false;
		la->family = AF_INET6;
		memcpy(la->addr, a6, 16);
		return true;
	default:
		return false;
	}
}

int listen_each_address(int fd, const struct admit *ad, uint16_t *port,
			uint32_t ids[LISTEN_MAX_ADDRS], unsigned int *n, char *where, size_t len)
{
	struct rdmaxfer_addr done[LISTEN_MAX_ADDRS], la;
	char host[INET6_ADDRSTRLEN];
	struct ifaddrs *ifs, *ifa;
	size_t used = 0;
	unsigned int i;
	int err;

	*n = 0;
	if (getifaddrs(&ifs))
		return -1;
	where[0] = 0;
	for (ifa = ifs; ifa && *n < LISTEN_MAX_ADDRS; ifa = ifa->ifa_next) {
		if (!listen_address(ifa, &la))
			continue;
		for (i = 0; i < *n; i++)
			if (done[i].family == la.family && !memcmp(done[i].addr, la.addr, 16))
				break;
		if (i < *n)
			continue;	/* an address on two netdevs */
		if (!inet_ntop(la.family, la.addr, host, sizeof(host)))
			continue;
		la.port = *port;
		err = rdx_listen_auth(fd, la, 0, ad->key, ad->allow, ad->nallow, &ids[*n], port);
		if (err == ENODEV || err == EADDRNOTAVAIL)
			continue;	/* no RDMA device there */
		if (err) {
			freeifaddrs(ifs);
			return listen_failed(host, *port, err);
		}
		done[(*n)++] = la;
		/* "A, B, ..." as long as it fits, then "..." */
		if (used + strlen(host) + 8 < len - 96)
			used += snprintf(where + used, len - used, "%s%s", used ? ", " : "", host);
		else if (!strstr(where, ", ..."))
			used += snprintf(where + used, len - used, ", ...");
	}
	freeifaddrs(ifs);
	if (!*n)
		return -1;
	snprintf(where + used, len - used,
		 " port %u (every address with an RDMA device: over iWARP, '::' would take no IPv4 client)",
		 *port);
	return 0;
}
