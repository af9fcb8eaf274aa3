-- A small test runner for headless Neovim: test(), eq(), wait(), finish() (exit code 1 on
-- failure). Tests run in order and share the editor.
local H = { passed = 0, failed = 0, skipped = 0, messages = {} }

H.root = assert(os.getenv('CSI_ROOT'), 'CSI_ROOT is not set (run tests/run.sh)')
H.server = assert(os.getenv('CSI_LSP'), 'CSI_LSP is not set (run tests/run.sh)')
H.src = H.root .. '/fixtures/src/null_deref.c'
H.exe = H.root .. '/fixtures/crashes/null_deref/realistic-O0/null_deref'
H.core = H.root .. '/fixtures/crashes/null_deref/realistic-O0/core'
H.uri = vim.uri_from_fname(H.src)

local function out(s)
  io.stdout:write(s .. '\n')
  io.stdout:flush()
end
H.out = out

-- Keep what the plugin tells the user (vim.notify) for the assertions and the log.
vim.notify = function(msg, level)
  table.insert(H.messages, msg)
  if os.getenv('CSI_TEST_VERBOSE') then
    out('    notify[' .. tostring(level) .. ']: ' .. tostring(msg))
  end
end

function H.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    H.passed = H.passed + 1
    out('ok   - ' .. name)
  else
    H.failed = H.failed + 1
    out('FAIL - ' .. name .. '\n' .. tostring(err):gsub('\n', '\n       '))
  end
end

--- A test that cannot run here (says why; does not fail).
function H.skip(name, why)
  H.skipped = H.skipped + 1
  out('skip - ' .. name .. ' # SKIP ' .. why)
end

function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(('%s:\n  got:  %s\n  want: %s'):format(what or 'not equal', vim.inspect(got), vim.inspect(want)), 2)
  end
end

function H.truthy(v, what)
  if not v then
    error((what or 'expected a true value') .. ': got ' .. vim.inspect(v), 2)
  end
  return v
end

--- Polls cond (running the event loop) for up to ms milliseconds.
function H.wait(cond, what, ms)
  local last
  local ok = vim.wait(ms or 5000, function()
    local r = { pcall(cond) }
    last = r[2]
    return r[1] and r[2] and true or false
  end, 20)
  if not ok then
    error(('timed out waiting for %s (last: %s)'):format(what, vim.inspect(last)), 2)
  end
  return last
end

function H.contains(s, needle, what)
  if type(s) ~= 'string' or not s:find(needle, 1, true) then
    error(('%s: %q not in:\n%s'):format(what or 'missing text', needle, tostring(s)), 2)
  end
end

--- line (1-based) → sign name of the CSI sign group (or `group`) in bufnr.
function H.signs(bufnr, group)
  local out_ = {}
  local placed = vim.fn.sign_getplaced(bufnr, { group = group or 'csi' })[1]
  for _, s in ipairs(placed and placed.signs or {}) do
    out_[s.lnum] = s.name
  end
  return out_
end

--- row (0-based) → line highlight group of the CSI extmarks (namespace `ns_name`, default
--- csi_lines) in bufnr.
function H.line_highlights(bufnr, ns_name)
  local ns = vim.api.nvim_get_namespaces()[ns_name or 'csi_lines']
  local out_ = {}
  if not ns then
    return out_
  end
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
    out_[m[2]] = m[4].hl_group or m[4].line_hl_group or '?'
  end
  return out_
end

--- The 0-based lines of a state in a {line → name} map with `name` (e.g. 'CsiMust').
function H.lines_with(map, name, base)
  local l = {}
  for line, n in pairs(map) do
    if n == name then
      table.insert(l, line - (base or 0))
    end
  end
  table.sort(l)
  return l
end

function H.lens_titles(bufnr)
  local t = {}
  for _, l in ipairs(vim.lsp.codelens.get(bufnr) or {}) do
    if l.command and l.command.title then
      table.insert(t, ('%d: %s'):format(l.range.start.line, l.command.title))
    end
  end
  table.sort(t)
  return t
end

function H.hover(bufnr, line, character)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = character or 4 } }
  local res = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, 5000) or {}
  for _, r in pairs(res) do
    if r.result and r.result ~= vim.NIL and r.result.contents then
      local c = r.result.contents
      return type(c) == 'table' and (c.value or vim.inspect(c)) or c
    end
  end
  return nil
end

--- Loads the plugin from this checkout as a user's config would and sets it up against the
--- server under test (`opts` merged in); returns the csi module.
function H.load_plugin(opts)
  vim.opt.rtp:prepend(H.root .. '/editors/nvim')
  vim.cmd('filetype on')
  vim.cmd('runtime plugin/csi.lua')
  local csi = require('csi')
  csi.setup(vim.tbl_extend('force', { cmd = { H.server } }, opts or {}))
  return csi
end

--- 0-based lines by sign / highlight name, for the slice's sign group and namespace in bufnr.
function H.slice_marks(bufnr)
  local signs, hls = {}, {}
  for _, n in ipairs({ 'CsiSlice', 'CsiSliceStatic', 'CsiSliceCriterion' }) do
    signs[n] = H.lines_with(H.signs(bufnr, 'csi_slice'), n, 1)
    hls[n] = H.lines_with(H.line_highlights(bufnr, 'csi_slice'), n)
  end
  return signs, hls
end

--- Builds the plugin's help tags in a scratch copy of doc/csi.txt and opens each topic.
function H.check_help(topics)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(H.root .. '/editors/nvim/doc/csi.txt'), dir .. '/doc/csi.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(dir .. '/doc'))
  vim.opt.rtp:append(dir)
  for _, topic in ipairs(topics) do
    vim.cmd('help ' .. topic)
    H.eq(vim.bo.filetype, 'help', topic)
    vim.cmd('close')
  end
end

function H.finish()
  out(('%d passed, %d failed'):format(H.passed, H.failed) .. (H.skipped > 0 and (', %d skipped'):format(H.skipped) or ''))
  if H.failed > 0 then
    vim.cmd('cquit 1')
  else
    vim.cmd('qall!')
  end
end

return H
