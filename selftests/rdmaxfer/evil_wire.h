/* SPDX-License-Identifier: GPL-2.0 */
/*
 * evil_wire.h - rdmaxfer's wire protocol (kmod/proto.h, Documentation/
 * protocol.md) written out by offset, all big-endian, for the test peers
 * that speak it from scratch over plain librdmacm/libibverbs (evil_peer.c,
 * evil_server.c): they must not share the module's headers, so that a
 * mistake there is not repeated here.
 */
#ifndef EVIL_WIRE_H
#define EVIL_WIRE_H

#include <stdint.h>

#define RX_MAGIC		0x52584652u
#define RX_VERSION		1
#define RX_HELLO_LEN		24
#define RX_HELLO_EXT_LEN	32	/* + features, rq_entries */
#define RX_HELLO_SLOTS		0x1u
#define RX_HELLO_PROBE		0x8u
#define RX_HELLO_AUTH		0x10u
#define RX_NONCE_LEN		16
#define RX_MAC_LEN		32
#define RX_AUTH_REQ_LEN		(RX_HELLO_EXT_LEN + RX_NONCE_LEN)
#define RX_AUTH_REP_LEN		(RX_AUTH_REQ_LEN + RX_MAC_LEN)
#define RX_MSG_AUTH		9
#define RX_REJECT_AUTH_REQUIRED	7
#define RX_HDR_LEN		8
#define RX_ADVERT_LEN		24
#define RX_SEG_LEN		16
#define RX_WRITE_DONE_LEN	24
#define RX_REVOKE_LEN		4
#define RX_MSG_CREDIT		1
#define RX_MSG_ADVERT		2
#define RX_MSG_REVOKE		3
#define RX_MSG_DATA		4
#define RX_MSG_WRITE_DONE	5
#define RX_MSG_WANT		6
#define RX_MSG_PROBE		8
#define RX_REMOTE_READ		1u
#define RX_PAGE_SIZE		4096
#define RX_MAX_SEGS		255

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

#endif /* EVIL_WIRE_H */
