/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer CLI - shared declarations.
 *
 * The CLI is a thin layer over the ioctls of /dev/rdmaxfer: one source file
 * per command group (info.c, serve.c, xfer.c for write/read/send, stats.c),
 * the client side of a connection in session.c, the application protocol
 * between serve and the clients in proto.h, CRC32C in crc32c.c, helpers for
 * the device file, parsing, errors and JSON in util.c, the command table in
 * main.c.  Exit codes: 0 success, 1 failure,
 * 2 usage error.  Errors are one line on stderr, starting with "rdmaxfer: ".
 */
#ifndef RDMAXFER_CLI_H
#define RDMAXFER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/rdmaxfer.h>

#define CLI_VERSION	"0.3.0"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* util.c: errors */
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int parse_json_only(int argc, char **argv, const char *cmd, void (*usage)(FILE *f),
		    bool *json);

/* util.c: /dev/rdmaxfer */
int rdmaxfer_open(void);
int rdmaxfer_get_info(int fd, struct rdmaxfer_info *info);
int rdmaxfer_open_transfer(struct rdmaxfer_info *info);
int list_device_indexes(int fd, uint32_t **out);
const char *rdmaxfer_op_name(unsigned int opcode);

/* util.c: parsing and formatting */
int parse_size(const char *s, uint64_t *out);
int parse_uint(const char *s, uint64_t max, uint64_t *out);
int parse_addr(const char *s, uint16_t port, struct rdmaxfer_addr *a);
void format_addr(const struct rdmaxfer_addr *a, char *buf, size_t len);
void format_bytes(uint64_t v, char *buf, size_t len);
double now_sec(void);
const char *status_words(int status);

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

/* The window `serve` exposes when --size is not given. */
#define SERVE_DEFAULT_SIZE	(64ull << 20)

#endif /* RDMAXFER_CLI_H */
