// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer CLI - errors, the device file and a small JSON writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
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
int rdmaxfer_open(void)
{
	const char *path = "/dev/" RDMAXFER_DEVNAME;
	int fd = open(path, O_RDWR | O_CLOEXEC);

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
int rdmaxfer_get_info(int fd, struct rdmaxfer_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, RDMAXFER_IOC_GET_INFO, info)) {
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
