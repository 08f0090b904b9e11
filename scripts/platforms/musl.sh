#!/usr/bin/env bash
# Linux x64 musl (issue 15): the core's whole test suite (unit tests, tests/reactor.rs,
# tests/spawn.rs) built for x86_64-unknown-linux-musl and run natively: the binaries are
# static (Rust's self-contained musl), so they run on this glibc machine unchanged.
#
# Not done here: the addon itself. A cdylib needs `-C target-feature=-crt-static` on musl,
# and then a linker that links against musl's libc and a musl libgcc_s; Debian's musl-gcc
# finds no libgcc_s, so that build belongs on Alpine (or the CI matrix).
# Usage: scripts/platforms/musl.sh   (after scripts/platforms/setup.sh)
set -euo pipefail
SCRIPT_NAME=musl
source "$(dirname "$0")/common.sh"

TARGET=x86_64-unknown-linux-musl
require cargo
rustup target list --installed | grep -qx "$TARGET" || require "rustup-target-$TARGET"

core_tests() {
  local rc=0 log="$CARGO_TARGET_DIR/musl-core-tests.log"
  mkdir -p "$CARGO_TARGET_DIR"
  cargo test -j "$CARGO_JOBS" -p procward-core --target "$TARGET" >"$log" 2>&1 || rc=$?
  grep -E "^test result|FAILED|panicked|^error" "$log" || true
  [ "$rc" -eq 0 ] || tail -60 "$log" >&2
  return "$rc"
}

step "core tests $TARGET" core_tests
finish
