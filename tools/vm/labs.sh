#!/usr/bin/env bash
# labs.sh - run the course labs (Documentation/labs/) in the rig's guest and plot them.
#
#   tools/vm/labs.sh [N ...]     run labs N (1-7; default: all), one guest boot per lab,
#                                then plot everything there is data for
#   tools/vm/labs.sh --plot      only plot again from build/labs/ (no guest)
#
# Each lab is tools/vm/guest/lab-N.sh, run in the guest with
#   tools/vm/rig.sh run -- 'bash /usr/lib/rig/lab-N.sh'
# Its output (commentary + "### DATA name" ... "### END" blocks) is shown live and saved:
#   build/labs/N/output.txt       everything the lab printed
#   build/labs/N/NAME.dat         each data block (a "# columns" header, then rows)
#   build/labs/*.png              the plots (gnuplot, tools/vm/plots/*.gp):
#     regcost-vs-size.png (lab 2), latency-cdf.png (3), bw-vs-size.png (4), mtu.png and
#     conns.png (5)
# Exit status: 0 when every lab ran without a "### FAIL" and every plot was drawn.
#
# Environment: LAB_SECS (s per bandwidth point, default 2), LAB_COUNT (round trips per
# latency series, default 2000), LAB_SIZE (bytes per round trip in lab 3, default 64),
# LAB_REPS (regbench repetitions per size, default 9), LABS_OUT (default
# <repo>/build/labs), LAB_TIMEOUT (s per boot, default 900); rig.sh's own (RIG_SMP, ...).
# Needs a stage (make stage) and gnuplot (Debian: gnuplot-nox; rig.sh setup installs it).
set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
RIG=$VM_DIR/rig.sh
PLOTS=$VM_DIR/plots
OUT=${LABS_OUT:-$REPO/build/labs}
LAB_SECS=${LAB_SECS:-2}
LAB_COUNT=${LAB_COUNT:-2000}
LAB_REPS=${LAB_REPS:-9}
LAB_TIMEOUT=${LAB_TIMEOUT:-900}
ALL_LABS=(1 2 3 4 5 6 7)

say() { echo "labs: $*" >&2; }
# shellcheck source=tools/vm/plots/lib.sh
. "$PLOTS/lib.sh"
die() { echo "labs: error: $*" >&2; exit 2; }

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "${1:-0}"
}

LAB_SIZE=${LAB_SIZE:-64}
for v in LAB_SECS LAB_COUNT LAB_REPS LAB_TIMEOUT LAB_SIZE; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number"
done

# run_lab N: one guest boot; 0 when the lab finished without failures
run_lab() {
    local n=$1 dir=$OUT/$1 rc=0
    [[ -e $VM_DIR/guest/lab-$n.sh ]] || die "no lab $n (tools/vm/guest/lab-$n.sh)"
    rm -rf "$dir"
    mkdir -p "$dir"
    say "lab $n: booting the guest (output: ${dir#"$REPO"/}/output.txt)"
    "$RIG" run --timeout "$LAB_TIMEOUT" -- \
        "LAB_SECS=$LAB_SECS LAB_COUNT=$LAB_COUNT LAB_REPS=$LAB_REPS LAB_SIZE=$LAB_SIZE bash /usr/lib/rig/lab-$n.sh" |
        tee "$dir/output.txt" || rc=$?
    extract "$dir/output.txt" "$dir"
    if ((rc)); then say "lab $n: exit status $rc"; fi
    return "$rc"
}

# lab_plot NAME GP-FILE: build/labs/NAME.png from the .dat files, when the lab's data is there
lab_plot() { plot "$OUT" "$OUT/$1.png" "$2"; }

plot_all() {
    local rc=0
    [[ -s $OUT/2/regbench.dat ]] && { lab_plot regcost-vs-size regcost-vs-size.gp || rc=1; }
    compgen -G "$OUT/3/cdf-*.dat" >/dev/null && { lab_plot latency-cdf latency-cdf.gp || rc=1; }
    compgen -G "$OUT/4/bw-*.dat" >/dev/null && { lab_plot bw-vs-size bw-vs-size.gp || rc=1; }
    [[ -s $OUT/5/mtu.dat ]] && { lab_plot mtu mtu.gp || rc=1; }
    [[ -s $OUT/5/conns.dat ]] && { lab_plot conns conns.gp || rc=1; }
    return "$rc"
}

labs=()
plot_only=0
while (($#)); do
    case $1 in
    -h | --help) usage ;;
    --plot) plot_only=1 ;;
    [1-9]) labs+=("$1") ;;
    *) echo "labs: unknown argument: $1" >&2; usage 2 >&2 ;;
    esac
    shift
done
((${#labs[@]})) || labs=("${ALL_LABS[@]}")

mkdir -p "$OUT"
failed=()
if ((!plot_only)); then
    t0=$SECONDS
    for n in "${labs[@]}"; do
        run_lab "$n" || failed+=("lab $n")
    done
    say "guest time: $((SECONDS - t0)) s"
fi
plot_all || failed+=(plots)
if ((${#failed[@]})); then
    say "failed: ${failed[*]}"
    exit 1
fi
say "done: ${OUT#"$REPO"/}"
