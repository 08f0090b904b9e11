#!/usr/bin/env bash
# Every platform run of issue 15 in one command (`npm run test:platforms`, the last part of
# `npm test`), with a table of each run's result and time at the end.
#
#  1. setup.sh: with CI=true it installs what is missing (apt, rustup targets, npm-shipped
#     Node binaries); elsewhere it only checks (--check) and prints `SKIPPED: missing ...`,
#     and each run below that lacks a tool skips itself the same way.
#  2. Two lanes at once, so that one lane's emulated test runs (Wine, qemu: mostly one busy
#     core) overlap the other's compiles and native runs on this 2-core machine:
#       emulated: windows.sh, consumer-windows.sh, arm64.sh (CARGO_TARGET_DIR target-platforms/)
#       native:   macos-check.sh, musl.sh, node-versions.sh (target-platforms/native/)
#     Each lane has its own target directory: cargo holds a directory's lock for a whole
#     `cargo test`, test runs included, so a shared one would run the lanes one after another.
#
# A run's output goes to .platforms/all/<run>.log; the ones that failed are printed at the
# end. A run still going after PROCWARD_PLATFORM_RUN_TIMEOUT seconds (default 900, more than
# twice the slowest run measured here) is ended with its process group and counts as failed:
# a hang under Wine or qemu must not eat the CI run's time. Exit status 1 when any run failed, or was skipped while CI=true (or with
# PROCWARD_PLATFORMS_REQUIRED=1). Expects `npm run build` to have run (npm test's pretest
# does): the JS suites load dist/ and the x64 addon.
# Usage: scripts/platforms/all.sh
set -uo pipefail
SCRIPT_NAME=all
source "$(dirname "$0")/common.sh"

HERE="$ROOT/scripts/platforms"
LOGS="$PLATFORMS/all"
mkdir -p "$LOGS"
rm -f "$LOGS"/*.result
STRICT=0
RUN_TIMEOUT="${PROCWARD_PLATFORM_RUN_TIMEOUT:-900}"
if [ "${CI:-}" = "true" ] || [ "${PROCWARD_PLATFORMS_REQUIRED:-}" = "1" ]; then STRICT=1; fi

# run NAME SCRIPT [ARGS...]: runs one script with its output in $LOGS/NAME.log, and writes
# "NAME RESULT SECONDS" to $LOGS/NAME.result (RESULT: passed, FAILED or SKIPPED).
run() {
  local name="$1" t0 rc=0 result=passed
  shift
  t0=$(date +%s)
  echo "[$SCRIPT_NAME] $name: started"
  # timeout runs the script in a process group of its own and signals that whole group.
  timeout --kill-after=30 "$RUN_TIMEOUT" bash "$@" >"$LOGS/$name.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "[$SCRIPT_NAME] $name: ended after the run timeout (${RUN_TIMEOUT} s)" >>"$LOGS/$name.log"
    result=FAILED
  elif [ "$rc" -ne 0 ]; then
    result=FAILED
  elif grep -q "SKIPPED:" "$LOGS/$name.log"; then
    result=SKIPPED
  fi
  echo "$name $result $(($(date +%s) - t0))" >"$LOGS/$name.result"
  echo "[$SCRIPT_NAME] $name: $result in $(($(date +%s) - t0)) s"
}

lane_emulated() {
  run windows "$HERE/windows.sh"
  run consumer-windows "$HERE/consumer-windows.sh"
  run arm64 "$HERE/arm64.sh"
}

lane_native() {
  export PROCWARD_PLATFORMS_TARGET_DIR="$CARGO_TARGET_DIR/native"
  run macos-check "$HERE/macos-check.sh"
  run musl "$HERE/musl.sh"
  run node-versions "$HERE/node-versions.sh"
}

LANES=()
stop_lanes() {
  # Each lane leads its own process group (setsid): end those groups, and only those.
  local pid
  for pid in "${LANES[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
trap 'stop_lanes; exit 130' INT TERM

if [ "$STRICT" -eq 1 ]; then run setup "$HERE/setup.sh"; else run setup "$HERE/setup.sh" --check; fi
setsid bash -c "$(declare -f run lane_emulated); $(declare -p SCRIPT_NAME HERE LOGS RUN_TIMEOUT); lane_emulated" &
LANES+=($!)
setsid bash -c "$(declare -f run lane_native); $(declare -p SCRIPT_NAME HERE LOGS RUN_TIMEOUT CARGO_TARGET_DIR); lane_native" &
LANES+=($!)
wait "${LANES[@]}"
trap - INT TERM

passed=0 failed=0 skipped=0
echo "[$SCRIPT_NAME] run              result   time"
for name in setup windows consumer-windows arm64 macos-check musl node-versions; do
  read -r _ result secs <"$LOGS/$name.result" 2>/dev/null || { result=FAILED secs=-; }
  printf '[%s] %-16s %-8s %s s\n' "$SCRIPT_NAME" "$name" "$result" "$secs"
  case "$result" in
    passed) passed=$((passed + 1)) ;;
    SKIPPED) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
  if [ "$result" = FAILED ]; then
    echo "[$SCRIPT_NAME] --- last lines of $LOGS/$name.log ---"
    tail -40 "$LOGS/$name.log" 2>/dev/null | sed "s/^/[$name] /"
  fi
done
finish
echo "platforms: $passed passed, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ]; then exit 1; fi
if [ "$skipped" -gt 0 ] && [ "$STRICT" -eq 1 ]; then
  echo "[$SCRIPT_NAME] FAILED: $skipped run(s) skipped, and CI=true requires every run" >&2
  exit 1
fi
exit 0
