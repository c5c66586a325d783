// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer serve - connections: accepting what the listeners queued
 * (--count, --max-per-host: a host past it is refused at once), exposing
 * the shared window to each (a device that cannot register --size is said
 * once) and more windows of it when a client asks (WINS_REQ), and
 * finishing one: saving what a client wrote without WRITE_BEGIN,
 * the summary line, CLOSE (which revokes its window).  See serve.c for the
 * whole server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "serve.h"

/* --- connections ------------------------------------------------------ */

struct sconn *find_conn(struct server *srv, uint32_t id)
{
	unsigned int i;

	for (i = 0; id && i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id == id)
			return &srv->conns[i];
	return NULL;
}

static void close_id(struct server *srv, uint32_t id)
{
	rdx_close(srv->fd, id);
}

/* Close a connection on our side (its error was printed) and finish it. */
void drop_conn(struct server *srv, struct sconn *sc)
{
	sc->dropped = true;
	srv->errors++;
	finish_conn(srv, sc, 0);
}

/* Fill the window from --in.  Returns 0 or an errno. */
int preload(struct server *srv, unsigned char *win)
{
	uint64_t pos = 0;
	int fd, err = 0;

	fd = open(srv->in_name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	while (pos < srv->size) {
		ssize_t n = pread(fd, win + pos, srv->size - pos, (off_t)pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		pos += (uint64_t)n;
	}
	close(fd);
	return err;
}

/*
 * EXPOSE failed with EINVAL: if the window is more than the connection's
 * device can register, say so (the long form once).  Returns true if it was.
 */
static bool window_too_big(struct server *srv, struct sconn *sc)
{
	struct rdmaxfer_conn_info ci;
	struct rdmaxfer_device_info di;
	char sz[48], mx[48], dev[RDMAXFER_NAME_LEN + 8] = "";

	if (rdx_query_conn(srv->fd, sc->id, &ci) || srv->size <= ci.max_window_size)
		return false;
	if (!rdx_query_device(srv->fd, ci.dev_index, &di) && di.name[0])
		snprintf(dev, sizeof(dev), "%.*s takes ", RDMAXFER_NAME_LEN - 1, di.name);
	format_bytes(srv->size, sz, sizeof(sz));
	format_bytes(ci.max_window_size, mx, sizeof(mx));
	if (!srv->exposed) {
		/* no client can be served: stop now, in one line */
		fail("a window of %s is more than the RDMA device can register: %sat most %s; start serve with a smaller --size",
		     sz, dev, mx);
		srv->fatal = true;
	} else if (!srv->too_big_told) {
		warnx_("connection %llu from %s: a window of %s is more than the RDMA device can register: %sat most %s; dropped (a smaller --size would serve it)",
		       (unsigned long long)sc->num, sc->peer, sz, dev, mx);
	} else {
		warnx_("connection %llu from %s: the window is more than the RDMA device can register: dropped",
		       (unsigned long long)sc->num, sc->peer);
	}
	srv->too_big_told = true;
	return true;
}

/* Set up a newly accepted connection: expose the shared window to it. */
static void setup_conn(struct server *srv, struct sconn *sc, uint32_t id,
		       const struct rdmaxfer_addr *peer)
{
	uint32_t access;
	int err;

	memset(sc, 0, sizeof(*sc));
	sc->id = id;
	sc->num = ++srv->accepted;
	sc->start = now_sec();
	format_addr(peer, sc->peer, sizeof(sc->peer));
	sc->peer_addr = *peer;
	srv->nactive++;

	access = RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE;
	if (srv->atomic)
		access |= RDMAXFER_REMOTE_ATOMIC;
	err = rdx_expose(srv->fd, id, srv->buf_id, 0, srv->size, access, &sc->window_id);
	if (err == EOPNOTSUPP && srv->atomic) {
		/* that device has no RDMA atomics: the window without them */
		if (!srv->no_atomic_told)
			warnx_("connection %llu from %s: its RDMA device has no atomics; its window does not allow them (--atomic)",
			       (unsigned long long)sc->num, sc->peer);
		srv->no_atomic_told = true;
		access &= ~RDMAXFER_REMOTE_ATOMIC;
		err = rdx_expose(srv->fd, id, srv->buf_id, 0, srv->size, access, &sc->window_id);
	}
	if (!err) {
		sc->window_access = access;
		srv->exposed++;
		return;
	}
	/* the client sees the connection close; we carry on */
	if (err == ENOTCONN || err == ECONNRESET) {
		/* the client went away already */
		finish_conn(srv, sc, -ECONNRESET);
		return;
	}
	if (err != EINVAL || !window_too_big(srv, sc))
		warnx_("connection %llu from %s: exposing the window failed: %s",
		       (unsigned long long)sc->num, sc->peer, strerror(err));
	drop_conn(srv, sc);
}

/*
 * WINS_REQ: replace the connection's window by @n windows of the shared
 * buffer, window i over [i*W/n, (i+1)*W/n), and say in @r how many and how
 * long it took.
 * An EXPOSE waits for the client's credit, which comes back as the client
 * reaps the ADVERTs: one that does not would block the one event loop, so,
 * as for echoes, each EXPOSE is interrupted after ECHO_STALL_S seconds and
 * such a client is dropped.  Returns false when it was (no answer then).
 */
bool expose_more(struct server *srv, struct sconn *sc, uint64_t n, struct proto_msg *r)
{
	struct itimerval arm = { .it_value = { .tv_sec = ECHO_STALL_S } }, off = { 0 };
	double t0 = now_sec();
	uint64_t i, start, end;
	uint32_t id;
	int err = 0;

	r->type = PROTO_WINS;
	if (!n || n > PROTO_MAX_WINS || srv->size / n < 4096) {
		r->status = EINVAL;
		return true;
	}
	if (sc->more_wins) {
		r->status = EBUSY;
		return true;
	}
	if (srv->more_wins + n > SERVE_MORE_WINS) {
		r->status = ENOSPC;
		return true;
	}
	/* make room: a connection carries at most PROTO_MAX_WINS */
	if (sc->window_id && !rdx_revoke(srv->fd, sc->window_id))
		sc->window_id = 0;
	for (i = 0; i < n && !err; i++) {
		start = i * srv->size / n;
		end = (i + 1) * srv->size / n;
		setitimer(ITIMER_REAL, &arm, NULL);
		err = rdx_expose(srv->fd, sc->id, srv->buf_id, start, end - start,
				 sc->window_access, &id);
		setitimer(ITIMER_REAL, &off, NULL);
		if (!err) {
			sc->more_wins++;
			srv->more_wins++;
		}
	}
	if (err == EINTR) {
		warnx_("connection %llu from %s does not take its windows (%u of %llu exposed, then none for %d s): dropped",
		       (unsigned long long)sc->num, sc->peer, sc->more_wins, (unsigned long long)n,
		       ECHO_STALL_S);
		drop_conn(srv, sc);
		return false;
	}
	r->status = (uint32_t)err;
	r->length = sc->more_wins;
	r->offset = (uint64_t)((now_sec() - t0) * 1e6);
	return true;
}

/* The connection is over: save what the client wrote, report, close. */
void finish_conn(struct server *srv, struct sconn *sc, int status)
{
	char how[160] = "";

	if (srv->out_fd >= 0 && !sc->saved && sc->highest) {
		if (out_truncate(srv) || out_write(srv, srv->win, sc->highest, 0))
			out_error(srv, "saving to");
	}
	if (sc->dropped) {
		snprintf(how, sizeof(how), ", dropped");
	} else if (sc->session && sc->s_done < sc->s_total) {
		snprintf(how, sizeof(how), ", ended in the middle of a write (%llu of %llu bytes): %s",
			 (unsigned long long)sc->s_done, (unsigned long long)sc->s_total,
			 status_words(status));
		srv->errors++;
	} else if (status && status != -ECONNRESET) {
		/* ECONNRESET: the client closed (or died), the normal end */
		snprintf(how, sizeof(how), ", ended: %s", status_words(status));
		srv->errors++;
	}
	if (sc->bench_msgs) {
		size_t l = strlen(how);

		snprintf(how + l, sizeof(how) - l, ", %llu bench message%s",
			 (unsigned long long)sc->bench_msgs, sc->bench_msgs == 1 ? "" : "s");
	}
	say(srv, "connection %llu from %s: wrote %llu bytes in %llu round%s, %llu message%s (%llu bytes), %.3f s%s",
	    (unsigned long long)sc->num, sc->peer, (unsigned long long)sc->written,
	    (unsigned long long)sc->rounds, sc->rounds == 1 ? "" : "s",
	    (unsigned long long)sc->msgs, sc->msgs == 1 ? "" : "s",
	    (unsigned long long)sc->msg_bytes, now_sec() - sc->start, how);
	close_id(srv, sc->id);		/* revokes its window; the buffer stays */
	slots_free(srv, sc);
	srv->more_wins -= sc->more_wins;	/* closing revoked them */
	sc->id = 0;
	srv->nactive--;
	srv->accept_cap = 0;	/* accept_all() tries the module's limit again */
	srv->finished++;
}

/* Do a and b name the same host (port aside; an IPv4-mapped IPv6 address is IPv4)? */
static bool same_host(const struct rdmaxfer_addr *a, const struct rdmaxfer_addr *b)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *pa = a->addr, *pb = b->addr;
	bool v4a = a->family == AF_INET, v4b = b->family == AF_INET;

	if (!v4a && !memcmp(pa, mapped, sizeof(mapped))) {
		pa += 12;
		v4a = true;
	}
	if (!v4b && !memcmp(pb, mapped, sizeof(mapped))) {
		pb += 12;
		v4b = true;
	}
	if (v4a != v4b)
		return false;
	if (v4a)
		return !memcmp(pa, pb, 4);
	return !memcmp(pa, pb, 16) && a->scope_id == b->scope_id;
}

/*
 * Does the host of peer hold --max-per-host connections already?  Then the
 * new one is closed at once: the client sees it go down after it came up.
 */
static bool host_full(struct server *srv, uint32_t id, const struct rdmaxfer_addr *peer)
{
	unsigned int i, n = 0;
	char who[96];

	for (i = 0; i < SERVE_MAX_CONNS; i++)
		if (srv->conns[i].id && same_host(&srv->conns[i].peer_addr, peer))
			n++;
	if (n < srv->max_per_host)
		return false;
	srv->refused++;
	format_addr(peer, who, sizeof(who));
	/* one line for the first refusal of a burst, not one per connection */
	if (srv->refused == 1 || now_sec() - srv->refused_said >= 1.0) {
		warnx_("connection from %s refused: that host has %u connections already (--max-per-host); %llu refused so far",
		       who, n, (unsigned long long)srv->refused);
		srv->refused_said = now_sec();
	}
	close_id(srv, id);
	return true;
}

/*
 * Accept what the listeners have queued, as far as --count, SERVE_MAX_CONNS
 * and the module's max_conns_per_file (or max_conns_per_user) allow: past
 * the module's limit ACCEPT says EMFILE, and serve takes no more until one
 * of its connections ends (then it tries again: the limit may have been
 * raised); the clients wait in the listener's backlog meanwhile.
 */
void accept_all(struct server *srv)
{
	struct rdmaxfer_addr peer;
	unsigned int i, l;
	uint32_t id;
	int err;

	for (l = 0; l < srv->nlisten; l++) {
		while (l < srv->nlisten && srv->nactive < SERVE_MAX_CONNS &&
		       (!srv->accept_cap || srv->nactive < srv->accept_cap) && !srv->fatal) {
			err = rdx_accept(srv->fd, srv->listen_ids[l], 0, &id, &peer);
			if (err == EMFILE) {
				srv->accept_cap = srv->nactive;
				if (!srv->emfile_told)
					warnx_("%u connections are all the rdmaxfer module lets this file have "
					       "(its parameters max_conns_per_file and max_conns_per_user): "
					       "more clients wait until one ends", srv->nactive);
				srv->emfile_told = true;
				break;
			}
			if (err) {
				if (err != EAGAIN && err != EINTR)
					warnx_("ACCEPT failed: %s", strerror(err));
				break;
			}
			if (host_full(srv, id, &peer))
				continue;
			for (i = 0; i < SERVE_MAX_CONNS && srv->conns[i].id; i++)
				;
			setup_conn(srv, &srv->conns[i], id, &peer);
			if (srv->conns[i].id == id)
				handle_recv(srv, &srv->conns[i]);	/* messages sent before the accept */
			if (srv->count && srv->accepted >= srv->count) {
				/* later clients are refused */
				while (srv->nlisten)
					close_id(srv, srv->listen_ids[--srv->nlisten]);
			}
		}
	}
}
