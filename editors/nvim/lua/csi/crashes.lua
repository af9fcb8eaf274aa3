-- :CsiCrashes: the crash store of `csi triage --store` (csi/crashBuckets, csi/bucketCrashes)
-- in a scratch buffer, buckets with their crashes under them. <CR> on a crash opens it
-- (csi/openCrash, as :CsiOpenCrash); <CR> on a bucket shows its lines (csi/bucketLineStates):
-- the lines that ran in every crash (CsiMust) and in none (CsiNever) with the line-state signs
-- and highlights, and its suspicious lines (against passing runs) as virtual text
-- `◆ #rank Ochiai lo–hi` (CsiSuspicious).
local config = require('csi.config')
local lines = require('csi.lines')
local lsp = require('csi.lsp')

local M = {}

M.ns = vim.api.nvim_create_namespace('csi_bucket')
M.buf_name = 'csi://crashes'
-- The scratch buffer, its line (1-based) → item ({kind = 'bucket'|'crash', bucket, crash}).
M.bufnr = nil
M.items = {}
-- The last answers: csi/crashBuckets, and per bucket key its csi/bucketCrashes.
M.buckets = nil
M.crashes = {}
-- The bucket whose lines are shown (the csi/bucketLineStates result), and the buffers marked.
M.shown = nil
M.marked = {}

local function is_null(x)
  return x == nil or x == vim.NIL
end

local function notify(msg, level)
  vim.notify('CSI: ' .. msg, level or vim.log.levels.INFO)
end

function M.define()
  vim.cmd('highlight default link CsiSuspicious DiagnosticWarn')
end

local function key(b)
  return b.program .. '\0' .. b.signature
end

local function basename(p)
  return (tostring(p):gsub('.*/', ''))
end

--- `…/div/0/core` of a long core path.
function M.short(p, n)
  n = n or 3
  local parts = vim.split(p, '/', { trimempty = true })
  if #parts <= n then
    return p
  end
  return '…/' .. table.concat(parts, '/', #parts - n + 1)
end

--- `0.816–1` (three decimals at most; one number for a point).
function M.ochiai(o)
  local function f(x)
    local s = ('%.3f'):format(x):gsub('0+$', ''):gsub('%.$', '')
    return s
  end
  if o[1] == o[2] then
    return f(o[1])
  end
  return f(o[1]) .. '–' .. f(o[2])
end

local function sites(b)
  local list = {}
  for s, n in pairs(is_null(b.sites) and {} or b.sites) do
    table.insert(list, { s, n })
  end
  table.sort(list, function(x, y)
    return x[2] > y[2] or (x[2] == y[2] and x[1] < y[1])
  end)
  local out = {}
  for _, e in ipairs(list) do
    table.insert(out, ('%s ×%d'):format(e[1], e[2]))
  end
  return table.concat(out, ', ')
end

--- The buffer's text and its line → item map for the answers (pure: tests call it).
function M.render(buckets, crashes_of)
  local text, items = {}, {}
  local function add(s, item)
    table.insert(text, s)
    items[#text] = item or false
  end
  if is_null(buckets) or is_null(buckets.store) then
    add('CSI crashes: ' .. ((buckets and not is_null(buckets.message)) and buckets.message or 'no crash store'))
    return text, items
  end
  local total = 0
  for _, b in ipairs(buckets.buckets) do
    total = total + b.count
  end
  add(('CSI crashes — %s: %d buckets, %d crashes'):format(buckets.store, #buckets.buckets, total))
  add('<CR> on a bucket: its lines · on a crash: open it · R: refresh · q: close')
  if #buckets.buckets == 0 then
    add('  ' .. (is_null(buckets.message) and 'the store holds no crashes' or buckets.message))
  end
  for _, b in ipairs(buckets.buckets) do
    add('')
    local when = is_null(b.firstTimeText) and 'no time'
      or (b.firstTimeText == b.lastTimeText and b.firstTimeText or (b.firstTimeText .. ' … ' .. b.lastTimeText))
    local passing = b.hasPassing and ('  ◆ %s passing runs'):format(tostring(b.passingRuns)) or ''
    add(('%d × %s   %s   %s%s'):format(b.count, b.signature, basename(b.program), when, passing),
      { kind = 'bucket', bucket = b })
    add(('    sites: %s%s'):format(sites(b), b.linesAnalysed and '' or '  (no CSI metadata: stack only)'),
      { kind = 'bucket', bucket = b })
    for _, c in ipairs(crashes_of(b) or {}) do
      add(('    %s   %s   %s'):format(M.short(c.core), is_null(c.timeText) and 'no time' or c.timeText,
        is_null(c.site) and '?' or c.site), { kind = 'crash', bucket = b, crash = c })
    end
  end
  return text, items
end

local function buffer()
  if M.bufnr and vim.api.nvim_buf_is_valid(M.bufnr) then
    return M.bufnr
  end
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(b, M.buf_name)
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].bufhidden = 'hide'
  vim.bo[b].swapfile = false
  vim.bo[b].filetype = 'csi_crashes'
  local map = function(lhs, f, desc)
    vim.keymap.set('n', lhs, f, { buffer = b, desc = 'CSI: ' .. desc, nowait = true })
  end
  map('<CR>', function()
    M.choose(vim.fn.line('.'))
  end, 'show the bucket\'s lines, or open the crash')
  map('R', function()
    M.open()
  end, 'refresh the crash store')
  map('q', function()
    vim.cmd(#vim.api.nvim_list_wins() > 1 and 'close' or 'enew')
  end, 'close')
  M.bufnr = b
  return b
end

local function fill(b)
  local text, items = M.render(M.buckets, function(bk)
    return M.crashes[key(bk)]
  end)
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, text)
  vim.bo[b].modifiable = false
  M.items = items
end

--- Shows the buffer in a window (a split unless it is shown already).
local function show(b)
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b then
      vim.api.nvim_set_current_win(w)
      return
    end
  end
  vim.cmd('botright split')
  vim.api.nvim_win_set_buf(0, b)
end

--- :CsiCrashes: asks the server for the buckets and their crashes and shows them.
--- opts.on_done(buckets) once the buffer is filled.
function M.open(opts)
  opts = opts or {}
  local client = lsp.get_client()
  if not client then
    return false
  end
  lsp.request(client, 'csi/crashBuckets', {}, function(err, r)
    if err then
      notify('csi/crashBuckets: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      M.buckets = { store = vim.NIL, message = err.message, buckets = {} }
      r = M.buckets
    end
    M.buckets, M.crashes = r, {}
    local b = buffer()
    local pending = #r.buckets
    local function done()
      fill(b)
      show(b)
      if opts.on_done then
        opts.on_done(r)
      end
    end
    if pending == 0 then
      if not is_null(r.message) then
        notify(r.message, is_null(r.store) and vim.log.levels.WARN or nil)
      end
      return done()
    end
    for _, bk in ipairs(r.buckets) do
      lsp.request(client, 'csi/bucketCrashes', { program = bk.program, signature = bk.signature }, function(e2, c)
        if e2 then
          notify('csi/bucketCrashes: ' .. (e2.message or vim.inspect(e2)), vim.log.levels.WARN)
        else
          M.crashes[key(bk)] = c.crashes
        end
        pending = pending - 1
        if pending == 0 then
          done()
        end
      end)
    end
  end)
  return true
end

--- Removes the bucket's marks (line states and suspicious lines) from every buffer.
function M.clear()
  for bufnr in pairs(M.marked) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
      if lines.states[bufnr] and lines.states[bufnr].bucket then
        lines.clear(bufnr)
      end
    end
  end
  M.marked, M.shown = {}, nil
end

--- The hint after a suspicious line.
function M.label(s)
  return ('◆ #%d Ochiai %s'):format(s.rank, M.ochiai(s.ochiai))
end

local function range(r)
  return r[1] == r[2] and tostring(r[1]) or (r[1] .. '–' .. r[2])
end

--- Marks one loaded buffer with a bucket file's line states and suspicious lines.
local function mark(bufnr, f, r)
  local params = vim.tbl_extend('force', {}, f, { bucket = r.signature })
  lines.apply(bufnr, params)
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local count = vim.api.nvim_buf_line_count(bufnr)
  for _, s in ipairs(f.suspicious or {}) do
    if s.line < count then
      vim.api.nvim_buf_set_extmark(bufnr, M.ns, s.line, 0, {
        virt_text = { { M.label(s) .. (' · ran in %s/%d crashes, %s/%s passing runs'):format(range(s.failed), r.count,
          range(s.passed), tostring(r.passingRuns)), 'CsiSuspicious' } },
        virt_text_pos = 'eol',
        sign_text = '◆',
        sign_hl_group = 'CsiSuspicious',
        priority = config.get().sign_priority + 2,
      })
    end
  end
  M.marked[bufnr] = true
end

--- Shows a bucket's lines: its files loaded and marked, the most suspicious line (else the
--- first file) in the previous window. opts.on_done(result).
function M.show_bucket(bucket, opts)
  opts = opts or {}
  local client = lsp.get_client()
  if not client then
    return false
  end
  lsp.request(client, 'csi/bucketLineStates', { program = bucket.program, signature = bucket.signature },
    function(err, r)
      if err then
        notify('csi/bucketLineStates: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      M.clear()
      M.shown = r
      local best, first
      local must, never, sus = 0, 0, 0
      for _, f in ipairs(r.files) do
        if not is_null(f.uri) then
          local fname = vim.uri_to_fname(f.uri)
          local bufnr = vim.fn.bufadd(fname)
          vim.fn.bufload(bufnr)
          vim.bo[bufnr].buflisted = true
          mark(bufnr, f, r)
          must, never, sus = must + #f.must, never + #f.never, sus + #(f.suspicious or {})
          for _, s in ipairs(f.suspicious or {}) do
            if not best or s.rank < best.rank then
              best = { fname = fname, line = s.line, rank = s.rank }
            end
          end
          first = first or { fname = fname, line = (f.must[1] or f.never[1] or 0) }
        end
      end
      local msg = ('bucket %s (%d crashes): %d lines ran in every crash, %d in none'):format(r.signature, r.count,
        must, never)
      if not is_null(r.passingRuns) then
        msg = msg .. ('; %d suspicious lines against %d passing runs'):format(sus, r.passingRuns)
      end
      notify(msg)
      for _, n in ipairs(r.notices or {}) do
        notify(n, vim.log.levels.WARN)
      end
      local at = best or first
      if at and config.get().jump and opts.jump ~= false then
        if vim.api.nvim_get_current_buf() == M.bufnr then
          vim.cmd('wincmd p')
          if vim.api.nvim_get_current_buf() == M.bufnr then
            vim.cmd('aboveleft split')
          end
        end
        vim.cmd('edit ' .. vim.fn.fnameescape(at.fname))
        pcall(vim.api.nvim_win_set_cursor, 0, { at.line + 1, 0 })
      end
      if opts.on_done then
        opts.on_done(r)
      end
    end)
  return true
end

--- <CR> on line idx of the crashes buffer.
function M.choose(idx, opts)
  local it = M.items[idx]
  if not it then
    return false
  end
  if it.kind == 'bucket' then
    return M.show_bucket(it.bucket, opts)
  end
  M.clear()
  if vim.api.nvim_get_current_buf() == M.bufnr then
    vim.cmd('wincmd p')
    if vim.api.nvim_get_current_buf() == M.bufnr then
      vim.cmd('aboveleft split')
    end
  end
  return require('csi').open_crash(it.crash.executable, it.crash.core, opts)
end

return M
