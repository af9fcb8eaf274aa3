// Unit tests of the vscode-free logic modules.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';

import { crashArg, frameArg, lineArg, reportArg } from '../src/logic/args';
import { LEGEND, legendMarkdown, legendText } from '../src/logic/legend';
import { emptyPlan, lineCount, linesFor, nextScope, plan, toRanges } from '../src/logic/decorations';
import { countIn, fileOverview, ratioBar } from '../src/logic/overview';
import type { LineStates, PathTrace, SliceResult, Stack } from '../src/logic/protocol';
import { findServer } from '../src/logic/server';
import {
  criterionPlace,
  parseVariables,
  percent,
  sliceLines,
  sliceMessage,
  sliceParams,
  sliceSummary,
  sliceTooltip,
  sliceUris,
  unshown,
} from '../src/logic/slice';
import { frameChildren, itemView, roots, splitOmitted, stepChildren } from '../src/logic/stackTree';
import { CsiState, addRecent, crashName } from '../src/logic/state';
import { canStep, currentStep, deltaTo, stepTarget, stepsOnLine } from '../src/logic/stepping';

const U = 'file:///w/a.c';

function ls(over: Partial<LineStates> = {}): LineStates {
  return {
    uri: U,
    version: 1,
    must: [1, 2, 3, 7],
    may: [4, 5],
    never: [6, 9],
    partial: [7],
    frame: { thread: 0, frame: 0, must: [2, 3], may: [4], never: [6], partial: [] },
    ...over,
  };
}

function frame(index: number, fn: string | null, line: number | null, steps = 0) {
  return {
    index,
    function: fn,
    file: line === null ? null : './a.c',
    uri: line === null ? null : U,
    line,
    module: line === null ? '/lib/libc.so.6' : '/w/app',
    pc: '0x1',
    analysed: line !== null,
    pathSteps: steps,
  };
}

function stack(): Stack {
  return {
    title: 'app (/w/core)',
    signal: { signo: 11, name: 'SIGSEGV' },
    selected: { thread: 0, frame: 0, step: null },
    notices: [],
    threads: [
      { index: 0, tid: 10, crashed: true, frameCount: 3, frames: [frame(0, 'crash', 5, 3), frame(1, 'main', 9, 2), frame(2, null, null)] },
      { index: 1, tid: 11, crashed: false, frameCount: 1, frames: [frame(0, 'worker', 12)] },
    ],
  };
}

function trace(n = 3, current = n - 1, fr = 0): PathTrace {
  return {
    thread: 0,
    frame: fr,
    current,
    note: null,
    steps: Array.from({ length: n }, (_, i) => ({ file: './a.c', uri: U, line: i + 1 })),
  };
}

describe('decorations', () => {
  test('lines merge into runs, deduplicated, clamped', () => {
    assert.deepEqual(toRanges([5, 1, 2, 3, 3, 9, 10, -1, 40], 20), [
      { start: 1, end: 3 },
      { start: 5, end: 5 },
      { start: 9, end: 10 },
    ]);
    assert.deepEqual(toRanges([]), []);
  });
  test('global, local and off', () => {
    const g = plan(ls(), 'global', null);
    assert.deepEqual(g.must, [{ start: 1, end: 3 }, { start: 7, end: 7 }]);
    assert.deepEqual(g.may, [{ start: 4, end: 5 }]);
    assert.deepEqual(g.partial, [{ start: 7, end: 7 }]);
    assert.deepEqual(g.current, []);
    const l = plan(ls(), 'local', 4);
    assert.deepEqual(l.must, [{ start: 2, end: 3 }]);
    assert.deepEqual(l.never, [{ start: 6, end: 6 }]);
    assert.deepEqual(l.current, [{ start: 4, end: 4 }]);
    const off = plan(ls(), 'off', 4);
    assert.equal(lineCount(off.must) + lineCount(off.may) + lineCount(off.never), 0);
    assert.deepEqual(off.current, [{ start: 4, end: 4 }], 'the path step still shows');
  });
  test('no frame analysis or stale: nothing', () => {
    assert.equal(linesFor(ls({ frame: null }), 'local'), null);
    const stale = plan(ls({ stale: true }), 'global', 3);
    assert.deepEqual(stale, emptyPlan());
    assert.deepEqual(Object.keys(stale), ['must', 'may', 'never', 'partial', 'current', 'slice', 'sliceStatic', 'sliceCriterion']);
    assert.equal(linesFor(undefined, 'global'), null);
  });
  test('scope cycles', () => {
    assert.equal(nextScope('global'), 'local');
    assert.equal(nextScope('local'), 'off');
    assert.equal(nextScope('off'), 'global');
  });
});

describe('stepping', () => {
  test('targets clamp like the server', () => {
    assert.equal(stepTarget(11, 10, -2), 8);
    assert.equal(stepTarget(11, 1, -5), 0);
    assert.equal(stepTarget(11, 9, 5), 10);
    assert.equal(stepTarget(0, 0, 1), 0);
    assert.equal(deltaTo(10, 3), -7);
  });
  test('can step, current step, steps on a line', () => {
    const t = trace(3);
    assert.equal(canStep(t, null, 1), false);
    assert.equal(canStep(t, null, -1), true);
    assert.equal(canStep(t, 0, -1), false);
    assert.equal(canStep(null, null, -1), false);
    assert.deepEqual(currentStep(t, 0), { file: './a.c', uri: U, line: 1 });
    assert.deepEqual(currentStep(t, null), { file: './a.c', uri: U, line: 3 });
    const loop = { ...t, steps: [...t.steps, { file: './a.c', uri: U, line: 2 }] };
    assert.deepEqual(stepsOnLine(loop, U, 2), [1, 3]);
  });
});

describe('state', () => {
  test('stack, selection, trace, steps, status', () => {
    const s = new CsiState();
    let changes = 0;
    s.onChange(() => changes++);
    assert.equal(s.statusText(), 'CSI: no crash');
    s.setStack(stack());
    assert.equal(s.statusText(), 'CSI: app SIGSEGV · #0 crash (thread 1)');
    s.setTrace(trace(3));
    assert.equal(s.statusText(), 'CSI: app SIGSEGV · #0 crash (thread 1) · step 3/3');
    assert.equal(s.currentStepLine(U), 3);
    assert.equal(s.currentStepLine('file:///w/b.c'), null);
    s.applyStep({ step: 0, of: 3, file: './a.c', uri: U, line: 1 });
    assert.equal(s.currentStepLine(U), 1);
    assert.equal(s.selected?.step, 0);
    assert.ok(changes >= 3);
    s.clear();
    assert.equal(s.isOpen, false);
    assert.equal(s.lineStates(U), undefined);
  });
  test('line states keyed by normalised uri; a frame selected elsewhere is noticed', () => {
    const s = new CsiState((u) => u.toLowerCase());
    s.setStack(stack());
    assert.equal(s.applyLineStates(ls({ uri: 'FILE:///W/A.C' })), false);
    assert.ok(s.lineStates(U));
    assert.deepEqual(s.lineStateUris(), ['FILE:///W/A.C']);
    const moved = s.applyLineStates(ls({ frame: { thread: 0, frame: 1, must: [], may: [], never: [], partial: [] } }));
    assert.equal(moved, true);
    assert.deepEqual(s.selected, { thread: 0, frame: 1, step: null });
    assert.equal(s.currentStep(), null, 'old trace belongs to another frame');
  });
  test('recent crashes', () => {
    const a = { executable: '/a', core: '/a.core' };
    const b = { executable: '/b', core: '/b.core' };
    const c = { executable: '/c', core: '/c.core' };
    assert.deepEqual(addRecent([a, b], b), [b, a]);
    assert.deepEqual(addRecent([a, b], c, 2), [c, a]);
    assert.deepEqual(addRecent([], a, 0), []);
    assert.equal(crashName('null_deref (/x/core)'), 'null_deref');
  });
});

describe('stack tree', () => {
  test('threads → frames → steps', () => {
    const st = stack();
    const sel = st.selected;
    const ts = roots(st);
    assert.equal(ts.length, 2);
    const t0 = itemView(ts[0], st, sel, null);
    assert.deepEqual([t0.label, t0.description, t0.collapsible, t0.icon], ['Thread 1 (tid 10)', '⚡ SIGSEGV · 3 frames', 'expanded', 'error']);
    assert.equal(itemView(ts[1], st, sel, null).collapsible, 'collapsed');
    const fs = frameChildren(st, 0);
    const views = fs.map((n) => itemView(n, st, sel, null));
    assert.deepEqual(
      views.map((v) => [v.label, v.description, v.collapsible]),
      [
        ['#0 crash', 'a.c:6 ◀ selected', 'expanded'],
        ['#1 main', 'a.c:10', 'collapsed'],
        ['#2 ??', 'libc.so.6', 'none'],
      ],
    );
    assert.deepEqual(views[1].command, { id: 'csi.vscode.selectFrame', args: [{ thread: 0, frame: 1 }] });
    const steps = stepChildren(trace(3, 1));
    const sv = steps.map((n) => itemView(n, st, { thread: 0, frame: 0, step: 1 }, 1));
    assert.deepEqual(sv.map((v) => v.label), ['step 1/3', '▶ step 2/3', 'step 3/3']);
    assert.deepEqual(sv[2].command, { id: 'csi.vscode.goToStep', args: [{ thread: 0, frame: 0, step: 2 }] });
    const none = stepChildren({ ...trace(0), note: 'path trace not used' });
    assert.deepEqual(none, [{ kind: 'note', text: 'path trace not used' }]);
  });
  test('calls inlined into a frame are listed before it and selected on their own', () => {
    const st = stack();
    const main = st.threads[0].frames[1];
    main.inlined = [{ ...frame(1, 'cmd_add', 31), analysed: true, pathSteps: 4 }, frame(1, 'run', 58)];
    const fs = frameChildren(st, 0);
    assert.deepEqual(
      fs.map((n) => (n.kind === 'inlined' ? `${n.frame.index}.${n.inline}` : n.kind === 'frame' ? n.frame.index : n.kind)),
      [0, '1.0', '1.1', 1, 2],
    );
    const sel = { thread: 0, frame: 1, step: null, inline: 0 };
    const views = fs.map((n) => itemView(n, st, sel, null));
    assert.deepEqual(
      views.map((v) => [v.label, v.description]),
      [
        ['#0 crash', 'a.c:6'],
        ['#1 cmd_add [inlined]', 'a.c:32 ◀ selected'],
        ['#1 run [inlined]', 'a.c:59'],
        ['#1 main', 'a.c:10'],
        ['#2 ??', 'libc.so.6'],
      ],
    );
    assert.deepEqual(views[1].command, { id: 'csi.vscode.selectFrame', args: [{ thread: 0, frame: 1, inline: 0 }] });
    // The selected inlined call opens on its own path's steps; `run` has none.
    assert.deepEqual([views[1].collapsible, views[2].collapsible], ['expanded', 'none']);
    const steps = stepChildren({ ...trace(4, 3), thread: 0, frame: 1, inline: 0 });
    const sv = steps.map((n) => itemView(n, st, { ...sel, step: 3 }, 3));
    assert.deepEqual(sv.map((v) => v.label), ['step 1/4', 'step 2/4', 'step 3/4', '▶ step 4/4']);
    assert.deepEqual(sv[0].command, { id: 'csi.vscode.goToStep', args: [{ thread: 0, frame: 1, inline: 0, step: 0 }] });
    // The same step of the frame itself is another node, not the current one.
    const own = stepChildren({ ...trace(4, 3), thread: 0, frame: 1 }).map((n) => itemView(n, st, { ...sel, step: 3 }, 3));
    assert.equal(own[3].label, 'step 4/4');
    assert.notEqual(own[3].id, sv[3].id);
    // The state's selected frame is the inlined call.
    const s = new CsiState((u) => u);
    s.setStack({ ...st, selected: sel });
    assert.equal(s.selectedFrame()?.function, 'cmd_add');
    s.setTrace({ ...trace(4, 3), thread: 0, frame: 1, inline: 1 });
    assert.equal(s.selectedFrame()?.function, 'run');
  });
  test('omitted frames sit between the innermost and outermost pages', () => {
    const st = stack();
    st.threads[0].frames = [frame(0, 'a', 1), frame(1, 'b', 2), frame(9, 'z', 3)];
    st.threads[0].frameCount = 10;
    st.threads[0].omitted = { from: 2, to: 9 };
    const kinds = frameChildren(st, 0).map((n) => (n.kind === 'frame' ? n.frame.index : n.kind));
    assert.deepEqual(kinds, [0, 1, 'omitted', 9]);
    const o = frameChildren(st, 0)[2];
    assert.equal(itemView(o, st, null, null).label, '… frames #2–#8');
    assert.deepEqual(splitOmitted(180, 620), [
      { from: 180, to: 380 },
      { from: 380, to: 580 },
      { from: 580, to: 620 },
    ]);
  });
});

describe('overview', () => {
  // csi/functionSpans of a file: the server's functions by first line, with global counts.
  const span = (name: string, first: number, last: number, must: number, may: number, never: number) => ({
    name,
    file: './a.c',
    first,
    last,
    must,
    may,
    never,
  });
  test('functions from the server spans, by line; ones with no analysed line left out', () => {
    const sets = { must: [3, 4, 5, 11], may: [6, 7], never: [12], partial: [] };
    assert.deepEqual(countIn(sets, 3, 8), { must: 3, may: 2, never: 0 });
    const o = fileOverview(U, 'a.c', [span('g', 10, 13, 1, 0, 1), span('unused', 15, 16, 0, 0, 0), span('f', 3, 8, 3, 2, 0)], sets);
    assert.deepEqual(o.functions, [
      { name: 'f', start: 3, end: 8, must: 3, may: 2, never: 0 },
      { name: 'g', start: 10, end: 13, must: 1, may: 0, never: 1 },
    ]);
    assert.deepEqual([o.uri, o.label, o.must, o.may, o.never], [U, 'a.c', 4, 2, 1]);
    // No spans (the server could not say): the file with its counts, no functions.
    const none = fileOverview(U, 'a.c', [], sets);
    assert.deepEqual([none.functions, none.must, none.may, none.never], [[], 4, 2, 1]);
  });
  test('the ratio bar', () => {
    assert.equal(ratioBar({ must: 5, may: 3, never: 2 }), '🟩🟩🟩🟩🟩🟨🟨🟨🟥🟥');
    assert.equal([...ratioBar({ must: 4, may: 1, never: 1 })].length, 10);
    assert.equal(ratioBar({ must: 1, may: 0, never: 0 }, 4), '🟩🟩🟩🟩');
    assert.equal(ratioBar({ must: 1, may: 1, never: 1 }, 3), '🟩🟨🟥');
    assert.equal(ratioBar({ must: 0, may: 0, never: 0 }), '');
  });
});

describe('finding the server', () => {
  const files = new Set(['/ext/server/csi-lsp', '/usr/bin/csi-lsp', '/w/bin/csi-lsp', '/home/me/csi-lsp']);
  const base = { setting: '', extensionPath: '/ext', workspace: '/w', pathEnv: '/opt:/usr/bin', home: '/home/me', isFile: (p: string) => files.has(p) };
  test('setting, bundled, then PATH', () => {
    assert.deepEqual(findServer({ ...base, setting: 'bin/csi-lsp' }), { path: '/w/bin/csi-lsp', source: 'setting' });
    assert.deepEqual(findServer({ ...base, setting: '~/csi-lsp' }), { path: '/home/me/csi-lsp', source: 'setting' });
    assert.deepEqual(findServer(base), { path: '/ext/server/csi-lsp', source: 'bundled' });
    const noBundle = { ...base, isFile: (p: string) => p !== '/ext/server/csi-lsp' && files.has(p) };
    assert.deepEqual(findServer(noBundle), { path: '/usr/bin/csi-lsp', source: 'PATH' });
    const checkout = { ...base, isFile: (p: string) => p === path.join('/ext', '..', 'target', 'release', 'csi-lsp') };
    assert.deepEqual(findServer(checkout), { path: '/target/release/csi-lsp', source: 'bundled' });
  });
  test('a wrong setting is an error, not a fallback', () => {
    const r = findServer({ ...base, setting: '/nope/csi-lsp' });
    assert.ok('error' in r && r.error.includes('/nope/csi-lsp'));
    const none = findServer({ ...base, isFile: () => false });
    assert.ok('error' in none && none.error.includes('csi.serverPath'));
  });
});

describe('slice', () => {
  // The example result of docs/protocol.md, "csi/slice", verbatim (the checkout path as $ROOT).
  const DOC: SliceResult = JSON.parse(
    fs.readFileSync(path.join(__dirname, '..', '..', 'test', 'fixtures', 'slice_protocol_example.json'), 'utf8'),
  );
  const SRC = 'file://$ROOT/fixtures/src/null_deref.c';
  const other = (r: SliceResult, over: Partial<SliceResult>): SliceResult => ({ ...structuredClone(r), ...over });

  test('params: crash point, a line, variables', () => {
    assert.deepEqual(sliceParams(null), {});
    assert.deepEqual(sliceParams(null, ['a']), { variables: ['a'] });
    assert.deepEqual(sliceParams({ uri: U, line: 4 }), { uri: U, line: 4 });
    assert.deepEqual(sliceParams({ uri: U, line: 4 }, ['acct', 'amount']), { uri: U, line: 4, variables: ['acct', 'amount'] });
    assert.deepEqual(parseVariables(''), []);
    assert.deepEqual(parseVariables('   '), []);
    assert.deepEqual(parseVariables(' acct, amount acct;f '), ['acct', 'amount', 'f']);
  });

  test('summary, message and tooltip of the documented example', () => {
    assert.equal(percent(0.333), 33);
    assert.equal(percent(0.5), 50);
    assert.equal(percent(0), 0);
    assert.equal(percent(Number.NaN), 0);
    // From the counts, ties to even, as the server's lens (Rust `{:.0}`) rounds.
    assert.equal(percent(0.091, 20, 22), 9);
    assert.equal(percent(0.125, 7, 8), 12);
    assert.equal(percent(0.375, 5, 8), 38);
    assert.equal(percent(0.333, 2, 3), 33);
    assert.equal(percent(0, 0, 0), 0);
    assert.equal(sliceSummary(DOC), 'slice: 4 lines (static 6, −33 %)', 'as the server lens says it');
    assert.equal(criterionPlace(DOC.criterion), 'charge() line 30');
    assert.equal(sliceMessage(DOC), 'CSI: slice from charge() line 30 for a, amount: 4 lines (static 6, −33 %)');
    assert.match(sliceTooltip(DOC), /^Slice from charge\(\) line 30 \(frame #0 of thread 1\) for a, amount\n/);
    assert.match(sliceTooltip(DOC), /static slice has 6: 33 % fewer/);
    const one = other(DOC, { restrictedLines: 1, unrestrictedLines: 1, reduction: 0 });
    assert.equal(sliceSummary(one), 'slice: 1 line (static 1, −0 %)');
    const anywhere = other(DOC, {
      criterion: { ...DOC.criterion, function: null, thread: 0, frame: null, variables: ['amount'] },
      unknownVariables: ['amount'],
    });
    assert.equal(criterionPlace(anywhere.criterion), 'line 30 of ./src/null_deref.c');
    assert.match(sliceTooltip(anywhere), /\(all calling contexts\) for no variable used there/);
    assert.equal(
      sliceMessage(anywhere),
      'CSI: slice from line 30 of ./src/null_deref.c for no variable used there: 4 lines (static 6, −33 %). Not used there: amount',
    );
    // What the server says for "every variable" (null) and for some unknown names.
    const every = other(DOC, { criterion: { ...DOC.criterion, variables: null } });
    assert.match(sliceMessage(every), /^CSI: slice from charge\(\) line 30 for every variable used there: /);
    const some = other(DOC, { criterion: { ...DOC.criterion, variables: ['f', 'nosuch'] }, unknownVariables: ['nosuch'] });
    assert.match(sliceMessage(some), / for f: 4 lines .*\. Not used there: nosuch$/);
    const noLine = { ...DOC.criterion, line: null };
    assert.equal(criterionPlace(noLine), 'charge()');
    assert.equal(sliceLines(other(DOC, { criterion: noLine }), SRC, true)?.criterion, null);
  });

  test('lines of a document: restricted, static-only, criterion', () => {
    assert.deepEqual(sliceLines(DOC, SRC, true), { restricted: [12, 15, 26, 29], staticOnly: [19, 27], criterion: 29 });
    assert.deepEqual(sliceLines(DOC, SRC, false), { restricted: [12, 15, 26, 29], staticOnly: [], criterion: 29 });
    assert.equal(sliceLines(DOC, 'file:///elsewhere.c', true), null);
    assert.equal(sliceLines(null, SRC, true), null);
    // URIs compare through the key (the editor's spelling vs the server's).
    assert.ok(sliceLines(DOC, SRC.toUpperCase(), true, (u) => u.toLowerCase()));
    assert.deepEqual(sliceUris(DOC, true), [SRC]);
  });

  test('several files, files outside the workspace', () => {
    const r = other(DOC, {
      restricted: [
        { uri: 'file:///w/b.c', file: 'b.c', lines: [3, 1] },
        { uri: null, file: '/usr/include/x.h', lines: [7, 8] },
        { uri: SRC, file: './src/null_deref.c', lines: [29] },
      ],
      unrestricted: [
        { uri: 'file:///w/b.c', file: 'b.c', lines: [1, 2, 3] },
        { uri: 'file:///w/c.c', file: 'c.c', lines: [9] },
        { uri: null, file: '/usr/include/x.h', lines: [7, 8, 9] },
        { uri: SRC, file: './src/null_deref.c', lines: [29] },
      ],
    });
    assert.deepEqual(sliceLines(r, 'file:///w/b.c', true), { restricted: [1, 3], staticOnly: [2], criterion: null });
    assert.deepEqual(sliceLines(r, 'file:///w/c.c', true), { restricted: [], staticOnly: [9], criterion: null });
    assert.equal(sliceLines(r, 'file:///w/c.c', false), null);
    assert.deepEqual(sliceUris(r, false), ['file:///w/b.c', SRC]);
    assert.deepEqual(sliceUris(r, true), ['file:///w/b.c', SRC, 'file:///w/c.c']);
    assert.deepEqual(unshown(r), { files: 1, lines: 2 });
    assert.match(sliceMessage(r), /\. 2 lines in 1 file outside the workspace$/);
  });

  test('the plan: slice ranges whatever the scope, none in a stale document', () => {
    const lines = sliceLines(DOC, SRC, true);
    const p = plan(ls({ uri: SRC }), 'off', null, 44, lines);
    assert.deepEqual(p.slice, [{ start: 12, end: 12 }, { start: 15, end: 15 }, { start: 26, end: 26 }, { start: 29, end: 29 }]);
    assert.deepEqual(p.sliceStatic, [{ start: 19, end: 19 }, { start: 27, end: 27 }]);
    assert.deepEqual(p.sliceCriterion, [{ start: 29, end: 29 }]);
    assert.deepEqual(p.must, [], 'scope off');
    // Past the end of the document: dropped.
    assert.deepEqual(plan(undefined, 'global', null, 20, lines).slice, [{ start: 12, end: 12 }, { start: 15, end: 15 }]);
    assert.deepEqual(plan(ls({ uri: SRC, stale: true }), 'global', null, 44, lines), emptyPlan());
  });

  test('state: set, lines through the uri key, cleared with the crash or another crash', () => {
    const s = new CsiState((u) => u.toLowerCase());
    let changes = 0;
    s.onChange(() => changes++);
    s.setStack(stack());
    s.setSlice(DOC);
    assert.equal(changes, 2);
    assert.equal(s.sliceText(), 'slice: 4 lines (static 6, −33 %)');
    assert.deepEqual(s.sliceLines(SRC.toUpperCase(), true)?.staticOnly, [19, 27]);
    s.setStack(stack()); // the same crash again (csi/stack refresh): kept
    assert.ok(s.slice);
    s.setStack({ ...stack(), title: 'other (/w/core2)' });
    assert.equal(s.slice, null, 'another crash');
    s.setSlice(DOC);
    s.clear();
    assert.equal(s.slice, null);
    assert.equal(s.sliceText(), null);
    s.setSlice(DOC);
    s.setSlice(null);
    assert.equal(s.sliceLines(SRC, true), null);
  });
});

describe('command arguments', () => {
  test('only arguments of the expected shape are used (menus pass tree items and Uris)', () => {
    assert.deepEqual(crashArg({ executable: 'a', core: 'c', extra: 1 }), { executable: 'a', core: 'c' });
    for (const bad of [undefined, null, 'a', [], { kind: 'frame', thread: 0, frame: { index: 0 } }, { executable: 'a' }, { executable: '', core: 'c' }, { executable: 1, core: 'c' }]) {
      assert.equal(crashArg(bad), undefined, JSON.stringify(bad));
    }
    assert.deepEqual(reportArg({ graph: 'g', report: 'r' }), { graph: 'g', report: 'r' });
    assert.equal(reportArg({ graph: 'g' }), undefined);
    assert.deepEqual(frameArg({ thread: 0, frame: 3 }), { thread: 0, frame: 3 });
    assert.deepEqual(frameArg({ thread: 0, frame: 3, inline: 1 }), { thread: 0, frame: 3, inline: 1 });
    // An inline index that is none (the debugger's null) selects the frame itself.
    assert.deepEqual(frameArg({ thread: 0, frame: 3, inline: null }), { thread: 0, frame: 3 });
    for (const bad of [{ thread: 0, frame: { index: 1 } }, { thread: -1, frame: 0 }, { thread: 0, frame: 1.5 }, { thread: '0', frame: 0 }, { thread: 0, frame: 3, inline: -1 }, { thread: 0, frame: 3, inline: '0' }]) {
      assert.equal(frameArg(bad), undefined, JSON.stringify(bad));
    }
    assert.deepEqual(lineArg({ uri: 'file:///a.c', line: 28 }), { uri: 'file:///a.c', line: 28 });
    assert.deepEqual(lineArg({ uri: 'file:///a.c', line: 0, variables: ['x'] }), { uri: 'file:///a.c', line: 0, variables: ['x'] });
    // A vscode.Uri (what the editor context menu passes) has no `uri`/`line`.
    for (const bad of [{ scheme: 'file', fsPath: '/a.c', path: '/a.c' }, { uri: 'u', line: -1 }, { uri: 'u', line: 2 ** 60 }, { uri: 'u', line: 1, variables: [1] }]) {
      assert.equal(lineArg(bad), undefined, JSON.stringify(bad));
    }
  });
});

describe('legend', () => {
  test('explains must, may and never with the contributed colours, and what the colours show', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const colours = new Map<string, any>(pkg.contributes.colors.map((c: any) => [c.id, c.defaults]));
    assert.deepEqual(LEGEND.map((e) => e.name), ['must', 'may', 'never']);
    for (const e of LEGEND) {
      assert.ok(colours.has(e.colour), e.colour);
      // The swatch is the colour's opaque dark-theme hue (the backgrounds are it with alpha).
      assert.equal(colours.get(e.colour).dark.slice(0, 7), e.swatch);
    }
    assert.match(legendMarkdown('global'), /whole program/);
    assert.match(legendMarkdown('local'), /selected frame/);
    assert.equal(legendText('off').split('\n').length, 5);
    assert.match(legendText('global'), /^must: .*\nmay: .*\nnever: ran in no consistent execution/);
  });
});
