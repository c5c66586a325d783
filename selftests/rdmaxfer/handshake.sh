#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# handshake.sh - the connect handshake against a real peer that is not
# rdmaxfer (rdma-core's rping): rdmaxfer's listener rejects it and keeps
# serving, and rdmaxfer's client refuses a server that does not answer with
# an rdmaxfer hello.  Runs on one RDMA device (lib.sh:
# rdmaxfer_setup).
. "$(dirname "$0")/lib.sh"

command -v rping >/dev/null || ktap_skip_all "no rping (rdmacm-utils)"
command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
rdmaxfer_setup

T=$(mktemp -d)
cleanup()
{
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	[ -n "$rp" ] && kill "$rp" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
at_exit cleanup

ktap_plan 4

# 1. rping (no rdmaxfer hello in its private data) against rdmaxfer serve
rdmaxfer serve --port 18601 --size 64K --count 1 >"$T/serve.out" 2>"$T/serve.err" &
srv=$!
wait_for "grep -q listening $T/serve.out" 10
timeout 30 rping -c -a $ADDR -p 18601 -C 1 >"$T/rping.out" 2>&1
rc=$?
[ $rc -ne 0 ] && kill -0 "$srv" 2>/dev/null
r=$?
[ $r -eq 0 ] || ktap_diag "rping exited $rc; serve alive: $(kill -0 "$srv" 2>&1 && echo yes || echo no)" \
	"$(cat "$T/rping.out")"
ktap_result "foreign_client_rejected" $r

# 2. the listener keeps serving real clients after rejecting one
timeout 60 rdmaxfer send $ADDR --port 18601 --message "after the stranger" >"$T/send.out" 2>&1
r=$?
# serve --count 1 ends with that connection: without one it would wait forever
[ $r -eq 0 ] || kill "$srv" 2>/dev/null
wait "$srv"
src=$?
srv=
[ $r -eq 0 ] && [ $src -eq 0 ] && grep -q "after the stranger" "$T/serve.out"
r=$?
[ $r -eq 0 ] || ktap_diag "send: $(cat "$T/send.out")" "serve exit $src: $(cat "$T/serve.out" "$T/serve.err")"
ktap_result "listener_survives_rejection" $r

# 3. rdmaxfer's client against an rping server: no rdmaxfer hello in the
#    reply, so the client gives up with one clear line and exit 1
timeout 60 rping -s -a $ADDR -p 18602 -C 1 >"$T/rps.out" 2>&1 &
rp=$!
sleep 1
timeout 60 rdmaxfer write $ADDR --port 18602 --size 4K >"$T/w.out" 2>"$T/w.err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$T/w.err")" -eq 1 ] && grep -q '^rdmaxfer: ' "$T/w.err"
r=$?
[ $r -eq 0 ] || ktap_diag "write exited $rc" "$(cat "$T/w.out" "$T/w.err")"
ktap_result "foreign_server_refused" $r
kill "$rp" 2>/dev/null
wait "$rp" 2>/dev/null
rp=

# 4. neither side kept anything: no rdmaxfer QP or cm_id is left
wait_for '[ -z "$(rdma res show qp 2>/dev/null | grep "\[rdmaxfer\]")" ] &&
	  [ -z "$(rdma res show cm_id 2>/dev/null | grep "\[rdmaxfer\]")" ]' 10
r=$?
[ $r -eq 0 ] || ktap_diag "$(rdma res show qp; rdma res show cm_id)"
ktap_result "nothing_left_behind" $r

ktap_finish
