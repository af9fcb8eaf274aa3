-- :CsiSlice against the real server on the null_deref crash: the slice's signs and
-- highlights, the echo, the server's lens, clearing. Skipped (not failed) when the server has
-- no csi.slice command.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq, wait = H.test, H.eq, H.wait

local csi = H.load_plugin()
local lines = require('csi.lines')

-- The slice from the crash point (frame #0 charge(), line 31 `a->balance -= f;`, every
-- variable used there), 0-based lines of fixtures/src/null_deref.c, as csi-lsp answers it
-- (and `csi slice` on the same crash): find()'s loop and returns, fee()'s switch except
-- `case 2` (never ran), charge()'s lines but `puts("unusual fee")` (never ran), main's
-- accounts, loop and calls. Only in the static slice: `case 2` (19) and the puts (29).
local CRITERION = 30
local RESTRICTED = { 7, 8, 9, 11, 12, 15, 16, 17, 18, 20, 22, 26, 27, 28, 30, 31, 35, 36, 37, 38, 39, 40 }
local STATIC_ONLY = { 19, 29 }
local SUMMARY = 'slice: 22 lines (static 24, −8 %)'
local NEVER = { 19, 29, 41, 42 }

local bufnr

local function without(list, x)
  return vim.tbl_filter(function(v)
    return v ~= x
  end, list)
end

local function slice_marks()
  return H.slice_marks(bufnr)
end
local NONE = { CsiSlice = {}, CsiSliceStatic = {}, CsiSliceCriterion = {} }
local ALL = { CsiSlice = without(RESTRICTED, CRITERION), CsiSliceStatic = STATIC_ONLY, CsiSliceCriterion = { CRITERION } }

local function has_slice_lens()
  for _, t in ipairs(H.lens_titles(bufnr)) do
    if t:find('slice:', 1, true) then
      return t
    end
  end
  return false
end

vim.cmd('edit ' .. vim.fn.fnameescape(H.src))
bufnr = vim.api.nvim_get_current_buf()
local client = H.wait(function()
  local c = require('csi.lsp').client_of(bufnr)
  return c and c.initialized and c
end, 'the csi client', 10000)
local commands = ((client.server_capabilities or {}).executeCommandProvider or {}).commands or {}
if not vim.tbl_contains(commands, 'csi.slice') then
  H.skip(':CsiSlice against csi-lsp',
    'the server ' .. H.server .. ' has no csi.slice command yet (server side of issue 9)')
  H.finish()
  return
end

test(':CsiSlice! marks the slice from the crash point, echoes its size, jumps there', function()
  vim.cmd('CsiOpenCrash ' .. H.exe .. ' ' .. H.core)
  wait(function()
    return csi.state.stack and lines.states[bufnr]
  end, 'the crash and its line states', 15000)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd('CsiSlice!')
  local r = wait(function()
    return csi.state.slice
  end, 'the slice', 10000)
  eq({ r.criterion.line, r.criterion['function'], r.criterion.thread, r.criterion.frame }, { CRITERION, 'charge', 0, 0 },
    'criterion')
  eq({ r.restrictedLines, r.unrestrictedLines }, { #RESTRICTED, #RESTRICTED + #STATIC_ONLY }, 'counts')
  local signs, hls = slice_marks()
  eq(signs, ALL, 'slice signs (0-based lines)')
  eq(hls, ALL, 'slice line highlights (0-based lines)')
  for _, l in ipairs(RESTRICTED) do
    H.truthy(not vim.tbl_contains(NEVER, l), ('restricted line %d never ran'):format(l + 1))
  end
  eq(H.messages[#H.messages], 'CSI: slice from charge() line 31 for every variable used there: ' .. SUMMARY:sub(#'slice: ' + 1),
    'echo')
  eq(vim.api.nvim_win_get_cursor(0), { 31, 0 }, 'cursor on the criterion')
  -- The line-state signs are still there.
  eq(H.lines_with(H.signs(bufnr), 'CsiNever', 1), NEVER, 'never-run signs')
end)

test('the server lens above the criterion says the same', function()
  local t = wait(function()
    vim.lsp.codelens.refresh()
    return has_slice_lens()
  end, 'the slice lens', 8000)
  eq(t, ('%d: %s · hide'):format(CRITERION, SUMMARY), 'lens')
end)

test(':CsiSlice {var} from the cursor line; unknown names are echoed', function()
  vim.api.nvim_win_set_cursor(0, { 31, 0 })
  csi.state.slice = nil
  vim.cmd('CsiSlice f nosuch')
  local r = wait(function()
    return csi.state.slice
  end, 'the slice for f')
  eq(r.criterion.variables, { 'f', 'nosuch' }, 'the names asked for')
  eq(r.unknownVariables, { 'nosuch' }, 'unknown')
  eq(H.messages[#H.messages], 'CSI: slice from charge() line 31 for f: ' .. SUMMARY:sub(#'slice: ' + 1)
    .. '. Not used there: nosuch', 'echo')
  local signs = slice_marks()
  for _, l in ipairs(signs.CsiSlice) do
    H.truthy(vim.tbl_contains(RESTRICTED, l), ('line %d of f\'s slice is in the crash slice'):format(l + 1))
  end
  for _, l in ipairs({ 15, 16, 17, 18, 26 }) do
    H.truthy(vim.tbl_contains(signs.CsiSlice, l), ('line %d defines f'):format(l + 1))
  end
end)

test(':CsiSliceClear removes the marks and the lens', function()
  vim.cmd('CsiSliceClear')
  eq({ slice_marks() }, { NONE, NONE }, 'marks')
  wait(function()
    vim.lsp.codelens.refresh()
    return not has_slice_lens()
  end, 'the slice lens gone', 8000)
end)

test('the lens clears the slice through the plugin', function()
  csi.state.slice = nil
  vim.cmd('CsiSlice!')
  wait(function()
    return csi.state.slice and next(H.signs(bufnr, 'csi_slice'))
  end, 'the slice again')
  wait(function()
    vim.lsp.codelens.refresh()
    return has_slice_lens()
  end, 'the slice lens', 8000)
  vim.api.nvim_win_set_cursor(0, { CRITERION + 1, 0 })
  vim.lsp.codelens.run()
  wait(function()
    return csi.state.slice == nil and next(H.signs(bufnr, 'csi_slice')) == nil
  end, 'the slice cleared by its lens')
  wait(function()
    vim.lsp.codelens.refresh()
    return not has_slice_lens()
  end, 'the slice lens gone', 8000)
end)

test(':CsiOpenCrash and :CsiClear drop the slice', function()
  vim.cmd('CsiSlice!')
  wait(function()
    return csi.state.slice and next(H.signs(bufnr, 'csi_slice'))
  end, 'the slice')
  csi.state.stack = nil
  vim.cmd('CsiOpenCrash ' .. H.exe .. ' ' .. H.core)
  wait(function()
    return csi.state.stack
  end, 'the crash again', 15000)
  eq({ slice_marks() }, { NONE, NONE }, 'marks after reopening')
  wait(function()
    vim.lsp.codelens.refresh()
    return not has_slice_lens()
  end, 'no slice lens after reopening', 8000)
  vim.cmd('CsiSlice!')
  wait(function()
    return csi.state.slice and next(H.signs(bufnr, 'csi_slice'))
  end, 'the slice')
  vim.cmd('CsiClear')
  wait(function()
    return next(H.signs(bufnr, 'csi_slice')) == nil and next(H.signs(bufnr)) == nil
  end, 'every sign gone')
  eq(csi.state.slice, nil, 'state')
end)

H.finish()
