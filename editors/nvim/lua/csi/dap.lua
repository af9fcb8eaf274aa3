-- nvim-dap integration: the `csi` adapter (csi-dap, post-mortem debugging of a core dump:
-- threads, frames, variables, watches, the REPL, stepping back through the recorded path), a
-- launch configuration for C and C++, and the line states following the frame nvim-dap shows.
local M = {}

local function is_null(x)
  return x == nil or x == vim.NIL
end

--- Registers the adapter and configurations with nvim-dap. opts.command: the csi-dap binary
--- (default `csi-dap` on $PATH); opts.filetypes (default { 'c', 'cpp' }). Returns false and a
--- reason when nvim-dap is not installed.
function M.setup(opts)
  opts = opts or {}
  local ok, dap = pcall(require, 'dap')
  if not ok then
    return false, 'nvim-dap is not installed'
  end
  dap.adapters.csi = { type = 'executable', command = opts.command or 'csi-dap', args = {} }
  local launch = {
    type = 'csi',
    request = 'launch',
    name = 'CSI: debug a core dump',
    program = function()
      return vim.fn.input('Crashed executable: ', vim.fn.getcwd() .. '/', 'file')
    end,
    coreFile = function()
      return vim.fn.input('Core dump: ', vim.fn.getcwd() .. '/core', 'file')
    end,
    cwd = '${workspaceFolder}',
  }
  for _, ft in ipairs(opts.filetypes or { 'c', 'cpp' }) do
    local list = dap.configurations[ft] or {}
    -- setup() twice keeps one entry.
    for i = #list, 1, -1 do
      if list[i].type == 'csi' then
        table.remove(list, i)
      end
    end
    table.insert(list, launch)
    dap.configurations[ft] = list
  end
  -- nvim-dap asks for a frame's scopes whenever it makes the frame current (after a stop, on
  -- :lua require('dap').up() / down(), from the frames widget): the line states follow.
  dap.listeners.after.scopes['csi'] = function(session, err, _, request)
    if err or not session or not session.config or session.config.type ~= 'csi' or not request then
      return
    end
    session:request('csiPosition', { frameId = request.frameId }, function(e, pos)
      if not e and type(pos) == 'table' then
        M.follow(pos)
      end
    end)
  end
  return true
end

--- Shows a debugger position ({thread, frame, inline, step, program, core}) with the language server:
--- opens the crash if another one is open, selects the frame, moves to the path step.
function M.follow(pos, on_done)
  local csi = require('csi')
  local function to_step()
    if is_null(pos.step) then
      if on_done then
        on_done()
      end
      return
    end
    local steps = csi.state.path and not is_null(csi.state.path.steps) and #csi.state.path.steps or 0
    local delta = pos.step - math.max(steps - 1, 0)
    if delta == 0 then
      if on_done then
        on_done()
      end
      return
    end
    csi.step(delta, { jump = false, on_done = on_done })
  end
  local function select()
    -- A call inlined into the frame: its own lines and path trace (the debugger has no step).
    local inline = type(pos.inline) == 'number' and pos.inline or nil
    csi.select(pos.thread, pos.frame, { jump = false, on_done = to_step, inline = inline })
  end
  local open = csi.state.crash
  if not csi.state.stack or not open or open.executable ~= pos.program or open.core ~= pos.core then
    csi.open_crash(pos.program, pos.core, { jump = false, on_done = select })
  else
    select()
  end
end

return M
