/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmaxfer - declarations shared between the files of the module.
 *
 * The module is split by layer and by object (Documentation/architecture.md
 * draws it): main.c loads and unloads it; chardev.c owns /dev/rdmaxfer
 * (per-file context, ids, the ioctl table, GET_INFO, STATS) and event.c a
 * file's event queue (REAP); cm.c speaks rdma_cm (CONNECT, CLOSE,
 * QUERY_CONN), listen.c is the listener (LISTEN, ACCEPT) and auth.c who may
 * connect; buf.c pins buffers, reg.c registers their ranges (FRWR),
 * window.c exposes them as windows, lmr.c registers them locally for SENDs
 * and slots, peer_win.c keeps the peer's
 * windows; xfer.c issues operations and completes them, rw.c posting
 * WRITEs and READs through rdma_rw and atomic.c CAS and FADD; below them
 * ctrl.c is the control channel (control buffers, sending, receiving),
 * msg.c what the peer's messages mean (checked, acted on; RECV of their
 * data), credit.c its credit ledger, slot.c the user's receive slots (echo,
 * sink) and zero-copy SENDs into the peer's, conn.c a connection's queue
 * pair (setup, fail, stop and destroy), sq.c its send queue's room and
 * owed completions, keepalive.c its probes (dead peers) and user.c a
 * user's count of connections; device.c follows RDMA devices through an
 * ib_client.  Only uapi/linux/rdmaxfer.h is visible to
 * userspace; proto.h is the wire.
 *
 * Object lifetimes (see Documentation/architecture.md):
 *  - a file owns its objects through an xarray of ids; each object is
 *    kref'd, and the id table holds one reference;
 *  - a connection holds a reference on its device; the device's .remove
 *    tears every connection on it down before it returns;
 *  - an operation holds references on its connection and buffer until its
 *    one completion has been delivered; a window holds its buffer.
 *
 * Locking.  The one written order; the comments of each file and
 * Documentation/architecture.md point here.  Outer to inner:
 *
 *   c_teardown_lock (mutex, per connection: teardown, QUERY_CONN)
 *     > a cm_id's handler lock (CONNECT takes it with rdma_lock_handler()
 *       to send the connect request, as rdma_destroy_id() does in teardown)
 *     > c_post_sem (rwsem: ioctls that post hold it for read, teardown
 *       takes it for write once)
 *       > rf_lock (mutex, per file: id table changes; also taken under
 *         c_teardown_lock directly, when teardown releases windows and ids)
 *         > the xarray lock of rf_objs (lookups take it alone)
 *       > c_lmr_lock (mutex, per connection: its local registrations,
 *         lmr.c; held across a registration, which waits for the REG_MR's
 *         completion, so never under rf_lock; also taken under
 *         c_teardown_lock directly, and alone by DEREG_BUF)
 *         > c_lock
 *     > c_peer_win_lock (mutex: the peer's windows; SUBMIT takes it alone)
 *     > rd_lock (mutex, per device: its connection list)
 *       > c_lock (spinlock, bottom halves off: state, credits, room, lists)
 *
 * Leaves, never held together and never held while taking another lock:
 * c_lock (but under rd_lock in rdmaxfer_device_attach()), l_lock (listener
 * queues), rf_ev_lock (bottom halves off: the file's events),
 * rdmaxfer_users_lock (mutex: the per-user counts, user.c; taken at open
 * and where a file's last reference goes).  The other xarrays' own locks
 * (c_peer_wins, under c_peer_win_lock; rdmaxfer_devices; rdmaxfer_users,
 * under rdmaxfer_users_lock) are taken only inside xa_*() calls: leaves.  A key's
 * semaphore (key->sem, for reading: auth.c) is taken under a cm_id's
 * handler lock or in LISTEN/CONNECT, with none of ours held.
 *
 * Waiting counts as taking: rdma_destroy_id() waits for the id's CM handler,
 * which may take rf_lock, rd_lock, c_lock, l_lock and rf_ev_lock, so none of
 * those is held across it (c_teardown_lock is: no handler takes it).
 * ib_drain_qp() waits for completion handlers, which take c_lock and
 * rf_ev_lock, and teardown then flushes cb_rx_work, which takes
 * c_peer_win_lock too (and c_post_sem for read, when a closing file frees
 * a peer event: teardown flushes after its down_write()/up_write()).
 * Functions that need a lock held say so with
 * lockdep_assert_held(), and those that sleep with might_sleep(), so that
 * a lockdep kernel (make check KERNEL=debug) checks these rules.
 */
#ifndef RDMAXFER_H
#define RDMAXFER_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/memcontrol.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>
#include <uapi/linux/rdmaxfer.h>

#include "compat.h"
#include "proto.h"

struct key;

#define RDMAXFER_VERSION	"0.3.0"
/* RDMA READs and atomics in flight per QP, each way: at most this, the device's and the peer's */
#define RDMAXFER_RD_ATOM	128

/* Sizing of one connection (see conn.c for how they fit together). */
#define RDMAXFER_CTRL_SIZE	4096	/* bytes per control buffer */
#define RDMAXFER_RECV_DEPTH	32	/* receive buffers = peer's credits */
#define RDMAXFER_SEND_BUFS	32	/* control send buffers */
#define RDMAXFER_RW_CTXS	128	/* rdma_rw contexts (operation pieces) */
#define RDMAXFER_SIGNAL_EVERY	16	/* pieces per chain: one doorbell, one CQE */
#define RDMAXFER_SIGNAL_BYTES	SZ_1M	/* and a CQE at least every 1 MiB of a chain */
#define RDMAXFER_IWARP_READ_PAGES 64	/* pages of an iWARP READ (keepalive.c) */
#define RDMAXFER_SQ_WRS		1536	/* our send WRs, besides rdma_rw's own */
#define RDMAXFER_SQ_SPARE	2	/* send WRs for the drain and the keepalive */
#define RDMAXFER_SEND_SGES	16	/* SGEs of a send WR (a WRITE's pages) */
/*
 * What a send queue may grow to with rdma_rw's WRs (at most 3 a context:
 * REG_MR, the transfer, LOCAL_INV) and the keepalive's context.  Providers
 * give a queue a power of two of slots, often one more than asked (rxe:
 * 2048 slots of 512 bytes at 16 SGEs; 4096 of 1 KiB at 2048 WRs and 32
 * SGEs), so stay under it: queue memory is what a peer's connection costs.
 */
#define RDMAXFER_SQ_BOUND	2047
#define RDMAXFER_REG_BATCH	16	/* FRWR registrations posted at once */
#define RDMAXFER_MAX_SEG_PAGES	4096	/* pages per registration segment, at most */
#define RDMAXFER_MAX_WIN_SEGS	((RDMAXFER_CTRL_SIZE - sizeof(struct rdmaxfer_msg_hdr) - \
				  sizeof(struct rdmaxfer_msg_advert)) /			 \
				 sizeof(struct rdmaxfer_msg_seg))
#define RDMAXFER_MAX_SEND	(RDMAXFER_CTRL_SIZE - sizeof(struct rdmaxfer_msg_hdr))
#define RDMAXFER_MAX_MSGS	RDMAXFER_RECV_DEPTH	/* queued, not RECV'd */
#define RDMAXFER_DATA_RESERVE	8	/* credits a SEND leaves for control messages */
#define RDMAXFER_FREE_PEER_EVENTS 64	/* unreaped peer events before credits are held */
/* Receive slots (slot.c, credit.c; "Receive slots" in proto.h). */
#define RDMAXFER_MAX_SLOTS	512	/* slots posted on one connection */
#define RDMAXFER_MIN_SLOT	64	/* bytes: a slot holds any CREDIT message */
#define RDMAXFER_RQ_MIRROR	1024	/* mirror of announced entries, >= our receive queue */
#define RDMAXFER_MIN_CTRL_RECVS	1	/* control buffers kept posted in slot mode */
#define RDMAXFER_MIN_RECVS	4	/* receive entries kept posted in slot mode */
#define RDMAXFER_MAX_RUNS	((RDMAXFER_MIN_SLOT - sizeof(struct rdmaxfer_msg_hdr)) / \
				 sizeof(struct rdmaxfer_msg_run))
#define RDMAXFER_MAX_MSG_SGES	8	/* registration segments one SEND or slot spans */
/* receive queue: control buffers, slots, the drain's */
#define RDMAXFER_RQ_SIZE	(RDMAXFER_RECV_DEPTH + RDMAXFER_MAX_SLOTS + 1)

/* Per-file limits (GET_INFO reports them). */
#define RDMAXFER_MAX_BUF_SIZE	(64ULL * SZ_1G)
#define RDMAXFER_MAX_BATCH	256
#define RDMAXFER_MAX_PENDING	4096
#define RDMAXFER_MAX_OBJECTS	4096	/* a window takes an MR: RDMAXFER_MAX_FILE_MRS */
#define RDMAXFER_MAX_FILE_MRS	4096	/* registration segments (FRWR MRs) alive per file */
#define RDMAXFER_CONNECT_TIMEOUT_MS	10000
#define RDMAXFER_CONNECT_TRIES	4	/* CONNECT attempts when TCP holds the port (iWARP) */
#define RDMAXFER_LISTEN_TRIES	8	/* LISTEN (any port) attempts when TCP holds it (iWARP) */
/*
 * Windows one peer may have exposed to one connection (ADVERTs beyond:
 * EPROTO); EXPOSE keeps to what the peer takes (ENOSPC): this many if its
 * hello says RDMAXFER_HELLO_WINS, else RDMAXFER_OLD_PEER_WINS.  Their
 * segments together are at most RDMAXFER_MAX_FILE_MRS, all one file of
 * the peer may have registered.
 */
#define RDMAXFER_MAX_PEER_WINS	1024
#define RDMAXFER_OLD_PEER_WINS	256

/*
 * Dead-peer detection (conn.c): transport retries after the first try (7
 * would mean "forever" on rxe), the default bound (module parameter
 * peer_timeout_ms), and its limits.
 */
#define RDMAXFER_RETRY_COUNT		6
#define RDMAXFER_PEER_TIMEOUT_MS	10000
#define RDMAXFER_PEER_TIMEOUT_MIN_MS	2000	/* 7 tries of 134 ms fit in half */
#define RDMAXFER_PEER_TIMEOUT_MAX_MS	3600000

extern struct workqueue_struct *rdmaxfer_wq;
extern struct workqueue_struct *rdmaxfer_rx_wq;

/**
 * struct rdmaxfer_device - per-RDMA-device state
 * @rd_ib: the device; valid until rdmaxfer_remove_one() has returned
 * @rd_index: the RDMA core's index of @rd_ib, the name userspace uses
 * @rd_ref: one reference for the registry, one per user
 * @rd_released: completed when the last reference is dropped
 * @rd_lock: protects @rd_conns, @rd_dying
 * @rd_conns: connections using the device
 * @rd_dying: set by .remove: no new connection may attach
 */
struct rdmaxfer_device {
	struct ib_device	*rd_ib;
	u32			rd_index;
	struct kref		rd_ref;
	struct completion	rd_released;
	struct mutex		rd_lock;	/* conns, dying */
	struct list_head	rd_conns;
	bool			rd_dying;
};

enum rdmaxfer_obj_type {
	RDMAXFER_OBJ_LISTENER = 1,
	RDMAXFER_OBJ_CONN,
	RDMAXFER_OBJ_BUF,
	RDMAXFER_OBJ_WINDOW,
};

/* Where an object's id stands in its file's id table (under rf_lock). */
enum rdmaxfer_id_state {
	RDMAXFER_ID_NONE,	/* no id yet */
	RDMAXFER_ID_RESERVED,	/* an id, but lookups do not find the object */
	RDMAXFER_ID_PUBLISHED,	/* the table names it and holds a reference */
	RDMAXFER_ID_GONE,	/* removed: the number stays in @id for events */
};

/**
 * struct rdmaxfer_obj - what every object a file owns starts with
 * @type: enum rdmaxfer_obj_type
 * @id: its id in the file (0 until reserved)
 * @id_state: enum rdmaxfer_id_state, under the file's rf_lock
 * @ref: references; the release depends on @type (rdmaxfer_obj_put())
 * @put_node: on the list of last references dropped in softirq context,
 *	released by a work item (rdmaxfer_obj_put_atomic())
 * @file: the owning file; the object holds a reference on it
 */
struct rdmaxfer_obj {
	u32			type;
	u32			id;
	u32			id_state;
	struct kref		ref;
	struct rdmaxfer_file	*file;
	struct llist_node	put_node;
};

/**
 * struct rdmaxfer_event - a completion or event waiting to be reaped
 * @ev_entry: on rdmaxfer_file.rf_events
 * @ev_free: how to release the memory around it after REAP (NULL: kfree)
 * @ev_reap: it must be reaped, never written to the ring: @ev_free gives
 *	a credit back, which needs process context and means "the user has
 *	taken it" (event.c)
 * @ev: what REAP copies out
 */
struct rdmaxfer_event {
	struct list_head		ev_entry;
	void				(*ev_free)(struct rdmaxfer_event *ev);
	bool				ev_reap;
	struct rdmaxfer_completion	ev;
};

/*
 * Counters, in the order of struct rdmaxfer_counters (uapi), then of
 * struct rdmaxfer_auth_counters
 */
enum rdmaxfer_counter {
	RDMAXFER_C_OPS = 0,		/* + RDMAXFER_OP_* */
	RDMAXFER_C_BYTES = 8,		/* + RDMAXFER_OP_* */
	RDMAXFER_C_ERRORS = 16,		/* + RDMAXFER_OP_* */
	RDMAXFER_C_RECV_MSGS = 24,
	RDMAXFER_C_RECV_BYTES,
	RDMAXFER_C_WRITES_IMM_IN,
	RDMAXFER_C_CONNS,
	RDMAXFER_C_CONN_ERRORS,
	RDMAXFER_C_PROTOCOL_ERRORS,
	RDMAXFER_C_AUTH_OK,
	RDMAXFER_C_AUTH_FAILED,
	RDMAXFER_C_NOT_ALLOWED,
	RDMAXFER_NR_COUNTERS
};

#define RDMAXFER_NR_BASE_COUNTERS	RDMAXFER_C_AUTH_OK

/**
 * struct rdmaxfer_stats_k - counters of a file, or of the module
 * @c: indexed by enum rdmaxfer_counter
 */
struct rdmaxfer_stats_k {
	atomic64_t	c[RDMAXFER_NR_COUNTERS];
};

struct rdmaxfer_user;

/*
 * The two kinds of message the credit ledger places (credit.c, proto.h):
 * a control message fits any entry long enough, a user's SEND only a slot.
 */
enum rdmaxfer_msg_kind {
	RDMAXFER_KIND_CTRL,
	RDMAXFER_KIND_USER,
	RDMAXFER_NR_KINDS,
};

/**
 * struct rdmaxfer_file - per-open-file context of /dev/rdmaxfer
 * @rf_ref: the open file holds one reference and every object one: work
 *	that outlives release() (a connection's teardown work, a device
 *	removal) may still reach the file through its objects
 * @rf_net: network namespace of the opener; connections are made in it
 * @rf_memcg: memory cgroup of the opener: what is allocated for the file is
 *	charged there (chardev.c)
 * @rf_lock: serialises changes to the id table and object setup/teardown
 * @rf_objs: id -> struct rdmaxfer_obj; holds one reference on each
 * @rf_ev_lock: protects @rf_events, @rf_pending and the ring's tail
 * @rf_events: completions and events in the order they happened
 * @rf_pending: operations posted or completed but not yet reaped, plus events
 * @rf_wait: REAP, ACCEPT and poll() wait here
 * @rf_closing: release() has started: events are dropped
 * @rf_ring: the completion ring shared with userspace, or NULL (set once,
 *	under @rf_lock and @rf_ev_lock; freed by release())
 * @rf_ring_live: the ring has been mapped: events go there (under
 *	@rf_ev_lock)
 * @rf_reaping: REAPs holding events taken off the queue, not yet copied out:
 *	the ring takes nothing meanwhile (under @rf_ev_lock)
 * @rf_ring_entries: its number of entries (a power of 2)
 * @rf_ring_tail: its tail, the kernel's own copy (userspace may scribble
 *	over the shared one)
 * @rf_ring_size: bytes of @rf_ring, a multiple of PAGE_SIZE
 * @rf_nobjs: ids in @rf_objs, reserved or published (under @rf_lock)
 * @rf_next_id: where the cyclic id allocation goes on (under @rf_lock)
 * @rf_pinned: bytes this file has pinned
 * @rf_nmrs: MRs of this file's registrations (windows and local ones), alive
 *	(at most RDMAXFER_MAX_FILE_MRS: overlapping windows would otherwise
 *	multiply one pinned buffer into any number of MRs and DMA mappings
 *	that nothing charges)
 * @rf_nconns: connections of this file, made or accepted, at most
 *	max_conns_per_file (conn.c)
 * @rf_user: the opener's count of connections over all its files (user.c)
 * @rf_stats: this file's counters
 * @rf_trace_id: the file's number in tracepoints (trace.h), set at open
 */
struct rdmaxfer_file {
	struct kref		rf_ref;
	struct net		*rf_net;
	struct mem_cgroup	*rf_memcg;
	struct mutex		rf_lock;	/* id table changes */
	struct xarray		rf_objs;
	spinlock_t		rf_ev_lock;	/* events, pending */
	struct list_head	rf_events;
	u32			rf_pending;
	wait_queue_head_t	rf_wait;
	bool			rf_closing;
	struct rdmaxfer_ring	*rf_ring;
	bool			rf_ring_live;
	u32			rf_reaping;
	u32			rf_ring_entries;
	u32			rf_ring_tail;
	size_t			rf_ring_size;
	u32			rf_nobjs;
	u32			rf_next_id;
	atomic64_t		rf_pinned;
	atomic_t		rf_nmrs;
	atomic_t		rf_nconns;
	struct rdmaxfer_user	*rf_user;
	struct rdmaxfer_stats_k	rf_stats;
	u32			rf_trace_id;
};

extern struct rdmaxfer_stats_k rdmaxfer_global_stats;

/* Add @n to a counter of the file and of the module. */
static inline void rdmaxfer_count(struct rdmaxfer_file *rf, unsigned int counter, u64 n)
{
	atomic64_add(n, &rf->rf_stats.c[counter]);
	atomic64_add(n, &rdmaxfer_global_stats.c[counter]);
}

/**
 * struct rdmaxfer_buf - a registered user buffer
 * @b_obj: id and references: the id table, every window and every
 *	operation using it
 * @b_mm: the mm the pages were pinned from and charged to
 * @b_addr: user address of the first byte
 * @b_length: bytes
 * @b_access: RDMAXFER_BUF_*
 * @b_pages: the pinned pages
 * @b_npages: number of @b_pages
 * @b_nlmrs: connections that keep a local registration of it (lmr.c,
 *	rdmaxfer_lmr_get()), each holding a reference
 */
struct rdmaxfer_buf {
	struct rdmaxfer_obj	b_obj;
	struct mm_struct	*b_mm;
	u64			b_addr;
	u64			b_length;
	u32			b_access;
	struct page		**b_pages;
	unsigned long		b_npages;
	atomic_t		b_nlmrs;
};

/**
 * struct rdmaxfer_rseg - one FRWR-registered segment of a registration
 * @rs_reg: the registration
 * @rs_mr: the memory region (our own, not from the rdma_rw pool)
 * @rs_sgt: its pages, DMA-mapped on the connection's device
 * @rs_cqe: completion of its registration WR, when signaled
 */
struct rdmaxfer_rseg {
	struct rdmaxfer_reg	*rs_reg;
	struct ib_mr		*rs_mr;
	struct sg_table		rs_sgt;
	struct ib_cqe		rs_cqe;
};

/**
 * struct rdmaxfer_reg - a range of a buffer registered in a connection's PD
 * @rg_file: the file charged for its segments (rf_nmrs); not a reference:
 *	the owner's keeps it (a window's object, a local registration's
 *	connection)
 * @rg_conn: the connection (its owner holds a reference)
 * @rg_dev: the device its MRs are on (reference)
 * @rg_buf: the buffer (its owner holds a reference)
 * @rg_length: bytes
 * @rg_access: RDMAXFER_REMOTE_* (a window), or 0 (a local registration)
 * @rg_done: registration WRs completed
 * @rg_status: their status
 * @rg_batch: WRs in the batch being registered
 * @rg_nsegs: number of @rg_segs
 * @rg_segs: the segments
 *
 * What a window and a local registration have in common (reg.c).
 */
struct rdmaxfer_reg {
	struct rdmaxfer_file	*rg_file;
	struct rdmaxfer_conn	*rg_conn;
	struct rdmaxfer_device	*rg_dev;
	struct rdmaxfer_buf	*rg_buf;
	u64			rg_length;
	u32			rg_access;
	struct completion	rg_done;
	int			rg_status;
	u32			rg_batch;
	u32			rg_nsegs;
	struct rdmaxfer_rseg	*rg_segs;
};

/**
 * struct rdmaxfer_window - a slice of a buffer exposed to one peer
 * @w_obj: id in the owning file (the peer names the window by it) and
 *	references: the id table and the connection's window list
 * @w_entry: on rdmaxfer_conn.c_windows
 * @w_reg: its registration, with the access EXPOSE asked for; the window
 *	holds a reference on the connection and one on the buffer
 */
struct rdmaxfer_window {
	struct rdmaxfer_obj	w_obj;
	struct list_head	w_entry;
	struct rdmaxfer_reg	w_reg;
};

/**
 * struct rdmaxfer_lmr - a buffer's local registration on a connection
 * @lm_entry: on rdmaxfer_conn.c_lmrs (c_lmr_lock)
 * @lm_reg: the whole buffer, local write only, never advertised, for the
 *	connection's own SENDs and slots (lmr.c); the local registration
 *	holds a reference on the connection and one on the buffer
 */
struct rdmaxfer_lmr {
	struct list_head	lm_entry;
	struct rdmaxfer_reg	lm_reg;
};

/**
 * struct rdmaxfer_peer_win - a window the peer exposed to us
 * @pw_id: the peer's id of it
 * @pw_access: RDMAXFER_REMOTE_*
 * @pw_length: bytes
 * @pw_nsegs: number of @pw_segs
 * @pw_segs: segments in window order, host byte order
 */
struct rdmaxfer_peer_win {
	u32			pw_id;
	u32			pw_access;
	u64			pw_length;
	u32			pw_nsegs;
	struct {
		u64		addr;
		u32		rkey;
		u32		length;
	}			pw_segs[];
};

enum rdmaxfer_conn_state {
	RDMAXFER_CS_CONNECTING = RDMAXFER_CONN_CONNECTING,
	RDMAXFER_CS_ESTABLISHED = RDMAXFER_CONN_ESTABLISHED,
	RDMAXFER_CS_DOWN = RDMAXFER_CONN_DISCONNECTED,
};

/**
 * struct rdmaxfer_rx_wc - a receive completion kept for the receive work
 * @rx_entry: on rdmaxfer_conn.c_cb.cb_rx_defer, in completion order
 * @rx_slot: of a slot (else of a control buffer)
 * @rx_status: the work completion's status
 * @rx_len: its byte_len
 * @rx_flags: its wc_flags
 * @rx_imm: its immediate, as on the wire
 *
 * The receive CQ polls in softirq context; a completion that needs process
 * context (a control message) is copied here and handled by cb_rx_work, and
 * so is every completion after it until that work has caught up (ctrl.c).
 */
struct rdmaxfer_rx_wc {
	struct list_head	rx_entry;
	bool			rx_slot;
	enum ib_wc_status	rx_status;
	u32			rx_len;
	int			rx_flags;
	__be32			rx_imm;
};

/**
 * struct rdmaxfer_cqe - the completion of a work request we wait for
 * @cqe: its handler
 * @owed: a signaled send WR whose completion gives something back: on
 *	rdmaxfer_conn.c_sq.sq_owed from its posting to its completion (sq.c)
 */
struct rdmaxfer_cqe {
	struct ib_cqe		cqe;
	struct list_head	owed;
};

/**
 * struct rdmaxfer_ctrl - a control buffer (one SEND or one RECV)
 * @ct_conn: its connection
 * @ct_cqe: its completion (sends: owed, see sq.c)
 * @ct_entry: on the free list (sends)
 * @ct_buf: RDMAXFER_CTRL_SIZE bytes
 * @ct_dma: @ct_buf mapped on the device
 * @ct_req: the operation this send belongs to (SEND, WRITE_IMM), or NULL
 * @ct_rx: receive buffers: the completion, when the receive work handles it
 */
struct rdmaxfer_ctrl {
	struct rdmaxfer_conn	*ct_conn;
	struct rdmaxfer_cqe	ct_cqe;
	struct list_head	ct_entry;
	void			*ct_buf;
	u64			ct_dma;
	struct rdmaxfer_req	*ct_req;
	struct rdmaxfer_rx_wc	ct_rx;
};

/**
 * struct rdmaxfer_msg - a message received (SEND), waiting for RECV
 * @m_entry: on rdmaxfer_conn.c_cb.cb_msgs
 * @m_length: bytes in @m_data
 * @m_data: the payload
 */
struct rdmaxfer_msg {
	struct list_head	m_entry;
	u32			m_length;
	u8			m_data[];
};

/**
 * struct rdmaxfer_probe - the READ probe of an iWARP connection (keepalive.c)
 * @pr_conn: its connection
 * @pr_page: RDMAXFER_PROBE_LEN zero bytes at its start, for the peer to
 *	read; our READ of the peer's lands in its second half
 * @pr_dma: the bytes the peer reads, mapped to the device
 * @pr_mr: registers them, REMOTE_READ alone, at iova 0
 * @pr_reg_cqe: the registration's completion
 * @pr_ctx: the rdma_rw context of our READ
 * @pr_sg: its sink
 * @pr_peer_addr: where the peer's probe bytes are, from its PROBE message
 * @pr_peer_rkey: and their key
 * @pr_registered: our registration is posted (keepalive work)
 * @pr_told: our PROBE message went (keepalive work)
 * @pr_peer_known: the peer's PROBE message came (c_lock)
 * @pr_in_flight: @pr_ctx holds a READ posted and not yet done with (c_lock)
 */
struct rdmaxfer_probe {
	struct rdmaxfer_conn	*pr_conn;
	struct page		*pr_page;
	u64			pr_dma;
	struct ib_mr		*pr_mr;
	struct ib_cqe		pr_reg_cqe;
	struct rdma_rw_ctx	pr_ctx;
	struct scatterlist	pr_sg;
	u64			pr_peer_addr;
	u32			pr_peer_rkey;
	bool			pr_registered;
	bool			pr_told;
	bool			pr_peer_known;
	bool			pr_in_flight;
};

/**
 * struct rdmaxfer_ledger - a connection's credit ledger (credit.c)
 * @lg_credits: the peer's announced receive entries we have not claimed
 *	(rdmaxfer_credit_claim()) or used
 * @lg_peer_recvs: most receive entries the peer may have announced unused
 * @lg_tx_seq: number of the peer's entry our next message takes
 * @lg_tx_end: number of the peer's first entry not announced yet
 * @lg_tx_caps: the peer's entries [@lg_tx_seq, @lg_tx_end): capacity |
 *	RDMAXFER_RUN_SLOT, indexed by number modulo RDMAXFER_RQ_MIRROR
 * @lg_peer_slots: the peer has announced a slot: SENDs go zero-copy
 * @lg_rx_seq: number our next posted receive entry gets
 * @lg_rx_ann: number of our first entry not announced to the peer yet
 * @lg_rx_caps: our entries [@lg_rx_ann, @lg_rx_seq), as @lg_tx_caps
 * @lg_rx_done: number of our first entry not completed yet
 * @lg_peer_wants: the peer sent a WANT not answered yet
 * @lg_peer_want: its lengths, by enum rdmaxfer_msg_kind: of a control message, of a user's
 *	SEND (0: none)
 * @lg_want_due: a message of ours waits for the peer's entries: send a WANT
 * @lg_want: the shortest ones that wait, as @lg_peer_want
 * @lg_want_sent: what our last WANT asked, since the last announcement
 * @lg_skip_cqe: completion of our skips (empty SENDs)
 *
 * The peer's receive entries we may take, and ours we owe it.  Under the
 * connection's c_lock.
 */
struct rdmaxfer_ledger {
	u32		lg_credits;
	u32		lg_peer_recvs;
	u32		lg_tx_seq;
	u32		lg_tx_end;
	u32		*lg_tx_caps;
	bool		lg_peer_slots;
	u32		lg_rx_seq;
	u32		lg_rx_ann;
	u32		*lg_rx_caps;
	u32		lg_rx_done;
	bool		lg_peer_wants;
	u32		lg_peer_want[RDMAXFER_NR_KINDS];
	bool		lg_want_due;
	u32		lg_want[RDMAXFER_NR_KINDS];
	u32		lg_want_sent[RDMAXFER_NR_KINDS];
	struct ib_cqe	lg_skip_cqe;
};

/**
 * struct rdmaxfer_sq - a connection's send queue: its room, what is owed from it (sq.c)
 * @sq_wr_free: send WRs we may still post
 * @sq_wr_max: @sq_wr_free with nothing posted; set before the connection is up
 * @sq_reg_waits: registrations waiting for an empty send queue
 *	(rdmaxfer_post_reg()): SUBMIT takes no room meanwhile
 * @sq_rw_free: rdma_rw contexts we may still use
 * @sq_pieces: posted operation pieces in send-queue order, until their
 *	completion (or a later one on the same queue) is handled
 * @sq_owed: other signaled send WRs whose completion gives something
 *	back (struct rdmaxfer_cqe), from posting to completion (sq.c)
 * @sq_err_cqe: cqe of unsignaled WRs that need no completion of their own
 *	(the inner WRs of a piece, all but the last REG_MR of a batch): only
 *	an error reaches it, and fails the connection
 * @sq_moved: signaled send WRs completed (pieces and owed WRs), the
 *	progress the keepalive looks for
 *
 * Under the connection's c_lock, but for @sq_wr_max.
 */
struct rdmaxfer_sq {
	u32			sq_wr_free;
	u32			sq_wr_max;
	u32			sq_reg_waits;
	u32			sq_rw_free;
	struct list_head	sq_pieces;
	struct list_head	sq_owed;
	struct ib_cqe		sq_err_cqe;
	u32			sq_moved;
};

/**
 * struct rdmaxfer_ctrl_bufs - a connection's control buffers (ctrl.c)
 * @cb_recvs: receive buffers
 * @cb_sends: send buffers
 * @cb_free_sends: free control send buffers
 * @cb_held: control buffers whose message holds its credit
 * @cb_spare: control buffers taken by skips and kept off the queue
 *	(RDMAXFER_MIN_CTRL_RECVS), until a WANT of the peer needs them
 * @cb_posted: control buffers on our receive queue
 * @cb_rx_defer: receive completions for @cb_rx_work, in completion order
 * @cb_rx_busy: @cb_rx_work has completions to handle: later ones join them
 * @cb_rx_work: handles the receive completions that need process context
 * @cb_msgs: received messages not yet RECV'd
 * @cb_nmsgs: their number
 *
 * Also the work that handles receive completions and the messages RECV
 * takes.  The lists and counts are under the connection's c_lock; the
 * buffers are set up before the connection is up.
 */
struct rdmaxfer_ctrl_bufs {
	struct rdmaxfer_ctrl	cb_recvs[RDMAXFER_RECV_DEPTH];
	struct rdmaxfer_ctrl	cb_sends[RDMAXFER_SEND_BUFS];
	struct list_head	cb_free_sends;
	struct list_head	cb_held;
	struct list_head	cb_spare;
	u32			cb_posted;
	struct list_head	cb_rx_defer;
	bool			cb_rx_busy;
	struct work_struct	cb_rx_work;
	struct list_head	cb_msgs;
	u32			cb_nmsgs;
};

/**
 * struct rdmaxfer_slots - a connection's receive slots, sink and echo (slot.c)
 * @sl_mode: we posted a slot: control buffers taken by skips are not
 *	all reposted
 * @sl_posted: slots on our receive queue
 * @sl_user_new: slots the user posted since our last announcement
 * @sl_sink_msgs: messages our sink slots dropped
 * @sl_sink_bytes: their bytes
 * @sl_held: slots (requests) whose control message holds its credit
 * @sl_echo_wait: echo slots whose echo could not be posted yet (no credit,
 *	slot or WR), in the order their messages came
 *
 * Under the connection's c_lock.
 */
struct rdmaxfer_slots {
	bool			sl_mode;
	u32			sl_posted;
	u32			sl_user_new;
	u64			sl_sink_msgs;
	u64			sl_sink_bytes;
	struct list_head	sl_held;
	struct list_head	sl_echo_wait;
};

/**
 * struct rdmaxfer_ka - a connection's keepalive (keepalive.c)
 * @ka_posted: a keepalive probe is on the send queue
 * @ka_waits: keepalive ticks that found the probe still queued and
 *	neither queue moved since the tick before; the second fails the
 *	connection (keepalive.c)
 * @ka_moved: c_sq.sq_moved + c_lg.lg_rx_done at the last keepalive tick
 * @ka_work: posts a keepalive probe every @ka_interval while the
 *	connection is established (see keepalive.c)
 * @ka_cqe: the probe's completion
 * @ka_interval: jiffies between probes, 0: no keepalive; set before the
 *	connection is up, read-only after
 * @ka_probe: iWARP: the READ probe's bytes (keepalive.c); NULL elsewhere;
 *	set before the QP exists
 *
 * @ka_posted, @ka_waits and @ka_moved are under the connection's c_lock.
 */
struct rdmaxfer_ka {
	bool			ka_posted;
	u8			ka_waits;
	u32			ka_moved;
	struct delayed_work	ka_work;
	struct ib_cqe		ka_cqe;
	unsigned long		ka_interval;
	struct rdmaxfer_probe	*ka_probe;
};

/**
 * struct rdmaxfer_conn - a connection (one rdma_cm id, one RC QP)
 * @c_obj: id in the owning file (0 while waiting in a listener's queue)
 *	and references: the id table (or listener queue), the cm_id's
 *	context, each operation in flight, queued work
 * @c_listener: the listener that created it, until accepted (reference;
 *	under @c_lock)
 * @c_entry: on the listener's l_pending or l_queue (l_lock)
 * @c_lq: where on its listener it counts (enum rdmaxfer_lq; l_lock)
 * @c_dev_entry: on rdmaxfer_device.rd_conns
 * @c_id: the rdma_cm id; NULL once destroyed
 * @c_dev: the device (reference), once routed
 * @c_pd: the connection's own protection domain (flags 0: never a global
 *	rkey): its QP and its windows' MRs live there, so an rkey is good on
 *	this connection's QP only
 * @c_pd_users: the connection (until its resources are freed) and each of
 *	its registrations (windows and local ones); the last one deallocates
 *	@c_pd
 * @c_pd_held: the connection's own @c_pd_users count is still held
 * @c_qp: the queue pair
 * @c_qpn: its number, kept after the QP is destroyed (debugfs, tracepoints)
 * @c_sq_depth: send work requests @c_qp was created with, rdma_rw's included
 *	(debugfs; a provider may have made more room)
 * @c_rq_depth: receive work requests @c_qp was created with (debugfs)
 * @c_scq: send CQ (from the device's CQ pool)
 * @c_rcq: receive CQ
 * @c_scq_size: CQEs taken from the pool for @c_scq
 * @c_max_sge: SGEs of the user's buffer a SEND or a slot of ours may take
 *	(RDMAXFER_MAX_MSG_SGES or what the QP allows, if fewer, less the header
 *	entry's SGE on a port without immediate data; 1 where a message must
 *	be in one MR, rdmaxfer_lmr_one_mr())
 * @c_port: port number on @c_dev
 * @c_atomics: the device does atomics (atomic_cap is not IB_ATOMIC_NONE)
 * @c_read_piece: the largest piece of a READ, 0: no other limit than a
 *	WRITE's.  Where rdma_rw registers a READ's local pages (iWARP: the
 *	READ's sink must be registered for remote write), each of its
 *	contexts has one MR of min(max_fast_reg_page_list_len, 256) pages,
 *	filled a page per scatterlist entry: a piece must fit one; and at
 *	most RDMAXFER_IWARP_READ_PAGES, so that the peer's keepalive is not
 *	stuck behind our READs' responses (keepalive.c)
 * @c_lg: the credit ledger (struct rdmaxfer_ledger)
 * @c_sq: the send queue's room (struct rdmaxfer_sq)
 * @c_cb: the control buffers (struct rdmaxfer_ctrl_bufs)
 * @c_sl: the receive slots, sink and echo (struct rdmaxfer_slots)
 * @c_ka: the keepalive (struct rdmaxfer_ka)
 * @c_lock: protects the fields below up to @c_peer_wins, the parts of
 *	@c_lg, @c_sq, @c_cb, @c_sl and @c_ka their kernel-doc says, and state
 *	changes
 * @c_state: enum rdmaxfer_conn_state
 * @c_error: why the connection went down (negative errno), 0 before; set
 *	once, with cmpxchg(), from any context
 * @c_flushed: a work request was flushed before the connection was up (the
 *	peer broke the QP early): it fails as it comes up
 * @c_broke: the QP went to error by itself (rdmaxfer_conn_flushed()):
 *	teardown takes the reason a completion gave, else -EIO
 * @c_first_due: iWARP client: our first message is owed (see cm.c, "The
 *	first message on iWARP")
 * @c_peer_spoke: a message of the peer's has come (c_lock)
 * @c_await_first: listener: up, but handed to ACCEPT only when the
 *	client's first message comes (iWARP), or its proof (c_lock)
 * @c_counted: counted in the file's rf_nconns (rdmaxfer_conns_get())
 * @c_auth: the key handshake's state (auth.c), or NULL: no key
 * @c_auth_wait: with a key, the handshake is not done: a listener waits
 *	for the client's proof, a client checks the server's; no message
 *	but the proof (on a listener's connection) is taken meanwhile, and a
 *	wrong proof leaves it set (c_lock)
 * @c_up_work: hands such a connection out (rdmaxfer_listener_up_work())
 * @c_iwarp: the port is iWARP, where a flush alone does not say the QP
 *	broke (rdmaxfer_conn_flushed()); set before the QP exists
 * @c_windows: our windows exposed on this connection
 * @c_nwindows: their number, at most @c_peer_max_wins; written under
 *	c_lock with @c_windows, read without as a hint
 * @c_peer_max_wins: windows the peer takes on this connection (its hello)
 * @c_peer_wins: the peer's windows, by the peer's id (under @c_peer_win_lock)
 * @c_peer_win_lock: protects @c_peer_wins against SUBMIT reading it
 * @c_wait: senders waiting for credits, send buffers or WRs
 * @c_route: client: completed when the QP is made (@c_routed) or the
 *	connect attempt ended
 * @c_routed: client: the route is known and the QP made; CONNECT's task
 *	sends the connect request
 * @c_established: completed when a connect attempt ends (either way)
 * @c_reject_reason: RDMAXFER_REJECT_* from the peer's refusal
 * @c_teardown_lock: serialises rdmaxfer_conn_teardown()
 * @c_post_sem: held for read by ioctls while they post (see conn.c)
 * @c_torn_down: teardown has run
 * @c_down_work: tears the connection down after a CM event or an error
 * @c_lmrs: local registrations of buffers on this connection (lmr.c)
 * @c_lmr_lock: protects @c_lmrs
 * @c_peer_features: RDMAXFER_HELLO_* of the peer
 * @c_slot_hdr: user messages and slots carry a header entry (both hellos
 *	say RDMAXFER_HELLO_SLOT_HDR: a port without immediate data, proto.h)
 * @c_hdrs: header entries (hdr.c): RDMAXFER_RQ_MIRROR for our SENDs, by
 *	lg_tx_seq, then RDMAXFER_RQ_MIRROR for our slots, by lg_rx_seq; NULL on a
 *	port with immediate data
 * @c_hdrs_dma: their DMA address (mapped both ways, once)
 * @c_peer_ctrl_size: the peer's control buffer size
 * @c_peer_seg_size: the peer's window segment size
 * @c_max_msg: largest RDMA message both ports accept
 * @c_peer_max_msg: the peer's port limit, from its hello
 * @c_npeer_wins: number of @c_peer_wins (bounded: a peer cannot grow it forever)
 * @c_npeer_segs: their segments together (bounded too)
 * @c_peer_events: events the peer's messages caused, not yet reaped (past
 *	RDMAXFER_FREE_PEER_EVENTS their credits are held, see event.c)
 * @c_max_op: largest WRITE/READ in one operation (QUERY_CONN)
 * @c_local: local address
 * @c_peer: peer address
 * @c_bytes: bytes moved by this connection's operations that succeeded
 */
struct rdmaxfer_conn {
	struct rdmaxfer_obj		c_obj;
	struct rdmaxfer_listener	*c_listener;
	struct list_head		c_entry;
	u8				c_lq;
	struct list_head		c_dev_entry;
	struct rdma_cm_id		*c_id;
	struct rdmaxfer_device		*c_dev;
	struct ib_pd			*c_pd;
	refcount_t			c_pd_users;
	bool				c_pd_held;
	struct ib_qp			*c_qp;
	u32				c_qpn;
	u32				c_sq_depth;
	u32				c_rq_depth;
	struct ib_cq			*c_scq;
	struct ib_cq			*c_rcq;
	u32				c_scq_size;
	u32				c_max_sge;
	u32				c_port;
	bool				c_atomics;
	u32				c_read_piece;

	struct rdmaxfer_ledger		c_lg;
	struct rdmaxfer_sq		c_sq;
	struct rdmaxfer_ctrl_bufs	c_cb;
	struct rdmaxfer_slots		c_sl;
	struct rdmaxfer_ka		c_ka;

	spinlock_t			c_lock;		/* see above */
	enum rdmaxfer_conn_state	c_state;
	int				c_error;
	bool				c_flushed;
	bool				c_broke;
	bool				c_first_due;
	bool				c_peer_spoke;
	bool				c_await_first;
	bool				c_counted;
	struct rdmaxfer_auth		*c_auth;
	bool				c_auth_wait;
	struct work_struct		c_up_work;
	bool				c_iwarp;
	struct list_head		c_windows;
	u32				c_nwindows;
	u32				c_peer_max_wins;
	struct xarray			c_peer_wins;
	struct mutex			c_peer_win_lock;	/* c_peer_wins */
	wait_queue_head_t		c_wait;

	struct completion		c_route;
	bool				c_routed;
	struct completion		c_established;
	u32				c_reject_reason;
	struct mutex			c_teardown_lock; /* teardown */
	struct rw_semaphore		c_post_sem;
	bool				c_torn_down;
	struct work_struct		c_down_work;

	struct list_head		c_lmrs;
	struct mutex			c_lmr_lock;	/* c_lmrs */
	u32				c_peer_features;
	bool				c_slot_hdr;
	struct rdmaxfer_msg_user	*c_hdrs;
	u64				c_hdrs_dma;
	u32				c_peer_ctrl_size;
	u32				c_peer_seg_size;
	u32				c_max_msg;
	u32				c_peer_max_msg;
	u32				c_npeer_wins;
	u32				c_npeer_segs;
	atomic_t			c_peer_events;
	u64				c_max_op;
	struct rdmaxfer_addr		c_local;
	struct rdmaxfer_addr		c_peer;
	atomic64_t			c_bytes;
};

/**
 * struct rdmaxfer_auth_input - what a handshake's proofs are made of (auth.c)
 * @label: "rdmaxfer client" or "rdmaxfer server", NUL-padded
 * @nonce: the client's [0] and the server's [1] nonces
 * @hello: the client's [0] and the server's [1] hellos, as sent
 * @addr: the client's [0] and the server's [1] addresses, 16 bytes each
 */
struct rdmaxfer_auth_input {
	char				label[16];
	u8				nonce[2][RDMAXFER_NONCE_LEN];
	struct rdmaxfer_cm_hello_ext	hello[2];
	u8				addr[2][16];
};

/**
 * struct rdmaxfer_auth - a connection's key handshake (auth.c)
 * @a_key: client: the key, held until the server's proof is checked
 * @a_in: the proofs' input
 * @a_proof: client: the proof it sends; server: the one it expects
 * @a_server: a listener's connection (it takes the proof; a client never)
 * @a_counted: its outcome was counted (a wrong proof: the connection goes)
 */
struct rdmaxfer_auth {
	struct key			*a_key;
	bool				a_server;
	bool				a_counted;
	struct rdmaxfer_auth_input	a_in;
	u8				a_proof[RDMAXFER_MAC_LEN];
};

/*
 * Where a listener's connection counts (rdmaxfer_conn.c_lq): l_pending
 * (@l_npending), l_queue (@l_queued), or evicted from l_pending to make
 * room and going down (@l_nevicting).
 */
enum rdmaxfer_lq {
	RDMAXFER_LQ_NONE,
	RDMAXFER_LQ_PENDING,
	RDMAXFER_LQ_QUEUED,
	RDMAXFER_LQ_EVICTED,
};

/**
 * struct rdmaxfer_listener - a listening rdma_cm id
 * @l_obj: id in the owning file and references: the id table, the
 *	cm_id's context, connections it created until accepted
 * @l_id: the rdma_cm id; NULL once destroyed
 * @l_lock: protects @l_queue, @l_queued, @l_pending, @l_npending,
 *	@l_nevicting, @l_closed, @l_ready, @l_removed, and each connection's
 *	c_entry and c_lq
 * @l_queue: established connections waiting for ACCEPT
 * @l_queued: their number
 * @l_pending: connections being set up, or up and waiting for the
 *	client's first message or proof
 * @l_npending: their number
 * @l_nevicting: connections whose client had not proved the key, evicted
 *	from @l_pending for a newer one and still going down
 * @l_backlog: most @l_queued + @l_pending allowed
 * @l_closed: the listener is being destroyed
 * @l_ready: LISTEN is done with @l_id; a DEVICE_REMOVAL may now destroy it
 * @l_removed: a DEVICE_REMOVAL came while LISTEN still used @l_id, which
 *	LISTEN then destroys itself
 * @l_key: the key every client must prove (a reference), or NULL
 * @l_allow: the allow-list (@l_nallow prefixes; none: any client)
 * @l_nallow: its length
 */
struct rdmaxfer_listener {
	struct rdmaxfer_obj	l_obj;
	struct rdma_cm_id	*l_id;
	spinlock_t		l_lock;		/* queues */
	struct list_head	l_queue;
	u32			l_queued;
	struct list_head	l_pending;
	u32			l_npending;
	u32			l_nevicting;
	u32			l_backlog;
	bool			l_closed;
	bool			l_ready;
	bool			l_removed;
	struct key		*l_key;
	struct rdmaxfer_prefix	*l_allow;
	u32			l_nallow;
};

/**
 * struct rdmaxfer_piece - one rdma_rw context of an operation
 * @p_req: the operation
 * @p_cqe: completion of its last WR (signaled only at the end of a chain,
 *	see rw.c; errors and flushes complete it either way)
 * @p_ctx: the rdma_rw context
 * @p_sgt: the local pages it moves
 * @p_sg1: @p_sgt's one entry when the piece lies in one page (no allocation)
 * @p_sq_entry: on a chain being built, then on rdmaxfer_conn.c_sq.sq_pieces
 * @p_first_wr: the first of its WRs, once chained
 * @p_last_wr: the last of its WRs (the one that carries @p_cqe)
 * @p_broken: only some of its WRs were posted: it completes with an error
 * @p_nwr: send WRs it posted
 * @p_raddr: remote address
 * @p_rkey: remote key
 * @p_len: bytes
 * @p_loff: offset in the local buffer
 */
struct rdmaxfer_piece {
	struct rdmaxfer_req	*p_req;
	struct ib_cqe		p_cqe;
	struct rdma_rw_ctx	p_ctx;
	struct sg_table		p_sgt;
	struct scatterlist	p_sg1;
	struct list_head	p_sq_entry;
	struct ib_send_wr	*p_first_wr;
	struct ib_send_wr	*p_last_wr;
	bool			p_broken;
	u32			p_nwr;
	u64			p_raddr;
	u32			p_rkey;
	u32			p_len;
	u64			p_loff;
};

/**
 * struct rdmaxfer_req - one operation of a SUBMIT
 * @r_event: its completion, queued to the file when done
 * @r_file: the file (valid: release() drains every connection first)
 * @r_conn: the connection (reference)
 * @r_buf: the local buffer (reference), NULL for atomics
 * @r_dir: DMA direction of the pieces
 * @r_remote_offset: WRITE_IMM: where in the peer's window
 * @r_buf_offset: SEND: where in the buffer
 * @r_pending: WRs or messages still to complete
 * @r_status: first error, negative errno
 * @r_wc_status: first failing work completion status
 * @r_atomic: atomics: 8-byte result buffer, and its DMA address
 * @r_atomic_dma: DMA address of @r_atomic
 * @r_atomic_dev: atomics: the device @r_atomic is mapped on (reference)
 * @r_cqe: the completion of its one WR: atomics, SEND into a slot and
 *	echoes (owed, see sq.c), RECV
 * @r_held_entry: RECV: on rdmaxfer_conn.c_sl.sl_held, or (echo slots) on
 *	sl_echo_wait
 * @r_echo: RECV: an echo slot (RDMAXFER_RECV_ECHO)
 * @r_echo_len: echo slot: length of the message to send back
 * @r_echo_imm: echo slot: its immediate
 * @r_sink: RECV: a sink slot (RDMAXFER_RECV_SINK)
 * @r_sink_imm: sink slot: the immediate of the messages it drops
 * @r_rx: RECV: the slot's completion, when the receive work handles it
 * @r_hdr: RECV: the slot's header entry (c_hdrs, slot headers only), and
 *	what it held when the slot completed
 * @r_hdr_idx: RECV: the index of that entry in c_hdrs
 * @r_nsge: SEND into a slot, RECV: number of the buffer's SGEs, from @r_sge[1]
 * @r_sge: the header entry's SGE (slot headers only), then the buffer's
 *	(its local registration)
 * @r_atomic_wr: atomics: the work request
 * @r_atomic_sge: atomics: its local buffer
 * @r_npieces: number of @r_pieces
 * @r_pieces: the rdma_rw pieces (WRITE, READ, WRITE_IMM)
 */
struct rdmaxfer_req {
	struct rdmaxfer_event	r_event;
	struct rdmaxfer_file	*r_file;
	struct rdmaxfer_conn	*r_conn;
	struct rdmaxfer_buf	*r_buf;
	enum dma_data_direction	r_dir;
	u64			r_remote_offset;
	u64			r_buf_offset;
	struct ib_atomic_wr	r_atomic_wr;
	struct ib_sge		r_atomic_sge;
	atomic_t		r_pending;
	int			r_status;
	u32			r_wc_status;
	u64			*r_atomic;
	u64			r_atomic_dma;
	struct rdmaxfer_device	*r_atomic_dev;
	struct rdmaxfer_cqe	r_cqe;
	struct list_head	r_held_entry;
	bool			r_echo;
	u32			r_echo_len;
	u32			r_echo_imm;
	bool			r_sink;
	u32			r_sink_imm;
	struct rdmaxfer_rx_wc	r_rx;
	struct rdmaxfer_msg_user r_hdr;
	u32			r_hdr_idx;
	u32			r_nsge;
	struct ib_sge		r_sge[1 + RDMAXFER_MAX_MSG_SGES];
	u32			r_npieces;
	struct rdmaxfer_piece	r_pieces[];
};

/* device.c */
int rdmaxfer_device_init(void);
void rdmaxfer_device_exit(void);
u32 rdmaxfer_device_count(void);
struct rdmaxfer_device *rdmaxfer_device_get(u32 index);
void rdmaxfer_device_put(struct rdmaxfer_device *rd);
int rdmaxfer_device_attach(struct rdmaxfer_device *rd, struct rdmaxfer_conn *conn);
void rdmaxfer_device_detach(struct rdmaxfer_conn *conn);
int rdmaxfer_ioctl_list_devices(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_query_device(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_query_port(struct rdmaxfer_file *rf, void *arg);
void rdmaxfer_debugfs_init(void);
void rdmaxfer_debugfs_exit(void);

/* chardev.c */
int rdmaxfer_chardev_init(void);
void rdmaxfer_chardev_exit(void);
void rdmaxfer_obj_init(struct rdmaxfer_obj *obj, struct rdmaxfer_file *rf, u32 type);
void rdmaxfer_obj_fini(struct rdmaxfer_obj *obj);
int rdmaxfer_obj_reserve(struct rdmaxfer_obj *obj);
void rdmaxfer_obj_publish(struct rdmaxfer_obj *obj);
int rdmaxfer_obj_insert(struct rdmaxfer_obj *obj);
bool rdmaxfer_obj_remove(struct rdmaxfer_obj *obj);
void *rdmaxfer_obj_get(struct rdmaxfer_file *rf, u32 id, u32 type);
void rdmaxfer_obj_put(struct rdmaxfer_obj *obj);
void rdmaxfer_obj_put_atomic(struct rdmaxfer_obj *obj);
void rdmaxfer_obj_flush_puts(void);

/* event.c */
bool rdmaxfer_pending_get(struct rdmaxfer_file *rf, u32 n);
void rdmaxfer_pending_put(struct rdmaxfer_file *rf, u32 n);
void rdmaxfer_queue_events(struct rdmaxfer_file *rf, struct list_head *evs);
void rdmaxfer_queue_event(struct rdmaxfer_file *rf, struct rdmaxfer_event *ev);
int rdmaxfer_queue_peer_event(struct rdmaxfer_conn *conn, bool hold, u16 opcode, u16 flags,
			      u64 bytes, u64 value, u32 imm, u32 window_id);
void rdmaxfer_queue_event_always(struct rdmaxfer_file *rf, u32 conn_id, u16 opcode, int status,
				 u64 value);
void rdmaxfer_events_free(struct rdmaxfer_file *rf);
int rdmaxfer_ioctl_reap(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_ring_setup(struct rdmaxfer_file *rf, void *arg);
bool rdmaxfer_events_ready(struct rdmaxfer_file *rf);
int rdmaxfer_ring_mmap(struct rdmaxfer_file *rf, struct vm_area_struct *vma);
void rdmaxfer_ring_free(struct rdmaxfer_file *rf);

/* cm.c (the helpers after the ioctls are listen.c's too) */
int rdmaxfer_ioctl_connect(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_close(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_query_conn(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int rdmaxfer_to_sockaddr(const struct rdmaxfer_addr *a, struct sockaddr_storage *ss);
void rdmaxfer_from_sockaddr(const struct sockaddr *sa, struct rdmaxfer_addr *a);
int rdmaxfer_hello_parse(struct rdmaxfer_conn *conn, const void *data, u32 len,
			 bool has_imm, u32 *reason);
void rdmaxfer_conn_limits(struct rdmaxfer_conn *conn);
void rdmaxfer_conn_params(struct rdmaxfer_conn *conn, struct rdma_conn_param *param,
			  struct rdmaxfer_cm_hello_ext *hello);
void rdmaxfer_conn_addrs(struct rdmaxfer_conn *conn, struct rdma_cm_id *id);

/* listen.c */
int rdmaxfer_ioctl_listen(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_accept(struct rdmaxfer_file *rf, void *arg);
void rdmaxfer_listener_close(struct rdmaxfer_listener *l);
void rdmaxfer_listener_release(struct rdmaxfer_listener *l);
int rdmaxfer_listener_cm_event(struct rdmaxfer_listener *l, struct rdma_cm_id *id,
			       struct rdma_cm_event *ev);
void rdmaxfer_listener_established(struct rdmaxfer_conn *conn, struct rdmaxfer_listener *l);
void rdmaxfer_listener_up_work(struct work_struct *work);

/* ctrl.c */
int rdmaxfer_ctrl_setup(struct rdmaxfer_conn *conn);
void rdmaxfer_ctrl_free_all(struct rdmaxfer_conn *conn);
struct rdmaxfer_ctrl *rdmaxfer_ctrl_get(struct rdmaxfer_conn *conn, long timeout,
					u32 reserve, bool user);
int rdmaxfer_ctrl_send(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
		       enum rdmaxfer_msg_type type, u32 length);
void rdmaxfer_ctrl_put_unused(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct);
int __rdmaxfer_ctrl_post(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct,
			 enum rdmaxfer_msg_type type, u32 length);
void rdmaxfer_ctrl_unclaim(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct);
int rdmaxfer_ctrl_post_recv(struct rdmaxfer_conn *conn, struct rdmaxfer_ctrl *ct);
bool rdmaxfer_rx_wc_valid(const struct ib_wc *wc, u32 posted);
bool rdmaxfer_rx_small_msg(const struct ib_wc *wc);
bool rdmaxfer_msg_is_flow(const void *msg);
void rdmaxfer_rx_defer(struct rdmaxfer_conn *conn, struct rdmaxfer_rx_wc *rx,
		       const struct ib_wc *wc, bool slot);
void rdmaxfer_rx_work(struct work_struct *work);

/* msg.c */
/*
 * rdmaxfer_handle_msg(): repost the buffer but keep the credit; it goes back
 * when the user has taken what the message brought (REAP of its event, RECV
 * of its data).
 */
#define RDMAXFER_HOLD_CREDIT	1
int rdmaxfer_handle_msg(struct rdmaxfer_conn *conn, const void *buf, u32 len);
int rdmaxfer_handle_msg_charged(struct rdmaxfer_conn *conn, const void *buf, u32 len);
void rdmaxfer_msg_failed(struct rdmaxfer_conn *conn, int ret);
int rdmaxfer_ioctl_recv(struct rdmaxfer_file *rf, void *arg);
void rdmaxfer_msgs_free(struct rdmaxfer_conn *conn);

/* credit.c */
u32 rdmaxfer_credit_announce(struct rdmaxfer_conn *conn, struct rdmaxfer_msg_hdr *hdr, bool runs);
bool rdmaxfer_credit_claim(struct rdmaxfer_conn *conn, u32 reserve);
void rdmaxfer_credit_unclaim(struct rdmaxfer_conn *conn);
int rdmaxfer_credit_post(struct rdmaxfer_conn *conn, struct ib_send_wr *wr,
			 struct rdmaxfer_cqe *cqe, u32 len, enum rdmaxfer_msg_kind kind, u32 imm);
void rdmaxfer_credit_want(struct rdmaxfer_conn *conn, u32 len, enum rdmaxfer_msg_kind kind);
void rdmaxfer_credit_skip_done(struct ib_cq *cq, struct ib_wc *wc);
void rdmaxfer_credit_maybe_send(struct rdmaxfer_conn *conn);
void rdmaxfer_credit_grant(struct rdmaxfer_conn *conn);
int rdmaxfer_credit_returned(struct rdmaxfer_conn *conn, u32 n, u32 cap);
int rdmaxfer_credit_handle(struct rdmaxfer_conn *conn, const void *p, u32 plen);
int rdmaxfer_credit_handle_want(struct rdmaxfer_conn *conn, const void *p, u32 plen);

/* slot.c */
int rdmaxfer_slot_post(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, bool user);
void rdmaxfer_slot_handle(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req,
			  const struct ib_wc *wc, const void *flow);
void rdmaxfer_held_slots_flush(struct rdmaxfer_conn *conn);
void rdmaxfer_echo_kick(struct rdmaxfer_conn *conn);
int rdmaxfer_req_lmr_sges(struct rdmaxfer_req *req);
int rdmaxfer_req_recv(struct rdmaxfer_req *req);
void rdmaxfer_send_zc_wr(struct rdmaxfer_req *req, struct ib_send_wr *wr);
int rdmaxfer_send_zc_post(struct rdmaxfer_req *req, struct ib_send_wr *wr, bool trace);
int rdmaxfer_req_send_zc(struct rdmaxfer_req *req);

/* hdr.c */
bool rdmaxfer_port_has_imm(struct ib_device *ib, u32 port);
int rdmaxfer_hdrs_alloc(struct rdmaxfer_conn *conn);
void rdmaxfer_hdrs_free(struct rdmaxfer_conn *conn);
u32 rdmaxfer_hdr_len(const struct rdmaxfer_conn *conn);
void rdmaxfer_hdr_tx(struct rdmaxfer_conn *conn, struct ib_sge *sge, u32 imm);
void rdmaxfer_hdr_rx_post(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req);
int rdmaxfer_hdr_rx_done(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, struct ib_wc *wc);
void rdmaxfer_slot_copy(struct rdmaxfer_conn *conn, struct rdmaxfer_req *req, void *dst,
			u32 len);

/* conn.c */
struct rdmaxfer_conn *rdmaxfer_conn_alloc(struct rdmaxfer_file *rf);
void rdmaxfer_conn_free(struct rdmaxfer_conn *conn);
int rdmaxfer_conn_setup(struct rdmaxfer_conn *conn, struct rdma_cm_id *id);
void rdmaxfer_conn_teardown(struct rdmaxfer_conn *conn, int error);
void rdmaxfer_conn_release(struct rdmaxfer_conn *conn);
void rdmaxfer_conn_fail(struct rdmaxfer_conn *conn, int error);
void rdmaxfer_conn_flushed(struct rdmaxfer_conn *conn);
void rdmaxfer_conn_came_up(struct rdmaxfer_conn *conn);
void rdmaxfer_conn_wc_failed(struct rdmaxfer_conn *conn, const struct ib_wc *wc);
void rdmaxfer_conn_pd_get(struct rdmaxfer_conn *conn);
void rdmaxfer_conn_pd_put(struct rdmaxfer_conn *conn);
int rdmaxfer_conn_enter(struct rdmaxfer_conn *conn);
void rdmaxfer_conn_exit(struct rdmaxfer_conn *conn);
void rdmaxfer_fault_init(void);
void rdmaxfer_fault_exit(void);
#ifdef CONFIG_FAULT_INJECTION
bool rdmaxfer_cm_fault(void);
#else
static inline bool rdmaxfer_cm_fault(void)
{
	return false;
}
#endif

/* keepalive.c */
void rdmaxfer_ka_init(struct rdmaxfer_conn *conn, struct rdma_cm_id *id);
void rdmaxfer_ka_setup(struct rdmaxfer_conn *conn);
void rdmaxfer_ka_start(struct rdmaxfer_conn *conn);
int rdmaxfer_probe_alloc(struct rdmaxfer_conn *conn);
void rdmaxfer_probe_free(struct rdmaxfer_conn *conn);
void rdmaxfer_probe_flush(struct rdmaxfer_conn *conn);
int rdmaxfer_probe_handle(struct rdmaxfer_conn *conn, const void *p, u32 plen);

/* conn.c: a file's count of connections (and its user's) */
bool rdmaxfer_conns_get(struct rdmaxfer_file *rf);
void rdmaxfer_conns_put(struct rdmaxfer_file *rf);

/* user.c */
struct rdmaxfer_user *rdmaxfer_user_get(void);
void rdmaxfer_user_put(struct rdmaxfer_user *u);
bool rdmaxfer_user_conns_get(struct rdmaxfer_user *u);
void rdmaxfer_user_conns_put(struct rdmaxfer_user *u);

/* auth.c */
int rdmaxfer_allow_copy(struct rdmaxfer_listener *l, u64 uptr, u32 count);
bool rdmaxfer_allowed(const struct rdmaxfer_listener *l, const struct sockaddr *peer);
int rdmaxfer_key_get(s32 serial, struct key **keyp);
int rdmaxfer_auth_client_start(struct rdmaxfer_conn *conn, struct key *key);
u8 rdmaxfer_auth_request(struct rdmaxfer_conn *conn, struct rdmaxfer_cm_auth *req);
int rdmaxfer_auth_admit(struct rdmaxfer_listener *l, const void *data, u32 len, u32 *reason);
int rdmaxfer_auth_reply(struct rdmaxfer_conn *conn, struct key *key, const void *data,
			struct rdmaxfer_cm_auth *rep, u32 *reason);
int rdmaxfer_auth_check_reply(struct rdmaxfer_conn *conn, const void *data, u32 len,
			      u32 *reason);
int rdmaxfer_auth_send(struct rdmaxfer_conn *conn);
int rdmaxfer_auth_handle(struct rdmaxfer_conn *conn, const void *p, u32 plen);
void rdmaxfer_auth_end(struct rdmaxfer_conn *conn, int error);
void rdmaxfer_auth_free(struct rdmaxfer_conn *conn);

/* sq.c */
int rdmaxfer_wr_take(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw, bool holding);
u32 rdmaxfer_wr_take_upto(struct rdmaxfer_conn *conn, u32 nwr);
int rdmaxfer_wr_reserve(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw, bool holding);
int rdmaxfer_post_reg(struct rdmaxfer_conn *conn, struct ib_send_wr *wr, u32 nwr);
void rdmaxfer_wr_release(struct rdmaxfer_conn *conn, u32 nwr, u32 nrw);
void rdmaxfer_sq_owe(struct rdmaxfer_conn *conn, struct rdmaxfer_cqe *cqe);
void rdmaxfer_sq_paid(struct rdmaxfer_conn *conn, struct rdmaxfer_cqe *cqe, u32 nwr);
void rdmaxfer_sq_flush_owed(struct rdmaxfer_conn *conn);
bool rdmaxfer_sq_idle(struct rdmaxfer_conn *conn);

/* buf.c */
int rdmaxfer_ioctl_reg_buf(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_dereg_buf(struct rdmaxfer_file *rf, void *arg);
void rdmaxfer_buf_release(struct rdmaxfer_buf *buf);

/* window.c */
int rdmaxfer_ioctl_expose(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_ioctl_revoke(struct rdmaxfer_file *rf, void *arg);
void rdmaxfer_window_release_all(struct rdmaxfer_conn *conn);
void rdmaxfer_window_release(struct rdmaxfer_window *win);

/* reg.c */
u32 rdmaxfer_seg_pages(struct ib_device *ib);
u32 rdmaxfer_reg_nsegs(struct ib_device *ib, const struct rdmaxfer_buf *buf, u64 offset,
		       u64 length, u32 access);
int rdmaxfer_reg_create(struct rdmaxfer_reg *reg, struct rdmaxfer_file *rf,
			struct rdmaxfer_conn *conn, struct rdmaxfer_buf *buf, u64 offset,
			u64 length, u32 access);
void rdmaxfer_reg_destroy(struct rdmaxfer_reg *reg);

/* lmr.c */
bool rdmaxfer_lmr_one_mr(struct ib_device *ib);
u32 rdmaxfer_lmr_stride(struct ib_device *ib);
u32 rdmaxfer_lmr_max_msg(struct rdmaxfer_conn *conn);
struct rdmaxfer_lmr *rdmaxfer_lmr_get(struct rdmaxfer_conn *conn, struct rdmaxfer_buf *buf);
u32 rdmaxfer_lmr_nsge(struct rdmaxfer_conn *conn, const struct rdmaxfer_buf *buf, u64 off,
		      u64 len);
void rdmaxfer_lmr_sges(struct rdmaxfer_req *req, const struct rdmaxfer_lmr *lmr, u64 off,
		       u64 len);
void rdmaxfer_lmr_evict(struct rdmaxfer_file *rf, struct rdmaxfer_buf *buf);
void rdmaxfer_lmr_release_all(struct rdmaxfer_conn *conn);

/* peer_win.c */
int rdmaxfer_peer_win_add(struct rdmaxfer_conn *conn, const void *msg, u32 len);
int rdmaxfer_peer_win_del(struct rdmaxfer_conn *conn, u32 id);
void rdmaxfer_peer_win_free_all(struct rdmaxfer_conn *conn);

/* xfer.c */
int rdmaxfer_ioctl_submit(struct rdmaxfer_file *rf, void *arg);
int rdmaxfer_wc_errno(struct rdmaxfer_conn *conn, enum ib_wc_status st);
void rdmaxfer_req_wc(struct rdmaxfer_req *req, enum ib_wc_status status);
void __rdmaxfer_req_part_done(struct rdmaxfer_req *req, int err, u32 wc_status,
			      struct list_head *evs);
void rdmaxfer_req_part_done(struct rdmaxfer_req *req, int err, u32 wc_status);

/**
 * struct rdmaxfer_chain - WRITE/READ pieces of one SUBMIT on one
 *	connection, not posted yet (rw.c)
 * @conn: the connection; while set, rdmaxfer_conn_enter() is held on it
 * @pieces: the pieces, in posting order
 * @first: the first WR of the chain
 * @last: its last WR
 * @last_of: the last WR of its READ pieces ([0]) and of the others ([1])
 * @npieces: pieces in it
 * @unsignaled: pieces whose last WR is not signaled
 * @err: the first posting error: the operations of that chain complete as
 *	flushed, and the SUBMIT stops after them
 * @slots: RECVs of the SUBMIT posted slots not announced yet: they are,
 *	if due, together, before anything else of it may wait
 */
struct rdmaxfer_chain {
	struct rdmaxfer_conn	*conn;
	struct list_head	pieces;
	struct ib_send_wr	*first;
	struct ib_send_wr	*last;
	struct ib_send_wr	*last_of[2];
	u32			npieces;
	u32			unsignaled;
	int			err;
	bool			slots;
};

/* rw.c */
void rdmaxfer_piece_done(struct ib_cq *cq, struct ib_wc *wc);
int rdmaxfer_req_rw(struct rdmaxfer_req *req, struct rdmaxfer_chain *ch);
int rdmaxfer_chain_post(struct rdmaxfer_chain *ch);
void rdmaxfer_chain_end(struct rdmaxfer_chain *ch);

/* atomic.c */
int rdmaxfer_req_atomic_init(struct rdmaxfer_req *req, const struct rdmaxfer_op *op,
			     const struct rdmaxfer_peer_win *pw);
int rdmaxfer_atomic_map(struct rdmaxfer_req *req);
int rdmaxfer_atomic_post(struct rdmaxfer_req *req, bool trace);
int rdmaxfer_req_atomic(struct rdmaxfer_req *req);
void rdmaxfer_sq_sweep(struct rdmaxfer_conn *conn);
void rdmaxfer_err_done(struct ib_cq *cq, struct ib_wc *wc);
void rdmaxfer_buf_copy(struct rdmaxfer_buf *buf, u64 off, void *dst, u32 len);

#endif /* RDMAXFER_H */
