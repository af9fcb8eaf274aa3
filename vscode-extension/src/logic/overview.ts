// The CSI Overview view as plain data: files → functions with must/may/never counts.
// The functions and their extents come from the server (csi/functionSpans: the program's
// functions as its debug info and CFG say), not from the text.

import type { FunctionSpan, LineSets } from './protocol';

export interface Counts {
  must: number;
  may: number;
  never: number;
}

export interface FunctionOverview extends Counts {
  name: string;
  start: number;
  end: number;
}

export interface FileOverview extends Counts {
  uri: string;
  label: string;
  functions: FunctionOverview[];
}

/** Lines of each set within [start, end]. */
export function countIn(sets: LineSets, start: number, end: number): Counts {
  const n = (xs: number[]) => xs.filter((l) => l >= start && l <= end).length;
  return { must: n(sets.must), may: n(sets.may), never: n(sets.never) };
}

/** A file's functions (the server's spans, by first line) with their counts; functions without
 *  any analysed line are left out. The file's counts are its line states'. */
export function fileOverview(uri: string, label: string, spans: readonly FunctionSpan[], sets: LineSets): FileOverview {
  const functions = spans
    .map((f) => ({ name: f.name, start: f.first, end: f.last, must: f.must, may: f.may, never: f.never }))
    .filter((f) => f.must + f.may + f.never > 0)
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const total = countIn(sets, 0, Number.MAX_SAFE_INTEGER);
  return { uri, label, functions, ...total };
}

/** A proportional bar of coloured squares: must 🟩, may 🟨, never 🟥 (`width` squares). */
export function ratioBar(c: Counts, width = 10): string {
  const total = c.must + c.may + c.never;
  if (total === 0) return '';
  // Largest remainder so the squares add up to `width`.
  const raw = [c.must, c.may, c.never].map((x) => (x * width) / total);
  const cells = raw.map(Math.floor);
  let left = width - cells.reduce((a, b) => a + b, 0);
  const order = raw.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) {
    if (left-- <= 0) break;
    cells[i]++;
  }
  return '🟩'.repeat(cells[0]) + '🟨'.repeat(cells[1]) + '🟥'.repeat(cells[2]);
}

export function countsText(c: Counts): string {
  return `must ${c.must} · may ${c.may} · never ${c.never}`;
}
