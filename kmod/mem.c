// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - registered buffers and windows.
 *
 * Registered buffers: REG_BUF pins user pages with FOLL_LONGTERM (and
 * FOLL_WRITE only when the device will write them), after charging them to
 * the caller's RLIMIT_MEMLOCK the way ib_umem_get() does (mm->pinned_vm;
 * CAP_IPC_LOCK bypasses the limit).  Only anonymous, shmem/memfd and hugetlb
 * memory is accepted (EOPNOTSUPP otherwise): a long-term pin of the page
 * cache of a file that needs writeback would fight the writeback.  The
 * pages are not DMA-mapped here: rdma_rw maps each operation's pages on the
 * connection's device, and EXPOSE maps a window's pages, because a buffer
 * may be used with several devices.  The
 * last reference (the id table, windows, operations in flight) unpins and
 * uncharges, from process or workqueue context.
 *
 * Windows: EXPOSE registers a slice of a buffer with fast registration
 * (IB_WR_REG_MR) in the connection's own PD, with exactly the access asked
 * for, and advertises it to the peer in one ADVERT message, whose segment
 * addresses are window offsets (the MR's iova is rewritten: no kernel,
 * physical or DMA address goes on the wire).  The window's id is published
 * only after the ADVERT went out, so a REVOKE cannot overtake it.  A device
 * maps at most max_fast_reg_page_list_len pages per MR, so a window is a
 * list of segments, one MR each; the peer splits its operations at segment
 * boundaries.  A window that starts on a huge page of memory backed by
 * huge pages (THP, hugetlb) is registered with huge FRWR pages instead
 * (rdmaxfer_window_huge()): one page-list entry per PMD_SIZE instead of
 * per 4 KiB page, so a large window takes a few MRs instead of one per
 * max_fast_reg_page_list_len base pages.  A connection carries at most
 * RDMAXFER_MAX_PEER_WINS of our windows, what the peer takes.  Each
 * registration rotates the MR's key.  A window is released (REVOKE, its
 * connection going down, or the file closing) by deregistering its MRs,
 * which invalidates their keys, before the buffer reference that keeps the
 * pages pinned is dropped: invalidate, then unpin.
 *
 * The peer's windows (struct rdmaxfer_peer_win) live in the connection's
 * c_peer_wins xarray, built from ADVERT messages after checking every field.
 *
 * Local registrations.  A zero-copy SEND and a receive slot need the
 * buffer's pages under a local key of the connection's PD, in as few SGEs
 * as a work request takes: the first one on a connection registers the
 * whole buffer there, as a window that is never advertised (access
 * RDMAXFER_WIN_LOCAL: local write only, no id), kept on the connection's
 * c_lmrs until the connection is destroyed or DEREG_BUF.  An operation
 * does not hold it: the buffer reference it holds makes DEREG_BUF fail
 * (EBUSY), and the connection is destroyed only after the drain.  A
 * buffer's local registrations hold a reference each, which DEREG_BUF
 * does not count as a use: it drops them.  On a device that must not see
 * two MRs in one message (rdmaxfer_lmr_one_mr()) the segments of a local
 * registration overlap by half, so that a message always fits in one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/backing-dev.h>
#include <linux/mm.h>
#include <linux/overflow.h>
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

/* Drop the local registrations on @list (taken off their connections). */
static void rdmaxfer_lmrs_put(struct list_head *list)
{
	struct rdmaxfer_window *win, *tmp;

	list_for_each_entry_safe(win, tmp, list, w_entry) {
		list_del_init(&win->w_entry);
		atomic_dec(&win->w_buf->b_nlmrs);
		rdmaxfer_obj_put(&win->w_obj);
	}
}

/*
 * Take @buf's local registrations off the file's connections, onto @list.
 * No operation uses them (the caller found the buffer unused).
 */
static void rdmaxfer_lmr_evict(struct rdmaxfer_file *rf, struct rdmaxfer_buf *buf,
			       struct list_head *list)
{
	struct rdmaxfer_window *win, *tmp;
	struct rdmaxfer_obj *obj;
	unsigned long id;

	lockdep_assert_held(&rf->rf_lock);
	if (!atomic_read(&buf->b_nlmrs))
		return;
	xa_for_each(&rf->rf_objs, id, obj) {
		struct rdmaxfer_conn *conn;

		if (obj->type != RDMAXFER_OBJ_CONN)
			continue;
		conn = container_of(obj, struct rdmaxfer_conn, c_obj);
		mutex_lock(&conn->c_lmr_lock);
		list_for_each_entry_safe(win, tmp, &conn->c_lmrs, w_entry)
			if (win->w_buf == buf)
				list_move(&win->w_entry, list);
		mutex_unlock(&conn->c_lmr_lock);
	}
}

/**
 * rdmaxfer_ioctl_dereg_buf - RDMAXFER_IOC_DEREG_BUF
 * @rf: the file
 * @arg: struct rdmaxfer_dereg_buf
 *
 * Context: process context; takes rf_lock.
 * Return: 0, -ENOENT (no such buffer), -EBUSY (a window or an operation
 * uses it), -EINVAL.
 */
int rdmaxfer_ioctl_dereg_buf(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_dereg_buf *cmd = arg;
	struct rdmaxfer_buf *buf;
	LIST_HEAD(lmrs);
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
		rdmaxfer_lmr_evict(rf, buf, &lmrs);
	}
	mutex_unlock(&rf->rf_lock);
	if (ret)
		return ret;
	rdmaxfer_lmrs_put(&lmrs);
	rdmaxfer_obj_put(&buf->b_obj);
	return 0;
}

/**
 * rdmaxfer_seg_pages - pages one window segment covers on a device
 * @ib: the device
 */
u32 rdmaxfer_seg_pages(struct ib_device *ib)
{
	u32 len = ib->attrs.max_fast_reg_page_list_len;

	/* each MR is allocated with RDMAXFER_MR_SPARE_PAGES more (compat.h) */
	len = len > RDMAXFER_MR_SPARE_PAGES ? len - RDMAXFER_MR_SPARE_PAGES : 1;
	return min_t(u32, len, RDMAXFER_MAX_SEG_PAGES);
}

/**
 * rdmaxfer_lmr_one_mr - must a message's buffer be in one MR on @ib?
 * @ib: the device
 *
 * Soft-iWARP looks up the pages of a work request's SGEs in their MRs'
 * page lists with one index, carried from one SGE to the next
 * (siw_tx_hdt() keeps pbl_idx; the receive side resets it), and searches
 * each list from there on: the second MR of a SEND is searched from where
 * the first one's search ended.  The SEND then fails
 * (IB_WC_LOC_QP_OP_ERR, the connection with it) or, where that MR's list
 * is long enough, could send the bytes of a page before the right one (by
 * the code).  Seen on 6.1 (slots_test's sizes: 1 MiB in two MRs; it passes
 * with the index reset, providers.md); the upstream copy read here has the
 * same loop.  So on siw a SEND or slot takes one MR of its buffer.
 */
bool rdmaxfer_lmr_one_mr(struct ib_device *ib)
{
	return ib->ops.driver_id == RDMA_DRIVER_SIW;
}

/*
 * Pages from the start of one segment of a local registration on @ib to
 * the start of the next: a whole segment, or half of one where a message
 * must be in one MR (then any range of up to half a segment and a byte
 * is inside one segment).
 */
static u32 rdmaxfer_lmr_stride(struct ib_device *ib)
{
	u32 seg = rdmaxfer_seg_pages(ib);

	return rdmaxfer_lmr_one_mr(ib) ? max(seg / 2, 1U) : seg;
}

/* Segments of @seg pages, one every @stride pages, that cover @npages. */
static u32 rdmaxfer_nsegs(unsigned long npages, u32 seg, u32 stride)
{
	return npages <= seg ? 1 : 1 + DIV_ROUND_UP(npages - seg, stride);
}

/* Free a window's segments: deregister (invalidating the keys), unmap. */
static void rdmaxfer_window_free_segs(struct rdmaxfer_window *win, struct ib_device *ib)
{
	u32 i;

	for (i = 0; i < win->w_nsegs; i++) {
		struct rdmaxfer_wseg *ws = &win->w_segs[i];

		if (ws->ws_mr)
			ib_dereg_mr(ws->ws_mr);
		if (ws->ws_sgt.nents)
			ib_dma_unmap_sgtable_attrs(ib, &ws->ws_sgt, DMA_BIDIRECTIONAL, 0);
		sg_free_table(&ws->ws_sgt);
	}
}

/**
 * rdmaxfer_window_release - free a window whose last reference is gone
 * @win: the window
 *
 * Context: process context.
 */
void rdmaxfer_window_release(struct rdmaxfer_window *win)
{
	might_sleep();
	rdmaxfer_window_free_segs(win, win->w_dev->rd_ib);
	atomic_sub(win->w_nsegs, &win->w_obj.file->rf_nmrs);
	rdmaxfer_conn_pd_put(win->w_conn);
	rdmaxfer_device_put(win->w_dev);
	rdmaxfer_obj_put(&win->w_buf->b_obj);
	rdmaxfer_obj_put(&win->w_conn->c_obj);
	kfree(win);
}

/*
 * Take a window off its connection and out of the id table, dropping the
 * references those held.  Safe to race with itself.
 */
static void rdmaxfer_window_unlink(struct rdmaxfer_window *win)
{
	struct rdmaxfer_conn *conn = win->w_conn;
	bool listed;

	spin_lock_bh(&conn->c_lock);
	listed = !list_empty(&win->w_entry);
	list_del_init(&win->w_entry);
	if (listed)
		WRITE_ONCE(conn->c_nwindows, conn->c_nwindows - 1);
	spin_unlock_bh(&conn->c_lock);
	kref_get(&win->w_obj.ref);
	if (listed)
		rdmaxfer_obj_put(&win->w_obj);
	if (rdmaxfer_obj_remove(&win->w_obj))
		rdmaxfer_obj_put(&win->w_obj);
	rdmaxfer_obj_put(&win->w_obj);
}

/**
 * rdmaxfer_window_release_all - release every window exposed on a connection
 * @conn: the connection, being torn down (its QP is drained)
 *
 * Context: process context.  The MRs are deregistered before the buffers
 * can be unpinned.
 */
void rdmaxfer_window_release_all(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_window *win;

	lockdep_assert_held(&conn->c_teardown_lock);

	for (;;) {
		spin_lock_bh(&conn->c_lock);
		win = list_first_entry_or_null(&conn->c_windows, struct rdmaxfer_window,
					       w_entry);
		if (win)
			kref_get(&win->w_obj.ref);
		spin_unlock_bh(&conn->c_lock);
		if (!win)
			break;
		rdmaxfer_window_unlink(win);
		rdmaxfer_obj_put(&win->w_obj);
	}
}

/*
 * Map the pages of one segment and prepare its MR; no WR is posted here.
 * @pages: its @npages base pages; @offset: of its first byte in the first;
 * @page_size: of the MR's page list, PAGE_SIZE or PMD_SIZE (huge pages:
 * @offset is 0 and the pages are whole, aligned huge pages but the last).
 *
 * The MR's iova, which the peer puts in its work requests, is rewritten
 * from the DMA address of the first page (a kernel virtual address on
 * software devices, a physical or IOVA address on an HCA: nothing a peer
 * may learn) to @base, the segment's place in the window, plus the offset
 * of the first byte in its page (which the device's page list needs).  So
 * an advertised address is the window offset of the segment plus the
 * in-page offset of the window's first byte, whatever the host.  With huge
 * pages that offset must be 0 (a DMA address that is not aligned to the
 * huge page, behind an IOMMU, is not mapped this way: -EINVAL).
 */
static int rdmaxfer_window_map_seg(struct rdmaxfer_window *win, struct rdmaxfer_wseg *ws,
				   struct ib_pd *pd, struct page **pages, u32 npages,
				   u32 offset, u32 length, u64 base, u32 page_size)
{
	struct ib_device *ib = pd->device;
	u32 nmr = DIV_ROUND_UP(offset + length, page_size);
	int ret, n;

	ret = sg_alloc_table_from_pages_segment(&ws->ws_sgt, pages, npages, offset, length,
						ib_dma_max_seg_size(ib), GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	ret = ib_dma_map_sgtable_attrs(ib, &ws->ws_sgt, DMA_BIDIRECTIONAL, 0);
	if (ret) {
		ws->ws_sgt.nents = 0;
		return ret;
	}
	ws->ws_mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, nmr + RDMAXFER_MR_SPARE_PAGES);
	if (IS_ERR(ws->ws_mr)) {
		ret = PTR_ERR(ws->ws_mr);
		ws->ws_mr = NULL;
		return ret;
	}
	ib_update_fast_reg_key(ws->ws_mr, ib_inc_rkey(ws->ws_mr->rkey));
	n = ib_map_mr_sg(ws->ws_mr, ws->ws_sgt.sgl, ws->ws_sgt.nents, NULL, page_size);
	if (n != ws->ws_sgt.nents)
		return n < 0 ? n : -EINVAL;
	if (page_size != PAGE_SIZE && (ws->ws_mr->iova & (page_size - 1)))
		return -EINVAL;
	ws->ws_mr->iova = base + (ws->ws_mr->iova & (page_size - 1));
	return 0;
}

/*
 * Huge-page segments.  A window may be registered with FRWR pages of
 * PMD_SIZE when the device takes that page size, the window's first byte
 * starts a huge page (in the user's address space, so its advertised
 * segment addresses stay window offsets: the huge layout tells the peer
 * only that the window starts on a huge page), and every PMD_SIZE chunk of
 * its pinned pages is physically contiguous and aligned (the last one may
 * be partial).  A segment then covers up to RDMAXFER_HUGE_SEG huge pages:
 * Soft-RoCE since 6.12 expands each page of an FRWR page list into 4 KiB
 * entries of one kzalloc'ed array (rxe_map_mr_sg()), so the MR's page list
 * is kept short enough for that array to be a small allocation.  If the
 * device cannot map a segment that way (an IOMMU that did not keep the
 * alignment, an allocation that failed), the window falls back to base
 * pages.
 */
#define RDMAXFER_HUGE_PAGES	(PMD_SIZE >> PAGE_SHIFT)	/* base pages per huge page */
#define RDMAXFER_HUGE_SEG	8	/* huge pages per segment, at most */

/*
 * Huge pages a segment of @ib covers, 0 if the device cannot register
 * huge pages.
 */
static u32 rdmaxfer_huge_seg(struct ib_device *ib)
{
	u32 len = ib->attrs.max_fast_reg_page_list_len;

	if (!(ib->attrs.page_size_cap & PMD_SIZE) || len <= RDMAXFER_MR_SPARE_PAGES)
		return 0;
	return min_t(u32, len - RDMAXFER_MR_SPARE_PAGES, RDMAXFER_HUGE_SEG);
}

/*
 * May the @npages pinned pages from @pages, starting a window, be
 * registered as huge pages (see above)?  Cheap next to mapping them: one
 * comparison per base page.
 */
static bool rdmaxfer_window_huge(struct ib_device *ib, struct page **pages,
				 unsigned long npages, u64 first_byte_addr)
{
	unsigned long i, pfn = 0;

	if (!rdmaxfer_huge_seg(ib) || !IS_ALIGNED(first_byte_addr, PMD_SIZE) ||
	    npages < RDMAXFER_HUGE_PAGES)
		return false;
	for (i = 0; i < npages; i++) {
		unsigned long next = page_to_pfn(pages[i]);

		if (i % RDMAXFER_HUGE_PAGES ? next != pfn + 1 :
		    !IS_ALIGNED(next, RDMAXFER_HUGE_PAGES))
			return false;
		pfn = next;
	}
	return true;
}

static int rdmaxfer_ib_access(u32 access)
{
	int acc = 0;

	if (access & RDMAXFER_WIN_LOCAL)
		return IB_ACCESS_LOCAL_WRITE;
	if (access & RDMAXFER_REMOTE_READ)
		acc |= IB_ACCESS_REMOTE_READ;
	if (access & RDMAXFER_REMOTE_WRITE)
		acc |= IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	if (access & RDMAXFER_REMOTE_ATOMIC)
		acc |= IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_ATOMIC;
	return acc;
}

static void rdmaxfer_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdmaxfer_wseg *ws = container_of(wc->wr_cqe, struct rdmaxfer_wseg, ws_cqe);
	struct rdmaxfer_window *win = ws->ws_win;

	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		/* the connection is going down: EXPOSE reports that */
		win->w_reg_status = -ENOTCONN;
		rdmaxfer_conn_flushed(win->w_conn);
	} else if (wc->status != IB_WC_SUCCESS) {
		pr_warn_ratelimited("conn %u: registration failed: %s\n", win->w_conn->c_obj.id,
				    ib_wc_status_msg(wc->status));
		win->w_reg_status = -EIO;
		rdmaxfer_conn_fail(win->w_conn, -EIO);	/* the QP is in error now */
	}
	rdmaxfer_wr_release(win->w_conn, win->w_reg_batch, 0);
	complete(&win->w_reg_done);
}

/*
 * Register the window's segments: post their REG_MR work requests in
 * batches, the last of each batch signaled, each on an empty send queue
 * (rdmaxfer_post_reg() says why), and wait for each batch.
 */
static int rdmaxfer_window_register(struct rdmaxfer_window *win)
{
	struct rdmaxfer_conn *conn = win->w_conn;
	struct ib_reg_wr wrs[RDMAXFER_REG_BATCH];
	int access = rdmaxfer_ib_access(win->w_access);
	struct rdmaxfer_wseg *last;
	u32 i, first, n;
	int ret;

	for (first = 0; first < win->w_nsegs; first += n) {
		n = min_t(u32, win->w_nsegs - first, RDMAXFER_REG_BATCH);
		memset(wrs, 0, sizeof(wrs));
		for (i = 0; i < n; i++) {
			struct rdmaxfer_wseg *ws = &win->w_segs[first + i];

			wrs[i].wr.opcode = IB_WR_REG_MR;
			wrs[i].wr.next = i + 1 < n ? &wrs[i + 1].wr : NULL;
			/* an error of an unsignaled one must not go unseen */
			wrs[i].wr.wr_cqe = &conn->c_err_cqe;
			wrs[i].mr = ws->ws_mr;
			wrs[i].key = ws->ws_mr->rkey;
			wrs[i].access = access;
		}
		last = &win->w_segs[first + n - 1];
		last->ws_cqe.done = rdmaxfer_reg_done;
		wrs[n - 1].wr.wr_cqe = &last->ws_cqe;
		wrs[n - 1].wr.send_flags = IB_SEND_SIGNALED;
		win->w_reg_batch = n;
		reinit_completion(&win->w_reg_done);
		ret = rdmaxfer_post_reg(conn, &wrs[0].wr, n);
		if (ret)
			return ret;
		/*
		 * The WRs complete even if the QP dies (flushed), but maybe only
		 * behind operations a slow peer holds up.  A fatal signal fails
		 * the connection: its teardown flushes them (it disconnects
		 * before it waits for us to leave rdmaxfer_conn_exit()).
		 */
		if (wait_for_completion_killable(&win->w_reg_done)) {
			rdmaxfer_conn_fail(conn, -EINTR);
			wait_for_completion(&win->w_reg_done);
			return -EINTR;
		}
		if (win->w_reg_status)
			return win->w_reg_status;
	}
	return 0;
}

/* Build and send the ADVERT of a registered window. */
static int rdmaxfer_window_advertise(struct rdmaxfer_window *win)
{
	struct rdmaxfer_conn *conn = win->w_conn;
	struct rdmaxfer_msg_advert *adv;
	struct rdmaxfer_ctrl *ct;
	u32 i, len;

	ct = rdmaxfer_ctrl_get(conn, MAX_SCHEDULE_TIMEOUT, 1, false);
	if (IS_ERR(ct))
		return PTR_ERR(ct);
	adv = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);
	len = struct_size(adv, segs, win->w_nsegs);
	adv->window_id = cpu_to_be32(win->w_obj.id);
	adv->access = cpu_to_be32(win->w_access);
	adv->length = cpu_to_be64(win->w_length);
	adv->nsegs = cpu_to_be32(win->w_nsegs);
	adv->reserved = 0;
	for (i = 0; i < win->w_nsegs; i++) {
		struct ib_mr *mr = win->w_segs[i].ws_mr;

		adv->segs[i].addr = cpu_to_be64(mr->iova);
		adv->segs[i].rkey = cpu_to_be32(mr->rkey);
		adv->segs[i].length = cpu_to_be32(mr->length);
	}
	return rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_ADVERT, len);
}

/* Check EXPOSE's range and access against the buffer's. */
static int rdmaxfer_expose_check(const struct rdmaxfer_expose *cmd,
				 const struct rdmaxfer_buf *buf)
{
	u64 end;

	if (!cmd->length || check_add_overflow(cmd->offset, cmd->length, &end) ||
	    end > buf->b_length)
		return -EINVAL;
	if ((cmd->access & RDMAXFER_REMOTE_READ) && !(buf->b_access & RDMAXFER_BUF_READ))
		return -EINVAL;
	/* the peer can only align atomics to the window's start */
	if ((cmd->access & RDMAXFER_REMOTE_ATOMIC) &&
	    !IS_ALIGNED(buf->b_addr + cmd->offset, sizeof(u64)))
		return -EINVAL;
	if ((cmd->access & (RDMAXFER_REMOTE_WRITE | RDMAXFER_REMOTE_ATOMIC)) &&
	    !(buf->b_access & RDMAXFER_BUF_WRITE))
		return -EINVAL;
	return 0;
}

/**
 * rdmaxfer_window_create - register a slice of a buffer as a window
 * @rf: the file
 * @conn: the connection whose PD the window goes in
 * @buf: the buffer
 * @cmd: EXPOSE's arguments, checked by rdmaxfer_expose_check()
 *
 * Splits the slice into segments of at most the device's FRWR page list,
 * maps and registers each, and reserves the window's id (the ADVERT
 * carries it; it is published later).  On success the window owns the
 * caller's references on @conn and @buf; on failure they stay the caller's.
 *
 * A local registration (@cmd->access RDMAXFER_WIN_LOCAL) gets no id and
 * may have any number of segments.
 *
 * Context: process, may sleep; between rdmaxfer_conn_enter() and
 * rdmaxfer_conn_exit().
 * Return: the window, or ERR_PTR(-EINVAL) (more segments than an ADVERT
 * holds), -ENOSPC (the file's windows have RDMAXFER_MAX_FILE_MRS segments),
 * -ENOMEM, -EMFILE, or what registration failed with.
 */
static struct rdmaxfer_window *rdmaxfer_window_create(struct rdmaxfer_file *rf,
						      struct rdmaxfer_conn *conn,
						      struct rdmaxfer_buf *buf,
						      const struct rdmaxfer_expose *cmd)
{
	struct ib_device *ib = conn->c_dev->rd_ib;
	u32 seg_pages = rdmaxfer_seg_pages(ib), page_size = PAGE_SIZE, stride;
	u64 first_byte = offset_in_page(buf->b_addr) + cmd->offset;
	unsigned long fp = first_byte >> PAGE_SHIFT, npages;
	u32 in_page = offset_in_page(first_byte);
	bool local = cmd->access & RDMAXFER_WIN_LOCAL;
	struct rdmaxfer_window *win;
	u32 nsegs, i;
	int ret;

	lockdep_assert_held_read(&conn->c_post_sem);
	npages = DIV_ROUND_UP(in_page + cmd->length, PAGE_SIZE);
	stride = local ? rdmaxfer_lmr_stride(ib) : seg_pages;
	nsegs = rdmaxfer_nsegs(npages, seg_pages, stride);
	if (!local && (nsegs > RDMAXFER_MAX_WIN_SEGS ||
		       sizeof(struct rdmaxfer_msg_hdr) +
		       struct_size((struct rdmaxfer_msg_advert *)NULL, segs, nsegs) >
		       conn->c_peer_ctrl_size))
		return ERR_PTR(-EINVAL);

	ret = -ENOSPC;
	if (atomic_add_return(nsegs, &rf->rf_nmrs) > RDMAXFER_MAX_FILE_MRS)
		goto out_nmrs;
	ret = -ENOMEM;
	win = kzalloc(struct_size(win, w_segs, nsegs), GFP_KERNEL_ACCOUNT);
	if (!win)
		goto out_nmrs;
	rdmaxfer_obj_init(&win->w_obj, rf, RDMAXFER_OBJ_WINDOW);
	win->w_conn = conn;
	win->w_dev = conn->c_dev;
	kref_get(&win->w_dev->rd_ref);
	rdmaxfer_conn_pd_get(conn);
	win->w_buf = buf;
	INIT_LIST_HEAD(&win->w_entry);
	win->w_length = cmd->length;
	win->w_access = cmd->access;
	init_completion(&win->w_reg_done);
	/* local registrations keep base pages: rdmaxfer_lmr_sges() counts on it */
	if (!local && rdmaxfer_window_huge(ib, buf->b_pages + fp, npages,
					   buf->b_addr + cmd->offset)) {
		page_size = PMD_SIZE;
		seg_pages = rdmaxfer_huge_seg(ib) * RDMAXFER_HUGE_PAGES;
	}
again:
	/* segment i starts at page i * stride (a window's do not overlap) */
	stride = local ? stride : seg_pages;
	win->w_nsegs = rdmaxfer_nsegs(npages, seg_pages, stride);
	for (i = 0; i < win->w_nsegs; i++) {
		u32 np = min_t(unsigned long, seg_pages, npages - i * stride);
		u64 seg_start = i ? (u64)i * stride * PAGE_SIZE - in_page : 0;
		u32 len = min_t(u64, cmd->length - seg_start,
				(u64)np * PAGE_SIZE - (i ? 0 : in_page));

		win->w_segs[i].ws_win = win;
		ret = rdmaxfer_window_map_seg(win, &win->w_segs[i], conn->c_pd,
					      buf->b_pages + fp + i * stride, np,
					      i ? 0 : in_page, len,
					      (u64)i * stride << PAGE_SHIFT, page_size);
		if (ret && page_size != PAGE_SIZE) {
			/* not as huge pages, then: as base pages */
			rdmaxfer_window_free_segs(win, ib);
			memset(win->w_segs, 0, nsegs * sizeof(win->w_segs[0]));
			page_size = PAGE_SIZE;
			seg_pages = rdmaxfer_seg_pages(ib);
			goto again;
		}
		if (ret)
			goto out_win;
	}
	/* the file is charged for the base-page layout, the most it takes */
	atomic_sub(nsegs - win->w_nsegs, &rf->rf_nmrs);
	nsegs = win->w_nsegs;
	ret = rdmaxfer_window_register(win);
	if (!ret && !local)
		ret = rdmaxfer_obj_reserve(&win->w_obj);
	if (!ret)
		return win;

out_win:
	rdmaxfer_window_free_segs(win, win->w_dev->rd_ib);
	rdmaxfer_conn_pd_put(conn);
	rdmaxfer_device_put(win->w_dev);
	rdmaxfer_obj_fini(&win->w_obj);
	kfree(win);
out_nmrs:
	atomic_sub(nsegs, &rf->rf_nmrs);
	return ERR_PTR(ret);
}

/**
 * rdmaxfer_lmr_get - the buffer's local registration on a connection
 * @conn: the connection
 * @buf: the buffer (the caller holds a reference)
 *
 * Registers the whole buffer on first use (see "Local registrations").
 * The registration stays valid while the caller holds @buf and remains
 * between rdmaxfer_conn_enter() and rdmaxfer_conn_exit(), and after that
 * while an operation posted with it holds @buf.
 *
 * Context: process context, may sleep; rdmaxfer_conn_enter() held.
 * Return: the registration, or what rdmaxfer_window_create() failed with.
 */
struct rdmaxfer_window *rdmaxfer_lmr_get(struct rdmaxfer_conn *conn, struct rdmaxfer_buf *buf)
{
	struct rdmaxfer_expose cmd = {
		.length = buf->b_length,
		.access = RDMAXFER_WIN_LOCAL,
	};
	struct rdmaxfer_window *win;

	lockdep_assert_held_read(&conn->c_post_sem);
	mutex_lock(&conn->c_lmr_lock);
	list_for_each_entry(win, &conn->c_lmrs, w_entry)
		if (win->w_buf == buf)
			goto out;
	kref_get(&conn->c_obj.ref);
	kref_get(&buf->b_obj.ref);
	win = rdmaxfer_window_create(conn->c_obj.file, conn, buf, &cmd);
	if (IS_ERR(win)) {
		rdmaxfer_obj_put(&buf->b_obj);
		rdmaxfer_obj_put(&conn->c_obj);
		goto out;
	}
	atomic_inc(&buf->b_nlmrs);
	list_add(&win->w_entry, &conn->c_lmrs);
out:
	mutex_unlock(&conn->c_lmr_lock);
	return win;
}

/* Bytes one segment of a local registration covers on @conn's device. */
static u64 rdmaxfer_lmr_seg_size(struct rdmaxfer_conn *conn)
{
	return (u64)rdmaxfer_seg_pages(conn->c_dev->rd_ib) << PAGE_SHIFT;
}

/* Bytes from one segment's start to the next's (rdmaxfer_lmr_stride()). */
static u64 rdmaxfer_lmr_stride_size(struct rdmaxfer_conn *conn)
{
	return (u64)rdmaxfer_lmr_stride(conn->c_dev->rd_ib) << PAGE_SHIFT;
}

/**
 * rdmaxfer_lmr_max_msg - the longest message a SEND or slot may have
 * @conn: the connection, its hello exchanged
 *
 * What both ports take, less a slot header, and what the SGEs of a work
 * request cover of any buffer at any offset: with n SGEs of segments of S
 * bytes, (n - 1) * S + 1; with one SGE of segments overlapping by half
 * (stride T), S - T + 1.  QUERY_CONN reports it as max_msg_size.
 *
 * Context: any, with @conn's device stable: under c_teardown_lock (QUERY_CONN)
 * or between rdmaxfer_conn_enter() and rdmaxfer_conn_exit() (SUBMIT).
 */
u32 rdmaxfer_lmr_max_msg(struct rdmaxfer_conn *conn)
{
	u64 s, t, max;

	if (!conn->c_dev || conn->c_max_msg <= rdmaxfer_hdr_len(conn) || !conn->c_max_sge)
		return 0;
	s = rdmaxfer_lmr_seg_size(conn);
	t = rdmaxfer_lmr_stride_size(conn);
	max = t < s ? s - t + 1 : (conn->c_max_sge - 1) * s + 1;
	return min_t(u64, conn->c_max_msg - rdmaxfer_hdr_len(conn), max);
}

/**
 * rdmaxfer_lmr_nsge - how many SGEs a range of a buffer takes
 * @conn: the connection (up: its device is known)
 * @buf: the buffer
 * @off: start of the range in it
 * @len: its length, at least 1
 *
 * One per segment of the local registration the range touches.  In a
 * registration's address space, a byte at buffer offset O lives at
 * O + the in-page offset of the buffer's start (see
 * rdmaxfer_window_map_seg()), and segment i covers [i * T, i * T + S)
 * (T, the stride, is S where segments do not overlap).  Overlapping
 * segments give one SGE, from the segment the range starts in (the
 * last one for a start beyond it, which reaches the buffer's end), or 2
 * where the range does not fit there: more than c_max_sge (1) allows.
 */
u32 rdmaxfer_lmr_nsge(struct rdmaxfer_conn *conn, const struct rdmaxfer_buf *buf, u64 off,
		      u64 len)
{
	u64 a = offset_in_page(buf->b_addr) + off, s = rdmaxfer_lmr_seg_size(conn);
	u64 t = rdmaxfer_lmr_stride_size(conn);

	if (t < s)
		return a + len <= div64_u64(a, t) * t + s ? 1 : 2;
	return div64_u64(a + len - 1, s) - div64_u64(a, s) + 1;
}

/**
 * rdmaxfer_lmr_sges - fill a request's SGEs for a range of its buffer
 * @req: the request (SEND or RECV)
 * @lmr: the buffer's local registration on the request's connection
 * @off: start of the range
 * @len: its length; rdmaxfer_lmr_nsge() is at most RDMAXFER_MAX_MSG_SGES
 *
 * They go from @req->r_sge[1]: the first is a slot header's (hdr.c).
 */
void rdmaxfer_lmr_sges(struct rdmaxfer_req *req, struct rdmaxfer_window *lmr, u64 off, u64 len)
{
	u64 a = offset_in_page(lmr->w_buf->b_addr) + off;
	u64 s = rdmaxfer_lmr_seg_size(req->r_conn);
	u64 t = rdmaxfer_lmr_stride_size(req->r_conn);

	req->r_nsge = 0;
	if (t < s) {	/* one SGE: rdmaxfer_lmr_nsge() said it fits */
		u64 seg = min_t(u64, div64_u64(a, t), lmr->w_nsegs - 1);
		struct ib_sge *sge = &req->r_sge[1 + req->r_nsge++];

		sge->addr = a;
		sge->length = len;
		sge->lkey = lmr->w_segs[seg].ws_mr->lkey;
		return;
	}
	while (len) {
		u64 seg = div64_u64(a, s);
		u64 n = min(len, (seg + 1) * s - a);
		struct ib_sge *sge = &req->r_sge[1 + req->r_nsge++];	/* [0]: hdr.c's */

		sge->addr = a;
		sge->length = n;
		sge->lkey = lmr->w_segs[seg].ws_mr->lkey;
		a += n;
		len -= n;
	}
}

/**
 * rdmaxfer_lmr_release_all - drop a connection's local registrations
 * @conn: the connection, drained
 *
 * Context: process context, teardown.
 */
void rdmaxfer_lmr_release_all(struct rdmaxfer_conn *conn)
{
	LIST_HEAD(list);

	lockdep_assert_held(&conn->c_teardown_lock);
	mutex_lock(&conn->c_lmr_lock);
	list_splice_init(&conn->c_lmrs, &list);
	mutex_unlock(&conn->c_lmr_lock);
	rdmaxfer_lmrs_put(&list);
}

/**
 * rdmaxfer_ioctl_expose - RDMAXFER_IOC_EXPOSE
 * @rf: the file
 * @arg: struct rdmaxfer_expose
 *
 * Context: process context, may sleep (registration, waiting for a credit).
 * Return: 0, -ENOENT (ids), -EINVAL (range, access bits, access the buffer
 * was not registered for, too many segments), -ENOTCONN, -EOPNOTSUPP
 * (atomics on a device without them), -EMFILE, -ENOSPC (the file's windows
 * have RDMAXFER_MAX_FILE_MRS segments, or the connection has
 * RDMAXFER_MAX_PEER_WINS windows), -ENOMEM, -EINTR.
 */
int rdmaxfer_ioctl_expose(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_expose *cmd = arg;
	struct rdmaxfer_window *win;
	struct rdmaxfer_conn *conn;
	struct rdmaxfer_buf *buf;
	int ret;

	if (!cmd->access || cmd->access & ~(RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE |
					    RDMAXFER_REMOTE_ATOMIC))
		return -EINVAL;
	conn = rdmaxfer_obj_get(rf, cmd->conn_id, RDMAXFER_OBJ_CONN);
	if (!conn)
		return -ENOENT;
	buf = rdmaxfer_obj_get(rf, cmd->buf_id, RDMAXFER_OBJ_BUF);
	if (!buf) {
		ret = -ENOENT;
		goto out_conn;
	}
	ret = rdmaxfer_expose_check(cmd, buf);
	if (ret)
		goto out_buf;
	ret = rdmaxfer_conn_enter(conn);
	if (ret)
		goto out_buf;
	if ((cmd->access & RDMAXFER_REMOTE_ATOMIC) &&
	    conn->c_dev->rd_ib->attrs.atomic_cap == IB_ATOMIC_NONE) {
		ret = -EOPNOTSUPP;
		goto out_exit;
	}
	/* a hint that saves registering for nothing; checked again below */
	if (READ_ONCE(conn->c_nwindows) >= RDMAXFER_MAX_PEER_WINS) {
		ret = -ENOSPC;
		goto out_exit;
	}
	win = rdmaxfer_window_create(rf, conn, buf, cmd);
	if (IS_ERR(win)) {
		ret = PTR_ERR(win);
		goto out_exit;
	}

	/*
	 * The window now owns the conn and buf references.  Its id is
	 * published only once the window is on the connection and
	 * advertised: a REVOKE cannot reach it before, and teardown (which
	 * waits for rdmaxfer_conn_exit()) finds it on the list after.
	 */
	spin_lock_bh(&conn->c_lock);
	if (conn->c_state != RDMAXFER_CS_ESTABLISHED) {
		ret = -ENOTCONN;
	} else if (conn->c_nwindows >= RDMAXFER_MAX_PEER_WINS) {
		ret = -ENOSPC;	/* the peer would drop the connection */
	} else {
		kref_get(&win->w_obj.ref);
		list_add_tail(&win->w_entry, &conn->c_windows);
		WRITE_ONCE(conn->c_nwindows, conn->c_nwindows + 1);
	}
	spin_unlock_bh(&conn->c_lock);
	if (!ret)
		ret = rdmaxfer_window_advertise(win);
	if (!ret)
		rdmaxfer_obj_publish(&win->w_obj);
	rdmaxfer_conn_exit(conn);
	if (ret) {
		rdmaxfer_window_unlink(win);	/* also gives the id back */
		rdmaxfer_obj_put(&win->w_obj);
		return ret;
	}
	trace_rdmaxfer_window_expose(win);
	cmd->window_id = win->w_obj.id;
	rdmaxfer_obj_put(&win->w_obj);
	return 0;

out_exit:
	rdmaxfer_conn_exit(conn);
out_buf:
	rdmaxfer_obj_put(&buf->b_obj);
out_conn:
	rdmaxfer_obj_put(&conn->c_obj);
	return ret;
}

/**
 * rdmaxfer_ioctl_revoke - RDMAXFER_IOC_REVOKE
 * @rf: the file
 * @arg: struct rdmaxfer_revoke
 *
 * Tells the peer (best effort: a connection that is down or out of credits
 * for a second is not waited for), then deregisters the window's MRs and
 * releases the buffer slice.
 *
 * Context: process context, may sleep.
 * Return: 0, -ENOENT, -EINVAL.
 */
int rdmaxfer_ioctl_revoke(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_revoke *cmd = arg;
	struct rdmaxfer_window *win;
	struct rdmaxfer_ctrl *ct;

	if (cmd->__reserved)
		return -EINVAL;
	win = rdmaxfer_obj_get(rf, cmd->window_id, RDMAXFER_OBJ_WINDOW);
	if (!win)
		return -ENOENT;
	if (!rdmaxfer_obj_remove(&win->w_obj)) {
		rdmaxfer_obj_put(&win->w_obj);
		return -ENOENT;		/* lost a race with another REVOKE */
	}
	rdmaxfer_obj_put(&win->w_obj);	/* the table's reference */
	trace_rdmaxfer_window_revoke(win);

	if (!rdmaxfer_conn_enter(win->w_conn)) {
		ct = rdmaxfer_ctrl_get(win->w_conn, HZ, 1, false);
		if (!IS_ERR(ct)) {
			struct rdmaxfer_msg_revoke *rv;

			rv = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);
			rv->window_id = cpu_to_be32(win->w_obj.id);
			rdmaxfer_ctrl_send(win->w_conn, ct, RDMAXFER_MSG_REVOKE, sizeof(*rv));
		}
		rdmaxfer_conn_exit(win->w_conn);
	}
	rdmaxfer_window_unlink(win);
	rdmaxfer_obj_put(&win->w_obj);
	return 0;
}

/**
 * rdmaxfer_peer_win_add - record a window the peer advertised
 * @conn: the connection
 * @msg: the ADVERT payload
 * @len: its length
 *
 * Every field is checked: lengths, counts, overflow of address + length,
 * access bits, a duplicate id.
 *
 * Context: process context (the receive work).
 * Return: 0, -EPROTO for a malformed message, -ENOMEM.
 */
int rdmaxfer_peer_win_add(struct rdmaxfer_conn *conn, const void *msg, u32 len)
{
	const struct rdmaxfer_msg_advert *adv = msg;
	struct rdmaxfer_peer_win *pw;
	u64 total = 0, end;
	u32 i, nsegs, id;
	int ret;

	if (len < sizeof(*adv))
		return -EPROTO;
	nsegs = be32_to_cpu(adv->nsegs);
	id = be32_to_cpu(adv->window_id);
	if (!nsegs || nsegs > RDMAXFER_MAX_WIN_SEGS || len != struct_size(adv, segs, nsegs) ||
	    !id || adv->reserved ||
	    be32_to_cpu(adv->access) & ~(RDMAXFER_REMOTE_READ | RDMAXFER_REMOTE_WRITE |
					 RDMAXFER_REMOTE_ATOMIC) || !adv->access)
		return -EPROTO;
	pw = kzalloc(struct_size(pw, pw_segs, nsegs), GFP_KERNEL_ACCOUNT);
	if (!pw)
		return -ENOMEM;
	pw->pw_id = id;
	pw->pw_access = be32_to_cpu(adv->access);
	pw->pw_length = be64_to_cpu(adv->length);
	pw->pw_nsegs = nsegs;
	for (i = 0; i < nsegs; i++) {
		pw->pw_segs[i].addr = be64_to_cpu(adv->segs[i].addr);
		pw->pw_segs[i].rkey = be32_to_cpu(adv->segs[i].rkey);
		pw->pw_segs[i].length = be32_to_cpu(adv->segs[i].length);
		if (!pw->pw_segs[i].length ||
		    check_add_overflow(pw->pw_segs[i].addr, (u64)pw->pw_segs[i].length, &end))
			goto bad;
		total += pw->pw_segs[i].length;
	}
	if (total != pw->pw_length)
		goto bad;
	mutex_lock(&conn->c_peer_win_lock);
	if (conn->c_npeer_wins >= RDMAXFER_MAX_PEER_WINS) {
		ret = -EPROTO;		/* more windows than a peer may expose to us */
	} else {
		ret = xa_insert(&conn->c_peer_wins, id, pw, GFP_KERNEL);
		if (!ret)
			conn->c_npeer_wins++;
	}
	mutex_unlock(&conn->c_peer_win_lock);
	if (ret) {
		kfree(pw);
		return ret == -EBUSY ? -EPROTO : ret;
	}
	return 0;
bad:
	kfree(pw);
	return -EPROTO;
}

/**
 * rdmaxfer_peer_win_del - forget a window the peer revoked
 * @conn: the connection
 * @id: the peer's window id
 *
 * Operations already posted on it fail at the peer (remote access error).
 *
 * Context: process context.
 * Return: 0, -EPROTO if the peer never advertised it.
 */
int rdmaxfer_peer_win_del(struct rdmaxfer_conn *conn, u32 id)
{
	struct rdmaxfer_peer_win *pw;

	mutex_lock(&conn->c_peer_win_lock);
	pw = xa_erase(&conn->c_peer_wins, id);
	if (pw)
		conn->c_npeer_wins--;
	mutex_unlock(&conn->c_peer_win_lock);
	if (!pw)
		return -EPROTO;
	kfree(pw);
	return 0;
}

/**
 * rdmaxfer_peer_win_free_all - forget every window of the peer
 * @conn: the connection, torn down
 */
void rdmaxfer_peer_win_free_all(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_peer_win *pw;
	unsigned long id;

	lockdep_assert_held(&conn->c_teardown_lock);

	mutex_lock(&conn->c_peer_win_lock);
	xa_for_each(&conn->c_peer_wins, id, pw) {
		xa_erase(&conn->c_peer_wins, id);
		kfree(pw);
	}
	conn->c_npeer_wins = 0;
	mutex_unlock(&conn->c_peer_win_lock);
}
