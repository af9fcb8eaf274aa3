// Shapes of csi-lsp's custom messages (docs/protocol.md). Lines are 0-based.

export interface Signal {
  signo: number;
  name: string;
  code?: number;
  fault_address?: number | null;
}

export interface Frame {
  index: number;
  function: string | null;
  file: string | null;
  uri: string | null;
  line: number | null;
  column?: number | null;
  module: string | null;
  pc?: string;
  analysed?: boolean;
  pathSteps?: number;
}

export interface Thread {
  index: number;
  tid: number;
  crashed: boolean;
  frameCount: number;
  frames: Frame[];
  omitted?: { from: number; to: number } | null;
}

export interface Selected {
  thread: number;
  frame: number;
  step: number | null;
}

export interface Stack {
  title: string;
  signal: Signal | null;
  selected: Selected;
  notices: string[];
  threads: Thread[];
}

export interface PathStep {
  file: string;
  uri: string | null;
  line: number;
}

export interface PathTrace {
  thread: number;
  frame: number;
  /** 0-based index into `steps`. */
  current: number;
  note: string | null;
  steps: PathStep[];
}

export interface StepResult {
  /** 0-based. */
  step: number;
  of: number;
  file: string;
  uri: string | null;
  line: number;
}

export interface LineSets {
  must: number[];
  may: number[];
  never: number[];
  partial: number[];
}

export interface LineStates extends LineSets {
  uri: string;
  version: number | null;
  frame: (LineSets & { thread: number; frame: number }) | null;
  stale?: boolean;
}

export type QueryKind = 'mayRun' | 'mayNotRun' | 'mayRunBefore';

export interface QueryResult {
  kind: QueryKind;
  answer: 'possible' | 'impossible';
}

/** Method names, in one place. */
export const Methods = {
  openCrash: 'csi/openCrash',
  openReport: 'csi/openReport',
  stack: 'csi/stack',
  selectFrame: 'csi/selectFrame',
  pathTrace: 'csi/pathTrace',
  stepPath: 'csi/stepPath',
  query: 'csi/query',
  lineStates: 'csi/lineStates',
  /** Only a command (workspace/executeCommand). */
  clearCommand: 'csi.clear',
} as const;
