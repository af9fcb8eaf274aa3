// What a command was called with. VS Code passes its own things to commands run from menus:
// a view's title button gets the tree item selected in the view, the editor context menu the
// document's Uri. Only arguments of the expected shape are used; anything else means "ask"
// (or "the cursor"), never "send it to the server as it is".

export interface CrashArg {
  executable: string;
  core: string;
}

export interface ReportArg {
  graph: string;
  report: string;
}

export interface FrameArg {
  thread: number;
  frame: number;
  /** A call inlined into the frame (0 = innermost), as the debugger's Call Stack lists them. */
  inline?: number;
}

export interface LineArg {
  uri: string;
  line: number;
  variables?: string[];
}

function isObject(a: unknown): a is Record<string, unknown> {
  return typeof a === 'object' && a !== null && !Array.isArray(a);
}

const isIndex = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
const isPath = (x: unknown): x is string => typeof x === 'string' && x.length > 0;

/** `{executable, core}` (both non-empty strings), else undefined. */
export function crashArg(a: unknown): CrashArg | undefined {
  return isObject(a) && isPath(a.executable) && isPath(a.core) ? { executable: a.executable, core: a.core } : undefined;
}

/** `{graph, report}` (both non-empty strings), else undefined. */
export function reportArg(a: unknown): ReportArg | undefined {
  return isObject(a) && isPath(a.graph) && isPath(a.report) ? { graph: a.graph, report: a.report } : undefined;
}

/** A frame, or the call inlined into it at `inline` (null: the frame itself), as requests and
 * commands take it (`inline` left out for the frame). */
export function frameAt(thread: number, frame: number, inline: number | null): FrameArg {
  return inline === null ? { thread, frame } : { thread, frame, inline };
}

/** `{thread, frame, inline?}` (non-negative integers), else undefined. */
export function frameArg(a: unknown): FrameArg | undefined {
  if (!isObject(a) || !isIndex(a.thread) || !isIndex(a.frame)) return undefined;
  if (a.inline === undefined || a.inline === null) return { thread: a.thread, frame: a.frame };
  return isIndex(a.inline) ? { thread: a.thread, frame: a.frame, inline: a.inline } : undefined;
}

/** `{uri, line, variables?}` (a URI string, a 0-based line, strings), else undefined. */
export function lineArg(a: unknown): LineArg | undefined {
  if (!isObject(a) || !isPath(a.uri) || !isIndex(a.line)) return undefined;
  const v = a.variables;
  if (v !== undefined && !(Array.isArray(v) && v.every((x) => typeof x === 'string'))) return undefined;
  return v === undefined ? { uri: a.uri, line: a.line } : { uri: a.uri, line: a.line, variables: v as string[] };
}
