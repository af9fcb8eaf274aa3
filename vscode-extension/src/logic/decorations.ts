// csi/lineStates → the line ranges to decorate. No `vscode` here: the glue turns ranges into
// whole-line decorations.

import type { LineSets, LineStates } from './protocol';
import type { SliceLines } from './slice';

/** Which answer colours the lines: the whole program's, the selected frame's, or none. */
export type Scope = 'global' | 'local' | 'off';

export const SCOPES: readonly Scope[] = ['global', 'local', 'off'];

/** The next scope in the cycle global → local → off → global. */
export function nextScope(s: Scope): Scope {
  return SCOPES[(SCOPES.indexOf(s) + 1) % SCOPES.length];
}

/** Inclusive, 0-based. */
export interface LineRange {
  start: number;
  end: number;
}

export interface DecorationPlan {
  must: LineRange[];
  may: LineRange[];
  never: LineRange[];
  /** Lines where some code ran and some did not (also in `must`). */
  partial: LineRange[];
  /** The current path-trace step of the selected frame, when it is in this document. */
  current: LineRange[];
  /** Lines of the restricted slice (csi/slice). */
  slice: LineRange[];
  /** Lines only in the unrestricted (static) slice. */
  sliceStatic: LineRange[];
  /** The slice criterion's line. */
  sliceCriterion: LineRange[];
}

export const KINDS = ['must', 'may', 'never', 'partial', 'current', 'slice', 'sliceStatic', 'sliceCriterion'] as const;
export type Kind = (typeof KINDS)[number];

export function emptyPlan(): DecorationPlan {
  return { must: [], may: [], never: [], partial: [], current: [], slice: [], sliceStatic: [], sliceCriterion: [] };
}

/** The line sets a scope shows; null when nothing is shown (off, stale, or no frame analysis). */
export function linesFor(states: LineStates | undefined, scope: Scope): LineSets | null {
  if (!states || states.stale || scope === 'off') return null;
  if (scope === 'local') return states.frame ?? null;
  return states;
}

/**
 * Sorted, de-duplicated lines merged into runs of consecutive lines; lines at or past
 * `lineCount` (when given) and negative ones are dropped.
 */
export function toRanges(lines: readonly number[], lineCount?: number): LineRange[] {
  const sorted = [...new Set(lines)]
    .filter((l) => Number.isInteger(l) && l >= 0 && (lineCount === undefined || l < lineCount))
    .sort((a, b) => a - b);
  const out: LineRange[] = [];
  for (const l of sorted) {
    const last = out[out.length - 1];
    if (last && last.end + 1 === l) last.end = l;
    else out.push({ start: l, end: l });
  }
  return out;
}

/**
 * Everything to decorate in one document. The slice is shown whatever the scope, but not in
 * a document edited since it was analysed (stale), like the line states.
 */
export function plan(
  states: LineStates | undefined,
  scope: Scope,
  currentStepLine: number | null,
  lineCount?: number,
  slice: SliceLines | null = null,
): DecorationPlan {
  const p = emptyPlan();
  const sets = linesFor(states, scope);
  if (sets) {
    p.must = toRanges(sets.must, lineCount);
    p.may = toRanges(sets.may, lineCount);
    p.never = toRanges(sets.never, lineCount);
    p.partial = toRanges(sets.partial, lineCount);
  }
  if (currentStepLine !== null && !(states?.stale ?? false)) {
    p.current = toRanges([currentStepLine], lineCount);
  }
  if (slice && !(states?.stale ?? false)) {
    p.slice = toRanges(slice.restricted, lineCount);
    p.sliceStatic = toRanges(slice.staticOnly, lineCount);
    if (slice.criterion !== null) p.sliceCriterion = toRanges([slice.criterion], lineCount);
  }
  return p;
}

/** Number of lines a plan covers for one kind (for tests and summaries). */
export function lineCount(ranges: readonly LineRange[]): number {
  return ranges.reduce((n, r) => n + r.end - r.start + 1, 0);
}
