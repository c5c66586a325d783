#!/bin/bash
# lab-7.sh - Lab 7: the course's calculation exercises A-D worked on the real device
# (Documentation/labs/7-exercises.md).
#   tools/vm/labs.sh 7            (host: boots the guest, runs this, saves build/labs/7/)
#   bash /usr/lib/rig/lab-7.sh    (in a `make shell` guest)
# Programs: /opt/rdmaxfer/labs/{reg_time,qp_size,pingpong} (tools/labs/), rdmaxfer, and a
# kprobe on rxe's post_send for the work requests the kernel module posts.
# Data blocks: regtime (exercise A: size pages untouched_us touched_us),
# steps (exercise D: series post_us send_done_us rtt_us, medians).
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

[ -x "$LABS/reg_time" ] || { fail "no $LABS (make stage builds tools/labs)"; lab_exit; }

section "Exercise A: pages and translation entries of a registration"
show "rdmaxfer info | grep -E 'max_fast_reg_page_list_len|max_mr_size|max_buf_size'"
echo "ibv_reg_mr() on fresh memory (each page is faulted in, i.e. allocated and zeroed, by the"
echo "pinning) and on memory written first (--touch: only pinning and rxe's page table):"
show "$LABS/reg_time -r 5 4K 1M 64M 256M 1G" | tee /tmp/reg-cold.out
show "$LABS/reg_time -r 5 --touch 4K 1M 64M 256M 1G" | tee /tmp/reg-warm.out
data_begin regtime "size pages untouched_us touched_us"
# "size N: P pages, reg US us (median ...": columns 2, 3 and 6
awk '$1 == "size" { print $2 + 0, $3, $6 }' /tmp/reg-cold.out >/tmp/reg-cold.dat
awk '$1 == "size" { print $6 }' /tmp/reg-warm.out >/tmp/reg-warm.dat
paste -d ' ' /tmp/reg-cold.dat /tmp/reg-warm.dat
data_end

section "Exercise B: how big a queue pair and a completion queue are"
echo "The course's numbers: 128 sends, 64 receives, a CQ of 192."
show "$LABS/qp_size" | tee /tmp/qp.out
grep -q 'send ring' /tmp/qp.out || fail "qp_size: no ring sizes"
show "$LABS/qp_size --send 1 --recv 1 --cqe 1"
echo "The kernel module's own queues, on a live connection (rdmaxfer bench running):"
start_server || fail "rdmaxfer serve"
rdmaxfer bench "$LAB_HOST" --port "$LAB_PORT" --op write --size 4K --duration 4 >/tmp/b.out 2>&1 &
pp=$!
sleep 2
show "grep -E '^device|^file' /sys/kernel/debug/rdmaxfer/connections" | tee /tmp/conns.out
grep -q '^file .* sq [1-9][0-9]* rq [1-9][0-9]*' /tmp/conns.out || fail "no connection with its queue depths"
show "rdma res show qp"
show "rdma res show cq"
wait "$pp" || { fail "bench for exercise B"; cat /tmp/b.out; }
stop_server

section "Exercise C: the fields of one RDMA WRITE work request, as posted"
echo "1. From userspace: pingpong prints the ibv_send_wr it posts."
pp_server || fail "pingpong server"
pp_client /tmp/wr.out --write-check -n 1
expect /tmp/wr.out 'opcode 0 (IBV_WR_RDMA_WRITE)' "pingpong's WRITE work request"
echo
echo "2. From the kernel module: a kprobe on rxe's post_send (every work request any kernel or"
echo "user QP posts reaches it) prints the struct ib_rdma_wr rdmaxfer's rdma_rw posted for a"
echo "4 KiB RDMA WRITE. The offsets are struct ib_send_wr's and struct ib_rdma_wr's in 6.x"
echo "(include/rdma/ib_verbs.h): num_sge +24, opcode +28, send_flags +32, remote_addr +40,"
echo "rkey +48; the first struct ib_sge at +16: addr +0, length +8, lkey +12."
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T 2>/dev/null
probe='p:rdmaxfer_lab/post_wr rdma_rxe:rxe_post_send num_sge=+24(%si):s32 opcode=+28(%si):u32'
probe+=' send_flags=+32(%si):x32 sge_addr=+0(+16(%si)):x64 sge_length=+8(+16(%si)):u32'
probe+=' sge_lkey=+12(+16(%si)):x32 remote_addr=+40(%si):x64 rkey=+48(%si):x32'
if echo "$probe" >>$T/kprobe_events 2>/tmp/kp.err; then
	# IB_WR_RDMA_WRITE with data (the keepalive's probes are zero-length WRITEs)
	echo 'opcode == 0 && num_sge > 0' >$T/events/rdmaxfer_lab/post_wr/filter
	echo 1 >$T/events/rdmaxfer_lab/post_wr/enable
	: >$T/trace
	start_server || fail "rdmaxfer serve"
	show rdmaxfer write "$LAB_HOST" --port "$LAB_PORT" --size 4K || fail "rdmaxfer write"
	stop_server
	echo 0 >$T/events/rdmaxfer_lab/post_wr/enable
	show "grep post_wr $T/trace"
	grep -q 'post_wr:.*opcode=0' $T/trace || fail "kprobe: no WRITE work request traced"
	echo "-:rdmaxfer_lab/post_wr" >>$T/kprobe_events
else
	fail "kprobe on rxe_post_send: $(cat /tmp/kp.err)"
fi

section "Question 2: how does the receiver know that a WRITE has finished?"
echo "It does not, from the WRITE: the data lands in its memory and nothing on its side runs."
echo "rdmaxfer write moves a file larger than the server's window in rounds, and announces each"
echo "round with a WRITE with immediate data, which consumes a receive at the server and so"
echo "gives it a completion. Traced (rdmaxfer's tracepoints) for 2 MiB through a 1 MiB window:"
rdmaxfer serve --port "$LAB_PORT" --size 1M --out /tmp/q2.bin >/tmp/q2serve.log 2>&1 &
q2=$!
sleep 1
echo 1 >$T/events/rdmaxfer/rdmaxfer_op_post/enable
echo 1 >$T/events/rdmaxfer/rdmaxfer_op_done/enable
: >$T/trace
show rdmaxfer write "$LAB_HOST" --port "$LAB_PORT" --size 2M || fail "rdmaxfer write 2M"
echo 0 >$T/events/rdmaxfer/enable
kill "$q2" 2>/dev/null
wait "$q2" 2>/dev/null
show "grep -E 'rdmaxfer_op_(post|done)' $T/trace | sed -E 's/^ +//' | cut -c1-150"
grep -q 'op_post:.*WRITE_IMM' $T/trace || fail "no WRITE_IMM traced"
echo "serve learnt of each round from its completion and saved it: $(wc -c </tmp/q2.bin) bytes in /tmp/q2.bin"

section "Exercise D: a round trip, step by step"
echo "pingpong notes, for every round trip, when ibv_post_send() (send() for UDP) returned,"
echo "when the SEND's own completion came, and when the answer came."
: >/tmp/steps.dat
for s in "rdma-busy:--busy" "rdma-block:" "udp-block:--udp"; do
	name=${s%%:*}
	# shellcheck disable=SC2086  # none or one option
	set -- ${s#*:}
	pp_server "$@" || fail "pingpong server $*"
	pp_client /tmp/st.out "$@" -n "$LAB_COUNT" -s 64
	# "  steps, medians ...: X returned at A us[, the SEND's completion at B us], the answer at C us"
	awk -v n="$name" '/steps, medians/ {
		for (i = 1; i <= NF; i++) if ($i == "at") v[++k] = $(i + 1)
		if (k == 2) { v[3] = v[2]; v[2] = "-" }
		print n, v[1], v[2], v[3] }' /tmp/st.out >>/tmp/steps.dat
done
data_begin steps "series post_us send_done_us rtt_us"
cat /tmp/steps.dat
data_end
[ "$(wc -l </tmp/steps.dat)" -eq 3 ] || fail "pingpong steps"

lab_exit
