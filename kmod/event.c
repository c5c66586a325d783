// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - a file's event queue: completions and events, REAP.
 *
 * Completions of operations and events (a connection accepted or lost, a
 * window exposed or revoked by the peer, a message or a WRITE_IMM arrived)
 * go to one queue per file, in the order they happened; REAP drains it and
 * poll() (chardev.c) reports POLLIN while it is not empty.  rf_pending
 * bounds it: SUBMIT reserves room for its operations up front, and a peer
 * whose messages would overflow it loses the connection.
 *
 * A peer's event (WINDOW, WINDOW_REVOKED, RECV, WRITE_IMM) may hold the
 * credit of the message that brought it until REAP takes it, so that a peer
 * cannot fill the queue faster than the user empties it (see ctrl.c).
 *
 * The completion ring.  A file may also have a ring that it mmap()s
 * (RDMAXFER_IOC_RING_SETUP; uapi struct rdmaxfer_ring), so that a process
 * that busy-polls pays no system call per completion.  Once the ring has
 * been mapped, an event goes there, and is freed at once, when the ring
 * has room, the queue is empty and no REAP holds events it took off the
 * queue (so everything in the ring is newer than everything REAP returned
 * or will return: the order holds), and the event need not be reaped;
 * otherwise to the queue as before, and the ring's RDMAXFER_RING_QUEUED
 * flag tells userspace to REAP once it has emptied the ring.  An event
 * that holds a peer's credit (ev_reap) always goes to the queue: its
 * release gives the credit back, which must mean that the user took it.
 * The kernel keeps the ring's tail and size to itself and reads only the
 * head that userspace writes: a head that makes no sense is a full ring.
 * The ring is vmalloc memory charged to the memory cgroup of the caller of
 * RING_SETUP, as other ioctls' allocations are (at most
 * RDMAXFER_MAX_PENDING entries of 48 bytes, once per file), mapped page by
 * page, freed by release(): a mapping holds the file.
 *
 * Locking: rf_ev_lock, a leaf taken with bottom halves off (events are
 * queued from the send CQ's softirq handlers), also orders the ring's tail.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "rdmaxfer.h"

/**
 * rdmaxfer_pending_get - reserve room for completions or events
 * @rf: the file
 * @n: how many
 *
 * Context: any context that may take a spinlock.
 * Return: false if that would pass RDMAXFER_MAX_PENDING.
 */
bool rdmaxfer_pending_get(struct rdmaxfer_file *rf, u32 n)
{
	bool ok;

	spin_lock_bh(&rf->rf_ev_lock);
	ok = rf->rf_pending + n <= RDMAXFER_MAX_PENDING;
	if (ok)
		rf->rf_pending += n;
	spin_unlock_bh(&rf->rf_ev_lock);
	return ok;
}

/**
 * rdmaxfer_pending_put - give back reservations that were not used
 * @rf: the file
 * @n: how many
 */
void rdmaxfer_pending_put(struct rdmaxfer_file *rf, u32 n)
{
	spin_lock_bh(&rf->rf_ev_lock);
	rf->rf_pending -= n;
	spin_unlock_bh(&rf->rf_ev_lock);
}

static void rdmaxfer_event_free(struct rdmaxfer_event *ev)
{
	if (ev->ev_free)
		ev->ev_free(ev);
	else
		kfree(ev);
}

/* Does the ring hold entries that userspace has not read?  Takes no lock. */
static bool rdmaxfer_ring_busy(struct rdmaxfer_file *rf)
{
	/* pairs with RING_SETUP's store-release: the ring is set up */
	struct rdmaxfer_ring *ring = smp_load_acquire(&rf->rf_ring);

	return ring && READ_ONCE(rf->rf_ring_live) &&
	       READ_ONCE(rf->rf_ring_tail) != READ_ONCE(ring->head);
}

/*
 * Write @ev to the ring if it may go there (see "The completion ring"); the
 * caller frees it then.  Context: rf_ev_lock held.
 */
static bool rdmaxfer_ring_put(struct rdmaxfer_file *rf, struct rdmaxfer_event *ev)
{
	struct rdmaxfer_ring *ring = rf->rf_ring;
	u32 tail = rf->rf_ring_tail;

	lockdep_assert_held(&rf->rf_ev_lock);
	if (!rf->rf_ring_live || rf->rf_reaping || ev->ev_reap ||
	    !list_empty(&rf->rf_events))
		return false;
	/* pairs with userspace's store-release of head: it has read the entry */
	if (tail - smp_load_acquire(&ring->head) >= rf->rf_ring_entries)
		return false;
	ring->entries[tail & (rf->rf_ring_entries - 1)] = ev->ev;
	WRITE_ONCE(rf->rf_ring_tail, ++tail);
	smp_store_release(&ring->tail, tail);	/* the entry before the tail */
	rf->rf_pending--;
	return true;
}

/* Queue @ev for REAP; a ring says so.  Context: rf_ev_lock held. */
static void rdmaxfer_list_put(struct rdmaxfer_file *rf, struct rdmaxfer_event *ev)
{
	lockdep_assert_held(&rf->rf_ev_lock);
	list_add_tail(&ev->ev_entry, &rf->rf_events);
	if (rf->rf_ring)
		WRITE_ONCE(rf->rf_ring->flags, RDMAXFER_RING_QUEUED);
}

/**
 * rdmaxfer_queue_event - deliver a completion or event to the file
 * @rf: the file
 * @ev: the event; its room was reserved with rdmaxfer_pending_get()
 *
 * To the ring if it may go there (and then freed), else to the queue.
 * After release() has started, the event is freed instead.
 *
 * Context: any context that may take a spinlock.
 */
void rdmaxfer_queue_event(struct rdmaxfer_file *rf, struct rdmaxfer_event *ev)
{
	bool drop, ringed = false;

	spin_lock_bh(&rf->rf_ev_lock);
	drop = rf->rf_closing;
	if (drop)
		rf->rf_pending--;
	else
		ringed = rdmaxfer_ring_put(rf, ev);
	if (!drop && !ringed)
		rdmaxfer_list_put(rf, ev);
	spin_unlock_bh(&rf->rf_ev_lock);
	if (drop || ringed)
		rdmaxfer_event_free(ev);
	if (!drop)
		wake_up_all(&rf->rf_wait);
}

/**
 * rdmaxfer_queue_events - deliver several completions with one wake-up
 * @rf: the file
 * @evs: list of struct rdmaxfer_event (by ev_entry), emptied; their room
 *	was reserved with rdmaxfer_pending_get()
 *
 * A reaper woken by the first of them would otherwise often find only
 * that one (the completion handler is still queueing the rest).
 *
 * Context: any context that may take a spinlock.
 */
void rdmaxfer_queue_events(struct rdmaxfer_file *rf, struct list_head *evs)
{
	struct rdmaxfer_event *ev, *tmp;
	bool drop;

	if (list_empty(evs))
		return;
	spin_lock_bh(&rf->rf_ev_lock);
	drop = rf->rf_closing;
	if (drop) {
		list_for_each_entry(ev, evs, ev_entry)
			rf->rf_pending--;
	} else if (!rf->rf_ring_live) {
		list_splice_tail_init(evs, &rf->rf_events);
		if (rf->rf_ring)
			WRITE_ONCE(rf->rf_ring->flags, RDMAXFER_RING_QUEUED);
	} else {
		/* what the ring takes stays on @evs, to be freed */
		list_for_each_entry_safe(ev, tmp, evs, ev_entry) {
			if (!rdmaxfer_ring_put(rf, ev)) {
				list_del(&ev->ev_entry);
				rdmaxfer_list_put(rf, ev);
			}
		}
	}
	spin_unlock_bh(&rf->rf_ev_lock);
	if (!drop)
		wake_up_all(&rf->rf_wait);
	list_for_each_entry_safe(ev, tmp, evs, ev_entry) {
		list_del(&ev->ev_entry);
		rdmaxfer_event_free(ev);
	}
}

/**
 * struct rdmaxfer_peer_event - an event that a peer's control message caused
 * @pe_ev: the event
 * @pe_conn: the connection (reference), for events counted in its
 *	c_peer_events
 * @pe_held: the event holds its message's credit
 *
 * Once a connection has RDMAXFER_FREE_PEER_EVENTS such events unreaped, the
 * next ones hold their message's credit until they are reaped (or dropped
 * with the file): only then may the peer send another.  (A RECV event never
 * does: the message itself holds it, until RECV takes its bytes.)  Below
 * the budget credits flow back at once, so an application blocked in an
 * ioctl that needs a credit of its peer (EXPOSE, SEND) cannot deadlock with
 * a peer that is blocked the same way; past it, a peer flooding valid
 * messages is held to the pace at which the application reaps.  So one peer can never
 * have more unreaped events in its connection's file than the receive
 * buffers it was granted (RDMAXFER_RECV_DEPTH), however fast it sends:
 * control traffic is bound by credits, and a peer flooding ADVERT/REVOKE
 * pairs or WRITE_DONEs is slowed to the pace at which the user reaps,
 * instead of filling the file's queue for every other connection.
 */
struct rdmaxfer_peer_event {
	struct rdmaxfer_event	pe_ev;
	struct rdmaxfer_conn	*pe_conn;
	bool			pe_held;
};

/* Reaped or dropped: the peer gets its credit back (a CREDIT may go out). */
static void rdmaxfer_peer_event_free(struct rdmaxfer_event *ev)
{
	struct rdmaxfer_peer_event *pe = container_of(ev, struct rdmaxfer_peer_event, pe_ev);
	struct rdmaxfer_conn *conn = pe->pe_conn;

	if (conn) {
		atomic_dec(&conn->c_peer_events);
		if (pe->pe_held && !rdmaxfer_conn_enter(conn)) {
			rdmaxfer_credit_grant(conn);
			rdmaxfer_conn_exit(conn);
		}
		rdmaxfer_obj_put(&conn->c_obj);
	}
	kfree(pe);
}

/**
 * rdmaxfer_queue_peer_event - deliver an event caused by a peer's message
 * @conn: the connection the message came on
 * @hold: the event counts against the connection's budget of unreaped
 *	peer events, and past it holds the message's credit until it is freed
 * @opcode: RDMAXFER_EVENT_*
 * @flags: event flags
 * @bytes: length
 * @value: event-specific value
 * @imm: immediate data
 * @window_id: window id
 *
 * Context: process context (the receive work).
 * Return: 1 if the event holds the message's credit (see struct
 * rdmaxfer_peer_event: the caller must not give it back), 0 if not,
 * -ENOBUFS when the file's queue is full, -ENOMEM.
 */
int rdmaxfer_queue_peer_event(struct rdmaxfer_conn *conn, bool hold, u16 opcode, u16 flags,
			      u64 bytes, u64 value, u32 imm, u32 window_id)
{
	struct rdmaxfer_file *rf = conn->c_obj.file;
	struct rdmaxfer_peer_event *pe;

	might_sleep();
	if (!rdmaxfer_pending_get(rf, 1))
		return -ENOBUFS;
	pe = kzalloc_obj(*pe, GFP_KERNEL_ACCOUNT);
	if (!pe) {
		rdmaxfer_pending_put(rf, 1);
		return -ENOMEM;
	}
	if (hold) {
		kref_get(&conn->c_obj.ref);
		pe->pe_conn = conn;
		pe->pe_held = atomic_inc_return(&conn->c_peer_events) > RDMAXFER_FREE_PEER_EVENTS;
		pe->pe_ev.ev_reap = pe->pe_held;
		hold = pe->pe_held;
	}
	pe->pe_ev.ev_free = rdmaxfer_peer_event_free;
	pe->pe_ev.ev.conn_id = conn->c_obj.id;
	pe->pe_ev.ev.opcode = opcode;
	pe->pe_ev.ev.flags = flags;
	pe->pe_ev.ev.bytes = bytes;
	pe->pe_ev.ev.value = value;
	pe->pe_ev.ev.imm_data = imm;
	pe->pe_ev.ev.window_id = window_id;
	rdmaxfer_queue_event(rf, &pe->pe_ev);
	return hold;
}

/**
 * rdmaxfer_queue_event_always - deliver an event even past the queue's limit
 * @rf: the file
 * @conn_id: the connection (or listener) it is about
 * @opcode: RDMAXFER_EVENT_DISCONNECTED or RDMAXFER_EVENT_CONNECTED
 * @status: why, negative errno or 0
 * @value: event-specific value
 *
 * For the events a user must never miss: at most one DISCONNECTED per
 * connection and one CONNECTED per accepted-to-be connection (bounded by
 * the listener's backlog), so they cannot grow the queue without bound.
 *
 * Context: process context.
 */
void rdmaxfer_queue_event_always(struct rdmaxfer_file *rf, u32 conn_id, u16 opcode, int status,
				 u64 value)
{
	struct rdmaxfer_event *ev = kzalloc_obj(*ev, GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);

	ev->ev.conn_id = conn_id;
	ev->ev.opcode = opcode;
	ev->ev.status = status;
	ev->ev.value = value;
	spin_lock_bh(&rf->rf_ev_lock);
	rf->rf_pending++;
	spin_unlock_bh(&rf->rf_ev_lock);
	rdmaxfer_queue_event(rf, ev);
}

/**
 * rdmaxfer_ioctl_reap - RDMAXFER_IOC_REAP
 * @rf: the file
 * @arg: struct rdmaxfer_reap
 *
 * Waits (interruptibly, up to the timeout) for the first event, then copies
 * out as many as fit.  If the copy faults, the events go back to the head of
 * the queue: nothing is lost.  With a ring, the wait also ends when the
 * ring holds something, and REAP takes nothing from the queue until the
 * ring is empty (its entries are older).
 *
 * Context: process context, may sleep.
 * Return: 0 (possibly with count 0 on timeout), -EINTR, -EFAULT, -EINVAL.
 */
int rdmaxfer_ioctl_reap(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_reap *cmd = arg;
	struct rdmaxfer_completion __user *uc = u64_to_user_ptr(cmd->completions);
	struct rdmaxfer_event *ev, *tmp;
	LIST_HEAD(taken);
	u32 n = 0, i = 0;
	long ret;

	if (cmd->__reserved)
		return -EINVAL;
	if (!cmd->count)
		return 0;
	if (cmd->timeout_ns) {
		long tmo = cmd->timeout_ns < 0 ? MAX_SCHEDULE_TIMEOUT :
			   max_t(long, 1, nsecs_to_jiffies(cmd->timeout_ns));

		ret = wait_event_interruptible_timeout(rf->rf_wait, rdmaxfer_events_ready(rf),
						       tmo);
		if (ret < 0)
			return ret == -ERESTARTSYS ? -EINTR : ret;
	}

	spin_lock_bh(&rf->rf_ev_lock);
	list_for_each_entry_safe(ev, tmp, &rf->rf_events, ev_entry) {
		/* the ring's entries are older: they go first */
		if (n == cmd->count || rdmaxfer_ring_busy(rf))
			break;
		list_move_tail(&ev->ev_entry, &taken);
		n++;
	}
	if (n)
		rf->rf_reaping++;	/* the ring waits until they are out */
	spin_unlock_bh(&rf->rf_ev_lock);

	list_for_each_entry(ev, &taken, ev_entry) {
		if (copy_to_user(uc + i, &ev->ev, sizeof(ev->ev))) {
			spin_lock_bh(&rf->rf_ev_lock);
			list_splice(&taken, &rf->rf_events);
			rf->rf_reaping--;
			if (rf->rf_ring)
				WRITE_ONCE(rf->rf_ring->flags, RDMAXFER_RING_QUEUED);
			spin_unlock_bh(&rf->rf_ev_lock);
			return -EFAULT;
		}
		i++;
	}
	list_for_each_entry_safe(ev, tmp, &taken, ev_entry) {
		list_del(&ev->ev_entry);
		rdmaxfer_event_free(ev);
	}
	spin_lock_bh(&rf->rf_ev_lock);
	rf->rf_pending -= n;
	if (n)
		rf->rf_reaping--;
	if (rf->rf_ring && !rf->rf_reaping && list_empty(&rf->rf_events))
		WRITE_ONCE(rf->rf_ring->flags, 0);	/* the ring is open again */
	spin_unlock_bh(&rf->rf_ev_lock);
	cmd->count = n;
	return 0;
}

/**
 * rdmaxfer_events_free - free what is still queued when the file closes
 * @rf: the file; rf_closing is set and every object is released, so
 *	nothing is queued any more
 */
void rdmaxfer_events_free(struct rdmaxfer_file *rf)
{
	struct rdmaxfer_event *ev, *tmp;

	list_for_each_entry_safe(ev, tmp, &rf->rf_events, ev_entry) {
		list_del(&ev->ev_entry);
		rdmaxfer_event_free(ev);
	}
}

/**
 * rdmaxfer_events_ready - is there anything for the user to take?
 * @rf: the file
 *
 * Context: any; takes no lock (poll(), REAP's wait).
 * Return: true if the queue or the ring holds something.
 */
bool rdmaxfer_events_ready(struct rdmaxfer_file *rf)
{
	return !list_empty_careful(&rf->rf_events) || rdmaxfer_ring_busy(rf);
}

/**
 * rdmaxfer_ioctl_ring_setup - RDMAXFER_IOC_RING_SETUP
 * @rf: the file
 * @arg: struct rdmaxfer_ring_setup
 *
 * Context: process context, may sleep; takes rf_lock.
 * Return: 0, -EINVAL for a bad size, -EBUSY if the file has a ring, -ENOMEM.
 */
int rdmaxfer_ioctl_ring_setup(struct rdmaxfer_file *rf, void *arg)
{
	struct rdmaxfer_ring_setup *cmd = arg;
	struct rdmaxfer_ring *ring;
	size_t size;

	if (cmd->__reserved || !is_power_of_2(cmd->entries) ||
	    cmd->entries > RDMAXFER_MAX_PENDING)
		return -EINVAL;
	size = PAGE_ALIGN(struct_size(ring, entries, cmd->entries));
	ring = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);	/* ENOMEM says it */
	if (!ring)
		return -ENOMEM;
	ring->mask = cmd->entries - 1;

	mutex_lock(&rf->rf_lock);
	if (rf->rf_ring) {
		mutex_unlock(&rf->rf_lock);
		vfree(ring);
		return -EBUSY;
	}
	spin_lock_bh(&rf->rf_ev_lock);
	rf->rf_ring_entries = cmd->entries;
	rf->rf_ring_size = size;
	if (!list_empty(&rf->rf_events))
		ring->flags = RDMAXFER_RING_QUEUED;
	smp_store_release(&rf->rf_ring, ring);	/* set up before it is seen */
	spin_unlock_bh(&rf->rf_ev_lock);
	mutex_unlock(&rf->rf_lock);
	cmd->mmap_size = size;
	return 0;
}

/**
 * rdmaxfer_ring_mmap - map the file's ring into the caller
 * @rf: the file
 * @vma: the mapping: MAP_SHARED, offset 0, the ring's mmap_size, not
 *	executable
 *
 * Inserts the ring's pages; from the first mapping on, events go to the
 * ring (before, nobody could read it).  The mapping cannot grow, is left
 * out of core dumps and can never become executable.
 *
 * Context: process context, mmap_lock held for writing.
 * Return: 0, -EINVAL (no ring, or another offset, size or a private
 * mapping), -EPERM (PROT_EXEC), or the error of vm_insert_page().
 */
int rdmaxfer_ring_mmap(struct rdmaxfer_file *rf, struct vm_area_struct *vma)
{
	/* pairs with RING_SETUP's store-release: rf_ring_size is set */
	struct rdmaxfer_ring *ring = smp_load_acquire(&rf->rf_ring);
	unsigned long off;
	int ret;

	if (!ring || vma->vm_pgoff || !(vma->vm_flags & VM_MAYSHARE) ||
	    vma->vm_end - vma->vm_start != rf->rf_ring_size)
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	rdmaxfer_vm_flags_mod(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP, VM_MAYEXEC);
	for (off = 0; off < rf->rf_ring_size; off += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page((void *)ring + off));
		if (ret)
			return ret;
	}
	spin_lock_bh(&rf->rf_ev_lock);
	WRITE_ONCE(rf->rf_ring_live, true);
	if (!list_empty(&rf->rf_events))
		WRITE_ONCE(ring->flags, RDMAXFER_RING_QUEUED);
	spin_unlock_bh(&rf->rf_ev_lock);
	return 0;
}

/**
 * rdmaxfer_ring_free - free the ring of a closing file
 * @rf: the file; rf_closing is set, so no event goes to the ring any more,
 *	and no mapping is left (each holds the file)
 */
void rdmaxfer_ring_free(struct rdmaxfer_file *rf)
{
	struct rdmaxfer_ring *ring;

	spin_lock_bh(&rf->rf_ev_lock);
	ring = rf->rf_ring;
	rf->rf_ring = NULL;
	rf->rf_ring_live = false;
	spin_unlock_bh(&rf->rf_ev_lock);
	vfree(ring);
}
