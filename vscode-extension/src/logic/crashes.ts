// The CSI Crashes view as plain data (the crash store of `csi triage --store`: buckets →
// crashes) and a bucket's lines for the editor (csi/bucketLineStates → line states per
// document, suspicious lines with their Ochiai interval). No `vscode` here.

import type { Bucket, BucketFile, BucketLineStates, CrashBuckets, LineStates, StoredCrash, SuspiciousLine } from './protocol';
import type { ItemView } from './stackTree';

export type CrashNode =
  | { kind: 'bucket'; bucket: Bucket }
  | { kind: 'crash'; bucket: Bucket; crash: StoredCrash }
  | { kind: 'message'; text: string };

export const CrashCommands = {
  /** The extension's own Open Crash: a crash item runs it with {executable, core}. */
  openCrash: 'csi.vscode.openCrash',
  showBucketLines: 'csi.vscode.showBucketLines',
} as const;

/** The view's top level: the buckets, or one line saying why there are none. */
export function bucketNodes(r: CrashBuckets | null, error: string | null = null): CrashNode[] {
  if (error) return [{ kind: 'message', text: error }];
  if (!r) return [];
  if (r.buckets.length === 0) return [{ kind: 'message', text: r.message ?? 'the crash store holds no crashes' }];
  return r.buckets.map((bucket) => ({ kind: 'bucket', bucket }));
}

export function crashNodes(bucket: Bucket, crashes: StoredCrash[]): CrashNode[] {
  return crashes.map((crash) => ({ kind: 'crash', bucket, crash }));
}

function baseName(p: string): string {
  const parts = p.split(/[\\/]/);
  return parts[parts.length - 1] || p;
}

/** `div/0/core` of `/tmp/x/cores/div/0/core`: the last three components. */
export function shortPath(p: string, parts = 3): string {
  const c = p.split('/').filter(Boolean);
  return c.length <= parts ? p : `…/${c.slice(-parts).join('/')}`;
}

/** `first 2025-11-24 06:55:01 UTC · last …` (one when they are equal). */
function when(b: Bucket): string {
  if (!b.firstTimeText) return 'no time recorded';
  if (b.firstTimeText === b.lastTimeText || !b.lastTimeText) return `at ${b.firstTimeText}`;
  return `first ${b.firstTimeText}\nlast  ${b.lastTimeText}`;
}

export function sitesText(sites: Record<string, number>): string {
  return Object.entries(sites)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([s, n]) => `${s} ×${n}`)
    .join(', ');
}

export function bucketTooltip(b: Bucket): string {
  const lines = [
    `${b.count} × ${b.signature}`,
    `program: ${b.program}`,
    when(b),
    `crash sites: ${sitesText(b.sites) || '?'}`,
    `representative: ${b.representative.core}`,
  ];
  if (!b.linesAnalysed) lines.push('no CSI metadata: stack only, no line answers');
  if (b.hasPassing) lines.push(`compared with ${b.passingRuns ?? '?'} passing runs: suspicious lines ranked (Ochiai)`);
  return lines.join('\n');
}

/** Bucket and crash ids for the tree (stable across refreshes). */
function bucketId(b: Bucket): string {
  return `b:${b.program}\u0000${b.signature}`;
}

export function crashItemView(node: CrashNode): ItemView {
  switch (node.kind) {
    case 'bucket': {
      const b = node.bucket;
      return {
        id: bucketId(b),
        label: `${b.count} × ${b.signature}`,
        description: baseName(b.program),
        tooltip: bucketTooltip(b),
        collapsible: 'collapsed',
        icon: b.hasPassing ? 'bug' : 'error',
        contextValue: b.linesAnalysed ? 'csiBucket' : 'csiBucketStackOnly',
      };
    }
    case 'crash': {
      const c = node.crash;
      const desc = [c.timeText ?? 'no time', c.site ?? '?'].join(' · ');
      return {
        id: `${bucketId(node.bucket)}\u0000${c.hash}`,
        label: shortPath(c.core),
        description: desc,
        tooltip: [c.core, `executable: ${c.executable}`, `time: ${c.timeText ?? '—'}`, `site: ${c.site ?? '?'}`, `hash: ${c.hash}`].join('\n'),
        collapsible: 'none',
        icon: 'file-binary',
        contextValue: 'csiStoredCrash',
        command: { id: CrashCommands.openCrash, args: [{ executable: c.executable, core: c.core }] },
      };
    }
    case 'message':
      return { label: node.text, tooltip: node.text, collapsible: 'none', icon: 'info', contextValue: 'csiCrashesMessage' };
  }
}

/** `0.816–1` (3 decimals at most; one number when the interval is a point). */
export function ochiaiText(o: [number, number]): string {
  const f = (x: number) => String(Math.round(x * 1000) / 1000);
  return o[0] === o[1] ? f(o[0]) : `${f(o[0])}–${f(o[1])}`;
}

function range(r: [number, number]): string {
  return r[0] === r[1] ? `${r[0]}` : `${r[0]}–${r[1]}`;
}

/** The inline hint after a suspicious line. */
export function suspiciousLabel(s: SuspiciousLine): string {
  return ` ◆ #${s.rank} Ochiai ${ochiaiText(s.ochiai)}`;
}

/** Its hover: what the numbers mean. */
export function suspiciousHover(s: SuspiciousLine, count: number, passingRuns: number | null): string {
  const lines = [
    `**CSI: suspicious line #${s.rank}** of the bucket — Ochiai ${ochiaiText(s.ochiai)}`,
    '',
    `- ran in ${range(s.failed)} of the bucket's ${count} crashes`,
    `- ran in ${range(s.passed)} of ${passingRuns ?? '?'} passing runs`,
  ];
  if (s.onStack > 0) lines.push(`- ${s.onStack} crash${s.onStack === 1 ? ' was' : 'es were'} executing it (crashing thread's stack)`);
  lines.push('', 'An interval: every way of resolving what the evidence leaves open (may have run) lies in it.');
  return lines.join('\n');
}

/** A bucket's lines as the editor shows them: line states per document, suspicious lines. */
export interface BucketView {
  program: string;
  signature: string;
  count: number;
  passingRuns: number | null;
  /** Documents (by URI key) → their line states (must in all / never in any). */
  states: Map<string, LineStates>;
  /** Documents (by URI key) → suspicious lines, most suspicious first. */
  suspicious: Map<string, SuspiciousLine[]>;
  /** Files of the bucket not found in the workspace. */
  unresolved: string[];
  /** The most suspicious line (else the first file), to reveal. */
  first: { uri: string; line: number } | null;
  notices: string[];
}

export function bucketView(r: BucketLineStates, key: (u: string) => string = (u) => u): BucketView {
  const states = new Map<string, LineStates>();
  const suspicious = new Map<string, SuspiciousLine[]>();
  const unresolved: string[] = [];
  let best: { uri: string; line: number; rank: number } | null = null;
  let firstFile: { uri: string; line: number } | null = null;
  for (const f of r.files) {
    if (!f.uri) {
      unresolved.push(f.file);
      continue;
    }
    const k = key(f.uri);
    states.set(k, lineStatesOf(f));
    if (f.suspicious.length > 0) {
      suspicious.set(k, [...f.suspicious].sort((a, b) => a.rank - b.rank));
      const top = suspicious.get(k)![0];
      if (!best || top.rank < best.rank) best = { uri: f.uri, line: top.line, rank: top.rank };
    }
    const all = [...f.must, ...f.never];
    if (!firstFile) firstFile = { uri: f.uri, line: all.length > 0 ? Math.min(...all) : 0 };
  }
  return {
    program: r.program,
    signature: r.signature,
    count: r.count,
    passingRuns: r.passingRuns,
    states,
    suspicious,
    unresolved,
    first: best ? { uri: best.uri, line: best.line } : firstFile,
    notices: r.notices,
  };
}

/** A bucket file is a LineStates already (the server sends that shape): just the fields. */
export function lineStatesOf(f: BucketFile): LineStates {
  return { uri: f.uri!, version: null, must: f.must, may: f.may, never: f.never, partial: f.partial, frame: null };
}

/** What the notification says after showing a bucket's lines. */
export function bucketMessage(v: BucketView): string {
  let must = 0;
  let never = 0;
  for (const s of v.states.values()) {
    must += s.must.length;
    never += s.never.length;
  }
  const sus = [...v.suspicious.values()].reduce((n, l) => n + l.length, 0);
  let m = `CSI: bucket ${v.signature} (${v.count} crashes): ${must} lines ran in every crash, ${never} in none`;
  if (v.passingRuns !== null) m += `; ${sus} suspicious lines against ${v.passingRuns} passing runs`;
  if (v.unresolved.length > 0) m += ` (not in the workspace: ${v.unresolved.join(', ')})`;
  return m;
}
