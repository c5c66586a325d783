/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer CLI - shared declarations.
 *
 * The CLI is a thin layer over the ioctls of /dev/rdmaxfer: one source file
 * per command (info.c, ...), helpers for the device file, errors and JSON in
 * util.c, the command table in main.c.  Exit codes: 0 success, 1 failure,
 * 2 usage error.  Errors are one line on stderr, starting with "rdmaxfer: ".
 */
#ifndef RDMAXFER_CLI_H
#define RDMAXFER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/rdmaxfer.h>

#define CLI_VERSION	"0.1.0"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* util.c: errors */
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* util.c: /dev/rdmaxfer */
int rdmaxfer_open(void);
int rdmaxfer_get_info(int fd, struct rdmaxfer_info *info);

/* util.c: a streaming JSON writer to stdout (one document at a time) */
void json_begin_object(const char *key);
void json_end_object(void);
void json_begin_array(const char *key);
void json_end_array(void);
void json_string(const char *key, const char *val);
void json_u64(const char *key, uint64_t val);
void json_bool(const char *key, bool val);
void json_end_document(void);

/* commands */
int cmd_info(int argc, char **argv);

#endif /* RDMAXFER_CLI_H */
