# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# rig/results.sh - reading a guest's KTAP (kselftest's runner.sh output) into leaf
# results, the diagnostics of failures, kernel-log problems and the summary line.
# Sourced by tools/vm/rig.sh, which sets the configuration and say()/die().

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
    cur != "" && /^# / {
        block = block $0 "\n"; l = substr($0, 3)
        if (l ~ /^(not )?ok /) {
            k = kind(l); count(k); nsub++; if (k == "fail") nfail++
            print "  " cur ": " l
        }
        next
    }
    cur != "" && /^(not )?ok [0-9]+ / {
        k = kind($0)
        sub(/ selftests: [^:]*: /, " ")
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
