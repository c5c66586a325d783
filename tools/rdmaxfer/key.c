// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - who may connect: --key, --key-file and serve's --allow.
 *
 * The module takes keys from the kernel keyring by serial number (see
 * Documentation/security.md).  --key names one the way keyctl(1) users
 * know: a serial number ("123456789", as `keyctl add` prints it), or a
 * description searched for in the caller's keyrings as a "logon" key,
 * then as a "user" key ("rdmaxfer:lab1", added with `keyctl add logon
 * rdmaxfer:lab1 "$(cat secret)" @u`).  --key-file loads a file's bytes
 * (16 to 256) as a logon key into this process's keyring, which goes away
 * with the process: nothing is left in the keyring afterwards, and the
 * bytes are never printed.
 *
 * The keyring calls are raw syscalls (add_key(2), request_key(2)): no
 * libkeyutils needed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/keyctl.h>

#include "rdmaxfer.h"

/* The serial of the key --key names: a number, or a logon or user key's description. */
static int key_by_name(const char *cmd, const char *name, int32_t *serial)
{
	static const char *const types[] = { "logon", "user" };
	uint64_t v;
	long r = -1;
	size_t i;

	if (!parse_uint(name, INT32_MAX, &v) && v) {
		*serial = (int32_t)v;
		return -1;
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]) && r < 0; i++)
		r = syscall(__NR_request_key, types[i], name, NULL, 0);
	if (r < 0)
		return usage_error(cmd, "--key '%s': no such logon or user key in your keyrings (%s; see 'keyctl show')",
				   name, strerror(errno));
	*serial = (int32_t)r;
	return -1;
}

/* Load --key-file's bytes as a logon key of this process. */
static int key_from_file(const char *path, int32_t *serial)
{
	unsigned char buf[RDMAXFER_KEY_MAX + 1];
	ssize_t n, len = 0;
	long r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("cannot open --key-file %s: %s", path, strerror(errno));
	while (len < (ssize_t)sizeof(buf) &&
	       (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return fail("cannot read --key-file %s: %s", path, strerror(errno));
		}
		len += n;
	}
	close(fd);
	if (len < RDMAXFER_KEY_MIN || len > RDMAXFER_KEY_MAX) {
		explicit_bzero(buf, sizeof(buf));
		return fail("--key-file %s: a key is %d to %d bytes, the file has %s%zd (e.g. 'head -c 32 /dev/urandom > FILE')",
			    path, RDMAXFER_KEY_MIN, RDMAXFER_KEY_MAX,
			    len > RDMAXFER_KEY_MAX ? "more than " : "", len > RDMAXFER_KEY_MAX ?
			    (ssize_t)RDMAXFER_KEY_MAX : len);
	}
	r = syscall(__NR_add_key, "logon", "rdmaxfer:key-file", buf, (size_t)len,
		    KEY_SPEC_PROCESS_KEYRING);
	explicit_bzero(buf, sizeof(buf));
	if (r < 0)
		return fail("cannot load --key-file %s into the keyring: %s", path, strerror(errno));
	*serial = (int32_t)r;
	return -1;
}

int key_resolve(const struct common_opts *co, int32_t *serial)
{
	*serial = 0;
	if (co->key && co->key_file)
		return usage_error(co->cmd, "--key and --key-file exclude each other");
	if (co->key)
		return key_by_name(co->cmd, co->key, serial);
	if (co->key_file)
		return key_from_file(co->key_file, serial);
	return -1;
}

const char *key_error(int err)
{
	switch (err) {
	case ENOKEY:
		return "no such key, or not one you may search for (see 'keyctl show')";
	case EACCES:
		return "you may not use that key (its permissions)";
	case EKEYREVOKED:
		return "the key was revoked";
	case EKEYEXPIRED:
		return "the key has expired";
	case EKEYREJECTED:
		return "not a logon or user key of 16 to 256 bytes";
	default:
		return NULL;
	}
}

int parse_prefix(const char *cmd, const char *s, struct rdmaxfer_prefix *p)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash;
	unsigned int bits, b;
	uint64_t v;

	memset(p, 0, sizeof(*p));
	if (strlen(s) >= sizeof(buf))
		return usage_error(cmd, "bad --allow '%s' (ADDR[/BITS], IPv4 or IPv6)", s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = 0;
	if (inet_pton(AF_INET, buf, p->addr) == 1)
		p->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, p->addr) == 1)
		p->family = AF_INET6;
	else
		return usage_error(cmd, "bad --allow '%s' (ADDR[/BITS], IPv4 or IPv6)", s);
	bits = p->family == AF_INET ? 32 : 128;
	if (slash) {
		if (parse_uint(slash, bits, &v))
			return usage_error(cmd, "bad --allow '%s': the prefix length is 0 .. %u", s,
					   bits);
		bits = (unsigned int)v;
	}
	p->prefix_len = (uint8_t)bits;
	for (b = bits; b < 128; b++)
		if (p->addr[b / 8] & (0x80 >> (b % 8)))
			return usage_error(cmd, "bad --allow '%s': address bits set past /%u", s, bits);
	return -1;
}
