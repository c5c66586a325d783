#!/bin/bash
# ping-tail.sh - where the pair's ping round trips go (issue 32): run in the
# client of a pair, e.g.
#   RIG_MEM=4096 RIG_PIN_VCPUS=1 tools/vm/rig.sh pair-run -- 'bash /usr/lib/rig/ping-tail.sh'
#   RIG_KERNEL=6.12 RDMAXFER_STAGE=build/stage-6.12 ... (the same on 6.12)
#
#   ping-tail.sh [ROUNDS]       ROUNDS (3) alternations of 2000 8-byte round
#                               trips: rdmaxfer ping --op read|write, busy and
#                               --poll block, then ib_read_lat -F and
#                               ib_write_lat (it prints half round trips)
#   ping-tail.sh trace [N]      N (2000) `ping --op read` with the module's
#                               op_post/op_done tracepoints, scheduling,
#                               softirq and IRQ events: the post-to-done
#                               percentiles, the done-to-next-post gap, and
#                               the events of the three slowest round trips
#   ping-tail.sh steps [ROUNDS] ROUNDS (3) alternations of 1000 READ and
#                               1000 FADD round trips of ping and of
#                               ib_read_lat / ib_atomic_lat, traced the same
#                               way for both tools (the posting system call,
#                               kprobes on rxe_post_send and rxe_cq_post):
#                               the medians of system call -> post, post ->
#                               CQE (the device and the link), CQE -> next
#                               system call (the completion's way to the
#                               program), and for ping CQE -> op_done
#   ping-tail.sh split [ROUNDS] the same round trips split between the
#                               guests: here the posting system call,
#                               kprobes on rxe_post_send, rxe_xmit_packet,
#                               vring_interrupt, rxe_rcv and rxe_cq_post, and
#                               for ping the CQ's handler
#                               (ib_cq_completion_softirq), the CQ pool's poll
#                               (ib_poll_handler) and op_done; in the server
#                               guest vring_interrupt, rxe_rcv and
#                               rxe_xmit_packet: the medians of each step of
#                               a round trip in each guest (the time between
#                               the request leaving and the response's IRQ
#                               less the server's steps is the link both
#                               ways)
#
# The servers (serve, perftest's) run in the other guest, started through
# its peer-shell.sh (TCP port 18700).
set -u
ADDR=${RIG_PEER_ADDR:?run this in the client of rig.sh pair-run}
DEV=${RIG_DEV:-rxe0}
PORT=18600

peer()
{
	exec 3<>"/dev/tcp/$ADDR/18700" || return
	printf '%s\nexit\n' "$1" >&3
	cat <&3
	exec 3<&-
}

for _ in $(seq 100); do
	peer true 2>/dev/null && break
	sleep 0.2
done
peer "rdmaxfer serve --port $PORT --atomic </dev/null >/dev/null 2>&1 &"
sleep 2
uname -r

# ping's JSON summary; jq runs after ping, not beside it: on one vCPU a jq
# starting up in a pipe took the CPU for 7-8 ms after a completion
pingj()
{
	rdmaxfer ping "$ADDR" --port $PORT --count "$1" --json "${@:2}" >/tmp/ping.json &&
		jq -c '{p50_us, p99_us, p999_us, max_us}' /tmp/ping.json
}

# PT TOOL: perftest's TOOL against a server started in the other guest
pt()
{
	peer "timeout 60 $1 -d $DEV -F -s 8 -n 2000 </dev/null >/dev/null 2>&1 &"
	sleep 1.5
	"$1" -d "$DEV" -F -s 8 -n 2000 "$ADDR" 2>/dev/null | grep -E '^ *8 '
}

# steps NAME CMD...: CMD traced; one line of medians (see the header)
steps()
{
	local name=$1
	shift
	echo >$T/trace
	echo 1 >$T/events/pingtail/enable
	echo 1 >$T/events/raw_syscalls/sys_enter/enable
	echo 1 >$T/events/rdmaxfer/rdmaxfer_op_done/enable
	echo 1 >$T/tracing_on
	"$@" >/tmp/steps.out 2>&1
	echo 0 >$T/tracing_on
	echo 0 >$T/events/pingtail/enable
	echo 0 >$T/events/raw_syscalls/sys_enter/enable
	echo 0 >$T/events/rdmaxfer/rdmaxfer_op_done/enable
	# per round trip: S the system call that posts, P rxe_post_send, C
	# rxe_cq_post, D rdmaxfer_op_done (ping only), the next S
	awk -v name="$name" '
	function ts(   i, t) { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i; sub(":", "", t); return t * 1e6 } }
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j - 1]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n ? a[int((n + 1) / 2)] : -1
	}
	/ sys_enter: / { t = ts(); if (c) { n++; sp[n] = p - s; pc[n] = c - p; cn[n] = t - c; if (d) { nd++; cd[nd] = d - c } } s = t; c = d = 0; next }
	/ post: / { p = ts(); next }
	/ cqpost: / { c = ts(); next }
	/ rdmaxfer_op_done: / { d = ts(); next }
	END { printf "%s: %d round trips, medians (us): system call -> post %.0f, post -> CQE %.0f, CQE -> next system call %.0f", name, n, med(sp, n), med(pc, n), med(cn, n)
	      if (nd) printf " (CQE -> op_done %.0f)", med(cd, nd); printf "\n" }' $T/trace
}

# the kprobes of `split` (in the server guest through peer(), in this one
# with post and cqpost added); "cd" so the rest of a peer() line runs there
SPLIT_KP='[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
cd /sys/kernel/tracing && echo 0 >tracing_on && echo 8192 >buffer_size_kb &&
echo "p:split/rcv rdma_rxe:rxe_rcv" >>kprobe_events &&
echo "p:split/xmit rdma_rxe:rxe_xmit_packet" >>kprobe_events &&
echo "p:split/vint vring_interrupt" >>kprobe_events && echo 1 >events/split/enable'
# AWK_TS: the event's time stamp in us, and the median of an array
AWK_LIB='function ts(   i, t) { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i; sub(":", "", t); return t * 1e6 } }
function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j - 1]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } return n ? a[int((n + 1) / 2)] : -1 }'
# the server's side of a request: its IRQ -> rxe_rcv -> the response leaves
SPLIT_SRV="$AWK_LIB"'
/ vint: / { v = ts(); next }
/ rcv: / { r = ts(); if (v) { ni++; vi[ni] = r - v } v = 0; next }
/ xmit: / { if (r) { n++; rx[n] = ts() - r } r = 0; next }
END { printf "  server guest: %d requests, medians (us): IRQ -> rxe_rcv %.0f, rxe_rcv -> response leaves %.0f\n", n, med(vi, ni), med(rx, n) }'
# the client's: system call -> post -> the request leaves -> the response's
# IRQ -> rxe_rcv -> CQE -> the next system call; ping's CQE -> the CQ's
# handler -> the CQ pool's poll -> op_done
SPLIT_CLI="$AWK_LIB"'
/ sys_enter: / { t = ts(); if (c) { n++; sp[n] = p - s; px[n] = x - p; xv[n] = v - x; vr[n] = r - v; rc[n] = c - r; cs[n] = t - c
		if (d) { nd++; ch[nd] = h - c; hi[nd] = i - h; id[nd] = d - i } }
	s = t; p = x = v = r = c = h = i = d = 0; next }
/ post: / { if (s && !p) p = ts(); next }
/ xmit: / { if (p && !x) x = ts(); next }
/ vint: / { if (x && !r) v = ts(); next }
/ rcv: / { if (v && !r) r = ts(); next }
/ cqpost: / { if (r && !c) c = ts(); next }
/ handler: / { if (c && !h) h = ts(); next }
/ ipoll: / { if (h && !i) i = ts(); next }
/ rdmaxfer_op_done: / { if (i && !d) d = ts(); next }
END { printf "  client guest: %d round trips, medians (us): system call -> post %.0f, -> request leaves %.0f, -> response IRQ %.0f, -> rxe_rcv %.0f, -> CQE %.0f, -> next system call %.0f\n", n, med(sp, n), med(px, n), med(xv, n), med(vr, n), med(rc, n), med(cs, n)
      if (nd) printf "  client guest: %d of them through the CQ pool: CQE -> CQ handler %.0f, -> CQ pool poll %.0f, -> op_done %.0f\n", nd, med(ch, nd), med(hi, nd), med(id, nd) }'

# split_run NAME CMD...: CMD traced in both guests; two lines of medians
split_run()
{
	local name=$1
	shift
	peer "cd $T && echo >trace && echo 1 >tracing_on"
	echo >$T/trace
	echo 1 >$T/tracing_on
	"$@" >/tmp/split.out 2>&1
	echo 0 >$T/tracing_on
	echo "$name:"
	awk "$SPLIT_CLI" $T/trace
	peer "cd $T && echo 0 >tracing_on && awk '$SPLIT_SRV' trace"
}

T=/sys/kernel/tracing
# read_fadd FN: FN NAME CMD... for ping --op read and ib_read_lat, then ping
# --op fadd and ib_atomic_lat (each perftest's server started in the peer first)
read_fadd()
{
	"$1" "ping --op read" rdmaxfer ping "$ADDR" --port $PORT --op read --count 1000
	peer "timeout 60 ib_read_lat -d $DEV -F -s 8 -n 1000 </dev/null >/dev/null 2>&1 &"
	sleep 1.5
	"$1" "ib_read_lat" ib_read_lat -d "$DEV" -F -s 8 -n 1000 "$ADDR"
	"$1" "ping --op fadd" rdmaxfer ping "$ADDR" --port $PORT --op fadd --count 1000
	peer "timeout 60 ib_atomic_lat -d $DEV -F -A FETCH_AND_ADD -n 1000 </dev/null >/dev/null 2>&1 &"
	sleep 1.5
	"$1" "ib_atomic_lat" ib_atomic_lat -d "$DEV" -F -A FETCH_AND_ADD -n 1000 "$ADDR"
}

if [ "${1:-}" = split ]; then
	peer "$SPLIT_KP" >/dev/null
	eval "$SPLIT_KP"
	cd / || exit 1
	echo 'p:split/post rdma_rxe:rxe_post_send' >>$T/kprobe_events
	echo 'p:split/cqpost rdma_rxe:rxe_cq_post' >>$T/kprobe_events
	echo 'p:split/handler ib_core:ib_cq_completion_softirq' >>$T/kprobe_events
	echo 'p:split/ipoll ib_core:ib_poll_handler' >>$T/kprobe_events
	echo 1 >$T/events/split/enable
	# ioctl (ping's SUBMIT), write (libibverbs' post_send command on rxe)
	echo 'id == 16 || id == 1' >$T/events/raw_syscalls/sys_enter/filter
	echo 1 >$T/events/raw_syscalls/sys_enter/enable
	echo 1 >$T/events/rdmaxfer/rdmaxfer_op_done/enable
	for r in $(seq "${2:-3}"); do
		echo "round $r"
		read_fadd split_run
	done
	peer "cd $T && echo 0 >events/split/enable && echo >kprobe_events" >/dev/null
	echo 0 >$T/events/split/enable
	echo 0 >$T/events/raw_syscalls/sys_enter/enable
	echo 0 >$T/events/raw_syscalls/sys_enter/filter
	echo 0 >$T/events/rdmaxfer/rdmaxfer_op_done/enable
	echo >$T/kprobe_events
	exit 0
fi
if [ "${1:-}" = steps ]; then
	[ -d $T/events ] || mount -t tracefs nodev $T
	echo 0 >$T/tracing_on
	echo 8192 >$T/buffer_size_kb
	echo 'p:pingtail/post rdma_rxe:rxe_post_send' >>$T/kprobe_events
	echo 'p:pingtail/cqpost rdma_rxe:rxe_cq_post' >>$T/kprobe_events
	# ioctl (ping's SUBMIT), write (libibverbs' post_send command on rxe)
	echo 'id == 16 || id == 1' >$T/events/raw_syscalls/sys_enter/filter
	for r in $(seq "${2:-3}"); do
		read_fadd steps
	done
	echo 0 >$T/events/raw_syscalls/sys_enter/filter
	echo >$T/kprobe_events
	exit 0
fi

if [ "${1:-}" != trace ]; then
	for r in $(seq "${1:-3}"); do
		echo "round $r"
		for op in read write; do
			echo "ping $op: $(pingj 2000 --op "$op")"
			echo "ping $op --poll block: $(pingj 2000 --op "$op" --poll block)"
		done
		echo "ib_read_lat (bytes iters min max typical avg stdev 99% 99.9%): $(pt ib_read_lat)"
		echo "ib_write_lat (half round trips): $(pt ib_write_lat)"
	done
	exit 0
fi

n=${2:-2000}
pingj 300 --op read >/dev/null	# warm
[ -d $T/events ] || mount -t tracefs nodev $T
echo 0 >$T/tracing_on
echo 16384 >$T/buffer_size_kb
echo >$T/trace
for e in rdmaxfer/rdmaxfer_op_post rdmaxfer/rdmaxfer_op_done sched/sched_switch \
	sched/sched_wakeup irq/softirq_entry irq/softirq_exit irq/irq_handler_entry; do
	echo 1 >"$T/events/$e/enable"
done
echo 1 >$T/tracing_on
echo "ping read: $(pingj "$n" --op read)"
echo 0 >$T/tracing_on
cat $T/trace >/tmp/trace.txt
# the event's time stamp (the field "SECONDS:")
ts='for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i; sub(":", "", t) }'
awk "/rdmaxfer_op_post:/ { $ts; post = t; pl = NR }
     /rdmaxfer_op_done:/ { $ts; if (post) printf \"%.1f %d %d\\n\", (t - post) * 1e6, pl, NR; post = 0 }" \
	/tmp/trace.txt >/tmp/lat.txt
pct() { sort -n | awk '{ v[NR] = $1 } END { print "p50", v[int(NR * 0.5)], "p99", v[int(NR * 0.99)], "p99.9", v[int(NR * 0.999)], "max", v[NR] }'; }
echo "post -> done (us), $(wc -l </tmp/lat.txt) operations: $(cut -d' ' -f1 /tmp/lat.txt | pct)"
echo "done -> next post (us): $(awk "/rdmaxfer_op_done:/ { $ts; d = t }
	/rdmaxfer_op_post:/ { $ts; if (d) printf \"%.1f\\n\", (t - d) * 1e6; d = 0 }" /tmp/trace.txt | pct)"
sort -rn /tmp/lat.txt | head -3 | while read -r us a b; do
	echo "=== a slow one, post to done: $us us"
	sed -n "${a},${b}p" /tmp/trace.txt | sed 's/^ *//' | grep -v 'name=.*timer' | cut -c1-160 | head -60
done
awk "/rdmaxfer_op_done:/ { $ts; d = t; dl = NR }
     /rdmaxfer_op_post:/ { $ts; if (d) printf \"%.1f %d %d\\n\", (t - d) * 1e6, dl, NR; d = 0 }" \
	/tmp/trace.txt | sort -rn | head -2 | while read -r us a b; do
	echo "=== a slow one, done to the next post: $us us"
	sed -n "${a},${b}p" /tmp/trace.txt | sed 's/^ *//' | grep -v 'name=.*timer' | cut -c1-160 | head -60
done
