// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - windows: EXPOSE and REVOKE, a slice of a registered buffer
 * that the peer may read or write.
 *
 * EXPOSE registers a slice of a buffer with fast registration
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
 * The same registration, never advertised and without an id, serves a
 * buffer's local registration on a connection (lmr.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "rdmaxfer.h"
#include "trace.h"

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
			wrs[i].wr.wr_cqe = &conn->c_sq.sq_err_cqe;
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
struct rdmaxfer_window *rdmaxfer_window_create(struct rdmaxfer_file *rf,
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
