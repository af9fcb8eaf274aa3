// The extension's model of the open crash: stack, selection, the selected frame's path
// trace and the latest csi/lineStates per document. Plain data plus change events; the glue
// renders it.

import type { Frame, LineStates, PathStep, PathTrace, Selected, SliceResult, Stack, StepResult } from './protocol';
import { type SliceLines, sliceLines, sliceSummary } from './slice';
import { currentStep, stepLabel } from './stepping';

export type Listener = () => void;

/** Normalises URIs so that the server's and the editor's spellings compare equal. */
export type UriKey = (uri: string) => string;

export class CsiState {
  stack: Stack | null = null;
  selected: Selected | null = null;
  trace: PathTrace | null = null;
  /** The slice shown (csi/slice), or null. */
  slice: SliceResult | null = null;
  private readonly states = new Map<string, LineStates>();
  private readonly listeners: Listener[] = [];

  constructor(private readonly key: UriKey = (u) => u) {}

  onChange(l: Listener): () => void {
    this.listeners.push(l);
    return () => {
      const i = this.listeners.indexOf(l);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  private changed(): void {
    for (const l of [...this.listeners]) l();
  }

  get isOpen(): boolean {
    return this.stack !== null;
  }

  /** A new crash (or a fresh csi/stack of the same one). */
  setStack(stack: Stack): void {
    // Another crash: the server forgot the slice with the old one.
    if (this.stack && this.stack.title !== stack.title) this.slice = null;
    const same =
      this.stack !== null &&
      this.stack.title === stack.title &&
      this.selected?.thread === stack.selected.thread &&
      this.selected?.frame === stack.selected.frame &&
      (this.selected?.inline ?? null) === (stack.selected.inline ?? null);
    this.stack = stack;
    this.selected = { ...stack.selected };
    if (!same) this.trace = null;
    this.changed();
  }

  /** The answer of csi/selectFrame or csi/pathTrace for the selected frame. */
  setTrace(trace: PathTrace | null): void {
    this.trace = trace;
    if (trace) this.selected = { thread: trace.thread, frame: trace.frame, step: trace.current, inline: trace.inline ?? null };
    this.changed();
  }

  /** The answer of csi/stepPath. */
  applyStep(r: StepResult): void {
    if (this.selected) this.selected = { ...this.selected, step: r.step };
    if (this.trace) this.trace = { ...this.trace, current: r.step };
    this.changed();
  }

  /**
   * Stores a csi/lineStates notification. Returns true when it reports a selected frame other
   * than ours (the selection changed behind our back, e.g. from a code lens), so the caller
   * can fetch the path trace again.
   */
  applyLineStates(ls: LineStates): boolean {
    this.states.set(this.key(ls.uri), ls);
    const f = ls.frame;
    const moved =
      f !== null && (this.selected === null || this.selected.thread !== f.thread || this.selected.frame !== f.frame);
    if (moved && f) this.selected = { thread: f.thread, frame: f.frame, step: null };
    this.changed();
    return moved;
  }

  lineStates(uri: string): LineStates | undefined {
    return this.states.get(this.key(uri));
  }

  /** Documents we have line states for. */
  lineStateUris(): string[] {
    return [...this.states.values()].filter((s) => !s.stale).map((s) => s.uri);
  }

  clear(): void {
    this.stack = null;
    this.selected = null;
    this.trace = null;
    this.slice = null;
    this.states.clear();
    this.changed();
  }

  /** The answer of csi/slice (null: cleared). */
  setSlice(r: SliceResult | null): void {
    this.slice = r;
    this.changed();
  }

  /** The slice's lines in a document (null: none there). */
  sliceLines(uri: string, showStatic: boolean): SliceLines | null {
    return sliceLines(this.slice, uri, showStatic, this.key);
  }

  /** `slice: 4 lines (static 6, −33 %)`, or null without a slice. */
  sliceText(): string | null {
    return this.slice ? sliceSummary(this.slice) : null;
  }

  selectedFrame(): Frame | null {
    if (!this.stack || !this.selected) return null;
    const t = this.stack.threads.find((t) => t.index === this.selected!.thread);
    const f = t?.frames.find((f) => f.index === this.selected!.frame) ?? null;
    // A call inlined into the frame, when one is selected.
    const inline = this.selected.inline;
    return typeof inline === 'number' ? (f?.inlined?.[inline] ?? null) : f;
  }

  /** The current path step, when the trace belongs to the selected frame. */
  currentStep(): PathStep | null {
    if (!this.trace || !this.selected) return null;
    if (this.trace.thread !== this.selected.thread || this.trace.frame !== this.selected.frame) return null;
    return currentStep(this.trace, this.selected.step);
  }

  /** Line of the current step in a document, or null. */
  currentStepLine(uri: string): number | null {
    const s = this.currentStep();
    if (!s || !s.uri || this.key(s.uri) !== this.key(uri)) return null;
    return s.line;
  }

  /** Status bar text: the crash and the selected frame. */
  statusText(): string {
    if (!this.stack) return 'CSI: no crash';
    const name = crashName(this.stack.title);
    const sig = this.stack.signal ? ` ${this.stack.signal.name}` : '';
    const f = this.selectedFrame();
    if (!f || !this.selected) return `CSI: ${name}${sig}`;
    let s = `CSI: ${name}${sig} · ${frameTitle(f)}`;
    if (this.stack.threads.length > 1) s += ` (thread ${this.selected.thread + 1})`;
    const cur = this.trace && this.currentStep() ? this.selected.step ?? this.trace.current : null;
    if (this.trace && cur !== null && this.trace.steps.length > 0) s += ` · ${stepLabel(cur, this.trace.steps.length)}`;
    return s;
  }
}

/** `null_deref (…/core)` → `null_deref`. */
export function crashName(title: string): string {
  const i = title.indexOf(' (');
  return i > 0 ? title.slice(0, i) : title;
}

export function frameTitle(f: Frame): string {
  return `#${f.index} ${f.function ?? '??'}`;
}

/** A crash opened before, remembered across sessions. */
export interface RecentCrash {
  executable: string;
  core: string;
}

/** Most recent first, without duplicates, at most `max`. */
export function addRecent(list: readonly RecentCrash[], c: RecentCrash, max = 10): RecentCrash[] {
  const rest = list.filter((r) => !(r.executable === c.executable && r.core === c.core));
  return [c, ...rest].slice(0, Math.max(0, max));
}
