#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_xfer.sh - `rdmaxfer serve | write | read | send | stats` in one guest
# (both ends on one RDMA device): bytes arrive intact (--verify and cmp) at sizes around
# page and window boundaries, a file larger than the window goes in rounds,
# serve's one window is shared by all connections (a read returns what an
# earlier write left; concurrent writers to disjoint ranges both land),
# --in/--out, messages, IPv6, JSON output, and the error contract (does not
# fit, refused -> exit 1 with one line; usage -> exit 2).
. "$(dirname "$0")/lib.sh"

rdmaxfer_setup_cli

HOST=$ADDR
HOST6=$ADDR6
P1=18515	# serve --size 1M --out: writes
P2=18516	# serve --size 2M --in: reads
P3=18517	# serve: messages on stdout
P4=18518	# serve --json --count 2
P5=18519	# serve --size 4M --out: read after write
P6=18520	# serve --size 12289 --out: rounds of whole pages
P7=18521	# serve --size 5000 --out: too small for pipelined rounds
P8=18522	# serve --size 40M --in: reads in several pieces
PNONE=18599	# nobody listens here

tmp=$(mktemp -d)
pids=""
cleanup()
{
	for _p in $pids; do kill "$_p" 2>/dev/null; done
	rm -rf "$tmp"
}
at_exit cleanup

# serve NAME ARGS... and stop NAME: see lib.sh.

# finished NAME: wait (up to 30 s) for a --count server to exit; sets $rc.
finished()
{
	_p=$(cat "$tmp/$1.pid")
	_i=0
	while kill -0 "$_p" 2>/dev/null && [ $_i -lt 300 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	kill -0 "$_p" 2>/dev/null && kill "$_p"
	wait "$_p"
	rc=$?
}

# write_ok NAME LEN ARGS...: `rdmaxfer write ARGS` exits 0 and says
# "wrote LEN bytes ..., verified".
write_ok()
{
	_n=$1
	_len=$2
	shift 2
	run "$_n" rdmaxfer write "$@"
	[ $rc -eq 0 ] && [ ! -s "$tmp/$_n.err" ] &&
		grep -q "^wrote $_len bytes in [0-9.]* s ([0-9.]* MiB/s)\(, [0-9]* rounds\)*, verified\$" \
			"$tmp/$_n.out"
}

ktap_plan 26

# --- writes into a 1 MiB window, saved to --out ---------------------------
serve s1 --port $P1 --size 1M --out "$tmp/s1.data"
r=$?
[ $r -eq 0 ] || show s1.log s1.err
ktap_result "serve_listens" $r

# sizes around pages and the window (1M + 1 goes in three pipelined rounds)
r=0
for n in 1 4095 4096 4097 1048575 1048576 1048577; do
	head -c $n /dev/urandom >"$tmp/w$n"
	if ! write_ok w$n $n $HOST --port $P1 --file "$tmp/w$n" --verify ||
	   ! cmp -s "$tmp/w$n" "$tmp/s1.data"; then
		ktap_diag "write --file of $n bytes (exit $rc)"
		show w$n.out w$n.err
		ktap_diag "$(ls -l "$tmp/w$n" "$tmp/s1.data")"
		r=1
	fi
done
ktap_result "write_file_verify_sizes" $r

# more than the window goes in rounds of half of it, alternating between
# its halves (proto.h, pipelined rounds): 512 KiB, 512 KiB, 1 byte
write_ok w2rounds 1048577 $HOST --port $P1 --file "$tmp/w1048577" --verify &&
	grep -q ', 3 rounds, verified$' "$tmp/w2rounds.out"
r=$?
[ $r -eq 0 ] || show w2rounds.out w2rounds.err
ktap_result "write_pipelined_rounds" $r

# 10 MiB through the 1 MiB window: twenty rounds, each verified and saved
head -c 10485760 /dev/urandom >"$tmp/big"
write_ok big 10485760 $HOST --port $P1 --file "$tmp/big" --verify &&
	grep -q ', 20 rounds, verified$' "$tmp/big.out" && cmp -s "$tmp/big" "$tmp/s1.data"
r=$?
[ $r -eq 0 ] || show big.out big.err s1.err
ktap_result "write_file_larger_than_window" $r

# windows that are not a multiple of two pages: rounds of whole pages below
# half the window (12289: 4096-byte rounds), and a window too small for two
# (5000: one round of 5000 at a time); odd and even round counts, the last
# round short; --out must be the file
serve s6 --port $P6 --size 12289 --out "$tmp/s6.data"
serve s7 --port $P7 --size 5000 --out "$tmp/s7.data"
r=0
for c in "$P6 12290 4" "$P6 20480 5" "$P6 24577 7" "$P6 28673 8" "$P7 12000 3" \
	 "$P7 20000 4"; do
	set -- $c
	head -c "$2" /dev/urandom >"$tmp/odd"
	_out=$tmp/s6.data
	[ "$1" = $P7 ] && _out=$tmp/s7.data
	if ! write_ok odd "$2" $HOST --port "$1" --file "$tmp/odd" --verify ||
	   ! grep -q ", $3 rounds, verified\$" "$tmp/odd.out" || ! cmp -s "$tmp/odd" "$_out"; then
		ktap_diag "write of $2 bytes through port $1: want $3 rounds (exit $rc)"
		show odd.out odd.err
		r=1
	fi
done
[ $r -eq 0 ] || show s6.err s7.err
stop s6
stop s7
ktap_result "write_rounds_odd_windows" $r

# the pattern of --size, at an offset: --out holds the window up to the end;
# the window is shared, so its first 1000 bytes are still those of the last
# round of the 10 MiB file
tail -c 1048576 "$tmp/big" | head -c 1000 >"$tmp/pat.head"
write_ok pat 4097 $HOST --port $P1 --size 4097 --offset 1000 --verify &&
	[ "$(wc -c <"$tmp/s1.data")" -eq 5097 ] &&
	head -c 1000 "$tmp/s1.data" | cmp -s "$tmp/pat.head" -
r=$?
[ $r -eq 0 ] || show pat.out pat.err
ktap_result "write_pattern_at_offset" $r

write_ok w6 4097 $HOST6 --port $P1 --file "$tmp/w4097" --verify &&
	cmp -s "$tmp/w4097" "$tmp/s1.data"
r=$?
[ $r -eq 0 ] || show w6.out w6.err
ktap_result "write_ipv6" $r

run wjson rdmaxfer write $HOST --port $P1 --size 1M --verify --json
[ $rc -eq 0 ] && jq -e -s 'length == 1 and (.[0] | .bytes == 1048576 and .seconds > 0 and
	.mib_per_s > 0 and .verified == true and .op == "write")' "$tmp/wjson.out" >/dev/null
r=$?
[ $r -eq 0 ] || show wjson.out wjson.err
ktap_result "write_json" $r

# two clients at once into disjoint halves of the shared window: both land,
# and a third connection reads them back side by side
head -c 524288 /dev/urandom >"$tmp/c1.data"
head -c 524288 /dev/urandom >"$tmp/c2.data"
rdmaxfer write $HOST --port $P1 --file "$tmp/c1.data" --verify >"$tmp/c1.out" 2>&1 &
c1=$!
rdmaxfer write $HOST6 --port $P1 --file "$tmp/c2.data" --offset 512K --verify >"$tmp/c2.out" 2>&1 &
c2=$!
wait $c1
r1=$?
wait $c2
r2=$?
run c3 rdmaxfer read $HOST --port $P1 --size 1M --out "$tmp/c3.data" --verify
cat "$tmp/c1.data" "$tmp/c2.data" >"$tmp/c3.want"
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $rc -eq 0 ] && cmp -s "$tmp/c3.want" "$tmp/c3.data"
r=$?
[ $r -eq 0 ] || { ktap_diag "exits $r1 $r2 $rc"; show c1.out c2.out c3.out c3.err; }
ktap_result "concurrent_writes" $r

run nofit rdmaxfer write $HOST --port $P1 --size 2 --offset 1M --verify
[ $rc -eq 1 ] && one_error_line nofit 'does not fit' && [ ! -s "$tmp/nofit.out" ]
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show nofit.out nofit.err; }
ktap_result "write_does_not_fit_exit_1" $r

run rnofit rdmaxfer read $HOST --port $P1 --size 1M --offset 1 --out "$tmp/rnofit.data"
[ $rc -eq 1 ] && one_error_line rnofit 'does not fit'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show rnofit.out rnofit.err; }
ktap_result "read_does_not_fit_exit_1" $r

stop s1
[ $rc -eq 0 ] && serve_quiet s1 &&
	[ "$(grep -c '^connection [0-9]* from ' "$tmp/s1.log")" -ge 14 ]
r=$?
[ $r -eq 0 ] || { ktap_diag "serve exited $rc"; show s1.log s1.err; }
ktap_result "serve_sigterm_exit_0" $r

# --- reads of a window preloaded with --in ------------------------------
head -c 1572864 /dev/urandom >"$tmp/in"
serve s2 --port $P2 --size 2M --in "$tmp/in"
r=0
run r1 rdmaxfer read $HOST --port $P2 --size 1536K --out "$tmp/r1.data" --verify
if [ $rc -ne 0 ] || ! cmp -s "$tmp/in" "$tmp/r1.data" ||
   ! grep -q '^read 1572864 bytes in .*, verified$' "$tmp/r1.out"; then
	show r1.out r1.err
	r=1
fi
# unaligned offset and length, to stdout (the summary then goes to stderr)
run r2 rdmaxfer read $HOST6 --port $P2 --size 4097 --offset 4095 --verify
dd if="$tmp/in" of="$tmp/r2.want" bs=4095 skip=1 count=2 2>/dev/null
head -c 4097 "$tmp/r2.want" >"$tmp/r2.want1"
if [ $rc -ne 0 ] || ! cmp -s "$tmp/r2.want1" "$tmp/r2.out" ||
   ! grep -q '^read 4097 bytes in .*, verified$' "$tmp/r2.err"; then
	show r2.err
	r=1
fi
ktap_result "read_in_file_verify" $r

# the whole window: --in, then zeros
run r3 rdmaxfer read $HOST --port $P2 --size 2M --out "$tmp/r3.data" --verify
{ cat "$tmp/in"; head -c 524288 /dev/zero; } >"$tmp/r3.want"
[ $rc -eq 0 ] && cmp -s "$tmp/r3.want" "$tmp/r3.data"
r=$?
[ $r -eq 0 ] || show r3.out r3.err
ktap_result "read_whole_window_zero_tail" $r

run rjson rdmaxfer read $HOST --port $P2 --size 1M --out "$tmp/rjson.data" --verify --json
[ $rc -eq 0 ] && jq -e -s 'length == 1 and (.[0] | .bytes == 1048576 and .seconds > 0 and
	.mib_per_s > 0 and .verified == true and .op == "read")' "$tmp/rjson.out" >/dev/null
r=$?
[ $r -eq 0 ] || show rjson.out rjson.err
ktap_result "read_json" $r
stop s2

# more than a piece (16 MiB) is read in pieces through two local halves, the
# next arriving while the last is written out: 16M + 16M + 8M; and 32M + 1
# from an odd offset (the last piece one byte)
head -c 41943040 /dev/urandom >"$tmp/in40"
serve s8 --port $P8 --size 40M --in "$tmp/in40"
r=0
run r40 rdmaxfer read $HOST --port $P8 --size 40M --out "$tmp/r40.data" --verify
if [ $rc -ne 0 ] || ! cmp -s "$tmp/in40" "$tmp/r40.data"; then
	show r40.out r40.err
	r=1
fi
run r32 rdmaxfer read $HOST --port $P8 --size 33554433 --offset 4097 --out "$tmp/r32.data" \
	--verify
tail -c +4098 "$tmp/in40" | head -c 33554433 >"$tmp/r32.want"
if [ $rc -ne 0 ] || ! cmp -s "$tmp/r32.want" "$tmp/r32.data" ||
   ! grep -q '^read 33554433 bytes in .*, verified$' "$tmp/r32.out"; then
	show r32.out r32.err
	r=1
fi
stop s8
rm -f "$tmp/in40" "$tmp/r40.data" "$tmp/r32.data" "$tmp/r32.want"
ktap_result "read_in_pieces" $r

# --- read after write: one window for all connections ---------------------
serve s5 --port $P5 --size 4M --out "$tmp/s5.data"
head -c 3145733 /dev/urandom >"$tmp/raw"	# 3 MiB + 5
write_ok raww 3145733 $HOST --port $P5 --file "$tmp/raw" --verify
r1=$?
run rawr rdmaxfer read $HOST --port $P5 --size 3145733 --out "$tmp/raw.back" --verify
r2=$rc
stop s5
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $rc -eq 0 ] && serve_quiet s5 &&
	grep -q '^read 3145733 bytes in .*, verified$' "$tmp/rawr.out" &&
	cmp -s "$tmp/raw" "$tmp/raw.back" && cmp -s "$tmp/raw" "$tmp/s5.data"
r=$?
[ $r -eq 0 ] || { ktap_diag "write $r1, read $r2, serve $rc"; show raww.out raww.err rawr.out rawr.err s5.log s5.err; }
ktap_result "read_after_write" $r

# --- messages ------------------------------------------------------------
serve s3 --port $P3
seq 1 100000 >"$tmp/text"
run m1 rdmaxfer send $HOST --port $P3 --message "hello from rdmaxfer"
r1=$rc
run m2 rdmaxfer send $HOST6 --port $P3 --file "$tmp/text"
r2=$rc
run m3 rdmaxfer send $HOST --port $P3 --message "json" --json
r3=$rc
{ echo "hello from rdmaxfer"; cat "$tmp/text"; echo json; } >"$tmp/m.want"
grep -v -e '^listening on ' -e '^connection [0-9]* from ' "$tmp/s3.log" >"$tmp/m.got"
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$tmp/m.want" "$tmp/m.got" &&
	grep -q '^sent 20 bytes in 1 message in ' "$tmp/m1.out"
r=$?
[ $r -eq 0 ] || { ktap_diag "send exited $r1 $r2"; show m1.out m1.err m2.out m2.err s3.err; }
ktap_result "send_printed_by_serve" $r

[ $r3 -eq 0 ] && jq -e -s 'length == 1 and (.[0] | .bytes == 5 and .messages == 1 and
	.seconds > 0 and .mib_per_s > 0)' "$tmp/m3.out" >/dev/null
r=$?
[ $r -eq 0 ] || show m3.out m3.err
ktap_result "send_json" $r
stop s3

# --- serve --json --count: one object at exit ----------------------------
serve s4 --port $P4 --size 64K --count 2 --json --out "$tmp/s4.data"
# --json prints nothing until the end: retry while the server is not up yet
i=0
while :; do
	run j1 rdmaxfer write $HOST --port $P4 --size 64K --verify
	[ $rc -eq 1 ] && grep -q refused "$tmp/j1.err" && [ $i -lt 20 ] || break
	i=$((i + 1))
	sleep 0.5
done
run j2 rdmaxfer send $HOST --port $P4 --message "to the file"
finished s4
[ $rc -eq 0 ] && jq -e -s 'length == 1 and (.[0] | .connections == 2 and
	.bytes_written == 65536 and .messages == 1)' "$tmp/s4.log" >/dev/null &&
	[ "$(tail -c 12 "$tmp/s4.data")" = "to the file" ]
r=$?
[ $r -eq 0 ] || { ktap_diag "serve exited $rc"; show j1.out j1.err j2.err s4.log s4.err; }
ktap_result "serve_json_count" $r

# --- errors --------------------------------------------------------------
run refused rdmaxfer write $HOST --port $PNONE --size 1
[ $rc -eq 1 ] && one_error_line refused 'refused'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show refused.out refused.err; }
ktap_result "connection_refused_exit_1" $r

head -c 70000 /dev/zero >"$tmp/toolarge"
run bigin rdmaxfer serve --port $PNONE --size 64K --in "$tmp/toolarge"
[ $rc -eq 1 ] && one_error_line bigin 'larger than the window'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show bigin.out bigin.err; }
ktap_result "serve_in_too_large_exit_1" $r

run nofile rdmaxfer write $HOST --port $PNONE --file "$tmp/does-not-exist"
[ $rc -eq 1 ] && one_error_line nofile 'cannot open'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show nofile.err; }
ktap_result "missing_file_exit_1" $r

r=0
while read -r args; do
	# shellcheck disable=SC2086 # split on purpose
	run usage rdmaxfer $args
	if [ $rc -ne 2 ] || ! one_error_line usage '.'; then
		ktap_diag "'rdmaxfer $args' exited $rc"
		show usage.err
		r=1
	fi
done <<EOF
write
write $HOST
write $HOST --size 1 --file /etc/passwd
write $HOST --size 0
write $HOST --size 1x
write $HOST --size 1 --port 70000
write not-an-address --size 1
write $HOST $HOST --size 1
write $HOST --size 1 --bogus
read $HOST
read $HOST --size 1 --json
read $HOST --size
send $HOST
send $HOST --message a --file /etc/passwd
serve --size 0
serve --count 0
serve --bind nowhere
serve extra
stats extra
stats --bogus
EOF
ktap_result "usage_errors_exit_2" $r

run stats rdmaxfer stats --json
# (a round that fits one operation goes as a single WRITE_IMM)
[ $rc -eq 0 ] && jq -e -s 'length == 1 and (.[0] | .global.ops.write_imm > 0 and
	.global.bytes.write_imm > 0 and .global.ops.read > 0 and .global.ops.send > 0 and
	.global.recv_msgs > 0 and .global.conns > 0 and .file.ops.write_imm == 0)' \
	"$tmp/stats.out" >/dev/null
r=$?
[ $r -eq 0 ] || show stats.out stats.err
ktap_result "stats_json" $r

run statsh rdmaxfer stats
[ $rc -eq 0 ] && grep -q '^write_imm ops  *[1-9]' "$tmp/statsh.out"
r=$?
[ $r -eq 0 ] || show statsh.out statsh.err
ktap_result "stats_human" $r

ktap_finish
