-- A workspace whose .csi.toml names a crash: setup() starts csi-lsp at once and, when the
-- server says it is opening that crash (`crashAtStart`), the plugin shows it — the crash
-- file opens at the crash line with its signs — without a C file opened by hand (as the VS
-- Code extension does since the issue-20 fix).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq, wait = H.test, H.eq, H.wait

local ws = vim.fn.tempname()
vim.fn.mkdir(ws, 'p')
vim.fn.writefile({
  ('executable = "%s"'):format(H.exe),
  ('core = "%s"'):format(H.core),
  '[[substitute-path]]',
  'from = "./src"',
  ('to = "%s/fixtures/src"'):format(H.root),
}, ws .. '/.csi.toml')
vim.cmd('cd ' .. vim.fn.fnameescape(ws))

local csi

test('setup in a workspace with .csi.toml starts the server without a C buffer', function()
  eq(vim.api.nvim_buf_get_name(0), '', 'no file is open')
  csi = H.load_plugin()
  local client = wait(function()
    local c = require('csi.lsp').clients()[1]
    return c and c.initialized and c
  end, 'the csi client to start', 10000)
  eq(client.config.root_dir, ws, 'workspace root')
end)

test('the crash shows at start: stack, crash file at the crash line, signs', function()
  local st = wait(function()
    return csi.state.stack
  end, 'the stack', 15000)
  eq(st.threads[1].frames[1]['function'], 'charge', 'frame #0')
  wait(function()
    return vim.api.nvim_buf_get_name(0) == H.src
  end, 'the crash file to open', 10000)
  eq(vim.api.nvim_win_get_cursor(0)[1], 31, 'cursor on the crash line')
  local bufnr = vim.api.nvim_get_current_buf()
  wait(function()
    return next(H.signs(bufnr)) ~= nil
  end, 'signs', 10000)
end)

H.finish()
