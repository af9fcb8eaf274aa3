// The CSI Stack view as plain data: threads → frames → path-trace steps.

import type { Frame, PathTrace, Selected, Stack } from './protocol';
import { frameAt } from './args';
import { stepLabel } from './stepping';
import { frameTitle } from './state';

export type StackNode =
  | { kind: 'thread'; thread: number }
  | { kind: 'frame'; thread: number; frame: Frame }
  /** A call inlined into `frame` at its pc (`frame.inlined[inline]`), listed before it as a
   * debugger's Call Stack does. */
  | { kind: 'inlined'; thread: number; frame: Frame; inline: number }
  | { kind: 'omitted'; thread: number; from: number; to: number }
  /** A step of the path trace of `frame`, or of the call inlined into it at `inline`. */
  | { kind: 'step'; thread: number; frame: number; inline: number | null; index: number; of: number; uri: string | null; file: string; line: number }
  | { kind: 'note'; text: string };

export type Collapsible = 'none' | 'collapsed' | 'expanded';

/** What the glue needs to make a TreeItem. */
export interface ItemView {
  id?: string;
  label: string;
  description?: string;
  tooltip?: string;
  collapsible: Collapsible;
  /** A codicon name. */
  icon?: string;
  contextValue: string;
  /** Clicking runs this (one of the extension's commands) with `args`. */
  command?: { id: string; args: unknown[] };
}

/** Stack pages when expanding omitted frames (the server's page size). */
export const PAGE = 200;

export function roots(stack: Stack | null): StackNode[] {
  if (!stack) return [];
  return stack.threads.map((t) => ({ kind: 'thread', thread: t.index }));
}

/** Frames of a thread, with an `omitted` node where the server left frames out. */
export function frameChildren(stack: Stack, thread: number): StackNode[] {
  const t = stack.threads.find((x) => x.index === thread);
  if (!t) return [];
  const out: StackNode[] = [];
  for (const f of t.frames) {
    if (t.omitted && f.index === t.omitted.to) {
      out.push({ kind: 'omitted', thread, from: t.omitted.from, to: t.omitted.to });
    }
    (f.inlined ?? []).forEach((_, inline) => out.push({ kind: 'inlined', thread, frame: f, inline }));
    out.push({ kind: 'frame', thread, frame: f });
  }
  if (t.omitted && !t.frames.some((f) => f.index >= t.omitted!.to)) {
    out.push({ kind: 'omitted', thread, from: t.omitted.from, to: t.omitted.to });
  }
  return out;
}

/** An omitted range split into pages (each fetched with csi/stack {range}). */
export function splitOmitted(from: number, to: number, page = PAGE): Array<{ from: number; to: number }> {
  const out = [];
  for (let a = from; a < to; a += page) out.push({ from: a, to: Math.min(to, a + page) });
  return out;
}

/** Steps of a frame's (or an inlined call's) path trace, oldest first. */
export function stepChildren(trace: PathTrace): StackNode[] {
  if (trace.steps.length === 0) {
    return [{ kind: 'note', text: trace.note ?? 'no path trace for this frame' }];
  }
  return trace.steps.map((s, i) => ({
    kind: 'step',
    thread: trace.thread,
    frame: trace.frame,
    inline: trace.inline ?? null,
    index: i,
    of: trace.steps.length,
    uri: s.uri,
    file: s.file,
    line: s.line,
  }));
}

function baseName(p: string): string {
  const parts = p.split(/[\\/]/);
  return parts[parts.length - 1] || p;
}

/** `inline`: a call inlined into the frame; null for the frame itself. */
function isSelected(sel: Selected | null, thread: number, frame: number, inline: number | null = null): boolean {
  return sel !== null && sel.thread === thread && sel.frame === frame && (sel.inline ?? null) === inline;
}

export const ViewCommands = {
  selectFrame: 'csi.vscode.selectFrame',
  goToStep: 'csi.vscode.goToStep',
} as const;

/** The tree item of a node. `step` is the selected frame's current step (0-based). */
export function itemView(node: StackNode, stack: Stack, sel: Selected | null, currentStep: number | null): ItemView {
  switch (node.kind) {
    case 'thread': {
      const t = stack.threads.find((x) => x.index === node.thread)!;
      const crashed = t.crashed && stack.signal ? `⚡ ${stack.signal.name}` : t.crashed ? 'crashed' : '';
      return {
        id: `t${t.index}`,
        label: `Thread ${t.index + 1} (tid ${t.tid})`,
        description: [crashed, `${t.frameCount} frame${t.frameCount === 1 ? '' : 's'}`].filter(Boolean).join(' · '),
        collapsible: t.crashed || stack.threads.length === 1 || sel?.thread === t.index ? 'expanded' : 'collapsed',
        icon: t.crashed ? 'error' : 'debug-thread',
        contextValue: 'csiThread',
      };
    }
    case 'frame': {
      const f = node.frame;
      const selected = isSelected(sel, node.thread, f.index);
      const where = f.file !== null && f.line !== null ? `${baseName(f.file)}:${f.line + 1}` : f.module ? baseName(f.module) : f.pc ?? '';
      const steps = f.pathSteps ?? 0;
      const tip = [
        `frame #${f.index} ${f.function ?? '??'} (thread ${node.thread + 1})`,
        f.file !== null && f.line !== null ? `${f.file}:${f.line + 1}` : f.module ?? '',
        f.pc ? `pc ${f.pc}` : '',
        f.analysed ? `${steps} path step${steps === 1 ? '' : 's'}` : 'not analysed (no CSI metadata)',
      ].filter(Boolean);
      return {
        id: `t${node.thread}f${f.index}`,
        label: frameTitle(f),
        description: selected ? `${where} ◀ selected` : where,
        tooltip: tip.join('\n'),
        collapsible: steps > 0 ? (selected ? 'expanded' : 'collapsed') : 'none',
        icon: selected ? 'debug-stackframe-focused' : f.file ? 'debug-stackframe' : 'library',
        contextValue: f.analysed ? 'csiFrame' : 'csiLibraryFrame',
        command: { id: ViewCommands.selectFrame, args: [{ thread: node.thread, frame: f.index }] },
      };
    }
    case 'inlined': {
      const f = node.frame;
      const call = f.inlined![node.inline];
      const selected = isSelected(sel, node.thread, f.index, node.inline);
      const where = call.file !== null && call.line !== null ? `${baseName(call.file)}:${call.line + 1}` : '';
      const steps = call.pathSteps ?? 0;
      return {
        id: `t${node.thread}f${f.index}i${node.inline}`,
        label: `${frameTitle(call)} [inlined]`,
        description: selected ? `${where} ◀ selected` : where,
        tooltip: [
          `${call.function ?? '??'} inlined into frame #${f.index} ${f.function ?? '??'} (thread ${node.thread + 1})`,
          call.file !== null && call.line !== null ? `${call.file}:${call.line + 1}` : '',
          call.analysed ? `its own activation: ${steps} path step${steps === 1 ? '' : 's'}` : 'not analysed on its own',
        ]
          .filter(Boolean)
          .join('\n'),
        collapsible: steps > 0 ? (selected ? 'expanded' : 'collapsed') : 'none',
        icon: selected ? 'debug-stackframe-focused' : 'debug-stackframe',
        contextValue: 'csiInlinedFrame',
        command: { id: ViewCommands.selectFrame, args: [{ thread: node.thread, frame: f.index, inline: node.inline }] },
      };
    }
    case 'omitted':
      return {
        id: `t${node.thread}o${node.from}-${node.to}`,
        label: `… frames #${node.from}–#${node.to - 1}`,
        description: `${node.to - node.from} omitted`,
        collapsible: 'collapsed',
        icon: 'ellipsis',
        contextValue: 'csiOmitted',
      };
    case 'step': {
      const current = isSelected(sel, node.thread, node.frame, node.inline) && currentStep === node.index;
      return {
        id: `t${node.thread}f${node.frame}${node.inline === null ? '' : `i${node.inline}`}s${node.index}`,
        label: (current ? '▶ ' : '') + stepLabel(node.index, node.of),
        description: `${baseName(node.file)}:${node.line + 1}`,
        tooltip: `${node.file}:${node.line + 1}`,
        collapsible: 'none',
        icon: current ? 'debug-breakpoint-function' : 'circle-small',
        contextValue: 'csiStep',
        command: {
          id: ViewCommands.goToStep,
          args: [{ ...frameAt(node.thread, node.frame, node.inline), step: node.index }],
        },
      };
    }
    case 'note':
      return { label: node.text, collapsible: 'none', icon: 'info', contextValue: 'csiNote' };
  }
}
