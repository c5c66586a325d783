// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer regbench - finding the RDMA device and its address, connecting
 * two files of /dev/rdmaxfer to each other over it (one LISTENs, the other
 * CONNECTs, the first ACCEPTs), or one to a `serve` on another host (HOST:
 * then the ADVERT of each EXPOSE is received there, as in real use, not
 * inside this process's EXPOSE as over a loopback), reaping what they
 * queue, and the PD of the ibv_reg_mr() comparison on the same device.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netpacket/packet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regbench.h"

static uint64_t settle_word;	/* what rb_settle() READs, never looked at */

/*
 * iWARP (an RNIC) is addressed by IP, but its GIDs are no IP addresses: GID
 * 0 is the MAC address of its netdev in the first 6 bytes (siw, cxgb4,
 * irdma).  The address of the netdev with that MAC: IPv4 first, then
 * global IPv6.  0, or -1 when there is none.
 */
static int iwarp_address(const uint8_t *mac, struct rdmaxfer_addr *a)
{
	struct ifaddrs *ifs, *ifa, *l;
	int found = -1, pass;

	if (getifaddrs(&ifs))
		return -1;
	for (pass = 0; pass < 2 && found < 0; pass++) {
		for (ifa = ifs; ifa && found < 0; ifa = ifa->ifa_next) {
			const struct sockaddr_ll *ll = NULL;
			const struct in6_addr *a6;

			if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != (pass ? AF_INET6 : AF_INET))
				continue;
			/* the netdev's MAC: its AF_PACKET entry */
			for (l = ifs; l && !ll; l = l->ifa_next)
				if (l->ifa_addr && l->ifa_addr->sa_family == AF_PACKET &&
				    !strcmp(l->ifa_name, ifa->ifa_name))
					ll = (const void *)l->ifa_addr;
			if (!ll || ll->sll_halen != 6 || memcmp(ll->sll_addr, mac, 6))
				continue;
			memset(a, 0, sizeof(*a));
			if (pass == 0) {
				a->family = AF_INET;
				memcpy(a->addr, &((const struct sockaddr_in *)(const void *)ifa->ifa_addr)->sin_addr, 4);
			} else {
				a6 = &((const struct sockaddr_in6 *)(const void *)ifa->ifa_addr)->sin6_addr;
				if (IN6_IS_ADDR_LINKLOCAL(a6))
					continue;
				a->family = AF_INET6;
				memcpy(a->addr, a6, 16);
			}
			found = 0;
		}
	}
	freeifaddrs(ifs);
	return found;
}

/* An address of an active port of device @index: IPv4 first, then global IPv6. */
static int port_address(int fd, uint32_t index, uint32_t port, bool iwarp, struct rdmaxfer_addr *a)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct rdmaxfer_port_info pi;
	struct rdmaxfer_gid *gids = NULL;
	int found = -1;
	uint32_t g;

	if (query_port_gids(fd, index, port, &pi, &gids) || pi.state != RDMAXFER_PORT_ACTIVE)
		goto out;
	if (iwarp) {
		if (pi.num_gids)
			found = iwarp_address(gids[0].raw, a);
		goto out;
	}
	for (g = 0; g < pi.num_gids && found < 0; g++)
		if (!memcmp(gids[g].raw, v4mapped, sizeof(v4mapped))) {
			memset(a, 0, sizeof(*a));
			a->family = AF_INET;
			memcpy(a->addr, gids[g].raw + 12, 4);
			found = 0;
		}
	for (g = 0; g < pi.num_gids && found < 0; g++)
		if (gids[g].raw[0] != 0xfe && gids[g].raw[0] != 0 && gids[g].raw[0] != 0xff) {
			memset(a, 0, sizeof(*a));
			a->family = AF_INET6;
			memcpy(a->addr, gids[g].raw, 16);
			found = 0;
		}
out:
	free(gids);
	return found;
}

/* The address of the first device (or --device) with an IP on an active port. */
static int pick_address(struct regbench *rb, const char *device)
{
	struct rdmaxfer_device_info di;
	uint32_t *idx = NULL, p;
	int n, i, ret = -1;

	n = list_device_indexes(rb->cfd, &idx);
	if (n < 0) {
		fail("LIST_DEVICES failed: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < n && ret; i++) {
		if (rdx_query_device(rb->cfd, idx[i], &di))
			continue;	/* removed meanwhile */
		if (device && strcmp(device, di.name))
			continue;
		for (p = 1; p <= di.num_ports && ret; p++)
			ret = port_address(rb->cfd, di.index, p, di.node_type == RDMAXFER_NODE_RNIC,
					   &rb->addr);
	}
	free(idx);
	if (ret && device)
		fail("RDMA device %s not found, or it has no active port with an IP address (see 'rdmaxfer info')",
		     device);
	else if (ret)
		fail("no RDMA device with an IP address on an active port (add one: 'rdma link add rxe0 type rxe netdev NETDEV' and give NETDEV an address)");
	return ret;
}

/* Connect to the serve at HOST; its window's WINDOW event is reaped later. */
static int connect_peer(struct regbench *rb, const struct rb_opts *o)
{
	uint32_t reason = 0;
	int err;

	if (parse_addr(o->host, o->port, &rb->addr))	/* checked by the parser */
		return fail("'%s' is not an IPv4 or IPv6 address", o->host);
	format_addr(&rb->addr, rb->where, sizeof(rb->where));
	err = rdx_connect_key(rb->cfd, rb->addr, RB_TIMEOUT_NS, o->key, &rb->cconn, &reason);
	if (err && o->key && key_error(err))
		return fail("cannot connect to %s with key %d: %s", rb->where, o->key,
			    key_error(err));
	if (err == ECONNREFUSED && reason && reason != RDMAXFER_REJECT_UNKNOWN)
		return fail("%s refused the connection: %s", rb->where, rdx_reject_str(reason));
	if (err == ECONNREFUSED)
		return fail("connection to %s refused: no rdmaxfer server is listening there",
			    rb->where);
	if (err)
		return fail("cannot connect to %s: %s", rb->where, strerror(err));
	return 0;
}

int rb_connect(struct regbench *rb, const struct rb_opts *o)
{
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_device_info di;
	int err;

	if (o->host) {
		if (connect_peer(rb, o))
			return -1;
		goto query;
	}
	if (o->bind) {
		if (parse_addr(o->bind, 0, &rb->addr))	/* checked by the parser */
			return fail("'%s' is not an IPv4 or IPv6 address", o->bind);
	} else if (pick_address(rb, o->device)) {
		return -1;
	}
	rb->addr.port = 0;
	err = rdx_listen(rb->sfd, rb->addr, 1, &rb->listen_id, &rb->addr.port);
	if (err) {
		format_addr(&rb->addr, rb->where, sizeof(rb->where));
		if (err == ENODEV || err == EADDRNOTAVAIL)
			return fail("cannot listen on %s: no RDMA device for that address (see 'rdma link')",
				    rb->where);
		return fail("cannot listen on %s: %s", rb->where, strerror(err));
	}
	format_addr(&rb->addr, rb->where, sizeof(rb->where));

	err = rdx_connect(rb->cfd, rb->addr, RB_TIMEOUT_NS, &rb->cconn, NULL);
	if (err)
		return fail("cannot connect to ourselves at %s: %s", rb->where, strerror(err));
	err = rdx_accept(rb->sfd, rb->listen_id, RB_TIMEOUT_NS, &rb->sconn, NULL);
	if (err)
		return fail("ACCEPT on %s failed: %s", rb->where, strerror(err));

query:
	err = rdx_query_conn(rb->cfd, rb->cconn, &ci);
	if (err)
		return fail("QUERY_CONN failed: %s", strerror(err));
	rb->max_window = ci.max_window_size;
	if (rb->info.max_window_size && rb->info.max_window_size < rb->max_window)
		rb->max_window = rb->info.max_window_size;
	rb->max_window &= ~((uint64_t)rb->page - 1);
	if (!rb->max_window)
		return fail("the connection allows no window (max_window_size %llu)",
			    (unsigned long long)ci.max_window_size);
	err = rdx_query_device(rb->cfd, ci.dev_index, &di);
	if (err)
		return fail("QUERY_DEVICE %u failed: %s", ci.dev_index, strerror(err));
	snprintf(rb->devname, sizeof(rb->devname), "%s", di.name);
	if (o->device && strcmp(o->device, rb->devname))
		return fail("%s is on device %s, not %s", rb->where, rb->devname, o->device);
	return 0;
}

int rb_open_ibv(struct regbench *rb)
{
	struct ibv_device **list;
	int i, n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return fail("libibverbs lists no devices: %s (is ib_uverbs loaded?  --no-ibv skips the comparison)",
			    strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), rb->devname))
			break;
	if (i == n) {
		ibv_free_device_list(list);
		return fail("libibverbs does not list %s (ib_uverbs not loaded or no userspace provider?  --no-ibv skips the comparison)",
			    rb->devname);
	}
	rb->ibv = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!rb->ibv)
		return fail("ibv_open_device(%s) failed: %s", rb->devname, strerror(errno));
	rb->pd = ibv_alloc_pd(rb->ibv);
	if (!rb->pd)
		return fail("ibv_alloc_pd on %s failed: %s", rb->devname, strerror(errno));
	return 0;
}

/*
 * Reap what both files (one with HOST) have queued (WINDOW,
 * WINDOW_REVOKED, CONNECTED events), without waiting; a DISCONNECTED event
 * is a failure.
 */
int rb_drain(struct regbench *rb)
{
	struct rdmaxfer_completion ev[32];
	int fds[2] = { rb->sfd, rb->cfd };
	int i, k, n;

	for (k = 0; k < 2; k++) {
		if (fds[k] < 0)
			continue;
		do {
			n = rdx_reap(fds[k], ev, 32, 0);
			if (n < 0 && n != -EINTR)
				return fail("REAP failed: %s", strerror(-n));
			for (i = 0; i < n; i++) {
				if (ev[i].opcode == RDMAXFER_EVENT_DISCONNECTED)
					return fail("the connection to %s went down: %s",
						    rb->where, status_words(ev[i].status));
				/* with HOST: the serve's window, for rb_settle() */
				if (ev[i].opcode == RDMAXFER_EVENT_WINDOW && rb->sfd < 0 &&
				    !rb->peer_win && (ev[i].flags & RDMAXFER_REMOTE_READ) &&
				    ev[i].bytes >= sizeof(settle_word))
					rb->peer_win = ev[i].window_id;
			}
		} while (n == 32 || n == -EINTR);	/* full, or interrupted: again */
	}
	return 0;
}

/*
 * With HOST, before a repetition (untimed): wait until nothing is in
 * flight on the connection.  A registration waits for every operation
 * posted before it (rdmaxfer_post_reg() in the module says why), and the
 * previous repetition's REVOKE message is acknowledged only after a round
 * trip to the other host; over the loopback that round trip happens inside
 * REVOKE.  So EXPOSE is timed on an idle connection in both cases.  An
 * 8-byte READ of the serve's window, waited for, is the fence: a send
 * queue completes in order.  Returns 0 or -1 (said).
 */
int rb_settle(struct regbench *rb)
{
	struct rdmaxfer_op op = { 0 };
	struct rdmaxfer_completion c[32];
	uint64_t deadline = now_ns() + RB_TIMEOUT_NS;
	uint32_t posted;
	int i, n, err;

	if (!rb->settle_buf) {
		err = rdx_reg_buf(rb->cfd, &settle_word, sizeof(settle_word),
				  RDMAXFER_BUF_WRITE, &rb->settle_buf);
		if (err)
			return fail("REG_BUF of 8 bytes failed: %s", strerror(err));
	}
	while (!rb->peer_win) {
		if (rb_drain(rb))
			return -1;
		if (rb->peer_win)
			break;
		if (now_ns() > deadline)
			return fail("%s advertised no window we may read within %lld s",
				    rb->where, RB_TIMEOUT_NS / 1000000000);
		usleep(1000);
	}
	op.opcode = RDMAXFER_OP_READ;
	op.conn_id = rb->cconn;
	op.buf_id = rb->settle_buf;
	op.window_id = rb->peer_win;
	op.length = sizeof(settle_word);
	op.user_data = 1;
	err = rdx_submit(rb->cfd, &op, 1, &posted);
	if (err)
		return fail("SUBMIT of a READ from %s failed: %s", rb->where, strerror(err));
	for (;;) {
		n = rdx_reap(rb->cfd, c, 32, RB_TIMEOUT_NS);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return fail("REAP failed: %s", strerror(-n));
		if (!n)
			return fail("a READ from %s did not complete within %lld s", rb->where,
				    RB_TIMEOUT_NS / 1000000000);
		for (i = 0; i < n; i++) {
			if (c[i].opcode == RDMAXFER_EVENT_DISCONNECTED)
				return fail("the connection to %s went down: %s", rb->where,
					    status_words(c[i].status));
			if (c[i].user_data != 1)
				continue;	/* other events: nothing to do */
			if (c[i].status)
				return fail("a READ from %s failed: %s", rb->where,
					    status_words(c[i].status));
			return 0;
		}
	}
}
