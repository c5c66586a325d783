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
#                             selftests/pair/) the pair run; last line "N passed, N failed,
#                             N skipped" over both; exit 0 iff both finished and none failed
#   rig.sh pair [--timeout S]   only the pair run (two guests), same output
#   rig.sh pair-shell         pair run with an interactive console on the client instead
#                             of its tests (the server runs peer.sh as usual)
#   rig.sh demo               run the stage's demo.sh (or guest/demo.sh)
#   rig.sh run [--] CMD...    run CMD in the guest (bash), print output, exit with its status
#                             (one argument = a shell command line; several = an argv)
#   rig.sh shell              interactive guest console (Ctrl-A x kills QEMU)
#
# Layout
#   tools/vm/rig.sh              this script (host side)
#   tools/vm/guest/init          guest PID 1: mounts, modules, network + rxe0, insmod, mode
#   tools/vm/guest/runtests.sh   guest: kselftest-list.txt -> KTAP (check mode)
#   tools/vm/guest/demo.sh       default demo
#   tools/vm/guest/bench.sh      make bench: rdmaxfer vs perftest, alternating, ratio table
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
# Single guest: Debian's kernel, TCG, -cpu qemu64, no NIC. rxe0 (Soft-RoCE) on veth0
# 192.0.2.1/24 2001:db8::1/64, peer veth1 192.0.2.2/24 2001:db8::2/64 (mtu 9000), rdmaxfer.ko
# loaded, /opt/rdmaxfer/bin on PATH, /bin/sh = dash, bash, busybox, iproute2, kmod, perftest, jq.
# ttyS0 = console (build/vm/last/console.log), ttyS1 = results (results.ktap).
# RIG_ROLE=single and RIG_SELF_ADDR(6) are exported (also in /etc/rig.conf).
#
# Two guests (pair run; only when $RDMAXFER_STAGE/selftests/pair/kselftest-list.txt exists)
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
#   B runs selftests/pair/peer.sh (from that dir, stdin /dev/null, in its own session) in
#   the background as soon as its setup is done; its output goes to B's console and to
#   pair-server/peer.log. A waits until B answers ping (<= 120 s), then runs
#   selftests/pair/kselftest-list.txt (+ settings) like the main run; results are shown as
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
#   RDMAXFER_STAGE  stage dir (default <repo>/build/stage): rdmaxfer.ko, bin/, selftests/, demo.sh
#   RDMAXFER_CACHE  cache dir (default ~/.cache/rdmaxfer)
#   RIG_MEM=3072 (MiB)  RIG_SMP=2  RIG_TIMEOUT=1200 (s, whole boot)  RIG_APPEND (kernel cmdline)
#   RIG_PAIR_SMP=1 (vCPUs per pair guest)  RIG_PAIR_MTU=9000 (or 1500)  RIG_PAIR_LINK=unix|tcp
#   RIG_VERBOSE=1   show the guest console(s) live (on stderr; pair: "client|", "server|")
set -euo pipefail

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$RIG_DIR/../.." && pwd)
STAGE=${RDMAXFER_STAGE:-$REPO/build/stage}
CACHE=${RDMAXFER_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rdmaxfer}
VMDIR=$REPO/build/vm
RIG_MEM=${RIG_MEM:-3072}
RIG_SMP=${RIG_SMP:-2}
RIG_KERNEL=${RIG_KERNEL:-stock}
if [[ $RIG_KERNEL == debug ]]; then RIG_TIMEOUT=${RIG_TIMEOUT:-3600}; else RIG_TIMEOUT=${RIG_TIMEOUT:-1200}; fi
RIG_APPEND=${RIG_APPEND:-}
RIG_VERBOSE=${RIG_VERBOSE:-0}
RIG_PAIR_SMP=${RIG_PAIR_SMP:-1}
RIG_PAIR_MTU=${RIG_PAIR_MTU:-9000}
RIG_PAIR_LINK=${RIG_PAIR_LINK:-unix}
export PATH=$PATH:/usr/sbin:/sbin   # ip, depmod, modprobe for non-root users
export LC_ALL=C

# Packages needed to boot guests / to build and check the module on the host.
RUNTIME_PKGS=(qemu-system-x86 busybox-static cpio kmod iproute2 rdma-core ibverbs-utils
              rdmacm-utils perftest jq xz-utils)
DEV_PKGS=(bc sparse shellcheck gcc-multilib linux-source-6.1 librdmacm-dev libibverbs-dev
          linux-perf gnuplot-nox dwarves)   # + linux-headers-<abi>-amd64 (stock)
# Kernel modules (with their dependencies) put into the initramfs; the optional ones where
# the kernel has them (crc32_generic: rxe's ICRC before 6.15, the crc32 library after).
GUEST_MODULES=(rdma_rxe rdma_cm rdma_ucm ib_uverbs ib_umad veth dummy loop ext4
               virtio_net virtio_pci configfs)
GUEST_MODULES_OPTIONAL=(crc32_generic)
# Host programs copied into the initramfs (with their shared libraries).
GUEST_BINS=(bash dash timeout ip rdma kmod jq ibv_devices ibv_devinfo
            ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat
            ib_atomic_bw ib_atomic_lat)
GUEST_BINS_OPTIONAL=(rping udaddy ucmatose rdma_server rdma_client ibv_rc_pingpong
                     ibv_ud_pingpong ibv_srq_pingpong strace perf)
KMOD_LINKS=(modprobe insmod rmmod lsmod modinfo depmod)

say() { echo "rig: $*" >&2; }
die() { echo "rig: error: $*" >&2; exit 2; }
# awk: make console text safe for a terminal (CR, and escapes like SeaBIOS's ESC c reset)
AWK_CLEAN='sub(/\r$/, ""); gsub(/\033\[[0-9;?]*[A-Za-z]/, ""); gsub(/\033./, "")'

# ---------------------------------------------------------------- kernel ABI

# 6.1.0-NN from apt (what linux-image-amd64 depends on), else newest installed headers.
abi_from_apt() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *|\{0,1\}Depends: linux-image-\([0-9][0-9.]*-[0-9][0-9]*\)-amd64$/\1/p' |
        head -n1 || true
}
abi_from_headers() {
    local d
    d=$(printf '%s\n' /usr/src/linux-headers-*-amd64 | grep -v '\*' | sort -V | tail -n1 || true)
    d=${d#/usr/src/linux-headers-}
    echo "${d%-amd64}"
}
# apt-cache is slow where apt keeps no pkgcache.bin (0.7 s here): remember its answer
# until apt's index files change (apt-get update).
abi_from_apt_cached() {
    local f=$CACHE/abi key
    key=$(stat -c '%n %Y %s' /var/lib/apt/lists/*Packages* 2>/dev/null | cksum)
    if [[ -r $f && $(head -n1 "$f") == "$key" ]]; then sed -n 2p "$f"; return; fi
    local a
    a=$(abi_from_apt)
    [[ -n $a ]] && { mkdir -p "$CACHE" && printf '%s\n%s\n' "$key" "$a" >"$f"; } 2>/dev/null
    echo "$a"
}
# ---------------------------------------------------------------- kernels of other suites

# RIG_KERNEL -> the Debian suite its kernel comes from, and the version its ABI starts with
declare -A SUITE_OF=([6.12]=bookworm-backports [sid]=sid)
declare -A ABI_PREFIX=([6.12]=6.12. [sid]="")
other_suite() { [[ -n ${SUITE_OF[$RIG_KERNEL]:-} ]]; }
# Kernels whose headers the host's toolchain cannot use (sid's need its gcc and glibc):
# modules for them are built in a chroot of their suite.
in_chroot() { [[ $RIG_KERNEL == sid ]]; }
# The host's Debian mirror (deb822 or one-line sources), for the private sources list.
host_mirror() {
    local u
    u=$(sed -n 's/^URIs: *\([^ ]*\/debian\)\/\{0,1\} *$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
    [[ -n $u ]] || u=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\/debian\)\/\{0,1\} .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n1 || true)
    echo "${u:-http://deb.debian.org/debian}"
}
# apt-get/apt-cache options that use only the private configuration of the suite.
suite_opts() {
    local a=$CACHE/apt/${SUITE_OF[$RIG_KERNEL]}
    SUITE_OPT=(-o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=-
               -o "Dir::State::lists=$a/lists" -o "Dir::Cache=$a/cache")
    ((EUID == 0)) && SUITE_OPT+=(-o APT::Sandbox::User=root)
    return 0
}
suite_update() {   # refresh the suite's private lists when missing or older than a day
    local a=$CACHE/apt/${SUITE_OF[$RIG_KERNEL]}
    suite_opts
    if [[ -z $(find "$a/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null) ]]; then
        mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(host_mirror) ${SUITE_OF[$RIG_KERNEL]} main" \
            >"$a/sources.list"
        say "apt-get update (${SUITE_OF[$RIG_KERNEL]}, private lists in $a)"
        apt-get "${SUITE_OPT[@]}" update -qq >&2 || die "apt-get update of ${SUITE_OF[$RIG_KERNEL]} failed"
    fi
}
suite_abi() {   # the newest ABI (6.12.N+debNN, 7.2.N+debNN) that linux-image-amd64 depends on
    local pre=${ABI_PREFIX[$RIG_KERNEL]}
    suite_opts
    apt-cache "${SUITE_OPT[@]}" show linux-image-amd64 2>/dev/null |
        sed -n 's/^Depends:.* linux-image-\([0-9][^ ]*\)-amd64 (.*/\1/p' |
        awk -v pre="$pre" 'index($0, pre) == 1' | sort -V | tail -n1 || true
}

resolve_abi() {   # sets ABI (6.1.0-NN) and KREL (6.1.0-NN-amd64); debug: DEBUG_DIR too
    if other_suite; then
        ABI=$(suite_abi)
        [[ -n $ABI ]] || return 1
        KREL=$ABI-amd64
        return 0
    fi
    if [[ $RIG_KERNEL == debug ]]; then
        DEBUG_DIR=$("$RIG_DIR/debug-kernel.sh" dir 2>/dev/null) || return 1
        KREL=$(cat "$DEBUG_DIR/krel") ABI=$KREL
        return 0
    fi
    ABI=$(abi_from_apt_cached)
    [[ -n $ABI ]] || ABI=$(abi_from_headers)
    [[ -n $ABI ]] || return 1
    KREL=$ABI-amd64
}

# ---------------------------------------------------------------- setup

APT_UPDATED=0
apt_update_once() {
    ((APT_UPDATED)) && return 0
    say "apt-get update"
    apt-get update -qq >&2
    APT_UPDATED=1
}

missing_pkgs() {   # print the packages of "$@" that are not installed
    local installed
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null |
                awk '$2 == "installed" { print $1 }' || true)
    local p
    for p in "$@"; do grep -qxF "$p" <<<"$installed" || echo "$p"; done
}

ensure_pkgs() {
    local missing
    mapfile -t missing < <(missing_pkgs "$@")
    ((${#missing[@]})) || return 0
    if ((EUID != 0)); then
        die "missing packages: ${missing[*]}
  run as root:  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}
  (or: sudo $0 setup)"
    fi
    apt_update_once
    say "installing: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Resolve the ABI for setup: refresh apt's lists once if apt cannot tell.
setup_abi() {
    if other_suite; then
        suite_update
        ABI=$(suite_abi)
        [[ -n $ABI ]] || die "no $RIG_KERNEL kernel in ${SUITE_OF[$RIG_KERNEL]}"
        KREL=$ABI-amd64
        return 0
    fi
    if [[ $RIG_KERNEL == debug ]]; then
        DEBUG_DIR=$("$RIG_DIR/debug-kernel.sh" build) || die "the debug kernel did not build"
        KREL=$(cat "$DEBUG_DIR/krel") ABI=$KREL
        return 0
    fi
    ABI=$(abi_from_apt_cached)
    if [[ -z $ABI ]] && ((EUID == 0)); then apt_update_once; ABI=$(abi_from_apt_cached); fi
    [[ -n $ABI ]] || ABI=$(abi_from_headers)
    [[ -n $ABI ]] || die "cannot resolve the kernel ABI (apt-cache depends linux-image-amd64); run: apt-get update"
    KREL=$ABI-amd64
}

# Guest kernel: linux-image-<abi>-amd64-unsigned unpacked into $CACHE/kernel/<abi>.
kernel_dir() { if [[ $RIG_KERNEL == debug ]]; then echo "$DEBUG_DIR"; else echo "$CACHE/kernel/$ABI"; fi; }
fetch_kernel() {
    local dir pkg=linux-image-$KREL-unsigned
    [[ $RIG_KERNEL == debug ]] && return 0   # built by setup_abi
    dir=$(kernel_dir)
    [[ -e $dir/.complete ]] && return 0
    if other_suite; then fetch_suite_kernel "$dir"; return; fi
    mkdir -p "$dir"
    if ! compgen -G "$dir/${pkg}_*.deb" >/dev/null; then
        say "downloading $pkg"
        local opt=()
        ((EUID == 0)) && opt=(-o APT::Sandbox::User=root)   # root: no _apt sandbox warning
        if ! (cd "$dir" && apt-get download -qq "${opt[@]}" "$pkg" >&2); then
            ((EUID == 0)) || die "cannot download $pkg (run as root: $0 setup)"
            apt_update_once
            (cd "$dir" && apt-get download -qq "${opt[@]}" "$pkg" >&2) || die "cannot download $pkg"
        fi
    fi
    say "unpacking $pkg"
    dpkg -x "$dir"/"${pkg}"_*.deb "$dir"
    depmod -b "$dir" "$KREL"
    [[ -e $dir/boot/vmlinuz-$KREL ]] || die "$pkg has no boot/vmlinuz-$KREL"
    touch "$dir/.complete"
}

# The kernel of another suite, and what building modules for it needs: its headers, the
# common headers and kbuild, unpacked next to it (usr/src, usr/lib). The headers' Makefile
# names /usr/src/...-common: pointed into the unpacked tree (their symlinks to kbuild are
# relative already). A kernel built in a chroot (sid) has its headers there instead.
# Newer suites split the image: linux-binary-unsigned- (usr/lib/modules/<krel>/
# vmlinuz.unsigned), linux-modules- and linux-base-<krel>, all under usr/lib/modules; the
# tree is then given the old layout's names (boot/vmlinuz-<krel>, lib/modules) as links.
fetch_suite_kernel() {
    local dir=$1 p h pkgs
    suite_opts
    if apt-cache "${SUITE_OPT[@]}" show "linux-image-$KREL-unsigned" >/dev/null 2>&1; then
        pkgs=("linux-image-$KREL-unsigned")
    else
        pkgs=("linux-binary-unsigned-$KREL" "linux-modules-$KREL" "linux-base-$KREL")
    fi
    in_chroot || pkgs+=("linux-headers-$KREL" "linux-headers-$ABI-common" "linux-kbuild-$ABI")
    say "downloading ${pkgs[*]} (${SUITE_OF[$RIG_KERNEL]})"
    mkdir -p "$dir"
    (cd "$dir" && apt-get "${SUITE_OPT[@]}" download -qq "${pkgs[@]}" >&2) ||
        die "cannot download the $RIG_KERNEL kernel (run: $0 setup)"
    for p in "${pkgs[@]}"; do
        say "unpacking $p"
        dpkg -x "$dir/${p}"_*.deb "$dir" || die "cannot unpack $p"
        rm -f "$dir/${p}"_*.deb
    done
    if [[ ! -e $dir/lib/modules && -d $dir/usr/lib/modules ]]; then
        ln -s usr/lib "$dir/lib"
        mkdir -p "$dir/boot"
        ln -sf "../usr/lib/modules/$KREL/vmlinuz.unsigned" "$dir/boot/vmlinuz-$KREL"
    fi
    if ! in_chroot; then
        h=$dir/usr/src/linux-headers-$KREL
        sed -i "s|/usr/src/|$dir/usr/src/|g" "$h/Makefile" || die "no Makefile in $h"
        [[ -e $h/scripts/Makefile.build ]] || die "the $RIG_KERNEL headers lack the kbuild scripts"
    fi
    depmod -b "$dir" "$KREL"
    [[ -e $dir/boot/vmlinuz-$KREL ]] || die "the $RIG_KERNEL packages lack its kernel image"
    touch "$dir/.complete"
}

# ---------------------------------------------------------------- build chroot (sid)

chroot_dir() { echo "$CACHE/chroot/$ABI"; }
# The suite's gcc, make, sparse, python3 and linux-headers-<krel>, by mmdebstrap (77 s
# here, ~530 MB). Its kbuild package lacks two scripts that lint needs: checker-valid.sh (without
# it, C=2 skips sparse with only a make warning) and kernel-doc. Both come from the suite's
# linux-source (a 160 MB download), unpacked to /opt/linux-source (-> linux-source-<ver>)
# in the chroot with checkpatch.pl and what these scripts use, and linked into the kbuild
# scripts.
# Older chroots are removed (--one-file-system: never through a mount; krun mounts in a
# private namespace anyway).
fetch_chroot() {
    local dir old tmp ver kscripts
    in_chroot || return 0
    dir=$(chroot_dir)
    [[ -e $dir/.complete ]] && return 0
    ((EUID == 0)) || die "the $RIG_KERNEL build chroot is made by root: run (as root) $0 setup"
    ensure_pkgs mmdebstrap
    rm -rf --one-file-system "$dir"
    mkdir -p "$dir"
    say "making the $RIG_KERNEL build chroot in $dir (mmdebstrap)"
    mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="gcc,make,sparse,python3,linux-headers-$KREL" \
        "${SUITE_OF[$RIG_KERNEL]}" "$dir/root" "$(host_mirror)" >&2 ||
        die "mmdebstrap of ${SUITE_OF[$RIG_KERNEL]} failed"
    ver=${ABI%%[-+]*} ver=${ver%.*}   # 7.2.13+deb14 -> 7.2
    suite_opts
    tmp=$(mktemp -d "$dir/src.XXXXXX")
    say "taking kernel-doc, checker-valid.sh and checkpatch.pl from linux-source-$ver"
    (cd "$tmp" && apt-get "${SUITE_OPT[@]}" download -qq "linux-source-$ver" >&2) ||
        die "cannot download linux-source-$ver"
    mkdir -p "$dir/root/opt/linux-source-$ver"
    dpkg-deb --fsys-tarfile "$tmp"/linux-source-"$ver"_*.deb |
        tar -xOf - "./usr/src/linux-source-$ver.tar.xz" |
        tar -xJf - -C "$dir/root/opt/linux-source-$ver" --strip-components=1 \
            "linux-source-$ver/scripts/kernel-doc" "linux-source-$ver/scripts/checker-valid.sh" \
            "linux-source-$ver/scripts/checkpatch.pl" "linux-source-$ver/scripts/spelling.txt" \
            "linux-source-$ver/scripts/const_structs.checkpatch" \
            "linux-source-$ver/tools/docs/kernel-doc" "linux-source-$ver/tools/lib/python" ||
        die "linux-source-$ver lacks the scripts lint uses"
    rm -rf "$tmp"
    ln -sfn "linux-source-$ver" "$dir/root/opt/linux-source"
    kscripts=$dir/root/usr/lib/linux-kbuild-$ABI/scripts
    [[ -d $kscripts ]] || die "no $kscripts in the chroot"
    [[ -e $kscripts/checker-valid.sh ]] ||
        cp "$dir/root/opt/linux-source-$ver/scripts/checker-valid.sh" "$kscripts/"
    [[ -e $kscripts/kernel-doc ]] ||
        ln -s "/opt/linux-source-$ver/scripts/kernel-doc" "$kscripts/kernel-doc"
    touch "$dir/.complete"
    for old in "$CACHE"/chroot/*; do
        [[ $old == "$dir" ]] || rm -rf --one-file-system "$old"
    done
}

# krun CMD...: CMD in the build chroot, in a private mount namespace where the repo is
# bind-mounted at its own path, with the host's /dev, a /proc, and the working directory
# as here (it must be in the repo). Kernels without a chroot: CMD as it is.
cmd_krun() {
    local root
    in_chroot || exec "$@"
    root=$(chroot_dir)/root
    [[ -e $(chroot_dir)/.complete ]] || die "no $RIG_KERNEL build chroot: run (as root) $0 setup"
    ((EUID == 0)) || die "building for $RIG_KERNEL needs root (a chroot)"
    # shellcheck disable=SC2016  # expanded by the inner shell
    exec unshare --mount --propagation private -- sh -ec '
        root=$1 repo=$2 cwd=$3
        shift 3
        mount --rbind /dev "$root/dev"
        mount -t proc proc "$root/proc"
        mkdir -p "$root$repo"
        mount --bind "$repo" "$root$repo"
        exec chroot "$root" sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"' \
        krun "$root" "$REPO" "$PWD" "$@"
}

# The bzImage's boot stub takes ~2.5 s to unpack the kernel under TCG. Debian kernels have
# a PVH entry, so QEMU can boot the uncompressed vmlinux directly: extract it once (xz).
extract_vmlinux() {
    local dir z out off
    [[ $RIG_KERNEL == debug ]] && return 0   # the build keeps an uncompressed vmlinux
    dir=$(kernel_dir)
    z=$dir/boot/vmlinuz-$KREL out=$dir/boot/vmlinux-$KREL
    [[ -e $out || -e $dir/.no-vmlinux ]] && return 0
    off=$(grep -obUaP '\xfd7zXZ\x00' "$z" | head -n1 | cut -d: -f1 || true)
    # (xz stops after the stream: feed it without a pipe, whose writer would die of SIGPIPE)
    if [[ -n $off ]] && xz -dcq --single-stream < <(tail -c +$((off + 1)) "$z") >"$out.tmp" 2>/dev/null &&
        grep -qaP '\x04\x00\x00\x00[\x04\x08]\x00\x00\x00\x12\x00\x00\x00Xen\x00' "$out.tmp"; then
        mv "$out.tmp" "$out"   # has the XEN_ELFNOTE_PHYS32_ENTRY note
    else
        rm -f "$out.tmp"; touch "$dir/.no-vmlinux"
    fi
}
guest_kernel() {
    local b
    b=$(kernel_dir)/boot
    if [[ $RIG_KERNEL == debug ]]; then echo "$b/vmlinuz"; return; fi
    if [[ -e $b/vmlinux-$KREL ]]; then echo "$b/vmlinux-$KREL"; else echo "$b/vmlinuz-$KREL"; fi
}

lock_cache() { mkdir -p "$CACHE"; exec 9>"$CACHE/.lock"; flock 9; }

cmd_setup() {
    lock_cache
    setup_abi
    if [[ $RIG_KERNEL == debug ]] || other_suite; then
        ensure_pkgs "${RUNTIME_PKGS[@]}" "${DEV_PKGS[@]}"
    else
        ensure_pkgs "${RUNTIME_PKGS[@]}" "${DEV_PKGS[@]}" "linux-headers-$KREL"
    fi
    fetch_kernel
    fetch_chroot
    extract_vmlinux
    build_base
}

# What booting needs: runtime packages, the cached kernel and the base initramfs.
prepare() {
    lock_cache
    ensure_pkgs "${RUNTIME_PKGS[@]}"
    resolve_abi || setup_abi
    fetch_kernel
    extract_vmlinux
    build_base
    exec 9>&-
}

# ---------------------------------------------------------------- base initramfs

# Canonical path (directories resolved, so /lib/x -> /usr/lib/x on usrmerged hosts).
declare -A CANON_DIR=()
canon() {
    local d=${1%/*}
    [[ -n ${CANON_DIR[$d]:-} ]] || CANON_DIR[$d]=$(readlink -f "$d")
    echo "${CANON_DIR[$d]}/${1##*/}"
}

# Shared libraries of an ELF file (ldd closure incl. the dynamic loader), one per line.
ldd_libs() {
    ldd "$1" 2>/dev/null | awk -v f="$1" '
        $2 == "=>" && $3 ~ /^\// { print $3; next }
        $2 == "=>" && $3 == "not" { print "rig: warning: " f ": " $1 " not found" > "/dev/stderr"; next }
        $1 ~ /^\// { print $1 }' || true
}

# "DEST SRC" for an ELF file and its libraries.
elf_manifest() {
    local lib
    echo "$(canon "$1") $1"
    for lib in $(ldd_libs "$1"); do echo "$(canon "$lib") $lib"; done
}

# The module files of GUEST_MODULES and their dependencies, in MODFILES (sorted, unique).
# A module built into the kernel ("builtin NAME" from modprobe) needs no file.
guest_module_files() {
    local kdir m deps
    kdir=$(kernel_dir)
    MODFILES=()
    for m in "${GUEST_MODULES[@]}" "${GUEST_MODULES_OPTIONAL[@]}"; do
        if ! deps=$(modprobe -d "$kdir" -S "$KREL" --show-depends "$m" 2>&1); then
            [[ " ${GUEST_MODULES_OPTIONAL[*]} " == *" $m "* ]] || die "module $m not found in $kdir: $deps"
            continue
        fi
        mapfile -t -O "${#MODFILES[@]}" MODFILES < <(awk '$1 == "insmod" { print $2 }' <<<"$deps")
    done
    mapfile -t MODFILES < <(printf '%s\n' "${MODFILES[@]}" | sort -u)
}

# Every file of the base initramfs as "DEST SRC" (sorted, unique).
base_manifest() {
    local kdir b p m rel
    kdir=$(kernel_dir)
    guest_module_files
    {
        for b in "${GUEST_BINS[@]}"; do
            p=$(command -v "$b") || die "$b not found on the host (run: $0 setup)"
            elf_manifest "$p"
        done
        for b in "${GUEST_BINS_OPTIONAL[@]}"; do
            if p=$(command -v "$b"); then elf_manifest "$p"; fi
        done
        for p in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so \
                 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
            [[ -e $p ]] || die "$p missing (run: $0 setup)"
            elf_manifest "$p"
        done
        echo "/etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver"
        for p in /lib/terminfo/{d/dumb,l/linux,v/vt100,v/vt220,x/xterm,x/xterm-256color,s/screen}; do
            [[ -e $p ]] && echo "$(canon "$p") $p"
        done
        # Modules: the dependency closure, as modprobe computes it on the cached tree.
        # Copied as they are (.ko here; .ko.xz/.ko.zst work too, depmod and kmod read them).
        printf '%s\n' "${MODFILES[@]}" | while read -r p; do
            rel=${p#"$kdir"/lib/modules/"$KREL"/}
            echo "/usr/lib/modules/$KREL/$rel $p"
        done
        for m in modules.order modules.builtin modules.builtin.modinfo; do
            echo "/usr/lib/modules/$KREL/$m $kdir/lib/modules/$KREL/$m"
        done
    } | sort -u
}

# A newc cpio entry (no data); used for /dev/console, which the kernel opens for /init's
# stdio before /init runs; a real node would need root to create (mknod).
newc_entry() {   # NAME MODE RDEVMAJOR RDEVMINOR
    local ns=$((${#1} + 1))
    printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
        0 "$2" 0 0 1 0 0 0 0 "$3" "$4" "$ns" 0
    printf '%s\0' "$1"
    head -c $(((4 - (110 + ns) % 4) % 4)) /dev/zero
}

# (Re)build $CACHE/initramfs/<krel>/base.cpio.gz if its inputs changed. The key covers the
# file list, each source's size and mtime, the kernel release and this build code itself.
build_base() {
    local dir manifest key root dest src b n t0
    dir=$CACHE/initramfs/$KREL
    BASE=$dir/base.cpio.gz
    mkdir -p "$dir"
    manifest=$(base_manifest)
    key=$( {
        echo "$KREL"
        declare -f base_manifest guest_module_files build_base newc_entry elf_manifest ldd_libs canon
        echo "$manifest"
        awk '{ print $2 }' <<<"$manifest" | xargs stat -L -c '%n %s %Y'
        stat -L -c '%n %s %Y' /usr/bin/busybox
    } | sha256sum | cut -c1-64)
    if [[ -e $BASE && $(cat "$dir/base.key" 2>/dev/null) == "$key" ]]; then return 0; fi

    t0=$(date +%s.%N)
    say "building base initramfs for $KREL"
    root=$(mktemp -d "$dir/root.XXXXXX")
    # usrmerged skeleton, like the host
    mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{dev,proc,sys,tmp,run,root,etc,opt,mnt,var/tmp}
    for n in bin sbin lib lib64; do ln -s "usr/$n" "$root/$n"; done
    ln -s /run "$root/var/run"
    # busybox with all applets ...
    cp /usr/bin/busybox "$root/usr/bin/busybox"
    for n in $(busybox --list-full); do
        [[ -e $root/$n || -L $root/$n ]] || ln -s /usr/bin/busybox "$root/$n"
    done
    # ... then host files, which replace applets of the same name
    while read -r dest src; do
        case $dest in
        /usr/bin/* | /usr/sbin/*) rm -f "$root/usr/bin/${dest##*/}" "$root/usr/sbin/${dest##*/}" ;;
        esac
        mkdir -p "$root${dest%/*}"
        cp -L "$src" "$root$dest"
    done <<<"$manifest"
    for n in "${KMOD_LINKS[@]}"; do
        rm -f "$root/usr/bin/$n" "$root/usr/sbin/$n"
        ln -s ../bin/kmod "$root/usr/sbin/$n"
    done
    rm -f "$root/usr/bin/sh"
    ln -s dash "$root/usr/bin/sh"   # /bin/sh is dash as on Debian (busybox sh runs its own ip)
    printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
    printf '127.0.0.1 localhost\n::1 localhost\n192.0.2.1 veth0\n192.0.2.2 veth1\n' >"$root/etc/hosts"
    depmod -b "$root" "$KREL"
    (
        cd "$root"
        find . -mindepth 1 -printf '%P\n' | sort | cpio -o -H newc -R 0:0 --quiet
        newc_entry dev/console $((8#20600)) 5 1
        newc_entry 'TRAILER!!!' 0 0 0
    ) | gzip -6 >"$BASE.tmp"
    mv "$BASE.tmp" "$BASE"
    awk '{ print $1 }' <<<"$manifest" >"$dir/base.files"
    echo "$key" >"$dir/base.key"
    rm -rf "$root"
    say "base initramfs: $(du -h "$BASE" | cut -f1) in $(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.1f') s"
}

# ---------------------------------------------------------------- per-run payload

is_elf64() { [[ $(head -c5 "$1" | od -An -tx1 | tr -d ' \n') == 7f454c4602 ]]; }

# Payload: guest scripts, the stage at /opt/rdmaxfer (+ libraries its ELF files need that
# the base lacks; static and 32-bit ELF files are left alone), /etc/rig.conf.
# Usage: build_payload DIR MODE ROLE [CMD...]   (ROLE: single, client or server)
build_payload() {
    local run=$1 mode=$2 role=$3 root f lib dest
    shift 3
    root=$run/payload
    mkdir -p "$root/etc" "$root/usr/lib/rig" "$root/opt"
    install -m 755 "$RIG_DIR/guest/init" "$root/init"
    install -m 755 "$RIG_DIR/guest/runtests.sh" "$RIG_DIR/guest/demo.sh" "$root/usr/lib/rig/"
    # bench.sh (make bench) and lab-*.sh (make labs), when present
    for f in "$RIG_DIR"/guest/bench.sh "$RIG_DIR"/guest/lab-*.sh; do
        if [[ -e $f ]]; then install -m 755 "$f" "$root/usr/lib/rig/"; fi
    done
    if [[ -d $STAGE ]]; then
        cp -a "$STAGE/." "$root/opt/rdmaxfer/"
        while IFS= read -r -d '' f; do
            is_elf64 "$f" || continue
            for lib in $(ldd_libs "$f"); do
                dest=$(canon "$lib")
                grep -qxF "$dest" "$CACHE/initramfs/$KREL/base.files" && continue
                [[ -e $root$dest ]] && continue
                mkdir -p "$root${dest%/*}"
                cp -L "$lib" "$root$dest"
            done
        done < <(find "$root/opt/rdmaxfer/bin" "$root/opt/rdmaxfer/selftests" -type f -print0 2>/dev/null)
    fi
    local term=${TERM:-vt100} rows=0 cols=0
    [[ $term =~ ^[A-Za-z0-9._+-]+$ ]] || term=vt100
    if [[ $mode == shell && -t 0 ]]; then read -r rows cols < <(stty size 2>/dev/null || echo 0 0); fi
    {
        echo "RIG_MODE=$mode"
        echo "RIG_KREL=$KREL"
        echo "RIG_KERNEL=$RIG_KERNEL"
        echo "RIG_ROLE=$role"
        case $role in
        single)
            echo "RIG_NET=veth"
            echo "RIG_TESTS=/opt/rdmaxfer/selftests"
            echo "RIG_SELF_ADDR=192.0.2.1"
            echo "RIG_SELF_ADDR6=2001:db8::1"
            echo "RIG_PEER_ADDR="
            echo "RIG_PEER_ADDR6=" ;;
        client | server)
            local self=11 peer=12
            [[ $role == server ]] && self=12 peer=11
            echo "RIG_NET=pair"
            echo "RIG_MTU=$RIG_PAIR_MTU"
            echo "RIG_TESTS=/opt/rdmaxfer/selftests/pair"
            echo "RIG_SELF_ADDR=192.0.2.$self"
            echo "RIG_PEER_ADDR=192.0.2.$peer"
            echo "RIG_SELF_ADDR6=2001:db8:1::$self"
            echo "RIG_PEER_ADDR6=2001:db8:1::$peer" ;;
        esac
        echo "RIG_TERM=$term"
        echo "RIG_ROWS=$rows"
        echo "RIG_COLS=$cols"
    } >"$root/etc/rig.conf"
    if [[ $mode == run ]]; then
        if (($# == 1)); then
            printf '%s\n' "$1" >"$root/etc/rig.cmd"
        else
            local a q=""
            for a in "$@"; do q+="'${a//\'/\'\\\'\'}' "; done
            printf '%s\n' "$q" >"$root/etc/rig.cmd"
        fi
    fi
    (cd "$root" && find . -mindepth 1 -printf '%P\n' | sort | cpio -o -H newc -R 0:0 --quiet) |
        gzip -1 >"$run/payload.cpio.gz"
    rm -rf "$root"
}

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
AWK_PROGRESS='/^1\.\.[0-9]+/ { n = substr($1, 4) } /^# selftests: / { printf "rig: [%d/%d] %s%s\n", ++i, n, pfx, $NF > "/dev/stderr"; fflush("/dev/stderr") }'

# qemu_cmd DIR SMP: the QEMU command line common to all guests, in the array QEMU.
qemu_cmd() {
    # -cpu qemu64: rxe's CRC (crc32-generic) runs ~2x faster under TCG than with -cpu max;
    # from 6.15 on rxe uses the crc32 library, whose PCLMULQDQ path (-cpu max) is faster.
    local cpu=qemu64
    modprobe -d "$(kernel_dir)" -S "$KREL" --show-depends crc32_generic >/dev/null 2>&1 || cpu=max
    # "-display none -vga none" instead of -nographic: same, minus SeaBIOS's serial console,
    # whose first output is ESC c (a terminal reset) on the student's terminal.
    QEMU=(qemu-system-x86_64 -accel tcg -cpu "$cpu" -m "$RIG_MEM" -smp "$2"
        -display none -vga none -no-reboot -nic none
        -kernel "$(guest_kernel)" -initrd "$1/initrd.img"
        -append "console=ttyS0 loglevel=4 panic=-1 $RIG_APPEND")
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

elapsed_since() { echo "$(date +%s.%N) - $1" | bc | xargs printf '%.1f'; }

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
        start_guest "$run" "$RIG_SMP" "$TIMEOUT" results.ktap
        qpid=$QPID
        trap 'kill "$qpid" 2>/dev/null || true' INT TERM
        ((RIG_VERBOSE)) && follow "$run/console.log" "$qpid" "$AWK_CONSOLE"
        # shellcheck disable=SC2016  # awk programs
        case $mode in
        check) follow "$run/results.ktap" "$qpid" "$AWK_PROGRESS" ;;
        *) follow "$run/results.ktap" "$qpid" \
            '{ sub(/\r$/, "") } /^# rig: (exit|done)/ { next } /^# rig: / { print "rig: guest:" substr($0, 7) > "/dev/stderr"; fflush("/dev/stderr"); next } { print; fflush() }' ;;
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
# "rig-request: WHAT" in A's results.  kill-server: SIGKILL to B's QEMU (its host dies; the
# rig then lets A go on and does not count B's end as a failure), after cutting B's link
# and waiting 0.5 s: B's QEMU then drops A's frames, so A's QEMU has none waiting for the
# socket when it breaks.  (QEMU 7.2's stream netdev keeps a frame it could not write yet
# (EAGAIN) queued for good once the peer is gone, and A's virtio-net transmit queue stalls
# behind it: rxe's skbs are never freed, its retries stop, and destroying a QP waits 50 s
# and WARNs.  A dead host's switch port does not do that to its peers.)  link-down / link-up:
# set_link on B's netdev through its monitor (the cable pulled; B's NIC reports carrier
# loss).  Each is logged with the host's time in pair-server/requests.log.  Runs until A's
# QEMU exits.
rig_requests() {   # RESULTS CLIENT-PID SERVER-DIR MONITOR-FD
    local line what
    tail -n +1 -s 0.1 -F --pid="$2" "$1" 2>/dev/null | while IFS= read -r line; do
        [[ $line =~ rig-request:\ ([a-z-]+) ]] || continue
        what=${BASH_REMATCH[1]}
        echo "$(date +%s.%N) $what" >>"$3/requests.log"
        case $what in
        kill-server)
            echo "set_link n0 off" >&"$4"
            sleep 0.5
            kill -KILL "$(cat "$3/qemu.pid")" 2>/dev/null || true ;;
        link-down)   echo "set_link n0 off" >&"$4" ;;
        link-up)     echo "set_link n0 on" >&"$4" ;;
        *)           echo "$(date +%s.%N) unknown request" >>"$3/requests.log" ;;
        esac
    done
}
server_killed() {   # SERVER-DIR
    grep -qs ' kill-server$' "$1/requests.log"
}

# pair_boot RUNDIR CLIENT-MODE (check or shell): boots guest B (server: peer.sh) listening,
# then guest A (client) connected to it; waits for A, then stops B.
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
    build_payload "$cdir" "$cmode" client
    build_payload "$sdir" peer server
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
        if ((RIG_VERBOSE)); then
            follow "$sdir/console.log" "$spid" "$AWK_CONSOLE" -v pfx="server| "
            follow "$cdir/console.log" "$cpid" "$AWK_CONSOLE" -v pfx="client| "
        fi
        follow "$cdir/results.ktap" "$cpid" "$AWK_PROGRESS" -v pfx=pair/
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
        st=0
        wait "$spid" || st=$?
        say "pair: the server guest was killed at the client's request (qemu exit $st)"
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

# ---------------------------------------------------------------- results (check)

# KTAP from the guest -> leaf results, diagnostics of failures, kernel problems, and as the
# very last line "N passed, N failed, N skipped". Exit status 0 iff nothing failed.
# Counting: a top-level test with nested subtests counts each nested ok/not ok (# SKIP =
# skipped); without, the top-level line counts; a top-level "not ok" with no failing subtest
# (crash, timeout) adds one failure; "# rig: error:" lines and a missing end marker add one.
# PREFIX goes before test names (pair/), WHO before the rig's own lines ("pair client: ").
parse_results() {   # RESULTS CONSOLE WHY [PREFIX WHO]
    awk -v console="$2" -v why="$3" -v pfx="${4:-}" -v who="${5:-}" '
    function kind(l) { return l ~ /#[ \t]*[Ss][Kk][Ii][Pp]/ ? "skip" : (l ~ /^not ok/ ? "fail" : "pass") }
    function count(k) { if (k == "pass") pass++; else if (k == "fail") fail++; else skip++ }
    function failed_block(name, text) { diag = diag "---- " name " ----\n" text }
    { sub(/\r$/, "") }
    /^# rig: done/ { done = 1; next }
    /^# rig: error: / { print "not ok - rig: " who substr($0, 15); fail++; next }
    /^# rig: / { print; next }
    /^# selftests: / { cur = pfx $NF; block = ""; nsub = 0; nfail = 0; next }
    cur != "" && /^  / {
        block = block $0 "\n"; l = substr($0, 3)
        if (l ~ /^(not )?ok /) {
            k = kind(l); count(k); nsub++; if (k == "fail") nfail++
            print "  " cur ": " l
        }
        next
    }
    cur != "" && /^(not )?ok [0-9]+ / {
        k = kind($0)
        if (pfx != "") sub(/^(not )?ok [0-9]+ /, "&" pfx)
        if (nsub == 0) { count(k); print }
        else { print; if (k == "fail" && nfail == 0) fail++ }
        if (k == "fail" || nfail) failed_block(cur, block)
        cur = ""; next
    }
    END {
        if (cur != "") { print "not ok - " cur " (no result: the guest stopped during it)"; failed_block(cur, block) }
        if (diag != "") printf "\n==== %sdiagnostics of failing tests ====\n%s", who, diag
        # kernel problems, from the dmesg the guest dumps at the end (else the live console)
        while ((getline l < console) > 0) {
            sub(/\r$/, "", l); gsub(/\033\[[0-9;?]*[A-Za-z]/, "", l); gsub(/\033./, "", l)
            if (l ~ /^==== rig: dmesg ====/) { indump = 1; nk = 0; continue }
            if (l ~ /(WARNING:|BUG:|Oops|Kernel panic|general protection|Call Trace|UBSAN|KASAN|refcount_t|list_(add|del) corruption|blocked for more than|soft lockup|stall)/)
                if (nk < 30) kl[++nk] = l
            tail[++nt % 40] = l
        }
        if (nk) { print "\n==== " who "kernel log problems (first " nk ") ===="; for (i = 1; i <= nk; i++) print kl[i] }
        if (!done) {
            print "\nnot ok - " who (why != "" ? why : "guest did not finish"); fail++
            if (nt) print "==== " who "last 40 lines of the console ===="
            for (i = (nt > 40 ? nt - 39 : 1); i <= nt; i++) print tail[i % 40]
        }
        printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
        exit fail ? 1 : 0
    }' "$1"
}

# Guest B of a pair run: its own failures, in the format of parse_results. "# rig: error:"
# lines (setup), WHY (did not come up, stopped early, no clean power-off), and kernel log
# lines that always mean a bug (stalls and hung tasks are shown but not counted: TCG with
# two guests on two cores can cause them).
parse_server() {   # PEERLOG CONSOLE WHY
    awk -v console="$2" -v why="$3" '
    { sub(/\r$/, "") }
    /^# rig: error: / { print "not ok - rig: pair server: " substr($0, 15); fail++ }
    /^# rig: peer.sh exited/ { print "# pair server: " substr($0, 8) " before the end of the run" }
    END {
        while ((getline l < console) > 0) {
            sub(/\r$/, "", l); gsub(/\033\[[0-9;?]*[A-Za-z]/, "", l); gsub(/\033./, "", l)
            if (l ~ /^==== rig: dmesg ====/) { indump = 1; nk = 0; nbug = 0; continue }
            if (l ~ /(WARNING:|BUG:|Oops|Kernel panic|general protection|Call Trace|UBSAN|KASAN|refcount_t|list_(add|del) corruption|blocked for more than|soft lockup|stall)/) {
                if (nk < 30) kl[++nk] = l
                if (l ~ /(WARNING:|BUG:|Oops|Kernel panic|general protection|UBSAN|KASAN|refcount_t|list_(add|del) corruption)/ && !nbug++) bug = l
            }
            tail[++nt % 40] = l
        }
        if (nk) { print "\n==== pair server: kernel log problems (first " nk ") ===="; for (i = 1; i <= nk; i++) print kl[i] }
        if (nbug) { print "not ok - pair server: kernel log: " bug; fail++ }
        if (why != "") {
            print "\nnot ok - pair server: " why; fail++
            if (nt) print "==== pair server: last 40 lines of the console ===="
            for (i = (nt > 40 ? nt - 39 : 1); i <= nt; i++) print tail[i % 40]
        }
        printf "0 passed, %d failed, 0 skipped\n", fail
        exit fail ? 1 : 0
    }' "$1"
}

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
    local mode=$1 run why pairlist=$STAGE/selftests/pair/kselftest-list.txt
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
    [[ -e $STAGE/selftests/pair/peer.sh ]] || say "warning: no selftests/pair/peer.sh in the stage: the server only idles"
    run=$(new_run_dir)
    pair_boot "$run" shell
    [[ -z $SERVER_WHY ]] || say "$SERVER_WHY"
    say "server: ${run#"$REPO"/}/pair-server/peer.log (peer.sh), console.log"
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

for v in RIG_MEM RIG_SMP RIG_TIMEOUT RIG_PAIR_SMP RIG_PAIR_MTU; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number"; done
[[ $RIG_PAIR_LINK == unix || $RIG_PAIR_LINK == tcp ]] || die "RIG_PAIR_LINK must be unix or tcp"
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
check | pair | pair-shell | demo | run | shell)
    while (($#)); do
        case $1 in
        --timeout) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--timeout needs seconds"; TIMEOUT=$2; shift 2 ;;
        --) shift; break ;;
        -h | --help) usage ;;
        *) [[ $cmd == run ]] && break; die "unknown argument: $1" ;;
        esac
    done
    [[ $cmd != run || $# -gt 0 ]] || die "usage: $0 run [--] CMD..."
    case $cmd in
    check | pair) cmd_check "$cmd" ;;
    pair-shell)   cmd_pair_shell ;;
    *)            cmd_boot "$cmd" "$@" ;;
    esac ;;
-h | --help | help) usage ;;
*) usage 2 ;;
esac
