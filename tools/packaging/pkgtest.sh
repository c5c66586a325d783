#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# pkgtest.sh - do the packages install and work like an admin's (`make pkgtest`)?
#
# In a throw-away Debian 12 chroot (mmdebstrap; the host is not touched) with
# the headers of the rig's two kernels installed (Debian 12's 6.1 and
# bookworm-backports' 6.12), installs rdmaxfer-dkms and rdmaxfer from
# build/deb (`make deb`) and checks that
#   - DKMS built and installed the module for both kernels, and modinfo shows
#     its version, description and parameter;
#   - the man pages rdmaxfer(8) and rdmaxfer(4) render;
#   - the udev rule parses (udevadm test reports no error for it), and the
#     group it names exists;
#   - removing rdmaxfer-dkms removes the modules again;
# then boots the rig's guest on each kernel with the DKMS-built module and the
# packaged CLI and runs `rdmaxfer info`.
# Prints KTAP and a last line "N passed, N failed, N skipped".
#
# The chroot is made once (~8 min here: 6.12's headers pull in its image)
# and kept as a ~700 MB tarball under ~/.cache/rdmaxfer/pkgtest/, named after
# the two header packages; each run unpacks a fresh copy (~4 min in all).
set -uo pipefail

PKG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$PKG_DIR/../.." && pwd)
RIG=$TOP/tools/vm/rig.sh
CACHE=${RDMAXFER_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rdmaxfer}/pkgtest
DEBS=$TOP/build/deb
WORK=$TOP/build/pkgtest

say() { echo "# $*"; }
die() { echo "pkgtest: error: $*" >&2; exit 2; }

n=0 pass=0 fail=0 skip=0
result() {	# NAME STATUS [WHY]
	n=$((n + 1))
	if [[ $2 == skip ]]; then
		echo "ok $n $1 # SKIP $3"; skip=$((skip + 1))
	elif [[ $2 -eq 0 ]]; then
		echo "ok $n $1"; pass=$((pass + 1))
	else
		echo "not ok $n $1"; fail=$((fail + 1))
	fi
}
finish() {
	echo "# Totals: pass:$pass fail:$fail skip:$skip"
	echo "$pass passed, $fail failed, $skip skipped"
	exit $((fail ? 1 : 0))
}

((EUID == 0)) || die "run as root (a chroot)"
command -v mmdebstrap >/dev/null || {
	apt-get install -y -qq --no-install-recommends mmdebstrap >&2 || die "cannot install mmdebstrap"
}

# The rig's kernels: their release names, from the header trees the rig uses.
krel_of() {	# RIG_KERNEL
	local d
	d=$(RIG_KERNEL=$1 "$RIG" kdir 2>/dev/null) || return 1
	d=${d##*/linux-headers-}
	[[ -n $d ]] && echo "$d"
}
K61=$(krel_of stock) || die "no 6.1 headers for the rig (run: make setup)"
K612=$(krel_of 6.12) || die "no 6.12 headers for the rig (run: make setup KERNEL=6.12)"

# The chroot's sources: the host's (one-line form of deb822 or sources.list)
# and bookworm-backports for 6.12.
host_sources() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		awk 'function flush() { if (u != "" && t ~ /deb( |$)/) { n = split(s, a, " ");
				for (i = 1; i <= n; i++) print "deb " u " " a[i] " " (c == "" ? "main" : c) }
				u = s = c = t = "" }
		     /^[ \t]*$/ { flush(); next }
		     /^URIs:/ { u = $2 } /^Suites:/ { sub(/^Suites: */, ""); s = $0 }
		     /^Components:/ { sub(/^Components: */, ""); c = $0 } /^Types:/ { t = $0 }
		     END { flush() }' "$f"
	done
	grep -h '^deb ' /etc/apt/sources.list 2>/dev/null || true
}
sources=$(host_sources | sed 's/\[[^]]*\] //' | sort -u)
mirror=$(echo "$sources" | awk '$2 ~ /\/debian\/?$/ { print $2; exit }')
[[ -n $mirror ]] || die "no Debian mirror in the host's apt sources"
sources+=$'\n'"deb $mirror bookworm-backports main"

# Bump RECIPE when the chroot's contents change: the tarball's name has it.
RECIPE=2
tarball=$CACHE/bookworm-r$RECIPE-$K61-$K612.tar
if [[ ! -s $tarball ]]; then
	mkdir -p "$CACHE"
	rm -f "$CACHE"/bookworm-*.tar "$CACHE/partial.tar"
	say "making the chroot (mmdebstrap bookworm + dkms + headers of $K61 and $K612)"
	t0=$(date +%s)
	echo "$sources" | mmdebstrap --variant=apt --quiet \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--aptopt='APT::Install-Recommends "false"' \
		--include="dkms,gcc,make,kmod,man-db,udev,adduser,libibverbs1,dwarves,linux-headers-$K61,linux-headers-$K612" \
		bookworm "$CACHE/partial.tar" - >&2 || die "mmdebstrap failed"
	mv "$CACHE/partial.tar" "$tarball"
	say "chroot made in $(($(date +%s) - t0)) s ($(du -h "$tarball" | cut -f1))"
fi

ver=$(sed -n 's/^#define[[:space:]]*RDMAXFER_VERSION[[:space:]]*"\(.*\)"/\1/p' "$TOP/kmod/rdmaxfer.h")
dkms_deb=$DEBS/rdmaxfer-dkms_$ver-1_all.deb
cli_deb=$(ls "$DEBS"/rdmaxfer_"$ver"-1_*.deb 2>/dev/null | head -n1)
[[ -e $dkms_deb && -n $cli_deb ]] || die "no packages of $ver in $DEBS (run: make deb)"

echo "TAP version 13"
echo "1..10"
rm -rf --one-file-system "$WORK"
mkdir -p "$WORK/root"
tar -xf "$tarball" -C "$WORK/root" || die "cannot unpack $tarball"
cp "$dkms_deb" "$cli_deb" "$WORK/root/tmp/"

# The module DKMS installed for kernel $1 (compressed like that kernel's own:
# 6.12's are .ko.xz), or nothing.
ko_of() {
	ls "$WORK/root/lib/modules/$1/updates/dkms/"rdmaxfer.ko* 2>/dev/null | head -n1
}

# Run a shell command in the chroot, with /proc, /sys and /dev, in a mount
# namespace of its own (nothing stays mounted).
in_root() {
	unshare --mount --fork -- sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" &&
		mount --rbind /dev "$r/dev" && exec chroot "$r" /usr/bin/env -i \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 sh -c "$1"' \
		sh "$WORK/root" "$1"
}

# 1. install both packages (their dependencies are in the chroot already)
in_root "dpkg -i /tmp/${dkms_deb##*/} /tmp/${cli_deb##*/}" >"$WORK/install.log" 2>&1
r=$?
sed 's/^/# /' "$WORK/install.log" | grep -E 'Building|DKMS|rdmaxfer|error|Error' | head -n 20
result "packages_install" $r

# 2. DKMS built and installed the module for both kernels
r=0
for k in "$K61" "$K612"; do
	ko=$(ko_of "$k")
	if [[ -z $ko ]]; then
		say "$k: no rdmaxfer.ko* in /lib/modules/$k/updates/dkms"; r=1; continue
	fi
	say "$k: ${ko#"$WORK/root"}"
	info=$(modinfo "$ko")
	grep -q "^vermagic: *$k " <<<"$info" && grep -q "^version: *$ver\$" <<<"$info" ||
		{ say "$k: modinfo: $(tr '\n' ' ' <<<"$info")"; r=1; }
done
say "dkms status: $(in_root 'dkms status' 2>&1 | tr '\n' ';')"
result "dkms_built_for_6.1_and_6.12" $r

# 3. modinfo: description, version, the parameter with its unit and default
info=$(modinfo "$(ko_of "$K61")" 2>&1)
grep -q '^description: *[^ ]' <<<"$info" &&
	grep -q '^parm: *peer_timeout_ms:.*ms.*default' <<<"$info"
r=$?
((r == 0)) || sed 's/^/# /' <<<"$info"
result "modinfo_describes_module_and_parameter" $r

# 4. the man pages render
r=0
for s in 8 4; do
	out=$(in_root "MANWIDTH=80 man $s rdmaxfer 2>&1 | col -b" 2>&1)
	grep -q '^NAME' <<<"$out" && grep -q 'rdmaxfer' <<<"$out" ||
		{ say "man $s rdmaxfer: $(head -n 5 <<<"$out" | tr '\n' ' ')"; r=1; }
	say "man $s rdmaxfer: $(wc -l <<<"$out") lines"
done
result "man_pages_render" $r

# 5. the udev rule: installed, parsed without complaint, its group exists
rule=$(ls "$WORK"/root/{lib,usr/lib}/udev/rules.d/60-rdmaxfer.rules 2>/dev/null | head -n1)
r=1
if [[ -n $rule ]]; then
	# udevadm test reads every rules file and names each line it rejects
	# ("FILE:LINE Invalid key ..."); the device it tests does not matter
	in_root "udevadm test /sys/class/mem/null 2>&1" >"$WORK/udevadm.log" 2>&1
	if grep -q "^Reading rules file: .*/60-rdmaxfer.rules" "$WORK/udevadm.log"; then
		say "$(grep -m1 "^Reading rules file: .*/60-rdmaxfer.rules" "$WORK/udevadm.log")"
		if grep '60-rdmaxfer\.rules:[0-9]' "$WORK/udevadm.log" | sed 's/^/# /' | grep .; then
			r=1
		else
			r=0
		fi
	else
		say "udevadm test did not read 60-rdmaxfer.rules: $(grep -i rules "$WORK/udevadm.log" | head -n 3 | tr '\n' ' ')"
	fi
fi
in_root "getent group rdma" >/dev/null 2>&1 || { say "no group rdma"; r=1; }
result "udev_rule_parses_and_group_exists" $r

# 6. the CLI runs in the chroot and knows its version
out=$(in_root "rdmaxfer --version" 2>&1)
grep -q "^rdmaxfer $ver " <<<"$out"
r=$?
say "rdmaxfer --version: $(grep -m1 '^rdmaxfer ' <<<"$out")"
result "cli_installed" $r

# 7-8. the guest runs the DKMS-built module and the packaged CLI, per kernel
stage_of() {	# RIG_KERNEL KREL -> a stage dir with the packaged module and CLI
	local dir=$WORK/stage-$1
	mkdir -p "$dir/bin"
	local ko
	ko=$(ko_of "$2")
	case $ko in
	*.ko) cp "$ko" "$dir/rdmaxfer.ko" ;;
	*.ko.xz) xz -dc "$ko" >"$dir/rdmaxfer.ko" ;;
	*.ko.zst) zstd -qdc "$ko" >"$dir/rdmaxfer.ko" ;;
	*) return 1 ;;
	esac || return 1
	cp "$WORK/root/usr/bin/rdmaxfer" "$dir/bin/" || return 1
	echo "$dir"
}
for kv in "stock $K61" "6.12 $K612"; do
	set -- $kv
	r=1
	if dir=$(stage_of "$1" "$2"); then
		RIG_KERNEL=$1 RDMAXFER_STAGE=$dir "$RIG" run -- \
			'rdmaxfer info --json | jq -e ".module.version" && rdmaxfer info' \
			>"$WORK/guest-$1.log" 2>&1
		grep -q "\"$ver\"" "$WORK/guest-$1.log" && grep -q rxe0 "$WORK/guest-$1.log" && r=0
		((r == 0)) || sed 's/^/# /' "$WORK/guest-$1.log" | tail -n 20
	fi
	result "guest_${1/stock/6.1}_runs_dkms_module" $r
done

# 9. an upgrade reinstalls cleanly (the same packages again: DKMS rebuilds)
in_root "dpkg -i /tmp/${dkms_deb##*/} /tmp/${cli_deb##*/}" >"$WORK/reinstall.log" 2>&1 &&
	[[ -n $(ko_of "$K61") && -n $(ko_of "$K612") ]]
result "packages_reinstall" $?

# 10. removing rdmaxfer-dkms removes the built modules
in_root "dpkg -r rdmaxfer-dkms" >"$WORK/remove.log" 2>&1
r=$?
for k in "$K61" "$K612"; do
	[[ -z $(ko_of "$k") ]] || { say "$k: module left"; r=1; }
done
result "dkms_package_removes_modules" $r

rm -rf --one-file-system "$WORK/root"
finish
