// A small stand-in for the `vscode` module: enough of the API for the extension's glue, with
// recorders the tests read (registered commands, decorations set per editor, messages).
/* eslint-disable @typescript-eslint/no-explicit-any */

export class Disposable {
  constructor(private readonly f: () => void = () => {}) {}
  dispose(): void {
    this.f();
  }
  static from(...ds: Array<{ dispose(): unknown }>): Disposable {
    return new Disposable(() => ds.forEach((d) => d.dispose()));
  }
}

export class EventEmitter<T> {
  private ls: Array<(e: T) => void> = [];
  event = (l: (e: T) => void): Disposable => {
    this.ls.push(l);
    return new Disposable(() => (this.ls = this.ls.filter((x) => x !== l)));
  };
  fire(e?: T): void {
    for (const l of [...this.ls]) l(e as T);
  }
  dispose(): void {
    this.ls = [];
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number, b: number, c: number, d: number) {
    this.start = new Position(a, b);
    this.end = new Position(c, d);
  }
}

export class Selection extends Range {
  get active(): Position {
    return this.end;
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static parse(s: string): Uri {
    const m = /^file:\/\/(.*)$/.exec(s);
    return m ? new Uri('file', decodeURIComponent(m[1])) : new Uri('other', s);
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return this.scheme === 'file' ? `file://${encodeURI(this.fsPath)}` : this.fsPath;
  }
}

export class MarkdownString {
  supportHtml = false;
  isTrusted = false;
  constructor(readonly value = '') {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}
export class ThemeIcon {
  constructor(readonly id: string) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}
export class TreeItem {
  description?: string;
  tooltip?: string;
  contextValue?: string;
  iconPath?: ThemeIcon;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum OverviewRulerLane {
  Left = 1,
  Center = 2,
  Right = 4,
  Full = 7,
}
export enum DecorationRangeBehavior {
  OpenOpen = 0,
  ClosedClosed = 1,
}
export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
}

// ---- documents and editors ------------------------------------------------------------------

export class TextDocument {
  constructor(
    readonly uri: Uri,
    private readonly text: string,
    readonly languageId = 'c',
  ) {}
  get lineCount(): number {
    return this.text.split('\n').length;
  }
  getText(): string {
    return this.text;
  }
}

export class DecorationType {
  disposed = false;
  constructor(
    readonly key: string,
    readonly options: any,
  ) {}
  dispose(): void {
    this.disposed = true;
  }
}

export class TextEditor {
  /** decoration key → ranges last set */
  readonly decorations = new Map<string, Range[]>();
  selection = new Selection(0, 0, 0, 0);
  revealed: Range[] = [];
  constructor(readonly document: TextDocument) {}
  setDecorations(t: DecorationType, ranges: Range[]): void {
    this.decorations.set(t.key, ranges);
  }
  revealRange(r: Range): void {
    this.revealed.push(r);
  }
}

/** Test control: what the stub records and answers. */
export const recorded = {
  commands: new Map<string, (...a: any[]) => any>(),
  decorationTypes: [] as DecorationType[],
  treeProviders: new Map<string, any>(),
  messages: [] as Array<{ kind: string; text: string }>,
  statusItems: [] as any[],
  config: new Map<string, unknown>(),
  /** Answers for showQuickPick / showOpenDialog, consumed in order. */
  quickPicks: [] as Array<(items: any[]) => any>,
  openDialogs: [] as Array<string | undefined>,
  /** Answers for showInputBox, consumed in order (undefined: Escape). */
  inputBoxes: [] as Array<string | undefined>,
  /** The options showInputBox was called with. */
  inputBoxOptions: [] as any[],
  /** Context keys set with the `setContext` command. */
  context: new Map<string, unknown>(),
  files: new Map<string, string>(),
  /** Debug adapter factories and configuration providers by debug type. */
  debugFactories: new Map<string, any>(),
  debugProviders: new Map<string, any>(),
  /** Configurations `debug.startDebugging` was called with. */
  debugStarts: [] as any[],
  reset(): void {
    this.debugFactories.clear();
    this.debugProviders.clear();
    this.debugStarts = [];
    this.commands.clear();
    this.decorationTypes = [];
    this.treeProviders.clear();
    this.messages = [];
    this.statusItems = [];
    this.config.clear();
    this.quickPicks = [];
    this.openDialogs = [];
    this.inputBoxes = [];
    this.inputBoxOptions = [];
    this.context.clear();
    this.files.clear();
    window.visibleTextEditors = [];
    window.activeTextEditor = undefined;
    workspace.textDocuments = [];
  },
};

export const commands = {
  registerCommand(id: string, f: (...a: any[]) => any): Disposable {
    if (recorded.commands.has(id)) throw new Error(`command '${id}' already exists`);
    recorded.commands.set(id, f);
    return new Disposable(() => recorded.commands.delete(id));
  },
  async executeCommand(id: string, ...args: any[]): Promise<any> {
    if (id === 'setContext') {
      recorded.context.set(args[0], args[1]);
      return undefined;
    }
    const f = recorded.commands.get(id);
    if (!f) throw new Error(`command '${id}' not found`);
    return f(...args);
  },
};

const visibleEditorsChanged = new EventEmitter<TextEditor[]>();

function docFor(uri: Uri): TextDocument {
  const key = uri.toString();
  let d = workspace.textDocuments.find((x) => x.uri.toString() === key);
  if (!d) {
    const text = recorded.files.get(uri.fsPath);
    if (text === undefined) throw new Error(`no such file ${uri.fsPath}`);
    d = new TextDocument(uri, text);
    workspace.textDocuments.push(d);
  }
  return d;
}

export const window = {
  visibleTextEditors: [] as TextEditor[],
  activeTextEditor: undefined as TextEditor | undefined,
  createTextEditorDecorationType(options: any): DecorationType {
    const t = new DecorationType(`deco${recorded.decorationTypes.length}`, options);
    recorded.decorationTypes.push(t);
    return t;
  },
  createStatusBarItem(): any {
    const item = { text: '', tooltip: '', command: undefined as any, visible: false, show() { this.visible = true; }, hide() { this.visible = false; }, dispose() {} };
    recorded.statusItems.push(item);
    return item;
  },
  createOutputChannel(): any {
    return { appendLine() {}, append() {}, show() {}, dispose() {} };
  },
  registerTreeDataProvider(id: string, p: any): Disposable {
    recorded.treeProviders.set(id, p);
    return new Disposable();
  },
  async showTextDocument(doc: TextDocument, opts?: { selection?: Range }): Promise<TextEditor> {
    let e = window.visibleTextEditors.find((x) => x.document === doc);
    if (!e) {
      e = new TextEditor(doc);
      window.visibleTextEditors.push(e);
      visibleEditorsChanged.fire(window.visibleTextEditors);
    }
    if (opts?.selection) e.selection = new Selection(opts.selection.start.line, 0, opts.selection.end.line, 0);
    window.activeTextEditor = e;
    return e;
  },
  onDidChangeVisibleTextEditors: visibleEditorsChanged.event,
  async showInformationMessage(text: string): Promise<undefined> {
    recorded.messages.push({ kind: 'info', text });
    return undefined;
  },
  async showWarningMessage(text: string): Promise<undefined> {
    recorded.messages.push({ kind: 'warning', text });
    return undefined;
  },
  async showErrorMessage(text: string): Promise<undefined> {
    recorded.messages.push({ kind: 'error', text });
    return undefined;
  },
  setStatusBarMessage(text: string): Disposable {
    recorded.messages.push({ kind: 'status', text });
    return new Disposable();
  },
  async showQuickPick(items: any[]): Promise<any> {
    const f = recorded.quickPicks.shift();
    return f ? f(items) : undefined;
  },
  async showInputBox(options?: any): Promise<string | undefined> {
    recorded.inputBoxOptions.push(options);
    return recorded.inputBoxes.shift();
  },
  async showOpenDialog(): Promise<Uri[] | undefined> {
    const p = recorded.openDialogs.shift();
    return p === undefined ? undefined : [Uri.file(p)];
  },
};

const configChanged = new EventEmitter<{ affectsConfiguration(s: string): boolean }>();

export const workspace = {
  workspaceFolders: undefined as Array<{ uri: Uri; name: string; index: number }> | undefined,
  textDocuments: [] as TextDocument[],
  getConfiguration(section?: string): any {
    return {
      get<T>(key: string, dflt?: T): T {
        const k = section ? `${section}.${key}` : key;
        return (recorded.config.has(k) ? recorded.config.get(k) : dflt) as T;
      },
    };
  },
  onDidChangeConfiguration: configChanged.event,
  /** Test helper: change a setting and fire the event. */
  _set(key: string, value: unknown): void {
    recorded.config.set(key, value);
    configChanged.fire({ affectsConfiguration: (s: string) => key === s || key.startsWith(`${s}.`) });
  },
  async openTextDocument(uri: Uri): Promise<TextDocument> {
    return docFor(uri);
  },
  asRelativePath(u: Uri | string): string {
    const p = typeof u === 'string' ? u : u.fsPath;
    const root = workspace.workspaceFolders?.[0]?.uri.fsPath;
    return root && p.startsWith(`${root}/`) ? p.slice(root.length + 1) : p;
  },
};

export class DebugAdapterExecutable {
  constructor(
    readonly command: string,
    readonly args: string[] = [],
  ) {}
}

const activeStackItemChanged = new EventEmitter<any>();

export const debug = {
  registerDebugAdapterDescriptorFactory(type: string, f: any): Disposable {
    recorded.debugFactories.set(type, f);
    return new Disposable(() => recorded.debugFactories.delete(type));
  },
  registerDebugConfigurationProvider(type: string, p: any): Disposable {
    recorded.debugProviders.set(type, p);
    return new Disposable(() => recorded.debugProviders.delete(type));
  },
  onDidChangeActiveStackItem: activeStackItemChanged.event,
  async startDebugging(_folder: unknown, config: any): Promise<boolean> {
    recorded.debugStarts.push(config);
    return true;
  },
  /** Test helper: the user selects a Call Stack item. */
  _selectStackItem(item: any): void {
    activeStackItemChanged.fire(item);
  },
};

/** A minimal ExtensionContext. */
export function extensionContext(extensionPath = '/nonexistent/ext'): any {
  const store = new Map<string, unknown>();
  return {
    extensionPath,
    subscriptions: [] as Array<{ dispose(): unknown }>,
    globalState: {
      get<T>(k: string, d?: T): T {
        return (store.has(k) ? store.get(k) : d) as T;
      },
      async update(k: string, v: unknown): Promise<void> {
        store.set(k, v);
      },
      keys: () => [...store.keys()],
    },
  };
}

// Classes vscode-languageclient extends when its module loads (the bundle test loads it).
export class CallHierarchyItem {}
export class CodeLens {}
export class CompletionItem {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}
export class CodeAction {}
export class Diagnostic {}
export class CancellationError extends Error {}
