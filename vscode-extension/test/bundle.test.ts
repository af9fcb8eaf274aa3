// The packaged bundle (dist/extension.js, built by `npm run build` or vsce's prepublish)
// loads with only `vscode` outside it, and exports activate/deactivate.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import Module from 'module';

import * as vscode from './stub/vscode';

const bundle = path.resolve(__dirname, '..', '..', 'dist', 'extension.js');

test('dist/extension.js is self-contained', { skip: fs.existsSync(bundle) ? false : 'no dist/extension.js (npm run build)' }, () => {
  const m = Module as unknown as { _load: (req: string, ...rest: unknown[]) => unknown };
  const load = m._load;
  const asked: string[] = [];
  m._load = function (req: string, ...rest: unknown[]) {
    if (req === 'vscode') return vscode;
    if (!req.startsWith('node:') && !Module.builtinModules.includes(req) && req !== bundle) asked.push(req);
    return load.call(this, req, ...rest);
  };
  try {
    const ext = require(bundle);
    assert.equal(typeof ext.activate, 'function');
    assert.equal(typeof ext.deactivate, 'function');
    assert.deepEqual(asked, [], 'nothing but vscode and node built-ins is required');
  } finally {
    m._load = load;
  }
});
