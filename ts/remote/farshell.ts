/**
 * Shell fragments the sandbox scripts run on the far side (POSIX `sh`: dash, bash, BusyBox
 * ash). Everything that decides which far-side process is whose lives here: a process is
 * known by its PID *and* its start time (field 22 of `/proc/<pid>/stat`, clock ticks since
 * the far side's boot), read again right before each signal, so a reused PID is never
 * signalled. Without `/proc` (a non-Linux far side) the fragments fall back to `ps` and
 * say so where it matters.
 */
import { MAX_GRACE_MS } from '../processes.js';

/** Single-quotes a value for a POSIX shell. */
export function shq(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Shell that sets `D` to the far-side directory `dir`, each `%i` replaced by the far side's `id -u`. */
export function farDir(dir: string): string {
  return [`D=${shq(dir)}`, 'while :; do case "$D" in *%i*) D="${D%%%i*}$(id -u)${D#*%i}";; *) break;; esac; done'].join('\n');
}

/**
 * `pstat PID`: reads `/proc/PID/stat` (the text after the last `)`, since the command name
 * may hold spaces and parentheses) into ST (state), PP (ppid), PG (process group), SI (session), T (start time,
 * field 22) and X (exit code, field 52: the raw wait status of a zombie, Linux 3.5+; empty
 * when the kernel does not show it). Fails when the process is gone or unreadable.
 */
export const PSTAT = [
  'pstat() {',
  '  L=; { read -r L < "/proc/$1/stat"; } 2>/dev/null || return 1',
  '  L=${L##*") "}',
  '  set -f; set -- $L; set +f',
  '  [ $# -ge 20 ] || return 1',
  '  ST=$1 PP=$2 PG=$3 SI=$4 X=',
  '  shift 19; T=$1',
  '  [ $# -ge 31 ] && { shift 30; X=$1; }',
  '  return 0',
  '}',
].join('\n');

/**
 * `snap`: one line `pid ppid session start state` per process of the far side, from /proc.
 * `own P S`: the processes of the job whose wrapper is PID P started at S, each as `pid
 * start` (zombies left out: they are dead): P itself while it is that wrapper, its
 * descendants by parent PID (a "child" that started before its parent is not one: the PID
 * was reused), and the members of session P. Session P is the job's while P is its wrapper
 * or while no process P exists (a PID is not handed out again while a session still bears
 * its number); when P is someone else, nothing but the extra roots is the job's.
 * Extra roots (`pid:start` words after S) are walked as well: members the first snapshot
 * found, whose parent may have died since.
 *
 * With `MK` set (a kill sets it to the whole entry `PROCWARD_SESSION_ID=<session id>:<nonce>`,
 * see {@link MARK} and {@link WRAPPER}; it then needs {@link OURS}), every process whose
 * `/proc/<pid>/environ` holds exactly that entry (NUL-separated entries, each compared whole)
 * and that started at or after S is a root as well, with its descendants: a `setsid`
 * escapee whose parent has exited is in neither the tree nor the session, but it inherited
 * the job's environment. Only the same user's environ is readable; one of `ours` is never
 * taken. One `grep -z` over all of /proc (a `tr` per process where grep lacks `-z`).
 */
export const OWN = [
  PSTAT,
  'marked() {',
  '  [ -n "$MK" ] || return 0',
  `  if printf 'a\\000' | grep -qzxF a 2>/dev/null; then grep -lzxF -- "$MK" /proc/[0-9]*/environ 2>/dev/null`,
  `  else for f in /proc/[0-9]*/environ; do [ -r "$f" ] && { tr '\\000' '\\n' < "$f"; } 2>/dev/null | grep -qxF -- "$MK" && echo "$f"; done; fi |`,
  '    while IFS= read -r f; do f=${f#/proc/}; f=${f%/environ}; num "$f" && ! ours "$f" && printf \'%s \' "$f"; done',
  '  return 0',
  '}',
  'snap() { for f in /proc/[0-9]*/stat; do p=${f#/proc/}; p=${p%/stat}; pstat "$p" && echo "$p $PP $SI $T $ST"; done; }',
  'own() {',
  '  MKP=$(marked)',
  '  snap | awk -v roots="$*" -v marked="$MKP" \'',
  '    { pp[$1] = $2; sid[$1] = $3; st[$1] = $4; state[$1] = $5 }',
  '    END {',
  '      n = split(roots, r, " "); P = r[1]; S = r[2]',
  '      if (P in st) { if (st[P] == S) { mark[P] = 1; session = 1 } } else session = 1',
  '      for (i = 3; i <= n; i++) { split(r[i], q, ":"); if ((q[1] in st) && st[q[1]] == q[2]) mark[q[1]] = 1 }',
  '      n = split(marked, m, " "); for (i = 1; i <= n; i++) if ((m[i] in st) && st[m[i]] + 0 >= S + 0) mark[m[i]] = 1',
  '      if (session) for (p in sid) if (sid[p] == P) mark[p] = 1',
  '      do { changed = 0',
  '        for (p in pp) if (!(p in mark) && (pp[p] in mark) && st[p] + 0 >= st[pp[p]] + 0) { mark[p] = 1; changed = 1 }',
  '      } while (changed)',
  '      for (p in mark) if (state[p] != "Z" && p + 0 > 1) print p, st[p]',
  '    }\'',
  '}',
].join('\n');

/**
 * `ours X` (needs {@link PSTAT}): succeeds when X is this script's shell or one of its
 * ancestors (the far shell's client: sshd, `podman exec`, or the host itself through the
 * local shell), or the process group or session of any of them. Whatever a far-side file
 * names, none of those is signalled, alone or as a group. The ancestors are read once, into
 * `ANC`; call it before a `pstat` whose values are still needed, since it may run its own.
 */
export const OURS = [
  'ANC=',
  'ours() {',
  '  if [ -z "$ANC" ]; then ANC=" "; a=$$; while [ "$a" -gt 1 ] && pstat "$a"; do ANC="$ANC$a $PG $SI "; a=$PP; done; fi',
  '  case "$ANC" in *" $1 "*) return 0;; esac',
  '  return 1',
  '}',
].join('\n');

/**
 * `sigeach SIG` (needs {@link OURS}): sends SIG to each `pid start` line on stdin whose
 * process is still the one of that start time and not a zombie, never to PID 1 or below,
 * nor to this script, its ancestors, or a leader of their groups or sessions. Prints `SENT
 * PID` for each signal the kernel took.
 */
export const SIGEACH = [
  'sigeach() {',
  '  while read -r p s; do',
  '    case "$p" in ""|*[!0-9]*) continue;; esac',
  '    [ "$p" -gt 1 ] && ! ours "$p" || continue',
  '    pstat "$p" && [ "$T" = "$s" ] && [ "$ST" != Z ] && kill -"$1" "$p" 2>/dev/null && echo "SENT $p"',
  '  done',
  '  return 0',
  '}',
  // `alive`: the `pid start` lines on stdin whose process still runs (same start time, not a zombie).
  'alive() { while read -r p s; do pstat "$p" && [ "$T" = "$s" ] && [ "$ST" != Z ] && echo "$p $s"; done; return 0; }',
].join('\n');

/** The variable the wrapper exports to the job: `<session id>:<nonce>` (see {@link MARK}). */
export const MARK_VAR = 'PROCWARD_SESSION_ID';

/**
 * The session's mark (needs {@link SAFE_READ}): the launch writes `$D/mark`, the session id,
 * a colon and a nonce of 32 hex digits the host drew for this launch, and the wrapper exports
 * it to the job as {@link MARK_VAR}. `mark ID` sets `MK` to the whole environ entry
 * (`PROCWARD_SESSION_ID=ID:<nonce>`) when the file holds ID, a colon and such a nonce, else
 * to nothing. ID comes from the host, never from a far-side file, so a job that rewrites its
 * own `mark` can point a kill only at processes carrying its own session id.
 */
export const MARK = `mark() { MK=; M=$(rd "$D/mark" 80); case "$M" in "$1:"*) N=\${M#"$1:"};; *) return 0;; esac; case "$N" in *[!0-9a-f]*) return 0;; esac; [ \${#N} -eq 32 ] && MK="${MARK_VAR}=$M"; return 0; }`;

/**
 * Reading the session directory, which the job can write into (it runs as the same user):
 * `rd FILE MAX` prints at most MAX bytes of FILE, and only when it is a regular file and not
 * a symlink (a FIFO would block the read, a symlink to /dev/zero would never end it); `sz
 * FILE` prints its size as its directory entry gives it (`ls -lnd`, never by reading it), 0
 * unless it is a regular file and not a symlink; `num V` succeeds when V is a decimal number
 * of 1 to 18 digits (what shell arithmetic takes without overflow).
 */
export const SAFE_READ = [
  'reg() { [ -f "$1" ] && [ ! -L "$1" ]; }',
  'rd() { reg "$1" && head -c "$2" "$1" 2>/dev/null; }',
  'num() { case "$1" in ""|*[!0-9]*) return 1;; esac; [ ${#1} -le 18 ]; }',
  'sz() { Z=0; if reg "$1"; then set -f; set -- $(ls -lnd "$1" 2>/dev/null); set +f; num "$5" && Z=$5; fi; echo "$Z"; }',
].join('\n');

/**
 * Sets `P` to the wrapper's PID from the pid file (empty when there is none, or it is not a
 * number), then `A` to `alive` when `$P` is this session's wrapper, else `dead`. With /proc
 * and a recorded start time (`$D/start`, in `PS`), by identity, and by its command line,
 * whose last argument is `$D` (the job can rewrite `pid` and `start` to name another of the
 * user's processes with its true start time; it cannot give that one the wrapper's
 * arguments); otherwise by its command line naming `$D`.
 */
export const WRAPPER_ALIVE = [
  PSTAT,
  SAFE_READ,
  'P=$(rd "$D/pid" 24); num "$P" || P=',
  'PS=$(rd "$D/start" 24); num "$PS" || PS=',
  'A=dead',
  'if [ -n "$P" ] && [ -n "$PS" ] && [ -d /proc/1 ]; then',
  '  pstat "$P" && [ "$T" = "$PS" ] && [ "$ST" != Z ] && tr \'\\000\' \'\\n\' < "/proc/$P/cmdline" 2>/dev/null | grep -qxF -- "$D" && A=alive',
  'elif [ -n "$P" ]; then',
  '  ps -o args= -p "$P" 2>/dev/null | grep -qF -- "$D" && A=alive',
  'fi',
].join('\n');

/**
 * A kill's claim, which every host following the session reads (see `killRemote` in
 * `sandbox.ts` and `farpoll.ts`). Before its first signal a kill writes `kill`: the far
 * side's `date +%s` by which it will be done (`claim SECONDS`: now plus its grace period and
 * a margin). Once nothing of the job is left it writes `killed`: the name of the signal that
 * ended the job (`claimed SIGNAL`). Each is written to a temporary file and renamed.
 */
export const KILL_CLAIM = [
  'claim() { rm -f "$D/kill.tmp"; echo $(( $(date +%s) + $1 )) > "$D/kill.tmp" && mv -f "$D/kill.tmp" "$D/kill"; }',
  'claimed() { rm -f "$D/killed.tmp"; echo "$1" > "$D/killed.tmp" && mv -f "$D/killed.tmp" "$D/killed"; }',
].join('\n');

/**
 * Seconds a kill's claim allows beyond its grace period (see {@link KILL_CLAIM}): the settle
 * window, and the far-side script's own steps, which stretch under load.
 */
export const CLAIM_MARGIN_S = 30;

/** The furthest ahead a kill puts its deadline (twice the longest grace period, plus {@link CLAIM_MARGIN_S}): seconds. */
export const MAX_CLAIM_S = 2 * Math.ceil(MAX_GRACE_MS / 1000) + CLAIM_MARGIN_S;

/**
 * Reads a kill's claim (see {@link KILL_CLAIM}; needs {@link SAFE_READ}): `K` is `pending`
 * while the deadline in `kill` is ahead on the far side's clock (by {@link MAX_CLAIM_S} at
 * most: one further ahead is no kill's, but the job's), `expired` after it, and `-` without
 * a parsable `kill`; `KS` is the signal `killed` names (`SIG` then capitals or
 * digits), `-` without a parsable `killed`. Unparsable files are ignored, not trusted.
 */
export const KILL_STATE = [
  'K=-; KD=$(rd "$D/kill" 24)',
  'NOW=$(date +%s)',
  `if num "$KD" && [ "$KD" -le $((NOW + ${MAX_CLAIM_S})) ]; then if [ "$KD" -gt "$NOW" ]; then K=pending; else K=expired; fi; fi`,
  'KS=$(rd "$D/killed" 24)',
  'case "$KS" in SIG[A-Z0-9]*) case "$KS" in *[!A-Z0-9]*) KS=-;; esac;; *) KS=-;; esac',
].join('\n');

/**
 * Shell that creates the session directory `$D` and its base `${D%/*}` only where no other
 * far-side user can reach them. The base (default `/tmp/procward-sandbox-<uid>`, below a
 * world-writable /tmp) may have been created first by someone else, who could then swap the
 * session directory for one that names any file as its log: so the base must be a real
 * directory (not a symlink) owned by this user and writable by no one else, created 0700
 * when missing; the session directory is new (or this user's own). Otherwise the launch
 * fails with exit status 126 and says why.
 */
export const SAFE_DIRS = [
  'umask 077',
  'B=${D%/*}',
  'refuse() { echo "procward: refusing to launch: $1" >&2; exit 126; }',
  '[ -L "$B" ] && refuse "sandbox base $B is a symlink"',
  '[ -e "$B" ] || mkdir -p -m 700 "$B" || refuse "cannot create sandbox base $B"',
  '[ ! -L "$B" ] && [ -d "$B" ] || refuse "sandbox base $B is not a directory"',
  '[ -O "$B" ] || refuse "sandbox base $B is not owned by $(id -un) (uid $(id -u))"',
  'case $(ls -ld "$B") in ?????w*|????????w*) refuse "sandbox base $B is writable by its group or by others";; esac',
  'if ! mkdir -m 700 "$D" 2>/dev/null; then [ ! -L "$D" ] && [ -d "$D" ] && [ -O "$D" ] || refuse "session directory $D exists and is not this user\'s own"; fi',
].join('\n');

/**
 * The wrapper `sh -c` runs with the session directory as `$1`. It starts the command (with
 * bash when the far side has it) in the background, output to the log, and records its
 * status in the exit file: the code, or `signal:NAME` when the job died of a signal (the far
 * side's name for it, from `kill -l`).
 *
 * A shell's `$?` says 128+N both for a job killed by signal N and for one that ran
 * `exit 128+N`, so a watcher polls the job's /proc entry until it is a zombie and reads its
 * raw wait status (field 52) before the wrapper reaps it. The wrapper must not reap it
 * first: a shell reaps every ended child at the next command it runs. So the job is held at
 * a gate (a FIFO read) until the wrapper blocks reading another FIFO, the watcher opens the
 * gate, and the wrapper reads on only once the watcher has the status. The watcher backs off
 * from 20 ms to 1 s. Without /proc or `mkfifo`, or under a shell that reaps children as they
 * end (bash as `sh`), the shell's status is recorded as the code.
 */
export const WRAPPER = [
  'D=$1',
  PSTAT,
  'cd "$(cat "$D/cwd")" 2>/dev/null || cd',
  '. "$D/env"',
  // The session's mark (see MARK), after the caller's variables so none of them replaces it.
  `M=$(cat "$D/mark" 2>/dev/null) && [ -n "$M" ] && export ${MARK_VAR}="$M"`,
  'SH=sh; command -v bash >/dev/null 2>&1 && SH=bash',
  // An asynchronous command of a non-interactive shell starts with SIGINT and SIGQUIT
  // ignored, and no shell can trap a signal ignored on entry: GNU env (coreutils 8.31+) gives
  // the job their default back, so a signal sent to it (`signal(id, 'SIGINT')`) reaches its
  // trap as on this host. BusyBox has no such tool: there the job ignores both.
  'env --default-signal=INT,QUIT true 2>/dev/null && SH="env --default-signal=INT,QUIT $SH"',
  'F=; rm -f "$D/go" "$D/gate"',
  '[ -d /proc/1 ] && mkfifo -m 600 "$D/go" "$D/gate" 2>/dev/null && exec 9<> "$D/go" 8<> "$D/gate" && F=1',
  'rm -f "$D/go" "$D/gate"',
  'if [ -z "$F" ]; then',
  '  $SH "$D/cmd" > "$D/output.log" 2>&1 < /dev/null &',
  '  C=$!; pstat "$C" && echo "$C $T" > "$D/job"',
  '  wait "$C"; R=$?',
  'else',
  '  { read -r _ <&8; exec $SH "$D/cmd" > "$D/output.log" 2>&1 < /dev/null 8>&- 9>&-; } &',
  '  C=$!; pstat "$C" && echo "$C $T" > "$D/job"',
  '  (',
  // The gate opens once the wrapper sleeps in its read (after about 2 s regardless; at once
  // where sleep takes no fractions).
  '    i=0; while [ $i -lt 200 ] && pstat $$ && [ "$ST" != S ]; do sleep 0.01 2>/dev/null || break; i=$((i+1)); done',
  '    echo go >&8',
  '    Z=0.02',
  '    while pstat "$C" && [ "$ST" != Z ]; do',
  '      sleep $Z 2>/dev/null || sleep 1',
  '      case $Z in 0.02) Z=0.05;; 0.05) Z=0.1;; 0.1) Z=0.2;; 0.2) Z=0.5;; *) Z=1;; esac',
  '    done',
  '    W=; [ "$ST" = Z ] && W=$X',
  '    echo "s$W" >&9',
  '  ) > /dev/null 2>&1 &',
  // A SIGCHLD interrupts the read on some shells: read again.
  '  W=; until { read -r W <&9; } 2>/dev/null; do :; done',
  '  W=${W#s}',
  '  exec 8>&- 9>&-',
  '  wait "$C"; S=$?',
  '  R=$S',
  '  case "$W" in ""|*[!0-9]*) ;; *)',
  '    N=$((W & 127))',
  '    if [ "$N" -ne 0 ] && [ "$N" -ne 127 ] && [ "$S" -eq $((128 + N)) ]; then R="signal:$(kill -l "$N" 2>/dev/null || echo "$N")"; fi',
  '  esac',
  'fi',
  'echo "$R" > "$D/exit.tmp"; mv "$D/exit.tmp" "$D/exit"',
].join('\n');
