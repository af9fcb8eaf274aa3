// Builds the extension bundle (dist/extension.js), or with --tests the test files
// (out/test/*.test.js) where `vscode` and `vscode-languageclient/node` are the stubs in test/stub.
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'fs';

const args = new Set(process.argv.slice(2));
const production = args.has('--production');

if (args.has('--tests')) {
  rmSync('out', { recursive: true, force: true });
  const entryPoints = readdirSync('test')
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/${f}`);
  await esbuild.build({
    entryPoints,
    outdir: 'out/test',
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
    alias: {
      vscode: './test/stub/vscode.ts',
      'vscode-languageclient/node': './test/stub/languageclient.ts',
    },
  });
} else {
  await esbuild.build({
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
  });
}
