# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# rig/initramfs.sh - the guest's initramfs: the cached base (busybox, host tools and
# their libraries, kernel modules) and the per-run payload (the stage, guest scripts,
# /etc/rig.conf).
# Sourced by tools/vm/rig.sh, which sets the configuration and say()/die().

# Kernel modules (with their dependencies) put into the initramfs; the optional ones where
# the kernel has them (crc32_generic: rxe's ICRC before 6.15, the crc32 library after;
# siw, where the kernel has it or rig/siw.sh added it, and its CRC32C).
GUEST_MODULES=(rdma_rxe rdma_cm rdma_ucm ib_uverbs ib_umad veth dummy loop ext4
               virtio_net virtio_pci configfs)
GUEST_MODULES_OPTIONAL=(crc32_generic siw libcrc32c crc32c_generic)
# Host programs copied into the initramfs (with their shared libraries).
GUEST_BINS=(bash dash timeout ip rdma kmod jq keyctl ibv_devices ibv_devinfo
            ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat
            ib_atomic_bw ib_atomic_lat setpriv)
GUEST_BINS_OPTIONAL=(rping udaddy ucmatose rdma_server rdma_client ibv_rc_pingpong
                     ibv_ud_pingpong ibv_srq_pingpong strace perf)
KMOD_LINKS=(modprobe insmod rmmod lsmod modinfo depmod)

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
        # rdma-core's userspace providers of both soft devices (perftest, rping)
        for p in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so \
                 /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav*.so \
                 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
            [[ -e $p ]] || die "$p missing (run: $0 setup)"
            elf_manifest "$p"
        done
        echo "/etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver"
        echo "/etc/libibverbs.d/siw.driver /etc/libibverbs.d/siw.driver"
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

# The kernel's own usr/gen_init_cpio, built once from linux-source into $CACHE/bin: it
# puts /dev/console (which the kernel opens for /init's stdio before /init runs) into an
# archive as a device node without making one, which needs root (mknod).
gen_init_cpio() {
    local bin=$CACHE/bin/gen_init_cpio tar
    if [[ ! -x $bin ]]; then
        tar=$(compgen -G '/usr/src/linux-source-*.tar.xz' | sort -V | tail -n1 || true)
        [[ -n $tar ]] || die "no /usr/src/linux-source-*.tar.xz for gen_init_cpio (run: $0 setup)"
        mkdir -p "$CACHE/bin"
        tar -xJOf "$tar" --wildcards '*/usr/gen_init_cpio.c' >"$bin.c" &&
            cc -O2 -o "$bin.tmp" "$bin.c" && mv "$bin.tmp" "$bin" ||
            die "cannot build gen_init_cpio from $tar"
    fi
    "$bin" "$@"
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
        declare -f base_manifest guest_module_files build_base gen_init_cpio elf_manifest ldd_libs canon
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
        cd "$root" || exit
        find . -mindepth 1 -printf '%P\n' | sort | cpio -o -H newc -R 0:0 --quiet
        echo 'nod /dev/console 0600 0 0 c 5 1' | gen_init_cpio -
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
    # bench.sh and peer-shell.sh (make bench) and lab-*.sh (make labs), when present
    for f in "$RIG_DIR"/guest/bench.sh "$RIG_DIR"/guest/peer-shell.sh "$RIG_DIR"/guest/ping-tail.sh "$RIG_DIR"/guest/lab-*.sh; do
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
        echo "RIG_PROVIDER=$RIG_PROVIDER"
        echo "RIG_DEV=${RIG_PROVIDER}0"
        # siw.sh: the rig's own siw.ko (in updates/) has siw-child-close.patch
        if [[ -e $(kernel_dir)/lib/modules/$KREL/updates/siw.ko ]]; then
            echo "RIG_SIW_FIXED=1"
        else
            echo "RIG_SIW_FIXED="
        fi
        echo "RIG_ROLE=$role"
        case $role in
        single)
            # check: no network at all, as on a user's host: each test makes the
            # device it needs (selftests' rxe_env.sh); else rxe0 on a veth pair
            if [[ $mode == check ]]; then
                echo "RIG_NET=none"
                echo "RIG_SELF_ADDR="
                echo "RIG_SELF_ADDR6="
            else
                echo "RIG_NET=veth"
                echo "RIG_SELF_ADDR=192.0.2.1"
                echo "RIG_SELF_ADDR6=2001:db8::1"
            fi
            echo "RIG_TESTS=/opt/rdmaxfer/selftests/rdmaxfer"
            echo "RIG_TESTLIST=/opt/rdmaxfer/selftests/kselftest-list.txt"
            echo "RIG_PEER_ADDR="
            echo "RIG_PEER_ADDR6=" ;;
        client | server)
            local self=11 peer=12
            [[ $role == server ]] && self=12 peer=11
            echo "RIG_NET=pair"
            echo "RIG_MTU=$RIG_PAIR_MTU"
            echo "RIG_TESTS=/opt/rdmaxfer/selftests/rdmaxfer/pair"
            echo "RIG_TESTLIST=/opt/rdmaxfer/selftests/rdmaxfer/pair/kselftest-list.txt"
            # the server's background job (peer mode): pair/peer.sh, or RIG_PEER's
            echo "RIG_PEER=${RIG_PEER:-/opt/rdmaxfer/selftests/rdmaxfer/pair/peer.sh}"
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
