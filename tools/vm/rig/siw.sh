# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# rig/siw.sh - Soft-iWARP for guest kernels that lack it.
# Sourced by tools/vm/rig.sh, which sets the configuration and say()/die().
#
# Debian builds 6.1 and 6.12 with "# CONFIG_RDMA_SIW is not set".  The driver is a
# self-contained directory of the kernel source (drivers/infiniband/sw/siw), so it is
# built out of tree from the Debian source package of the same kernel, against the
# guest kernel's headers, in a few seconds, and added to the cached kernel's module tree
# as updates/siw.ko (depmod'ed): modprobe finds it in the guest as if the kernel had it.
#
# Every siw the rig builds carries siw-child-close.patch (next to this file), a fix of
# ours for a siw bug that every kernel up to the newest read has: a TCP connection
# closed before siw accepted it releases the listener (a plain TCP peer connecting and
# closing kills the listener, and closing that listener corrupts memory; the patch
# says why, Documentation/providers.md how it was found).  The guest is told
# (RIG_SIW_FIXED=1 in /etc/rig.conf); tests that would trip the bug skip without it.
#
#   stock   source: the host's linux-source-6.1 (the same package the rig installs for
#           kselftest_harness.h), headers /usr/src/linux-headers-<krel>; always built,
#           so that every stock guest can add a siw device
#   debug   source and build tree: the debug kernel's own (tools/vm/debug.config has
#           CONFIG_RDMA_SIW=m; ours in updates/ takes precedence over it)
#   6.12    source: linux-source-6.12 of bookworm-backports, downloaded through the
#   sid     suite's private apt configuration into $CACHE/src/ (linux-source-7.2 of
#           sid); built only when RIG_PROVIDER=siw, sid's in its build chroot (its
#           headers need the suite's gcc)
#
#   $CACHE/siw/<krel>/     the extracted driver, its build, build.log, .key
SIW_PATCH=$RIG_DIR/rig/siw-child-close.patch

# The kernel has siw (built in, a module of its own, or ours added before).
kernel_has_siw() {
    local kdir
    kdir=$(kernel_dir)
    modprobe -d "$kdir" -S "$KREL" --show-depends siw >/dev/null 2>&1 ||
        grep -q '/siw\.ko' "$kdir/lib/modules/$KREL/modules.builtin" 2>/dev/null
}

# The source tarball for this kernel's siw (downloaded if need be), or its source tree
# (debug), on stdout.
siw_source_tar() {
    local d t v
    case $RIG_KERNEL in
    debug)
        t=$DEBUG_DIR/src ;;
    stock)
        t=/usr/src/linux-source-6.1.tar.xz
        [[ -r $t ]] || die "no $t (run: $0 setup)" ;;
    6.12|sid)
        v=${ABI%%[-+]*} v=${v%.*}   # 6.12.95+deb12 -> 6.12, 7.2.13+deb14 -> 7.2
        d=$CACHE/src/linux-source-$v
        t=$(compgen -G "$d/usr/src/linux-source-$v.tar.xz" | head -n1 || true)
        if [[ -z $t ]]; then
            suite_opts
            rm -rf "$d"
            mkdir -p "$d"
            say "downloading linux-source-$v (${SUITE_OF[$RIG_KERNEL]}) for siw"
            (cd "$d" && apt-get "${SUITE_OPT[@]}" download -qq "linux-source-$v" >&2) ||
                die "cannot download linux-source-$v"
            dpkg -x "$d"/linux-source-"$v"_*.deb "$d" && rm -f "$d"/linux-source-"$v"_*.deb
            t=$(compgen -G "$d/usr/src/linux-source-$v.tar.xz" | head -n1 || true)
            [[ -n $t ]] || die "linux-source-$v has no tarball"
        fi ;;
    *)
        die "siw for RIG_KERNEL=$RIG_KERNEL is not built by the rig" ;;
    esac
    echo "$t"
}

# The headers modules for this kernel are built against (sid: inside its chroot).
siw_kdir() {
    if [[ $RIG_KERNEL == debug ]]; then echo "$DEBUG_DIR/src"
    elif in_chroot; then echo "/usr/src/linux-headers-$KREL"
    elif other_suite; then echo "$(kernel_dir)/usr/src/linux-headers-$KREL"
    else echo "/usr/src/linux-headers-$KREL"; fi
}

# make siw in DIR (its sources, patched): here, or for sid with cmd_krun in the build
# chroot, from a copy under the repo's build/ (krun sees the repo only), siw.ko copied back.
siw_make() {   # DIR
    local copy=$REPO/build/siw-$KREL
    if ! in_chroot; then
        make -C "$(siw_kdir)" M="$1" CONFIG_RDMA_SIW=m modules
        return
    fi
    rm -rf "$copy"
    mkdir -p "$REPO/build"
    cp -a "$1" "$copy"
    (cd "$copy" && cmd_krun make -C "$(siw_kdir)" M="$copy" CONFIG_RDMA_SIW=m modules) &&
        cp "$copy/siw.ko" "$1/siw.ko"
}

# Build siw.ko (with SIW_PATCH) and add it to the cached module tree: always for stock
# and debug, for 6.12 when RIG_PROVIDER=siw; another kernel keeps a siw of its own.
# Rebuilt when the kernel, the patch or this code changes.  Called with the cache locked.
ensure_siw() {
    local kdir dir tar key mods
    [[ $RIG_KERNEL == stock || $RIG_KERNEL == debug || $RIG_PROVIDER == siw ]] || return 0
    kdir=$(kernel_dir)
    mods=$kdir/lib/modules/$KREL
    dir=$CACHE/siw/$KREL
    key=$( { echo "$KREL"; declare -f ensure_siw siw_source_tar siw_kdir siw_make; cat "$SIW_PATCH"; } |
           sha256sum | cut -c1-16)
    if [[ -e $mods/updates/siw.ko && $(cat "$dir/.key" 2>/dev/null) == "$key" ]]; then return 0; fi
    if [[ ! -e $mods/updates/siw.ko && $RIG_KERNEL != stock && $RIG_KERNEL != debug ]] &&
       kernel_has_siw; then
        return 0
    fi
    tar=$(siw_source_tar)
    in_chroot || [[ -d $(siw_kdir) ]] || die "no headers for $KREL at $(siw_kdir) (run: $0 setup)"
    say "building siw.ko for $KREL from ${tar##*/} with ${SIW_PATCH##*/}"
    rm -rf "$dir"
    mkdir -p "$dir/siw"
    if [[ -d $tar ]]; then
        cp "$tar"/drivers/infiniband/sw/siw/{Makefile,Kconfig,*.[ch]} "$dir/siw/" ||
            die "no drivers/infiniband/sw/siw in $tar"
        rm -f "$dir"/siw/*.mod.c
    else
        tar -xJf "$tar" -C "$dir" --strip-components=4 --wildcards '*/drivers/infiniband/sw/siw/*' ||
            die "no drivers/infiniband/sw/siw in $tar"
    fi
    patch -s --fuzz=0 -d "$dir/siw" -p5 <"$SIW_PATCH" >"$dir/patch.log" 2>&1 ||
        die "${SIW_PATCH##*/} does not apply to siw of $KREL (log: $dir/patch.log)"
    if ! siw_make "$dir/siw" >"$dir/build.log" 2>&1; then
        tail -n 20 "$dir/build.log" >&2
        die "siw did not build for $KREL (log: $dir/build.log)"
    fi
    mkdir -p "$mods/updates"
    cp "$dir/siw/siw.ko" "$mods/updates/siw.ko"
    depmod -b "$kdir" "$KREL"
    echo "$key" >"$dir/.key"
}
