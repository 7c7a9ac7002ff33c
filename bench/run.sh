#!/usr/bin/env bash
# Benchmarks agentbox against its peers, side by side in one run, and
# prints Markdown: start-up (vs bubblewrap, unshare, /bin/true), cleanup of
# 10 000 and 100 000 files (vs rm -rf), resident memory (vs bubblewrap),
# 64 concurrent sessions, start-up with 1 000 sessions in the root, and the
# Go benchmarks of the pure parts. Budgets are reported, not asserted.
#
#   bench/run.sh           # the full run: a few minutes on 2 cores
#   bench/run.sh --quick   # fewer rounds and files; .ci/run uses it
#
# Run it as root or as a user with user namespaces; it needs Go and
# installs bubblewrap with apt-get when missing and it is root.
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1
if ((QUICK)); then ROUNDS=20 REPS=1 SESSIONS=200 BIG=20000 BENCHTIME=200x; else ROUNDS=200 REPS=3 SESSIONS=1000 BIG=100000 BENCHTIME=5000x; fi

if ! command -v bwrap >/dev/null; then
	if [[ $(id -u) == 0 ]]; then
		apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }
	else
		echo "bench: bwrap (bubblewrap) is missing: apt-get install bubblewrap" >&2; exit 1
	fi
fi

# Everything lives outside /tmp (private inside the sandbox, and agentbox
# refuses to start from under it: a checkout may well be there) in a
# directory the sandbox may use as its project.
W=${BENCH_DIR:-${HOME:-/root}/agentbox-bench}
rm -rf "$W/root" "$W/root1000" "$W/plain" "$W/project"
mkdir -p "$W/project" "$W/root" "$W/root1000"
chmod 700 "$W/root" "$W/root1000"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -tags urfave_cli_no_template -o "$W/agentbox" .
go build -o "$W/interleave" ./bench/interleave
go build -o "$W/mkfiles" ./bench/mkfiles
AB="$W/agentbox"
cd "$W/project"

echo "# agentbox benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) cores, $(bwrap --version))"
echo
echo "binary: $(stat -c %s "$AB") bytes (CGO_ENABLED=0, -trimpath -ldflags='-s -w', -tags urfave_cli_no_template)"
echo

BWRAP="bwrap --unshare-user --unshare-pid --dev-bind / / --tmpfs /tmp --tmpfs /var/tmp /bin/true"
# agentbox's sessions live on disk: let the writeback of the build (and of
# an earlier run's 100 000 files) settle, or it shows in the figures.
settle() { sync; sleep 3; }
settle
# The bare form (no flag: what IDEs and orchestrators prefix) finds its
# root through XDG_STATE_HOME; the --root form goes through the CLI parser.
export XDG_STATE_HOME="$W/state"
rm -rf "$W/state"
"$W/interleave" -title "## Start-up: \`-- /bin/true\`, full session create and cleanup" \
	-rounds "$ROUNDS" -warmup 5 -base bwrap -base unshare -base true \
	-cmd "agentbox=$AB -- /bin/true" \
	-cmd "agentbox-flags=$AB --root $W/root -- /bin/true" \
	-cmd "bwrap=$BWRAP" \
	-cmd "unshare=unshare -Urm /bin/true" \
	-cmd "true=/bin/true" | tee "$W/startup.md"
echo

echo "## Cleanup: the command creates N files in /tmp and exits"
echo
echo "| files | agentbox removal (median of $REPS) | rm -rf of the same tree | ratio |"
echo "|---|---|---|---|"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for n in 10000 "$BIG"; do
	ab=() rm=()
	for ((i = 0; i < REPS; i++)); do
		t=$("$AB" -v --root "$W/root" -- "$W/mkfiles" /tmp/x "$n" 2>&1 | sed -n 's/.*removed in \([0-9.]*\)s/\1/p')
		ab+=("$t")
		"$W/mkfiles" "$W/plain" "$n"
		sync
		s=$(date +%s.%N); rm -rf "$W/plain"; e=$(date +%s.%N)
		rm+=("$(echo "$e - $s" | bc)")
	done
	a=$(printf '%s\n' "${ab[@]}" | median) r=$(printf '%s\n' "${rm[@]}" | median)
	printf '| %d | %.3f s | %.3f s | %.2f× |\n' "$n" "$a" "$r" "$(echo "$a / $r" | bc -l)"
done
echo

echo "## Resident memory while the command sleeps"
echo
rss() { local sum=0; for p in "$@"; do sum=$((sum + $(awk '/VmRSS/ {print $2}' "/proc/$p/status"))); done; echo "$sum"; }
"$AB" --root "$W/root" -- sleep 3 & abpid=$!
sleep 1
abinit=$(pgrep -P "$abpid" | head -1)
abk=$(rss "$abpid" "$abinit")
bwrap --unshare-user --unshare-pid --dev-bind / / --tmpfs /tmp sleep 3 & bwpid=$!
sleep 1
bwchild=$(pgrep -P "$bwpid" -x bwrap | head -1 || true)
bwk=$(rss "$bwpid" ${bwchild:+"$bwchild"})
wait
echo "| | resident memory (VmRSS, sum of its own processes) |"
echo "|---|---|"
printf '| agentbox (wrapper + init) | %.1f MiB |\n' "$(echo "$abk / 1024" | bc -l)"
printf '| bubblewrap (its processes) | %.1f MiB |\n' "$(echo "$bwk / 1024" | bc -l)"
echo

echo "## Scale"
echo
s=$(date +%s.%N)
for i in $(seq 64); do "$AB" --root "$W/root" -- /bin/true & done
wait
e=$(date +%s.%N)
printf '64 sessions started concurrently: all done in %.3f s\n\n' "$(echo "$e - $s" | bc)"
for i in $(seq "$SESSIONS"); do "$AB" --keep --root "$W/root1000" -- /bin/true 2>/dev/null; done
settle
"$W/interleave" -title "Start-up with $SESSIONS kept sessions in the root vs an empty root:" \
	-rounds "$ROUNDS" -warmup 5 -base empty \
	-cmd "empty=$AB --root $W/root -- /bin/true" \
	-cmd "full=$AB --root $W/root1000 -- /bin/true"
echo

echo "## Go benchmarks of the pure parts"
echo
echo '```'
cd - >/dev/null
go test -run '^$' -bench . -benchtime="$BENCHTIME" ./env ./sandbox ./landlock ./mounts ./internal/session 2>&1 | grep -E '^(Benchmark|ok|FAIL)' || true
echo '```'
echo
echo "Budgets: start-up ≤ 1.5× bubblewrap; cleanup of 100 000 files ≤ 1.2× rm -rf; agentbox's own"
echo "resident memory ≤ 12 MiB; start-up with 1 000 sessions in the root within 10% of an empty root."
rm -rf "$W/root1000" "$W/plain"
