-- CSI crash view for Neovim: commands on top of csi-lsp (see :help csi).
local config = require('csi.config')
local lsp = require('csi.lsp')
local lines = require('csi.lines')
local frames = require('csi.frames')
local slice = require('csi.slice')
local crashes = require('csi.crashes')

local M = {}

-- What the plugin knows about the open crash.
M.state = {
  stack = nil, -- the csi/stack result
  selected = nil, -- {thread, frame} (0-based, as in the protocol)
  path = nil, -- the last csi/selectFrame result
  step = nil, -- the last csi/stepPath result
  query = nil, -- the last csi/query result (with the question)
  slice = nil, -- the csi/slice result shown
}

local function notify(msg, level)
  vim.notify('CSI: ' .. msg, level or vim.log.levels.INFO)
end

local function is_null(x)
  return x == nil or x == vim.NIL
end

--- Opens a file:// URI at a 0-based line in a normal window (leaving the quickfix window).
local function jump(uri, line, col)
  if is_null(uri) or is_null(line) then
    return false
  end
  local fname = vim.uri_to_fname(uri)
  if vim.bo.buftype == 'quickfix' then
    vim.cmd('wincmd p')
  end
  if vim.api.nvim_buf_get_name(0) ~= fname then
    local ok, err = pcall(vim.cmd, 'edit ' .. vim.fn.fnameescape(fname))
    if not ok then
      notify(tostring(err), vim.log.levels.WARN)
      return false
    end
  end
  pcall(vim.api.nvim_win_set_cursor, 0, { line + 1, is_null(col) and 0 or col })
  return true
end

--- Sends a request to the csi server; on_result(result) runs on success.
local function request(method, params, on_result)
  local client = lsp.get_client()
  if not client then
    return false
  end
  lsp.request(client, method, params, function(err, result)
    if err then
      notify(('%s: %s'):format(method, err.message or vim.inspect(err)), vim.log.levels.WARN)
      return
    end
    if on_result then
      on_result(result, client)
    end
  end, vim.api.nvim_get_current_buf())
  return true
end

function M.setup(opts)
  config.set(opts)
  lines.define()
  slice.define()
  crashes.define()
  -- Buffers already open when the plugin is set up.
  if config.get().autostart then
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) then
        M.maybe_attach(b)
      end
    end
    -- A workspace whose .csi.toml names a crash: start the server now, so the crash shows
    -- without opening a C file first.
    local root = lsp.root_dir(nil)
    if #lsp.clients() == 0 and vim.loop.fs_stat(root .. '/.csi.toml') then
      lsp.ensure(root)
    end
  end
end

--- Attaches the server to bufnr if it is a file of one of the configured filetypes.
function M.maybe_attach(bufnr)
  local cfg = config.get()
  if not cfg.autostart or vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return
  end
  if vim.tbl_contains(cfg.filetypes, vim.bo[bufnr].filetype) then
    lsp.attach(bufnr)
  end
end

M.attach = lsp.attach

local function frame_of(thread, index)
  local st = M.state.stack
  if not st or is_null(st.threads) then
    return nil
  end
  for _, t in ipairs(st.threads) do
    if t.index == thread then
      for _, f in ipairs(t.frames or {}) do
        if f.index == index then
          return f
        end
      end
    end
  end
end
M.frame_of = frame_of

local function describe_stack(st)
  local sig = st.signal
  local what = is_null(sig) and 'crash' or (sig.name or ('signal ' .. tostring(sig.signo)))
  if not is_null(sig) and not is_null(sig.fault_address) then
    what = what .. (' at 0x%x'):format(sig.fault_address)
  end
  local sel = st.selected or {}
  local f = frame_of(sel.thread or 0, sel.frame or 0)
  local where = ''
  if f then
    where = (' in %s()'):format(is_null(f['function']) and '??' or f['function'])
    if not is_null(f.file) and not is_null(f.line) then
      where = where .. (' at %s:%d'):format(f.file, f.line + 1)
    end
  end
  return what .. where
end

--- The end of every request that moves the user: go to `at` (a table with uri, line and
--- optionally column; nil: stay) when jumping is on and not turned off for this call, redraw
--- the server's hints and lenses, then opts.on_done(result).
local function settle(opts, result, at)
  if at and config.get().jump and opts.jump ~= false then
    jump(at.uri, at.line, at.column or 0)
  end
  lsp.refresh_all()
  if opts.on_done then
    opts.on_done(result)
  end
end

-- The frame to show first: the selected one if it has a source line, else the first one with
-- one in the crashed thread.
local function first_located(st)
  local sel = st.selected or {}
  local f = frame_of(sel.thread or 0, sel.frame or 0)
  if f and not is_null(f.uri) then
    return f
  end
  for _, t in ipairs(st.threads or {}) do
    if t.crashed then
      for _, fr in ipairs(t.frames or {}) do
        if not is_null(fr.uri) and not is_null(fr.line) then
          return fr
        end
      end
    end
  end
end

local function set_stack(st)
  M.state.stack = st
  M.state.selected = { thread = (st.selected or {}).thread or 0, frame = (st.selected or {}).frame or 0 }
  M.state.path, M.state.step = nil, nil
end

--- Opens a crash (paths relative to the current directory). opts.on_done(stack).
function M.open_crash(exe, core, opts)
  opts = opts or {}
  if not exe or exe == '' then
    exe = vim.fn.input('CSI executable: ', '', 'file')
  end
  if exe == '' then
    return
  end
  if not core or core == '' then
    core = vim.fn.input('CSI core: ', vim.fn.fnamemodify(exe, ':h') .. '/core', 'file')
  end
  if core == '' then
    return
  end
  local params = {
    executable = vim.fn.fnamemodify(vim.fn.expand(exe), ':p'),
    core = vim.fn.fnamemodify(vim.fn.expand(core), ':p'),
  }
  notify('opening ' .. params.core .. ' …')
  return request('csi/openCrash', params, function(st)
    set_stack(st)
    M.state.crash = params
    -- A crash's lines replace a bucket's.
    crashes.clear()
    -- Opening a crash clears the server's slice.
    M.state.slice = nil
    slice.clear_all()
    for _, n in ipairs(is_null(st.notices) and {} or st.notices) do
      notify(type(n) == 'string' and n or vim.inspect(n), vim.log.levels.WARN)
    end
    notify(describe_stack(st))
    settle(opts, st, first_located(st))
  end)
end

--- Shows the crash the server opened at start (`.csi.toml`, settings): the stack, and the
--- crash frame's source at its line. opts.on_done(stack).
function M.show_server_crash(opts)
  opts = opts or {}
  return request('csi/stack', {}, function(st)
    if type(st) ~= 'table' or is_null(st.threads) or #st.threads == 0 then
      return
    end
    set_stack(st)
    notify(describe_stack(st))
    settle(opts, st, first_located(st))
  end)
end

--- Fetches the stack and fills the quickfix list (threads and their frames).
function M.frames(opts)
  opts = opts or {}
  return request('csi/stack', {}, function(st)
    M.state.stack = st
    M.state.selected = st.selected and { thread = st.selected.thread, frame = st.selected.frame } or M.state.selected
    frames.set_qflist(st)
    if opts.open ~= false then
      vim.cmd('copen')
      frames.map_quickfix(vim.api.nvim_get_current_buf())
    end
    if opts.on_done then
      opts.on_done(st)
    end
  end)
end

--- Selects frame `frame` of thread `thread` (0-based, as in the protocol).
function M.select(thread, frame, opts)
  opts = opts or {}
  -- opts.inline: a call inlined into the frame (0 = innermost), as the debugger lists them.
  local params = { thread = thread, frame = frame, inline = opts.inline }
  return request('csi/selectFrame', params, function(path)
    M.state.selected = { thread = thread, frame = frame, inline = opts.inline }
    M.state.path = path
    M.state.step = nil
    if M.state.stack then
      M.state.stack.selected = { thread = thread, frame = frame, step = vim.NIL, inline = opts.inline }
    end
    local f = frame_of(thread, frame)
    local name = f and not is_null(f['function']) and (f['function'] .. '()') or '??'
    local steps = type(path) == 'table' and type(path.steps) == 'table' and #path.steps or 0
    local note = type(path) == 'table' and not is_null(path.note) and (' — ' .. path.note) or ''
    notify(('frame #%d %s (thread %d) · %d path steps%s'):format(frame, name, thread + 1, steps, note))
    settle(opts, path, f)
  end)
end

--- Moves the selected frame's path-trace position by delta steps (negative: back).
function M.step(delta, opts)
  opts = opts or {}
  return request('csi/stepPath', { delta = delta }, function(r)
    M.state.step = r
    notify(('step %d/%d%s'):format(r.step + 1, r.of,
      is_null(r.line) and '' or (' · %s:%d'):format(is_null(r.file) and '?' or r.file, r.line + 1)))
    settle(opts, r, { uri = r.uri, line = r.line })
  end)
end

local QUESTIONS = {
  mayRun = 'may have run before the crash',
  mayNotRun = 'may not have run before the crash',
  mayRunBefore = 'may have run before line %d',
}

--- Asks a control-flow query about the cursor line: kind mayRun (default), mayNotRun, or
--- mayRunBefore with line2 (1-based, same buffer).
function M.query(kind, line2, opts)
  opts = opts or {}
  kind = (kind and kind ~= '') and kind or 'mayRun'
  if not QUESTIONS[kind] then
    notify('unknown query ' .. kind .. ' (mayRun, mayNotRun, mayRunBefore)', vim.log.levels.ERROR)
    return
  end
  local uri = vim.uri_from_bufnr(0)
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local params = { kind = kind, uri = uri, line = line }
  if kind == 'mayRunBefore' then
    line2 = tonumber(line2)
    if not line2 then
      notify('mayRunBefore needs a second line: :CsiQuery mayRunBefore {line}', vim.log.levels.ERROR)
      return
    end
    params.uri2, params.line2 = uri, line2 - 1
  end
  return request('csi/query', params, function(r)
    local q = QUESTIONS[kind]:format(line2 or 0)
    local msg = ('line %d %s: %s'):format(line + 1, q, r.answer)
    M.state.query = { params = params, result = r, message = msg }
    notify(msg)
    if opts.on_done then
      opts.on_done(r)
    end
  end)
end

--- Slices (csi/slice) and marks the slice: from the crash point (opts.crash), else from
--- opts.uri / opts.line (0-based; default: the cursor line), for opts.variables (default:
--- every variable used on the line). Echoes the size and the reduction.
function M.slice(opts)
  opts = opts or {}
  local params = {}
  if not opts.crash then
    params.uri = opts.uri or vim.uri_from_bufnr(0)
    params.line = opts.line or (vim.api.nvim_win_get_cursor(0)[1] - 1)
  end
  if type(opts.variables) == 'table' and #opts.variables > 0 then
    params.variables = opts.variables
  end
  return request('csi/slice', params, function(r)
    if is_null(r) then
      M.state.slice = nil
      slice.clear_all()
      return
    end
    M.state.slice = r
    slice.show(r)
    local unknown = not is_null(r.unknownVariables) and #r.unknownVariables > 0
    notify(slice.message(r), unknown and vim.log.levels.WARN or nil)
    local c = r.criterion or {}
    settle(opts, r, opts.crash and { uri = c.uri, line = c.line } or nil)
  end)
end

--- Hides the slice: its signs and highlights here, its hints and lens in the server.
function M.slice_clear(opts)
  opts = opts or {}
  local known = M.state.slice ~= nil or M.state.stack ~= nil
  M.state.slice = nil
  slice.clear_all()
  local function done()
    settle(opts)
  end
  if not known or not request('csi/slice', { clear = true }, done) then
    done()
  end
end

--- Closes the crash: the server drops hints, lenses and diagnostics; signs and highlights go.
function M.clear(opts)
  opts = opts or {}
  crashes.clear()
  lines.clear_all()
  slice.clear_all()
  M.state.stack, M.state.selected, M.state.path, M.state.step, M.state.slice = nil, nil, nil, nil, nil
  frames.clear_qflist()
  return request('workspace/executeCommand', { command = 'csi.clear', arguments = {} }, function()
    lines.clear_all()
    notify('crash closed')
    settle(opts)
  end)
end

--- :CsiCrashes: the crash store's buckets and crashes in a scratch buffer (see csi.crashes).
function M.crashes(opts)
  return crashes.open(opts)
end

return M
