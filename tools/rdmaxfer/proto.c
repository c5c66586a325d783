// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - the wire codec of the application protocol (proto.h):
 * control messages in little-endian order, checked when decoded, and their
 * names for messages.  Clients (session.c) and the server (serve_ctl.c)
 * both use it.
 */
#include <endian.h>
#include <string.h>

#include "proto.h"

void proto_encode(struct proto_msg *w, const struct proto_msg *h)
{
	memset(w, 0, sizeof(*w));
	memcpy(w->magic, PROTO_MAGIC, PROTO_MAGIC_LEN);
	w->type = htole32(h->type);
	w->flags = htole32(h->flags);
	w->offset = htole64(h->offset);
	w->length = htole64(h->length);
	w->round_len = htole64(h->round_len);
	w->round = htole32(h->round);
	w->status = htole32(h->status);
	w->crc = htole32(h->crc);
}

int proto_looks_like_ctl(const void *buf, size_t len)
{
	return len == sizeof(struct proto_msg) && !memcmp(buf, PROTO_MAGIC, PROTO_MAGIC_LEN);
}

int proto_decode(struct proto_msg *h, const void *buf, size_t len)
{
	struct proto_msg w;

	if (!proto_looks_like_ctl(buf, len))
		return -1;
	memcpy(&w, buf, sizeof(w));
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, w.magic, PROTO_MAGIC_LEN);
	h->type = le32toh(w.type);
	h->flags = le32toh(w.flags);
	h->offset = le64toh(w.offset);
	h->length = le64toh(w.length);
	h->round_len = le64toh(w.round_len);
	h->round = le32toh(w.round);
	h->status = le32toh(w.status);
	h->crc = le32toh(w.crc);
	return 0;
}

const char *proto_type_name(uint32_t type)
{
	static const char *const names[] = {
		"?", "WRITE_BEGIN", "WRITE_READY", "ROUND_DONE", "CSUM_REQ", "CSUM",
		"SYNC", "SYNC_ACK", "ERROR", "BENCH_BEGIN", "BENCH_READY", "BENCH_END",
		"BENCH_DONE", "CPU_REQ", "CPU", "WINS_REQ", "WINS",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}
