-- The plugin against the real server: start, open the crash, signs and line highlights,
-- frames, selection, stepping, hover, lenses, query, clear.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq, wait = H.test, H.eq, H.wait

local csi = H.load_plugin()
local lines = require('csi.lines')

local bufnr

-- Expected, from docs/protocol.md (0-based lines of fixtures/src/null_deref.c).
local GLOBAL = {
  CsiMust = { 7, 12, 15, 16, 22, 26, 27, 28, 30, 35, 36, 37, 38, 39 },
  CsiMay = { 8, 9, 10, 11, 17, 18, 20, 31 },
  CsiNever = { 19, 29, 41, 42 },
  CsiPartial = { 40 },
}
local FRAME0 = { CsiMust = { 26, 27, 28, 30 }, CsiMay = { 31 }, CsiNever = { 29 }, CsiPartial = {} }
local FRAME1 = { CsiMust = { 35, 36, 37, 38, 39 }, CsiMay = {}, CsiNever = { 41, 42 }, CsiPartial = { 40 } }

local function by_state(map, base)
  local r = {}
  for _, n in ipairs({ 'CsiMust', 'CsiMay', 'CsiNever', 'CsiPartial' }) do
    r[n] = H.lines_with(map, n, base)
  end
  return r
end

test('commands are defined', function()
  for _, c in ipairs({ 'CsiOpenCrash', 'CsiFrames', 'CsiSelect', 'CsiStep', 'CsiQuery', 'CsiClear' }) do
    eq(vim.fn.exists(':' .. c), 2, ':' .. c)
  end
end)

test('the plugin starts csi-lsp for a C buffer', function()
  vim.cmd('edit ' .. vim.fn.fnameescape(H.src))
  bufnr = vim.api.nvim_get_current_buf()
  eq(vim.bo.filetype, 'c', 'filetype')
  local client = wait(function()
    local c = require('csi.lsp').client_of(bufnr)
    return c and c.initialized and c
  end, 'the csi client to attach and initialize', 10000)
  eq(client.config.root_dir, H.root, 'workspace root')
  eq(client.config.init_options.lineStates, true, 'lineStates asked for')
end)

test(':CsiOpenCrash opens the crash and jumps to frame #0', function()
  vim.cmd('CsiOpenCrash ' .. H.exe .. ' ' .. H.core)
  local st = wait(function()
    return csi.state.stack
  end, 'the stack', 15000)
  eq(st.signal.name, 'SIGSEGV', 'signal')
  eq(st.threads[1].frames[1]['function'], 'charge', 'frame #0')
  eq(vim.api.nvim_get_current_buf(), bufnr, 'buffer')
  eq(vim.api.nvim_win_get_cursor(0), { 31, 13 }, 'cursor on the crash line')
end)

test('signs show the global line states', function()
  wait(function()
    return next(H.signs(bufnr)) ~= nil
  end, 'signs')
  eq(by_state(H.signs(bufnr), 1), GLOBAL, 'signs by state (0-based lines)')
end)

test('extmark line highlights show frame #0', function()
  wait(function()
    return next(H.line_highlights(bufnr)) ~= nil
  end, 'extmarks')
  eq(by_state(H.line_highlights(bufnr)), FRAME0, 'line highlights by state')
  eq(lines.states[bufnr].frame.frame, 0, 'frame of the last csi/lineStates')
end)

test('hover on the crash line shows frame #0 and its locals', function()
  local h = H.hover(bufnr, 30)
  H.contains(h, '**frame #0** `charge`', 'hover')
  H.contains(h, 'int f = 5', 'hover')
  H.contains(h, 'struct account * a = 0x0', 'hover')
  H.contains(h, 'const char * who = ', 'hover')
  -- The program's locals before the instrumentation's state, which comes last.
  local a_at, trace_at, pt_at = h:find('struct account * a = 0x0', 1, true), h:find('CSI trace', 1, true), h:find('__PT_current_path', 1, true)
  H.truthy(a_at and trace_at and pt_at and a_at < trace_at and trace_at < pt_at, 'locals, then CSI trace: ' .. h)
end)

test('hover on a name shows that variable (K on `a`)', function()
  local h = H.hover(bufnr, 30, 2)
  eq(h, '`a` — local of **frame #0** `charge` (thread 1), at the crash\n```c\nstruct account * a = 0x0\n```\n', 'hover on a')
  -- vim.lsp.buf.hover() sends the cursor position: the same answer for the cursor on `a`.
  vim.api.nvim_win_set_cursor(0, { 31, 2 })
  local params = vim.lsp.util.make_position_params()
  eq(params.position, { line = 30, character = 2 }, 'cursor position')
end)

test(':CsiLegend explains must / may / never in their own highlights', function()
  eq(vim.fn.exists(':CsiLegend'), 2, ':CsiLegend')
  local legend = lines.legend()
  eq(#legend, 6, 'title, four states, scope')
  local names = {}
  for i = 2, 5 do
    table.insert(names, vim.trim(legend[i][2][1]))
    eq(legend[i][2][2], ({ 'CsiMust', 'CsiMay', 'CsiNever', 'CsiPartial' })[i - 1], 'highlight of ' .. names[#names])
    eq(legend[i][1][2], legend[i][2][2] .. 'Sign', 'sign highlight')
  end
  eq(names, { 'must', 'may', 'never', 'partial' }, 'states')
  H.contains(legend[4][3][1], 'did not run before the crash', 'never')
  H.contains(legend[6][1][1], "selected frame's own activation", 'scope')
  local out = vim.api.nvim_exec('CsiLegend', true)
  H.contains(out, ' must     ran before the crash in every execution', ':CsiLegend output')
  H.contains(out, 'never', ':CsiLegend output')
end)

test('code lenses arrive', function()
  local want = '25: ▶ frame #0 (thread 1) · must 4 · may 1 · never 1'
  wait(function()
    vim.lsp.codelens.refresh()
    return vim.tbl_contains(H.lens_titles(bufnr), want)
  end, 'the frame #0 lens', 8000)
  H.truthy(vim.tbl_contains(H.lens_titles(bufnr), '34: frame #1 (thread 1) · must 6 · may 0 · never 2'), 'main lens')
end)

test(':CsiFrames lists threads and frames in the quickfix list', function()
  vim.cmd('CsiFrames')
  wait(function()
    return vim.fn.getqflist({ title = 1 }).title:find('^CSI stack') ~= nil
  end, 'the CSI quickfix list')
  local qf = vim.fn.getqflist()
  H.contains(qf[1].text, 'thread 1', 'header')
  H.contains(qf[1].text, 'SIGSEGV', 'header')
  H.contains(qf[2].text, '#0 charge()', 'frame #0')
  H.contains(qf[2].text, '◀ selected', 'frame #0 selected')
  eq({ qf[2].lnum, vim.api.nvim_buf_get_name(qf[2].bufnr) }, { 31, H.src }, 'frame #0 location')
  H.contains(qf[3].text, '#1 main()', 'frame #1')
  eq(qf[3].lnum, 41, 'frame #1 line')
  eq(vim.bo.buftype, 'quickfix', 'the quickfix window is open and current')
end)

test('<CR> on frame #1 in the quickfix window selects it', function()
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('execute "normal \\<CR>"')
  wait(function()
    local s = lines.states[bufnr]
    return s and s.frame ~= vim.NIL and s.frame.frame == 1 and csi.state.path
  end, 'csi/lineStates and the path of frame #1')
  eq(csi.state.selected, { thread = 0, frame = 1 }, 'selection')
  eq(#csi.state.path.steps, 11, 'path steps of frame #1')
  eq(vim.api.nvim_get_current_buf(), bufnr, 'jumped to the source')
  eq(vim.api.nvim_win_get_cursor(0)[1], 41, 'cursor on the call line')
  -- The highlights moved from charge() to main() (frame #1's own answer).
  eq(by_state(H.line_highlights(bufnr)), FRAME1, 'frame #1 highlights')
  eq(by_state(H.signs(bufnr), 1), GLOBAL, 'signs (global) unchanged')
end)

test('hover and lenses follow the selection', function()
  local h = H.hover(bufnr, 40)
  H.contains(h, '**frame #1** `main`', 'hover on the call line')
  H.contains(h, 'int total = ', 'hover')
  wait(function()
    vim.lsp.codelens.refresh()
    return vim.tbl_contains(H.lens_titles(bufnr), '34: ◀ step back (11 path steps)')
  end, 'the step-back lens on main()', 8000)
end)

test('the frame lens runs in the plugin (select + jump)', function()
  csi.state.path = nil
  vim.cmd('CsiSelect 0')
  wait(function()
    return csi.state.path and lines.states[bufnr].frame.frame == 0
  end, 'frame #0 selected')
  wait(function()
    vim.lsp.codelens.refresh()
    return vim.tbl_contains(H.lens_titles(bufnr), '34: frame #1 (thread 1) · must 6 · may 0 · never 2')
  end, 'the frame #1 lens', 8000)
  -- Two lenses on main's line: vim.ui.select picks; take the frame one.
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    for i, it in ipairs(items) do
      local text = opts.format_item and opts.format_item(it) or vim.inspect(it)
      if text:find('frame #1', 1, true) then
        return on_choice(it, i)
      end
    end
    on_choice(nil)
  end
  vim.api.nvim_win_set_cursor(0, { 35, 0 })
  csi.state.path = nil
  vim.lsp.codelens.run()
  vim.ui.select = select
  wait(function()
    return csi.state.path and csi.state.selected.frame == 1 and lines.states[bufnr].frame.frame == 1
  end, 'frame #1 selected from its lens')
  eq(by_state(H.line_highlights(bufnr)), FRAME1, 'frame #1 highlights')
  eq(vim.api.nvim_win_get_cursor(0)[1], 41, 'jumped to the call line')
end)

test(':CsiStep prev / next move along the path and jump', function()
  vim.cmd('CsiStep prev')
  local r = wait(function()
    return csi.state.step
  end, 'stepPath')
  eq({ r.step, r.of, r.line }, { 9, 11, 39 }, 'step back from the last step')
  eq(vim.api.nvim_win_get_cursor(0)[1], 40, 'cursor on the step')
  csi.state.step = nil
  vim.cmd('CsiStep prev 2')
  r = wait(function()
    return csi.state.step
  end, 'stepPath')
  eq({ r.step, r.line }, { 7, 38 }, 'two steps back')
  eq(vim.api.nvim_win_get_cursor(0)[1], 39, 'cursor on the step')
  csi.state.step = nil
  vim.cmd('CsiStep next')
  r = wait(function()
    return csi.state.step
  end, 'stepPath')
  eq({ r.step, r.line }, { 8, 37 }, 'one step forward (the loop: 38, 39, 38)')
end)

test(':CsiSelect 0 goes back to frame #0', function()
  csi.state.path = nil
  vim.cmd('CsiSelect 0')
  -- The notification and the response come in either order: wait for both.
  wait(function()
    local s = lines.states[bufnr]
    return s and s.frame ~= vim.NIL and s.frame.frame == 0 and csi.state.path
  end, 'csi/lineStates and the path of frame #0')
  eq(by_state(H.line_highlights(bufnr)), FRAME0, 'frame #0 highlights again')
  eq(vim.api.nvim_win_get_cursor(0)[1], 31, 'cursor on the crash line')
end)

test(':CsiQuery answers for the cursor line', function()
  vim.api.nvim_win_set_cursor(0, { 30, 0 })
  vim.cmd('CsiQuery')
  local q = wait(function()
    return csi.state.query
  end, 'query')
  eq(q.result.answer, 'impossible', 'line 30 (never ran)')
  H.contains(H.messages[#H.messages], 'line 30 may have run before the crash: impossible', 'echoed')
  csi.state.query = nil
  vim.api.nvim_win_set_cursor(0, { 18, 0 })
  vim.cmd('CsiQuery mayRunBefore 41')
  q = wait(function()
    return csi.state.query
  end, 'query')
  eq(q.result.answer, 'possible', 'line 18 before line 41')
end)

test('editing the file drops its signs and highlights (stale line numbers)', function()
  H.truthy(next(H.signs(bufnr)), 'signs before the edit')
  vim.api.nvim_buf_set_lines(bufnr, 0, 0, false, { '// a new first line' })
  wait(function()
    return lines.states[bufnr] and lines.states[bufnr].stale == true
  end, 'a stale csi/lineStates')
  eq(H.signs(bufnr), {}, 'signs')
  eq(H.line_highlights(bufnr), {}, 'line highlights')
  vim.cmd('silent undo')
end)

test('<CR> in another quickfix list keeps its usual meaning', function()
  vim.fn.setqflist({}, ' ', { title = 'other', items = { { filename = H.src, lnum = 7, text = 'x' } } })
  vim.cmd('copen')
  local before = vim.deepcopy(csi.state.selected)
  vim.cmd('execute "normal \\<CR>"')
  eq(vim.bo.buftype, '', 'left the quickfix window')
  eq(vim.api.nvim_win_get_cursor(0)[1], 7, 'jumped to the entry')
  eq(csi.state.selected, before, 'selection unchanged')
  vim.cmd('cclose')
end)

test(':CsiClear removes signs, highlights and lenses', function()
  vim.cmd('CsiClear')
  wait(function()
    return next(H.signs(bufnr)) == nil and next(H.line_highlights(bufnr)) == nil
  end, 'signs and extmarks gone')
  wait(function()
    vim.lsp.codelens.refresh()
    return #H.lens_titles(bufnr) == 0
  end, 'lenses gone', 8000)
  eq(csi.state.stack, nil, 'state')
end)

test(':help csi works (tags built in a scratch copy)', function()
  H.check_help({ 'csi', ':CsiOpenCrash', ':CsiFrames', ':CsiStep', ':CsiQuery', 'csi-highlights' })
end)

H.finish()
