#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# deb.sh - build the Debian packages rdmaxfer-dkms and rdmaxfer from this tree
# (`make deb`).
#
#   deb.sh [OUTDIR]     (default: build/deb)
#
# The tree's top level stays free of packaging: the files the packages need
# (Kbuild, kmod/, uapi/, tools/rdmaxfer/, tools/lib/rdmaxfer/,
# Documentation/man/) are copied into OUTDIR/rdmaxfer-<version>/ next to
# tools/packaging/debian/, the changelog is written for the version in
# kmod/rdmaxfer.h, the upstream tarball made from the copy
# (OUTDIR/rdmaxfer_<version>.orig.tar.xz: the source format is 3.0 (quilt),
# as a <version>-1 needs), and dpkg-buildpackage builds the source package
# and the binary packages there:
#   OUTDIR/rdmaxfer_<version>-1.dsc, .debian.tar.xz,
#   OUTDIR/rdmaxfer-dkms_<version>-1_all.deb, OUTDIR/rdmaxfer_<version>-1_<arch>.deb
# Missing build dependencies are installed when run as root.
set -euo pipefail

PKG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$PKG_DIR/../.." && pwd)
OUT=${1:-$TOP/build/deb}
BUILD_DEPS=(dpkg-dev debhelper dh-dkms libibverbs-dev gcc make)

say() { echo "deb: $*" >&2; }
die() { echo "deb: error: $*" >&2; exit 2; }

version_of() {	# FILE MACRO
	sed -n "s/^#define[[:space:]]*$2[[:space:]]*\"\\(.*\\)\"/\\1/p" "$1"
}

ensure_deps() {
	local missing=() p
	for p in "${BUILD_DEPS[@]}"; do
		dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	((EUID == 0)) || die "missing packages: ${missing[*]} (install them, or run as root)"
	say "installing: ${missing[*]}"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >&2
}

ver=$(version_of "$TOP/kmod/rdmaxfer.h" RDMAXFER_VERSION)
cli=$(version_of "$TOP/tools/rdmaxfer/rdmaxfer.h" CLI_VERSION)
[[ -n $ver ]] || die "no RDMAXFER_VERSION in kmod/rdmaxfer.h"
[[ $ver == "$cli" ]] || die "module version $ver and CLI version $cli differ"
[[ -e $TOP/Documentation/man/rdmaxfer.8 && -e $TOP/Documentation/man/rdmaxfer.4 ]] ||
	die "no man pages in Documentation/man/"
ensure_deps

src=$OUT/rdmaxfer-$ver
rm -rf "$src" "$OUT"/rdmaxfer*_"$ver"-* "$OUT"/rdmaxfer_"$ver".orig.tar.*
mkdir -p "$src/kmod" "$src/uapi/linux" "$src/tools/rdmaxfer" "$src/tools/lib/rdmaxfer" \
	"$src/Documentation/man"
cp "$TOP/Kbuild" "$TOP/Makefile" "$src/"
cp "$TOP"/kmod/Kbuild "$TOP"/kmod/*.[ch] "$src/kmod/"
rm -f "$src"/kmod/*.mod.c
cp "$TOP/uapi/linux/rdmaxfer.h" "$src/uapi/linux/"
cp "$TOP"/tools/rdmaxfer/Makefile "$TOP"/tools/rdmaxfer/*.[ch] "$src/tools/rdmaxfer/"
cp "$TOP"/tools/lib/rdmaxfer/*.[ch] "$src/tools/lib/rdmaxfer/"
cp "$TOP"/Documentation/man/rdmaxfer.[48] "$src/Documentation/man/"
# the upstream part, before debian/ joins it; reproducible from the tree
tar -C "$OUT" --sort=name --owner=0 --group=0 --numeric-owner \
	--mtime="@$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || echo 0)" \
	-cJf "$OUT/rdmaxfer_$ver.orig.tar.xz" "rdmaxfer-$ver"
cp -r "$PKG_DIR/debian" "$src/debian"
cp "$PKG_DIR/dkms.conf" "$src/debian/rdmaxfer-dkms.dkms"
cp "$PKG_DIR/60-rdmaxfer.rules" "$src/debian/rdmaxfer.udev"
# the packages' version is the tree's; the date that of the last commit if any
date=$(git -C "$TOP" log -1 --format=%cD 2>/dev/null || date -R)
cat >"$src/debian/changelog" <<EOT
rdmaxfer ($ver-1) unstable; urgency=medium

  * Built from the rdmaxfer tree ($(git -C "$TOP" describe --always --dirty 2>/dev/null || echo "not a git tree")).

 -- The rdmaxfer developers <rdmaxfer@example.org>  $date
EOT
say "building rdmaxfer $ver in $src"
(cd "$src" && dpkg-buildpackage -us -uc) >"$OUT/build.log" 2>&1 ||
	{ tail -n 30 "$OUT/build.log" >&2; die "dpkg-buildpackage failed (log: $OUT/build.log)"; }
ls "$OUT"/rdmaxfer_"$ver"-1.dsc "$OUT"/rdmaxfer-dkms_"$ver"-1_all.deb "$OUT"/rdmaxfer_"$ver"-1_*.deb
