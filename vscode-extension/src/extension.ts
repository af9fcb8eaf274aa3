// The glue: starts csi-lsp through vscode-languageclient, registers commands, views,
// decorations and the status bar item. Everything that can be plain logic lives in ./logic.

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { LanguageClient, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';

import {
  type BucketView,
  type CrashNode,
  bucketMessage,
  bucketNodes,
  bucketView,
  crashItemView,
  crashNodes,
  suspiciousHover,
  suspiciousLabel,
} from './logic/crashes';
import { type DecorationPlan, KINDS, type Kind, type Scope, nextScope, plan } from './logic/decorations';
import { type FileOverview, countsText, fileOverview, ratioBar } from './logic/overview';
import {
  type Bucket,
  type BucketCrashes,
  type BucketLineStates,
  type CrashBuckets,
  type FunctionSpan,
  type FunctionSpans,
  type LineStates,
  Methods,
  type PathTrace,
  type QueryResult,
  type SliceParams,
  type SliceResult,
  type Stack,
  type StepResult,
} from './logic/protocol';
import { crashArg, frameArg, frameAt, lineArg, reportArg } from './logic/args';
import { legendMarkdown, legendText } from './logic/legend';
import { findServer } from './logic/server';
import { type DebugPosition, launchConfiguration, registerDebugging } from './debug';
import { parseVariables, sliceMessage, sliceParams, sliceTooltip } from './logic/slice';
import { PAGE, type StackNode, ViewCommands, frameChildren, itemView, roots, splitOmitted, stepChildren } from './logic/stackTree';
import { CsiState, type RecentCrash, addRecent, frameTitle } from './logic/state';
import { deltaTo } from './logic/stepping';

export const Commands = {
  openCrash: 'csi.vscode.openCrash',
  openReport: 'csi.vscode.openReport',
  selectFrame: ViewCommands.selectFrame,
  goToStep: ViewCommands.goToStep,
  stepBack: 'csi.vscode.stepBack',
  stepForward: 'csi.vscode.stepForward',
  query: 'csi.vscode.query',
  clear: 'csi.vscode.clear',
  toggleScope: 'csi.vscode.toggleScope',
  revealLine: 'csi.vscode.revealLine',
  refresh: 'csi.vscode.refresh',
  sliceCrash: 'csi.vscode.sliceCrash',
  sliceLine: 'csi.vscode.sliceLine',
  sliceClear: 'csi.vscode.sliceClear',
  showLegend: 'csi.vscode.showLegend',
  debugCrash: 'csi.vscode.debugCrash',
  refreshCrashes: 'csi.vscode.refreshCrashes',
  showBucketLines: 'csi.vscode.showBucketLines',
  clearBucketLines: 'csi.vscode.clearBucketLines',
} as const;

/** Context key: a bucket's lines are shown (menus offer *Clear Bucket Lines*). */
export const BUCKET_CONTEXT = 'csi.bucketShown';

/** Context key: a slice is shown (menus offer *Clear Slice*). */
export const SLICE_CONTEXT = 'csi.sliceShown';

const RECENT_KEY = 'csi.recentCrashes';

/** What the extension needs of a language client (vscode-languageclient's, or a test's). */
export interface CsiClient {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): vscode.Disposable;
}

function uriKey(u: string): string {
  try {
    return vscode.Uri.parse(u).toString();
  } catch {
    return u;
  }
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('csi');
}

/** Whole-line decoration types for one look (rebuilt when settings change). */
export function createDecorationTypes(extensionPath?: string): Record<Kind, vscode.TextEditorDecorationType> {
  const c = config();
  const sliceRuler = c.get<boolean>('slice.overviewRuler', true);
  const sliceGutter = c.get<boolean>('slice.gutterIcon', true) && extensionPath !== undefined;
  const ruler = c.get<boolean>('decorations.overviewRuler', true);
  const neverStyle = c.get<string>('decorations.neverStyle', 'red');
  const lane = vscode.OverviewRulerLane.Right;
  const color = (id: string) => new vscode.ThemeColor(id);
  const base = (bg: string, rulerId: string): vscode.DecorationRenderOptions => ({
    isWholeLine: true,
    backgroundColor: color(bg),
    ...(ruler ? { overviewRulerColor: color(rulerId), overviewRulerLane: lane } : {}),
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  const never: vscode.DecorationRenderOptions =
    neverStyle === 'faded'
      ? { isWholeLine: true, opacity: '0.45', ...(ruler ? { overviewRulerColor: color('csi.neverRuler'), overviewRulerLane: lane } : {}) }
      : base('csi.neverBackground', 'csi.neverRuler');
  return {
    must: vscode.window.createTextEditorDecorationType(base('csi.mustBackground', 'csi.mustRuler')),
    may: vscode.window.createTextEditorDecorationType(base('csi.mayBackground', 'csi.mayRuler')),
    never: vscode.window.createTextEditorDecorationType(never),
    partial: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      borderWidth: '0 0 0 3px',
      borderStyle: 'dashed',
      borderColor: color('csi.mayRuler'),
    }),
    current: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: color('csi.currentStepBackground'),
      borderWidth: '1px',
      borderStyle: 'solid',
      borderColor: color('csi.currentStepBorder'),
      overviewRulerColor: color('csi.currentStepBorder'),
      overviewRulerLane: vscode.OverviewRulerLane.Center,
      after: { contentText: ' ◀ path step', color: color('csi.currentStepBorder') },
    }),
    // The slice: a left border, a faint background, a gutter mark and a ruler mark in the
    // left lane (the line states use the right one, the path step the centre).
    slice: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: color('csi.sliceBackground'),
      borderWidth: '0 0 0 2px',
      borderStyle: 'solid',
      borderColor: color('csi.sliceBorder'),
      ...(sliceRuler ? { overviewRulerColor: color('csi.sliceBorder'), overviewRulerLane: vscode.OverviewRulerLane.Left } : {}),
      ...(sliceGutter
        ? { gutterIconPath: vscode.Uri.file(path.join(extensionPath!, 'media', 'slice.svg')), gutterIconSize: '60%' }
        : {}),
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }),
    sliceStatic: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      borderWidth: '0 0 0 2px',
      borderStyle: 'dotted',
      borderColor: color('csi.sliceStaticBorder'),
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }),
    sliceCriterion: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      borderWidth: '0 0 0 5px',
      borderStyle: 'solid',
      borderColor: color('csi.sliceBorder'),
      ...(sliceRuler ? { overviewRulerColor: color('csi.sliceBorder'), overviewRulerLane: vscode.OverviewRulerLane.Full } : {}),
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }),
  };
}

/** The mark of a bucket's suspicious lines: a double left border, a ruler mark and (per
 * line) an inline `◆ #rank Ochiai lo–hi` with a hover. */
export function createSuspiciousType(): vscode.TextEditorDecorationType {
  const color = new vscode.ThemeColor('csi.suspicious');
  return vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderWidth: '0 0 0 3px',
    borderStyle: 'double',
    borderColor: color,
    overviewRulerColor: color,
    overviewRulerLane: vscode.OverviewRulerLane.Left,
    after: { color, margin: '0 0 0 2em' },
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
}

/** Paints one editor from a plan. */
export function applyPlan(editor: vscode.TextEditor, types: Record<Kind, vscode.TextEditorDecorationType>, p: DecorationPlan): void {
  for (const k of KINDS) {
    editor.setDecorations(
      types[k],
      p[k].map((r) => new vscode.Range(r.start, 0, r.end, 0)),
    );
  }
}

export class StackProvider implements vscode.TreeDataProvider<StackNode> {
  private readonly emitter = new vscode.EventEmitter<StackNode | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private traces = new Map<string, PathTrace>();

  constructor(
    private readonly state: CsiState,
    private readonly client: () => CsiClient | undefined,
  ) {}

  refresh(): void {
    this.emitter.fire();
  }

  resetCache(): void {
    this.traces.clear();
  }

  getTreeItem(node: StackNode): vscode.TreeItem {
    const stack = this.state.stack!;
    const sel = this.state.selected;
    const v = itemView(node, stack, sel, sel?.step ?? this.state.trace?.current ?? null);
    const state =
      v.collapsible === 'none'
        ? vscode.TreeItemCollapsibleState.None
        : v.collapsible === 'expanded'
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(v.label, state);
    item.description = v.description;
    item.tooltip = v.tooltip;
    item.contextValue = v.contextValue;
    if (v.icon) item.iconPath = new vscode.ThemeIcon(v.icon);
    if (v.command) item.command = { command: v.command.id, title: v.label, arguments: v.command.args };
    return item;
  }

  async getChildren(node?: StackNode): Promise<StackNode[]> {
    const stack = this.state.stack;
    if (!stack) return [];
    if (!node) return roots(stack);
    const client = this.client();
    switch (node.kind) {
      case 'thread':
        return frameChildren(stack, node.thread);
      case 'frame':
      case 'inlined': {
        // A call inlined into the frame has a path trace of its own activation.
        const inline = node.kind === 'inlined' ? node.inline : null;
        const steps = inline === null ? node.frame.pathSteps : node.frame.inlined?.[inline]?.pathSteps;
        if (!steps) return [];
        const t = this.state.trace;
        if (t && t.thread === node.thread && t.frame === node.frame.index && (t.inline ?? null) === inline) return stepChildren(t);
        const key = `${node.thread}/${node.frame.index}/${inline ?? ''}`;
        let trace = this.traces.get(key);
        if (!trace && client) {
          trace = await client.sendRequest<PathTrace>(Methods.pathTrace, frameAt(node.thread, node.frame.index, inline));
          this.traces.set(key, trace);
        }
        return trace ? stepChildren(trace) : [];
      }
      case 'omitted': {
        if (node.to - node.from > PAGE) {
          return splitOmitted(node.from, node.to).map((r) => ({ kind: 'omitted', thread: node.thread, ...r }));
        }
        if (!client) return [];
        const page = await client.sendRequest<Stack>(Methods.stack, { range: { thread: node.thread, from: node.from, to: node.to } });
        const t = page.threads.find((x) => x.index === node.thread);
        return (t?.frames ?? []).map((frame) => ({ kind: 'frame', thread: node.thread, frame }));
      }
      default:
        return [];
    }
  }
}

/** The CSI Crashes view: the crash store's buckets → their crashes. */
export class CrashesProvider implements vscode.TreeDataProvider<CrashNode> {
  private readonly emitter = new vscode.EventEmitter<CrashNode | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  /** The last csi/crashBuckets answer (null: not asked yet, or failed). */
  buckets: CrashBuckets | null = null;

  constructor(private readonly client: () => CsiClient | undefined) {}

  /** Asks the server again (the store, or the setting, changed). */
  refresh(): void {
    this.buckets = null;
    this.emitter.fire();
  }

  getTreeItem(node: CrashNode): vscode.TreeItem {
    const v = crashItemView(node);
    const item = new vscode.TreeItem(
      v.label,
      v.collapsible === 'none' ? vscode.TreeItemCollapsibleState.None : vscode.TreeItemCollapsibleState.Collapsed,
    );
    item.id = v.id;
    item.description = v.description;
    item.tooltip = v.tooltip;
    item.contextValue = v.contextValue;
    if (v.icon) item.iconPath = new vscode.ThemeIcon(v.icon);
    if (v.command) item.command = { command: v.command.id, title: v.label, arguments: v.command.args };
    return item;
  }

  async getChildren(node?: CrashNode): Promise<CrashNode[]> {
    const client = this.client();
    if (!client) return bucketNodes(null, 'the CSI language server is not running');
    if (!node) {
      try {
        this.buckets = await client.sendRequest<CrashBuckets>(Methods.crashBuckets, {});
      } catch (e) {
        this.buckets = null;
        return bucketNodes(null, e instanceof Error ? e.message : String(e));
      }
      return bucketNodes(this.buckets);
    }
    if (node.kind !== 'bucket') return [];
    try {
      const r = await client.sendRequest<BucketCrashes>(Methods.bucketCrashes, {
        program: node.bucket.program,
        signature: node.bucket.signature,
      });
      return crashNodes(node.bucket, r.crashes);
    } catch (e) {
      return bucketNodes(null, e instanceof Error ? e.message : String(e));
    }
  }
}

type OverviewNode = { kind: 'file'; file: FileOverview } | { kind: 'function'; file: FileOverview; index: number };

export class OverviewProvider implements vscode.TreeDataProvider<OverviewNode> {
  private readonly emitter = new vscode.EventEmitter<OverviewNode | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  /** csi/functionSpans answers by document, for the crash `spansOf` (they do not change with
   *  the selection). */
  private spans = new Map<string, FunctionSpan[]>();
  private spansOf: Stack | null = null;

  constructor(
    private readonly state: CsiState,
    private readonly client: () => CsiClient | undefined,
  ) {}

  refresh(): void {
    this.emitter.fire();
  }

  /** The functions the server knows in a document (none when it cannot say). */
  private async functionSpans(uri: string): Promise<FunctionSpan[]> {
    if (this.spansOf !== this.state.stack) {
      this.spans.clear();
      this.spansOf = this.state.stack;
    }
    const known = this.spans.get(uri);
    if (known) return known;
    const client = this.client();
    if (!client) return [];
    try {
      const r = await client.sendRequest<FunctionSpans>(Methods.functionSpans, { uri });
      if (!r.stale && this.spansOf === this.state.stack) this.spans.set(uri, r.functions);
      return r.functions;
    } catch {
      return [];
    }
  }

  /** Files with line states, their functions and counts (global answer). */
  async files(): Promise<FileOverview[]> {
    if (!this.state.isOpen) return [];
    const out: FileOverview[] = [];
    for (const uri of this.state.lineStateUris()) {
      const ls = this.state.lineStates(uri)!;
      const spans = await this.functionSpans(uri);
      out.push(fileOverview(uri, vscode.workspace.asRelativePath(vscode.Uri.parse(uri)), spans, ls));
    }
    return out.sort((a, b) => a.label.localeCompare(b.label));
  }

  getTreeItem(n: OverviewNode): vscode.TreeItem {
    if (n.kind === 'file') {
      const f = n.file;
      const item = new vscode.TreeItem(f.label, vscode.TreeItemCollapsibleState.Expanded);
      item.description = `${ratioBar(f)} ${countsText(f)}`;
      item.tooltip = `${f.label}\nglobally: ${countsText(f)} lines`;
      item.iconPath = new vscode.ThemeIcon('file-code');
      item.contextValue = 'csiOverviewFile';
      return item;
    }
    const fn = n.file.functions[n.index];
    const item = new vscode.TreeItem(fn.name, vscode.TreeItemCollapsibleState.None);
    item.description = `${ratioBar(fn)} ${fn.must}/${fn.may}/${fn.never}`;
    item.tooltip = `${fn.name}() — lines ${fn.start + 1}–${fn.end + 1}\nglobally: ${countsText(fn)}`;
    item.iconPath = new vscode.ThemeIcon('symbol-function');
    item.contextValue = 'csiOverviewFunction';
    item.command = { command: Commands.revealLine, title: 'Reveal', arguments: [n.file.uri, fn.start] };
    return item;
  }

  async getChildren(n?: OverviewNode): Promise<OverviewNode[]> {
    if (!n) return (await this.files()).map((file) => ({ kind: 'file', file }));
    if (n.kind === 'file') return n.file.functions.map((_, index) => ({ kind: 'function', file: n.file, index }));
    return [];
  }
}

async function openDoc(uri: string): Promise<vscode.TextDocument | undefined> {
  const key = uriKey(uri);
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
  if (open) return open;
  try {
    return await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
  } catch {
    return undefined;
  }
}

/** Everything the extension holds; returned by `activate` (tests use it). */
export class Controller implements vscode.Disposable {
  readonly state = new CsiState(uriKey);
  client: CsiClient | undefined;
  scope: Scope;
  types: Record<Kind, vscode.TextEditorDecorationType>;
  readonly stackView: StackProvider;
  readonly overview: OverviewProvider;
  readonly crashes: CrashesProvider;
  /** A bucket's lines shown instead of a crash's (*Show Bucket Lines*), or null. */
  bucket: BucketView | null = null;
  suspiciousType: vscode.TextEditorDecorationType;
  readonly status: vscode.StatusBarItem;
  /** `slice: 4 lines (static 6, −33 %)` while a slice is shown; click clears it. */
  readonly sliceStatus: vscode.StatusBarItem;
  /** `must · may · never`: its hover explains the colours. */
  readonly legendStatus: vscode.StatusBarItem;
  /** Showing the crash the server opened at start (`crashAtStart`); tests await it. */
  startup: Promise<void> = Promise.resolve();
  private sliceShown = false;
  private readonly disposables: vscode.Disposable[] = [];
  private treeTimer: ReturnType<typeof setTimeout> | undefined;
  private syncing = false;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.scope = config().get<Scope>('decorations.scope', 'global');
    this.types = createDecorationTypes(this.context.extensionPath);
    this.stackView = new StackProvider(this.state, () => this.client);
    this.overview = new OverviewProvider(this.state, () => this.client);
    this.crashes = new CrashesProvider(() => this.client);
    this.suspiciousType = createSuspiciousType();
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
    this.status.command = Commands.selectFrame;
    this.sliceStatus = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 49);
    this.sliceStatus.command = Commands.sliceClear;
    this.legendStatus = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 48);
    this.legendStatus.command = Commands.showLegend;
    this.state.onChange(() => this.render());
  }

  /** Decorations, status bar and (debounced) views. */
  render(): void {
    for (const e of vscode.window.visibleTextEditors) this.decorate(e);
    this.status.text = `$(debug-alt) ${this.state.statusText()}`;
    this.status.tooltip = this.state.stack ? `${this.state.stack.title}\nClick to select a frame` : 'CSI: open a crash';
    this.status.command = this.state.isOpen ? Commands.selectFrame : Commands.openCrash;
    if (this.state.isOpen || this.client) this.status.show();
    if (this.state.isOpen && this.scope !== 'off') {
      this.legendStatus.text = '$(symbol-color) must · may · never';
      const md = new vscode.MarkdownString(legendMarkdown(this.scope));
      md.supportHtml = true;
      this.legendStatus.tooltip = md;
      this.legendStatus.show();
    } else {
      this.legendStatus.hide();
    }
    const slice = this.state.slice;
    if (slice) {
      this.sliceStatus.text = `$(list-filter) ${this.state.sliceText()}`;
      this.sliceStatus.tooltip = sliceTooltip(slice);
      this.sliceStatus.show();
    } else {
      this.sliceStatus.hide();
    }
    if (this.sliceShown !== (slice !== null)) {
      this.sliceShown = slice !== null;
      void vscode.commands.executeCommand('setContext', SLICE_CONTEXT, this.sliceShown);
    }
    if (this.treeTimer) clearTimeout(this.treeTimer);
    this.treeTimer = setTimeout(() => {
      this.treeTimer = undefined;
      this.stackView.refresh();
      this.overview.refresh();
    }, 30);
  }

  /** The plan for one editor (exposed for tests). */
  planFor(doc: vscode.TextDocument): DecorationPlan {
    const uri = doc.uri.toString();
    // A bucket's lines are the whole program's answer over all its crashes: no frame, no
    // path step, no slice.
    const b = this.bucket?.states.get(uriKey(uri));
    if (this.bucket) return plan(b, this.scope === 'off' ? 'off' : 'global', null, doc.lineCount, null);
    const slice = this.state.sliceLines(uri, config().get<boolean>('slice.showStatic', true));
    return plan(this.state.lineStates(uri), this.scope, this.state.currentStepLine(uri), doc.lineCount, slice);
  }

  decorate(editor: vscode.TextEditor): void {
    applyPlan(editor, this.types, this.planFor(editor.document));
    editor.setDecorations(this.suspiciousType, this.suspiciousFor(editor.document));
  }

  /** The suspicious lines of the shown bucket in a document, with their hint and hover. */
  suspiciousFor(doc: vscode.TextDocument): vscode.DecorationOptions[] {
    const b = this.bucket;
    if (!b || this.scope === 'off') return [];
    return (b.suspicious.get(uriKey(doc.uri.toString())) ?? [])
      .filter((s) => s.line < doc.lineCount)
      .map((s) => {
        const hover = new vscode.MarkdownString(suspiciousHover(s, b.count, b.passingRuns));
        return {
          range: new vscode.Range(s.line, 0, s.line, 0),
          hoverMessage: hover,
          renderOptions: { after: { contentText: suspiciousLabel(s) } },
        };
      });
  }

  /** *Show Bucket Lines*: the bucket's must-in-all / never-in-any lines and its suspicious
   * lines, in the crash's colours; its files opened, the most suspicious line shown. */
  async showBucketLines(arg?: unknown): Promise<BucketView | undefined> {
    let b = bucketArg(arg);
    if (!b) b = await this.pickBucket();
    if (!b) return undefined;
    const r = await this.requireClient().sendRequest<BucketLineStates>(Methods.bucketLineStates, b);
    this.bucket = bucketView(r, uriKey);
    void vscode.commands.executeCommand('setContext', BUCKET_CONTEXT, true);
    for (const f of r.files) if (f.uri) await openDoc(f.uri);
    if (this.bucket.first) await this.reveal(this.bucket.first.uri, this.bucket.first.line);
    this.render();
    void vscode.window.showInformationMessage(bucketMessage(this.bucket));
    for (const n of r.notices) void vscode.window.showWarningMessage(`CSI: ${n}`);
    return this.bucket;
  }

  clearBucketLines(): void {
    if (!this.bucket) return;
    this.bucket = null;
    void vscode.commands.executeCommand('setContext', BUCKET_CONTEXT, false);
    this.render();
  }

  private async pickBucket(): Promise<{ program: string; signature: string } | undefined> {
    const r = await this.requireClient().sendRequest<CrashBuckets>(Methods.crashBuckets, {});
    if (r.buckets.length === 0) {
      void vscode.window.showInformationMessage(`CSI: ${r.message ?? 'the crash store holds no crashes'}`);
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      r.buckets.map((b: Bucket) => ({ label: `${b.count} × ${b.signature}`, description: path.basename(b.program), b })),
      { title: 'CSI: show the lines of a bucket' },
    );
    return picked ? { program: picked.b.program, signature: picked.b.signature } : undefined;
  }

  rebuildDecorations(): void {
    for (const t of Object.values(this.types)) t.dispose();
    this.suspiciousType.dispose();
    this.suspiciousType = createSuspiciousType();
    this.types = createDecorationTypes(this.context.extensionPath);
    this.render();
  }

  requireClient(): CsiClient {
    if (!this.client) throw new Error('the CSI language server is not running (see the "CSI" output channel)');
    return this.client;
  }

  onLineStates(ls: LineStates): void {
    // An edited document without a crash open: nothing to show, nothing to fetch.
    if (ls.stale && !this.state.isOpen) return;
    const moved = this.state.applyLineStates(ls);
    if (!this.state.isOpen) void this.syncStack();
    else if (moved) void this.syncTrace();
  }

  /** A crash opened by the server itself (`.csi.toml`, settings). */
  async syncStack(): Promise<void> {
    if (this.syncing || !this.client) return;
    this.syncing = true;
    try {
      this.state.setStack(await this.client.sendRequest<Stack>(Methods.stack, {}));
      await this.syncTrace();
    } catch {
      // No crash open after all.
    } finally {
      this.syncing = false;
    }
  }

  async syncTrace(): Promise<void> {
    if (!this.client) return;
    try {
      this.state.setTrace(await this.client.sendRequest<PathTrace | null>(Methods.pathTrace, {}));
    } catch {
      /* nothing selected */
    }
  }

  /** After the server ran one of its commands for a code lens: follow the selection. */
  afterServerCommand(command: string, result: unknown): void {
    if (!result && command !== Methods.clearCommand && command !== Methods.sliceCommand) return;
    switch (command) {
      case 'csi.selectFrame':
        this.state.setTrace(result as PathTrace);
        break;
      case 'csi.stepPath':
        this.state.applyStep(result as StepResult);
        void this.revealStep();
        break;
      case 'csi.openCrash':
      case 'csi.openReport':
        this.clearBucketLines();
        this.stackView.resetCache();
        this.state.setSlice(null);
        this.state.setStack(result as Stack);
        void this.syncTrace();
        break;
      case Methods.clearCommand:
        this.state.clear();
        break;
      case Methods.sliceCommand:
        // The slice lens ({"clear": true}) or another csi.slice run.
        this.state.setSlice((result as SliceResult | null) ?? null);
        break;
    }
  }

  /** `arg` when it is a crash; anything else (a tree item from the view's title bar) asks. */
  async openCrash(arg?: unknown): Promise<Stack | undefined> {
    let crash: RecentCrash | undefined = crashArg(arg);
    if (!crash) crash = await this.pickCrash();
    if (!crash) return undefined;
    const stack = await this.requireClient().sendRequest<Stack>(Methods.openCrash, crash);
    this.openedCrash = crash;
    const recent = addRecent(this.recent(), crash, config().get<number>('recentCrashes', 10));
    await this.context.globalState.update(RECENT_KEY, recent);
    await this.opened(stack);
    return stack;
  }

  async openReport(arg?: unknown): Promise<Stack | undefined> {
    let a = reportArg(arg);
    if (!a) {
      const graph = await pickFile('CSI: csi-grissom GraphML of the program', { GraphML: ['graphml', 'xml'] });
      if (!graph) return undefined;
      const report = await pickFile('CSI: failure report (JSON)', { JSON: ['json'] }, path.dirname(graph));
      if (!report) return undefined;
      a = { graph, report };
    }
    const stack = await this.requireClient().sendRequest<Stack>(Methods.openReport, a);
    await this.opened(stack);
    return stack;
  }

  recent(): RecentCrash[] {
    return this.context.globalState.get<RecentCrash[]>(RECENT_KEY, []);
  }

  /** The crash opened with *Open Crash* (or by the debugger), to tell whether it changed. */
  openedCrash: RecentCrash | undefined;

  /** The debugger selected a frame or path step: show the same in the editor. */
  async followDebugger(p: DebugPosition): Promise<void> {
    const o = this.openedCrash;
    if (!this.state.isOpen || !o || o.executable !== p.program || o.core !== p.core) {
      await this.openCrash({ executable: p.program, core: p.core });
    }
    // A call inlined into the frame has its own lines and path trace (and no debugger step).
    if (typeof p.inline === 'number') await this.selectFrame({ thread: p.thread, frame: p.frame, inline: p.inline });
    else if (p.step === null) await this.selectFrame({ thread: p.thread, frame: p.frame });
    else await this.goToStep({ thread: p.thread, frame: p.frame, step: p.step });
  }

  /** Starts a `csi` debug session on a crash (the argument, else asked for). */
  async debugCrash(arg?: unknown): Promise<boolean> {
    const crash = crashArg(arg) ?? (await this.pickCrash());
    if (!crash) return false;
    return vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], launchConfiguration(crash));
  }

  async pickCrash(): Promise<RecentCrash | undefined> {
    const recent = this.recent();
    if (recent.length > 0) {
      const browse = { label: '$(folder-opened) Browse for an executable and a core…', crash: undefined as RecentCrash | undefined };
      const items = [
        browse,
        ...recent.map((c) => ({
          label: `$(history) ${path.basename(c.executable)}`,
          description: vscode.workspace.asRelativePath(c.core),
          detail: c.executable,
          crash: c as RecentCrash | undefined,
        })),
      ];
      const picked = await vscode.window.showQuickPick(items, { title: 'CSI: open a crash', placeHolder: 'a recent crash, or browse' });
      if (!picked) return undefined;
      if (picked.crash) return picked.crash;
    }
    const executable = await pickFile('CSI: the crashed executable');
    if (!executable) return undefined;
    // Any file: plain cores, compressed ones (systemd-coredump's .zst, .lz4, .xz; apport's
    // CoreDump) — the server tells them apart by their magic bytes.
    const core = await pickFile('CSI: its core dump (plain or .zst / .lz4 / .xz)', undefined, path.dirname(executable));
    if (!core) return undefined;
    return { executable, core };
  }

  /** A crash is open: model, its files opened (for line states), the crash point shown. */
  private async opened(stack: Stack): Promise<void> {
    this.stackView.resetCache();
    this.clearBucketLines();
    // Opening a crash (even the same one again) clears the server's slice.
    this.state.setSlice(null);
    this.state.setStack(stack);
    await this.syncTrace();
    const uris = new Set<string>();
    for (const t of stack.threads) for (const f of t.frames) if (f.uri) uris.add(f.uri);
    for (const s of this.state.trace?.steps ?? []) if (s.uri) uris.add(s.uri);
    for (const u of uris) await openDoc(u);
    const f = this.state.selectedFrame();
    if (f?.uri && f.line !== null) await this.reveal(f.uri, f.line);
  }

  async selectFrame(arg?: unknown): Promise<PathTrace | undefined> {
    let a = frameArg(arg);
    if (!a) a = await this.pickFrame();
    if (!a) return undefined;
    const trace = await this.requireClient().sendRequest<PathTrace>(Methods.selectFrame, a);
    this.state.setTrace(trace);
    const f = this.state.selectedFrame();
    if (f?.uri && f.line !== null) await this.reveal(f.uri, f.line);
    return trace;
  }

  private async pickFrame(): Promise<{ thread: number; frame: number } | undefined> {
    const stack = this.state.stack;
    if (!stack) {
      void vscode.window.showInformationMessage('CSI: no crash is open.');
      return undefined;
    }
    const items = stack.threads.flatMap((t) =>
      t.frames.map((f) => ({
        label: frameTitle(f),
        description: f.file && f.line !== null ? `${f.file}:${f.line + 1}` : f.module ?? '',
        detail: stack.threads.length > 1 ? `thread ${t.index + 1} (tid ${t.tid})` : undefined,
        arg: { thread: t.index, frame: f.index },
      })),
    );
    const picked = await vscode.window.showQuickPick(items, { title: 'CSI: select a frame', matchOnDescription: true });
    return picked?.arg;
  }

  async step(delta: number): Promise<StepResult | undefined> {
    if (!this.state.trace || this.state.trace.steps.length === 0) {
      void vscode.window.showInformationMessage('CSI: the selected frame has no path trace.');
      return undefined;
    }
    const r = await this.requireClient().sendRequest<StepResult>(Methods.stepPath, { delta });
    this.state.applyStep(r);
    await this.revealStep();
    return r;
  }

  async goToStep(arg: { thread: number; frame: number; inline?: number; step: number }): Promise<void> {
    const sel = this.state.selected;
    const inline = arg.inline ?? null;
    if (!sel || sel.thread !== arg.thread || sel.frame !== arg.frame || (sel.inline ?? null) !== inline) {
      await this.selectFrame(frameAt(arg.thread, arg.frame, inline));
    }
    const cur = this.state.selected?.step ?? this.state.trace?.current ?? 0;
    const d = deltaTo(cur, arg.step);
    if (d !== 0) await this.step(d);
    else await this.revealStep();
  }

  private async revealStep(): Promise<void> {
    const s = this.state.currentStep();
    if (s?.uri) await this.reveal(s.uri, s.line);
  }

  async reveal(uri: string, line: number): Promise<void> {
    const doc = await openDoc(uri);
    if (!doc) return;
    const r = new vscode.Range(line, 0, line, 0);
    const editor = await vscode.window.showTextDocument(doc, { selection: r, preserveFocus: false });
    editor.revealRange(r, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** "May this line have run?" on the cursor line. */
  async query(): Promise<string | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    const uri = editor.document.uri.toString();
    const line = editor.selection.active.line;
    const c = this.requireClient();
    const mayRun = await c.sendRequest<QueryResult>(Methods.query, { kind: 'mayRun', uri, line });
    const mayNotRun = await c.sendRequest<QueryResult>(Methods.query, { kind: 'mayNotRun', uri, line });
    const msg = queryMessage(line, mayRun.answer === 'possible', mayNotRun.answer === 'possible');
    void vscode.window.showInformationMessage(msg);
    return msg;
  }

  async clear(): Promise<void> {
    this.clearBucketLines();
    if (this.client) await this.client.sendRequest('workspace/executeCommand', { command: Methods.clearCommand, arguments: [] });
    this.stackView.resetCache();
    this.state.clear();
  }

  /** *Slice from Crash Point*: every variable used where the innermost analysed frame stopped. */
  async sliceCrash(): Promise<SliceResult | null | undefined> {
    return this.runSlice(sliceParams(null), true);
  }

  /**
   * *Slice from This Line*: the cursor line (or `arg`), for the variables typed in the input
   * box (`csi.slice.askVariables`); empty input slices for every variable used on the line,
   * Escape cancels.
   */
  async sliceLine(arg?: unknown): Promise<SliceResult | null | undefined> {
    // From the editor's context menu the argument is the document's Uri: the line is the
    // cursor's (and the variables are asked), as when run from the palette.
    const given = lineArg(arg);
    if (given) return this.runSlice(sliceParams({ uri: given.uri, line: given.line }, given.variables ?? []), false);
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage('CSI: put the cursor on a line of a C or C++ file to slice from it.');
      return undefined;
    }
    const at = { uri: editor.document.uri.toString(), line: editor.selection.active.line };
    let variables: string[] = [];
    if (config().get<boolean>('slice.askVariables', true)) {
      const input = await vscode.window.showInputBox({
        title: `CSI: slice from line ${at.line + 1}`,
        prompt: 'Variables to slice for, separated by spaces or commas. Empty: every variable used on the line.',
        placeHolder: 'every variable used on the line',
      });
      if (input === undefined) return undefined;
      variables = parseVariables(input);
    }
    return this.runSlice(sliceParams(at, variables), false);
  }

  private async runSlice(params: SliceParams, reveal: boolean): Promise<SliceResult | null> {
    const r = await this.requireClient().sendRequest<SliceResult | null>(Methods.slice, params);
    this.state.setSlice(r ?? null);
    if (!r) return null;
    const c = r.criterion;
    if (reveal && c.uri && c.line !== null) await this.reveal(c.uri, c.line);
    const msg = sliceMessage(r);
    const shown =
      r.unknownVariables.length > 0
        ? vscode.window.showWarningMessage(msg, 'Clear Slice')
        : vscode.window.showInformationMessage(msg, 'Clear Slice');
    void Promise.resolve(shown).then((pick) => {
      if (pick === 'Clear Slice') void this.sliceClear();
    });
    return r;
  }

  /** *Clear Slice*: marks go now; the server drops its hints and lens. */
  async sliceClear(): Promise<void> {
    this.state.setSlice(null);
    if (this.client && this.state.isOpen) await this.client.sendRequest(Methods.slice, { clear: true });
  }

  /** The crash the server opened itself at start (`.csi.toml`): shown without waiting for a
   * source file to be opened (the server answers `csi/stack` once the crash is open). */
  async showServerCrash(): Promise<void> {
    if (!this.client || this.state.isOpen) return;
    let stack: Stack;
    try {
      stack = await this.client.sendRequest<Stack>(Methods.stack, {});
    } catch {
      return; // it did not open; the server said why
    }
    if (!this.state.isOpen) await this.opened(stack);
  }

  /** *CSI: Legend*: what the colours mean. */
  async showLegend(): Promise<string> {
    const text = legendText(this.scope);
    void vscode.window.showInformationMessage('CSI line colours', { modal: true, detail: text });
    return text;
  }

  toggleScope(): Scope {
    this.scope = nextScope(this.scope);
    void vscode.window.setStatusBarMessage(`CSI colours: ${this.scope === 'local' ? 'selected frame' : this.scope}`, 3000);
    this.render();
    return this.scope;
  }

  dispose(): void {
    for (const t of Object.values(this.types)) t.dispose();
    this.suspiciousType.dispose();
    for (const d of this.disposables) d.dispose();
    this.status.dispose();
    this.sliceStatus.dispose();
    this.legendStatus.dispose();
  }
}

/** The answer of the two queries, in words. */
export function queryMessage(line: number, mayRun: boolean, mayNotRun: boolean): string {
  const l = `CSI: line ${line + 1}`;
  if (!mayRun) return `${l} did not run before the crash (no execution consistent with the core reaches it).`;
  if (!mayNotRun) return `${l} must have run before the crash (every consistent execution runs it).`;
  return `${l} may have run before the crash (some consistent executions run it, some do not).`;
}

async function pickFile(title: string, filters?: Record<string, string[]>, dir?: string): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title,
    canSelectFiles: true,
    canSelectFolders: false,
    canSelectMany: false,
    filters,
    defaultUri: dir ? vscode.Uri.file(dir) : vscode.workspace.workspaceFolders?.[0]?.uri,
  });
  return picked?.[0]?.fsPath;
}

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Options sent to the server at start-up (only what it understands). */
export function initializationOptions(): Record<string, unknown> {
  const c = config();
  const o: Record<string, unknown> = { lineStates: true, statusHints: c.get<boolean>('statusHints', false) };
  const subs = c.get<Array<{ from: string; to: string }>>('substitutePaths', []);
  if (subs.length > 0) o.substitutePaths = subs;
  const graphml = c.get<string>('graphml', '');
  if (graphml) o.graphml = graphml;
  const debugDirs = c.get<string[]>('debugDirs', []);
  if (debugDirs.length > 0) o.debugDirs = debugDirs;
  const sysroot = c.get<string>('sysroot', '');
  if (sysroot) o.sysroot = sysroot;
  const crashStore = c.get<string>('crashStore', '');
  if (crashStore) o.crashStore = crashStore;
  return o;
}

function startClient(controller: Controller, context: vscode.ExtensionContext, out: vscode.OutputChannel): LanguageClient | undefined {
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const found = findServer({
    setting: config().get<string>('serverPath', ''),
    extensionPath: context.extensionPath,
    workspace,
    pathEnv: process.env.PATH ?? '',
    home: os.homedir(),
    windows: process.platform === 'win32',
    isFile,
  });
  if ('error' in found) {
    out.appendLine(found.error);
    void vscode.window.showErrorMessage(`CSI: ${found.error}`);
    return undefined;
  }
  out.appendLine(`csi-lsp: ${found.path} (${found.source})`);
  const serverOptions: ServerOptions = { command: found.path, args: [], options: { cwd: workspace } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'c' },
      { scheme: 'file', language: 'cpp' },
    ],
    initializationOptions: initializationOptions(),
    outputChannel: out,
    middleware: {
      executeCommand: async (command, args, next) => {
        const result = await next(command, args);
        controller.afterServerCommand(command, result);
        return result;
      },
    },
  };
  return new LanguageClient('csi', 'CSI', serverOptions, clientOptions);
}

let current: { controller: Controller; client?: LanguageClient } | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<Controller> {
  const out = vscode.window.createOutputChannel('CSI');
  const controller = new Controller(context);
  const lc = startClient(controller, context, out);
  current = { controller, client: lc };
  const run =
    <A extends unknown[]>(f: (...a: A) => Promise<unknown> | unknown) =>
    async (...a: A) => {
      try {
        return await f(...a);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        out.appendLine(`error: ${msg}`);
        void vscode.window.showErrorMessage(`CSI: ${msg}`);
        return undefined;
      }
    };
  const reg = (id: string, f: (...a: any[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, run(f)));
  reg(Commands.openCrash, (a?: unknown) => controller.openCrash(a));
  reg(Commands.openReport, (a?: unknown) => controller.openReport(a));
  reg(Commands.selectFrame, (a?: unknown) => controller.selectFrame(a));
  reg(Commands.goToStep, (a: { thread: number; frame: number; inline?: number; step: number }) => controller.goToStep(a));
  reg(Commands.stepBack, () => controller.step(-1));
  reg(Commands.stepForward, () => controller.step(1));
  reg(Commands.query, () => controller.query());
  reg(Commands.clear, () => controller.clear());
  reg(Commands.toggleScope, () => controller.toggleScope());
  reg(Commands.revealLine, (uri: string, line: number) => controller.reveal(uri, line));
  reg(Commands.refresh, () => controller.syncStack());
  reg(Commands.sliceCrash, () => controller.sliceCrash());
  reg(Commands.sliceLine, (a?: unknown) => controller.sliceLine(a));
  reg(Commands.sliceClear, () => controller.sliceClear());
  reg(Commands.showLegend, () => controller.showLegend());
  reg(Commands.debugCrash, (a?: unknown) => controller.debugCrash(a));
  reg(Commands.refreshCrashes, () => controller.crashes.refresh());
  reg(Commands.showBucketLines, (a?: unknown) => controller.showBucketLines(a));
  reg(Commands.clearBucketLines, () => controller.clearBucketLines());
  context.subscriptions.push(
    ...registerDebugging({
      adapterPath: () =>
        findServer(
          {
            setting: config().get<string>('dapPath', ''),
            extensionPath: context.extensionPath,
            workspace: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
            pathEnv: process.env.PATH ?? '',
            home: os.homedir(),
            windows: process.platform === 'win32',
            isFile,
          },
          'csi-dap',
          'csi.dapPath',
        ),
      pickCrash: () => controller.pickCrash(),
      follow: (p) => controller.followDebugger(p),
      log: (line) => out.appendLine(line),
    }),
  );

  context.subscriptions.push(
    controller,
    out,
    vscode.window.registerTreeDataProvider('csiStack', controller.stackView),
    vscode.window.registerTreeDataProvider('csiOverview', controller.overview),
    vscode.window.registerTreeDataProvider('csiCrashes', controller.crashes),
    vscode.window.onDidChangeVisibleTextEditors((editors) => editors.forEach((e) => controller.decorate(e))),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('csi.decorations') || e.affectsConfiguration('csi.slice')) {
        controller.scope = config().get<Scope>('decorations.scope', controller.scope);
        controller.rebuildDecorations();
      }
      if (controller.client && (e.affectsConfiguration('csi.statusHints') || e.affectsConfiguration('csi.substitutePaths') || e.affectsConfiguration('csi.graphml'))) {
        void lc?.sendNotification('workspace/didChangeConfiguration', { settings: { csi: initializationOptions() } });
      }
      if (controller.client && e.affectsConfiguration('csi.crashStore')) {
        // Sent even when emptied (initializationOptions leaves an empty one out).
        const settings = { ...initializationOptions(), crashStore: config().get<string>('crashStore', '') };
        void lc?.sendNotification('workspace/didChangeConfiguration', { settings: { csi: settings } });
        controller.crashes.refresh();
      }
      if (e.affectsConfiguration('csi.serverPath')) {
        void vscode.window.showInformationMessage('CSI: reload the window to use the new server path.');
      }
    }),
  );
  if (lc) {
    // Before start: the server may send line states as soon as it is initialized.
    context.subscriptions.push(lc.onNotification(Methods.lineStates, (ls: LineStates) => controller.onLineStates(ls)));
    controller.client = lc as unknown as CsiClient;
    try {
      await lc.start();
      // A crash named by .csi.toml (or the settings) is being opened by the server: show it
      // now, not when the first C file happens to be opened.
      const csiCaps = (lc.initializeResult?.capabilities?.experimental as { csi?: { crashAtStart?: boolean } } | undefined)?.csi;
      if (csiCaps?.crashAtStart) controller.startup = controller.showServerCrash();
    } catch (e) {
      controller.client = undefined;
      out.appendLine(`csi-lsp did not start: ${e instanceof Error ? e.message : String(e)}`);
      void vscode.window.showErrorMessage('CSI: the language server did not start (see the "CSI" output channel).');
    }
  }
  controller.render();
  return controller;
}

export async function deactivate(): Promise<void> {
  const c = current;
  current = undefined;
  if (c?.client) await c.client.stop();
}

/** `{program, signature}` of a bucket: a CSI Crashes bucket item, or the object itself. */
export function bucketArg(arg: unknown): { program: string; signature: string } | undefined {
  const a = arg as { kind?: string; bucket?: Bucket; program?: unknown; signature?: unknown } | undefined;
  if (a?.kind === 'bucket' && a.bucket) return { program: a.bucket.program, signature: a.bucket.signature };
  if (a?.kind === 'crash' && a.bucket) return { program: a.bucket.program, signature: a.bucket.signature };
  if (a && typeof a.program === 'string' && typeof a.signature === 'string') return { program: a.program, signature: a.signature };
  return undefined;
}
