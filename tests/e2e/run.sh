#!/usr/bin/env bash
# End-to-end test: the real agent CLIs (opencode, codex, claude, gemini), installed from npm, run
# under agentbox as a fresh non-root user, with a control run of every command without agentbox.
# See README.md beside this file. Run as root.
# shellcheck disable=SC2016,SC2088 # literal $ in regexes and sh -c scripts; ~ in printed text
set -euo pipefail
export LC_ALL=C # sort/comm/grep of the root side; the agents get their own environment

# ---------------------------------------------------------------------------------------------
# Pinned versions. All four run on node 20: claude-code's package.json says engines node>=22,
# but since 2.x its bin is a native executable (copied in by its postinstall) and node only runs
# that postinstall, which works on node 20, so the newest release is pinned anyway.
OPENCODE_VERSION=1.18.33        # npm: opencode-ai (native binary from opencode-linux-x64)
CODEX_VERSION=0.171.0           # npm: @openai/codex (native binary from @openai/codex-linux-x64)
CLAUDE_VERSION=2.1.332          # npm: @anthropic-ai/claude-code (native, @anthropic-ai/claude-code-linux-x64)
GEMINI_VERSION=0.61.0           # npm: @google/gemini-cli (node script, engines node>=20)

PREFIX=${AGENTBOX_E2E_PREFIX:-/opt/agentbox-e2e}
E2E_USER=${AGENTBOX_E2E_USER:-abe2e}
TIMEOUT=${AGENTBOX_E2E_TIMEOUT:-60}
ALLOW_CONTROL_FAIL=${AGENTBOX_E2E_ALLOW_CONTROL_FAIL:-0}
TRACE=${AGENTBOX_E2E_TRACE:-auto}      # auto|1|0: strace pass that lists every write syscall
KEEP_USER=${AGENTBOX_E2E_KEEP_USER:-0} # 1: leave the user and its home behind for inspection
PROMPTS=${AGENTBOX_E2E_PROMPTS:-0}     # 1: also send each agent a real prompt (see "prompt" below)
PROMPT_TIMEOUT=${AGENTBOX_E2E_PROMPT_TIMEOUT:-20}
read -r -a AB_ARGS <<<"${AGENTBOX_E2E_AGENTBOX_ARGS:-}" # extra agentbox flags, e.g. "--landlock off"
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)
LOG=${AGENTBOX_E2E_LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/agentbox-e2e.XXXXXX")}

# Where each agent may write, relative to HOME, used only to label the paths it wrote (the project
# dir and agentbox's session root always count). Taken from `agentbox policy --json -- AGENT` when
# the agentbox under test has it; else this fallback (the built-in profiles when it was written).
declare -A PROFILE_ALLOWED=(
  [opencode]=".cache .npm .config/opencode .local/share/opencode .cache/opencode .local/state/opencode"
  [codex]=".cache .npm .codex"
  [claude]=".cache .npm .claude .local/state/claude .claude.json"
  [gemini]=".cache .npm .gemini"
)
POLICY_SOURCE="fallback list in run.sh"

# Environment of every agent run: minimal, plus the switches that turn off update checks and
# telemetry (there is no network). Names found in each CLI's docs / binary:
#   claude:   DISABLE_AUTOUPDATER, DISABLE_TELEMETRY, DISABLE_ERROR_REPORTING,
#             CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC (also skips feature flags, doctor's API probe)
#   opencode: OPENCODE_DISABLE_AUTOUPDATE, OPENCODE_DISABLE_MODELS_FETCH, OPENCODE_DISABLE_LSP_DOWNLOAD
#   gemini:   GEMINI_TELEMETRY_ENABLED=false (auto-update is only a settings.json switch)
#   codex:    none (update check is config.toml check_for_update_on_startup; not hit by these commands)
#   npm/node: NO_UPDATE_NOTIFIER, NPM_CONFIG_UPDATE_NOTIFIER=false, DO_NOT_TRACK
AGENT_ENV=(
  LANG=C.UTF-8
  DISABLE_AUTOUPDATER=1
  DISABLE_TELEMETRY=1
  DISABLE_ERROR_REPORTING=1
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  OPENCODE_DISABLE_AUTOUPDATE=1
  OPENCODE_DISABLE_MODELS_FETCH=1
  OPENCODE_DISABLE_LSP_DOWNLOAD=1
  GEMINI_TELEMETRY_ENABLED=false
  NO_UPDATE_NOTIFIER=1
  NPM_CONFIG_UPDATE_NOTIFIER=false
  DO_NOT_TRACK=1
)

# stderr lines matching this make a check fail.
PERM_RE='EACCES|EPERM|Permission denied|permission denied|Read-only file system|EROFS'

# ---------------------------------------------------------------------------------------------
# The checks: agent, expected exit codes (regex), regexes (joined by &&) that the combined
# stdout+stderr must each match, flags, then the command, split on blanks. Leading VAR=value words
# go into the environment outside agentbox, so that agentbox still picks the profile by the
# agent's name. Flags: "-" none; "xfail" known to fail under agentbox (reported, not counted;
# "XPASS" once it passes); "prompt" a real prompt, which needs the network: any exit status and a
# timeout are fine, only permission errors on stderr and files in the host's tmp dirs count.
#
# xfail "codex sandbox": codex runs every shell command of the model through its own bubblewrap
# sandbox, which needs a nested user namespace. Under agentbox that fails: with Landlock on,
# "bwrap: setting up uid map: Permission denied" (writing /proc/self/uid_map is not granted); with
# --landlock off, "bwrap: Can't mkdir parents for ~/.local/state/agentbox/ID/tmp/codex-daemon-UID:
# Read-only file system" (codex masks the mount source of /tmp/codex-daemon-UID, found in
# mountinfo, which lies in the hidden, read-only session root).
CK_AGENT=(); CK_RC=(); CK_OUT=(); CK_FLAGS=(); CK_CMD=()
check() {
  CK_AGENT+=("$1"); CK_RC+=("$2"); CK_OUT+=("$3"); CK_FLAGS+=("$4"); shift 4
  CK_CMD+=("$*")
}
#      agent    rc     output regex                                   flags  command
check opencode '0'    '^[0-9]+\.[0-9]+\.[0-9]+'                       -      opencode --version
check opencode '0'    'data +/.*/opencode&&config +/.*/\.config/opencode&&tmp +/tmp/opencode' \
                                                                      -      opencode debug paths
check opencode '0'    '"\$schema"'                                    -      opencode debug config
check codex    '0'    '^codex-cli [0-9]+\.[0-9]+\.[0-9]+'             -      codex --version
check codex    '0|1'  'Not logged in|Logged in'                       -      codex login status
check codex    '0'    '"type"'                                        -      codex debug prompt-input hello
check codex    '0'    ''                                              xfail  codex sandbox -- true
check claude   '0'    '^[0-9]+\.[0-9]+\.[0-9]+ \(Claude Code\)'       -      claude --version
check claude   '0'    'Usage: claude'                                 -      claude --help
check claude   '0|1'  '"loggedIn"'                                    -      claude auth status
check claude   '0'    'MCP servers'                                   -      claude mcp list
check claude   '0'    'Claude Code doctor'                            -      claude doctor
check gemini   '0'    '^[0-9]+\.[0-9]+\.[0-9]+'                       -      gemini --version
check gemini   '0'    'Usage: gemini'                                 -      gemini --help
check gemini   '0'    'MCP servers'                                   -      gemini mcp list
check gemini   '0'    'skills'                                        -      gemini skills list
if [[ $PROMPTS == 1 ]]; then
  # Dummy keys so that each CLI gets as far as calling its API (which fails without a network):
  # this is where sessions, transcripts, databases and plugin installs get written.
  check opencode '.*' '' prompt opencode run hello
  check codex    '.*' '' prompt OPENAI_API_KEY=e2e-dummy-key codex exec hello
  check claude   '.*' '' prompt ANTHROPIC_API_KEY=e2e-dummy-key claude -p hello
  check gemini   '.*' '' prompt GEMINI_API_KEY=e2e-dummy-key gemini --skip-trust -p hello
fi

# ---------------------------------------------------------------------------------------------
say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'agentbox-e2e: %s\n' "$*" >&2; exit 2; }

[[ $(id -u) == 0 ]] || die "run as root (it creates the user $E2E_USER)"
case $PREFIX in /tmp|/tmp/*|/var/tmp|/var/tmp/*) die "AGENTBOX_E2E_PREFIX must be outside /tmp and /var/tmp (agentbox hides them)";; esac
for t in npm node setpriv useradd userdel timeout git find; do
  command -v "$t" >/dev/null || die "missing tool: $t"
done
if [[ $TRACE == auto ]]; then
  if command -v strace >/dev/null; then TRACE=1; else TRACE=0; fi
fi
[[ $TRACE == 0 ]] || command -v strace >/dev/null || die "AGENTBOX_E2E_TRACE=1 needs strace"
mkdir -p "$LOG"
T_START=$(date +%s)

# ---------------------------------------------------------------------------------------------
# 1. Install the agents (cached: skipped when the stamp matches and every binary runs).
PKGS=(
  "opencode-ai@$OPENCODE_VERSION"
  "@openai/codex@$CODEX_VERSION"
  "@anthropic-ai/claude-code@$CLAUDE_VERSION"
  "@google/gemini-cli@$GEMINI_VERSION"
)
BIN=$PREFIX/node_modules/.bin
STAMP=$PREFIX/.agentbox-e2e-installed
declare -A WANT_VERSION=([opencode]=$OPENCODE_VERSION [codex]=$CODEX_VERSION [claude]=$CLAUDE_VERSION [gemini]=$GEMINI_VERSION)
# package dir and postinstall command of the packages whose bin is a native binary put in place by
# their postinstall (a fallback for npm versions or configs that skip install scripts).
declare -A POSTINSTALL=(
  [opencode]="opencode-ai|node ./postinstall.mjs"
  [claude]="@anthropic-ai/claude-code|node install.cjs"
)

bins_ok() {
  local a v
  for a in opencode codex claude gemini; do
    [[ -x $BIN/$a ]] || return 1
    v=$(cd / && timeout 60 "$BIN/$a" --version </dev/null 2>/dev/null | head -n1) || return 1
    [[ $v == *"${WANT_VERSION[$a]}"* ]] || return 1
  done
}

if [[ -f $STAMP && $(cat "$STAMP") == "${PKGS[*]}" ]] && bins_ok; then
  say "agents already installed in $PREFIX (${PKGS[*]})"
else
  say "installing ${PKGS[*]} into $PREFIX"
  mkdir -p "$PREFIX"
  rm -f "$STAMP"
  # --engine-strict=false: claude-code declares node>=22 but runs on 20 (see the pins above).
  ( cd "$PREFIX" && npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact \
      --include=optional --engine-strict=false "${PKGS[@]}" ) >"$LOG/npm-install.log" 2>&1 \
    || { tail -n 40 "$LOG/npm-install.log" >&2; die "npm install failed (log: $LOG/npm-install.log)"; }
  for a in opencode claude; do
    if ! (cd / && timeout 60 "$BIN/$a" --version </dev/null >/dev/null 2>&1); then
      IFS='|' read -r pkg cmd <<<"${POSTINSTALL[$a]}"
      say "$a does not run; running $pkg's postinstall ($cmd) by hand"
      (cd "$PREFIX/node_modules/$pkg" && $cmd) >>"$LOG/npm-install.log" 2>&1 || true
    fi
  done
  [[ -x $PREFIX/node_modules/opencode-linux-x64/bin/opencode ]] \
    || die "opencode's native package opencode-linux-x64 did not install (log: $LOG/npm-install.log)"
  bins_ok || die "an agent binary does not run or has the wrong version (log: $LOG/npm-install.log)"
  printf '%s\n' "${PKGS[*]}" >"$STAMP"
fi
chmod -R a+rX "$PREFIX"

# ---------------------------------------------------------------------------------------------
# 2. agentbox: built from this checkout, or AGENTBOX_BIN; copied where the test user can run it.
ABDIR=$PREFIX/agentbox-bin
mkdir -p "$ABDIR"
AB=$ABDIR/agentbox
if [[ -n ${AGENTBOX_BIN:-} ]]; then
  [[ -x $AGENTBOX_BIN ]] || die "AGENTBOX_BIN=$AGENTBOX_BIN is not executable"
  say "using AGENTBOX_BIN=$AGENTBOX_BIN"
  install -m 0755 "$AGENTBOX_BIN" "$AB.new"
else
  say "building agentbox from $REPO"
  (cd "$REPO" && CGO_ENABLED=0 go build -o "$AB.new" .) || die "go build failed"
  chmod 0755 "$AB.new"
fi
mv -f "$AB.new" "$AB"
chmod a+rx "$ABDIR"

# ---------------------------------------------------------------------------------------------
# 3. The test user: deleted and recreated with a fresh home before each pass.
E2E_HOME=/home/$E2E_USER
PROJECT=$E2E_HOME/project
USER_PATH=$BIN:/usr/local/bin:/usr/bin:/bin
user_env() {
  printf '%s\n' HOME="$E2E_HOME" USER="$E2E_USER" LOGNAME="$E2E_USER" PATH="$USER_PATH" "${AGENT_ENV[@]}"
}
mapfile -t UENV < <(user_env)

as_user() { # run "$@" as the test user, in the project dir, with the minimal environment
  setpriv --reuid "$E2E_USER" --regid "$E2E_USER" --init-groups \
    env -i "${UENV[@]}" env -C "$PROJECT" "$@"
}

user_leftovers() { # processes of the test user still alive: report them and end them (ours)
  local pids
  pids=$(pgrep -u "$E2E_USER" 2>/dev/null | paste -sd' ' || true)
  [[ -z $pids ]] && return 0
  say "processes of $E2E_USER still running after the pass: $pids"
  ps -o pid,etime,args -p "${pids// /,}" >&2 || true
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true; sleep 1
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  LEFTOVER_PROCS+=("$1: $pids")
}
LEFTOVER_PROCS=()

clean_host_tmp() { # files the test user left in the host's /tmp, /var/tmp, /dev/shm
  if id "$E2E_USER" >/dev/null 2>&1; then
    find /tmp /var/tmp /dev/shm -xdev -user "$E2E_USER" -delete 2>/dev/null || true
  fi
}

fresh_user() {
  if id "$E2E_USER" >/dev/null 2>&1; then
    user_leftovers cleanup
    clean_host_tmp
    userdel -r "$E2E_USER" >/dev/null 2>&1 || true # exit 12: no mail spool
    id "$E2E_USER" >/dev/null 2>&1 && die "could not delete user $E2E_USER"
  fi
  rm -rf "$E2E_HOME"
  useradd -m -s /bin/bash "$E2E_USER"
  setpriv --reuid "$E2E_USER" --regid "$E2E_USER" --init-groups env -i "${UENV[@]}" \
    sh -c 'mkdir "$HOME/project" && cd "$HOME/project" && git init -q' \
    || die "cannot create $PROJECT as $E2E_USER"
  for a in opencode codex claude gemini; do
    as_user sh -c "test -x '$BIN/$a' && test -r '$BIN/$a'" || die "$E2E_USER cannot run $BIN/$a"
  done
  as_user test -x "$AB" || die "$E2E_USER cannot run $AB"
}

# ---------------------------------------------------------------------------------------------
# Recording what a command wrote: a listing of HOME before, and after it the entries that are new
# (NEW), changed (MOD, mtime or ctime newer than a marker) or gone (DEL), plus entries of the test
# user in the host's /tmp, /var/tmp and /dev/shm (HOSTTMP).
# find's status is ignored throughout: other users' files in /tmp come and go while it walks.
snapshot() { { find "$E2E_HOME" -xdev -not -path "$PROJECT/.git/*" -printf '%p\n' 2>/dev/null || true; } | sort; }

normalize() { # random parts of file names -> placeholders
  sed -E 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<uuid>/g;
          s/\.tmp\.[0-9]+\.[0-9a-f]{8,}/.tmp.<pid>.<rand>/g;
          s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9_:.Z-]+/<time>/g;
          s/(backup|codex-arg0|\.tmp)[.]?[0-9A-Za-z]{6,}/\1<rand>/g'
}

classify() { # $1 agent, $2 path relative to HOME (no leading ./) -> label
  local a=$1 p=$2 q
  case $p in
    project|project/*) echo project; return;;
    .local/state/agentbox|.local/state/agentbox/*) echo agentbox-session; return;;
    HOSTTMP:*) echo host-tmp; return;;
  esac
  for q in ${PROFILE_ALLOWED[$a]}; do
    [[ $p == "$q" || $p == "$q"/* ]] && { echo allowed; return; }
  done
  for q in ${PROFILE_ALLOWED[$a]} .local/state/agentbox; do
    [[ $p == . || $q == "$p"/* ]] && { echo parent-dir; return; }
  done
  echo OUTSIDE
}

record_writes() { # $1 pass, $2 agent, $3 command, $4 marker, $5 before-list -> appends to writes TSV
  local pass=$1 agent=$2 cmd=$3 marker=$4 before=$5 after tag p rel
  after=$(mktemp "$LOG/after.XXXXXX")
  snapshot >"$after"
  {
    { find "$E2E_HOME" -xdev \( -newer "$marker" -o -cnewer "$marker" \) -not -path "$PROJECT/.git/*" -printf '%p\t%y\n' 2>/dev/null || true; } |
      while IFS=$'\t' read -r p ty; do
        if grep -qxF -- "$p" "$before"; then tag=MOD; else tag=NEW; fi
        printf '%s\t%s\t%s\n' "$tag" "$ty" "$p"
      done
    comm -23 "$before" "$after" | sed 's/^/DEL\t?\t/'
    find /tmp /var/tmp /dev/shm -xdev -user "$E2E_USER" \( -newer "$marker" -o -cnewer "$marker" \) -printf 'NEW\t%y\tHOSTTMP:%p\n' 2>/dev/null || true
  } | sort -u -k3 | while IFS=$'\t' read -r tag ty p; do
    rel=${p#"$E2E_HOME"}; rel=${rel#/}; [[ -z $rel ]] && rel=.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pass" "$agent" "$cmd" "$tag" "$ty" "$rel" "$(classify "$agent" "$rel")"
  done >>"$LOG/writes.tsv"
  rm -f "$after"
}

# ---------------------------------------------------------------------------------------------
# 4. The passes.
declare -A RES=() DETAIL=() DUR=() VERSION=()

run_pass() { # $1: control | agentbox | trace
  local pass=$1 i n=${#CK_CMD[@]} agent cmd out err rc t0 t1 res why marker before hits leak tmo pat argv envp
  fresh_user
  say "pass: $pass (fresh home $E2E_HOME)"
  for ((i = 0; i < n; i++)); do
    agent=${CK_AGENT[i]} cmd=${CK_CMD[i]}
    read -r -a argv <<<"$cmd"
    envp=() # leading VAR=value words: set outside agentbox, whose profile is chosen by argv[0]
    while ((${#argv[@]})) && [[ ${argv[0]} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do envp+=("${argv[0]}"); argv=("${argv[@]:1}"); done
    out=$LOG/$pass.$i.out err=$LOG/$pass.$i.err marker=$LOG/$pass.$i.marker
    before=$(mktemp "$LOG/before.XXXXXX"); snapshot >"$before"
    touch "$marker"; sleep 0.05
    tmo=$TIMEOUT; [[ ${CK_FLAGS[i]} == prompt ]] && tmo=$PROMPT_TIMEOUT
    t0=$(date +%s.%N); rc=0
    case $pass in
      control)  as_user env "${envp[@]}" timeout -k 5 "$tmo" "${argv[@]}" </dev/null >"$out" 2>"$err" || rc=$? ;;
      agentbox) as_user env "${envp[@]}" timeout -k 5 "$tmo" "$AB" "${AB_ARGS[@]}" -- "${argv[@]}" </dev/null >"$out" 2>"$err" || rc=$? ;;
      trace)
        env -i "${UENV[@]}" "${envp[@]}" timeout -k 5 "$tmo" strace -f -qq -u "$E2E_USER" -o "$LOG/trace.$i.strace" \
          -e trace=open,openat,openat2,creat,rename,renameat,renameat2,mkdir,mkdirat,unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat,truncate,mknod,mknodat,chmod,fchmodat,utimensat \
          env -C "$PROJECT" "${argv[@]}" </dev/null >"$out" 2>"$err" || rc=$? ;;
    esac
    t1=$(date +%s.%N)
    DUR[$pass.$i]=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
    record_writes "$pass" "$agent" "$cmd" "$marker" "$before"
    rm -f "$before"

    res=PASS why=
    if [[ ${CK_FLAGS[i]} == prompt ]]; then
      ((rc == 124 || rc == 137)) && why="no answer within ${tmo}s (no network: expected)"
    elif ((rc == 124 || rc == 137)); then
      res=FAIL why="timed out after ${tmo}s"
    elif ! [[ $rc =~ ^(${CK_RC[i]})$ ]]; then
      res=FAIL why="exit $rc, want ${CK_RC[i]}"
    else
      while IFS= read -r pat; do
        [[ -z $pat ]] || grep -Eq -- "$pat" "$out" "$err" || { res=FAIL why="output does not match /$pat/"; break; }
      done <<<"${CK_OUT[i]//&&/$'\n'}"
    fi
    if [[ $pass != trace ]]; then
      hits=$(grep -En -- "$PERM_RE" "$err" || true)
      if [[ -n $hits ]]; then
        res=FAIL why="${why:+$why; }permission errors on stderr"
        DETAIL[$pass.$i.perm]=$hits
      fi
    fi
    if [[ $pass == agentbox ]]; then
      leak=$({ find /tmp /var/tmp /dev/shm -xdev -user "$E2E_USER" -printf '%p\n' 2>/dev/null || true; } | head -n 20)
      if [[ -n $leak ]]; then
        res=FAIL why="${why:+$why; }wrote to the host's /tmp, /var/tmp or /dev/shm"
        DETAIL[$pass.$i.leak]=$leak
      fi
    fi
    if [[ $pass == agentbox && ${CK_FLAGS[i]} == xfail ]]; then
      if [[ $res == FAIL ]]; then res=XFAIL; else res=XPASS; fi
    fi
    RES[$pass.$i]=$res DETAIL[$pass.$i]=$why
    if [[ ${argv[1]:-} == --version && ${#argv[@]} == 2 && $rc == 0 ]]; then
      VERSION[$agent]=$(grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' "$out" | head -n1 || true)
    fi
    printf '  %-8s %-6s %4ss  rc=%-3s %s%s\n' "$pass" "$res" "${DUR[$pass.$i]}" "$rc" "$cmd" "${why:+  ($why)}" >&2
    if [[ $res == FAIL || $res == XFAIL ]]; then
      [[ -s $err ]] && sed -n '1,15p' "$err" | sed 's/^/      stderr| /' >&2
    fi
  done
  if [[ $pass == agentbox ]]; then
    local stale
    stale=$(find "$E2E_HOME/.local/state/agentbox" -mindepth 1 -maxdepth 1 2>/dev/null | head || true)
    [[ -z $stale ]] || SESSION_LEFTOVERS=$stale
  fi
  user_leftovers "$pass"
  clean_host_tmp
}
SESSION_LEFTOVERS=

load_policies() { # PROFILE_ALLOWED from agentbox's own policy, when it has `agentbox policy`
  local a json rel got=0
  declare -A p=()
  for a in opencode codex claude gemini; do
    json=$(as_user "$AB" "${AB_ARGS[@]}" policy --json -- "$a" 2>/dev/null) || return 0
    as_user "$AB" "${AB_ARGS[@]}" policy -- "$a" >"$LOG/policy.$a.txt" 2>&1 || true
    p[$a]=
    while IFS= read -r rel; do p[$a]+="$rel "; got=1; done < <(node -e '
      let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
        const home = process.argv[1] + "/";
        for (const w of JSON.parse(s).write || [])
          if (w.path.startsWith(home)) console.log(w.path.slice(home.length));
      })' "$E2E_HOME" <<<"$json")
  done
  if ((got)); then
    for a in "${!p[@]}"; do PROFILE_ALLOWED[$a]=${p[$a]}; done
    POLICY_SOURCE="agentbox policy --json (saved in $LOG/policy.*.txt)"
  fi
}

run_pass control
load_policies
run_pass agentbox
if [[ $TRACE == 1 ]]; then run_pass trace; fi

if [[ $TRACE == 1 ]]; then
  # Every successful (or permission-denied) write-like syscall on a path under HOME or the host tmp
  # dirs, per command: op and path(s), pids/fds/modes dropped, random name parts normalised.
  : >"$LOG/trace-writes.txt"
  for ((i = 0; i < ${#CK_CMD[@]}; i++)); do
    f=$LOG/trace.$i.strace
    [[ -f $f ]] || continue
    {
      printf '## %s: %s\n' "${CK_AGENT[i]}" "${CK_CMD[i]}"
      { sed -E 's/^[0-9]+ +//; s/ *<unfinished \.\.\.>//' "$f" |
          grep -E "\"($E2E_HOME|/tmp|/var/tmp|/dev/shm)" |
          grep -Ev '= -1 E(NOENT|EXIST|NOTDIR|NOTEMPTY|AGAIN)' |
          grep -E 'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|^(creat|rename|renameat2?|mkdir|mkdirat|unlink|unlinkat|rmdir|link|linkat|symlink|symlinkat|truncate|mknod|mknodat|chmod|fchmodat|utimensat)\(' |
          sed -E 's/^(openat2?|open)\(AT_FDCWD, /open(/; s/AT_FDCWD, //g; s/\) += .*$/)/; s/, \[\{tv_sec.*$/)/; s/, 0[0-7]+\)?$/)/' |
          normalize | sort | uniq -c | sort -rn; } || true
    } >>"$LOG/trace-writes.txt"
  done
fi

# ---------------------------------------------------------------------------------------------
# 5. Report.
T_END=$(date +%s)
fails=0 control_fails=0
short() { sed -E 's/^([A-Za-z_][A-Za-z0-9_]*=[^ ]* )+//' <<<"$1"; } # command without VAR=value words
echo
echo "agentbox e2e: $(date -u +%FT%TZ), agentbox $("$AB" --version 2>/dev/null | head -n1), user $E2E_USER, logs $LOG"
printf '%-9s %-10s %-34s %-12s %-12s %s\n' AGENT VERSION COMMAND CONTROL AGENTBOX RESULT
for ((i = 0; i < ${#CK_CMD[@]}; i++)); do
  agent=${CK_AGENT[i]} c=${RES[control.$i]} b=${RES[agentbox.$i]}
  if [[ $c != PASS ]]; then
    result="control failed: ${DETAIL[control.$i]}"; control_fails=$((control_fails + 1))
    [[ $b == FAIL ]] && result="$result (agentbox also failed)"
  else
    case $b in
      PASS)  result=ok${DETAIL[agentbox.$i]:+ (${DETAIL[agentbox.$i]})} ;;
      XFAIL) result="known agentbox failure (xfail): ${DETAIL[agentbox.$i]}" ;;
      XPASS) result="xfail now passes: drop the xfail flag" ;;
      *)     result="AGENTBOX FAILURE: ${DETAIL[agentbox.$i]}"; fails=$((fails + 1)) ;;
    esac
  fi
  cmd=$(short "${CK_CMD[i]}")
  printf '%-9s %-10s %-34s %-12s %-12s %s\n' "$agent" "${VERSION[$agent]:-?}" "${cmd:0:34}" \
    "$c ${DUR[control.$i]}s" "$b ${DUR[agentbox.$i]}s" "$result"
done

for k in "${!DETAIL[@]}"; do
  case $k in
    *.perm) printf '\n%s: %s: permission errors on stderr:\n%s\n' "${k%%.*}" "${CK_CMD[$(cut -d. -f2 <<<"$k")]}" "${DETAIL[$k]}" ;;
    *.leak) printf '\n%s: %s: files in the host tmp dirs:\n%s\n' "${k%%.*}" "${CK_CMD[$(cut -d. -f2 <<<"$k")]}" "${DETAIL[$k]}" ;;
  esac
done
if [[ -n $SESSION_LEFTOVERS ]]; then
  printf '\nsession directories left under %s/.local/state/agentbox:\n%s\n' "$E2E_HOME" "$SESSION_LEFTOVERS"
  fails=$((fails + 1))
fi
if ((${#LEFTOVER_PROCS[@]})); then
  printf '\nprocesses left running (ended by this script): %s\n' "${LEFTOVER_PROCS[*]}"
fi

# What each agent wrote, collapsed to the directory a profile would name (~/.config/X, ~/.cache/X,
# ~/.local/{share,state}/X, /tmp/X, else the first two components), over all passes. A directory
# that only got new entries because something below it was written is labelled parent-dir.
collapse() {
  awk -F/ '{ n = ($1 == ".local") ? 3 : 2; if ($1 ~ /^HOSTTMP:/) n = 3; out = $1
             for (i = 2; i <= n && i <= NF; i++) out = out "/" $i; print out }'
}
echo
echo "Paths written under HOME ($E2E_HOME) and the host tmp dirs, per agent (all passes;"
echo "passes in brackets; OUTSIDE = not writable under the agent's profile, from $POLICY_SOURCE):"
for agent in opencode codex claude gemini; do
  rows=$(awk -F'\t' -v a="$agent" '$2 == a && $4 != "DEL" { print $1 "\t" $6 }' "$LOG/writes.tsv" 2>/dev/null || true)
  [[ -z $rows ]] && continue
  printf '  %s:\n' "$agent"
  paths=$(while IFS=$'\t' read -r pass rel; do
            printf '%s\t%s\n' "$(collapse <<<"$rel" | normalize)" "$pass"
          done <<<"$rows" | sort -u)
  cut -f1 <<<"$paths" | sort -u | while IFS= read -r rel; do
    passes=$(awk -F'\t' -v r="$rel" '$1 == r { printf "%s%s", sep, $2; sep = "," }' <<<"$paths")
    label=$(classify "$agent" "$rel")
    if [[ $label != allowed && $label != host-tmp ]] && { [[ $rel == . ]] || cut -f1 <<<"$paths" | grep -qF -- "$rel/"; }; then
      label=parent-dir
    fi
    shown="~/$rel"; [[ $rel == . ]] && shown="~ (entries directly in HOME)"
    [[ $rel == HOSTTMP:* ]] && shown="host ${rel#HOSTTMP:}"
    printf '    %-16s %-50s [%s]\n' "$label" "$shown" "$passes"
  done
done
if [[ $TRACE == 1 ]]; then
  echo "Entries created, renamed or removed directly in HOME (trace pass, from the syscalls):"
  for ((i = 0; i < ${#CK_CMD[@]}; i++)); do
    f=$LOG/trace.$i.strace
    [[ -f $f ]] || continue
    grep -Ev '= -1 E(NOENT|EXIST|NOTDIR|NOTEMPTY|AGAIN)' "$f" |
      grep -E 'O_CREAT|(rename|renameat2?|mkdir|mkdirat|unlink|unlinkat|rmdir|link|linkat|symlink|symlinkat|mknod|mknodat)\(' |
      grep -oE "\"$E2E_HOME/[^/\"]+\"" | tr -d '"' | sed "s#^$E2E_HOME/##" | normalize |
      sed "s/^/    ${CK_AGENT[i]}: ~\//" || true
  done | sort -u
  echo "(every write syscall: $LOG/trace-writes.txt)"
fi
echo "(every written path, per pass and command: $LOG/writes.tsv)"

echo
echo "run time: $((T_END - T_START))s; agentbox failures: $fails; control failures: $control_fails"
status=0
((fails == 0)) || status=1
if ((control_fails > 0)) && [[ $ALLOW_CONTROL_FAIL != 1 ]]; then status=1; fi
if [[ $KEEP_USER != 1 ]]; then
  user_leftovers final
  clean_host_tmp
  userdel -r "$E2E_USER" >/dev/null 2>&1 || true
fi
if ((status == 0)); then echo "e2e: PASS"; else echo "e2e: FAIL"; fi
exit "$status"
