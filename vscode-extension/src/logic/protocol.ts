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
  /** Calls inlined at the frame's pc, innermost first, each a frame of its own (same `index`). */
  inlined?: Frame[];
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
  /** A call inlined into the frame (`Frame.inlined`), when one is selected. */
  inline?: number | null;
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
  /** The selected call inlined into the frame, when one is. */
  inline?: number;
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

// ---- The crash store (csi/crashBuckets, csi/bucketCrashes, csi/bucketLineStates) ----

/** A crash of the store: `executable` + `core` are what csi/openCrash takes. */
export interface StoredCrash {
  core: string;
  executable: string;
  /** Seconds since the epoch, and as text (`2025-11-24 06:55:01 UTC`). */
  time: number | null;
  timeText: string | null;
  /** `file:line` of the crash, null when unknown. */
  site: string | null;
  /** BLAKE3 of the core's bytes. */
  hash: string;
  signal: string | null;
}

export interface Bucket {
  program: string;
  signature: string;
  signal: string;
  frames: string[];
  count: number;
  firstTime: number | null;
  lastTime: number | null;
  firstTimeText: string | null;
  lastTimeText: string | null;
  representative: StoredCrash;
  /** Crash site (`file:line`, `?`) → crashes. */
  sites: Record<string, number>;
  linesAnalysed: boolean;
  /** The bucket carries `csi triage --passing` results. */
  hasPassing: boolean;
  passingRuns: number | null;
}

/** csi/crashBuckets: `store` null (and `message` saying why) when no store is set or found. */
export interface CrashBuckets {
  store: string | null;
  message: string | null;
  buckets: Bucket[];
}

export interface BucketCrashes {
  store: string;
  program: string;
  signature: string;
  crashes: StoredCrash[];
}

/** A suspicious line of a bucket (0-based), from its passing-run comparison. */
export interface SuspiciousLine {
  line: number;
  /** Ochiai's interval [lower, upper] over every way of resolving the Maybes. */
  ochiai: [number, number];
  /** Crashes of the bucket it ran in: [surely, possibly]. */
  failed: [number, number];
  /** Passing runs it ran in: [surely, possibly]. */
  passed: [number, number];
  /** Crashes stopped in it (a frame of the crashing thread). */
  onStack: number;
  /** 1 = the most suspicious line of the bucket. */
  rank: number;
}

/** One file of a bucket: a LineStates (must = ran in every crash, never = in none). */
export interface BucketFile extends LineSets {
  uri: string | null;
  version: null;
  frame: null;
  /** The resolved file (or the debug info's name when not found). */
  file: string;
  /** The debug info's names of it. */
  keys: string[];
  suspicious: SuspiciousLine[];
  failingOnly: number[];
  passingOnly: number[];
}

export interface BucketLineStates {
  store: string;
  program: string;
  signature: string;
  count: number;
  linesAnalysed: boolean;
  /** Passing runs compared; null: no `csi triage --passing` results. */
  passingRuns: number | null;
  files: BucketFile[];
  notices: string[];
}

// ---- csi/functionSpans ----

/** A function defined in a document: 0-based inclusive lines (its declaration line, else its
 *  first line with code, through its last line with code) and the global counts over them. */
export interface FunctionSpan {
  name: string;
  /** The debug info's name of the file. */
  file: string;
  first: number;
  last: number;
  must: number;
  may: number;
  never: number;
}

export interface FunctionSpans {
  uri: string;
  /** By first line; empty for a file that is not a source of the program. */
  functions: FunctionSpan[];
  /** The document was edited since it was opened: no functions (its lines no longer match). */
  stale?: boolean;
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
  crashBuckets: 'csi/crashBuckets',
  bucketCrashes: 'csi/bucketCrashes',
  bucketLineStates: 'csi/bucketLineStates',
  functionSpans: 'csi/functionSpans',
} as const;
