-- Starting csi-lsp and talking to it, on Neovim 0.7 and newer.
local config = require('csi.config')
local lines = require('csi.lines')

local M = {}

M.name = 'csi'

local has = function(v)
  return vim.fn.has(v) == 1
end

-- Client methods became `client:method()` in 0.11 (the `client.method()` form is deprecated).
function M.request(client, method, params, handler, bufnr)
  if has('nvim-0.11') then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function is_stopped(client)
  if has('nvim-0.11') then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- Every running csi client.
function M.clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local out = {}
  for _, c in pairs(all) do
    if c.name == M.name and not is_stopped(c) then
      table.insert(out, c)
    end
  end
  return out
end

--- The csi client attached to bufnr (or nil).
function M.client_of(bufnr)
  for _, c in ipairs(M.clients()) do
    if vim.lsp.buf_is_attached(bufnr, c.id) then
      return c
    end
  end
end

local function exists(path)
  return vim.loop.fs_stat(path) ~= nil
end

--- The workspace root for a buffer (or for the current directory when bufnr has no file).
function M.root_dir(bufnr)
  local cfg = config.get()
  if type(cfg.root_dir) == 'function' then
    local r = cfg.root_dir(bufnr)
    if r then
      return r
    end
  elseif type(cfg.root_dir) == 'string' then
    return vim.fn.fnamemodify(cfg.root_dir, ':p'):gsub('/$', '')
  end
  local name = bufnr and vim.api.nvim_buf_get_name(bufnr) or ''
  local dir = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.fn.getcwd()
  local cur = dir
  while cur and cur ~= '' do
    for _, m in ipairs(cfg.root_markers) do
      if exists(cur .. '/' .. m) then
        return cur
      end
    end
    local parent = vim.fn.fnamemodify(cur, ':h')
    if parent == cur then
      break
    end
    cur = parent
  end
  return name ~= '' and dir or vim.fn.getcwd()
end

local function refresh_codelens(bufnr)
  if not config.get().codelens then
    return
  end
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if has('nvim-0.10') then
    pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
  elseif bufnr == vim.api.nvim_get_current_buf() then
    pcall(vim.lsp.codelens.refresh)
  end
end
M.refresh_codelens = refresh_codelens

--- Refreshes the lenses of every buffer the csi clients are attached to (0.7–0.9: the current
--- buffer; the others refresh when entered).
function M.refresh_all()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and M.client_of(b) then
      refresh_codelens(b)
    end
  end
end

local function on_attach(client, bufnr)
  local cfg = config.get()
  local group = vim.api.nvim_create_augroup('csi_buf_' .. bufnr, { clear = true })
  if cfg.codelens then
    vim.api.nvim_create_autocmd({ 'BufEnter', 'CursorHold', 'InsertLeave' }, {
      group = group,
      buffer = bufnr,
      callback = function()
        refresh_codelens(bufnr)
      end,
    })
    refresh_codelens(bufnr)
  end
  if cfg.inlay_hints and has('nvim-0.10') and vim.lsp.inlay_hint then
    pcall(vim.lsp.inlay_hint.enable, true, { bufnr = bufnr })
  end
  vim.api.nvim_create_autocmd('BufUnload', {
    group = group,
    buffer = bufnr,
    callback = function()
      lines.states[bufnr] = nil
    end,
  })
  if cfg.on_attach then
    cfg.on_attach(client, bufnr)
  end
end

-- Code lens commands run in the client, so that selecting a frame or stepping from a lens
-- also jumps and refreshes.
function M.lens_commands()
  return {
    ['csi.selectFrame'] = function(command)
      local a = (command.arguments or {})[1] or {}
      require('csi').select(a.thread or 0, a.frame or 0)
    end,
    ['csi.stepPath'] = function(command)
      local a = (command.arguments or {})[1] or {}
      require('csi').step(a.delta or -1)
    end,
    -- The lens above a slice's criterion hides the slice ({"clear": true}).
    ['csi.slice'] = function(command)
      local a = (command.arguments or {})[1] or {}
      if a.clear then
        require('csi').slice_clear()
      else
        require('csi').slice({ crash = a.uri == nil, uri = a.uri, line = a.line, variables = a.variables })
      end
    end,
  }
end

local function client_config(root)
  local cfg = config.get()
  local init = vim.tbl_extend('force', {}, cfg.settings or {}, { lineStates = cfg.line_states })
  if type(cfg.crash_store) == 'string' and cfg.crash_store ~= '' then
    local s = cfg.crash_store
    init.crashStore = s:find('://', 1, true) and s or vim.fn.fnamemodify(vim.fn.expand(s), ':p')
  end
  return {
    name = M.name,
    cmd = config.cmd(),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = init,
    capabilities = cfg.capabilities or vim.lsp.protocol.make_client_capabilities(),
    handlers = { ['csi/lineStates'] = lines.handler },
    commands = M.lens_commands(),
    on_attach = on_attach,
    -- A crash named by .csi.toml (or the settings) is being opened by the server: show it
    -- once it is, without waiting for a C file to be opened.
    on_init = function(_, result)
      local caps = type(result) == 'table' and result.capabilities or {}
      local csi = type(caps.experimental) == 'table' and caps.experimental.csi or nil
      if type(csi) == 'table' and csi.crashAtStart then
        vim.schedule(function()
          require('csi').show_server_crash()
        end)
      end
    end,
  }
end

--- The running client for root, or a new one (not attached to any buffer).
function M.ensure(root)
  for _, c in ipairs(M.clients()) do
    if c.config.root_dir == root then
      return c.id
    end
  end
  local conf = client_config(root)
  if vim.fn.executable(conf.cmd[1]) ~= 1 then
    vim.notify(('CSI: server %q not found (set `cmd` or `server` in require("csi").setup{})'):format(conf.cmd[1]),
      vim.log.levels.ERROR)
    return nil
  end
  if has('nvim-0.11') then
    -- vim.lsp.start_client is deprecated there; start without attaching to a buffer.
    local ok, id = pcall(vim.lsp.start, conf, {
      attach = false,
      reuse_client = function()
        return false
      end,
    })
    if ok and id then
      return id
    end
  end
  return vim.lsp.start_client(conf)
end

--- Starts (or reuses) the server for bufnr and attaches it. Returns the client id.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local existing = M.client_of(bufnr)
  if existing then
    return existing.id
  end
  -- A running client whose workspace holds the file (e.g. started by :CsiOpenCrash from
  -- another directory's buffer) keeps the open crash: reuse it.
  local name = vim.api.nvim_buf_get_name(bufnr)
  for _, c in ipairs(M.clients()) do
    local root = c.config.root_dir
    if root and name:sub(1, #root + 1) == root .. '/' then
      vim.lsp.buf_attach_client(bufnr, c.id)
      return c.id
    end
  end
  -- The crash's source files may lie outside the workspace that named it (.csi.toml's
  -- substitute paths): while a crash is open, its server takes them.
  local open_crash = require('csi').state.stack
  local running = M.clients()[1]
  if open_crash and running then
    vim.lsp.buf_attach_client(bufnr, running.id)
    return running.id
  end
  local id = M.ensure(M.root_dir(bufnr))
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

--- The client for the current buffer, or any csi client, or a new one (attached to the current
--- buffer when it is a C/C++ file). Waits (up to 10 s) until it is initialized.
function M.get_client()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.client_of(bufnr)
  if not client then
    local ft = vim.bo[bufnr].filetype
    if vim.tbl_contains(config.get().filetypes, ft) and vim.api.nvim_buf_get_name(bufnr) ~= '' then
      local id = M.attach(bufnr)
      client = id and vim.lsp.get_client_by_id(id)
    else
      client = M.clients()[1]
      if not client then
        local id = M.ensure(M.root_dir(nil))
        client = id and vim.lsp.get_client_by_id(id)
      end
    end
  end
  if not client then
    return nil
  end
  if not client.initialized then
    vim.wait(10000, function()
      return client.initialized == true or is_stopped(client)
    end, 20)
  end
  if not client.initialized then
    vim.notify('CSI: the server did not start', vim.log.levels.ERROR)
    return nil
  end
  return client
end

return M
