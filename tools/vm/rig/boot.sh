# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# rig/boot.sh - booting guests under QEMU: one guest, or the client/server pair
# joined by a virtual link, with their serial ports and the rig's requests.
# Sourced by tools/vm/rig.sh, which sets the configuration and say()/die().

# ---------------------------------------------------------------- boot

new_run_dir() {   # prints build/vm/run-<time>-<pid>; keeps the 5 newest + any still running
    local run old runs
    mkdir -p "$VMDIR"
    run=$VMDIR/run-$(date +%Y%m%d-%H%M%S)-$$
    mkdir "$run"
    ln -sfn "${run##*/}" "$VMDIR/last"
    runs=("$VMDIR"/run-*)
    ((${#runs[@]} > 5)) || { echo "$run"; return; }
    for old in "${runs[@]:0:${#runs[@]}-5}"; do
        kill -0 "${old##*-}" 2>/dev/null || rm -rf "$old"
    done
    echo "$run"
}

# Follow a file while the guest runs (prints through an awk filter).
follow() {   # FILE PID AWK-PROGRAM [awk options, e.g. -v name=value]
    tail -n +1 -s 0.2 -F --pid="$2" "$1" 2>/dev/null | awk "${@:4}" "$3" &
    FOLLOWERS+=("$!")
}
# awk programs for follow: the console on stderr (with a prefix), check progress on stderr
# shellcheck disable=SC2016
AWK_CONSOLE='{ '"$AWK_CLEAN"'; print pfx $0 > "/dev/stderr"; fflush("/dev/stderr") }'
# shellcheck disable=SC2016
AWK_OUTPUT='{ sub(/\r$/, "") } /^# rig: (exit|done)/ { next } /^# rig: / { print "rig: guest:" substr($0, 7) > "/dev/stderr"; fflush("/dev/stderr"); next } { print; fflush() }'
# shellcheck disable=SC2016
AWK_PROGRESS='/^1\.\.[0-9]+/ { n = substr($1, 4) } /^# selftests: / { printf "rig: [%d/%d] %s%s\n", ++i, n, pfx, $NF > "/dev/stderr"; fflush("/dev/stderr") }'

# qemu_cmd DIR SMP: the QEMU command line common to all guests, in the array QEMU.
qemu_cmd() {
    # -cpu qemu64: rxe's CRC (crc32-generic) runs ~2x faster under TCG than with -cpu max;
    # from 6.15 on rxe uses the crc32 library, whose PCLMULQDQ path (-cpu max) is faster.
    local cpu=qemu64
    modprobe -d "$(kernel_dir)" -S "$KREL" --show-depends crc32_generic >/dev/null 2>&1 || cpu=max
    # "-display none -vga none" instead of -nographic: same, minus SeaBIOS's serial console,
    # whose first output is ESC c (a terminal reset) on the student's terminal.
    # trace_options=norecord-cmd: enabling or disabling a trace event then leaves the
    # scheduler's tracepoints alone.  With the comm recorder on, each toggle live-patches
    # __schedule() (text_poke_bp) while the other vCPU may run it with interrupts off; under
    # TCG that vCPU has looped on the patch's breakpoint for good, the patching one waiting
    # for it: a soft lockup (testing.md, "A livelock of TCG").
    QEMU=(qemu-system-x86_64 -accel tcg -cpu "$cpu" -m "$RIG_MEM" -smp "$2"
        -display none -vga none -no-reboot -nic none -name "rig,debug-threads=on"
        -kernel "$(guest_kernel)" -initrd "$1/initrd.img"
        -append "console=ttyS0 loglevel=4 panic=-1 trace_options=norecord-cmd $RIG_APPEND")
}

# start_guest DIR SMP TIMEOUT TTYS1-FILE [extra QEMU args...]: boots DIR's payload in the
# background; QPID = the pid of timeout(1) around QEMU (it passes SIGTERM on to QEMU).
# ttyS0 (console) -> DIR/console.log, ttyS1 -> DIR/TTYS1-FILE; the extra args come last,
# so an extra -serial is ttyS2.
start_guest() {
    local dir=$1 smp=$2 tmo=$3 res=$4
    shift 4
    cat "$BASE" "$dir/payload.cpio.gz" >"$dir/initrd.img"
    : >"$dir/console.log"
    : >"$dir/$res"
    qemu_cmd "$dir" "$smp"
    timeout -k 10 "$tmo" "${QEMU[@]}" -monitor none \
        -chardev "file,id=con,path=$dir/console.log" -serial chardev:con \
        -chardev "file,id=res,path=$dir/$res" -serial chardev:res "$@" \
        </dev/null >"$dir/qemu.log" 2>&1 &
    QPID=$!
}

# shell_guest DIR SMP [extra QEMU args...]: boots DIR's payload with the console on this
# terminal (foreground); sets GUEST_RC.
shell_guest() {
    local dir=$1 smp=$2
    shift 2
    cat "$BASE" "$dir/payload.cpio.gz" >"$dir/initrd.img"
    : >"$dir/console.log"
    : >"$dir/results.ktap"
    qemu_cmd "$dir" "$smp"
    say "guest shell (exit or Ctrl-D powers off; Ctrl-A x kills QEMU)"
    GUEST_RC=0
    "${QEMU[@]}" -chardev "stdio,id=con,mux=on,signal=off,logfile=$dir/console.log" \
        -serial chardev:con -mon chardev=con,mode=readline \
        -chardev "file,id=res,path=$dir/results.ktap" -serial chardev:res "$@" || GUEST_RC=$?
}

# host_cpu_ms CPU: ms a fixed user-space loop takes on host CPU CPU (best of 3).
host_cpu_ms() {
    local best=999999 i t0 t1
    for i in 1 2 3; do
        t0=$(date +%s%N)
        taskset -c "$1" awk 'BEGIN { for (i = 0; i < 1500000; i++) s += i * i }'
        t1=$(date +%s%N)
        (((t1 - t0) / 1000000 < best)) && best=$(((t1 - t0) / 1000000))
    done
    echo "$best"
}

# pin_vcpus_measure [SMP WANT] / pin_vcpus QEMU-PARENT-PID (RIG_PIN_VCPUS=1, a 2-vCPU
# guest on a host with 2 or more CPUs): each vCPU thread of the guest gets a host CPU of
# its own, guest CPU 1 (where `make bench` runs every client, and with one rxe device the
# whole round trip) the faster of host CPUs 0 and 1, as a fixed loop measured them just
# before the boot.  Why: a host CPU may run a loop ~1.6x slower than the other for tens of
# seconds at a time with nothing else on it (a hypervisor below ours: this machine), and
# a vCPU thread the host scheduler moves onto it slows every guest instruction alike;
# unpinned, rounds of a benchmark then come out in a fast or a slow mode
# (Documentation/testing.md, "Benchmarks under TCG").  The pair (pin_pair, 1 vCPU per
# guest): the client's vCPU on the faster host CPU, the server's on the other.
pin_vcpus_measure() {
    local smp=${1:-$RIG_SMP} want=${2:-2}
    PIN_FAST=''
    ((smp == want)) && (($(nproc) >= 2)) || { say "RIG_PIN_VCPUS: needs $want vCPU(s) per guest and 2 host CPUs: not pinned"; return 0; }
    PIN_C0=$(host_cpu_ms 0)
    PIN_C1=$(host_cpu_ms 1)
    PIN_FAST=1
    ((PIN_C0 < PIN_C1)) && PIN_FAST=0
    return 0
}
# pin_thread QEMU-PARENT-PID THREAD HOST-CPU: pin QEMU's thread THREAD (its comm, e.g.
# "CPU 0/TCG"; waited for up to 10 s) to HOST-CPU
pin_thread() {
    local q='' t i
    for i in $(seq 50); do
        q=$(pgrep -P "$1" -x qemu-system-x86 | head -1) || true
        [[ -n $q ]] && grep -qx "$2" "/proc/$q"/task/*/comm 2>/dev/null && break
        sleep 0.2
    done
    for t in ${q:+"/proc/$q"/task/*}; do
        if [[ $(cat "$t/comm" 2>/dev/null) == "$2" ]]; then
            taskset -pc "$3" "${t##*/}" >/dev/null && return 0
        fi
    done
    return 1
}
pin_vcpus() {
    local n=0
    [[ -n $PIN_FAST ]] || return 0
    pin_thread "$1" 'CPU 1/TCG' "$PIN_FAST" && n=$((n + 1))
    pin_thread "$1" 'CPU 0/TCG' $((1 - PIN_FAST)) && n=$((n + 1))
    ((n == 2)) || { say "RIG_PIN_VCPUS: found and pinned $n of QEMU's two vCPU threads: the run is not pinned as asked"; return 0; }
    say "vCPU threads pinned: guest CPU 1 on host CPU $PIN_FAST, guest CPU 0 on host CPU $((1 - PIN_FAST)) (before the boot a fixed loop took ${PIN_C0} ms on host CPU 0, ${PIN_C1} ms on host CPU 1)"
}
pin_pair() {   # CLIENT-QEMU-PARENT-PID SERVER-QEMU-PARENT-PID
    [[ -n $PIN_FAST ]] || return 0
    if pin_thread "$1" 'CPU 0/TCG' "$PIN_FAST" && pin_thread "$2" 'CPU 0/TCG' $((1 - PIN_FAST)); then
        say "vCPU threads pinned: the client's on host CPU $PIN_FAST, the server's on host CPU $((1 - PIN_FAST)) (before the boot a fixed loop took ${PIN_C0} ms on host CPU 0, ${PIN_C1} ms on host CPU 1)"
    else
        say "RIG_PIN_VCPUS: could not pin both guests' vCPU threads: the run is not pinned as asked"
    fi
}

elapsed_since() { echo "$(date +%s.%N) - $1" | bc | xargs printf '%.1f'; }

# reached_init QPID CONSOLE LIMIT: wait until the guest's /init has printed its first
# console line ("rig: init: ..."), or QEMU has ended (0 both), or LIMIT seconds have
# passed: then QEMU is killed and the status is 1.  Nothing of ours runs before /init:
# a kernel that does not get there in minutes is stuck in its own boot under TCG.
reached_init() {
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        grep -q '^rig: init' "$2" 2>/dev/null && return 0
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.2
    done
    grep -q '^rig: init' "$2" 2>/dev/null && return 0
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    return 1
}

# boot_guest RUNDIR MODE: boots the single guest, waits; sets GUEST_RC (124 = timeout).
# Console -> RUNDIR/console.log (ttyS0), results -> RUNDIR/results.ktap (ttyS1).
boot_guest() {
    local run=$1 mode=$2 t0 qpid
    t0=$(date +%s.%N)
    GUEST_RC=0
    if [[ $mode == shell ]]; then
        shell_guest "$run" "$RIG_SMP"
    else
        FOLLOWERS=()
        ((RIG_PIN_VCPUS)) && pin_vcpus_measure
        start_guest "$run" "$RIG_SMP" "$TIMEOUT" results.ktap
        qpid=$QPID
        trap 'kill "$qpid" 2>/dev/null || true' INT TERM
        # once (CI, 2026-11-28): a debug guest printed nothing at all in its 3600 s, while
        # the same kernel booted at once just before and after; a boot stuck before /init
        # is shown, and the guest booted again, once (testing.md, "Boot hangs")
        if ! reached_init "$qpid" "$run/console.log" "$RIG_BOOT_LIMIT"; then
            say "the guest kernel did not reach /init in $RIG_BOOT_LIMIT s: a boot hang" \
                "(console and QEMU log kept as console-hung.log, qemu-hung.log); booting again, once"
            tail -n 20 "$run/console.log" | awk "{ $AWK_CLEAN; print \"rig:   \" \$0 }" >&2
            mv "$run/console.log" "$run/console-hung.log"
            mv "$run/qemu.log" "$run/qemu-hung.log"
            start_guest "$run" "$RIG_SMP" "$TIMEOUT" results.ktap
            qpid=$QPID
        fi
        ((RIG_PIN_VCPUS)) && pin_vcpus "$qpid"
        ((RIG_VERBOSE)) && follow "$run/console.log" "$qpid" "$AWK_CONSOLE"
        case $mode in
        check) follow "$run/results.ktap" "$qpid" "$AWK_PROGRESS" ;;
        *) follow "$run/results.ktap" "$qpid" "$AWK_OUTPUT" ;;
        esac
        wait "$qpid" || GUEST_RC=$?
        trap - INT TERM
        wait "${FOLLOWERS[@]}" 2>/dev/null || true
    fi
    rm -f "$run/initrd.img"
    ELAPSED=$(elapsed_since "$t0")
    say "guest ran ${ELAPSED} s (logs: ${run#"$REPO"/})"
}

# Why a guest did not finish (empty if it did).
unfinished() {   # TTYS1-FILE QEMU-STATUS TIMEOUT
    grep -q '^# rig: done' "$1" && return 0
    if (($2 == 124 || $2 == 137)); then
        echo "guest timed out after $3 s"
    else
        echo "guest stopped without finishing (qemu exit $2)"
    fi
}

# ---------------------------------------------------------------- two guests (pair)

# Is something listening on 127.0.0.1:PORT? With a PID: is it that process?
port_listened() {   # PORT [PID]
    local l
    l=$(ss -Hltnp "sport = :$1" 2>/dev/null) || return 1
    [[ -n $l ]] || return 1
    [[ -z ${2:-} || $l == *"pid=$2,"* ]]
}
qemu_listens() {   # PORT PIDFILE: is the QEMU of PIDFILE listening on PORT?
    local pid
    pid=$(cat "$2" 2>/dev/null) && [[ -n $pid ]] && port_listened "$1" "$pid"
}

# server_up QPID CMD...: wait until CMD succeeds (QEMU binds its listening socket before
# it boots the guest: well under 10 s); if QPID exits first or it takes longer: reap it, fail.
server_up() {
    local qpid=$1 i
    shift
    for ((i = 0; i < 200; i++)); do
        kill -0 "$qpid" 2>/dev/null || break
        "$@" && return 0
        sleep 0.05
    done
    kill "$qpid" 2>/dev/null || true
    wait "$qpid" 2>/dev/null || true
    return 1
}

# Requests of A's tests to the host (selftests/rdmaxfer/pair/vanish.sh): a line containing
# "rig-request: WHAT" in A's results.  kill-server: B's host dies: its link is cut and its
# guest paused (HMP set_link, stop), and its QEMU is killed only after A's end (the rig lets
# A go on and does not count B's end as a failure).  With its link down B's QEMU goes on
# reading A's frames from the socket and dropping them, as a dead host's switch port does.
# B's QEMU is not killed at once, as it was up to session 19: QEMU 7.2's stream netdev keeps a
# frame it could not write yet (EAGAIN: B's main loop had fallen behind) queued for good once
# the peer is gone, and A's virtio-net transmit queue stalls behind it: rxe's skbs are never
# freed, its retries stop, no completion comes (the keepalive never hears of the peer's
# death), and destroying a QP waits 50 s and WARNs; cutting the link 0.5 s before the kill
# made that rare, not impossible (pair/vanish.sh failed so on 6.1, 2026-12-03).  link-down / link-up:
# set_link on B's netdev through its monitor (the cable pulled; B's NIC reports carrier
# loss).  link-cut MS: link-down, and link-up MS ms (100..10000) later, timed here: a cut
# timed by the guest lasts as long as its sleeps and pings take: 2.0 s on an idle host,
# 2.4 s in a KASAN guest, and in one CI run long enough to exhaust the QPs' retries.  Each is logged with the host's time in
# pair-server/requests.log.  Runs until A's QEMU exits.
rig_requests() {   # RESULTS CLIENT-PID SERVER-DIR MONITOR-FD
    local line what arg
    tail -n +1 -s 0.1 -F --pid="$2" "$1" 2>/dev/null | while IFS= read -r line; do
        [[ $line =~ rig-request:\ ([a-z-]+)( ([0-9]+))? ]] || continue
        what=${BASH_REMATCH[1]}
        arg=${BASH_REMATCH[3]}
        echo "$(date +%s.%N) $what${arg:+ $arg}" >>"$3/requests.log"
        case $what in
        kill-server)
            echo "set_link n0 off" >&"$4"
            echo stop >&"$4" ;;
        link-down)   echo "set_link n0 off" >&"$4" ;;
        link-up)     echo "set_link n0 on" >&"$4" ;;
        link-cut)
            if [[ $arg =~ ^[0-9]{1,5}$ ]] && ((10#$arg >= 100 && 10#$arg <= 10000)); then
                arg=$((10#$arg))
                echo "set_link n0 off" >&"$4"
                sleep "$((arg / 1000)).$(printf %03d $((arg % 1000)))"
                echo "set_link n0 on" >&"$4"
                echo "$(date +%s.%N) link-up" >>"$3/requests.log"
            else
                echo "$(date +%s.%N) link-cut: bad length" >>"$3/requests.log"
            fi ;;
        *)           echo "$(date +%s.%N) unknown request" >>"$3/requests.log" ;;
        esac
    done
}
server_killed() {   # SERVER-DIR
    grep -qs ' kill-server$' "$1/requests.log"
}

# pair_boot RUNDIR CLIENT-MODE [CMD...]: boots guest B (the server) listening, then guest A
# (the client) connected to it; waits for A, then stops B.  CLIENT-MODE check: A runs the
# pair selftests, B selftests/rdmaxfer/pair/peer.sh; shell: A's console on this terminal, B
# the same peer.sh; run: A runs CMD (as `rig.sh run` does), B guest/peer-shell.sh (a shell
# on TCP port 18700 for A's commands: make bench's perftest servers and /proc/stat).
# Sets CLIENT_RC, CLIENT_WHY, SERVER_WHY (empty = fine), PAIR_ELAPSED.
# The link (RIG_PAIR_LINK): unix = -netdev stream over a unix socket in the run dir;
# tcp = -netdev socket listen=/connect=127.0.0.1:PORT, PORT random, retried on collision.
# QEMU 7.2 sets TCP_NODELAY only on the connecting side of a socket netdev, so over tcp the
# listener's back-to-back frames (an rxe ACK, then a reply) wait for the peer's delayed ACK:
# round trips take ~20-40 ms there, against ~0.3 ms over the unix socket.
pair_boot() {
    local run=$1 cmode=$2 cdir=$1/pair-client sdir=$1/pair-server
    local spid="" cpid st=0 first="" ctl t0 i port sock="" cnet=""
    local stmo=$((TIMEOUT + 120))   # B outlives A; the rig stops it after A
    mkdir -p "$cdir" "$sdir"
    : >"$cdir/results.ktap"
    : >"$cdir/console.log"
    shift 2
    build_payload "$cdir" "$cmode" client "$@"
    if [[ $cmode == run ]]; then
        RIG_PEER=/usr/lib/rig/peer-shell.sh build_payload "$sdir" peer server
    else
        build_payload "$sdir" peer server
    fi
    CLIENT_RC=0 CLIENT_WHY="" SERVER_WHY=""
    # speed/duplex: else each of rxe's port queries logs "eth0 speed is unknown"
    local nic=virtio-net-pci,netdev=n0,speed=10000,duplex=full
    [[ $RIG_PAIR_MTU == 1500 ]] || nic+=,host_mtu=$RIG_PAIR_MTU
    # B's ttyS2 reads ctl.in (a FIFO, held open here so writing never blocks) and
    # writes ctl.out (a file: B sends nothing); B's QEMU monitor the same way (mon.*:
    # rig_requests' set_link)
    rm -f "$sdir/ctl.in" "$sdir/mon.in" "$sdir/requests.log"
    mkfifo "$sdir/ctl.in" "$sdir/mon.in"
    : >"$sdir/ctl.out"
    : >"$sdir/mon.out"
    exec {ctl}<>"$sdir/ctl.in" {mon}<>"$sdir/mon.in"
    local sargs=(-pidfile "$sdir/qemu.pid" -device "$nic,mac=52:54:00:12:34:02"
                 -chardev "pipe,id=ctl,path=$sdir/ctl" -serial chardev:ctl
                 -chardev "pipe,id=mon,path=$sdir/mon" -mon "chardev=mon,mode=readline")
    PIN_FAST=''
    ((RIG_PIN_VCPUS)) && [[ $cmode != shell ]] && pin_vcpus_measure "$RIG_PAIR_SMP" 1
    t0=$(date +%s.%N)

    case $RIG_PAIR_LINK in
    unix)
        sock=$sdir/link.sock
        ((${#sock} < 100)) || sock=$(mktemp -u /tmp/rig-link.XXXXXX)   # sun_path: 108 bytes
        start_guest "$sdir" "$RIG_PAIR_SMP" "$stmo" peer.log \
            -netdev "stream,id=n0,server=on,addr.type=unix,addr.path=$sock" "${sargs[@]}"
        spid=$QPID
        server_up "$spid" test -S "$sock" || spid=""
        cnet="stream,id=n0,server=off,addr.type=unix,addr.path=$sock" ;;
    tcp)
        for _ in 1 2 3 4 5 6 7 8; do
            # below the ephemeral range (32768+), so outgoing connections do not take it
            port=$((20000 + RANDOM % 12000))
            port_listened "$port" && continue
            rm -f "$sdir/qemu.pid"
            start_guest "$sdir" "$RIG_PAIR_SMP" "$stmo" peer.log \
                -netdev "socket,id=n0,listen=127.0.0.1:$port" "${sargs[@]}"
            spid=$QPID
            server_up "$spid" qemu_listens "$port" "$sdir/qemu.pid" && break
            spid=""
            grep -q 'in use' "$sdir/qemu.log" || break   # not a port collision: give up
            say "port $port taken, retrying"
        done
        cnet="socket,id=n0,connect=127.0.0.1:$port" ;;
    esac
    if [[ -z $spid ]]; then
        exec {ctl}>&- {mon}>&-
        SERVER_WHY="server guest did not start: $(tail -n 3 "$sdir/qemu.log" | tr '\n' ' ')"
        CLIENT_WHY="not started (no server)"
        PAIR_ELAPSED=0
        return
    fi
    local cargs=(-netdev "$cnet" -device "$nic,mac=52:54:00:12:34:01")

    FOLLOWERS=()
    if [[ $cmode == shell ]]; then
        ((RIG_VERBOSE)) && follow "$sdir/console.log" "$spid" "$AWK_CONSOLE" -v pfx="server| "
        shell_guest "$cdir" "$RIG_PAIR_SMP" "${cargs[@]}"
        CLIENT_RC=$GUEST_RC
        kill -0 "$spid" 2>/dev/null || first=$spid
    else
        start_guest "$cdir" "$RIG_PAIR_SMP" "$TIMEOUT" results.ktap "${cargs[@]}"
        cpid=$QPID
        trap 'kill "$cpid" "$spid" 2>/dev/null || true' INT TERM
        pin_pair "$cpid" "$spid"
        if ((RIG_VERBOSE)); then
            follow "$sdir/console.log" "$spid" "$AWK_CONSOLE" -v pfx="server| "
            follow "$cdir/console.log" "$cpid" "$AWK_CONSOLE" -v pfx="client| "
        fi
        if [[ $cmode == check ]]; then
            follow "$cdir/results.ktap" "$cpid" "$AWK_PROGRESS" -v pfx=pair/
        else
            follow "$cdir/results.ktap" "$cpid" "$AWK_OUTPUT"
        fi
        rig_requests "$cdir/results.ktap" "$cpid" "$sdir" "$mon" &
        FOLLOWERS+=("$!")
        wait -n -p first "$cpid" "$spid" || st=$?
        if [[ ${first:-} == "$spid" ]] && server_killed "$sdir"; then
            wait "$cpid" || CLIENT_RC=$?    # as A's test asked: A goes on
        elif [[ ${first:-} == "$spid" ]]; then   # B went first: stop A, its tests need B
            kill "$cpid" 2>/dev/null || true
            wait "$cpid" || CLIENT_RC=$?
        else
            CLIENT_RC=$st
        fi
        trap - INT TERM
    fi
    if server_killed "$sdir"; then
        kill -KILL "$spid" 2>/dev/null || true
        st=0
        wait "$spid" || st=$?
        say "pair: the server guest was stopped (link cut, guest paused) at the client's request and killed after its end (qemu exit $st)"
        first=""
    elif [[ ${first:-} == "$spid" ]]; then
        st=0
        wait "$spid" || st=$?
        if grep -q '^# rig: ready' "$sdir/peer.log"; then
            SERVER_WHY="server guest stopped before the client had finished (qemu exit $st)"
        else
            SERVER_WHY="server guest stopped before it was up (qemu exit $st)"
        fi
    else
        echo stop >&"$ctl"
        # 30 s to power off; 5 s if it never got ready (it cannot read "stop" before)
        local grace=300
        grep -q '^# rig: ready' "$sdir/peer.log" || grace=50
        for ((i = 0; i < grace; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$spid" 2>/dev/null; then
            kill "$spid" 2>/dev/null || true
            SERVER_WHY="server guest did not power off within 30 s of the client's end"
            grep -q '^# rig: ready' "$sdir/peer.log" || SERVER_WHY="server guest never came up"
        fi
        st=0
        wait "$spid" || st=$?
        [[ -n $SERVER_WHY ]] || SERVER_WHY=$(unfinished "$sdir/peer.log" "$st" "$stmo" | sed 's/^guest/server guest/')
    fi
    exec {ctl}>&- {mon}>&-
    [[ $sock == /tmp/rig-link.* ]] && rm -f "$sock"
    wait "${FOLLOWERS[@]}" 2>/dev/null || true
    if [[ $cmode != shell ]]; then
        CLIENT_WHY=$(unfinished "$cdir/results.ktap" "$CLIENT_RC" "$TIMEOUT")
        [[ -n $CLIENT_WHY && ${first:-} == "$spid" ]] && CLIENT_WHY="guest stopped by the rig (the server guest had stopped)"
    fi
    rm -f "$cdir/initrd.img" "$sdir/initrd.img"
    PAIR_ELAPSED=$(elapsed_since "$t0")
    say "pair guests ran ${PAIR_ELAPSED} s (logs: ${run#"$REPO"/}/pair-{client,server})"
}
