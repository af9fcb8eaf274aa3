// Post-mortem debugging in VS Code's own debugger views: the `csi` debug type runs csi-dap on
// an executable + core (Call Stack, Variables, Watch, Debug Console, Disassembly, reverse
// stepping through the recorded path), and the editor's must / may / never colours follow the
// frame and path step selected there (through the language server's selection).

import * as vscode from 'vscode';

export const DEBUG_TYPE = 'csi';

/** Where a Call Stack frame is in the crash (the adapter's `csiPosition` answer). */
export interface DebugPosition {
  thread: number;
  frame: number;
  /** A call inlined into the frame (0 = innermost), `null` (or absent) for the frame itself. */
  inline?: number | null;
  /** Path step shown, `null` for the frame's current position. */
  step: number | null;
  program: string;
  core: string;
}

export function isDebugPosition(v: unknown): v is DebugPosition {
  const p = v as DebugPosition;
  return (
    typeof p === 'object' &&
    p !== null &&
    Number.isInteger(p.thread) &&
    Number.isInteger(p.frame) &&
    (p.inline === undefined || p.inline === null || Number.isInteger(p.inline)) &&
    (p.step === null || Number.isInteger(p.step)) &&
    typeof p.program === 'string' &&
    typeof p.core === 'string'
  );
}

export interface DebugHooks {
  /** csi-dap's path, or why it was not found. */
  adapterPath(): { path: string } | { error: string };
  /** Asks the user for a crash (recent ones, or browse). */
  pickCrash(): Promise<{ executable: string; core: string } | undefined>;
  /** Shows a frame / path step of the crash in the editor (line states, stack view). */
  follow(p: DebugPosition): Promise<void>;
  log(line: string): void;
}

/** A launch configuration for a crash (what *Debug Crash…* starts). */
export function launchConfiguration(crash: { executable: string; core: string }): vscode.DebugConfiguration {
  return { type: DEBUG_TYPE, request: 'launch', name: 'CSI: debug the core dump', program: crash.executable, coreFile: crash.core };
}

export function registerDebugging(hooks: DebugHooks): vscode.Disposable[] {
  const factory: vscode.DebugAdapterDescriptorFactory = {
    createDebugAdapterDescriptor() {
      const found = hooks.adapterPath();
      if ('error' in found) throw new Error(found.error);
      hooks.log(`csi-dap: ${found.path}`);
      return new vscode.DebugAdapterExecutable(found.path, []);
    },
  };
  const provider: vscode.DebugConfigurationProvider = {
    async resolveDebugConfiguration(_folder, config) {
      // F5 without a launch.json, or a configuration missing the crash: ask for it.
      if (!config.program || !(config.coreFile || config.coreDumpPath)) {
        const crash = await hooks.pickCrash();
        if (!crash) return undefined;
        return { ...launchConfiguration(crash), ...config, type: DEBUG_TYPE, request: config.request ?? 'launch', name: config.name ?? 'CSI: debug the core dump', program: crash.executable, coreFile: crash.core };
      }
      return config;
    },
  };
  const follow = vscode.debug.onDidChangeActiveStackItem(async (item) => {
    if (!item || item.session.type !== DEBUG_TYPE || !('frameId' in item)) return;
    try {
      const p: unknown = await item.session.customRequest('csiPosition', { frameId: item.frameId });
      if (isDebugPosition(p)) await hooks.follow(p);
    } catch (e) {
      hooks.log(`following the debugger: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
  return [
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, factory),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider),
    follow,
  ];
}
