/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer - kernel version shims.
 *
 * Every difference between the kernels rdmaxfer builds against (Debian's
 * 6.1 first, 6.12 and 7.x next) is handled here and nowhere else, by
 * feature where the API can be backported and by version only where it was
 * removed.  The code elsewhere is written against the newest API.
 *
 * 6.1 has every interface the module uses today; what is here works around
 * a provider bug that no interface reveals.
 */
#ifndef RDMAXFER_COMPAT_H
#define RDMAXFER_COMPAT_H

/*
 * RDMAXFER_MR_SPARE_PAGES - page-list entries allocated in every window MR
 * beyond the pages it maps.
 *
 * Soft-RoCE before 6.4 (rxe_mr.c, until its page maps became an xarray)
 * keeps an FRWR MR's pages in maps of 256 entries, as many maps as the MR
 * was allocated for; rxe_mr_copy() steps to the next map after the last
 * entry of one, and so reads one pointer past the map table when a copy
 * ends in the very last allocated entry (KASAN: slab-out-of-bounds in
 * rxe_mr_copy, on WRITEs and READs that reach the end of a 1 MiB or 2 MiB
 * segment, local or from a peer).  With one entry to spare, the pages
 * mapped never reach the last allocated entry.  Nothing can probe for the
 * bug (a provider's internals, maybe fixed by a distribution's backport),
 * and the spare costs one entry per MR, so it is kept on every kernel.
 */
#define RDMAXFER_MR_SPARE_PAGES	1

#endif /* RDMAXFER_COMPAT_H */
