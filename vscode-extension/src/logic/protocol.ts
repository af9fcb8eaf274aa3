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

/** Where a slice starts (csi/slice `criterion`). Lines are 0-based. */
export interface SliceCriterion {
  uri: string | null;
  file: string | null;
  /** Null when the criterion has no source line. */
  line: number | null;
  function: string | null;
  thread?: number | null;
  /** The frame whose stack context the slice follows; null: all calling contexts. */
  frame?: number | null;
  /** The variables asked for (unknown ones included); null: every variable used there. */
  variables: string[] | null;
}

/** One file's lines of a slice; `uri` is null for files not found in the workspace. */
export interface SliceFile {
  uri: string | null;
  file: string;
  lines: number[];
}

/** The result of csi/slice (null after `{"clear": true}`). */
export interface SliceResult {
  criterion: SliceCriterion;
  unknownVariables: string[];
  /** The slice restricted by the crash's trace data. */
  restricted: SliceFile[];
  /** The plain static slice from the same criterion. */
  unrestricted: SliceFile[];
  restrictedLines: number;
  unrestrictedLines: number;
  /** 1 − restrictedLines / unrestrictedLines (0 when both are empty). */
  reduction: number;
}

/** csi/slice params: {} slices from the crash point. */
export interface SliceParams {
  uri?: string;
  line?: number;
  variables?: string[];
  clear?: boolean;
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
  slice: 'csi/slice',
  /** The server's command for csi/slice (its code lens runs it with {"clear": true}). */
  sliceCommand: 'csi.slice',
  /** Only a command (workspace/executeCommand). */
  clearCommand: 'csi.clear',
} as const;
