// The CSI Overview view as plain data: files → functions with must/may/never counts.
// Function extents come from a small C/C++ scanner (no `vscode`, no language server needed).

import type { LineSets } from './protocol';

export interface FunctionExtent {
  name: string;
  /** 0-based, inclusive: the line of the name through the line of the closing brace. */
  start: number;
  end: number;
}

const NOT_FUNCTIONS = new Set(['if', 'for', 'while', 'switch', 'return', 'sizeof', 'catch', 'do', 'else']);

/** Comments, string and character literals blanked out (newlines kept, so offsets stay). */
export function stripCode(text: string): string {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    const d = text[i + 1];
    if (c === '/' && d === '/') {
      while (i < n && text[i] !== '\n') { out += ' '; i++; }
    } else if (c === '/' && d === '*') {
      out += '  ';
      i += 2;
      while (i < n && !(text[i] === '*' && text[i + 1] === '/')) { out += text[i] === '\n' ? '\n' : ' '; i++; }
      if (i < n) { out += '  '; i += 2; }
    } else if (c === '"' || c === "'") {
      out += ' ';
      i++;
      while (i < n && text[i] !== c && text[i] !== '\n') {
        if (text[i] === '\\' && i + 1 < n) { out += text[i + 1] === '\n' ? ' \n' : '  '; i += 2; continue; }
        out += ' ';
        i++;
      }
      if (i < n && text[i] === c) { out += ' '; i++; }
    } else if (c === '#' && /(^|\n)[ \t]*$/.test(text.slice(Math.max(0, i - 200), i))) {
      // Preprocessor line (with continuations).
      while (i < n && text[i] !== '\n') {
        if (text[i] === '\\' && text[i + 1] === '\n') { out += ' \n'; i += 2; continue; }
        out += ' ';
        i++;
      }
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Function definitions of a C or C++ file: a `{` outside any function body preceded by `name(...)`. */
export function findFunctions(text: string): FunctionExtent[] {
  const s = stripCode(text);
  const lineOf = lineIndex(s);
  const out: FunctionExtent[] = [];
  // Enclosing blocks: true for function bodies.
  const blocks: Array<{ fn: FunctionExtent | null }> = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '{') {
      const inFunction = blocks.some((b) => b.fn !== null);
      const fn = inFunction ? null : functionBefore(s, i, lineOf);
      blocks.push({ fn });
    } else if (c === '}') {
      const b = blocks.pop();
      if (b?.fn) {
        b.fn.end = lineOf(i);
        out.push(b.fn);
      }
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

function lineIndex(s: string): (offset: number) => number {
  const starts = [0];
  for (let i = 0; i < s.length; i++) if (s[i] === '\n') starts.push(i + 1);
  return (off) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= off) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
}

function functionBefore(s: string, brace: number, lineOf: (o: number) => number): FunctionExtent | null {
  let j = brace - 1;
  const skipWs = () => { while (j >= 0 && /\s/.test(s[j])) j--; };
  skipWs();
  // C++ trailers: const, noexcept, override, final.
  for (;;) {
    const m = /(const|noexcept|override|final)$/.exec(s.slice(Math.max(0, j - 10), j + 1));
    if (!m) break;
    j -= m[1].length;
    skipWs();
  }
  // `name(...)`, possibly after a constructor's member initialisers `: a(1), b(2)`.
  for (;;) {
    if (s[j] !== ')') return null;
    let depth = 0;
    for (; j >= 0; j--) {
      if (s[j] === ')') depth++;
      else if (s[j] === '(') {
        depth--;
        if (depth === 0) break;
      }
    }
    if (j < 0) return null;
    j--;
    skipWs();
    const end = j + 1;
    while (j >= 0 && /[A-Za-z0-9_:~]/.test(s[j])) j--;
    const name = s.slice(j + 1, end).replace(/^:+/, '');
    if (!name || !/^[A-Za-z_~]/.test(name) || NOT_FUNCTIONS.has(name)) return null;
    let k = j;
    while (k >= 0 && /\s/.test(s[k])) k--;
    const access = /(public|private|protected)\s*$/.test(s.slice(Math.max(0, k - 12), k));
    if (s[k] === ',' || (s[k] === ':' && s[k - 1] !== ':' && !access)) {
      // A member initialiser: the function is further back.
      j = k - 1;
      skipWs();
      continue;
    }
    const line = lineOf(j + 1);
    return { name, start: line, end: line };
  }
}

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

/** A file's functions with counts; functions without any analysed line are left out. */
export function fileOverview(uri: string, label: string, text: string, sets: LineSets): FileOverview {
  const functions = findFunctions(text)
    .map((f) => ({ ...f, ...countIn(sets, f.start, f.end) }))
    .filter((f) => f.must + f.may + f.never > 0);
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
