/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer - kernel version shims.
 *
 * Every difference between the kernels rdmaxfer builds against (Debian's
 * 6.1 first, 6.12 and 7.x next) is handled here and nowhere else, by
 * feature where the API can be backported and by version only where it was
 * removed.  The code elsewhere is written against the newest API.
 *
 * 6.1 has every interface the module uses but kzalloc_obj() and
 * vm_flags_mod(); what else is here works around a provider bug and a
 * change of GUP's policy that no interface reveals.
 */
#ifndef RDMAXFER_COMPAT_H
#define RDMAXFER_COMPAT_H

#include <linux/mm.h>
#include <linux/slab.h>

/*
 * kzalloc_obj() - allocate one zeroed object of the type of @P (a variable
 * or a type), with the flags given: newer kernels (7.2 has it; 6.12 does
 * not) write "kzalloc_obj(*p, gfp)" for "kzalloc(sizeof(*p), gfp)", and
 * their checkpatch asks for it.  Probed as the macro it is; this stand-in
 * always takes the flags.
 */
#ifndef kzalloc_obj
#define kzalloc_obj(P, gfp)	({ typeof(P) *__obj = kzalloc(sizeof(P), gfp); __obj; })
#endif

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

/**
 * rdmaxfer_gup_refuses_longterm_write - does GUP refuse to pin @vma for us?
 * @vma: a file mapping REG_BUF would pin with FOLL_LONGTERM | FOLL_WRITE
 *
 * Since 6.5 (upstream 8ac268436e6d) pin_user_pages*() refuses long-term
 * writable pins of a shared writable file mapping that needs dirty
 * tracking: one whose file system writes back (refused by REG_BUF on every
 * kernel) or whose vm_ops has page_mkwrite or pfn_mkwrite, as ramfs has
 * through generic_file_vm_ops.  The pin then fails with EFAULT, which would
 * blame the caller's address.  GUP's predicate is internal to mm/, so no
 * interface reveals the change: Kbuild defines RDMAXFER_GUP_NO_NOTIFY_PINS
 * from the kernel's version.  With it, REG_BUF says EOPNOTSUPP for such
 * memory before pinning anything.
 *
 * Return: true if the pin would be refused for want of dirty tracking.
 */
static inline bool rdmaxfer_gup_refuses_longterm_write(struct vm_area_struct *vma)
{
#ifdef RDMAXFER_GUP_NO_NOTIFY_PINS
	return (vma->vm_flags & (VM_SHARED | VM_WRITE)) == (VM_SHARED | VM_WRITE) &&
	       vma->vm_ops && (vma->vm_ops->page_mkwrite || vma->vm_ops->pfn_mkwrite);
#else
	return false;
#endif
}

/**
 * rdmaxfer_vm_flags_mod - set and clear flags of a VMA that ->mmap() sets up
 * @vma: the VMA, mmap_lock held for writing
 * @set: flags to set
 * @clear: flags to clear
 *
 * Since 6.3 vm_flags is read-only and changed through vm_flags_mod();
 * before, it was written directly.  Kbuild probes <linux/mm.h> for it.
 */
static inline void rdmaxfer_vm_flags_mod(struct vm_area_struct *vma, vm_flags_t set,
					 vm_flags_t clear)
{
#ifdef RDMAXFER_HAVE_VM_FLAGS_MOD
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

#endif /* RDMAXFER_COMPAT_H */
