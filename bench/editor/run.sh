#!/usr/bin/env bash
# The extension in a real VS Code: code-server (from the npm registry) with the packaged .vsix
# installed, a workspace whose .csi.toml names the null_deref fixture crash, driven by Debian's
# Chromium through playwright-core (bench/editor/drive.mjs). Checks the crash shows at start
# (no C file opened by hand), the must/may/never colours, the inlay hints, the CSI Stack view,
# the hover on a variable, the legend, and a debug session of the csi type (F5: Call Stack,
# Variables three levels deep, Step Back, the Debug Console); writes screenshots. Not a CI test (it installs
# code-server and builds its native modules: minutes).
#
#   bench/editor/run.sh [screenshot-dir]      (default: bench/editor/screenshots, not committed)
#
# Needs: node 20+ and npm, cargo; Debian packages chromium, ripgrep, libkrb5-dev, g++, make,
# python3 (installed with apt-get when missing and running as root).
# CODE_SERVER_VERSION: default the newest code-server whose `engines.node` this node meets
# (4.100.3 for node 20; 4.103+ want node 22). CSI_EDITOR_WORK: the install and workspace
# directory (default /tmp/csi-editor-bench), reused between runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shots=$(realpath -m "${1:-$here/screenshots}")
work=${CSI_EDITOR_WORK:-/tmp/csi-editor-bench}
mkdir -p "$work" "$shots"

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v rg >/dev/null || need_apt+=(ripgrep)
[ -e /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
command -v g++ >/dev/null || need_apt+=(g++)
command -v make >/dev/null || need_apt+=(make)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y --no-install-recommends "${need_apt[@]}"
  else
    echo "install first: apt-get install ${need_apt[*]}" >&2
    exit 2
  fi
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ -z "${CODE_SERVER_VERSION:-}" ]; then
  # The newest version whose engines.node (a major: '20', '22', ...) this node satisfies.
  # npm prints {"code-server@V": node} or, in newer npm, two parallel arrays: ask for both.
  CODE_SERVER_VERSION=$(node -e '
    const { execSync } = require("child_process");
    const q = (f) => JSON.parse(execSync(`npm view "code-server@>=4.90.0" ${f} --json`, { stdio: ["ignore", "pipe", "ignore"] }));
    let m = q("engines.node");
    if (Array.isArray(m)) { const vs = q("version"); m = Object.fromEntries(vs.map((v, i) => ["code-server@" + v, m[i]])); }
    const ok = Object.entries(m).filter(([, e]) => Number(String(e).replace(/[^0-9].*$/, "")) <= Number(process.argv[1]));
    const v = (s) => s.split("@")[1].split(".").map(Number);
    ok.sort(([a], [b]) => { const x = v(a), y = v(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
    if (!ok.length) process.exit(1);
    console.log(v(ok.at(-1)[0]).join("."));' "$node_major")
fi
echo "# node $(node --version), code-server $CODE_SERVER_VERSION"

# --- code-server: npm install without scripts, then what its postinstall does, by hand ------
# (its postinstall downloads ripgrep from GitHub, unreachable here; node-pty's calls npx).
cs=$work/code-server-$CODE_SERVER_VERSION
if [ ! -x "$cs/node_modules/.bin/code-server" ] || ! "$cs/node_modules/.bin/code-server" --version >/dev/null 2>&1; then
  mkdir -p "$cs"
  (
    cd "$cs"
    [ -f package.json ] || echo '{"name": "csi-editor-bench", "private": true}' >package.json
    npm install --no-audit --no-fund --ignore-scripts "code-server@$CODE_SERVER_VERSION" playwright-core@1.55.0
    export npm_config_yes=true npm_config_build_from_source=true
    npm rebuild argon2
    cd node_modules/code-server/lib/vscode
    npm install --omit=dev --ignore-scripts --no-audit --no-fund
    npm rebuild kerberos @parcel/watcher @vscode/spdlog native-watchdog node-pty @vscode/deviceid
    mkdir -p node_modules/@vscode/ripgrep/bin
    ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    ln -sfn node_modules node_modules.asar
    (cd bin/remote-cli && ln -sf code-linux.sh code-server)
    (cd bin/helpers && ln -sf browser-linux.sh browser.sh)
    cd extensions && npm install --omit=dev --ignore-scripts --no-audit --no-fund
  )
fi
export XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data
code_server=("$cs/node_modules/.bin/code-server" --user-data-dir "$work/user" --extensions-dir "$work/extensions")

# --- the extension, packaged with its server --------------------------------------------------
cargo build --release -p csi-lsp --manifest-path "$root/Cargo.toml"
(cd "$root/vscode-extension" && { [ -d node_modules ] || npm ci; } && npm run package:with-server -- -o "$work/csi.vsix")
rm -rf "$work/extensions"
"${code_server[@]}" --install-extension "$work/csi.vsix" --force

# --- a workspace whose .csi.toml names the crash; user settings without distractions -----------
ws=$work/workspace
rm -rf "$ws" && mkdir -p "$ws/src"
cp "$root/fixtures/src/null_deref.c" "$ws/src/"
crash=$root/fixtures/crashes/null_deref/realistic-O0
cat >"$ws/.csi.toml" <<EOF
executable = "$crash/null_deref"
core = "$crash/core"
[[substitute-path]]
from = "./src"
to = "$ws/src"
EOF
# A launch configuration of the csi debug type (F5 opens the core in the debugger).
mkdir -p "$ws/.vscode"
cat >"$ws/.vscode/launch.json" <<EOF
{
  "version": "0.2.0",
  "configurations": [
    {"type": "csi", "request": "launch", "name": "CSI: null_deref core",
     "program": "$crash/null_deref", "coreFile": "$crash/core",
     "substitutePaths": [{"from": "./src", "to": "$ws/src"}]}
  ]
}
EOF
mkdir -p "$work/user/User"
cat >"$work/user/User/settings.json" <<'EOF'
{
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.ignoreRecommendations": true,
  "editor.inlayHints.enabled": "on",
  "editor.hover.delay": 100,
  "window.zoomLevel": 0,
  "workbench.colorTheme": "Default Dark Modern"
}
EOF

port=${PORT:-18080}
"${code_server[@]}" --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry \
  --disable-workspace-trust --disable-getting-started-override "$ws" >"$work/code-server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 60); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 1
done

CSI_NODE_MODULES="$cs/node_modules" CSI_URL="http://127.0.0.1:$port/?folder=$ws" CSI_SHOTS="$shots" \
  CHROMIUM=$(command -v chromium) node "$here/drive.mjs"
