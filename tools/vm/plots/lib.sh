# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# plots/lib.sh - what tools/vm/labs.sh and tools/vm/bench.sh share: the "### DATA name"
# ... "### END" blocks of a guest's output into .dat files, and gnuplot over them
# (plots/*.gp load common.gp).  The caller sets PLOTS (this directory), REPO and say().

# extract FILE DIR: each "### DATA name" ... "### END" block of FILE -> DIR/name.dat
extract() {
    awk -v dir="$2" '
        /^### DATA / { f = dir "/" $3 ".dat"; printf "" > f; next }
        /^### END/ { if (f) close(f); f = ""; next }
        f { print > f }' "$1"
}

# plot DATA-DIR PNG GP-FILE: draw PNG with plots/GP-FILE, which reads its .dat files
# under DATA-DIR (gnuplot variables d, out and dir)
plot() {
    local d=$1 png=$2 gp=$PLOTS/$3
    command -v gnuplot >/dev/null || { say "no gnuplot (apt-get install gnuplot-nox): no ${png##*/}"; return 1; }
    if gnuplot -e "d='$d'; out='$png'; dir='$PLOTS/'" "$gp" 2>"${png%.png}.gnuplot.log"; then
        say "plot: ${png#"$REPO"/}"
    else
        say "gnuplot failed for ${png##*/}:"
        cat "${png%.png}.gnuplot.log" >&2
        return 1
    fi
}
