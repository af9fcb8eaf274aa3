// Path stepping: the selected frame's path trace and where its current step is.

import type { PathStep, PathTrace } from './protocol';

/** The step `delta` away from `current`, clamped to the trace (as the server clamps). */
export function stepTarget(stepCount: number, current: number, delta: number): number {
  if (stepCount <= 0) return 0;
  return Math.min(stepCount - 1, Math.max(0, current + delta));
}

/** The delta csi/stepPath needs to go from `current` to `target`. */
export function deltaTo(current: number, target: number): number {
  return target - current;
}

export function canStep(trace: PathTrace | null, current: number | null, delta: number): boolean {
  if (!trace || trace.steps.length === 0) return false;
  const cur = current ?? trace.current;
  return stepTarget(trace.steps.length, cur, delta) !== cur;
}

/** 1-based label of a step: `step 3/11`. */
export function stepLabel(index: number, of: number): string {
  return `step ${index + 1}/${of}`;
}

/** The current step's location, or null. */
export function currentStep(trace: PathTrace | null, current: number | null): PathStep | null {
  if (!trace || trace.steps.length === 0) return null;
  const i = current ?? trace.current;
  return trace.steps[Math.min(Math.max(i, 0), trace.steps.length - 1)] ?? null;
}

/** Indices of the steps on a line (a loop visits a line several times). */
export function stepsOnLine(trace: PathTrace | null, uri: string, line: number): number[] {
  if (!trace) return [];
  const out: number[] = [];
  trace.steps.forEach((s, i) => {
    if (s.uri === uri && s.line === line) out.push(i);
  });
  return out;
}
