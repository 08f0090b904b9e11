#!/usr/bin/env bash
# macOS (issue 15): compile check only, nothing runs here. For x86_64-apple-darwin and
# aarch64-apple-darwin: `cargo check` of the core with every target (library, tests,
# procward-supervise, examples) and of the binding. No macOS SDK or linker is needed for a
# check, so it proves the Rust compiles against the libc/nix/mio APIs of macOS, not that it
# links or behaves.
# Usage: scripts/platforms/macos-check.sh   (after scripts/platforms/setup.sh)
set -euo pipefail
SCRIPT_NAME=macos-check
source "$(dirname "$0")/common.sh"

TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)
require cargo
installed="$(rustup target list --installed)"
for target in "${TARGETS[@]}"; do
  grep -qx "$target" <<<"$installed" || require "rustup-target-$target"
done

check() {
  local target="$1"
  cargo check -q -j "$CARGO_JOBS" -p procward-core --all-targets --target "$target" &&
    cargo check -q -j "$CARGO_JOBS" -p procward-node --target "$target"
}

failed=0
for target in "${TARGETS[@]}"; do
  step "cargo check $target" check "$target" || failed=1
done
finish
exit "$failed"
