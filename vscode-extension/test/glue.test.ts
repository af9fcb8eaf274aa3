// The glue (src/extension.ts) against a stub `vscode` API and a stub language client that
// replays answers recorded from the real server (test/fixtures/null_deref.json, written by
// the protocol test with CSI_RECORD=1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';

import { BUCKET_CONTEXT, Commands, activate, deactivate } from '../src/extension';
import { LanguageClient } from './stub/languageclient';
import * as vscode from './stub/vscode';

const ROOT = '/repo';
const rec = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', 'test', 'fixtures', 'null_deref.json'), 'utf8').split('$ROOT').join(ROOT),
);
// csi/slice: the example result of docs/protocol.md (test/fixtures/slice_protocol_example.json).
const SLICE = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', 'test', 'fixtures', 'slice_protocol_example.json'), 'utf8').split('$ROOT').join(ROOT),
);
const SRC = `${ROOT}/fixtures/src/null_deref.c`;
const SRC_URI = `file://${SRC}`;
const TEXT = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'fixtures', 'src', 'null_deref.c'), 'utf8');

/** Lines a decoration type covers in an editor, as [start, end] pairs. */
function painted(e: vscode.TextEditor, optionsMatch: (o: any) => boolean): number[][] {
  const t = vscode.recorded.decorationTypes.filter((d) => !d.disposed && optionsMatch(d.options));
  assert.equal(t.length, 1, 'one live decoration type');
  return (e.decorations.get(t[0].key) ?? []).map((r) => [r.start.line, r.end.line]);
}
const bg = (id: string) => (o: any) => o.backgroundColor?.id === id;

let lastCtx: any;

async function start(initializeResult: any = { capabilities: {} }) {
  // The previous test's extension goes away first (its listeners are on the shared stub).
  await deactivate();
  for (const d of lastCtx?.subscriptions ?? []) d.dispose();
  vscode.recorded.reset();
  LanguageClient.instances = [];
  LanguageClient.initializeResult = initializeResult;
  LanguageClient.answers = new Map<string, any>([
    ['csi/openCrash', rec.stack],
    ['csi/stack', rec.stack],
    // (as the server, it answers for the inlined call asked for)
    ['csi/pathTrace', (p: any) => ({ ...(p.frame === 1 ? rec.pathTrace1 : rec.pathTrace0), ...(p.inline === undefined ? {} : { inline: p.inline }) })],
    ['csi/selectFrame', (p: any) => (p.frame === 1 ? rec.pathTrace1 : rec.pathTrace0)],
    ['csi/stepPath', rec.stepBack2],
    ['csi/query', (p: any) => ({ kind: p.kind, answer: p.kind === 'mayRun' && p.line === 29 ? 'impossible' : 'possible' })],
    ['workspace/executeCommand', null],
    ['csi/slice', (p: any) => (p.clear ? null : structuredClone(SLICE))],
    ['csi/functionSpans', (p: any) => (p.uri === SRC_URI ? structuredClone(rec.functionSpans) : { uri: p.uri, functions: [] })],
  ]);
  vscode.recorded.config.set('csi.serverPath', process.execPath); // any existing file
  vscode.recorded.files.set(SRC, TEXT);
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ROOT), name: 'repo', index: 0 }];
  const ctx = vscode.extensionContext();
  lastCtx = ctx;
  const controller = await activate(ctx as any);
  const client = LanguageClient.instances[0];
  return { ctx, controller, client };
}

test('activation starts the client with lineStates and registers commands, views, status', async () => {
  const { ctx, client } = await start();
  assert.ok(client.started);
  assert.equal(client.serverOptions.command, process.execPath);
  assert.deepEqual(client.clientOptions.initializationOptions, { lineStates: true, statusHints: false });
  assert.deepEqual(
    client.clientOptions.documentSelector.map((d: any) => d.language),
    ['c', 'cpp'],
  );
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const contributed: string[] = pkg.contributes.commands.map((c: any) => c.command);
  for (const id of contributed) assert.ok(vscode.recorded.commands.has(id), `registered ${id}`);
  for (const id of Object.values(Commands)) assert.ok(vscode.recorded.commands.has(id), `registered ${id}`);
  // The server's own commands (csi.openCrash, ...) are left to vscode-languageclient.
  assert.ok(![...vscode.recorded.commands.keys()].some((c) => /^csi\.[a-zA-Z]+$/.test(c)));
  assert.deepEqual([...vscode.recorded.treeProviders.keys()], ['csiStack', 'csiOverview', 'csiCrashes']);
  for (const v of pkg.contributes.views.csi) assert.ok(vscode.recorded.treeProviders.has(v.id));
  assert.equal(vscode.recorded.statusItems[0].text, '$(debug-alt) CSI: no crash');
  assert.ok(ctx.subscriptions.length > 10);
  // Every colour the decorations use is contributed (so themes can change it).
  const colours = new Set(pkg.contributes.colors.map((c: any) => c.id));
  for (const t of vscode.recorded.decorationTypes) {
    for (const v of Object.values(t.options)) if (v instanceof vscode.ThemeColor) assert.ok(colours.has(v.id), v.id);
  }
});

test('open crash → stack, trace, editor revealed, recorded csi/lineStates painted', async () => {
  const { ctx, controller, client } = await start();
  const crash = { executable: `${ROOT}/x/null_deref`, core: `${ROOT}/x/core` };
  await vscode.commands.executeCommand(Commands.openCrash, crash);
  assert.deepEqual(client.requests.slice(0, 2), [
    { method: 'csi/openCrash', params: crash },
    { method: 'csi/pathTrace', params: {} },
  ]);
  assert.deepEqual(ctx.globalState.get('csi.recentCrashes'), [crash]);
  const editor = vscode.window.activeTextEditor!;
  assert.equal(editor.document.uri.toString(), SRC_URI);
  assert.equal(editor.selection.active.line, 30, 'the crash line');
  assert.equal(vscode.recorded.statusItems[0].text, '$(debug-alt) CSI: null_deref SIGSEGV · #0 charge · step 4/4');

  client.deliver('csi/lineStates', rec.lineStates);
  assert.deepEqual(painted(editor, bg('csi.neverBackground')), [[19, 19], [29, 29], [41, 42]]);
  assert.deepEqual(painted(editor, bg('csi.mayBackground')), [[8, 11], [17, 18], [20, 20], [31, 31]]);
  assert.deepEqual(painted(editor, bg('csi.mustBackground')).flat().length > 0, true);
  assert.deepEqual(painted(editor, bg('csi.currentStepBackground')), [[30, 30]]);
  const must = vscode.recorded.decorationTypes.find((d) => d.options.backgroundColor?.id === 'csi.mustBackground')!;
  assert.equal(must.options.isWholeLine, true);
  assert.equal(must.options.overviewRulerColor.id, 'csi.mustRuler');

  // Local colours: the selected frame's own answer.
  await vscode.commands.executeCommand(Commands.toggleScope);
  assert.deepEqual(painted(editor, bg('csi.mustBackground')), [[26, 28], [30, 30]]);
  assert.deepEqual(painted(editor, bg('csi.neverBackground')), [[29, 29]]);
  await vscode.commands.executeCommand(Commands.toggleScope); // off
  assert.deepEqual(painted(editor, bg('csi.mustBackground')), []);
  await vscode.commands.executeCommand(Commands.toggleScope); // global again
  assert.equal(painted(editor, bg('csi.neverBackground')).length, 3);

  // Never as faded text instead of red.
  vscode.workspace._set('csi.decorations.neverStyle', 'faded');
  const faded = vscode.recorded.decorationTypes.find((d) => !d.disposed && d.options.opacity)!;
  assert.deepEqual((editor.decorations.get(faded.key) ?? []).map((r) => r.start.line), [19, 29, 41]);
});

test('stack view: a call inlined into a frame opens on its own path trace; its step selects it', async () => {
  const { controller, client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  const tree = vscode.recorded.treeProviders.get('csiStack');
  const main = controller.state.stack!.threads[0].frames.find((f: any) => f.function === 'main')!;
  main.inlined = [{ ...main, function: 'cmd_add', inlined: [], pathSteps: 11 }];
  const [thread] = await tree.getChildren();
  const inlined = (await tree.getChildren(thread)).find((n: any) => n.kind === 'inlined');
  assert.equal(tree.getTreeItem(inlined).label, '#1 cmd_add [inlined]');
  client.requests.length = 0;
  const steps = await tree.getChildren(inlined);
  assert.equal(steps.length, 11);
  assert.deepEqual(client.requests, [{ method: 'csi/pathTrace', params: { thread: 0, frame: 1, inline: 0 } }]);
  // Clicking a step selects the inlined call (not the frame), then steps there.
  const step = tree.getTreeItem(steps[0]);
  await vscode.commands.executeCommand(step.command.command, ...step.command.arguments);
  assert.deepEqual(client.requests[1], { method: 'csi/selectFrame', params: { thread: 0, frame: 1, inline: 0 } });
});

test('stack view, select frame, step back and forward, query, overview, clear', async () => {
  const { controller, client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  client.deliver('csi/lineStates', rec.lineStates);
  const tree = vscode.recorded.treeProviders.get('csiStack');
  const [thread] = await tree.getChildren();
  assert.match(tree.getTreeItem(thread).label, /^Thread 1/);
  const frames = await tree.getChildren(thread);
  const main = frames.find((n: any) => n.kind === 'frame' && n.frame.function === 'main');
  const item = tree.getTreeItem(main);
  assert.equal(item.label, '#1 main');
  // Expanding a frame asks for its path trace.
  const steps = await tree.getChildren(main);
  assert.equal(steps.length, 11);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/pathTrace', params: { thread: 0, frame: 1 } });

  // Clicking the frame runs its command: selects it and reveals its line.
  await vscode.commands.executeCommand(item.command.command, ...item.command.arguments);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/selectFrame', params: { thread: 0, frame: 1 } });
  assert.equal(vscode.window.activeTextEditor!.selection.active.line, 40);
  assert.equal(controller.state.selected?.frame, 1);
  client.deliver('csi/lineStates', rec.lineStates1);
  const editor = vscode.window.activeTextEditor!;
  assert.deepEqual(painted(editor, bg('csi.currentStepBackground')), [[40, 40]]);

  await vscode.commands.executeCommand(Commands.stepBack);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/stepPath', params: { delta: -1 } });
  // (the stub answers every step with the recorded "step 9/11, line 37")
  assert.equal(editor.selection.active.line, 37);
  assert.deepEqual(painted(editor, bg('csi.currentStepBackground')), [[37, 37]]);
  assert.match(vscode.recorded.statusItems[0].text, /#1 main · step 9\/11$/);
  const stepItems = (await tree.getChildren(main)).map((n: any) => tree.getTreeItem(n).label);
  assert.equal(stepItems[8], '▶ step 9/11');
  await vscode.commands.executeCommand(Commands.stepForward);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/stepPath', params: { delta: 1 } });

  // Clicking a path step of the selected frame steps there.
  const stepNode = (await tree.getChildren(main))[2];
  const s = tree.getTreeItem(stepNode);
  await vscode.commands.executeCommand(s.command.command, ...s.command.arguments);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/stepPath', params: { delta: 2 - 8 } });

  // Query on the cursor line.
  editor.selection = new vscode.Selection(29, 0, 29, 0);
  const msg = await vscode.commands.executeCommand(Commands.query);
  assert.deepEqual(client.requests.slice(-2).map((r) => r.params), [
    { kind: 'mayRun', uri: SRC_URI, line: 29 },
    { kind: 'mayNotRun', uri: SRC_URI, line: 29 },
  ]);
  assert.match(msg, /line 30 did not run before the crash/);
  assert.ok(vscode.recorded.messages.some((m) => m.kind === 'info' && m.text === msg));

  // Overview: files → functions with counts and a bar.
  const ov = vscode.recorded.treeProviders.get('csiOverview');
  const [file] = await ov.getChildren();
  const fileItem = ov.getTreeItem(file);
  assert.equal(fileItem.label, 'fixtures/src/null_deref.c');
  assert.match(fileItem.description, /must 15 · may 8 · never 4$/);
  const fns = (await ov.getChildren(file)).map((n: any) => ov.getTreeItem(n));
  assert.deepEqual(
    fns.map((f: any) => [f.label, f.description.replace(/^\S+ /, '')]),
    [
      ['find', '2/4/0'],
      ['fee', '3/3/1'],
      ['charge', '4/1/1'],
      ['main', '6/0/2'],
    ],
  );
  assert.deepEqual(fns[2].command.arguments, [SRC_URI, 25]);
  // The functions are the server's (csi/functionSpans), asked once per crash and file.
  assert.match(fns[2].tooltip, /^charge\(\) — lines 26–32\n/);
  const spanRequests = () => client.requests.filter((r) => r.method === 'csi/functionSpans');
  assert.deepEqual(spanRequests(), [{ method: 'csi/functionSpans', params: { uri: SRC_URI } }]);
  await ov.getChildren();
  assert.equal(spanRequests().length, 1, 'cached for the crash');

  // Clear.
  await vscode.commands.executeCommand(Commands.clear);
  assert.deepEqual(client.requests.at(-1), { method: 'workspace/executeCommand', params: { command: 'csi.clear', arguments: [] } });
  assert.equal(controller.state.isOpen, false);
  assert.deepEqual(painted(editor, bg('csi.mustBackground')), []);
  assert.deepEqual(await tree.getChildren(), []);
  assert.equal(vscode.recorded.statusItems[0].text, '$(debug-alt) CSI: no crash');
});

test('overview without csi/functionSpans (an older server): files with their counts, no functions, asked again later', async () => {
  const { client } = await start();
  LanguageClient.answers.delete('csi/functionSpans');
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  client.deliver('csi/lineStates', rec.lineStates);
  const ov = vscode.recorded.treeProviders.get('csiOverview');
  const [file] = await ov.getChildren();
  assert.match(ov.getTreeItem(file).description, /must 15 · may 8 · never 4$/);
  assert.deepEqual(await ov.getChildren(file), []);
  LanguageClient.answers.set('csi/functionSpans', rec.functionSpans);
  const [again] = await ov.getChildren();
  assert.deepEqual(
    (await ov.getChildren(again)).map((n: any) => ov.getTreeItem(n).label),
    ['find', 'fee', 'charge', 'main'],
  );
});

test('open crash with pickers: recent crashes first, browse for executable then core', async () => {
  const { ctx, client } = await start();
  vscode.recorded.openDialogs.push('/c/app', '/c/core');
  await vscode.commands.executeCommand(Commands.openCrash);
  assert.deepEqual(client.requests[0], { method: 'csi/openCrash', params: { executable: '/c/app', core: '/c/core' } });
  // Next time the recent crash is offered.
  let offered: string[] = [];
  vscode.recorded.quickPicks.push((items) => {
    offered = items.map((i: any) => i.label);
    return items[1];
  });
  await vscode.commands.executeCommand(Commands.openCrash);
  assert.equal(offered.length, 2);
  assert.match(offered[1], /app$/);
  assert.deepEqual(client.requests.filter((r) => r.method === 'csi/openCrash').length, 2);
  assert.equal(ctx.globalState.get('csi.recentCrashes').length, 1);
});

test('a code lens running the server command (middleware) and line states of another frame keep the model in step', async () => {
  const { controller, client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  const mw = client.clientOptions.middleware.executeCommand;
  await mw('csi.selectFrame', [{ thread: 0, frame: 1 }], async () => rec.pathTrace1);
  assert.equal(controller.state.selected?.frame, 1);
  assert.match(vscode.recorded.statusItems[0].text, /#1 main · step 11\/11/);
  await mw('csi.stepPath', [{ delta: -2 }], async () => rec.stepBack2);
  assert.match(vscode.recorded.statusItems[0].text, /step 9\/11/);
  // The server reports frame #0 selected (e.g. from another client action): the trace is re-fetched.
  client.deliver('csi/lineStates', rec.lineStates);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(client.requests.at(-1), { method: 'csi/pathTrace', params: {} });
  assert.equal(controller.state.selected?.frame, 0);
});

test('line states for a crash the server opened itself (.csi.toml) fetch the stack', async () => {
  const { controller, client } = await start();
  // A stale notification (an edited file) with no crash open asks nothing.
  client.deliver('csi/lineStates', { uri: SRC_URI, version: 2, must: [], may: [], never: [], partial: [], frame: null, stale: true });
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(client.requests, []);
  client.deliver('csi/lineStates', rec.lineStates);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(client.requests.map((r: { method: string }) => r.method), ['csi/stack', 'csi/pathTrace']);
  assert.equal(controller.state.isOpen, true);
});

test('errors from the server become messages, not exceptions', async () => {
  await start();
  LanguageClient.answers.delete('csi/openCrash');
  const r = await vscode.commands.executeCommand(Commands.openCrash, { executable: 'x', core: 'y' });
  assert.equal(r, undefined);
  assert.ok(vscode.recorded.messages.some((m) => m.kind === 'error' && m.text.includes('csi/openCrash')));
  // Stepping without a crash says so.
  await vscode.commands.executeCommand(Commands.stepBack);
  assert.ok(vscode.recorded.messages.some((m) => m.text.includes('no path trace')));
});

// Decoration types of the slice, told apart by their options.
const sliceDeco = (o: any) => o.borderColor?.id === 'csi.sliceBorder' && o.borderWidth === '0 0 0 2px';
const staticDeco = (o: any) => o.borderColor?.id === 'csi.sliceStaticBorder';
const criterionDeco = (o: any) => o.borderColor?.id === 'csi.sliceBorder' && o.borderWidth === '0 0 0 5px';
const sliceStatus = () => vscode.recorded.statusItems[1];

test('slice from the crash point: request, marks, status bar, message; clear slice', async () => {
  const { controller, client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  client.deliver('csi/lineStates', rec.lineStates);
  assert.equal(sliceStatus().visible, false);
  const editor = vscode.window.activeTextEditor!;
  editor.selection = new vscode.Selection(5, 0, 5, 0);

  const r = await vscode.commands.executeCommand(Commands.sliceCrash);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: {} });
  assert.equal(r.restrictedLines, 4);
  assert.equal(editor.selection.active.line, 29, 'the criterion revealed');
  assert.deepEqual(painted(editor, sliceDeco), [[12, 12], [15, 15], [26, 26], [29, 29]]);
  assert.deepEqual(painted(editor, staticDeco), [[19, 19], [27, 27]]);
  assert.deepEqual(painted(editor, criterionDeco), [[29, 29]]);
  // The line states stay as they were.
  assert.deepEqual(painted(editor, bg('csi.neverBackground')), [[19, 19], [29, 29], [41, 42]]);
  assert.equal(sliceStatus().text, '$(list-filter) slice: 4 lines (static 6, −33 %)');
  assert.equal(sliceStatus().visible, true);
  assert.equal(sliceStatus().command, Commands.sliceClear);
  assert.match(sliceStatus().tooltip, /^Slice from charge\(\) line 30 \(frame #0 of thread 1\) for a, amount/);
  assert.equal(vscode.recorded.context.get('csi.sliceShown'), true);
  assert.ok(vscode.recorded.messages.some((m) => m.kind === 'info' && m.text === 'CSI: slice from charge() line 30 for a, amount: 4 lines (static 6, −33 %)'));
  assert.equal(controller.state.slice?.criterion.function, 'charge');

  // The look: a themable border, a gutter icon, the ruler's left lane; static lines faint.
  const t = vscode.recorded.decorationTypes.find((d) => !d.disposed && sliceDeco(d.options))!;
  assert.equal(t.options.isWholeLine, true);
  assert.equal(t.options.backgroundColor.id, 'csi.sliceBackground');
  assert.equal(t.options.overviewRulerColor.id, 'csi.sliceBorder');
  assert.equal(t.options.overviewRulerLane, vscode.OverviewRulerLane.Left);
  assert.match(t.options.gutterIconPath.fsPath, /\/media\/slice\.svg$/);
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  assert.ok(pkg.contributes.menus.commandPalette.some((m: any) => m.command === Commands.sliceClear && m.when === 'csi.sliceShown'));
  const st = vscode.recorded.decorationTypes.find((d) => !d.disposed && staticDeco(d.options))!;
  assert.equal(st.options.overviewRulerColor, undefined, 'static-only lines stay out of the ruler');
  assert.equal(st.options.backgroundColor, undefined);

  // Line colours off: the slice stays.
  controller.scope = 'off';
  controller.render();
  assert.deepEqual(painted(editor, bg('csi.neverBackground')), []);
  assert.equal(painted(editor, sliceDeco).length, 4);
  controller.scope = 'global';

  // Settings: no static-only lines, no gutter icon, no ruler marks.
  vscode.workspace._set('csi.slice.showStatic', false);
  assert.deepEqual(painted(editor, staticDeco), []);
  assert.equal(painted(editor, sliceDeco).length, 4);
  vscode.workspace._set('csi.slice.gutterIcon', false);
  vscode.workspace._set('csi.slice.overviewRuler', false);
  const t2 = vscode.recorded.decorationTypes.find((d) => !d.disposed && sliceDeco(d.options))!;
  assert.equal(t2.options.gutterIconPath, undefined);
  assert.equal(t2.options.overviewRulerColor, undefined);
  assert.equal(painted(editor, sliceDeco).length, 4, 'repainted with the new types');
  vscode.workspace._set('csi.slice.showStatic', true);
  assert.deepEqual(painted(editor, staticDeco), [[19, 19], [27, 27]]);

  // An editor shown later gets the marks too.
  editor.decorations.clear();
  controller.decorate(editor as any);
  assert.equal(painted(editor, sliceDeco).length, 4);

  await vscode.commands.executeCommand(Commands.sliceClear);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: { clear: true } });
  assert.deepEqual(painted(editor, sliceDeco), []);
  assert.deepEqual(painted(editor, staticDeco), []);
  assert.deepEqual(painted(editor, criterionDeco), []);
  assert.equal(sliceStatus().visible, false);
  assert.equal(vscode.recorded.context.get('csi.sliceShown'), false);
  assert.equal(painted(editor, bg('csi.neverBackground')).length, 3, 'line states untouched');
});

test('slice from this line: variables from the input box; empty = all; Escape cancels; unknown names warn', async () => {
  const { client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  const editor = vscode.window.activeTextEditor!;
  editor.selection = new vscode.Selection(30, 4, 30, 4);

  vscode.recorded.inputBoxes.push('f, a');
  await vscode.commands.executeCommand(Commands.sliceLine);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: { uri: SRC_URI, line: 30, variables: ['f', 'a'] } });
  assert.match(vscode.recorded.inputBoxOptions[0].title, /line 31/);
  assert.equal(editor.selection.active.line, 30, 'the cursor stays');
  assert.equal(painted(editor, sliceDeco).length, 4);

  vscode.recorded.inputBoxes.push('');
  await vscode.commands.executeCommand(Commands.sliceLine);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: { uri: SRC_URI, line: 30 } });

  const n = client.requests.length;
  vscode.recorded.inputBoxes.push(undefined);
  assert.equal(await vscode.commands.executeCommand(Commands.sliceLine), undefined);
  assert.equal(client.requests.length, n, 'Escape: nothing asked');
  assert.equal(painted(editor, sliceDeco).length, 4, 'the old slice stays');

  vscode.recorded.config.set('csi.slice.askVariables', false);
  const asked = vscode.recorded.inputBoxOptions.length;
  await vscode.commands.executeCommand(Commands.sliceLine);
  assert.equal(vscode.recorded.inputBoxOptions.length, asked, 'no input box');
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: { uri: SRC_URI, line: 30 } });

  // Arguments (from another extension or a keybinding) skip the input box.
  await vscode.commands.executeCommand(Commands.sliceLine, { uri: SRC_URI, line: 26, variables: ['who'] });
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: { uri: SRC_URI, line: 26, variables: ['who'] } });

  LanguageClient.answers.set('csi/slice', () => ({ ...structuredClone(SLICE), unknownVariables: ['amount'] }));
  await vscode.commands.executeCommand(Commands.sliceLine, { uri: SRC_URI, line: 30, variables: ['a', 'amount'] });
  assert.ok(vscode.recorded.messages.some((m) => m.kind === 'warning' && /Not used there: amount$/.test(m.text)));
});

test('the slice goes with CSI: Clear, another crash, the server lens; not shown on edited files', async () => {
  const { controller, client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  client.deliver('csi/lineStates', rec.lineStates);
  const editor = vscode.window.activeTextEditor!;

  await vscode.commands.executeCommand(Commands.sliceCrash);
  assert.equal(painted(editor, sliceDeco).length, 4);
  await vscode.commands.executeCommand(Commands.clear);
  assert.equal(controller.state.slice, null);
  assert.deepEqual(painted(editor, sliceDeco), []);
  assert.equal(sliceStatus().visible, false);

  // Opening a crash (the same one again, too) drops the slice: the server forgot it.
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  await vscode.commands.executeCommand(Commands.sliceCrash);
  assert.equal(painted(editor, sliceDeco).length, 4);
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  assert.equal(controller.state.slice, null);
  assert.deepEqual(painted(editor, sliceDeco), []);

  // The server's lens above the criterion runs csi.slice {"clear": true} (through the middleware).
  const mw = client.clientOptions.middleware.executeCommand;
  await mw('csi.slice', [{}], async () => structuredClone(SLICE));
  assert.equal(painted(editor, sliceDeco).length, 4, 'a csi.slice run elsewhere shows too');
  assert.equal(sliceStatus().visible, true);
  await mw('csi.slice', [{ clear: true }], async () => null);
  assert.deepEqual(painted(editor, sliceDeco), []);
  assert.equal(sliceStatus().visible, false);

  // An edited document (stale line states) loses the marks; the slice comes back with the text.
  await vscode.commands.executeCommand(Commands.sliceCrash);
  client.deliver('csi/lineStates', { uri: SRC_URI, version: 2, must: [], may: [], never: [], partial: [], frame: null, stale: true });
  assert.deepEqual(painted(editor, sliceDeco), []);
  assert.equal(sliceStatus().visible, true, 'the slice is still there');
  client.deliver('csi/lineStates', rec.lineStates);
  assert.equal(painted(editor, sliceDeco).length, 4);

  // A slice while the server has no crash: its error is a message.
  await vscode.commands.executeCommand(Commands.clear);
  LanguageClient.answers.set('csi/slice', () => {
    throw new Error('no crash is open: run csi.openCrash (or set executable/core in .csi.toml)');
  });
  assert.equal(await vscode.commands.executeCommand(Commands.sliceCrash), undefined);
  assert.ok(vscode.recorded.messages.some((m) => m.kind === 'error' && m.text.includes('no crash is open')));
  // Clear Slice with no crash open does not bother the server.
  const n = client.requests.length;
  await vscode.commands.executeCommand(Commands.sliceClear);
  assert.equal(client.requests.length, n);
});

test('the slice csi-lsp answers on the fixture crash (recorded): marks, status, message', async () => {
  const { client } = await start();
  LanguageClient.answers.set('csi/slice', (p: any) => (p.clear ? null : p.variables ? rec.sliceLine : rec.slice));
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  client.deliver('csi/lineStates', rec.lineStates);
  const editor = vscode.window.activeTextEditor!;

  await vscode.commands.executeCommand(Commands.sliceCrash);
  assert.deepEqual(painted(editor, sliceDeco), [[7, 9], [11, 11], [15, 18], [20, 20], [26, 28], [30, 31], [35, 40]]);
  assert.deepEqual(painted(editor, staticDeco), [[19, 19], [29, 29]], 'case 2 and puts("unusual fee"): never ran');
  assert.deepEqual(painted(editor, criterionDeco), [[30, 30]]);
  assert.equal(editor.selection.active.line, 30);
  assert.equal(sliceStatus().text, '$(list-filter) slice: 20 lines (static 22, −9 %)');
  assert.ok(
    vscode.recorded.messages.some(
      (m) => m.kind === 'info' && m.text === 'CSI: slice from charge() line 31 for every variable used there: 20 lines (static 22, −9 %)',
    ),
  );

  vscode.recorded.inputBoxes.push('f nosuch');
  await vscode.commands.executeCommand(Commands.sliceLine);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/slice', params: { uri: SRC_URI, line: 30, variables: ['f', 'nosuch'] } });
  assert.ok(
    vscode.recorded.messages.some(
      (m) => m.kind === 'warning' && m.text === 'CSI: slice from charge() line 31 for f: 20 lines (static 22, −9 %). Not used there: nosuch',
    ),
  );
});

// ---- regressions of issue 20 (seen in a real VS Code) -----------------------------------------

test('every command the menus and key bindings use is contributed (goToStep, revealLine were not)', async () => {
  await start();
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const contributed = new Set(pkg.contributes.commands.map((c: any) => c.command));
  const used: string[] = [
    ...Object.values(pkg.contributes.menus as Record<string, Array<{ command: string }>>).flat().map((m) => m.command),
    ...pkg.contributes.keybindings.map((k: any) => k.command),
    ...Object.values(Commands),
  ];
  for (const id of used) assert.ok(contributed.has(id), `${id} is used but not contributed`);
  assert.ok(used.includes(Commands.goToStep) && used.includes(Commands.revealLine));
  // Links in the welcome texts name contributed commands too.
  for (const w of pkg.contributes.viewsWelcome) {
    for (const m of w.contents.matchAll(/\(command:([\w.]+)\)/g)) assert.ok(contributed.has(m[1]), m[1]);
  }
});

test('Open Crash from the CSI Stack title bar with a frame selected asks for the crash (the tree item is no crash)', async () => {
  const { client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: `${ROOT}/x/null_deref`, core: `${ROOT}/x/core` });
  const tree = vscode.recorded.treeProviders.get('csiStack');
  const [thread] = await tree.getChildren();
  const [frame] = await tree.getChildren(thread);
  // VS Code passes the selected tree element to a view/title command.
  client.requests.length = 0;
  vscode.recorded.quickPicks.push((items) => items[0]); // browse…
  vscode.recorded.openDialogs.push('/c/app', '/c/core');
  await vscode.commands.executeCommand(Commands.openCrash, frame);
  assert.deepEqual(client.requests[0], { method: 'csi/openCrash', params: { executable: '/c/app', core: '/c/core' } });
  assert.ok(!vscode.recorded.messages.some((m) => m.kind === 'error'), JSON.stringify(vscode.recorded.messages));
  // Select Frame and Open Report from a menu with a foreign argument ask too.
  client.requests.length = 0;
  vscode.recorded.quickPicks.push((items) => items[1]);
  await vscode.commands.executeCommand(Commands.selectFrame, frame);
  assert.deepEqual(client.requests[0], { method: 'csi/selectFrame', params: { thread: 0, frame: 1 } });
  client.requests.length = 0;
  await vscode.commands.executeCommand(Commands.openReport, frame); // the dialog is cancelled
  assert.deepEqual(client.requests, []);
});

test('Slice from This Line from the editor context menu slices from the cursor line and asks for variables', async () => {
  const { client } = await start();
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  const editor = vscode.window.activeTextEditor!;
  editor.selection = new vscode.Selection(28, 4, 28, 4);
  client.requests.length = 0;
  vscode.recorded.inputBoxes.push('f a');
  // The context menu passes the document's Uri.
  await vscode.commands.executeCommand(Commands.sliceLine, editor.document.uri);
  assert.equal(vscode.recorded.inputBoxOptions.length, 1, 'the variables were asked');
  assert.deepEqual(client.requests[0], { method: 'csi/slice', params: { uri: SRC_URI, line: 28, variables: ['f', 'a'] } });
  // A malformed argument is not a line either.
  client.requests.length = 0;
  vscode.recorded.inputBoxes.push('');
  await vscode.commands.executeCommand(Commands.sliceLine, { uri: SRC_URI, line: -3 });
  assert.deepEqual(client.requests[0], { method: 'csi/slice', params: { uri: SRC_URI, line: 28 } });
});

test('with .csi.toml the crash is shown at activation, before any C file is opened (crashAtStart)', async () => {
  const { controller, client } = await start({ capabilities: { experimental: { csi: { lineStates: true, version: 1, crashAtStart: true } } } });
  await controller.startup;
  assert.deepEqual(client.requests.map((r: { method: string }) => r.method), ['csi/stack', 'csi/pathTrace']);
  assert.equal(controller.state.isOpen, true);
  assert.equal(vscode.window.activeTextEditor?.document.uri.toString(), SRC_URI, 'the crash file is opened');
  assert.equal(vscode.window.activeTextEditor?.selection.active.line, 30, 'at the crash line');
  assert.match(vscode.recorded.statusItems[0].text, /null_deref SIGSEGV · #0 charge/);
  // Without a crash at start nothing is asked (no "no crash is open" warning from the server).
  const again = await start();
  await again.controller.startup;
  assert.deepEqual(again.client.requests, []);
  assert.equal(again.controller.state.isOpen, false);
});

test('the legend: a status bar item whose hover explains must / may / never; the legend command', async () => {
  const { controller } = await start();
  const legend = vscode.recorded.statusItems[2];
  assert.equal(legend.visible, false, 'no crash, no legend');
  await vscode.commands.executeCommand(Commands.openCrash, { executable: 'e', core: 'c' });
  assert.equal(legend.visible, true);
  assert.equal(legend.text, '$(symbol-color) must · may · never');
  assert.equal(legend.command, Commands.showLegend);
  assert.ok(legend.tooltip instanceof vscode.MarkdownString && legend.tooltip.supportHtml);
  const md: string = legend.tooltip.value;
  for (const w of ['**must**', '**may**', '**never**', 'the whole program', '#2ea043', '#d2a822', '#f85149']) assert.ok(md.includes(w), w);
  const text = await vscode.commands.executeCommand(Commands.showLegend);
  assert.match(text, /^must: ran before the crash in every execution/);
  assert.ok(vscode.recorded.messages.some((m) => m.text === 'CSI line colours'));
  await vscode.commands.executeCommand(Commands.toggleScope);
  assert.match(legend.tooltip.value, /selected frame's own activation/);
  await vscode.commands.executeCommand(Commands.toggleScope); // off: no colours to explain
  assert.equal(legend.visible, false);
  assert.equal(controller.scope, 'off');
});

test('the csi debug type: csi-dap as adapter, a crash asked for on F5, Debug Crash… starts a session', async () => {
  const { controller } = await start();
  vscode.recorded.config.set('csi.dapPath', process.execPath); // any existing file
  const factory = vscode.recorded.debugFactories.get('csi');
  assert.ok(factory, 'a debug adapter factory for the csi type');
  const exe = factory.createDebugAdapterDescriptor({ type: 'csi' });
  assert.ok(exe instanceof vscode.DebugAdapterExecutable);
  assert.equal(exe.command, process.execPath);
  vscode.recorded.config.set('csi.dapPath', '/nonexistent/csi-dap');
  assert.throws(() => factory.createDebugAdapterDescriptor({ type: 'csi' }), /csi\.dapPath: no csi-dap at \/nonexistent\/csi-dap/);
  // F5 without a launch.json: the crash is asked for (no recent crashes: two file dialogs).
  const provider = vscode.recorded.debugProviders.get('csi');
  vscode.recorded.openDialogs.push('/w/app', '/w/core');
  const cfg = await provider.resolveDebugConfiguration(undefined, {});
  assert.deepEqual(
    { type: cfg.type, request: cfg.request, program: cfg.program, coreFile: cfg.coreFile },
    { type: 'csi', request: 'launch', program: '/w/app', coreFile: '/w/core' },
  );
  // Escape in the dialog cancels the launch.
  assert.equal(await provider.resolveDebugConfiguration(undefined, {}), undefined);
  // A complete configuration is taken as it is.
  const full = { type: 'csi', request: 'launch', name: 'x', program: '/p', coreFile: '/c' };
  assert.deepEqual(await provider.resolveDebugConfiguration(undefined, full), full);
  // Debug Crash… with a crash argument starts a session on it.
  assert.equal(await vscode.commands.executeCommand(Commands.debugCrash, { executable: '/w/app', core: '/w/core' }), true);
  assert.deepEqual(vscode.recorded.debugStarts.map((c) => [c.type, c.program, c.coreFile]), [['csi', '/w/app', '/w/core']]);
  assert.equal(controller.state.isOpen, false, 'the language server is told when the debugger shows a frame');
});

test('the editor follows the frame and path step selected in the debugger (csiPosition → csi/openCrash, csi/selectFrame, csi/stepPath)', async () => {
  const { controller, client } = await start();
  const requests: any[] = [];
  const session = {
    type: 'csi',
    async customRequest(command: string, args: any) {
      requests.push([command, args]);
      if (args.frameId === 9) return { thread: 0, frame: 1, inline: 0, step: null, program: '/w/null_deref', core: '/w/core' };
      return args.frameId === 7
        ? { thread: 0, frame: 1, inline: null, step: null, program: '/w/null_deref', core: '/w/core' }
        : { thread: 0, frame: 0, step: 2, program: '/w/null_deref', core: '/w/core' };
    },
  };
  vscode.debug._selectStackItem({ session, threadId: 1, frameId: 7 });
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(requests, [['csiPosition', { frameId: 7 }]]);
  const sent = client.requests.map((r: any) => [r.method, r.params]);
  assert.deepEqual(sent[0], ['csi/openCrash', { executable: '/w/null_deref', core: '/w/core' }], 'the debugged crash is opened');
  assert.deepEqual(sent.at(-1), ['csi/selectFrame', { thread: 0, frame: 1 }]);
  assert.equal(controller.state.selected?.frame, 1);
  // A path step in frame 0: the crash is not reopened; the step is selected.
  client.requests.length = 0;
  vscode.debug._selectStackItem({ session, threadId: 1, frameId: 3 });
  await new Promise((r) => setTimeout(r, 50));
  const methods = client.requests.map((r: any) => r.method);
  assert.ok(!methods.includes('csi/openCrash'), `${methods}`);
  assert.deepEqual(methods.slice(0, 1), ['csi/selectFrame']);
  assert.ok(methods.includes('csi/stepPath'), `${methods}`);
  // A call inlined into frame 1: that call is selected, with its own lines and trace.
  client.requests.length = 0;
  vscode.debug._selectStackItem({ session, threadId: 1, frameId: 9 });
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(
    client.requests.map((r: any) => [r.method, r.params]),
    [['csi/selectFrame', { thread: 0, frame: 1, inline: 0 }]],
  );
  // Other debuggers' sessions are none of ours.
  client.requests.length = 0;
  vscode.debug._selectStackItem({ session: { type: 'cppdbg', customRequest: () => assert.fail('asked') }, threadId: 1, frameId: 1 });
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(client.requests, []);
});

test('CSI Crashes: buckets → crashes, a crash opens, Show Bucket Lines paints the bucket, the setting reaches the server', async () => {
  const { controller, client } = await start();
  const bucket = {
    program: `${ROOT}/bin/calc`,
    signature: 'SIGSEGV in charge | main',
    signal: 'SIGSEGV',
    frames: ['charge', 'main'],
    count: 2,
    firstTime: 10,
    lastTime: 20,
    firstTimeText: '1970-01-01 00:00:10 UTC',
    lastTimeText: '1970-01-01 00:00:20 UTC',
    representative: { core: '/c/0/core', executable: `${ROOT}/bin/calc`, time: 10, timeText: null, site: null, hash: 'a', signal: 'SIGSEGV' },
    sites: { './src/null_deref.c:31': 2 },
    linesAnalysed: true,
    hasPassing: true,
    passingRuns: 3,
  };
  const crash = (k: number) => ({
    core: `/c/${k}/core`,
    executable: `${ROOT}/bin/calc`,
    time: 10 * (k + 1),
    timeText: `t${k}`,
    site: './src/null_deref.c:31',
    hash: `h${k}`,
    signal: 'SIGSEGV',
  });
  const sus = (line: number, rank: number) => ({ line, rank, ochiai: [0.5, 0.707], failed: [2, 2], passed: [1, 2], onStack: rank === 1 ? 2 : 0 });
  LanguageClient.answers.set('csi/crashBuckets', { store: '/s.db', message: null, buckets: [bucket] });
  LanguageClient.answers.set('csi/bucketCrashes', { store: '/s.db', program: bucket.program, signature: bucket.signature, crashes: [crash(0), crash(1)] });
  LanguageClient.answers.set('csi/bucketLineStates', {
    store: '/s.db',
    program: bucket.program,
    signature: bucket.signature,
    count: 2,
    linesAnalysed: true,
    passingRuns: 3,
    notices: [],
    files: [
      {
        uri: SRC_URI, version: null, frame: null, file: SRC, keys: ['./src/null_deref.c'],
        must: [26, 27, 28, 30], may: [], never: [19, 29], partial: [],
        suspicious: [sus(30, 1), sus(26, 4)], failingOnly: [29], passingOnly: [],
      },
    ],
  });
  const tree = vscode.recorded.treeProviders.get('csiCrashes');
  const [b] = await tree.getChildren();
  const bi = tree.getTreeItem(b);
  assert.equal(bi.label, '2 × SIGSEGV in charge | main');
  assert.equal(bi.description, 'calc');
  assert.equal(bi.contextValue, 'csiBucket');
  assert.match(bi.tooltip, /first 1970-01-01 00:00:10 UTC\nlast  1970-01-01 00:00:20 UTC\ncrash sites: \.\/src\/null_deref\.c:31 ×2/);
  const crashes = await tree.getChildren(b);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/bucketCrashes', params: { program: bucket.program, signature: bucket.signature } });
  const ci = tree.getTreeItem(crashes[1]);
  assert.deepEqual([ci.label, ci.description], ['/c/1/core', 't1 · ./src/null_deref.c:31']);

  // Show Bucket Lines (the bucket item's inline command): the bucket's lines in the crash
  // colours, the suspicious lines marked with their hint and hover, the top one revealed.
  await vscode.commands.executeCommand(Commands.showBucketLines, b);
  assert.deepEqual(client.requests.at(-1), { method: 'csi/bucketLineStates', params: { program: bucket.program, signature: bucket.signature } });
  const editor = vscode.window.activeTextEditor!;
  assert.equal(editor.document.uri.toString(), SRC_URI);
  assert.equal(editor.selection.active.line, 30);
  assert.deepEqual(painted(editor, bg('csi.mustBackground')), [[26, 28], [30, 30]]);
  assert.deepEqual(painted(editor, bg('csi.neverBackground')), [[19, 19], [29, 29]]);
  assert.deepEqual(painted(editor, bg('csi.mayBackground')), []);
  const susType = vscode.recorded.decorationTypes.find((d) => !d.disposed && d.options.borderColor?.id === 'csi.suspicious')!;
  const marks: any[] = editor.decorations.get(susType.key) as any;
  assert.deepEqual(
    marks.map((m) => [m.range.start.line, m.renderOptions.after.contentText]),
    [
      [30, ' ◆ #1 Ochiai 0.5–0.707'],
      [26, ' ◆ #4 Ochiai 0.5–0.707'],
    ],
  );
  assert.match(marks[0].hoverMessage.value, /ran in 2 of the bucket's 2 crashes/);
  assert.match(marks[0].hoverMessage.value, /2 crashes were executing it/);
  assert.equal(vscode.recorded.context.get(BUCKET_CONTEXT), true);
  assert.ok(vscode.recorded.messages.some((m) => m.text.startsWith('CSI: bucket SIGSEGV in charge | main (2 crashes): 4 lines ran in every crash, 2 in none; 2 suspicious lines against 3 passing runs')));

  // Clicking a crash opens it with the extension's Open Crash: the bucket's lines go.
  await vscode.commands.executeCommand(ci.command.command, ...ci.command.arguments);
  assert.deepEqual(client.requests.find((r) => r.method === 'csi/openCrash')?.params, { executable: `${ROOT}/bin/calc`, core: '/c/1/core' });
  assert.equal(controller.bucket, null);
  assert.deepEqual(editor.decorations.get(susType.key), []);
  assert.equal(vscode.recorded.context.get(BUCKET_CONTEXT), false);

  // The setting goes to the server (also when emptied) and the view asks again.
  vscode.workspace._set('csi.crashStore', '/other.db');
  assert.deepEqual(client.notificationsSent.at(-1)?.params.settings.csi.crashStore, '/other.db');
  vscode.workspace._set('csi.crashStore', '');
  assert.deepEqual(client.notificationsSent.at(-1)?.params.settings.csi.crashStore, '');
  // A store error is one line in the view.
  LanguageClient.answers.set('csi/crashBuckets', () => {
    throw new Error('store /x.db: file is not a database');
  });
  const [m] = await tree.getChildren();
  assert.deepEqual([tree.getTreeItem(m).label, tree.getTreeItem(m).contextValue], ['store /x.db: file is not a database', 'csiCrashesMessage']);
});
