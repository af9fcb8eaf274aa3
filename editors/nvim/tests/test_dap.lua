-- nvim-dap integration against the real csi-dap and csi-lsp: require('csi.dap').setup()
-- registers the adapter and configurations in nvim-dap's tables, and when nvim-dap makes a
-- frame current (its `scopes` listener) the plugin asks the adapter where that frame is
-- (csiPosition) and shows the same frame / path step with the language server. nvim-dap is
-- not packaged for Debian: its tables and session are stood in for here, speaking DAP to the
-- real adapter over a pipe.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq, wait = H.test, H.eq, H.wait

local csi = H.load_plugin()
local adapter = os.getenv('CSI_DAP')

-- nvim-dap's public tables, as `require('dap')` has them.
local listeners = { after = {}, before = {} }
for _, t in pairs(listeners) do
  setmetatable(t, { __index = function(tbl, k) rawset(tbl, k, {}); return rawget(tbl, k) end })
end
package.loaded['dap'] = { adapters = {}, configurations = { c = { { type = 'cppdbg', name = 'other' } } }, listeners = listeners }
local dap = require('dap')

--- A DAP client on the adapter's stdio: request(command, args, cb(err, body)).
local function dap_client(cmd)
  local uv = vim.loop
  local stdin, stdout = uv.new_pipe(false), uv.new_pipe(false)
  local handle = uv.spawn(cmd, { stdio = { stdin, stdout, nil } }, function() end)
  assert(handle, 'csi-dap starts: ' .. cmd)
  local buf, seq, waiting = '', 0, {}
  local c = { events = {} }
  stdout:read_start(function(_, data)
    if not data then
      return
    end
    buf = buf .. data
    while true do
      local hs, he = buf:find('\r\n\r\n', 1, true)
      if not hs then
        break
      end
      local len = tonumber(buf:sub(1, hs - 1):match('Content%-Length: (%d+)'))
      if #buf < he + len then
        break
      end
      local body = buf:sub(he + 1, he + len)
      buf = buf:sub(he + len + 1)
      vim.schedule(function()
        local m = vim.json.decode(body)
        if m.type == 'response' and waiting[m.request_seq] then
          local cb = waiting[m.request_seq]
          waiting[m.request_seq] = nil
          cb(not m.success and m.message or nil, m.body)
        elseif m.type == 'event' then
          table.insert(c.events, m)
        end
      end)
    end
  end)
  function c.request(command, args, cb)
    seq = seq + 1
    waiting[seq] = cb or function() end
    local body = vim.json.encode({ seq = seq, type = 'request', command = command, arguments = args })
    stdin:write(('Content-Length: %d\r\n\r\n%s'):format(#body, body))
  end
  --- Synchronous request for the test's steps.
  function c.call(command, args)
    local done, res, err = false, nil, nil
    c.request(command, args, function(e, b)
      done, res, err = true, b, e
    end)
    wait(function()
      return done
    end, command, 10000)
    assert(not err, command .. ': ' .. tostring(err))
    return res
  end
  function c.close()
    c.request('disconnect', vim.empty_dict())
    handle:close()
  end
  return c
end

local client
local session

test('setup registers the csi adapter and a launch configuration for C and C++', function()
  local ok = require('csi.dap').setup({ command = adapter })
  eq(ok, true, 'setup with nvim-dap present')
  eq(dap.adapters.csi.type, 'executable', 'adapter type')
  eq(dap.adapters.csi.command, adapter, 'adapter command')
  eq(#dap.configurations.c, 2, 'the user\'s configuration is kept, ours added')
  eq(dap.configurations.c[2].type, 'csi', 'c configuration')
  eq(dap.configurations.cpp[1].request, 'launch', 'cpp configuration')
  require('csi.dap').setup({ command = adapter })
  eq(#dap.configurations.c, 2, 'setup twice keeps one entry')
  eq(type(dap.listeners.after.scopes.csi), 'function', 'follows the current frame')
end)

test('the real adapter launches on the crash (the session nvim-dap would run)', function()
  client = dap_client(adapter)
  local caps = client.call('initialize', { adapterID = 'csi', clientID = 'neovim' })
  eq(caps.supportsStepBack, true, 'supportsStepBack')
  client.call('launch', { type = 'csi', request = 'launch', program = H.exe, coreFile = H.core })
  client.call('configurationDone', vim.empty_dict())
  session = {
    config = { type = 'csi' },
    request = function(_, command, args, cb)
      client.request(command, args, cb)
    end,
  }
end)

local function frames()
  return client.call('stackTrace', { threadId = 1 }).stackFrames
end

--- What nvim-dap does when it makes a frame current: asks its scopes, then listeners run.
local function make_current(frame)
  local req = { frameId = frame.id }
  local body = client.call('scopes', req)
  dap.listeners.after.scopes.csi(session, nil, body, req)
end

test('selecting main() in the debugger opens the crash and selects frame #1', function()
  local f = frames()
  eq(f[2].name, 'main', 'frame #1')
  make_current(f[2])
  wait(function()
    return csi.state.selected and csi.state.selected.frame == 1 and csi.state.path
  end, 'frame #1 selected with the language server', 15000)
  eq(csi.state.crash.executable, H.exe, 'the debugged crash is the one opened')
end)

test('stepping back in the debugger moves the path step shown', function()
  client.call('stepBack', { threadId = 1 })
  client.call('stepBack', { threadId = 1 })
  local f = frames()
  eq(f[1].name:match('^charge %[step'), 'charge [step', 'a path step of charge()')
  local step = tonumber(f[1].name:match('step (%d+) of')) - 1
  make_current(f[1])
  wait(function()
    return csi.state.selected.frame == 0 and csi.state.step and csi.state.step.step == step
  end, 'path step ' .. step .. ' of frame #0', 15000)
  eq(csi.state.step.line + 1, f[1].line, 'the same line as the debugger shows')
end)

test('a call inlined into a frame is selected on its own (csiPosition\'s inline)', function()
  -- abort_assert at -O2: main() holds push() inlined at the pc of its frame #5.
  local dir = H.root .. '/fixtures/crashes/abort_assert/realistic-O2'
  local done = false
  require('csi.dap').follow({ thread = 0, frame = 5, inline = 0, step = vim.NIL,
    program = dir .. '/abort_assert', core = dir .. '/core' }, function() done = true end)
  wait(function()
    return done
  end, 'the inlined call selected with the language server', 15000)
  eq(csi.state.selected.inline, 0, 'the selection is the inlined call')
  eq(csi.state.path.inline, 0, 'the server answers for the inlined call')
  eq(csi.state.path.frame, 5, 'in frame #5')
  -- The stack's quickfix list lists the inlined call before its frame, marked selected.
  local qf, map = require('csi.frames').entries(csi.state.stack)
  local at
  for i, e in ipairs(qf) do
    if e.text:find('push() [inlined]', 1, true) then
      at = i
    end
  end
  H.truthy(at, 'push() [inlined] in the list')
  H.contains(qf[at].text, 'selected', 'the inlined call is the selected entry')
  eq(map[at].inline, 0, 'its entry selects inline 0')
  eq(qf[at + 1].text:find('#5 main()', 1, true) ~= nil, true, 'then main()')
end)

test('other debuggers\' sessions are left alone', function()
  local before = vim.deepcopy(csi.state.selected)
  dap.listeners.after.scopes.csi({ config = { type = 'cppdbg' } }, nil, {}, { frameId = 1 })
  vim.wait(200)
  eq(csi.state.selected, before, 'selection unchanged')
  client.close()
end)

H.finish()
