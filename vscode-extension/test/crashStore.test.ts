// The CSI Crashes view against the real csi-lsp on a real crash store made here
// (scripts/crash-store-fixture.sh: calc of the triage corpus built with csi-cc, four real
// cores, four passing runs, `csi triage --store --passing`): csi/crashBuckets,
// csi/bucketCrashes and csi/bucketLineStates fed through the extension's own logic (tree
// items, bucket view, decoration plan, suspicious hints), and opening a bucket's crash with
// csi/openCrash. Also the logic on its own (unit tests).
// The server: $CSI_LSP, else $CARGO_TARGET_DIR/release/csi-lsp, else ../target/release/csi-lsp.
// Without it (or when the fixture cannot be made) the store tests are skipped, except under
// CI (`CI` set), where that is a failure.

import { type ChildProcess, execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';

import {
  bucketMessage,
  bucketNodes,
  bucketTooltip,
  bucketView,
  crashItemView,
  crashNodes,
  ochiaiText,
  shortPath,
  sitesText,
  suspiciousHover,
  suspiciousLabel,
} from '../src/logic/crashes';
import { lineCount, plan } from '../src/logic/decorations';
import type { Bucket, BucketCrashes, BucketLineStates, CrashBuckets, Stack } from '../src/logic/protocol';
import { bucketArg } from '../src/extension';

const ext = path.resolve(__dirname, '..', '..');
const root = path.resolve(ext, '..');
const target = process.env.CARGO_TARGET_DIR ? path.resolve(root, process.env.CARGO_TARGET_DIR) : path.join(root, 'target');
const binary = process.env.CSI_LSP || path.join(target, 'release', 'csi-lsp');
const calcSrc = path.join(root, 'bench', 'triage', 'src', 'calc.c');
const calcUri = `file://${calcSrc}`;
const DIV = 'SIGFPE in divide | apply | eval | main';

let skip: string | false = fs.existsSync(binary) ? false : `csi-lsp not found at ${binary} (cargo build --release -p csi-lsp, or set CSI_LSP)`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'csi-vscode-store-'));
const db = path.join(tmp, 'crashes.db');

let proc: ChildProcess;
let conn: MessageConnection;

function lineOf(text: string): number {
  const i = fs.readFileSync(calcSrc, 'utf8').split('\n').findIndex((l) => l.includes(text));
  assert.ok(i >= 0, text);
  return i; // 0-based
}

before(async () => {
  if (!skip) {
    try {
      execFileSync(path.join(root, 'scripts', 'crash-store-fixture.sh'), [tmp], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      const err = (e as { stderr?: Buffer }).stderr?.toString() ?? String(e);
      skip = `the crash store fixture could not be made: ${err.trim()}`;
    }
  }
  if (skip) {
    if (process.env.CI) throw new Error(`CI: ${skip}`);
    console.log(`# SKIP crash store tests: ${skip}`);
    return;
  }
  proc = spawn(binary, [], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  conn.onNotification('window/showMessage', () => {});
  conn.onNotification('csi/lineStates', () => {});
  conn.listen();
  await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: `file://${root}`,
    capabilities: {},
    initializationOptions: { lineStates: true, crashStore: db },
  });
  await conn.sendNotification('initialized', {});
});

after(async () => {
  if (conn) {
    try {
      await conn.sendRequest('shutdown');
      await conn.sendNotification('exit');
    } finally {
      conn.dispose();
      proc.kill();
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('the CSI Crashes view against csi-lsp on a real store', async (t) => {
  if (skip) return t.skip(skip);
  let buckets: CrashBuckets;
  let div: Bucket;

  await t.test('csi/crashBuckets → bucket items', async () => {
    buckets = await conn.sendRequest<CrashBuckets>('csi/crashBuckets', {});
    assert.equal(buckets.store, db);
    assert.equal(buckets.message, null);
    assert.equal(buckets.buckets.length, 3);
    div = buckets.buckets[0];
    const nodes = bucketNodes(buckets);
    assert.deepEqual(
      nodes.map((n) => crashItemView(n).label),
      buckets.buckets.map((b) => `${b.count} × ${b.signature}`),
    );
    const v = crashItemView(nodes[0]);
    assert.equal(v.label, `2 × ${DIV}`);
    assert.equal(v.description, 'calc');
    assert.equal(v.contextValue, 'csiBucket');
    assert.equal(v.icon, 'bug'); // it carries passing-run results
    assert.match(v.tooltip!, new RegExp(`crash sites: \\./src/calc\\.c:${lineOf('return a / b;') + 1} ×2`));
    // The crashes may have the same second: one time then.
    assert.match(v.tooltip!, /\n(at|first) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\n/);
    assert.match(v.tooltip!, /compared with 4 passing runs/);
  });

  let crashes: BucketCrashes;
  await t.test('csi/bucketCrashes → crash items that open the crash', async () => {
    crashes = await conn.sendRequest<BucketCrashes>('csi/bucketCrashes', { program: div.program, signature: div.signature });
    assert.deepEqual(
      crashes.crashes.map((c) => path.relative(tmp, c.core)).sort(),
      ['cores/div/0/core', 'cores/div/1/core'],
    );
    const items = crashNodes(div, crashes.crashes).map(crashItemView);
    for (const [i, it] of items.entries()) {
      const c = crashes.crashes[i];
      assert.equal(it.command?.id, 'csi.vscode.openCrash');
      assert.deepEqual(it.command?.args, [{ executable: path.join(tmp, 'bin', 'calc'), core: c.core }]);
      assert.equal(it.label, shortPath(c.core));
      assert.ok(it.label.endsWith('/0/core') || it.label.endsWith('/1/core'), it.label);
      assert.equal(it.description, `${c.timeText} · ./src/calc.c:${lineOf('return a / b;') + 1}`);
    }
    // What the item runs: the server opens that crash.
    const stack = await conn.sendRequest<Stack>('csi/openCrash', items[0].command!.args[0]);
    assert.equal(stack.signal?.name, 'SIGFPE');
    assert.equal(stack.threads[0].frames[0].function, 'divide');
  });

  await t.test('csi/bucketLineStates → decorations and suspicious hints of calc.c', async () => {
    const arg = bucketArg(bucketNodes(buckets)[0]);
    assert.deepEqual(arg, { program: div.program, signature: DIV });
    const r = await conn.sendRequest<BucketLineStates>('csi/bucketLineStates', arg);
    const v = bucketView(r);
    assert.deepEqual([...v.states.keys()], [calcUri]);
    assert.deepEqual(v.unresolved, []);
    const states = v.states.get(calcUri)!;
    const text = fs.readFileSync(calcSrc, 'utf8');
    const p = plan(states, 'global', null, text.split('\n').length, null);
    const divide = lineOf('return a / b;');
    const modulo = lineOf('long r = a % b;');
    assert.ok(p.must.some((x) => x.start <= divide && divide <= x.end), 'the division ran in every crash');
    assert.ok(p.never.some((x) => x.start <= modulo && modulo <= x.end), 'the modulo ran in none');
    assert.equal(lineCount(p.must), states.must.length);
    assert.equal(lineCount(p.never), states.never.length);
    assert.deepEqual([p.may, p.partial, p.current, p.slice], [[], [], [], []]);
    // The suspicious lines: ranked, the division near the top and known exactly.
    const sus = v.suspicious.get(calcUri)!;
    assert.ok(sus.length > 0);
    assert.deepEqual(
      sus.map((s) => s.rank),
      [...sus.map((s) => s.rank)].sort((a, b) => a - b),
    );
    const d = sus.find((s) => s.line === divide)!;
    assert.ok(d && d.rank <= 5, JSON.stringify(sus.slice(0, 6)));
    assert.deepEqual([d.failed, d.passed, d.onStack], [[2, 2], [1, 1], 2]);
    assert.equal(suspiciousLabel(d), ` ◆ #${d.rank} Ochiai ${ochiaiText(d.ochiai)}`);
    const hover = suspiciousHover(d, v.count, v.passingRuns);
    assert.match(hover, /ran in 2 of the bucket's 2 crashes/);
    assert.match(hover, /ran in 1 of 4 passing runs/);
    assert.equal(v.first?.uri, calcUri);
    assert.equal(v.first?.line, sus[0].line);
    assert.match(bucketMessage(v), new RegExp(`^CSI: bucket ${DIV.replace(/\|/g, '\\|')} \\(2 crashes\\): \\d+ lines ran in every crash, \\d+ in none; \\d+ suspicious lines against 4 passing runs$`));
  });

  await t.test('store errors are one line; an absent store is an empty list with a message', async () => {
    await assert.rejects(
      conn.sendRequest('csi/bucketLineStates', { program: div.program, signature: 'SIGSEGV in nowhere' }),
      (e: Error) => /no bucket `SIGSEGV in nowhere`/.test(e.message) && !e.message.includes('\n'),
    );
    await conn.sendNotification('workspace/didChangeConfiguration', { settings: { csi: { crashStore: path.join(tmp, 'missing.db') } } });
    const r = await conn.sendRequest<CrashBuckets>('csi/crashBuckets', {});
    assert.deepEqual(r.buckets, []);
    assert.equal(r.store, null);
    const nodes = bucketNodes(r);
    assert.equal(nodes.length, 1);
    assert.match(crashItemView(nodes[0]).label, /does not exist/);
    await conn.sendNotification('workspace/didChangeConfiguration', { settings: { csi: { crashStore: db } } });
    const again = await conn.sendRequest<CrashBuckets>('csi/crashBuckets', {});
    assert.equal(again.buckets.length, 3);
  });
});

// ---- the logic on its own ----------------------------------------------------------------

const B: Bucket = {
  program: '/w/bin/calc',
  signature: 'SIGFPE in divide | main',
  signal: 'SIGFPE',
  frames: ['divide', 'main'],
  count: 3,
  firstTime: 1,
  lastTime: 2,
  firstTimeText: '1970-01-01 00:00:01 UTC',
  lastTimeText: '1970-01-01 00:00:02 UTC',
  representative: { core: '/c/0/core', executable: '/w/bin/calc', time: 1, timeText: null, site: null, hash: 'h0', signal: 'SIGFPE' },
  sites: { 'a.c:3': 1, 'a.c:9': 2 },
  linesAnalysed: false,
  hasPassing: false,
  passingRuns: null,
};

test('bucket and crash items', () => {
  assert.equal(sitesText(B.sites), 'a.c:9 ×2, a.c:3 ×1');
  assert.equal(
    bucketTooltip(B),
    'SIGFPE in divide | main\n'.replace(/^/, '3 × ') +
      'program: /w/bin/calc\nfirst 1970-01-01 00:00:01 UTC\nlast  1970-01-01 00:00:02 UTC\ncrash sites: a.c:9 ×2, a.c:3 ×1\nrepresentative: /c/0/core\nno CSI metadata: stack only, no line answers',
  );
  const v = crashItemView({ kind: 'bucket', bucket: B });
  assert.deepEqual([v.contextValue, v.icon, v.collapsible], ['csiBucketStackOnly', 'error', 'collapsed']);
  const c = crashItemView({ kind: 'crash', bucket: B, crash: { ...B.representative, core: '/var/crashes/a/b/c/core' } });
  assert.equal(c.label, '…/b/c/core');
  assert.equal(c.description, 'no time · ?');
  assert.equal(c.collapsible, 'none');
  assert.deepEqual(bucketNodes(null, 'store x: not a database'), [{ kind: 'message', text: 'store x: not a database' }]);
  assert.deepEqual(bucketNodes({ store: null, message: 'no crash store is set', buckets: [] }), [{ kind: 'message', text: 'no crash store is set' }]);
  assert.deepEqual(bucketNodes(null), []);
  assert.equal(bucketArg({ program: 1, signature: 's' }), undefined);
  assert.deepEqual(bucketArg({ kind: 'crash', bucket: B, crash: B.representative }), { program: B.program, signature: B.signature });
});

test('ochiai intervals and a bucket view with unresolved files', () => {
  assert.equal(ochiaiText([0.8164966, 1]), '0.816–1');
  assert.equal(ochiaiText([0.5, 0.5]), '0.5');
  const file = (uri: string | null, f: string, must: number[], suspicious: any[]) => ({
    uri, version: null as null, frame: null as null, file: f, keys: [f], must, may: [], never: [], partial: [], suspicious, failingOnly: [], passingOnly: [],
  });
  const s = (line: number, rank: number) => ({ line, rank, ochiai: [0.2, 0.4] as [number, number], failed: [1, 2] as [number, number], passed: [0, 1] as [number, number], onStack: 0 });
  const v = bucketView({
    store: 'x.db', program: 'p', signature: 'S', count: 2, linesAnalysed: true, passingRuns: null, notices: [],
    files: [file('file:///a.c', '/a.c', [9, 4], [s(4, 3)]), file('file:///b.c', '/b.c', [], [s(1, 2), s(7, 5)]), file(null, './gone.c', [1], [s(1, 1)])],
  });
  assert.deepEqual(v.unresolved, ['./gone.c']);
  assert.deepEqual(v.first, { uri: 'file:///b.c', line: 1 });
  assert.deepEqual(v.suspicious.get('file:///b.c')!.map((x) => x.rank), [2, 5]);
  assert.equal(suspiciousHover(s(1, 2), 2, null).includes('ran in 1–2 of the bucket\'s 2 crashes'), true);
  assert.equal(suspiciousHover(s(1, 2), 2, null).includes('ran in 0–1 of ? passing runs'), true);
  assert.equal(bucketMessage(v), 'CSI: bucket S (2 crashes): 2 lines ran in every crash, 0 in none (not in the workspace: ./gone.c)');
});
