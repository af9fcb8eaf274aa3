// csi/slice results as plain data: the request's params, the lines to mark in one document,
// and the words for the status bar and messages. No `vscode` here.

import type { SliceCriterion, SliceFile, SliceParams, SliceResult } from './protocol';

/** Normalises URIs so that the server's and the editor's spellings compare equal. */
export type UriKey = (uri: string) => string;

/**
 * Variable names typed by the user: separated by spaces or commas, duplicates dropped.
 * Empty means every variable used on the line.
 */
export function parseVariables(input: string): string[] {
  const out: string[] = [];
  for (const v of input.split(/[\s,;]+/)) if (v && !out.includes(v)) out.push(v);
  return out;
}

/**
 * The params of csi/slice: from a line (0-based) of a document, or (`at` null) from the crash
 * point; `variables` only when some are named.
 */
export function sliceParams(at: { uri: string; line: number } | null, variables: readonly string[] = []): SliceParams {
  const p: SliceParams = at ? { uri: at.uri, line: at.line } : {};
  if (variables.length > 0) p.variables = [...variables];
  return p;
}

/** Rounds to a whole number, ties to even (as Rust's `{:.0}`, which the server's lens uses). */
export function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * The reduction as a whole percentage (0.333 → 33), computed like the server's lens: from the
 * line counts when there are any (the `reduction` field is rounded to 3 decimals).
 */
export function percent(reduction: number, restrictedLines?: number, unrestrictedLines?: number): number {
  const x =
    restrictedLines !== undefined && unrestrictedLines !== undefined && unrestrictedLines > 0
      ? (1 - restrictedLines / unrestrictedLines) * 100
      : reduction * 100;
  return Number.isFinite(x) ? roundHalfEven(x) : 0;
}

function lines(n: number): string {
  return n === 1 ? '1 line' : `${n} lines`;
}

/** `slice: 4 lines (static 6, −33 %)`, as the server's lens says it. */
export function sliceSummary(r: SliceResult): string {
  return `slice: ${lines(r.restrictedLines)} (static ${r.unrestrictedLines}, −${slicePercent(r)} %)`;
}

export function slicePercent(r: SliceResult): number {
  return percent(r.reduction, r.restrictedLines, r.unrestrictedLines);
}

/** `charge() line 31`, `line 31 of ./src/x.c` (1-based line, as editors number them). */
export function criterionPlace(c: SliceCriterion): string {
  if (c.line === null || c.line === undefined) return c.function ? `${c.function}()` : c.file ?? 'the criterion';
  const line = `line ${c.line + 1}`;
  if (c.function) return `${c.function}() ${line}`;
  return c.file ? `${line} of ${c.file}` : line;
}

/**
 * `a, f` (the names asked for that the line uses), `every variable used there` (none named),
 * or `no variable used there` (all named ones unknown).
 */
export function criterionVariables(c: SliceCriterion, unknown: readonly string[] = []): string {
  if (!c.variables) return 'every variable used there';
  const known = c.variables.filter((v) => !unknown.includes(v));
  return known.length > 0 ? known.join(', ') : 'no variable used there';
}

/** Slice lines in files the server did not find in the workspace (not shown). */
export function unshown(r: SliceResult): { files: number; lines: number } {
  const gone = r.restricted.filter((f) => !f.uri);
  return { files: gone.length, lines: gone.reduce((n, f) => n + f.lines.length, 0) };
}

/** The message shown after slicing. */
export function sliceMessage(r: SliceResult): string {
  const c = r.criterion;
  let s = `CSI: slice from ${criterionPlace(c)} for ${criterionVariables(c, r.unknownVariables)}: ${sliceSummary(r).slice('slice: '.length)}`;
  if (r.unknownVariables.length > 0) s += `. Not used there: ${r.unknownVariables.join(', ')}`;
  const u = unshown(r);
  if (u.lines > 0) s += `. ${lines(u.lines)} in ${u.files === 1 ? '1 file' : `${u.files} files`} outside the workspace`;
  return s;
}

/** Tooltip of the slice status bar item. */
export function sliceTooltip(r: SliceResult): string {
  const c = r.criterion;
  const ctx =
    c.frame !== undefined && c.frame !== null ? `frame #${c.frame} of thread ${(c.thread ?? 0) + 1}` : 'all calling contexts';
  return [
    `Slice from ${criterionPlace(c)} (${ctx}) for ${criterionVariables(c, r.unknownVariables)}`,
    `${lines(r.restrictedLines)} could have affected it in this run (trace-restricted slice);`,
    `the static slice has ${r.unrestrictedLines}: ${slicePercent(r)} % fewer.`,
    'Click to clear.',
  ].join('\n');
}

/** What one document shows of a slice (0-based lines). */
export interface SliceLines {
  /** In the restricted slice. */
  restricted: number[];
  /** Only in the unrestricted (static) slice: what the trace restriction removed. */
  staticOnly: number[];
  /** The criterion's line, when it is in this document. */
  criterion: number | null;
}

function linesOf(files: readonly SliceFile[], key: UriKey, uri: string): Set<number> {
  const k = key(uri);
  const out = new Set<number>();
  for (const f of files) if (f.uri && key(f.uri) === k) for (const l of f.lines) out.add(l);
  return out;
}

/** The slice's lines in one document; `showStatic` false leaves out the static-only ones. */
export function sliceLines(r: SliceResult | null, uri: string, showStatic: boolean, key: UriKey = (u) => u): SliceLines | null {
  if (!r) return null;
  const restricted = linesOf(r.restricted, key, uri);
  const staticOnly = showStatic ? [...linesOf(r.unrestricted, key, uri)].filter((l) => !restricted.has(l)) : [];
  const c = r.criterion;
  const criterion = c.uri && c.line !== null && c.line !== undefined && key(c.uri) === key(uri) ? c.line : null;
  if (restricted.size === 0 && staticOnly.length === 0 && criterion === null) return null;
  return { restricted: [...restricted].sort((a, b) => a - b), staticOnly: staticOnly.sort((a, b) => a - b), criterion };
}

/** Documents a slice marks lines in (their URIs as the server wrote them). */
export function sliceUris(r: SliceResult | null, showStatic: boolean): string[] {
  if (!r) return [];
  const out: string[] = [];
  const files = showStatic ? [...r.restricted, ...r.unrestricted] : r.restricted;
  for (const f of files) if (f.uri && !out.includes(f.uri)) out.push(f.uri);
  if (r.criterion.uri && !out.includes(r.criterion.uri)) out.push(r.criterion.uri);
  return out;
}
