#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh - build (once) and cache the rig's debug guest kernel.
#
#   debug-kernel.sh build   build it if the cache has none for the current inputs;
#                           prints the kernel's directory on stdout
#   debug-kernel.sh dir     print that directory (exit 1 if it is not built)
#
# Source: Debian's linux-source-6.1 (/usr/src/linux-source-6.1.tar.xz), configured as
# x86_64_defconfig + kvm_guest.config + tools/vm/debug.config (KASAN, lockdep, kmemleak,
# UBSAN, fault injection, rdma_rxe and siw as modules).  The cache directory is named after the
# tarball's package version and a hash of debug.config and RECIPE, so a new
# linux-source or a changed fragment builds a new kernel; older ones are removed.
#
#   $RDMAXFER_CACHE/debug/<ver>-<hash>/
#     src/          the configured, built tree (KDIR for out-of-tree modules)
#     boot/vmlinuz  the kernel QEMU boots (a bzImage: this kernel's PVH entry does not
#                   come up under QEMU 7.2, so no uncompressed fast path here)
#     lib/modules/<krel>/   modules_install output, depmod'ed
#     krel          the kernel release string
#     build.log, .complete
#
# Build time here: ~30 min on the 2 cores of this machine when nothing else runs (nice 10).
set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RDMAXFER_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rdmaxfer}
TARBALL=${KSRC_TAR:-/usr/src/linux-source-6.1.tar.xz}
FRAGMENT=$VM_DIR/debug.config
# Bump when a change to build() needs a new kernel (the fragment is hashed by itself).
RECIPE=1
BUILD_PKGS=(flex bison libelf-dev libssl-dev bc cpio kmod xz-utils linux-source-6.1)

say() { echo "debug-kernel: $*" >&2; }
die() { echo "debug-kernel: error: $*" >&2; exit 2; }

key_dir() {
	local ver hash
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
		die "linux-source-6.1 is not installed (run: make setup)"
	[[ -r $TARBALL ]] || die "no $TARBALL (run: make setup)"
	hash=$( { cat "$FRAGMENT"; echo "recipe $RECIPE"; } | sha256sum | cut -c1-12)
	echo "$CACHE/debug/$ver-$hash"
}

ensure_pkgs() {
	local missing=() p
	for p in "${BUILD_PKGS[@]}"; do
		dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	((EUID == 0)) || die "missing packages: ${missing[*]} (run as root)"
	say "installing: ${missing[*]}"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >&2
}

# A tree built before boot/vmlinuz was kept: make the bzImage (seconds).
add_bzimage() {
	local dir=$1
	[[ -e $dir/boot/vmlinuz ]] && return 0
	nice -n 10 make -C "$dir/src" -j"$(($(nproc) + 1))" bzImage >>"$dir/build.log" 2>&1 ||
		die "bzImage failed (log: $dir/build.log)"
	cp "$dir/src/arch/x86/boot/bzImage" "$dir/boot/vmlinuz"
}

build() {
	local dir src jobs krel t0 old
	dir=$(key_dir)
	if [[ -e $dir/.complete && -e $dir/boot/vmlinuz ]]; then echo "$dir"; return 0; fi
	mkdir -p "$CACHE/debug"
	exec 8>"$CACHE/debug/.lock"
	flock 8
	if [[ -e $dir/.complete ]]; then add_bzimage "$dir"; echo "$dir"; return 0; fi
	ensure_pkgs
	t0=$(date +%s)
	rm -rf "$dir"
	mkdir -p "$dir"
	src=$dir/src
	say "unpacking $TARBALL into $src"
	mkdir -p "$src"
	tar -xJf "$TARBALL" -C "$src" --strip-components=1
	say "configuring (x86_64_defconfig + kvm_guest.config + ${FRAGMENT##*/})"
	cp "$FRAGMENT" "$src/kernel/configs/rdmaxfer_debug.config"
	make -C "$src" -s x86_64_defconfig kvm_guest.config rdmaxfer_debug.config >"$dir/build.log" 2>&1 ||
		{ tail -n 20 "$dir/build.log" >&2; die "configuration failed"; }
	check_config "$src/.config"
	jobs=$(($(nproc) + 1))
	say "building (make -j$jobs, nice 10; log: $dir/build.log); this takes ~30 min"
	if ! nice -n 10 make -C "$src" -j"$jobs" bzImage modules >>"$dir/build.log" 2>&1; then
		grep -E 'error|Error' "$dir/build.log" | tail -n 20 >&2
		die "build failed (log: $dir/build.log)"
	fi
	make -C "$src" -s modules_install INSTALL_MOD_PATH="$dir" INSTALL_MOD_STRIP=1 \
		>>"$dir/build.log" 2>&1 || die "modules_install failed (log: $dir/build.log)"
	krel=$(make -C "$src" -s kernelrelease)
	mkdir -p "$dir/boot"
	cp "$src/arch/x86/boot/bzImage" "$dir/boot/vmlinuz"
	# the initramfs takes modules from <dir>/lib/modules/<krel>, Debian's layout
	rm -f "$dir/lib/modules/$krel/build" "$dir/lib/modules/$krel/source"
	depmod -b "$dir" "$krel"
	echo "$krel" >"$dir/krel"
	touch "$dir/.complete"
	say "built $krel in $(( ($(date +%s) - t0) / 60 )) min"
	for old in "$CACHE"/debug/*/; do
		[[ ${old%/} == "$dir" ]] || rm -rf "$old"
	done
	echo "$dir"
}

# The options the rig relies on must have survived olddefconfig's dependency checks.
check_config() {
	local opt bad=()
	for opt in KASAN KASAN_INLINE PROVE_LOCKING DEBUG_ATOMIC_SLEEP PROVE_RCU DEBUG_KMEMLEAK \
		UBSAN DEBUG_LIST DEBUG_OBJECTS_WORK FAULT_INJECTION FAILSLAB FAIL_PAGE_ALLOC \
		FAULT_INJECTION_DEBUG_FS INFINIBAND INFINIBAND_ADDR_TRANS VIRTIO_NET; do
		grep -qx "CONFIG_$opt=y" "$1" || bad+=("$opt=y")
	done
	grep -qx 'CONFIG_RDMA_RXE=m' "$1" || bad+=(RDMA_RXE=m)
	grep -qx 'CONFIG_RDMA_SIW=m' "$1" || bad+=(RDMA_SIW=m)
	((${#bad[@]} == 0)) || die "the merged config lacks: ${bad[*]}"
}

case ${1:-} in
build) build ;;
dir)
	d=$(key_dir)
	[[ -e $d/.complete && -e $d/boot/vmlinuz ]] || { say "not built (run: $0 build)"; exit 1; }
	echo "$d" ;;
*) sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
