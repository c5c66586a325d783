/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer - kernel version shims.
 *
 * Every difference between the kernels rdmaxfer builds against (Debian's
 * 6.1 first, 6.12 and 7.x next) is handled here and nowhere else, by
 * feature where the API can be backported and by version only where it was
 * removed.  The code elsewhere is written against the newest API.
 *
 * 6.1 has every interface the module uses today, so there is nothing to
 * shim yet.
 */
#ifndef RDMAXFER_COMPAT_H
#define RDMAXFER_COMPAT_H

#endif /* RDMAXFER_COMPAT_H */
