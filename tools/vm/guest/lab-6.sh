#!/bin/bash
# lab-6.sh - Lab 6: failures on purpose (Documentation/labs/6-failures.md).
#   tools/vm/labs.sh 6            (host: boots the guest, runs this, saves build/labs/6/)
#   bash /usr/lib/rig/lab-6.sh    (in a `make shell` guest)
# Each failure the course predicts is provoked, with the course's own verbs program
# (/opt/rdmaxfer/labs/pingpong, reg_time: tools/labs/) or with rdmaxfer, and the lab checks
# that the error the student should see is the one that came. Data block: rnr (rxe0's
# RNR counters around the pingpong RNR run and around an rdmaxfer SEND stream).
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

# rnr_counters: rxe0's RNR counters as "name value" lines.
rnr_counters() {
	rdma statistic show link rxe0/1 2>/dev/null | tr ' ' '\n' |
		awk '/rnr/ { n = $1; getline; print n, $1 }'
}

[ -x "$LABS/pingpong" ] || { fail "no $LABS/pingpong (make stage builds tools/labs)"; lab_exit; }

section "1. A wrong rkey: remote access error (course: failures 2 and 7)"
echo "The server registers a 4 KiB window with IBV_ACCESS_REMOTE_WRITE and sends its address"
echo "and rkey; the client WRITEs with the rkey's low byte (the key, not the MR index) flipped."
pp_server || fail "pingpong server"
pp_client /tmp/rkey.out --bad-rkey
expect /tmp/rkey.out "completed with status 10 (remote access error)" "wrong rkey"
expect /tmp/rkey.out "completed with status 5 (Work Request Flushed Error)" "SEND after the error"
expect /tmp/pp.log "status 5" "server's receive after the wrong rkey"
echo "The WRITE failed with status 10 (IBV_WC_REM_ACCESS_ERR) at the client, the side that"
echo "tried. Both QPs are now in the error state: the client's next SEND is flushed (status"
echo "5, IBV_WC_WR_FLUSH_ERR: not itself an error of that request), and so is the receive"
echo "the server had posted. One bad key ends the connection."
echo
echo "rdmaxfer never lets a program name an rkey: it names a window, and the module takes the"
echo "rkey from the peer's ADVERT. What a peer that guesses keys gets is what evil_peer (the"
echo "selftests' hostile client) checks: an rkey of one connection, used on another one."
start_server || fail "rdmaxfer serve"
rdmaxfer serve --port $((LAB_PORT + 1)) >/tmp/serve2.log 2>&1 &
srv2=$!
sleep 1
show "/opt/rdmaxfer/selftests/rdmaxfer/evil_peer $LAB_HOST $((LAB_PORT + 1)) crossread $LAB_PORT" |
	tee /tmp/cross.out
expect /tmp/cross.out "refused, good" "rkey of another connection"
kill "$srv2" 2>/dev/null
wait "$srv2" 2>/dev/null
stop_server
echo "Each connection has its own protection domain and each window its own FRWR key, so a"
echo "key is good only on the QP it was advertised on; the READ failed at evil_peer (status"
echo "10) and serve dropped that connection."

section "2. RNR: a SEND that finds no receive posted (course: failure 8)"
echo "The server posts no receive at all. How often the client retries after an RNR NAK is"
echo "the server's choice: ib_cm gives each QP the rnr_retry the other side sent in its"
echo "connection request or reply, so the server accepts with --rnr-retry 1."
rnr_counters >/tmp/rnr.0
pp_server --no-recv --rnr-retry 1 || fail "pingpong server --no-recv"
pp_client /tmp/rnr.out
rnr_counters >/tmp/rnr.1
expect /tmp/rnr.out "status 13 (RNR retry counter exceeded)" "RNR"
echo "The responder answered each SEND with an RNR NAK (receiver not ready), the requester"
echo "waited the responder's RNR timer and tried again, and after the retries it was allowed"
echo "the SEND completed with status 13 (IBV_WC_RNR_RETRY_EXC_ERR). rnr_retry 7 means retry"
echo "for ever: the program would hang instead."
echo
echo "rdmaxfer cannot meet RNR: a side SENDs only with a credit, and a credit is a receive"
echo "the peer has posted and told it about (kmod/credit.c). A stream of SENDs:"
start_server || fail "rdmaxfer serve"
show rdmaxfer bench "$LAB_HOST" --port "$LAB_PORT" --op send --size 4096 --duration 2 || fail "bench send"
stop_server
rnr_counters >/tmp/rnr.2
data_begin rnr "counter before after_pingpong after_rdmaxfer_send_stream"
paste /tmp/rnr.0 /tmp/rnr.1 /tmp/rnr.2 | awk '{ print $1, $2, $4, $6 }'
data_end
paste /tmp/rnr.0 /tmp/rnr.1 /tmp/rnr.2 | awk '{ d += $6 - $4 } END { exit d != 0 }' ||
	fail "rdmaxfer's SEND stream moved an RNR counter"
paste /tmp/rnr.0 /tmp/rnr.1 | awk '{ d += $4 - $2 } END { exit d == 0 }' ||
	fail "the pingpong RNR run moved no RNR counter"

section "3. A wrong lkey: local protection error (course: failures 1 and 4)"
echo "Memory the device has no registration for cannot be named at all: a work request"
echo "carries an lkey, and one that is not the buffer's fails on the side that posted it."
pp_server || fail "pingpong server"
pp_client /tmp/lkey.out --bad-lkey
grep -m1 "completed with status" /tmp/lkey.out | grep -qv "status 0 " ||
	fail "wrong lkey: the SEND did not complete with an error"
echo "The specification's status is 4, IBV_WC_LOC_PROT_ERR; Soft-RoCE in 6.1"
echo "reports 2, IBV_WC_LOC_QP_OP_ERR: its requester maps only -EFAULT from copying the"
echo "payload to a protection error, and a failed lkey lookup is -EINVAL there (rxe_req.c,"
echo "rxe_mr.c: copy_data()). Soft-RoCE in 6.12 reports 5, the flush: its requester notes"
echo "the error and moves the QP to the error state, and its completer then flushes the whole"
echo "send queue, the failed WR included (rxe_comp.c: flush_send_queue()). A status names what"
echo "the provider saw; check a completion for any error."

section "4. The memlock limit (course: failure 9, the limit a host really has)"
echo "Pinned memory is charged to RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK. root has"
echo "it; setpriv drops it from the bounding set so that the limit applies."
show "rdmaxfer info | grep -E 'max_(buf|mr)'"
show "ibv_devinfo -d rxe0 -v | grep -E 'max_mr_size|max_mr:|page_size_cap'"
show "ulimit -l; (ulimit -l 1024; setpriv --bounding-set=-ipc_lock $LABS/reg_time -r 1 512K 4M)" |
	tee /tmp/memlock.out
expect /tmp/memlock.out "Cannot allocate memory" "reg_time past RLIMIT_MEMLOCK"
start_server || fail "rdmaxfer serve"
show "(ulimit -l 1024; setpriv --bounding-set=-ipc_lock rdmaxfer write $LAB_HOST --port $LAB_PORT --size 4M)" |
	tee /tmp/memlock2.out
expect /tmp/memlock2.out "locked-memory limit" "rdmaxfer write past RLIMIT_MEMLOCK"
show "(ulimit -l 8192; setpriv --bounding-set=-ipc_lock rdmaxfer write $LAB_HOST --port $LAB_PORT --size 4M)" ||
	fail "rdmaxfer write within RLIMIT_MEMLOCK"
stop_server

section "5. munmap() of registered memory (course: failure 10)"
echo "First the control: the client WRITEs into the server's window and the server looks."
pp_server || fail "pingpong server"
pp_client /tmp/wc.out --write-check -n 10
expect /tmp/pp.log "holds the client's bytes" "WRITE into a mapped window"
echo "Now the server munmap()s the window after it sent the key, and maps fresh memory at the"
echo "same address:"
pp_server --munmap || fail "pingpong server --munmap"
pp_client /tmp/mu.out --write-check -n 10
expect /tmp/mu.out "completed with status 0 (success)" "WRITE after munmap"
expect /tmp/pp.log "all zeros" "server's view after munmap"
echo "Nothing failed: the registration pinned the pages, munmap() only removed them from the"
echo "process, and the device still writes into them until the MR is deregistered, which is"
echo "when they are freed. The data is not lost by the fabric; it is lost to the program."

section "6. Not polling the CQ (course: failure 5)"
echo "The client posts signaled 8-byte WRITEs and never polls: at most 1,000, or until a post"
echo "is refused. Then it polls what the CQ kept and reads the device's asynchronous events."
pp_server || fail "pingpong server"
pp_client /tmp/nopoll.out --no-poll
grep -qE "was refused|asynchronous event CQ error" /tmp/nopoll.out ||
	fail "not polling: neither a refused post nor a CQ error event"
echo "A completion queue holds as many completions as it was created for. On a NIC whose"
echo "send-queue slots come back only when their completions are polled, the send queue fills"
echo "first and ibv_post_send() refuses the next WR (ENOMEM): nothing is lost, the program just"
echo "stalls. Soft-RoCE frees a slot as soon as the WR has completed, polled or not. In 6.1 each"
echo "WR completes inside its own post, so every post is taken and the CQ overruns: every"
echo "completion that did not fit is dropped and only IBV_EVENT_CQ_ERR, an asynchronous event,"
echo "tells the program, not which of its WRs finished. In 6.12 the completer runs later, from a"
echo "workqueue: the posts fill the send queue and one is refused, as on hardware (and if a"
echo "slot came back while posting, eight WRs complete into a CQ of seven: it overruns once)."
echo "rdmaxfer sizes its CQs for every WR a connection can have outstanding: they cannot overrun."

section "7. A buffer that is not page-aligned (course: failure 3)"
echo "The same sizes registered from the start of a page and from one byte into it:"
show "$LABS/reg_time -r 5 4K 1M 64M; $LABS/reg_time -r 5 --offset 1 4K 1M 64M" | tee /tmp/unal.out
expect /tmp/unal.out "starting 1 bytes into a page" "reg_time --offset 1"
grep -qE "size +4096: +2 pages" /tmp/unal.out || fail "4 KiB one byte into a page: not 2 pages"
echo "Registration is neither refused nor slower: it pins every page the bytes touch (one more)"
echo "and the device's translation covers them. What it grants is the bytes asked for, not the"
echo "pages: a WRITE that starts inside the server's 4 KiB window and runs 4 bytes past its end,"
echo "into the same pinned page, is refused like a wrong key."
pp_server || fail "pingpong server"
pp_client /tmp/past.out --past-end
expect /tmp/past.out "completed with status 10 (remote access error)" "WRITE past the window's end"
echo "rdmaxfer registers whatever the user's buffer is, aligned or not (xfer_test moves buffers"
echo "at odd offsets bit-exact), and advertises exactly its bytes."

lab_exit
