/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer CLI - shared declarations.
 *
 * The CLI is a thin layer over the ioctls of /dev/rdmaxfer, which it issues
 * through librdmaxfer (tools/lib/rdmaxfer/: rdx_listen(), rdx_submit(), ...,
 * one ioctl each; shared with the selftests).  Its files:
 *
 *   main.c          the command table, --help, --version
 *   opts.c          the options commands share (--port, --bind, --size,
 *                   --json, --help, --key, HOST) and their usage errors
 *   key.c           who may connect: --key, --key-file, --allow
 *   util.c          errors, the device file, sizes and addresses, JSON
 *   info.c          info: the module and its devices, human or JSON
 *   stats.c         stats: the module's counters
 *   serve.c         serve: the server of all the clients below
 *   xfer.c          write, read, send: the clients of serve
 *   session.[ch]    the client side of one connection
 *   proto.h         the application protocol between serve and its clients
 *   crc32c.c        CRC32C, for --verify
 *   measure.h,      the measurements: ping, bench, regbench and their
 *   measure_*.c     sockets baseline (see measure.h)
 *
 * Exit codes: 0 success, 1 failure, 2 usage error.  Errors are one line on
 * stderr, starting with "rdmaxfer: ".
 */
#ifndef RDMAXFER_CLI_H
#define RDMAXFER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/rdmaxfer.h>

#include "librdmaxfer.h"

struct option;

#define CLI_VERSION	"0.3.0"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* util.c: errors */
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * opts.c: the options commands share.  A command's loop
 *	while ((c = common_getopt(&co, argc, argv, opts, &ret)) > 0)
 * sees only its own options; common_getopt() handles the shared ones and
 * checks the arguments after the options.  At the end, ret is -1 to go on,
 * else the exit status to return (help printed, or one usage error line).
 */
enum {
	OPT_PORT = 0x100,	/* getopt values of the shared options: above any char */
	OPT_BIND,
	OPT_SIZE,
	OPT_JSON,
	OPT_HELP,
	OPT_KEY,
	OPT_KEY_FILE,
};

/* Their entries in a command's struct option table (<getopt.h>). */
#define OPTION_PORT	{ "port", required_argument, NULL, OPT_PORT }
#define OPTION_BIND	{ "bind", required_argument, NULL, OPT_BIND }
#define OPTION_SIZE	{ "size", required_argument, NULL, OPT_SIZE }
#define OPTION_JSON	{ "json", no_argument, NULL, OPT_JSON }
#define OPTION_HELP	{ "help", no_argument, NULL, OPT_HELP }
#define OPTION_KEY	{ "key", required_argument, NULL, OPT_KEY }, \
			{ "key-file", required_argument, NULL, OPT_KEY_FILE }
#define OPTION_END	{ NULL, 0, NULL, 0 }

/* struct common_opts.flags: how a command takes the shared options */
#define CO_HOST		0x1	/* one argument, HOST (a client); else none */
#define CO_PORT_ANY	0x2	/* --port 0 stays 0 (any); else it is the default port */
#define CO_SIZE_MIN1	0x4	/* --size must be at least 1 */
#define CO_BIND_LATE	0x8	/* --bind is checked after all options, not when seen */
#define CO_HOST_OPT	0x10	/* with CO_HOST: HOST may be left out */

struct common_opts {
	const char *cmd;		/* "write " etc.: name and a space, for usage errors */
	void (*help)(FILE *f);		/* --help prints this on stdout */
	unsigned int flags;		/* CO_* */
	const char *host;		/* HOST (CO_HOST) */
	uint16_t port;			/* --port, RDMAXFER_DEFAULT_PORT when not given */
	const char *bind;		/* --bind, NULL when not given */
	uint64_t size;			/* --size, when have_size */
	bool have_size;
	bool json;			/* --json */
	const char *key;		/* --key: a key's serial or description, or NULL */
	const char *key_file;		/* --key-file: a file holding the key, or NULL */
};

void common_init(struct common_opts *co, const char *cmd, void (*help)(FILE *f),
		 unsigned int flags);
/*
 * The next option of the command's own in table @opts (its getopt value,
 * never one of OPT_*), or 0 when the options are over: then *@ret is set.
 */
int common_getopt(struct common_opts *co, int argc, char **argv, const struct option *opts,
		  int *ret);
/* The whole parser of a command that takes only [--json] and --help. */
int parse_json_only(int argc, char **argv, const char *cmd, void (*usage)(FILE *f),
		    bool *json);

/* util.c: /dev/rdmaxfer (cli_*: the CLI's own wrappers; librdmaxfer's are rdx_*) */
int cli_open(void);
int cli_get_info(int fd, struct rdmaxfer_info *info);
int cli_open_transfer(struct rdmaxfer_info *info);
int list_device_indexes(int fd, uint32_t **out);
int query_port_gids(int fd, uint32_t index, uint32_t port, struct rdmaxfer_port_info *pi,
		    struct rdmaxfer_gid **gids);
const char *cli_op_name(unsigned int opcode);

/* util.c: parsing and formatting */
int parse_size(const char *s, uint64_t *out);
int parse_uint(const char *s, uint64_t max, uint64_t *out);
int parse_addr(const char *s, uint16_t port, struct rdmaxfer_addr *a);
void format_addr(const struct rdmaxfer_addr *a, char *buf, size_t len);
void format_bytes(uint64_t v, char *buf, size_t len);
uint64_t now_ns(void);
double now_sec(void);
const char *status_words(int status);

/* listen.c: where a server listens */
#define LISTEN_MAX_ADDRS	32	/* listen_each_address() */
/* Who may connect to a listener: --key, --allow (key.c) */
struct admit {
	int32_t key;			/* a key's serial; 0: none */
	unsigned int nallow;		/* 0: any address */
	struct rdmaxfer_prefix allow[RDMAXFER_MAX_ALLOW];
};
/* LISTEN on @addr port @port failed with @err: say why (one line); EXIT_FAIL */
int listen_failed(const char *addr, uint16_t port, int err);
/* Is one of the RDMA devices the module sees iWARP (an RNIC)? */
bool have_iwarp(int fd);
/*
 * LISTEN on each address of this host (up, not loopback, not IPv6
 * link-local; skipping those without an RDMA device), at most
 * LISTEN_MAX_ADDRS, on
 * *@port (0: the first LISTEN chooses, *@port says which).  The ids go to
 * @ids, their number to *@n, "ADDR, ADDR port N (...)" to @where.  An
 * address added later is not listened on.  Returns 0, -1 when none could
 * be listened on (the caller tries the wildcard), or EXIT_FAIL (said).
 */
int listen_each_address(int fd, const struct admit *ad, uint16_t *port,
			uint32_t ids[LISTEN_MAX_ADDRS], unsigned int *n, char *where, size_t len);

/*
 * key.c: who may connect.  key_resolve(): the serial of the key --key or
 * --key-file names (0: neither), -1 to go on, else the exit status (said).
 * key_error(): what LISTEN's or CONNECT's error about a key means, or
 * NULL if it is not about the key.  parse_prefix(): --allow's ADDR[/BITS];
 * -1 to go on, else EXIT_USAGE (said).
 */
int key_resolve(const struct common_opts *co, int32_t *serial);
const char *key_error(int err);
int parse_prefix(const char *cmd, const char *s, struct rdmaxfer_prefix *p);

/* crc32c.c: CRC32C (Castagnoli); start with crc = 0, feed pieces in order */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* util.c: a streaming JSON writer to stdout (one document at a time) */
void json_begin_object(const char *key);
void json_end_object(void);
void json_begin_array(const char *key);
void json_end_array(void);
void json_string(const char *key, const char *val);
void json_u64(const char *key, uint64_t val);
void json_bool(const char *key, bool val);
void json_double(const char *key, double val);
void json_end_document(void);

/* commands */
int cmd_info(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_atomic(int argc, char **argv);

/* The window `serve` exposes when --size is not given. */
#define SERVE_DEFAULT_SIZE	(64ull << 20)

#endif /* RDMAXFER_CLI_H */
