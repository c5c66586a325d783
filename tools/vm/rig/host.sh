# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# rig/host.sh - the host: the Debian packages the rig needs, the cache lock,
# `rig.sh setup` and what every boot needs first (prepare).
# Sourced by tools/vm/rig.sh, which sets the configuration and say()/die().

# Packages needed to boot guests / to build and check the module on the host.
RUNTIME_PKGS=(qemu-system-x86 busybox-static cpio kmod iproute2 rdma-core ibverbs-utils
              rdmacm-utils perftest jq xz-utils patch keyutils)
DEV_PKGS=(bc sparse shellcheck gcc-multilib linux-source-6.1 librdmacm-dev libibverbs-dev
          linux-perf gnuplot-nox dwarves)   # + linux-headers-<abi>-amd64 (stock)

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
    ensure_siw
    build_base
}

# What booting needs: runtime packages, the cached kernel and the base initramfs.
prepare() {
    lock_cache
    ensure_pkgs "${RUNTIME_PKGS[@]}"
    resolve_abi || setup_abi
    fetch_kernel
    extract_vmlinux
    ensure_siw
    build_base
    exec 9>&-
}
