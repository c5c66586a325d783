#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# two_host.sh - guest A of the two-guest test: write, read and send with
# --verify to `rdmaxfer serve` in guest B (peer.sh: 4 MiB window preloaded
# with gen_input's 2 MiB of text), over IPv4 and IPv6, at sizes around
# pages, the 2 MiB MR limit of rxe and the window (larger writes go in
# rounds), and to B's keyed serve with the pair's key (and refused without
# it, or with another), with the CONNECT times with and without the key
# printed.  B may still be booting when this starts: the first send is
# retried for a while.
dir=$(dirname "$0")
if [ -r "$dir/lib.sh" ]; then
	# shellcheck source=../lib.sh
	. "$dir/lib.sh"
else
	# shellcheck source=../lib.sh
	. "$dir/../lib.sh"
fi

command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
command -v jq >/dev/null || ktap_skip_all "jq is not installed"
[ -n "$RIG_PEER_ADDR" ] || ktap_skip_all "not in a two-guest rig (RIG_PEER_ADDR is not set)"

PEER=$RIG_PEER_ADDR
PEER6=$RIG_PEER_ADDR6
WINDOW=4194304
PIN=18517	# peer.sh: the --in window, never written
PKEY=18518	# peer.sh: only for clients with the pair's key
PNONE=18599	# nobody listens here
HELPER=$dir/xfer_helper
[ -x "$HELPER" ] || HELPER=$dir/../xfer_helper

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The same as peer.sh's.
gen_input()
{
	seq 1 400000 | head -c 2097152
}

# The same as peer.sh's.
pair_key()
{
	printf '%s' 'rdmaxfer two-guest test key 32 B'
}

# write_ok NAME LEN ARGS...: `rdmaxfer write ARGS` exits 0, "wrote LEN bytes ..., verified".
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

ktap_plan 13
gen_input >"$tmp/in"

# B boots in parallel: retry while its server is not there yet
i=0
while :; do
	run hello rdmaxfer send "$PEER" --message "hello from ${RIG_SELF_ADDR:-A}"
	[ $rc -eq 0 ] && break
	i=$((i + 1))
	[ $i -ge 60 ] && break
	sleep 2
done
[ $rc -eq 0 ]
r=$?
[ $r -eq 0 ] || { ktap_diag "B never answered (last exit $rc)"; show hello.err; }
ktap_result "peer_reachable" $r
[ $r -eq 0 ] || {
	for t in write_sizes write_rounds write_file read_in read_unaligned json ipv6 send_file \
		 bandwidth_64m refused key_write key_refused; do
		ktap_skip "$t" "peer not reachable"
	done
	ktap_finish
}

r=0
for n in 1 4095 4097 2097151 2097152 2097153 $WINDOW; do
	if ! write_ok w$n $n "$PEER" --size $n --verify; then
		ktap_diag "write --size $n (exit $rc)"
		show w$n.out w$n.err
		r=1
	fi
done
ktap_result "write_sizes" $r

# five pipelined rounds of half the 4 MiB window (the last one byte)
write_ok rounds $((2 * WINDOW + 1)) "$PEER" --size $((2 * WINDOW + 1)) --verify &&
	grep -q ', 5 rounds, verified$' "$tmp/rounds.out"
r=$?
[ $r -eq 0 ] || show rounds.out rounds.err
ktap_result "write_rounds" $r

head -c 10485761 /dev/urandom >"$tmp/big"
write_ok big 10485761 "$PEER" --file "$tmp/big" --verify
r=$?
[ $r -eq 0 ] || show big.out big.err
ktap_result "write_file" $r

# B's read-only window (port $PIN) starts with gen_input's bytes, then zeros
run rin rdmaxfer read "$PEER" --port $PIN --size 2M --out "$tmp/rin.data" --verify
[ $rc -eq 0 ] && cmp -s "$tmp/in" "$tmp/rin.data"
r=$?
[ $r -eq 0 ] || show rin.out rin.err
ktap_result "read_in" $r

run run1 rdmaxfer read "$PEER" --port $PIN --size 8193 --offset 2093055 --verify
{ tail -c 4097 "$tmp/in"; head -c 4096 /dev/zero; } >"$tmp/run1.want"
[ $rc -eq 0 ] && cmp -s "$tmp/run1.want" "$tmp/run1.out"
r=$?
[ $r -eq 0 ] || show run1.err
ktap_result "read_unaligned" $r

run jw rdmaxfer write "$PEER" --size 4M --verify --json
rw=$rc
run jr rdmaxfer read "$PEER" --size 4M --out "$tmp/jr.data" --verify --json
[ $rw -eq 0 ] && [ $rc -eq 0 ] &&
	jq -e '.bytes == 4194304 and .seconds > 0 and .mib_per_s > 0 and .verified' "$tmp/jw.out" >/dev/null &&
	jq -e '.bytes == 4194304 and .seconds > 0 and .mib_per_s > 0 and .verified' "$tmp/jr.out" >/dev/null
r=$?
if [ $r -eq 0 ]; then
	ktap_diag "4 MiB between guests: write $(jq .mib_per_s "$tmp/jw.out") MiB/s, read $(jq .mib_per_s "$tmp/jr.out") MiB/s"
else
	show jw.out jw.err jr.out jr.err
fi
ktap_result "json" $r

if [ -n "$PEER6" ]; then
	r=0
	write_ok w6 2097153 "$PEER6" --size 2097153 --verify || { show w6.out w6.err; r=1; }
	run r6 rdmaxfer read "$PEER6" --port $PIN --size 4097 --offset 1 --out "$tmp/r6.data" --verify
	tail -c +2 "$tmp/in" | head -c 4097 >"$tmp/r6.want"
	[ $rc -eq 0 ] && cmp -s "$tmp/r6.want" "$tmp/r6.data" || { show r6.out r6.err; r=1; }
	run s6 rdmaxfer send "$PEER6" --message "hello over IPv6"
	[ $rc -eq 0 ] || { show s6.out s6.err; r=1; }
	ktap_result "ipv6" $r
else
	ktap_skip "ipv6" "RIG_PEER_ADDR6 is not set"
fi

run sf rdmaxfer send "$PEER" --file "$tmp/in" --json
[ $rc -eq 0 ] && jq -e '.bytes == 2097152 and .messages >= 1' "$tmp/sf.out" >/dev/null
r=$?
[ $r -eq 0 ] || show sf.out sf.err
ktap_result "send_file" $r

# 64 MiB in one round each way (peer.sh's port 18516), without --verify:
# the numbers of the transport; they are reported, not judged
run bw_w rdmaxfer write "$PEER" --port 18516 --size 64M --json
rw=$rc
run bw_r rdmaxfer read "$PEER" --port 18516 --size 64M --out /dev/null --json
[ $rw -eq 0 ] && [ $rc -eq 0 ] &&
	jq -e '.bytes == 67108864 and .mib_per_s > 0' "$tmp/bw_w.out" >/dev/null &&
	jq -e '.bytes == 67108864 and .mib_per_s > 0' "$tmp/bw_r.out" >/dev/null
r=$?
if [ $r -eq 0 ]; then
	ktap_diag "64 MiB between guests: write $(jq .mib_per_s "$tmp/bw_w.out") MiB/s, read $(jq .mib_per_s "$tmp/bw_r.out") MiB/s"
else
	show bw_w.out bw_w.err bw_r.out bw_r.err
fi
ktap_result "bandwidth_64m" $r

run refused rdmaxfer write "$PEER" --port $PNONE --size 1
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/refused.err")" -eq 1 ] && grep -q refused "$tmp/refused.err"
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show refused.err; }
ktap_result "refused" $r

# B's keyed serve: a write with the pair's key; none, or another, is refused
pair_key >"$tmp/pair.key"
head -c 32 /dev/urandom >"$tmp/other.key"
write_ok kw 2097153 "$PEER" --port $PKEY --size 2097153 --verify --key-file "$tmp/pair.key"
r=$?
[ $r -eq 0 ] || show kw.out kw.err
ktap_result "key_write" $r

r=0
run knone rdmaxfer write "$PEER" --port $PKEY --size 1
[ $rc -eq 1 ] && grep -q 'requires a key' "$tmp/knone.err" || { show knone.err; r=1; }
run kother rdmaxfer write "$PEER" --port $PKEY --size 1 --key-file "$tmp/other.key"
[ $rc -eq 1 ] && grep -q 'does not hold our key' "$tmp/kother.err" || { show kother.err; r=1; }
ktap_result "key_refused" $r

# what the handshake adds to connection setup between two guests (reported)
if [ -x "$HELPER" ]; then
	run ct_plain "$HELPER" conntime "$PEER" 18516 20 -
	run ct_key "$HELPER" conntime "$PEER" $PKEY 20 "$tmp/pair.key"
	ktap_diag "CONNECT between guests, without a key: $(tail -n1 "$tmp/ct_plain.out")"
	ktap_diag "CONNECT between guests, with a key:    $(tail -n1 "$tmp/ct_key.out")"
fi

ktap_finish
