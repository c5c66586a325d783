/* SPDX-License-Identifier: GPL-2.0 */
/* sha256 - HMAC-SHA256 for evil_peer (sha256.c). */
#ifndef RDMAXFER_SELFTEST_SHA256_H
#define RDMAXFER_SELFTEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

void hmac_sha256(const uint8_t *key, size_t klen, const uint8_t *data, size_t len,
		 uint8_t out[32]);
/* 0 if hmac_sha256() gives RFC 4231 test case 2's answer, else -1. */
int hmac_sha256_selftest(void);

#endif
