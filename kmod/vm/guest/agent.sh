#!/bin/sh
# The host's hands in a test VM. Reads "ID<TAB>COMMAND" lines from the virtio
# port named fp.ctl, runs each COMMAND in a subshell of this shell and answers
#   BEGIN ID / its output (stdout and stderr) / END ID EXITCODE
# Commands that run in the background must redirect their own output.
# Debian's busybox sh runs its applets before searching PATH: ip and tc are
# functions calling the real iproute2 binaries.
ip() { /sbin/ip "$@"; }
tc() { /sbin/tc "$@"; }
port=
while [ -z "$port" ]; do
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = fp.ctl ] && port=/dev/${p##*/}
	done
	[ -n "$port" ] || sleep 0.1
done
exec 3<>"$port"
echo "READY $(hostname)" >&3
while IFS= read -r line <&3; do
	id=${line%%	*}
	cmd=${line#*	}
	[ "$cmd" = __exit ] && break
	( eval "$cmd" ) >/tmp/.agent.out 2>&1 </dev/null
	rc=$?
	{ echo "BEGIN $id"; cat /tmp/.agent.out; echo "END $id $rc"; } >&3
done
