// Where the csi-lsp binary is: the `csi.serverPath` setting, then a copy bundled with the
// extension (or the checkout the extension was built in), then PATH.

import * as path from 'path';

export interface ServerSearch {
  /** `csi.serverPath` (may be empty). `~` is expanded, relative paths are against `workspace`. */
  setting: string;
  extensionPath: string;
  workspace?: string;
  pathEnv: string;
  home?: string;
  windows?: boolean;
  isFile: (p: string) => boolean;
}

export interface Found {
  path: string;
  source: 'setting' | 'bundled' | 'PATH';
}

export function bundledCandidates(extensionPath: string, exe: string): string[] {
  return [
    path.join(extensionPath, 'server', exe),
    // Running from a checkout: vscode-extension/ next to the cargo target directory.
    path.join(extensionPath, '..', 'target', 'release', exe),
    path.join(extensionPath, '..', 'target', 'debug', exe),
  ];
}

/**
 * The server (`csi-lsp`, or the debug adapter `csi-dap` with its own setting), or an error
 * message saying where we looked.
 */
export function findServer(o: ServerSearch, name = 'csi-lsp', settingName = 'csi.serverPath'): Found | { error: string } {
  const exe = o.windows ? `${name}.exe` : name;
  const setting = o.setting.trim();
  if (setting) {
    let p = setting;
    if (p.startsWith('~') && o.home) p = path.join(o.home, p.slice(1));
    if (!path.isAbsolute(p) && o.workspace) p = path.join(o.workspace, p);
    if (o.isFile(p)) return { path: p, source: 'setting' };
    return { error: `${settingName}: no ${name} at ${p}` };
  }
  for (const p of bundledCandidates(o.extensionPath, exe)) {
    if (o.isFile(p)) return { path: p, source: 'bundled' };
  }
  const sep = o.windows ? ';' : ':';
  for (const dir of o.pathEnv.split(sep).filter(Boolean)) {
    const p = path.join(dir, exe);
    if (o.isFile(p)) return { path: p, source: 'PATH' };
  }
  return {
    error: `${name} not found: set ${settingName}, or put ${name} on PATH (build it with \`cargo build --release -p csi-lsp\`)`,
  };
}
