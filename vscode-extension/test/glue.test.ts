// The glue (src/extension.ts) against a stub `vscode` API and a stub language client that
// replays answers recorded from the real server (test/fixtures/null_deref.json, written by
// the protocol test with CSI_RECORD=1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';

import { Commands, activate, deactivate } from '../src/extension';
import { LanguageClient } from './stub/languageclient';
import * as vscode from './stub/vscode';

const ROOT = '/repo';
const rec = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', 'test', 'fixtures', 'null_deref.json'), 'utf8').split('$ROOT').join(ROOT),
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

async function start() {
  // The previous test's extension goes away first (its listeners are on the shared stub).
  await deactivate();
  for (const d of lastCtx?.subscriptions ?? []) d.dispose();
  vscode.recorded.reset();
  LanguageClient.instances = [];
  LanguageClient.answers = new Map<string, any>([
    ['csi/openCrash', rec.stack],
    ['csi/stack', rec.stack],
    ['csi/pathTrace', (p: any) => (p.frame === 1 ? rec.pathTrace1 : rec.pathTrace0)],
    ['csi/selectFrame', (p: any) => (p.frame === 1 ? rec.pathTrace1 : rec.pathTrace0)],
    ['csi/stepPath', rec.stepBack2],
    ['csi/query', (p: any) => ({ kind: p.kind, answer: p.kind === 'mayRun' && p.line === 29 ? 'impossible' : 'possible' })],
    ['workspace/executeCommand', null],
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
  assert.deepEqual([...vscode.recorded.treeProviders.keys()], ['csiStack', 'csiOverview']);
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

  // Clear.
  await vscode.commands.executeCommand(Commands.clear);
  assert.deepEqual(client.requests.at(-1), { method: 'workspace/executeCommand', params: { command: 'csi.clear', arguments: [] } });
  assert.equal(controller.state.isOpen, false);
  assert.deepEqual(painted(editor, bg('csi.mustBackground')), []);
  assert.deepEqual(await tree.getChildren(), []);
  assert.equal(vscode.recorded.statusItems[0].text, '$(debug-alt) CSI: no crash');
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
