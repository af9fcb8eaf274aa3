-- csi-lsp in Neovim >= 0.11 without the plugin: plain vim.lsp.config.
-- Gets code lenses, inlay hints, hover and never-executed lines faded (hint diagnostics with
-- the Unnecessary tag). Signs/line colours, the frame list and stepping need the plugin
-- (editors/nvim), which handles the custom csi/lineStates notification.
vim.lsp.config('csi', {
  cmd = { 'csi-lsp' }, -- or the full path of target/release/csi-lsp
  filetypes = { 'c', 'cpp' },
  root_markers = { '.csi.toml', '.git' },
  -- Open a crash at start-up (or put executable/core in .csi.toml at the workspace root):
  -- init_options = { executable = 'build/app', core = 'core' },
})
vim.lsp.enable('csi')

vim.api.nvim_create_autocmd('LspAttach', {
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if not client or client.name ~= 'csi' then
      return
    end
    vim.lsp.inlay_hint.enable(true, { bufnr = args.buf })
    -- Lenses (`▶ frame #1 …` selects a frame, `◀ step back`): run with vim.lsp.codelens.run().
    vim.lsp.codelens.refresh({ bufnr = args.buf })
    vim.api.nvim_create_autocmd({ 'BufEnter', 'CursorHold', 'InsertLeave' }, {
      buffer = args.buf,
      callback = function()
        vim.lsp.codelens.refresh({ bufnr = args.buf })
      end,
    })
  end,
})

-- The custom requests are also workspace commands (docs/protocol.md).
local function csi_command(command, arg)
  local client = vim.lsp.get_clients({ name = 'csi' })[1]
  if not client then
    vim.notify('csi-lsp is not running (open a C file first)', vim.log.levels.WARN)
    return
  end
  client:exec_cmd({ title = command, command = command, arguments = { arg } })
end

vim.api.nvim_create_user_command('CsiOpenCrash', function(o)
  csi_command('csi.openCrash', {
    executable = vim.fn.fnamemodify(o.fargs[1], ':p'),
    core = vim.fn.fnamemodify(o.fargs[2], ':p'),
  })
end, { nargs = 2, complete = 'file' })

vim.api.nvim_create_user_command('CsiSelect', function(o)
  csi_command('csi.selectFrame', { thread = 0, frame = tonumber(o.fargs[1]) })
end, { nargs = 1 })

vim.api.nvim_create_user_command('CsiClear', function()
  csi_command('csi.clear', {})
end, { nargs = 0 })
