// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - registrations: a range of a pinned buffer registered with
 * fast registration (IB_WR_REG_MR) in a connection's own PD.
 *
 * Both a window (window.c: the peer may access it, with the access EXPOSE
 * asked for) and a local registration (lmr.c: our own SENDs and slots,
 * local write only) are one struct rdmaxfer_reg.  A device maps at most
 * max_fast_reg_page_list_len pages per MR, so a registration is a list of
 * segments, one MR each, posted in batches on an empty send queue
 * (rdmaxfer_post_reg()) and waited for.  A window's segments follow each
 * other and may use huge FRWR pages (rdmaxfer_reg_huge()); a local
 * registration's keep base pages and may overlap (rdmaxfer_lmr_stride()).
 * Each registration rotates the MR's key; an MR's iova is an offset in the
 * registration, never an address of this host (rdmaxfer_reg_map_seg()).
 * Destroying a registration deregisters its MRs, invalidating their keys;
 * its owner drops the buffer only after that: invalidate, then unpin.
 *
 * The file is charged for the segments (rf_nmrs, at most
 * RDMAXFER_MAX_FILE_MRS), in case a peer or a user asks for many.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>

#include "rdmaxfer.h"

/**
 * rdmaxfer_seg_pages - pages one segment of a registration covers on a device
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

/* Free a registration's segments: deregister (invalidating the keys), unmap. */
static void rdmaxfer_reg_free_segs(struct rdmaxfer_reg *reg, struct ib_device *ib)
{
	u32 i;

	for (i = 0; i < reg->rg_nsegs; i++) {
		struct rdmaxfer_rseg *rs = &reg->rg_segs[i];

		if (rs->rs_mr)
			ib_dereg_mr(rs->rs_mr);
		if (rs->rs_sgt.nents)
			ib_dma_unmap_sgtable_attrs(ib, &rs->rs_sgt, DMA_BIDIRECTIONAL, 0);
		sg_free_table(&rs->rs_sgt);
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
 * may learn) to @base, the segment's place in the registration, plus the
 * offset of the first byte in its page (which the device's page list
 * needs).  So a window's advertised address is the window offset of the
 * segment plus the in-page offset of the window's first byte, whatever the
 * host.  With huge
 * pages that offset must be 0 (a DMA address that is not aligned to the
 * huge page, behind an IOMMU, is not mapped this way: -EINVAL).
 */
static int rdmaxfer_reg_map_seg(struct rdmaxfer_rseg *rs, struct ib_pd *pd,
				struct page **pages, u32 npages, u32 offset, u32 length,
				u64 base, u32 page_size)
{
	struct ib_device *ib = pd->device;
	u32 nmr = DIV_ROUND_UP(offset + length, page_size);
	int ret, n;

	ret = sg_alloc_table_from_pages_segment(&rs->rs_sgt, pages, npages, offset, length,
						ib_dma_max_seg_size(ib), GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	ret = ib_dma_map_sgtable_attrs(ib, &rs->rs_sgt, DMA_BIDIRECTIONAL, 0);
	if (ret) {
		rs->rs_sgt.nents = 0;
		return ret;
	}
	rs->rs_mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, nmr + RDMAXFER_MR_SPARE_PAGES);
	if (IS_ERR(rs->rs_mr)) {
		ret = PTR_ERR(rs->rs_mr);
		rs->rs_mr = NULL;
		return ret;
	}
	ib_update_fast_reg_key(rs->rs_mr, ib_inc_rkey(rs->rs_mr->rkey));
	n = ib_map_mr_sg(rs->rs_mr, rs->rs_sgt.sgl, rs->rs_sgt.nents, NULL, page_size);
	if (n != rs->rs_sgt.nents)
		return n < 0 ? n : -EINVAL;
	if (page_size != PAGE_SIZE && (rs->rs_mr->iova & (page_size - 1)))
		return -EINVAL;
	rs->rs_mr->iova = base + (rs->rs_mr->iova & (page_size - 1));
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
static bool rdmaxfer_reg_huge(struct ib_device *ib, struct page **pages,
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

/* The MR access of a registration with @access (rdmaxfer_reg_create()). */
static int rdmaxfer_reg_ib_access(u32 access)
{
	int acc = 0;

	if (!access)
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
	struct rdmaxfer_rseg *rs = container_of(wc->wr_cqe, struct rdmaxfer_rseg, rs_cqe);
	struct rdmaxfer_reg *reg = rs->rs_reg;

	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		/* the connection is going down: EXPOSE or SUBMIT reports that */
		reg->rg_status = -ENOTCONN;
		rdmaxfer_conn_flushed(reg->rg_conn);
	} else if (wc->status != IB_WC_SUCCESS) {
		pr_warn_ratelimited("conn %u: registration failed: %s\n", reg->rg_conn->c_obj.id,
				    ib_wc_status_msg(wc->status));
		reg->rg_status = -EIO;
		rdmaxfer_conn_fail(reg->rg_conn, -EIO);	/* the QP is in error now */
	}
	rdmaxfer_wr_release(reg->rg_conn, reg->rg_batch, 0);
	complete(&reg->rg_done);
}

/*
 * Register the segments: post their REG_MR work requests in
 * batches, the last of each batch signaled, each on an empty send queue
 * (rdmaxfer_post_reg() says why), and wait for each batch.
 */
static int rdmaxfer_reg_post(struct rdmaxfer_reg *reg)
{
	struct rdmaxfer_conn *conn = reg->rg_conn;
	struct ib_reg_wr wrs[RDMAXFER_REG_BATCH];
	int access = rdmaxfer_reg_ib_access(reg->rg_access);
	struct rdmaxfer_rseg *last;
	u32 i, first, n;
	int ret;

	for (first = 0; first < reg->rg_nsegs; first += n) {
		n = min_t(u32, reg->rg_nsegs - first, RDMAXFER_REG_BATCH);
		memset(wrs, 0, sizeof(wrs));
		for (i = 0; i < n; i++) {
			struct rdmaxfer_rseg *rs = &reg->rg_segs[first + i];

			wrs[i].wr.opcode = IB_WR_REG_MR;
			wrs[i].wr.next = i + 1 < n ? &wrs[i + 1].wr : NULL;
			/* an error of an unsignaled one must not go unseen */
			wrs[i].wr.wr_cqe = &conn->c_sq.sq_err_cqe;
			wrs[i].mr = rs->rs_mr;
			wrs[i].key = rs->rs_mr->rkey;
			wrs[i].access = access;
		}
		last = &reg->rg_segs[first + n - 1];
		last->rs_cqe.done = rdmaxfer_reg_done;
		wrs[n - 1].wr.wr_cqe = &last->rs_cqe;
		wrs[n - 1].wr.send_flags = IB_SEND_SIGNALED;
		reg->rg_batch = n;
		reinit_completion(&reg->rg_done);
		ret = rdmaxfer_post_reg(conn, &wrs[0].wr, n);
		if (ret)
			return ret;
		/*
		 * The WRs complete even if the QP dies (flushed), but maybe only
		 * behind operations a slow peer holds up.  A fatal signal fails
		 * the connection: its teardown flushes them (it disconnects
		 * before it waits for us to leave rdmaxfer_conn_exit()).
		 */
		if (wait_for_completion_killable(&reg->rg_done)) {
			rdmaxfer_conn_fail(conn, -EINTR);
			wait_for_completion(&reg->rg_done);
			return -EINTR;
		}
		if (reg->rg_status)
			return reg->rg_status;
	}
	return 0;
}

/**
 * rdmaxfer_reg_nsegs - segments a registration of a range takes
 * @ib: the device
 * @buf: the buffer
 * @offset: start of the range in it
 * @length: its length, at least 1
 * @access: as for rdmaxfer_reg_create()
 *
 * Return: the number with base pages, the most it takes (huge pages take
 * fewer).
 */
u32 rdmaxfer_reg_nsegs(struct ib_device *ib, const struct rdmaxfer_buf *buf, u64 offset,
		       u64 length, u32 access)
{
	u32 in_page = offset_in_page(offset_in_page(buf->b_addr) + offset);
	unsigned long npages = DIV_ROUND_UP(in_page + length, PAGE_SIZE);
	u32 seg_pages = rdmaxfer_seg_pages(ib);

	return rdmaxfer_nsegs(npages, seg_pages, access ? seg_pages : rdmaxfer_lmr_stride(ib));
}

/**
 * rdmaxfer_reg_create - register a range of a buffer in a connection's PD
 * @reg: the registration, zeroed
 * @rf: the file charged for its segments
 * @conn: the connection; its owner holds a reference for as long as @reg lives
 * @buf: the buffer, likewise
 * @offset: start of the range in @buf, checked by the caller
 * @length: its length, at least 1, likewise
 * @access: RDMAXFER_REMOTE_* for a window; 0 for a local registration
 *	(local write only, base pages, segments rdmaxfer_lmr_stride() apart)
 *
 * Splits the range into segments of at most the device's FRWR page list,
 * maps each and registers them all.  @reg then holds a reference on the
 * device and a user of @conn's PD, until rdmaxfer_reg_destroy().
 *
 * Context: process, may sleep; between rdmaxfer_conn_enter() and
 * rdmaxfer_conn_exit().
 * Return: 0; -ENOSPC (the file's registrations have RDMAXFER_MAX_FILE_MRS
 * segments), -ENOMEM, or what mapping or registering failed with, and
 * then nothing is left to undo.
 */
int rdmaxfer_reg_create(struct rdmaxfer_reg *reg, struct rdmaxfer_file *rf,
			struct rdmaxfer_conn *conn, struct rdmaxfer_buf *buf, u64 offset,
			u64 length, u32 access)
{
	struct ib_device *ib = conn->c_dev->rd_ib;
	u32 seg_pages = rdmaxfer_seg_pages(ib), page_size = PAGE_SIZE, stride;
	u64 first_byte = offset_in_page(buf->b_addr) + offset;
	unsigned long fp = first_byte >> PAGE_SHIFT, npages;
	u32 in_page = offset_in_page(first_byte);
	bool local = !access;
	u32 nsegs, i;
	int ret;

	lockdep_assert_held_read(&conn->c_post_sem);
	npages = DIV_ROUND_UP(in_page + length, PAGE_SIZE);
	stride = local ? rdmaxfer_lmr_stride(ib) : seg_pages;
	nsegs = rdmaxfer_nsegs(npages, seg_pages, stride);
	ret = -ENOSPC;
	if (atomic_add_return(nsegs, &rf->rf_nmrs) > RDMAXFER_MAX_FILE_MRS)
		goto out_nmrs;
	ret = -ENOMEM;
	reg->rg_segs = kcalloc(nsegs, sizeof(*reg->rg_segs), GFP_KERNEL_ACCOUNT);
	if (!reg->rg_segs)
		goto out_nmrs;
	reg->rg_file = rf;
	reg->rg_conn = conn;
	reg->rg_dev = conn->c_dev;
	kref_get(&reg->rg_dev->rd_ref);
	rdmaxfer_conn_pd_get(conn);
	reg->rg_buf = buf;
	reg->rg_length = length;
	reg->rg_access = access;
	init_completion(&reg->rg_done);
	/* local registrations keep base pages: rdmaxfer_lmr_sges() counts on it */
	if (!local && rdmaxfer_reg_huge(ib, buf->b_pages + fp, npages, buf->b_addr + offset)) {
		page_size = PMD_SIZE;
		seg_pages = rdmaxfer_huge_seg(ib) * RDMAXFER_HUGE_PAGES;
	}
again:
	/* segment i starts at page i * stride (a window's do not overlap) */
	stride = local ? stride : seg_pages;
	reg->rg_nsegs = rdmaxfer_nsegs(npages, seg_pages, stride);
	for (i = 0; i < reg->rg_nsegs; i++) {
		u32 np = min_t(unsigned long, seg_pages, npages - i * stride);
		u64 seg_start = i ? (u64)i * stride * PAGE_SIZE - in_page : 0;
		u32 len = min_t(u64, length - seg_start, (u64)np * PAGE_SIZE - (i ? 0 : in_page));

		reg->rg_segs[i].rs_reg = reg;
		ret = rdmaxfer_reg_map_seg(&reg->rg_segs[i], conn->c_pd,
					   buf->b_pages + fp + i * stride, np, i ? 0 : in_page,
					   len, (u64)i * stride << PAGE_SHIFT, page_size);
		if (ret && page_size != PAGE_SIZE) {
			/* not as huge pages, then: as base pages */
			rdmaxfer_reg_free_segs(reg, ib);
			memset(reg->rg_segs, 0, nsegs * sizeof(reg->rg_segs[0]));
			page_size = PAGE_SIZE;
			seg_pages = rdmaxfer_seg_pages(ib);
			goto again;
		}
		if (ret)
			break;
	}
	/* the file is charged for the base-page layout, the most it takes */
	atomic_sub(nsegs - reg->rg_nsegs, &rf->rf_nmrs);
	if (!ret)
		ret = rdmaxfer_reg_post(reg);
	if (ret)
		rdmaxfer_reg_destroy(reg);
	return ret;

out_nmrs:
	atomic_sub(nsegs, &rf->rf_nmrs);
	return ret;
}

/**
 * rdmaxfer_reg_destroy - deregister a registration and free its segments
 * @reg: a registration rdmaxfer_reg_create() made, no longer in use (its
 *	connection drained, or no operation holding its buffer)
 *
 * Its keys are invalid once this returns: only then may the owner drop
 * the buffer.
 *
 * Context: process context.
 */
void rdmaxfer_reg_destroy(struct rdmaxfer_reg *reg)
{
	might_sleep();
	rdmaxfer_reg_free_segs(reg, reg->rg_dev->rd_ib);
	kfree(reg->rg_segs);
	atomic_sub(reg->rg_nsegs, &reg->rg_file->rf_nmrs);
	rdmaxfer_conn_pd_put(reg->rg_conn);
	rdmaxfer_device_put(reg->rg_dev);
}
