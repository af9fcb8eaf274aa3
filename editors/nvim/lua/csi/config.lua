-- Settings of the CSI plugin: defaults, merged with `vim.g.csi` and `require('csi').setup{}`.
local M = {}

M.defaults = {
  -- The server: a path, or a list (command and arguments). `csi-lsp` on $PATH by default.
  cmd = nil,
  server = 'csi-lsp',
  filetypes = { 'c', 'cpp' },
  -- Start the server for buffers of those filetypes automatically.
  autostart = true,
  -- The workspace root: a directory, or a function(bufnr) returning one; else the nearest
  -- parent with one of root_markers, else the current directory.
  root_dir = nil,
  root_markers = { '.csi.toml', 'compile_commands.json', '.git' },
  -- Extra server settings (initializationOptions): executable, core, substitutePaths,
  -- debugDirs, sysroot, statusHints, ... (docs/protocol.md).
  settings = {},
  -- The crash store of `csi triage --store` that :CsiCrashes lists: a SQLite file or a
  -- postgres:// URL (the server's `crashStore`; .csi.toml's `crash-store` otherwise).
  crash_store = nil,
  -- Ask for csi/lineStates (signs and line highlights) instead of faded-line diagnostics.
  line_states = true,
  signs = true,
  sign_priority = 5,
  sign_text = { must = '▍', may = '┆', never = '·', partial = '◐' },
  line_highlights = true,
  -- 'frame': line highlights show the selected frame's own answer (global when the frame has
  -- no analysis); 'global': the answer for the whole execution before the crash.
  highlight_scope = 'frame',
  highlight_priority = 90, -- below Tree-sitter (100), above syntax
  -- :CsiSlice marks: signs and line highlights for the restricted slice and its criterion,
  -- and (static = true) for the lines only in the plain static slice.
  slice = {
    signs = true,
    sign_text = { slice = '◆', static = '◇', criterion = '▶' },
    sign_priority = 6, -- above the line-state signs (5): a slice line shows the slice sign
    line_highlights = true,
    highlight_priority = 95, -- above the line-state highlights (90)
    static = true,
  },
  codelens = true,
  inlay_hints = true, -- Neovim >= 0.10
  -- Jump to the crash frame after opening a crash, to a frame when it is selected, to the
  -- current path step when stepping.
  jump = true,
  capabilities = nil,
  on_attach = nil,
}

M.values = nil

function M.set(opts)
  local from_g = type(vim.g.csi) == 'table' and vim.g.csi or {}
  M.values = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), from_g, opts or {})
  return M.values
end

function M.get()
  return M.values or M.set()
end

function M.cmd()
  local v = M.get()
  local c = v.cmd
  if type(c) == 'table' then
    return c
  end
  return { c or v.server }
end

return M
