// Drives code-server (started by bench/editor/run.sh) with Chromium through playwright-core:
// the crash named by .csi.toml shown at start, colours, hints, the CSI Stack view, a hover on
// a variable, the legend, and a csi debug session (Call Stack, Variables, Step Back, Console). Each check throws on failure (exit code 1); screenshots go to
// $CSI_SHOTS. Env: CSI_URL, CSI_SHOTS, CHROMIUM, CSI_NODE_MODULES (where playwright-core is).
import { createRequire } from 'module';
import * as fs from 'fs';
import * as path from 'path';

const require = createRequire(path.join(process.env.CSI_NODE_MODULES, 'x.js'));
const { chromium } = require('playwright-core');

const url = process.env.CSI_URL;
const shots = process.env.CSI_SHOTS;
fs.mkdirSync(shots, { recursive: true });
const results = [];

function check(name, ok, detail = '') {
  results.push({ name, ok, detail });
  console.log(`${ok ? 'ok  ' : 'FAIL'} - ${name}${detail ? ` (${detail})` : ''}`);
}

async function shot(page, name) {
  const file = path.join(shots, `${name}.png`);
  await page.screenshot({ path: file });
  console.log(`# screenshot ${file}`);
}

/** Background colours painted in the editor's line overlays (whole-line decorations). */
async function overlayColours(page) {
  return page.evaluate(() => {
    const out = {};
    for (const el of document.querySelectorAll('.monaco-editor .view-overlays div[class*="ced-"]')) {
      const bg = getComputedStyle(el).backgroundColor;
      if (bg && bg !== 'rgba(0, 0, 0, 0)') out[bg] = (out[bg] ?? 0) + 1;
    }
    return out;
  });
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
try {
  await page.goto(url);
  await page.waitForSelector('.monaco-workbench', { timeout: 60000 });

  // 1. The crash named by .csi.toml is shown without opening a C file: its source opens at
  //    the crash line, coloured.
  const tab = page.locator('.tabs-container .tab', { hasText: 'null_deref.c' });
  await tab.first().waitFor({ timeout: 60000 });
  check('the crash source opens at start (.csi.toml, no file opened by hand)', true);
  await page.waitForFunction(
    () => document.querySelectorAll('.monaco-editor .view-overlays div[class*="ced-"]').length > 5,
    null,
    { timeout: 30000 },
  );
  await page.waitForTimeout(1500);
  const colours = await overlayColours(page);
  check('must / may / never colours painted', Object.keys(colours).length >= 3, JSON.stringify(colours));
  await shot(page, '01-crash-at-start-colours');

  // 2. Inlay hints: the crash point.
  const text = (await page.locator('.monaco-editor .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
  check('inlay hint at the crash point', /SIGSEGV at 0x8/.test(text), text.match(/.*SIGSEGV.*/)?.[0] ?? 'none');
  const status = await page.locator('.statusbar').innerText();
  check('status bar: crash and frame', /null_deref SIGSEGV/.test(status) && /#0 charge/.test(status), status.replace(/\s+/g, ' ').slice(0, 200));
  check('status bar: the legend item', /must · may · never/.test(status));
  await shot(page, '02-hints-status');

  // 3. The legend: hover the status bar item.
  await page.locator('.statusbar-item', { hasText: 'must · may · never' }).first().hover();
  const legend = page.locator('.monaco-hover, .workbench-hover, .context-view').filter({ hasText: 'CSI line colours' });
  await legend.first().waitFor({ timeout: 10000 }).catch(() => {});
  const legendText = (await legend.count()) ? await legend.first().innerText() : '';
  check('the legend explains must / may / never', /must/.test(legendText) && /never/.test(legendText), legendText.slice(0, 120).replace(/\s+/g, ' '));
  await shot(page, '03-legend-hover');
  await page.mouse.move(800, 400);

  // 4. The CSI Stack view.
  await page.locator('.activitybar .action-item a[aria-label^="CSI"]').first().click();
  const stack = page.locator('.pane', { hasText: 'CSI Stack' });
  await stack.locator('.monaco-list-row', { hasText: 'charge' }).first().waitFor({ timeout: 20000 });
  const rows = await stack.locator('.monaco-list-row').allInnerTexts();
  check('CSI Stack lists the frames', rows.some((r) => r.includes('#0 charge')) && rows.some((r) => r.includes('#1 main')), rows.slice(0, 6).join(' | '));
  await shot(page, '04-stack-view');

  // 5. Hover on the variable `a` of the crash line (31: `  a->balance -= f;`).
  await page.locator('.monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+G');
  await page.keyboard.type('31:3');
  await page.keyboard.press('Enter');
  await page.waitForTimeout(300);
  await page.keyboard.press('Control+K');
  await page.keyboard.press('Control+I');
  const hover = page.locator('.monaco-hover', { hasText: 'at the crash' });
  await hover.first().waitFor({ timeout: 10000 }).catch(() => {});
  const hoverText = (await hover.count()) ? await hover.first().innerText() : '';
  check('hover on `a` shows that variable', /struct account \* a = 0x0/.test(hoverText) && !/__PT_/.test(hoverText), hoverText.slice(0, 160).replace(/\s+/g, ' '));
  await shot(page, '05-hover-variable');
  await page.keyboard.press('Escape');

  // 6. Path stepping: Step Path Back (ctrl+alt+[) moves the current step to line 29.
  await page.keyboard.press('Control+Alt+BracketLeft');
  await page.waitForFunction(() => /step 3\/4/.test(document.querySelector('.statusbar')?.innerText ?? ''), null, { timeout: 10000 }).catch(() => {});
  const stepped = await page.locator('.statusbar').innerText();
  check('Step Path Back moves to step 3/4', /step 3\/4/.test(stepped), stepped.replace(/\s+/g, ' ').slice(0, 80));
  await shot(page, '06-step-back');

  // 7. Select frame #1 in the CSI Stack, then the view's Open Crash button: it asks for a
  //    crash (quick pick / dialog) instead of sending the selected tree item to the server.
  await stack.locator('.monaco-list-row', { hasText: '#1 main' }).first().click();
  await page.waitForFunction(() => /#1 main/.test(document.querySelector('.statusbar')?.innerText ?? ''), null, { timeout: 10000 }).catch(() => {});
  const selected = await page.locator('.statusbar').innerText();
  check('clicking frame #1 selects it', /#1 main/.test(selected), selected.replace(/\s+/g, ' ').slice(0, 80));
  await shot(page, '07-frame-1-selected');
  await stack.hover();
  await page.locator('.pane-header', { hasText: 'CSI Stack' }).locator('a.action-label[aria-label^="Open Crash"]').first().click();
  const asked = await page
    .locator('.quick-input-widget')
    .first()
    .waitFor({ state: 'visible', timeout: 10000 })
    .then(() => true)
    .catch(() => false);
  const toasts = (await page.locator('.notifications-toasts').allInnerTexts()).join(' ');
  check('Open Crash with a frame selected asks for the crash', asked && !/needs \{"executable"/.test(toasts), toasts.slice(0, 120));
  await shot(page, '08-open-crash-asks');
  await page.keyboard.press('Escape');

  // 9. A debug session of the csi type (.vscode/launch.json, F5): the standard Call Stack
  //    stops at the crash, the Variables tree expands `list` three levels deep.
  // (F5 itself reloads the page in a browser: the command palette starts the session.)
  await page.locator('.monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+Shift+P');
  await page.keyboard.type('Debug: Start Debugging');
  await page.waitForTimeout(500);
  await page.keyboard.press('Enter');
  // It may ask which configuration: ours.
  const pick = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'CSI: null_deref core' });
  if (await pick.first().waitFor({ timeout: 3000 }).then(() => true).catch(() => false)) await pick.first().click();
  const callStack = page.locator('.debug-call-stack');
  await callStack
    .locator('.monaco-list-row', { hasText: 'charge' })
    .first()
    .waitFor({ timeout: 30000 })
    .catch(async (e) => {
      await shot(page, '09-debug-did-not-start');
      throw e;
    });
  const frames = await callStack.locator('.monaco-list-row').allInnerTexts();
  check('the debugger stops at the crash: charge, main in the Call Stack', frames.some((r) => r.includes('charge')) && frames.some((r) => r.includes('main')), frames.slice(0, 4).join(' | ').replace(/\s+/g, ' '));
  const vars = page.locator('.debug-variables');
  const row = (text) => vars.locator('.monaco-list-row', { hasText: text }).first();
  await row('Arguments').waitFor({ timeout: 15000 });
  // Arguments is expanded by default; open list, then next, then next.
  if (!(await row('list').isVisible().catch(() => false))) await row('Arguments').click();
  await row('list').click();
  await row('owner').waitFor({ timeout: 10000 });
  await vars.locator('.monaco-list-row', { hasText: /^next/ }).first().click();
  await page.waitForTimeout(600);
  await vars.locator('.monaco-list-row', { hasText: /^next/ }).nth(1).click();
  await page.waitForTimeout(600);
  const varRows = (await vars.locator('.monaco-list-row').allInnerTexts()).map((r) => r.replace(/\s+/g, ' '));
  const owners = varRows.filter((r) => /owner/.test(r)).join(' | ');
  check('Variables: list → next → next expanded (alice, bob, carol)', /alice/.test(owners) && /bob/.test(owners) && /carol/.test(owners), owners.slice(0, 200));
  check('Variables: the instrumentation is not among Locals', !varRows.some((r) => /__PT_|__CC_/.test(r)));
  await shot(page, '09-debug-variables');

  // 10. Step Back in the debug toolbar: the Call Stack shows a recorded path step.
  await page.locator('.debug-toolbar .action-label[aria-label^="Step Back"]').first().click();
  await callStack.locator('.monaco-list-row', { hasText: '[step' }).first().waitFor({ timeout: 15000 }).catch(() => {});
  const stepped2 = (await callStack.locator('.monaco-list-row').allInnerTexts()).join(' | ').replace(/\s+/g, ' ');
  check('Step Back shows a recorded path step as the frame position', /\[step \d+ of \d+\]/.test(stepped2), stepped2.slice(0, 160));
  await shot(page, '10-debug-step-back');

  // 11. The Debug Console evaluates C as gdb prints it.
  await page.keyboard.press('Control+Shift+Y');
  const input = page.locator('.repl-input-wrapper').first();
  await input.waitFor({ timeout: 10000 });
  await input.click();
  await page.waitForTimeout(300);
  await page.keyboard.type('list->next->owner');
  await page.keyboard.press('Enter');
  await page.locator('.repl .monaco-list-row', { hasText: 'bob' }).first().waitFor({ timeout: 10000 }).catch(() => {});
  const replText = (await page.locator('.repl').first().innerText()).replace(/\s+/g, ' ');
  check('Debug Console: list->next->owner is "bob"', /0x[0-9a-f]+ "bob"/.test(replText), replText.slice(-120));
  await shot(page, '11-debug-console');
} finally {
  await browser.close();
}
const failed = results.filter((r) => !r.ok);
console.log(`${results.length - failed.length} passed, ${failed.length} failed; screenshots in ${shots}`);
process.exit(failed.length ? 1 : 0);
