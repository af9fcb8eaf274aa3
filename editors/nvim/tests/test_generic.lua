-- No plugin: a plain vim.lsp.start_client with csi-lsp (what any Neovim user gets from a
-- generic LSP configuration) still shows never-executed lines as Unnecessary hints, and lenses.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq, wait = H.test, H.eq, H.wait

local bufnr, client

test('the plugin is not loaded', function()
  eq(vim.fn.exists(':CsiOpenCrash'), 0, ':CsiOpenCrash')
  eq(package.loaded['csi'], nil, 'lua module')
end)

test('a plain LSP client starts and attaches', function()
  vim.cmd('edit ' .. vim.fn.fnameescape(H.src))
  bufnr = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start_client({ name = 'plain', cmd = { H.server }, root_dir = H.root })
  H.truthy(id, 'client id')
  H.truthy(vim.lsp.buf_attach_client(bufnr, id), 'attached')
  client = wait(function()
    local c = vim.lsp.get_client_by_id(id)
    return c and c.initialized and c
  end, 'initialized', 10000)
end)

test('csi.openCrash through workspace/executeCommand', function()
  local done
  client.request('workspace/executeCommand', {
    command = 'csi.openCrash',
    arguments = { { executable = H.exe, core = H.core } },
  }, function(err, result)
    done = { err = err, result = result }
  end, bufnr)
  wait(function()
    return done
  end, 'the openCrash response', 15000)
  eq(done.err, nil, 'error')
  eq(done.result.signal.name, 'SIGSEGV', 'signal')
end)

test('never-executed lines arrive as Unnecessary hint diagnostics', function()
  local diags = wait(function()
    local d = vim.diagnostic.get(bufnr)
    return #d > 0 and d
  end, 'diagnostics', 8000)
  local lnums = {}
  for _, d in ipairs(diags) do
    eq(d.severity, vim.diagnostic.severity.HINT, 'severity of line ' .. d.lnum)
    eq(d.source, 'csi', 'source')
    local tags = (d.user_data and d.user_data.lsp and d.user_data.lsp.tags) or {}
    H.truthy(vim.tbl_contains(tags, 1) or (d._tags and d._tags.unnecessary), 'Unnecessary tag on line ' .. d.lnum)
    table.insert(lnums, d.lnum)
  end
  table.sort(lnums)
  -- 0-based: lines 20, 30, 42 and 43 of null_deref.c never ran.
  eq(lnums, { 19, 29, 41, 42 }, 'hint lines')
end)

test('code lenses arrive', function()
  wait(function()
    vim.lsp.codelens.refresh()
    return vim.tbl_contains(H.lens_titles(bufnr), '25: ▶ frame #0 (thread 1) · must 4 · may 1 · never 1')
  end, 'the frame #0 lens', 8000)
end)

test('hover shows the frame locals', function()
  local h = H.hover(bufnr, 30)
  H.contains(h, 'int f = 5', 'hover')
  H.contains(h, 'struct account * a = 0x0', 'hover')
end)

H.finish()
