-- csi/lineStates → signs (the global answer) and extmark line highlights (the selected
-- frame's answer, or the global one).
local config = require('csi.config')

local M = {}

M.ns = vim.api.nvim_create_namespace('csi_lines')
M.sign_group = 'csi'
-- bufnr → the last csi/lineStates params applied to it
M.states = {}

local STATES = { 'must', 'may', 'never', 'partial' }
local NAMES = { must = 'Must', may = 'May', never = 'Never', partial = 'Partial' }
local LINKS = { CsiMust = 'DiffAdd', CsiMay = 'DiffChange', CsiNever = 'Comment', CsiPartial = 'DiffText' }

M.hl = {}
M.sign = {}
for _, s in ipairs(STATES) do
  M.hl[s] = 'Csi' .. NAMES[s]
  M.sign[s] = 'Csi' .. NAMES[s]
end

--- Highlight groups as `default` links (so a colour scheme or the user can relink them), each
--- with a `<group>Sign` link for the sign column, and one sign per kind showing `text[kind]`.
function M.define_marks(links, kinds, sign, hl, text)
  for group, target in pairs(links) do
    vim.cmd(('highlight default link %s %s'):format(group, target))
    vim.cmd(('highlight default link %sSign %s'):format(group, group))
  end
  for _, k in ipairs(kinds) do
    vim.fn.sign_define(sign[k], { text = text[k], texthl = hl[k] .. 'Sign' })
  end
end

function M.define()
  M.define_marks(LINKS, STATES, M.sign, M.hl, config.get().sign_text)
end

-- What each state means (the legend: :CsiLegend).
M.MEANING = {
  must = 'ran before the crash in every execution consistent with the core (stack, path traces, coverage bits)',
  may = 'ran in some consistent executions and not in others: the evidence does not decide it',
  never = 'ran in no consistent execution: this code did not run before the crash',
  partial = 'only part of the line decided: some of its code must have run, some not',
}

--- The legend as lines of `{text, highlight group}` chunks: each state's sign and name in its
--- own highlight (so it shows the colours of this colour scheme), then its meaning, then
--- which answer the signs and the line highlights show.
function M.legend()
  local cfg = config.get()
  local out = { { { 'CSI line states: which lines ran before the crash', 'Title' } } }
  for _, s in ipairs(STATES) do
    table.insert(out, {
      { ' ' .. (cfg.sign_text[s] or ' ') .. ' ', M.hl[s] .. 'Sign' },
      { (' %-8s'):format(s), M.hl[s] },
      { ' ' .. M.MEANING[s], 'Normal' },
    })
  end
  local scope = cfg.highlight_scope == 'global' and 'the whole program (every thread and frame)'
    or "the selected frame's own activation (the whole program when it has no analysis)"
  table.insert(out, { { 'Signs: the whole program. Line highlights: ' .. scope .. '.', 'Comment' } })
  return out
end

local function is_null(x)
  return x == nil or x == vim.NIL
end

--- line (0-based) → state; partial wins over must (it is a subset of it).
function M.classify(t)
  local out = {}
  if is_null(t) then
    return out
  end
  for _, s in ipairs(STATES) do
    local list = t[s]
    if not is_null(list) then
      for _, l in ipairs(list) do
        out[l] = s
      end
    end
  end
  return out
end

function M.clear(bufnr)
  M.states[bufnr] = nil
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
    vim.fn.sign_unplace(M.sign_group, { buffer = bufnr })
  end
end

function M.clear_all()
  for bufnr in pairs(M.states) do
    M.clear(bufnr)
  end
end

function M.apply(bufnr, params)
  local cfg = config.get()
  M.clear(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  M.states[bufnr] = params
  if params.stale == true then
    return
  end
  local count = vim.api.nvim_buf_line_count(bufnr)
  if cfg.signs then
    M.place_signs(bufnr, M.sign_group, M.classify(params), M.sign, cfg.sign_priority)
  end
  if cfg.line_highlights then
    local source = params
    if cfg.highlight_scope == 'frame' and not is_null(params.frame) then
      source = params.frame
    end
    for line, s in pairs(M.classify(source)) do
      if line < count then
        M.highlight_line(bufnr, M.ns, line, M.hl[s], cfg.highlight_priority)
      end
    end
  end
end

--- Places one sign per line of `kinds` (line, 0-based → kind) that bufnr has: sign `names[kind]`
--- in `group`.
function M.place_signs(bufnr, group, kinds, names, priority)
  local count = vim.api.nvim_buf_line_count(bufnr)
  local list = {}
  for line, kind in pairs(kinds) do
    if line >= 0 and line < count then
      table.insert(list, {
        group = group,
        buffer = bufnr,
        lnum = line + 1,
        name = names[kind],
        priority = priority,
      })
    end
  end
  if #list > 0 then
    vim.fn.sign_placelist(list)
  end
end

--- Highlights a whole line (0-based) with `group` in namespace `ns`. A whole-line range with
--- hl_eol (rather than line_hl_group): its group shows in nvim_buf_get_extmarks details on every
--- version, and a foreground (CsiNever → Comment) wins over syntax colours.
function M.highlight_line(bufnr, ns, line, group, priority)
  vim.api.nvim_buf_set_extmark(bufnr, ns, line, 0, {
    end_row = line + 1,
    end_col = 0,
    hl_group = group,
    hl_eol = true,
    priority = priority,
  })
end

--- The loaded buffer showing a file:// URI, or nil (never creates one).
function M.buf_of_uri(uri)
  local ok, fname = pcall(vim.uri_to_fname, uri)
  if not ok then
    return nil
  end
  local real = vim.loop.fs_realpath(fname) or fname
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      local name = vim.api.nvim_buf_get_name(b)
      if name == fname or (name ~= '' and (vim.loop.fs_realpath(name) or name) == real) then
        return b
      end
    end
  end
  return nil
end

--- The `csi/lineStates` notification handler (signature of Neovim >= 0.5.1 handlers).
function M.handler(_, params, _, _)
  if type(params) ~= 'table' or type(params.uri) ~= 'string' then
    return
  end
  local bufnr = M.buf_of_uri(params.uri)
  if bufnr then
    M.apply(bufnr, params)
    -- The slice follows: shown on a freshly opened buffer, gone from an edited (stale) one.
    require('csi.slice').apply(bufnr)
  end
  vim.schedule(function()
    pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'CsiLineStates', modeline = false })
  end)
end

return M
