-- csi/slice → signs and extmark line highlights: the restricted slice (the lines that could
-- have affected the criterion in this run), its criterion, and faintly the lines only in the
-- plain static slice.
local config = require('csi.config')
local lines = require('csi.lines')

local M = {}

M.ns = vim.api.nvim_create_namespace('csi_slice')
M.sign_group = 'csi_slice'
-- The csi/slice result shown, or nil.
M.result = nil

local KINDS = { 'slice', 'static', 'criterion' }
M.hl = { slice = 'CsiSlice', static = 'CsiSliceStatic', criterion = 'CsiSliceCriterion' }
M.sign = { slice = 'CsiSlice', static = 'CsiSliceStatic', criterion = 'CsiSliceCriterion' }
-- `default` links to groups every colour scheme has; relink them to taste.
local LINKS = { CsiSlice = 'Visual', CsiSliceStatic = 'CursorLine', CsiSliceCriterion = 'CsiSlice' }

local function is_null(x)
  return x == nil or x == vim.NIL
end

function M.define()
  lines.define_marks(LINKS, KINDS, M.sign, M.hl, config.get().slice.sign_text)
end

--- The reduction as a whole percentage (0.333 → 33), as the server's lens computes it: from
--- the line counts when there are any (the `reduction` field is rounded to 3 decimals),
--- rounded with ties to even (Rust's `{:.0}`).
function M.percent(reduction, restricted, unrestricted)
  local x
  if type(restricted) == 'number' and type(unrestricted) == 'number' and unrestricted > 0 then
    x = (1 - restricted / unrestricted) * 100
  elseif type(reduction) == 'number' then
    x = reduction * 100
  end
  if not x or x ~= x or x == math.huge or x == -math.huge then
    return 0
  end
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then
    return f + 1
  end
  return f
end

local function n_lines(n)
  return n == 1 and '1 line' or (tostring(n) .. ' lines')
end

--- `slice: 4 lines (static 6, −33 %)`, as the server's lens says it.
function M.summary(r)
  return ('slice: %s (static %d, −%d %%)'):format(n_lines(r.restrictedLines or 0), r.unrestrictedLines or 0,
    M.percent(r.reduction, r.restrictedLines, r.unrestrictedLines))
end

--- `charge() line 31`, `line 31 of ./src/x.c` (1-based).
function M.place(c)
  if type(c.line) ~= 'number' then
    return not is_null(c['function']) and (c['function'] .. '()') or (is_null(c.file) and 'the criterion' or c.file)
  end
  local line = ('line %d'):format(c.line + 1)
  if not is_null(c['function']) then
    return c['function'] .. '() ' .. line
  end
  return is_null(c.file) and line or (line .. ' of ' .. c.file)
end

--- What :CsiSlice echoes: `slice from charge() line 31 for a, f: 4 lines (static 6, −33 %)`.
function M.message(r)
  local c = r.criterion or {}
  local unknown = is_null(r.unknownVariables) and {} or r.unknownVariables
  -- null: every variable; else the names asked for (unknown ones too, reported after).
  local vars = 'every variable used there'
  if not is_null(c.variables) then
    local known = vim.tbl_filter(function(v)
      return not vim.tbl_contains(unknown, v)
    end, c.variables)
    vars = #known > 0 and table.concat(known, ', ') or 'no variable used there'
  end
  local s = ('slice from %s for %s: %s'):format(M.place(c), vars, M.summary(r):sub(#'slice: ' + 1))
  if #unknown > 0 then
    s = s .. '. Not used there: ' .. table.concat(unknown, ', ')
  end
  local gone, files = 0, 0
  for _, f in ipairs(r.restricted or {}) do
    if is_null(f.uri) then
      files, gone = files + 1, gone + #(f.lines or {})
    end
  end
  if gone > 0 then
    s = s .. ('. %s in %s outside the workspace'):format(n_lines(gone), files == 1 and '1 file' or (files .. ' files'))
  end
  return s
end

--- line (0-based) → 'criterion' | 'slice' | 'static' for bufnr (criterion wins over slice,
--- slice over static; static only with `show_static`).
function M.classify(r, bufnr, show_static)
  local out = {}
  if is_null(r) then
    return out
  end
  local function each(files, kind)
    for _, f in ipairs(is_null(files) and {} or files) do
      if not is_null(f.uri) and lines.buf_of_uri(f.uri) == bufnr then
        for _, l in ipairs(f.lines or {}) do
          if kind == 'slice' or out[l] == nil then
            out[l] = kind
          end
        end
      end
    end
  end
  if show_static then
    each(r.unrestricted, 'static')
  end
  each(r.restricted, 'slice')
  local c = r.criterion
  if c and not is_null(c.uri) and lines.buf_of_uri(c.uri) == bufnr and type(c.line) == 'number' then
    out[c.line] = 'criterion'
  end
  return out
end

function M.clear(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
    vim.fn.sign_unplace(M.sign_group, { buffer = bufnr })
  end
end

--- Marks the shown slice in bufnr (nothing in a buffer edited since its line states came).
function M.apply(bufnr)
  M.clear(bufnr)
  if not M.result or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  local st = lines.states[bufnr]
  if st and st.stale == true then
    return
  end
  local cfg = config.get().slice
  local kinds = M.classify(M.result, bufnr, cfg.static)
  if cfg.signs then
    lines.place_signs(bufnr, M.sign_group, kinds, M.sign, cfg.sign_priority)
  end
  if cfg.line_highlights then
    local count = vim.api.nvim_buf_line_count(bufnr)
    for line, kind in pairs(kinds) do
      if line >= 0 and line < count then
        lines.highlight_line(bufnr, M.ns, line, M.hl[kind], cfg.highlight_priority)
      end
    end
  end
end

--- Shows a csi/slice result (nil or vim.NIL: clears) in every loaded buffer.
function M.show(r)
  M.result = not is_null(r) and r or nil
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      M.apply(b)
    end
  end
end

function M.clear_all()
  M.show(nil)
end

return M
