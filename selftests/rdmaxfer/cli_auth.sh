#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_auth.sh - who may connect to `rdmaxfer serve`, from the command line,
# in one guest: --key (a keyring description or serial), --key-file and
# --allow.  A client with the key gets in (write, read, ping, bench, atomic
# with --key); one without it, with another key, or outside the allow-list
# is refused with one error line that says which (exit 1); a server
# without a key says on stderr that anyone may reach its window; revoking
# the server's key refuses new clients and keeps the one connected; the
# usage errors (exit 2).  Keys are added with keyctl(1) to the session
# keyring, which serve and its clients share.
. "$(dirname "$0")/lib.sh"

rdmaxfer_setup_cli

command -v keyctl >/dev/null || ktap_skip_all "no keyctl (package keyutils)"
# a session keyring of this shell's own, which serve and the clients inherit
# (a login has one from pam_keyinit; a bare guest shell has none, and
# `keyctl padd ... @s` would make one that dies with keyctl)
keyctl new_session >/dev/null || ktap_skip_all "keyctl new_session failed"

HOST=$ADDR
P1=18530	# serve --key rdmaxfer:cli-a
P2=18531	# serve without a key
P3=18532	# serve --allow
P4=18533	# serve --key-file, --allow
P5=18534	# serve --key, revoked during a client's connection

tmp=$(mktemp -d)
pids=""
keys=""
cleanup()
{
	for _p in $pids; do kill "$_p" 2>/dev/null; done
	for _k in $keys; do keyctl unlink "$_k" @s >/dev/null 2>&1; done
	rm -rf "$tmp"
}
at_exit cleanup

# addkey NAME FILE: a logon key rdmaxfer:NAME with FILE's bytes in the
# session keyring; prints its serial.
addkey()
{
	_k=$(keyctl padd logon "rdmaxfer:$1" @s <"$2") || return 1
	keys="$keys $_k"
	echo "$_k"
}

head -c 32 /dev/urandom >"$tmp/a.key"
head -c 32 /dev/urandom >"$tmp/b.key"
head -c 8 /dev/urandom >"$tmp/short.key"
ka=$(addkey cli-a "$tmp/a.key")
addkey cli-b "$tmp/b.key" >/dev/null

ktap_plan 11

# --- a server with a key ----------------------------------------------------
serve s1 --port $P1 --size 1M --key rdmaxfer:cli-a
run w1 rdmaxfer write $HOST --port $P1 --size 64K --verify --key rdmaxfer:cli-a
[ $rc -eq 0 ] && grep -q ', verified$' "$tmp/w1.out" && ! grep -q 'no --key' "$tmp/s1.err"
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show w1.out w1.err s1.log s1.err; }
ktap_result "same_key_writes" $r

# the key by its serial, and through a file of the same bytes; read, ping, bench
r=0
run r1 rdmaxfer read $HOST --port $P1 --size 64K --verify --key "$ka" --out "$tmp/r1.data"
[ $rc -eq 0 ] || { ktap_diag "read --key SERIAL: exit $rc"; show r1.err; r=1; }
run r2 rdmaxfer read $HOST --port $P1 --size 64K --verify --key-file "$tmp/a.key" \
	--out "$tmp/r2.data"
[ $rc -eq 0 ] && cmp -s "$tmp/r1.data" "$tmp/r2.data" ||
	{ ktap_diag "read --key-file: exit $rc"; show r2.err; r=1; }
run p1 rdmaxfer ping $HOST --port $P1 --count 20 --key rdmaxfer:cli-a
[ $rc -eq 0 ] || { ktap_diag "ping --key: exit $rc"; show p1.out p1.err; r=1; }
run b1 rdmaxfer bench $HOST --port $P1 --op write --size 4K --iters 100 --key-file "$tmp/a.key"
[ $rc -eq 0 ] || { ktap_diag "bench --key-file: exit $rc"; show b1.out b1.err; r=1; }
ktap_result "key_by_serial_file_read_ping_bench" $r

run nokey rdmaxfer write $HOST --port $P1 --size 4K
[ $rc -eq 1 ] && one_error_line nokey 'requires a key'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show nokey.out nokey.err; }
ktap_result "no_key_refused_exit_1" $r

run wrong rdmaxfer write $HOST --port $P1 --size 4K --key rdmaxfer:cli-b
r=1
[ $rc -eq 1 ] && one_error_line wrong 'does not hold our key' && r=0
run wrongf rdmaxfer send $HOST --port $P1 --message hi --key-file "$tmp/b.key"
[ $rc -eq 1 ] && one_error_line wrongf 'does not hold our key' || r=1
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show wrong.err wrongf.err; }
ktap_result "wrong_key_refused_exit_1" $r

# nothing of the refused clients reached serve, and the module counted them
r=0
grep -q 'hi' "$tmp/s1.log" && { ktap_diag "a refused client's message was printed"; r=1; }
run st rdmaxfer stats --json
[ $rc -eq 0 ] && jq -e '.global.auth_failed >= 3 and .global.auth_ok >= 5' "$tmp/st.out" >/dev/null ||
	{ show st.out st.err; r=1; }
ktap_result "refused_clients_reach_nothing_counted" $r

# --- a server without a key: says so, and a client with one is refused -------
serve s2 --port $P2 --size 1M
run w2 rdmaxfer write $HOST --port $P2 --size 4K --key rdmaxfer:cli-a
[ $rc -eq 1 ] && one_error_line w2 'server has none' &&
	grep -q '^rdmaxfer: warning: no --key: any host that can reach this port can read and write the window' \
		"$tmp/s2.err"
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show w2.err s2.err; }
ktap_result "keyless_server_warns_and_refuses_keyed_client" $r
stop s2

# --- allow-lists ---------------------------------------------------------------
serve s3 --port $P3 --size 1M --allow 198.51.100.0/24 --allow 2001:db8:ffff::/48
run na rdmaxfer write $HOST --port $P3 --size 4K
[ $rc -eq 1 ] && one_error_line na 'allow-list' &&
	grep -q 'warning: no --key: any host that can reach this port from an --allow prefix' \
		"$tmp/s3.err"
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show na.err s3.err; }
ktap_result "outside_allow_list_refused" $r
stop s3

serve s4 --port $P4 --size 1M --key-file "$tmp/a.key" --allow 198.51.100.0/24 --allow "$HOST/32"
run w4 rdmaxfer write $HOST --port $P4 --size 64K --verify --key rdmaxfer:cli-a
[ $rc -eq 0 ]
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show w4.err s4.err; }
ktap_result "allow_list_and_key_file" $r
stop s4

# --- revoking the server's key ---------------------------------------------------
head -c 32 /dev/urandom >"$tmp/c.key"
kc=$(addkey cli-c "$tmp/c.key")
serve s5 --port $P5 --size 1M --key "$kc"
# a client that stays connected across the revocation (bench for 4 s)
rdmaxfer bench $HOST --port $P5 --op write --size 4K --duration 4 --key-file "$tmp/c.key" \
	>"$tmp/long.out" 2>"$tmp/long.err" &
lp=$!
sleep 1
keyctl revoke "$kc"
run after rdmaxfer write $HOST --port $P5 --size 4K --key-file "$tmp/c.key"
r1=$rc
wait $lp
lrc=$?
[ $r1 -eq 1 ] && one_error_line after 'server has none' && [ $lrc -eq 0 ] &&
	! grep -q 'disconnect\|error' "$tmp/long.err"
r=$?
[ $r -eq 0 ] || { ktap_diag "new client exit $r1, connected bench exit $lrc"; show after.err long.out long.err s5.err; }
ktap_result "revoked_key_refuses_new_keeps_live" $r
stop s5

# --- usage -----------------------------------------------------------------------------
r=0
run u1 rdmaxfer serve --allow 192.0.2.1/33
[ $rc -eq 2 ] && one_error_line u1 'prefix length' || { show u1.err; r=1; }
run u2 rdmaxfer serve --allow 192.0.2.1/24
[ $rc -eq 2 ] && one_error_line u2 'bits set past' || { show u2.err; r=1; }
run u3 rdmaxfer write $HOST --port $P1 --size 4K --key rdmaxfer:no-such-key
[ $rc -eq 2 ] && one_error_line u3 'no such logon or user key' || { show u3.err; r=1; }
run u4 rdmaxfer write $HOST --port $P1 --size 4K --key rdmaxfer:cli-a --key-file "$tmp/a.key"
[ $rc -eq 2 ] && one_error_line u4 'exclude each other' || { show u4.err; r=1; }
ktap_result "usage_errors_exit_2" $r

r=0
run k1 rdmaxfer write $HOST --port $P1 --size 4K --key-file "$tmp/short.key"
[ $rc -eq 1 ] && one_error_line k1 '16 to 256 bytes' || { show k1.err; r=1; }
run k2 rdmaxfer serve --port $P2 --key-file "$tmp/nonexistent"
[ $rc -eq 1 ] && one_error_line k2 'cannot open' || { show k2.err; r=1; }
# a user key of 8 bytes: the module refuses it
k8=$(keyctl padd user rdmaxfer-cli-short @s <"$tmp/short.key")
keys="$keys $k8"
run k3 rdmaxfer serve --port $P2 --key "$k8"
[ $rc -eq 1 ] && one_error_line k3 'not a logon or user key of 16 to 256 bytes' || { show k3.err; r=1; }
ktap_result "bad_keys_exit_1" $r

stop s1
ktap_finish
