// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - registered buffers: REG_BUF and DEREG_BUF.
 *
 * REG_BUF pins user pages with FOLL_LONGTERM (and FOLL_WRITE only when the
 * device will write them), after charging them to the caller's
 * RLIMIT_MEMLOCK the way ib_umem_get() does (mm->pinned_vm; CAP_IPC_LOCK
 * bypasses the limit).  Only anonymous, shmem/memfd and hugetlb memory is
 * accepted (EOPNOTSUPP otherwise): a long-term pin of the page cache of a
 * file that needs writeback would fight the writeback.  The pages are not
 * DMA-mapped here: rdma_rw maps each operation's pages on the connection's
 * device, and EXPOSE maps a window's pages (window.c), because a buffer
 * may be used with several devices.  The last reference (the id table,
 * windows, local registrations, operations in flight) unpins and
 * uncharges, from process or workqueue context.
 *
 * DEREG_BUF refuses a buffer in use (EBUSY) but for its local
 * registrations (lmr.c), which it drops: it takes the buffer out of the id
 * table under rf_lock, so no new use can start, and then, without
 * rf_lock, collects the registrations from the file's connections (a
 * registration being made holds c_lmr_lock across a wait on the peer).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/backing-dev.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rdmaxfer.h"
#include "trace.h"

/*
 * Is every byte of [start, end) in memory that may be pinned long-term?
 * Anonymous, shmem/memfd and hugetlbfs memory may; page cache of a file
 * that needs writeback may not (the pin would fight writeback), nor, on
 * kernels whose GUP refuses it, a shared mapping that needs write
 * notification (compat.h).  *writable tells whether every mapping of the
 * range is writable.
 */
static int rdmaxfer_check_vmas(struct mm_struct *mm, unsigned long start, unsigned long end,
			       bool *writable)
{
	struct vm_area_struct *vma;
	bool notify = false;
	int ret = 0;

	*writable = true;
	mmap_read_lock(mm);
	for (vma = find_vma(mm, start); start < end; vma = find_vma(mm, start)) {
		if (!vma || vma->vm_start > start) {
			ret = -EFAULT;
			break;
		}
		if (vma->vm_file && mapping_can_writeback(vma->vm_file->f_mapping)) {
			ret = -EOPNOTSUPP;
			break;
		}
		if (vma->vm_file && rdmaxfer_gup_refuses_longterm_write(vma))
			notify = true;
		if (!(vma->vm_flags & VM_WRITE))
			*writable = false;
		start = vma->vm_end;
	}
	mmap_read_unlock(mm);
	/* refused only for a writable pin, which a read-only mapping rules out */
	if (!ret && notify && *writable)
		ret = -EOPNOTSUPP;
	return ret;
}

/*
 * May these pinned pages stay pinned long-term?  The check of the mappings
 * above ran before pinning and without the mmap lock held across the pin,
 * so the caller may have mapped something else there meanwhile (a shared
 * mapping of an ext4 file, whose page cache a writable pin would fight):
 * what was pinned is checked again, page by page.
 */
static bool rdmaxfer_pages_pinnable(struct page **pages, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		struct folio *folio = page_folio(pages[i]);
		struct address_space *mapping;

		if (folio_test_anon(folio))
			continue;
		mapping = folio_mapping(folio);
		if (mapping && mapping_can_writeback(mapping))
			return false;
	}
	return true;
}

/**
 * rdmaxfer_ioctl_reg_buf - RDMAXFER_IOC_REG_BUF
 * @rf: the file
 * @arg: struct rdmaxfer_reg_buf
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL (length, access), -EOPNOTSUPP (file-backed memory),
 * -EFAULT (unmapped memory, or written file pages), -ENOMEM (RLIMIT_MEMLOCK
 * or memory), -EMFILE (too many objects).
 */
int rdmaxfer_ioctl_reg_buf(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_reg_buf *cmd = arg;
	unsigned int gup = FOLL_LONGTERM;
	struct rdmaxfer_buf *buf;
	unsigned long start, end, npages, done = 0, limit;
	bool writable;
	u64 last;
	int ret;

	if (!cmd->length || cmd->length > RDMAXFER_MAX_BUF_SIZE ||
	    check_add_overflow(cmd->addr, cmd->length - 1, &last) || last >= TASK_SIZE)
		return -EINVAL;
	if (!cmd->access || cmd->access & ~(RDMAXFER_BUF_READ | RDMAXFER_BUF_WRITE))
		return -EINVAL;

	start = cmd->addr & PAGE_MASK;
	end = PAGE_ALIGN(last + 1);
	npages = (end - start) >> PAGE_SHIFT;
	ret = rdmaxfer_check_vmas(current->mm, start, end, &writable);
	if (ret)
		return ret;
	/*
	 * Pin writable memory for writing even when the device only reads it:
	 * a read-only pin of never-written anonymous memory would pin the
	 * shared zero page, and what the program writes afterwards would never
	 * reach the device.  Read-only mappings can only be device sources.
	 */
	if (writable)
		gup |= FOLL_WRITE;
	else if (cmd->access & RDMAXFER_BUF_WRITE)
		return -EFAULT;

	buf = kzalloc_obj(*buf, GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	rdmaxfer_obj_init(&buf->b_obj, rf, RDMAXFER_OBJ_BUF);
	buf->b_addr = cmd->addr;
	buf->b_length = cmd->length;
	buf->b_access = cmd->access;

	/* charge first: a caller over its limit gets nothing allocated */
	buf->b_mm = current->mm;
	mmgrab(buf->b_mm);
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (atomic64_add_return(npages, &buf->b_mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		ret = -ENOMEM;
		goto out_uncharge;
	}
	buf->b_pages = kvmalloc_array(npages, sizeof(*buf->b_pages), GFP_KERNEL_ACCOUNT);
	if (!buf->b_pages) {
		ret = -ENOMEM;
		goto out_uncharge;
	}

	while (done < npages) {
		int n = min_t(unsigned long, npages - done, 4096);

		n = pin_user_pages_fast(start + done * PAGE_SIZE, n, gup, buf->b_pages + done);
		if (n <= 0) {
			ret = n ? n : -EFAULT;
			goto out_unpin;
		}
		if (!rdmaxfer_pages_pinnable(buf->b_pages + done, n)) {
			done += n;
			ret = -EOPNOTSUPP;
			goto out_unpin;
		}
		done += n;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto out_unpin;
		}
	}
	buf->b_npages = npages;

	ret = rdmaxfer_obj_insert(&buf->b_obj);
	if (ret)
		goto out_unpin;
	atomic64_add(cmd->length, &rf->rf_pinned);
	cmd->buf_id = buf->b_obj.id;
	rdmaxfer_obj_put(&buf->b_obj);	/* the table holds it now */
	return 0;

out_unpin:
	unpin_user_pages(buf->b_pages, done);
out_uncharge:
	atomic64_sub(npages, &buf->b_mm->pinned_vm);
	mmdrop(buf->b_mm);
	kvfree(buf->b_pages);
	rdmaxfer_obj_fini(&buf->b_obj);
	kfree(buf);
	return ret;
}

/**
 * rdmaxfer_buf_release - free a buffer whose last reference is gone
 * @buf: the buffer
 *
 * Unpins (dirtying the pages if the device may have written them) and
 * uncharges.  No MR maps the pages any more: every window holding the
 * buffer was deregistered first.
 *
 * Context: process or workqueue context (may sleep on the page lock).
 */
void rdmaxfer_buf_release(struct rdmaxfer_buf *buf)
{
	might_sleep();
	unpin_user_pages_dirty_lock(buf->b_pages, buf->b_npages,
				    buf->b_access & RDMAXFER_BUF_WRITE);
	atomic64_sub(buf->b_npages, &buf->b_mm->pinned_vm);
	atomic64_sub(buf->b_length, &buf->b_obj.file->rf_pinned);
	mmdrop(buf->b_mm);
	kvfree(buf->b_pages);
	kfree(buf);
}

/**
 * rdmaxfer_ioctl_dereg_buf - RDMAXFER_IOC_DEREG_BUF
 * @rf: the file
 * @arg: struct rdmaxfer_dereg_buf
 *
 * Context: process context; takes rf_lock, then (without it) each
 * connection's c_lmr_lock.
 * Return: 0, -ENOENT (no such buffer), -EBUSY (a window or an operation
 * uses it), -EINVAL.
 */
int rdmaxfer_ioctl_dereg_buf(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_dereg_buf *cmd = arg;
	struct rdmaxfer_buf *buf;
	int ret = 0;

	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&rf->rf_lock);
	/* under the xarray lock, as lookups: no reference can appear meanwhile */
	xa_lock(&rf->rf_objs);
	buf = xa_load(&rf->rf_objs, cmd->buf_id);
	if (!buf || buf->b_obj.type != RDMAXFER_OBJ_BUF)
		ret = -ENOENT;
	else if (kref_read(&buf->b_obj.ref) > 1 + atomic_read(&buf->b_nlmrs))
		ret = -EBUSY;
	else
		__xa_erase(&rf->rf_objs, cmd->buf_id);
	xa_unlock(&rf->rf_objs);
	if (!ret) {
		buf->b_obj.id_state = RDMAXFER_ID_GONE;
		rf->rf_nobjs--;
	}
	mutex_unlock(&rf->rf_lock);
	if (ret)
		return ret;
	rdmaxfer_lmr_evict(rf, buf);
	rdmaxfer_obj_put(&buf->b_obj);
	return 0;
}
