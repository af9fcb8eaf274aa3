-- CSI: crash view for Neovim (needs 0.7+). See :help csi.
if vim.g.loaded_csi or vim.fn.has('nvim-0.7') == 0 then
  return
end
vim.g.loaded_csi = true

local group = vim.api.nvim_create_augroup('csi', { clear = true })

vim.api.nvim_create_autocmd('FileType', {
  group = group,
  callback = function(a)
    require('csi').maybe_attach(a.buf)
  end,
})

vim.api.nvim_create_autocmd('ColorScheme', {
  group = group,
  callback = function()
    require('csi.lines').define()
    require('csi.slice').define()
    require('csi.crashes').define()
  end,
})

-- A buffer loaded while a slice is shown gets its marks.
vim.api.nvim_create_autocmd('BufReadPost', {
  group = group,
  callback = function(a)
    local slice = require('csi.slice')
    if slice.result then
      slice.apply(a.buf)
    end
  end,
})

-- <CR> in the quickfix window selects a frame when the list is the CSI stack.
vim.api.nvim_create_autocmd('FileType', {
  group = group,
  pattern = 'qf',
  callback = function(a)
    require('csi.frames').map_quickfix(a.buf)
  end,
})

require('csi.lines').define()
require('csi.slice').define()

local cmd = vim.api.nvim_create_user_command

cmd('CsiOpenCrash', function(o)
  require('csi').open_crash(o.fargs[1], o.fargs[2])
end, { nargs = '*', complete = 'file', desc = 'CSI: open a crash (executable, core)' })

cmd('CsiFrames', function()
  require('csi').frames()
end, { nargs = 0, desc = 'CSI: threads and frames in the quickfix list' })

cmd('CsiSelect', function(o)
  local csi = require('csi')
  local a = o.fargs
  local thread, frame
  if #a >= 2 then
    thread, frame = tonumber(a[1]), tonumber(a[2])
    thread = thread and thread - 1
  else
    frame = tonumber(a[1])
    thread = (csi.state.selected or {}).thread or 0
  end
  if not thread or not frame then
    vim.notify('CSI: usage :CsiSelect [thread] {frame}  (thread as shown, 1-based; frame #)', vim.log.levels.ERROR)
    return
  end
  csi.select(thread, frame)
end, { nargs = '*', desc = 'CSI: select frame #N (of thread T)' })

cmd('CsiStep', function(o)
  local dir = o.fargs[1] or 'next'
  local n = tonumber(o.fargs[2]) or (o.count > 0 and o.count) or 1
  if dir == 'prev' or dir == 'back' then
    n = -n
  elseif dir ~= 'next' then
    vim.notify('CSI: usage :CsiStep next|prev [count]', vim.log.levels.ERROR)
    return
  end
  require('csi').step(n)
end, {
  nargs = '*',
  count = 0,
  complete = function()
    return { 'next', 'prev' }
  end,
  desc = 'CSI: step through the selected frame\'s path trace',
})

cmd('CsiQuery', function(o)
  require('csi').query(o.fargs[1], o.fargs[2])
end, {
  nargs = '*',
  complete = function()
    return { 'mayRun', 'mayNotRun', 'mayRunBefore' }
  end,
  desc = 'CSI: may the cursor line have run before the crash?',
})

cmd('CsiCrashes', function()
  require('csi').crashes()
end, { nargs = 0, desc = 'CSI: the crash store\'s buckets and crashes (<CR>: a bucket\'s lines, open a crash)' })

cmd('CsiClear', function()
  require('csi').clear()
end, { nargs = 0, desc = 'CSI: close the crash' })

-- Identifiers on the cursor line, for :CsiSlice's completion.
local function line_words(arglead)
  local words, seen = {}, {}
  local keywords = { ['if'] = true, ['for'] = true, ['while'] = true, ['return'] = true, ['int'] = true,
    ['char'] = true, ['const'] = true, ['struct'] = true, ['else'] = true, ['sizeof'] = true }
  for w in vim.api.nvim_get_current_line():gmatch('[%a_][%w_]*') do
    if not seen[w] and not keywords[w] and w:sub(1, #arglead) == arglead then
      seen[w] = true
      table.insert(words, w)
    end
  end
  return words
end

cmd('CsiSlice', function(o)
  require('csi').slice({ crash = o.bang, variables = o.fargs })
end, {
  nargs = '*',
  bang = true,
  complete = line_words,
  desc = 'CSI: slice from the cursor line (! from the crash point) for [variables]',
})

cmd('CsiSliceClear', function()
  require('csi').slice_clear()
end, { nargs = 0, desc = 'CSI: hide the slice' })

cmd('CsiLegend', function()
  local chunks = {}
  for _, line in ipairs(require('csi.lines').legend()) do
    for _, c in ipairs(line) do
      table.insert(chunks, c)
    end
    table.insert(chunks, { '\n' })
  end
  chunks[#chunks] = nil -- no newline after the last line
  vim.api.nvim_echo(chunks, false, {})
end, { nargs = 0, desc = 'CSI: what the must / may / never signs and highlights mean' })
