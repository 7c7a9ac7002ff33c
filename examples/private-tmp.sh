#!/bin/sh
# Two agent sessions of the same user, started at the same time, each using
# the same fixed name in /tmp, as agent runtimes do (/tmp/opencode,
# /tmp/codex-ipc). Under agentbox each sees only its own file, and nothing
# reaches the host's /tmp.
#
#   examples/private-tmp.sh [path/to/agentbox]
#
# Prints "ok" and exits 0 when the sessions were isolated.
set -eu
AGENTBOX=${1:-agentbox}
name=/tmp/agentx-flags-example
agent='mkdir -p '$name' && echo "$AGENTBOX_SESSION" > '$name'/owner && sleep 0.3 && cat '$name'/owner'

out1=$(mktemp "${HOME:-/root}/.agentbox-example.XXXXXX")
out2=$(mktemp "${HOME:-/root}/.agentbox-example.XXXXXX")
trap 'rm -f "$out1" "$out2"' EXIT
"$AGENTBOX" -- sh -c "$agent" >"$out1" &
"$AGENTBOX" -- sh -c "$agent" >"$out2" &
wait
a=$(cat "$out1"); b=$(cat "$out2")
if [ -z "$a" ] || [ -z "$b" ] || [ "$a" = "$b" ]; then
	echo "sessions collided: '$a' '$b'" >&2
	exit 1
fi
if [ -e "$name" ]; then
	echo "$name reached the host's /tmp" >&2
	exit 1
fi
echo ok
