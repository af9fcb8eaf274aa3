#!/usr/bin/env bash
# Headless Neovim tests of the CSI plugin (and of a plain LSP client) against the real csi-lsp
# on the checked-in null_deref crash. Exits non-zero when a test fails.
#   CSI_LSP=/path/to/csi-lsp editors/nvim/tests/run.sh   (default: the release build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
server=${CSI_LSP:-${CARGO_TARGET_DIR:-$root/target}/release/csi-lsp}
adapter=${CSI_DAP:-$(dirname "$server")/csi-dap}
if [ ! -x "$server" ]; then
  echo "csi-lsp not found at $server (cargo build --release -p csi-lsp, or set CSI_LSP)" >&2
  exit 2
fi
if [ ! -x "$adapter" ]; then
  echo "csi-dap not found at $adapter (cargo build --release -p csi-lsp, or set CSI_DAP)" >&2
  exit 2
fi
command -v nvim >/dev/null || { echo "nvim not found" >&2; exit 2; }
echo "# $(nvim --version | head -1), server $server"
status=0
# A real crash store for test_crashes.lua (csi triage --store of real cores of the triage
# corpus program); without it that test skips, or fails under CI.
store_dir=$(mktemp -d)
trap 'rm -rf "$store_dir"' EXIT
echo "# crash store fixture"
if CSI=${CSI:-$(dirname "$server")/csi} "$root/scripts/crash-store-fixture.sh" "$store_dir/store"; then
  export CSI_STORE_DIR=$store_dir/store
elif [ -n "${CI:-}" ]; then
  echo "# the crash store fixture failed (CI: a failure)" >&2
  status=1
fi
# Every Lua file compiles (also the Neovim 0.11 snippet, which 0.7 cannot run).
echo "# lua syntax"
if ! nvim --headless -u NONE -i NONE -n -c "lua local bad = 0
  for _, f in ipairs(vim.fn.glob('$root/editors/**/*.lua', false, true)) do
    local ok, err = loadfile(f)
    if not ok then io.stdout:write('FAIL - ' .. err .. '\\n'); bad = bad + 1 end
  end
  vim.cmd(bad > 0 and 'cquit 1' or 'qall!')"; then
  status=1
fi
for t in "$here"/test_*.lua; do
  echo "# $(basename "$t")"
  # -u NONE: no user config, no plugins; each test file loads what it needs.
  if ! CSI_LSP="$server" CSI_DAP="$adapter" CSI_ROOT="$root" timeout 120 \
      nvim --headless -u NONE -i NONE -n -c "luafile $t" </dev/null; then
    echo "# $(basename "$t") failed" >&2
    status=1
  fi
done
exit $status
