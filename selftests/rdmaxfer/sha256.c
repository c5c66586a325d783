// SPDX-License-Identifier: GPL-2.0
/*
 * sha256 - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for evil_peer,
 * which speaks the key handshake of Documentation/protocol.md from user
 * space, independently of the module's crypto API use: a second
 * implementation of the proofs, so the two are checked against each other.
 * Slow and simple; hmac_sha256_selftest() checks it against RFC 4231's
 * test case 2 before it is trusted.
 */
#include <stdint.h>
#include <string.h>

#include "sha256.h"

static const uint32_t k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

static void block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3) +
		       w[i - 7] + (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10);
	a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

/* SHA-256 of the concatenation of @n pieces. */
static void sha256v(const uint8_t *const *data, const size_t *len, int n, uint8_t out[32])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f,
			  0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	uint8_t buf[64];
	uint64_t total = 0;
	size_t fill = 0, i, j;
	int piece;

	for (piece = 0; piece < n; piece++) {
		for (j = 0; j < len[piece]; j++) {
			buf[fill++] = data[piece][j];
			if (fill == 64) {
				block(h, buf);
				fill = 0;
			}
		}
		total += len[piece];
	}
	buf[fill++] = 0x80;
	if (fill > 56) {
		memset(buf + fill, 0, 64 - fill);
		block(h, buf);
		fill = 0;
	}
	memset(buf + fill, 0, 56 - fill);
	for (i = 0; i < 8; i++)
		buf[56 + i] = (uint8_t)((total * 8) >> (56 - 8 * i));
	block(h, buf);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(h[i] >> 8);
		out[4 * i + 3] = (uint8_t)h[i];
	}
}

void hmac_sha256(const uint8_t *key, size_t klen, const uint8_t *data, size_t len,
		 uint8_t out[32])
{
	uint8_t k0[64] = { 0 }, ipad[64], opad[64], inner[32];
	const uint8_t *d[2];
	size_t l[2];
	int i;

	if (klen > 64) {
		d[0] = key;
		l[0] = klen;
		sha256v(d, l, 1, k0);
	} else {
		memcpy(k0, key, klen);
	}
	for (i = 0; i < 64; i++) {
		ipad[i] = k0[i] ^ 0x36;
		opad[i] = k0[i] ^ 0x5c;
	}
	d[0] = ipad; l[0] = 64;
	d[1] = data; l[1] = len;
	sha256v(d, l, 2, inner);
	d[0] = opad; l[0] = 64;
	d[1] = inner; l[1] = 32;
	sha256v(d, l, 2, out);
}

int hmac_sha256_selftest(void)
{
	static const uint8_t want[32] = {
		0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95,
		0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9,
		0x64, 0xec, 0x38, 0x43,
	};
	static const char data[] = "what do ya want for nothing?";
	uint8_t out[32];

	hmac_sha256((const uint8_t *)"Jefe", 4, (const uint8_t *)data, strlen(data), out);
	return memcmp(out, want, 32) ? -1 : 0;
}
