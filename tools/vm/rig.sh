#!/usr/bin/env bash
# rig.sh - QEMU test rig for rdmaxfer.
#
# Boots Debian's own kernel (the ABI we build rdmaxfer.ko against) under QEMU/TCG
# with a busybox initramfs that has Soft-RoCE (rdma_rxe on a veth pair), the
# rdma/verbs tools and perftest, copies the stage into the guest, runs something
# there and brings the result back over a second serial port.
#
#   rig.sh setup              install host packages (root) + cache the guest kernel
#                             (RIG_KERNEL=debug: build the debug kernel, ~30 min once)
#   rig.sh abi | kdir         print the guest's kernel release | the tree to build modules
#                             against (stock: /usr/src/linux-headers-6.1.0-NN-amd64)
#   rig.sh krun CMD...        run CMD where modules for the kernel are built: here, or for
#                             RIG_KERNEL=sid in its build chroot (root; the repo is
#                             bind-mounted at its own path, CMD runs in the same directory)
#   rig.sh check [--timeout S]  run the selftests: one guest, then (if the stage has
#                             selftests/rdmaxfer/pair/) the pair run; last line "N passed, N failed,
#                             N skipped" over both; exit 0 iff both finished and none failed
#   rig.sh pair [--timeout S]   only the pair run (two guests), same output
#   rig.sh pair-shell         pair run with an interactive console on the client instead
#                             of its tests (the server runs peer.sh as usual)
#   rig.sh pair-run [--] CMD...  run CMD in the client of a pair, as `run` does; the server
#                             runs guest/peer-shell.sh (a shell on TCP port 18700 for the
#                             client's commands) instead of the pair tests' peer.sh
#   rig.sh demo               run the stage's demo.sh (or guest/demo.sh)
#   rig.sh run [--] CMD...    run CMD in the guest (bash), print output, exit with its status
#                             (one argument = a shell command line; several = an argv)
#   rig.sh shell              interactive guest console (Ctrl-A x kills QEMU)
#
# Layout
#   tools/vm/rig.sh              this script (host side): configuration and the commands;
#                                it sources one file per job:
#   tools/vm/rig/host.sh         host packages, the cache lock, setup, prepare
#   tools/vm/rig/kernel.sh       the guest kernel: ABI, fetch (other suites: private apt),
#                                the debug build, the sid build chroot, vmlinux
#   tools/vm/rig/siw.sh          Soft-iWARP (siw.ko) for the guests, built with
#   tools/vm/rig/siw-child-close.patch  our fix of a siw bug (a TCP peer kills a listener)
#   tools/vm/rig/initramfs.sh    the base initramfs (cached) and the per-run payload
#   tools/vm/rig/boot.sh         QEMU: one guest, or the client/server pair and its link
#   tools/vm/rig/results.sh      KTAP -> leaf results, failure diagnostics, kernel log, summary
#   tools/vm/guest/init          guest PID 1: mounts, modules, network + rxe0, insmod, mode
#   tools/vm/guest/runtests.sh   guest: kselftest's runner.sh over kselftest-list.txt, with a
#                                post-check after each test -> KTAP (check mode)
#   tools/vm/guest/demo.sh       default demo
#   tools/vm/guest/bench.sh      make bench (tools/vm/bench.sh runs it in `run` and in `pair-run`):
#                                rdmaxfer vs perftest, alternating, ratio and CPU tables
#   tools/vm/guest/peer-shell.sh pair-run's server: a shell on TCP port 18700 for the client
#   tools/vm/guest/ping-tail.sh  pair-run's client: ping against perftest round trips, and a
#                                trace of the slow ones (issue 32)
#   tools/vm/guest/lab-*.sh      make labs: the course labs (tools/vm/labs.sh plots them)
#   $RDMAXFER_CACHE/kernel/<abi>/          unpacked linux-image-<abi>-amd64-unsigned .deb, plus
#                                          boot/vmlinux-<krel> extracted from it: QEMU boots it
#                                          through its PVH entry, which skips ~2.5 s of TCG
#                                          decompression per boot (else: boot/vmlinuz-<krel>)
#   $RDMAXFER_CACHE/abi                    apt-cache's answer, until apt's lists change
#   $RDMAXFER_CACHE/initramfs/<krel>/      base.cpio.gz: busybox, host tools + libs, modules
#                                          (rebuilt when any input or the build code changes)
#   build/vm/run-*/                        one per rig.sh command; build/vm/last -> newest
#     console.log, results.ktap (ttyS1), payload.cpio.gz, qemu.log    the single guest
#     pair-client/  console.log, results.ktap, payload.cpio.gz, qemu.log   guest A
#     pair-server/  console.log, peer.log (ttyS1: peer.sh's output), ctl.in (FIFO -> ttyS2),
#                   payload.cpio.gz, qemu.log                              guest B
#   The initrd is base.cpio.gz + payload.cpio.gz (stage at /opt/rdmaxfer, guest scripts,
#   /etc/rig.conf); the kernel unpacks concatenated archives in order.
#
# Single guest: Debian's kernel, TCG, -cpu qemu64, no NIC. In check mode no network setup at
# all (each test makes its own Soft-RoCE device, as on a user's host); else rxe0 (Soft-RoCE)
# on veth0 192.0.2.1/24 2001:db8::1/64, peer veth1 192.0.2.2/24 2001:db8::2/64 (mtu 9000), rdmaxfer.ko
# loaded, /opt/rdmaxfer/bin on PATH, /bin/sh = dash, bash, busybox, iproute2, kmod, perftest, jq.
# ttyS0 = console (build/vm/last/console.log), ttyS1 = results (results.ktap).
# RIG_ROLE=single and RIG_SELF_ADDR(6) are exported (also in /etc/rig.conf).
#
# Two guests (pair run; only when $RDMAXFER_STAGE/selftests/rdmaxfer/pair/kselftest-list.txt exists)
#   A = client (hostname rdmaxfer-client): eth0 192.0.2.11/24 2001:db8:1::11/64, mac ..:01
#   B = server (hostname rdmaxfer-server): eth0 192.0.2.12/24 2001:db8:1::12/64, mac ..:02
#   (nodad; /etc/hosts names them client and server). Each: virtio-net-pci (host_mtu=9000)
#   + eth0 mtu 9000 (9000-byte frames pass, v4 and v6; rxe0's active IB MTU is 4096),
#   rxe0 on eth0, rdmaxfer.ko loaded as in the single guest, -smp 1 (RIG_PAIR_SMP), RIG_MEM.
#   Exported in both (and in /etc/rig.conf): RIG_ROLE=client|server, RIG_SELF_ADDR,
#   RIG_PEER_ADDR, RIG_SELF_ADDR6, RIG_PEER_ADDR6.
#   The link: B's QEMU listens, A's connects once B's is listening. Default: -netdev stream
#   over a unix socket (pair-server/link.sock). RIG_PAIR_LINK=tcp: -netdev socket,
#   listen=/connect=127.0.0.1:PORT (random free port, retried on collision); its round
#   trips are ~20-40 ms, see pair_boot. Measured on this 2-core host (TCG, noisy), unix link:
#   64 KiB ib_write_bw ~45-65 MB/s at mtu 9000, ~20-30 at 1500; ib_write_lat 2 B typical
#   ~0.25-0.35 ms; a one-test pair run ~6-10 s from start to result. -smp 1 beat -smp 2
#   on every number (with 2 vCPUs each, 4 vCPU threads share the 2 host cores).
#   B runs selftests/rdmaxfer/pair/peer.sh (from that dir, stdin /dev/null, in its own session) in
#   the background as soon as its setup is done; its output goes to B's console and to
#   pair-server/peer.log. A waits until B answers ping (<= 120 s), then runs
#   selftests/rdmaxfer/pair/kselftest-list.txt (+ settings) like the main run; results are shown as
#   pair/PROG. When A has finished, the rig writes "stop" to B's ttyS2: B sends SIGTERM to
#   peer.sh's session (SIGKILL 2 s later), dumps its kernel log and powers off (or is
#   killed 30 s later). Failures of the pair run besides A's tests: B not coming up, B
#   stopping before A is done (the rig then stops A), B not powering off, "# rig: error"
#   lines of either guest, and WARNING/BUG/Oops/panic-class lines in B's kernel log (A's
#   kernel log is left to the tests, as in the main run). --timeout applies to each of
#   the single guest and A; B gets 120 s more.
#
# Kernels (RIG_KERNEL)
#   stock  Debian 12's current 6.1 (linux-image-<abi>-amd64-unsigned), the default
#   debug  6.1 from Debian's linux-source-6.1 with KASAN, lockdep, kmemleak, UBSAN and fault
#          injection (tools/vm/debug.config), built once by tools/vm/debug-kernel.sh into
#          $RDMAXFER_CACHE/debug/; RDMA core, virtio and crc32 are built in there. Default
#          RIG_TIMEOUT 3600; the guest runner scans kmemleak after every test file.
#   6.12   the newest 6.12 of bookworm-backports (linux-image-<krel>-unsigned, and its
#          headers, kbuild and common headers to build against, unpacked into
#          $RDMAXFER_CACHE/kernel/<abi>/), fetched through a private apt configuration
#          in $RDMAXFER_CACHE/apt/<suite>/ (the host's sources are not touched; its
#          lists are refreshed by setup when older than a day). Builds with bookworm's gcc.
#   sid    the newest kernel of Debian unstable (7.2 today), fetched the same way (its
#          packages: linux-binary-unsigned-, linux-modules-, linux-base-<krel>, files under
#          usr/lib/modules/<krel>/). Its headers need sid's gcc and glibc: modules for it
#          are built in a sid chroot made by mmdebstrap, $RDMAXFER_CACHE/chroot/<abi>/
#          (~530 MB, 1-2 min once here; with sparse, and kernel-doc from linux-source);
#          `rig.sh krun CMD` runs CMD there. The CLI and selftests are built on the host as
#          for every kernel. The guest gets -cpu max (rxe's CRC is the crc32 library there,
#          which uses PCLMULQDQ: ~1.5x the -cpu qemu64 throughput under TCG).
#
# Environment
#   RIG_KERNEL=stock|debug|6.12|sid   the guest kernel (see above)
#   RIG_PROVIDER=rxe|siw   the RDMA provider the guest's device and the tests use:
#                   Soft-RoCE (rdma_rxe, RoCEv2) or Soft-iWARP (siw, iWARP over TCP);
#                   the device is rxe0 or siw0 (RIG_DEV in the guest). Where Debian's
#                   kernel lacks siw (6.1, 6.12, 7.2) rig/siw.sh builds it from Debian's source
#   RDMAXFER_STAGE  stage dir (default <repo>/build/stage): rdmaxfer.ko, bin/, selftests/, demo.sh
#   RDMAXFER_CACHE  cache dir (default ~/.cache/rdmaxfer)
#   RIG_MEM=3072 (MiB)  RIG_SMP=2  RIG_TIMEOUT=1200 (s, whole boot)  RIG_APPEND (kernel cmdline)
#   RIG_BOOT_LIMIT=300 (s; debug 600) single guest: a kernel that has not reached /init by
#                   then is stuck in its boot: killed and booted again, once (rig/boot.sh)
#   RIG_PAIR_SMP=1 (vCPUs per pair guest)  RIG_PAIR_MTU=9000 (or 1500)  RIG_PAIR_LINK=unix|tcp
#   RIG_VERBOSE=1   show the guest console(s) live (on stderr; pair: "client|", "server|")
#   RIG_PIN_VCPUS=1 single guest, 2 vCPUs: pin each vCPU thread to a host CPU, guest CPU 1
#                   to the faster one (rig/boot.sh pin_vcpus(); `make bench` does); pair-run
#                   (1 vCPU each): the client's vCPU on the faster host CPU, the server's on
#                   the other (pin_pair())
set -euo pipefail

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$RIG_DIR/../.." && pwd)
STAGE=${RDMAXFER_STAGE:-$REPO/build/stage}
CACHE=${RDMAXFER_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rdmaxfer}
VMDIR=$REPO/build/vm
RIG_MEM=${RIG_MEM:-3072}
RIG_SMP=${RIG_SMP:-2}
RIG_KERNEL=${RIG_KERNEL:-stock}
RIG_PROVIDER=${RIG_PROVIDER:-rxe}
if [[ $RIG_KERNEL == debug ]]; then RIG_TIMEOUT=${RIG_TIMEOUT:-3600}; else RIG_TIMEOUT=${RIG_TIMEOUT:-1200}; fi
if [[ $RIG_KERNEL == debug ]]; then RIG_BOOT_LIMIT=${RIG_BOOT_LIMIT:-600}; else RIG_BOOT_LIMIT=${RIG_BOOT_LIMIT:-300}; fi
RIG_APPEND=${RIG_APPEND:-}
RIG_VERBOSE=${RIG_VERBOSE:-0}
RIG_PIN_VCPUS=${RIG_PIN_VCPUS:-0}
RIG_PAIR_SMP=${RIG_PAIR_SMP:-1}
RIG_PAIR_MTU=${RIG_PAIR_MTU:-9000}
RIG_PAIR_LINK=${RIG_PAIR_LINK:-unix}
export PATH=$PATH:/usr/sbin:/sbin   # ip, depmod, modprobe for non-root users
export LC_ALL=C

say() { echo "rig: $*" >&2; }
die() { echo "rig: error: $*" >&2; exit 2; }
# awk: make console text safe for a terminal (CR, and escapes like SeaBIOS's ESC c reset)
AWK_CLEAN='sub(/\r$/, ""); gsub(/\033\[[0-9;?]*[A-Za-z]/, ""); gsub(/\033./, "")'

# The jobs, one file each.
# shellcheck source=tools/vm/rig/host.sh
. "$RIG_DIR/rig/host.sh"
# shellcheck source=tools/vm/rig/kernel.sh
. "$RIG_DIR/rig/kernel.sh"
# shellcheck source=tools/vm/rig/siw.sh
. "$RIG_DIR/rig/siw.sh"
# shellcheck source=tools/vm/rig/initramfs.sh
. "$RIG_DIR/rig/initramfs.sh"
# shellcheck source=tools/vm/rig/boot.sh
. "$RIG_DIR/rig/boot.sh"
# shellcheck source=tools/vm/rig/results.sh
. "$RIG_DIR/rig/results.sh"

# ---------------------------------------------------------------- commands

warn_vermagic() {
    local ko=$STAGE/rdmaxfer.ko vm
    [[ -e $ko ]] || return 0
    vm=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1 || true)
    [[ $vm == "$KREL" ]] || say "warning: $ko is built for '$vm', the guest runs $KREL"
}

# report CMD...: prints the output of CMD (parse_results or parse_server) but its last
# line "N passed, N failed, N skipped", which it adds to SUM (passed failed skipped).
report() {
    local out last p f k
    out=$("$@") || true
    last=${out##*$'\n'}
    [[ $out == *$'\n'* ]] && printf '%s\n' "${out%$'\n'*}"
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} k=${BASH_REMATCH[3]}
    else
        printf '%s\nnot ok - rig: no summary from %s\n' "$last" "$1"
        p=0 f=1 k=0
    fi
    SUM=($((SUM[0] + p)) $((SUM[1] + f)) $((SUM[2] + k)))
}

# check: the single guest's selftests, then the pair run if the stage has one; pair: only
# the pair run. Prints the results of both and, last, the combined summary.
cmd_check() {   # MODE (check | pair)
    local mode=$1 run why pairlist=$STAGE/selftests/rdmaxfer/pair/kselftest-list.txt
    prepare
    [[ -d $STAGE ]] || die "no stage at $STAGE (build it first, e.g. make; or set RDMAXFER_STAGE)"
    [[ $mode == check || -r $pairlist ]] || die "no $pairlist in the stage: no pair tests"
    warn_vermagic
    run=$(new_run_dir)
    SUM=(0 0 0)
    if [[ $mode == check ]]; then
        build_payload "$run" check single
        boot_guest "$run" check
        why=$(unfinished "$run/results.ktap" "$GUEST_RC" "$TIMEOUT")
        report parse_results "$run/results.ktap" "$run/console.log" "$why"
    fi
    if [[ -r $pairlist ]]; then
        pair_boot "$run" check
        report parse_results "$run/pair-client/results.ktap" "$run/pair-client/console.log" \
            "$CLIENT_WHY" pair/ "pair client: "
        report parse_server "$run/pair-server/peer.log" "$run/pair-server/console.log" "$SERVER_WHY"
    fi
    printf '%d passed, %d failed, %d skipped\n' "${SUM[@]}"
    exit $((SUM[1] ? 1 : 0))
}

cmd_pair_shell() {
    local run
    prepare
    if [[ -d $STAGE ]]; then warn_vermagic
    else say "warning: no stage at $STAGE: booting without rdmaxfer"; fi
    [[ -e $STAGE/selftests/rdmaxfer/pair/peer.sh ]] ||
        say "warning: no selftests/rdmaxfer/pair/peer.sh in the stage: the server only idles"
    run=$(new_run_dir)
    pair_boot "$run" shell
    [[ -z $SERVER_WHY ]] || say "$SERVER_WHY"
    say "server: ${run#"$REPO"/}/pair-server/peer.log (peer.sh), console.log"
}

# pair-run: CMD in the client guest of a pair (pair_boot's run mode); exits with its status
cmd_pair_run() {   # CMD...
    local run rc
    prepare
    [[ -d $STAGE ]] || die "no stage at $STAGE (build it first, e.g. make; or set RDMAXFER_STAGE)"
    warn_vermagic
    run=$(new_run_dir)
    pair_boot "$run" run "$@"
    [[ -z $SERVER_WHY ]] || say "$SERVER_WHY (server's console: ${run#"$REPO"/}/pair-server/console.log)"
    if [[ -n $CLIENT_WHY ]]; then
        say "$CLIENT_WHY; last 40 lines of the client's console:"
        tail -n 40 "$run/pair-client/console.log" | awk "{ $AWK_CLEAN; print }" >&2
        ((CLIENT_RC == 124)) && exit 124
        exit 1
    fi
    rc=$(sed -n 's/^# rig: exit \([0-9]*\).*/\1/p' "$run/pair-client/results.ktap" | tail -n1)
    exit "${rc:-1}"
}

cmd_boot() {   # MODE [args]   (demo, run, shell)
    local mode=$1 run why
    shift
    prepare
    if [[ -d $STAGE ]]; then warn_vermagic
    else say "warning: no stage at $STAGE: booting without rdmaxfer"; fi
    run=$(new_run_dir)
    build_payload "$run" "$mode" single "$@"
    boot_guest "$run" "$mode"
    why=$(unfinished "$run/results.ktap" "$GUEST_RC" "$TIMEOUT")
    case $mode in
    shell) ;;
    *)
        if [[ -n $why ]]; then
            say "$why; last 40 lines of the console:"
            tail -n 40 "$run/console.log" | awk "{ $AWK_CLEAN; print }" >&2
            ((GUEST_RC == 124)) && exit 124
            exit 1
        fi
        local rc
        rc=$(sed -n 's/^# rig: exit \([0-9]*\).*/\1/p' "$run/results.ktap" | tail -n1)
        exit "${rc:-1}" ;;
    esac
}

usage() {
    local out=1
    (("${1:-0}")) && out=2
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&"$out"
    exit "${1:-0}"
}

for v in RIG_MEM RIG_SMP RIG_TIMEOUT RIG_BOOT_LIMIT RIG_PAIR_SMP RIG_PAIR_MTU RIG_PIN_VCPUS; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number"; done
[[ $RIG_PAIR_LINK == unix || $RIG_PAIR_LINK == tcp ]] || die "RIG_PAIR_LINK must be unix or tcp"
[[ $RIG_PROVIDER == rxe || $RIG_PROVIDER == siw ]] || die "RIG_PROVIDER must be rxe or siw"
[[ $RIG_KERNEL == stock || $RIG_KERNEL == debug || -n ${SUITE_OF[$RIG_KERNEL]:-} ]] ||
    die "RIG_KERNEL must be stock, debug, 6.12 or sid"
TIMEOUT=$RIG_TIMEOUT
cmd=${1:-}
[[ -n $cmd ]] || usage 2
shift
case $cmd in
setup) cmd_setup ;;
abi)   resolve_abi || die "cannot resolve the kernel ABI: run $0 setup"; echo "$KREL" ;;
krun)
    (($#)) || die "usage: $0 krun CMD..."
    resolve_abi || die "cannot resolve the kernel ABI: run $0 setup"
    cmd_krun "$@" ;;
kdir)
    resolve_abi || die "cannot resolve the kernel ABI: run $0 setup"
    if [[ $RIG_KERNEL == debug ]]; then echo "$DEBUG_DIR/src"; exit 0; fi
    if in_chroot; then
        echo "/usr/src/linux-headers-$KREL"   # a path in the build chroot (rig.sh krun)
        [[ -e $(chroot_dir)/.complete ]] || die "no $RIG_KERNEL build chroot: run (as root) $0 setup"
        exit 0
    fi
    if other_suite; then
        echo "$(kernel_dir)/usr/src/linux-headers-$KREL"
        [[ -e $(kernel_dir)/.complete ]] || die "the $RIG_KERNEL kernel is not fetched: run $0 setup"
        exit 0
    fi
    echo "/usr/src/linux-headers-$KREL"
    [[ -d /usr/src/linux-headers-$KREL ]] || die "headers for $KREL not installed: run (as root) $0 setup" ;;
check | pair | pair-shell | pair-run | demo | run | shell)
    while (($#)); do
        case $1 in
        --timeout) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--timeout needs seconds"; TIMEOUT=$2; shift 2 ;;
        --) shift; break ;;
        -h | --help) usage ;;
        *) [[ $cmd == run || $cmd == pair-run ]] && break; die "unknown argument: $1" ;;
        esac
    done
    [[ ($cmd != run && $cmd != pair-run) || $# -gt 0 ]] || die "usage: $0 $cmd [--] CMD..."
    case $cmd in
    check | pair) cmd_check "$cmd" ;;
    pair-shell)   cmd_pair_shell ;;
    pair-run)     cmd_pair_run "$@" ;;
    *)            cmd_boot "$cmd" "$@" ;;
    esac ;;
-h | --help | help) usage ;;
*) usage 2 ;;
esac
