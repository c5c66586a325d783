# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# rig/kernel.sh - the guest kernel: its ABI, fetching it (stock, bookworm-backports,
# sid, through a private apt configuration) or building it (debug), the sid build
# chroot, and the uncompressed vmlinux QEMU boots.
# Sourced by tools/vm/rig.sh, which sets the configuration and say()/die().

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
