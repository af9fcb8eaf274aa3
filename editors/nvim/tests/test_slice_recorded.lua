-- :CsiSlice and its marks without a server: a stand-in client answers csi/slice with the
-- example result of docs/protocol.md ("csi/slice"), on the null_deref source.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq = H.test, H.eq

local csi = H.load_plugin({ autostart = false })
local lsp = require('csi.lsp')
local lines = require('csi.lines')
local slice = require('csi.slice')

-- docs/protocol.md, csi/slice, the result example verbatim (the URI made real).
local DOC = vim.fn.json_decode((([[
{"criterion": {"uri": "file:///…/null_deref.c", "file": "./src/null_deref.c", "line": 29,
               "function": "charge", "thread": 0, "frame": 0, "variables": ["a", "amount"]},
 "unknownVariables": [],
 "restricted": [{"uri": "file:///…/null_deref.c", "file": "./src/null_deref.c", "lines": [12, 15, 26, 29]}],
 "unrestricted": [{"uri": "file:///…/null_deref.c", "file": "./src/null_deref.c", "lines": [12, 15, 19, 26, 27, 29]}],
 "restrictedLines": 4, "unrestrictedLines": 6, "reduction": 0.333}
]]):gsub('file:///…/null_deref%.c', H.uri)))

-- The stand-in: records every request and answers from `answers` (method → function(params)).
local calls = {}
local answers = {
  ['csi/slice'] = function(p)
    return p.clear and vim.NIL or vim.deepcopy(DOC)
  end,
  ['workspace/executeCommand'] = function()
    return vim.NIL
  end,
}
local fake = { id = 999, name = 'csi', initialized = true }
lsp.get_client = function()
  return fake
end
lsp.request = function(_, method, params, handler)
  table.insert(calls, { method = method, params = params })
  local a = answers[method]
  if not a then
    handler({ code = -32601, message = 'Unhandled method ' .. method })
  else
    handler(nil, a(params))
  end
  return true, 1
end

local bufnr

local function marks()
  return H.slice_marks(bufnr)
end

local ALL = { CsiSlice = { 12, 15, 26 }, CsiSliceStatic = { 19, 27 }, CsiSliceCriterion = { 29 } }
local NONE = { CsiSlice = {}, CsiSliceStatic = {}, CsiSliceCriterion = {} }

local function last_call()
  return calls[#calls]
end

test('commands, highlight groups (default links) and signs are defined', function()
  for _, c in ipairs({ 'CsiSlice', 'CsiSliceClear' }) do
    eq(vim.fn.exists(':' .. c), 2, ':' .. c)
  end
  for group, target in pairs({ CsiSlice = 'Visual', CsiSliceStatic = 'CursorLine', CsiSliceCriterion = 'CsiSlice',
    CsiSliceSign = 'CsiSlice', CsiSliceStaticSign = 'CsiSliceStatic' }) do
    H.contains(vim.api.nvim_exec('highlight ' .. group, true), 'links to ' .. target, group)
  end
  eq(vim.trim(vim.fn.sign_getdefined('CsiSlice')[1].text), '◆', 'slice sign')
  eq(vim.fn.sign_getdefined('CsiSliceStatic')[1].texthl, 'CsiSliceStaticSign', 'static sign highlight')
end)

test('summary and message of the documented example', function()
  eq(slice.summary(DOC), 'slice: 4 lines (static 6, −33 %)', 'as the server lens says it')
  eq(slice.message(DOC), 'slice from charge() line 30 for a, amount: 4 lines (static 6, −33 %)', 'message')
  eq(slice.percent(0.5), 50, '50 %')
  -- From the counts, ties to even, as the server's lens (Rust `{:.0}`) rounds.
  eq({ slice.percent(0.091, 20, 22), slice.percent(0.125, 7, 8), slice.percent(0.375, 5, 8), slice.percent(0, 0, 0) },
    { 9, 12, 38, 0 }, 'percentages')
  local every = vim.deepcopy(DOC)
  every.criterion.variables = vim.NIL
  H.contains(slice.message(every), 'slice from charge() line 30 for every variable used there: ', 'null variables')
  local odd = vim.deepcopy(DOC)
  odd.criterion['function'] = vim.NIL
  odd.criterion.variables = { 'amount' }
  odd.unknownVariables = { 'amount' }
  odd.restrictedLines, odd.unrestrictedLines, odd.reduction = 1, 1, 0
  table.insert(odd.restricted, { uri = vim.NIL, file = '/usr/include/x.h', lines = { 7, 8 } })
  eq(slice.message(odd), 'slice from line 30 of ./src/null_deref.c for no variable used there: 1 line (static 1, −0 %)'
    .. '. Not used there: amount. 2 lines in 1 file outside the workspace', 'message with oddities')
end)

test(':CsiSlice! asks from the crash point, marks the slice, echoes, jumps to the criterion', function()
  vim.cmd('edit ' .. vim.fn.fnameescape(H.src))
  bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd('CsiSlice!')
  eq(last_call(), { method = 'csi/slice', params = {} }, 'request')
  local signs, hls = marks()
  eq(signs, ALL, 'signs (0-based lines)')
  eq(hls, ALL, 'line highlights (0-based lines)')
  eq(H.messages[#H.messages], 'CSI: slice from charge() line 30 for a, amount: 4 lines (static 6, −33 %)', 'echo')
  eq(vim.api.nvim_win_get_cursor(0), { 30, 0 }, 'cursor on the criterion')
  eq(csi.state.slice.restrictedLines, 4, 'state')
  -- The slice's marks sit above the line states' (signs 6 > 5, highlights 95 > 90).
  local placed = vim.fn.sign_getplaced(bufnr, { group = 'csi_slice', lnum = 13 })[1].signs[1]
  eq(placed.priority, 6, 'sign priority')
  local ns = vim.api.nvim_get_namespaces()['csi_slice']
  local m = vim.api.nvim_buf_get_extmarks(bufnr, ns, { 12, 0 }, { 12, -1 }, { details = true })[1]
  eq({ m[4].priority, m[4].hl_eol, m[4].end_row }, { 95, true, 13 }, 'whole-line extmark')
end)

test(':CsiSlice [var ...] asks from the cursor line for those variables', function()
  vim.api.nvim_win_set_cursor(0, { 31, 4 })
  vim.cmd('CsiSlice f a')
  eq(last_call(), { method = 'csi/slice', params = { uri = H.uri, line = 30, variables = { 'f', 'a' } } }, 'request')
  eq(vim.api.nvim_win_get_cursor(0), { 31, 4 }, 'the cursor stays')
  vim.cmd('CsiSlice')
  eq(last_call(), { method = 'csi/slice', params = { uri = H.uri, line = 30 } }, 'every variable')
  -- Completion offers the identifiers of the cursor line.
  eq(vim.fn.getcompletion('CsiSlice ', 'cmdline'), { 'a', 'balance', 'f', 'crashes', 'when', 'who', 'is', 'unknown' },
    'completion')
  answers['csi/slice'] = function()
    local r = vim.deepcopy(DOC)
    r.unknownVariables = { 'amount' }
    return r
  end
  vim.cmd('CsiSlice a amount')
  H.contains(H.messages[#H.messages], 'Not used there: amount', 'unknown names echoed')
  answers['csi/slice'] = function(p)
    return p.clear and vim.NIL or vim.deepcopy(DOC)
  end
end)

test('settings: no static-only lines; no signs', function()
  local cfg = require('csi.config').get().slice
  cfg.static = false
  slice.show(DOC)
  local signs, hls = marks()
  eq(signs.CsiSliceStatic, {}, 'no static signs')
  eq(hls.CsiSliceStatic, {}, 'no static highlights')
  eq(hls.CsiSlice, ALL.CsiSlice, 'slice highlights')
  cfg.static, cfg.signs = true, false
  slice.show(DOC)
  signs, hls = marks()
  eq(signs, NONE, 'no signs')
  eq(hls, ALL, 'highlights')
  cfg.signs = true
  slice.show(DOC)
end)

test('an edited buffer (stale line states) loses the marks; they come back with fresh ones', function()
  lines.handler(nil, { uri = H.uri, version = 2, must = {}, may = {}, never = {}, partial = {}, frame = vim.NIL,
    stale = true })
  local signs, hls = marks()
  eq({ signs, hls }, { NONE, NONE }, 'stale')
  lines.handler(nil, { uri = H.uri, version = 1, must = { 26 }, may = {}, never = {}, partial = {}, frame = vim.NIL })
  signs, hls = marks()
  eq({ signs, hls }, { ALL, ALL }, 'fresh')
end)

test('a buffer loaded while a slice is shown gets its marks', function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local other = dir .. '/other.c'
  vim.fn.writefile({ 'int g;', 'int h(void) {', '  return g;', '}' }, other)
  local r = vim.deepcopy(DOC)
  local ouri = vim.uri_from_fname(other)
  table.insert(r.restricted, { uri = ouri, file = 'other.c', lines = { 0, 2 } })
  table.insert(r.unrestricted, { uri = ouri, file = 'other.c', lines = { 0, 1, 2 } })
  slice.show(r)
  vim.cmd('edit ' .. vim.fn.fnameescape(other))
  local ob = vim.api.nvim_get_current_buf()
  eq(H.lines_with(H.signs(ob, 'csi_slice'), 'CsiSlice', 1), { 0, 2 }, 'slice signs in the new buffer')
  eq(H.lines_with(H.signs(ob, 'csi_slice'), 'CsiSliceStatic', 1), { 1 }, 'static sign in the new buffer')
  vim.cmd('buffer ' .. bufnr)
  slice.show(DOC)
  eq(H.signs(ob, 'csi_slice'), {}, 'the other buffer is clean again')
end)

test(':CsiSliceClear and the lens command clear here and in the server', function()
  vim.cmd('CsiSlice!')
  vim.cmd('CsiSliceClear')
  eq(last_call(), { method = 'csi/slice', params = { clear = true } }, 'request')
  eq({ marks() }, { NONE, NONE }, 'marks gone')
  eq(csi.state.slice, nil, 'state')
  vim.cmd('CsiSlice!')
  -- The server's lens above the criterion: csi.slice {"clear": true}, run in the client.
  local handler = lsp.lens_commands()['csi.slice']
  handler({ title = 'slice', command = 'csi.slice', arguments = { { clear = true } } })
  eq(last_call(), { method = 'csi/slice', params = { clear = true } }, 'lens request')
  eq({ marks() }, { NONE, NONE }, 'marks gone after the lens')
end)

test(':CsiClear and opening a crash drop the slice', function()
  vim.cmd('CsiSlice!')
  csi.state.stack = { threads = {} }
  vim.cmd('CsiClear')
  eq({ marks() }, { NONE, NONE }, 'after :CsiClear')
  eq(csi.state.slice, nil, 'state')
  vim.cmd('CsiSlice!')
  answers['csi/openCrash'] = function()
    return { title = 'x', signal = vim.NIL, selected = { thread = 0, frame = 0 }, notices = {}, threads = {} }
  end
  csi.open_crash(H.exe, H.core, { jump = false })
  eq(last_call().method, 'csi/openCrash', 'opened')
  eq({ marks() }, { NONE, NONE }, 'after opening a crash')
  eq(csi.state.slice, nil, 'state')
end)

test(':help csi-slice resolves', function()
  H.check_help({ ':CsiSlice', ':CsiSliceClear', 'csi-slice', 'hl-CsiSlice' })
end)

H.finish()
