#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_regbench.sh - `rdmaxfer regbench` on one RDMA device: its JSON parses,
# has one row per requested size with every number positive, pages ==
# size / 4096, the per-page cost is the total divided by the pages, a size
# above the window limit is exposed as several windows; the table prints;
# with HOST the windows are advertised to a `serve` there and it says so;
# usage errors exit 2 with one line; and afterwards nothing stays pinned
# (the kernel's FOLL_PIN counters balance) and no connection, listener, QP
# or PD of rdmaxfer is left.  Timings themselves are not judged.
. "$(dirname "$0")/lib.sh"

command -v rdma >/dev/null || ktap_skip_all "the rdma tool (iproute2) is not installed"
rdmaxfer_setup_cli

tmp=$(mktemp -d)
at_exit 'rm -rf "$tmp"'

# pins_outstanding: FOLL_PIN pages acquired but not released, system-wide
# (stat_refresh folds the per-CPU deltas first, so the numbers are exact)
pins_outstanding()
{
	echo 1 >/proc/sys/vm/stat_refresh 2>/dev/null
	awk '/^nr_foll_pin_acquired /{a=$2} /^nr_foll_pin_released /{r=$2}
		END{print a - r}' /proc/vmstat
}

# rdma_objects: RC QPs, and cm_ids and PDs of rdmaxfer, on every device
rdma_objects()
{
	echo "qp $(rdma res show qp 2>/dev/null | grep -c ' type RC ')" \
		"cm_id $(rdma res show cm_id 2>/dev/null | grep -c 'comm \[rdmaxfer\]')" \
		"pd $(rdma res show pd 2>/dev/null | grep -c 'comm \[rdmaxfer\]')"
}

pins0=$(pins_outstanding)
objs0=$(rdma_objects)
rdmaxfer stats --json >"$tmp/stats0.json"

ktap_plan 11

SIZES=4K,16K,1M,4M
run main rdmaxfer regbench --device "$DEV" --sizes $SIZES --reps 3 --json
[ $rc -eq 0 ] && [ ! -s "$tmp/main.err" ] &&
	jq -e -s --arg dev "$DEV" 'length == 1 and (.[0] | .device == $dev and .peer == "loopback" and
		(.rows | length) == 4 and
		([.rows[].size] == [4096, 16384, 1048576, 4194304]))' "$tmp/main.out" >/dev/null
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show main.out main.err; }
ktap_result "json_one_row_per_size" $r

# every row measured, with every field there and positive
jq -e '.rows | all(.[]; (has("skipped") or has("ibv_skipped")) | not) and
	all(.[]; . as $r | ["size", "pages", "reg_us", "expose_us", "kernel_total_us",
		"kernel_per_page_ns", "revoke_us", "dereg_us", "ibv_reg_mr_us",
		"ibv_per_page_ns", "ibv_dereg_mr_us"] |
		all(.[]; ($r[.] | type) == "number" and $r[.] > 0)) and
	all(.[] | to_entries[] | select(.value | type == "number"); .value > 0)' \
	"$tmp/main.out" >/dev/null
r=$?
[ $r -eq 0 ] || show main.out
ktap_result "all_numbers_positive" $r

jq -e '.page_size == 4096 and all(.rows[]; .pages == .size / 4096)' "$tmp/main.out" >/dev/null
r=$?
[ $r -eq 0 ] || show main.out
ktap_result "pages_are_size_over_4096" $r

# per page = total / pages, up to the rounding of the printed numbers
jq -e 'def close(a; b): ((a - b) | fabs) <= 0.001 + 1e-6 * (b | fabs);
	all(.rows[]; close(.kernel_per_page_ns; .kernel_total_us * 1000 / .pages) and
		close(.ibv_per_page_ns; .ibv_reg_mr_us * 1000 / .pages))' \
	"$tmp/main.out" >/dev/null
r=$?
[ $r -eq 0 ] || show main.out
ktap_result "per_page_is_total_over_pages" $r

# larger than one window (Soft-RoCE: about 508 MiB): several windows, summed
run multi rdmaxfer regbench --device "$DEV" --sizes 600M --reps 1 --json
if [ $rc -eq 0 ] && jq -e '.rows[0].skipped' "$tmp/multi.out" >/dev/null; then
	ktap_skip "several_windows" "$(jq -r '.rows[0].skipped' "$tmp/multi.out")"
else
	[ $rc -eq 0 ] && jq -e '.max_window_size > 0 and .max_window_size < 629145600 and
		(.rows[0] | .size == 629145600 and .expose_us > 0 and .revoke_us > 0 and
		 .windows == ((629145600 + $m - 1) / $m | floor))' \
		--argjson m "$(jq '.max_window_size' "$tmp/multi.out")" \
		"$tmp/multi.out" >/dev/null
	r=$?
	[ $r -eq 0 ] || { ktap_diag "exit $rc"; show multi.out multi.err; }
	ktap_result "several_windows" $r
fi

run human rdmaxfer regbench --device "$DEV" --sizes 4K,64K --reps 1
[ $rc -eq 0 ] && [ ! -s "$tmp/human.err" ] &&
	grep -q "^regbench on $DEV (" "$tmp/human.out" &&
	grep -q ' size .* pages .* reg_us .* expose_us .* total_us .* ibv_reg_us' "$tmp/human.out" &&
	grep -q '^ *4 KiB  *1  *1 | *[0-9.]* ' "$tmp/human.out" &&
	grep -q '^ *64 KiB  *16  *1 | *[0-9.]* ' "$tmp/human.out" &&
	[ "$(wc -l <"$tmp/human.out")" -eq 5 ]
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show human.out human.err; }
ktap_result "human_table" $r

# HOST: one connection to a serve, whose host gets each EXPOSE's ADVERT
PORT=18630
serve srv --port $PORT
run peer rdmaxfer regbench "$ADDR" --port $PORT --sizes 4K,1M --reps 3 --json
r=1
[ $rc -eq 0 ] && [ ! -s "$tmp/peer.err" ] &&
	jq -e --arg dev "$DEV" --arg port " port $PORT" '.peer == "serve" and .device == $dev and
		(.address | endswith($port)) and [.rows[].size] == [4096, 1048576] and
		all(.rows[]; .windows == 1 and .expose_us > 0 and .kernel_total_us > 0 and
			.revoke_us > 0 and .ibv_reg_mr_us > 0)' "$tmp/peer.out" >/dev/null &&
	r=0
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show peer.out peer.err; }
stop srv
[ $r -eq 0 ] && [ $rc -eq 0 ] && serve_quiet srv
r=$?
[ $r -eq 0 ] || show srv.log srv.err
ktap_result "to_a_serve" $r

r=0
while read -r args; do
	# shellcheck disable=SC2086 # split on purpose
	run usage rdmaxfer regbench $args
	if [ $rc -ne 2 ] || ! one_error_line usage '.' || [ -s "$tmp/usage.out" ]; then
		ktap_diag "'rdmaxfer regbench $args' exited $rc"
		show usage.out usage.err
		r=1
	fi
done <<EOF
--sizes
--sizes 0
--sizes 4K,
--sizes ,4K
--sizes 4K,,1M
--sizes 1x
--sizes -4K
--sizes 4K;1M
--reps 0
--reps many
--bind nowhere
--bind $ADDR --device $DEV
$ADDR --bind $ADDR
$ADDR extra
--key-file /nonexistent
--bogus
extra
EOF
ktap_result "usage_errors_exit_2" $r

run nodev rdmaxfer regbench --device nosuchdev0 --sizes 4K
[ $rc -eq 1 ] && one_error_line nodev 'nosuchdev0' && [ ! -s "$tmp/nodev.out" ]
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show nodev.out nodev.err; }
ktap_result "unknown_device_exit_1" $r

pins1=$(pins_outstanding)
[ "$pins1" = "$pins0" ]
r=$?
[ $r -eq 0 ] || ktap_diag "pinned pages outstanding: $pins0 before, $pins1 after"
ktap_result "nothing_stays_pinned" $r

# the loopback connections were made (both ends count) and all went away
objs1=$(rdma_objects)
rdmaxfer stats --json >"$tmp/stats1.json"
[ "$objs1" = "$objs0" ] &&
	jq -e -s '.[0].global as $a | .[1].global as $b |
		$b.conns >= $a.conns + 2 and $b.conn_errors == $a.conn_errors and
		$b.protocol_errors == $a.protocol_errors' \
		"$tmp/stats0.json" "$tmp/stats1.json" >/dev/null
r=$?
[ $r -eq 0 ] || { ktap_diag "before: $objs0" "after:  $objs1"; show stats0.json stats1.json; }
ktap_result "no_connection_left" $r

ktap_finish
