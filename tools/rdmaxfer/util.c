// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - errors, the device file, parsing of sizes and addresses,
 * and a small JSON writer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmaxfer.h"

static void vmsg(const char *fmt, va_list ap)
{
	fputs("rdmaxfer: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void warnx_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

/* Print one error line and return EXIT_FAIL. */
int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	return EXIT_FAIL;
}

/* Print one usage error line (with a hint) and return EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("rdmaxfer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'rdmaxfer %s--help')\n", cmd ? cmd : "");
	return EXIT_USAGE;
}

/*
 * Open /dev/rdmaxfer.  On failure print why, in words a user can act on,
 * and return -1.
 */
int cli_open(void)
{
	const char *path = RDX_DEVPATH;
	int fd = rdx_open(O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	switch (errno) {
	case ENOENT:
	case ENXIO:
	case ENODEV:
		warnx_("%s not found: the rdmaxfer module is not loaded (load it with 'modprobe rdmaxfer' or 'insmod kmod/rdmaxfer.ko')",
		       path);
		break;
	case EACCES:
	case EPERM:
		warnx_("%s: permission denied (the device is root-only, mode 0600: run as root or grant a group with a udev rule, see README)",
		       path);
		break;
	default:
		warnx_("cannot open %s: %s", path, strerror(errno));
	}
	return -1;
}

/* GET_INFO, checking that the module speaks our ABI. */
int cli_get_info(int fd, struct rdmaxfer_info *info)
{
	if (rdx_get_info(fd, info)) {
		warnx_("GET_INFO failed: %s", strerror(errno));
		return -1;
	}
	if (info->abi_version != RDMAXFER_ABI_VERSION) {
		warnx_("the loaded module speaks ABI %u, this CLI ABI %u: use the CLI built with the module",
		       info->abi_version, RDMAXFER_ABI_VERSION);
		return -1;
	}
	return 0;
}

/* GET_INFO and a check that the module has the transfer ioctls. */
int cli_open_transfer(struct rdmaxfer_info *info)
{
	int fd = cli_open();

	if (fd < 0)
		return -1;
	if (cli_get_info(fd, info)) {
		close(fd);
		return -1;
	}
	if (!(info->features & RDMAXFER_FEATURE_TRANSFER)) {
		warnx_("the loaded module (%s) has no transfer support (feature 'transfer'): load a newer rdmaxfer.ko",
		       info->version);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Parse a size: decimal digits with an optional suffix K, M, G or T (powers
 * of 1024; "KiB", "k", "KB" are accepted as the same).  Returns 0 or -1.
 */
int parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "kmgt";
	unsigned long long v;
	const char *u;
	char *end;
	int shift = 0;

	if (!s || !*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		char c = (char)(*end | 0x20);	/* lower case */

		u = strchr(units, c);
		if (!u || !c)
			return -1;
		shift = 10 * (int)(u - units + 1);
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "ib") || !strcmp(end, "B") ||
		    !strcmp(end, "b"))
			end += strlen(end);
		if (*end)
			return -1;
		if (v > (UINT64_MAX >> shift))
			return -1;
		v <<= shift;
	}
	*out = v;
	return 0;
}

/* Parse a decimal unsigned number up to @max.  Returns 0 or -1. */
int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * Parse a numeric IPv4 or IPv6 address (IPv6 link-local with "%scope", an
 * interface name or index; "[addr]" is accepted too) into @a with @port.
 * Returns 0 or -1.
 */
int parse_addr(const char *s, uint16_t port, struct rdmaxfer_addr *a)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST, .ai_family = AF_UNSPEC };
	struct addrinfo *res = NULL;
	char tmp[INET6_ADDRSTRLEN + IF_NAMESIZE + 4];
	size_t n = strlen(s);

	if (n >= sizeof(tmp) || !n)
		return -1;
	if (s[0] == '[' && s[n - 1] == ']') {
		memcpy(tmp, s + 1, n - 2);
		tmp[n - 2] = 0;
	} else {
		memcpy(tmp, s, n + 1);
	}
	if (getaddrinfo(tmp, NULL, &hints, &res) || !res)
		return -1;
	memset(a, 0, sizeof(*a));
	a->port = port;
	if (res->ai_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)res->ai_addr;

		a->family = AF_INET;
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (res->ai_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)res->ai_addr;

		a->family = AF_INET6;
		memcpy(a->addr, &sin6->sin6_addr, 16);
		a->scope_id = sin6->sin6_scope_id;
	} else {
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	return 0;
}

/* "192.0.2.1 port 18515" or "2001:db8::1 port 18515" (with %scope). */
void format_addr(const struct rdmaxfer_addr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE];

	if (!inet_ntop(a->family == AF_INET6 ? AF_INET6 : AF_INET, a->addr, host, sizeof(host)))
		strcpy(host, "?");
	if (a->family == AF_INET6 && a->scope_id) {
		if (!if_indextoname(a->scope_id, ifname))
			snprintf(ifname, sizeof(ifname), "%u", a->scope_id);
		snprintf(buf, len, "%s%%%s port %u", host, ifname, a->port);
	} else {
		snprintf(buf, len, "%s port %u", host, a->port);
	}
}

/* "64 MiB", "1.5 GiB", "4095 bytes": exact when it is a whole unit. */
void format_bytes(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	int i;

	for (i = 3; i >= 0; i--) {
		uint64_t unit = 1ull << (10 * (i + 1));

		if (v >= unit) {
			if (v % unit == 0)
				snprintf(buf, len, "%llu %s", (unsigned long long)(v / unit), units[i]);
			else
				snprintf(buf, len, "%llu bytes (%.1f %s)", (unsigned long long)v,
					 (double)v / (double)unit, units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu byte%s", (unsigned long long)v, v == 1 ? "" : "s");
}

/* Monotonic time in nanoseconds: the CLI's one clock. */
uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same in seconds. */
double now_sec(void)
{
	return (double)now_ns() / 1e9;
}

/*
 * What a negative errno in a completion or a DISCONNECTED event means, in
 * words.
 */
const char *status_words(int status)
{
	switch (-status) {
	case 0:
		return "closed by the peer";
	case ECANCELED:
		return "the connection went down (operation flushed)";
	case EREMOTEIO:
		return "the peer refused the access (window revoked or out of range)";
	case ENODEV:
		return "the RDMA device was removed";
	case ECONNRESET:
		return "the peer went away";
	case EPROTO:
		return "protocol error (a malformed message on the connection)";
	case ENOBUFS:
		return "completions or messages were not taken fast enough (ENOBUFS)";
	case ETIMEDOUT:
		return "the peer stopped answering (transport timeout)";
	case EIO:
		return "I/O error on the RDMA device";
	default:
		return strerror(-status);
	}
}

/* List the devices; *out gets a malloc'ed array.  Returns the count or -1. */
int list_device_indexes(int fd, uint32_t **out)
{
	uint32_t *idx = NULL, cap = 0, count = 0;

	for (;;) {
		if (rdx_list_devices(fd, idx, cap, &count)) {
			free(idx);
			return -1;
		}
		if (count <= cap)
			break;
		free(idx);
		cap = count;
		idx = calloc(cap, sizeof(*idx));
		if (!idx)
			return -1;
	}
	*out = idx;
	return (int)count;
}

/*
 * QUERY_PORT of port @port of device @index with all its GIDs: *@gids
 * (NULL or malloc'ed, owned by the caller) is made large enough for them.
 * Returns 0, or -1 with errno set.
 */
int query_port_gids(int fd, uint32_t index, uint32_t port, struct rdmaxfer_port_info *pi,
		    struct rdmaxfer_gid **gids)
{
	uint32_t cap = 0;

	for (;;) {
		if (rdx_query_port(fd, index, port, *gids, cap, pi))
			return -1;
		if (pi->num_gids <= cap)
			return 0;
		/* the table grew (or first call): retry with room for all */
		free(*gids);
		cap = pi->num_gids;
		*gids = calloc(cap, sizeof(**gids));
		if (!*gids)
			return -1;
	}
}

/* The name of an RDMAXFER_OP_* in messages. */
const char *cli_op_name(unsigned int opcode)
{
	switch (opcode) {
	case RDMAXFER_OP_WRITE:
		return "RDMA WRITE";
	case RDMAXFER_OP_READ:
		return "RDMA READ";
	case RDMAXFER_OP_SEND:
		return "SEND";
	case RDMAXFER_OP_WRITE_IMM:
		return "RDMA WRITE with immediate";
	case RDMAXFER_OP_CAS:
		return "compare-and-swap";
	case RDMAXFER_OP_FADD:
		return "fetch-and-add";
	default:
		return "operation";
	}
}

/*
 * JSON writer.  Nesting is tracked so that commas and keys come out right;
 * a key is printed when the enclosing container is an object.
 */
#define JSON_MAX_DEPTH 16

static struct {
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool is_object[JSON_MAX_DEPTH];
} js;

static void json_quote(const char *s)
{
	const unsigned char *p;

	putchar('"');
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", stdout);
			break;
		case '\\':
			fputs("\\\\", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		case '\t':
			fputs("\\t", stdout);
			break;
		default:
			if (*p < 0x20)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
	}
	putchar('"');
}

static void json_member(const char *key)
{
	if (js.depth > 0) {
		if (!js.first[js.depth - 1])
			putchar(',');
		js.first[js.depth - 1] = false;
		if (js.is_object[js.depth - 1]) {
			json_quote(key ? key : "");
			putchar(':');
		}
	}
}

static void json_open(const char *key, char c, bool is_object)
{
	json_member(key);
	putchar(c);
	if (js.depth < JSON_MAX_DEPTH) {
		js.first[js.depth] = true;
		js.is_object[js.depth] = is_object;
	}
	js.depth++;
}

void json_begin_object(const char *key)
{
	json_open(key, '{', true);
}

void json_begin_array(const char *key)
{
	json_open(key, '[', false);
}

void json_end_object(void)
{
	js.depth--;
	putchar('}');
}

void json_end_array(void)
{
	js.depth--;
	putchar(']');
}

void json_string(const char *key, const char *val)
{
	json_member(key);
	json_quote(val);
}

void json_u64(const char *key, uint64_t val)
{
	json_member(key);
	printf("%llu", (unsigned long long)val);
}

/* A number with enough digits that small positive values stay positive. */
void json_double(const char *key, double val)
{
	json_member(key);
	if (!isfinite(val))
		val = 0;
	printf("%.9g", val);
}

void json_bool(const char *key, bool val)
{
	json_member(key);
	fputs(val ? "true" : "false", stdout);
}

void json_end_document(void)
{
	putchar('\n');
	js.depth = 0;
}
