-- The stack (csi/stack) as a quickfix list: a header entry per thread, then its frames.
local M = {}

M.title = 'CSI stack'
-- Quickfix index (1-based) → {thread, frame, inline}, for the list set last (id M.qf_id).
M.items = {}
M.qf_id = nil

local function is_null(x)
  return x == nil or x == vim.NIL
end

-- The quickfix entry of a frame (or inlined call) `f`: `text`, marked when `selected`, at the
-- frame's position when it has one.
local function entry(text, f, selected)
  local e = { text = selected and (text .. '  ◀ selected') or text }
  if not is_null(f.uri) and not is_null(f.line) then
    e.filename = vim.uri_to_fname(f.uri)
    e.lnum = f.line + 1
    e.col = is_null(f.column) and 0 or f.column + 1
  else
    e.valid = 0
  end
  return e
end

function M.entries(st)
  local qf, map = {}, {}
  local sel = st.selected or {}
  local sig = st.signal
  for _, t in ipairs(is_null(st.threads) and {} or st.threads) do
    local head = ('thread %d (tid %s)%s · %d frames'):format(t.index + 1, tostring(t.tid),
      t.crashed and (' ⚡ ' .. (is_null(sig) and 'crashed' or (sig.name or 'crashed'))) or '', t.frameCount or #t.frames)
    table.insert(qf, { text = head, valid = 0 })
    table.insert(map, false)
    local omitted = not is_null(t.omitted) and t.omitted or nil
    for _, f in ipairs(t.frames or {}) do
      if omitted and f.index == omitted.to then
        table.insert(qf, { text = ('  … frames #%d–#%d omitted'):format(omitted.from, omitted.to - 1), valid = 0 })
        table.insert(map, false)
      end
      -- The calls inlined at the frame's pc come first, innermost first, as a debugger's
      -- call stack lists them; each is selected on its own (csi/selectFrame's inline).
      for k, c in ipairs(is_null(f.inlined) and {} or f.inlined) do
        local text = ('#%d %s() [inlined]'):format(f.index, is_null(c['function']) and '??' or c['function'])
        if c.analysed and not is_null(c.pathSteps) then
          text = text .. (' · %d path steps'):format(c.pathSteps)
        end
        local selected = sel.thread == t.index and sel.frame == f.index and sel.inline == k - 1
        table.insert(qf, entry(text, c, selected))
        table.insert(map, { thread = t.index, frame = f.index, inline = k - 1 })
      end
      local name = is_null(f['function']) and '??' or f['function']
      local text = ('#%d %s()'):format(f.index, name)
      if is_null(f.file) then
        text = text .. ('  %s %s'):format(is_null(f.pc) and '' or f.pc, is_null(f.module) and '' or vim.fn.fnamemodify(f.module, ':t'))
      else
        if f.analysed and not is_null(f.pathSteps) then
          text = text .. (' · %d path steps'):format(f.pathSteps)
        elseif not f.analysed then
          text = text .. ' · no analysis'
        end
      end
      local selected = sel.thread == t.index and sel.frame == f.index and is_null(sel.inline)
      table.insert(qf, entry(text, f, selected))
      table.insert(map, { thread = t.index, frame = f.index })
    end
  end
  return qf, map
end

function M.set_qflist(st)
  local qf, map = M.entries(st)
  local title = M.title .. (is_null(st.title) and '' or (': ' .. st.title))
  vim.fn.setqflist({}, ' ', { title = title, items = qf })
  M.qf_id = vim.fn.getqflist({ id = 0 }).id
  M.items = map
end

function M.clear_qflist()
  if M.qf_id and vim.fn.getqflist({ id = 0 }).id == M.qf_id then
    vim.fn.setqflist({}, 'r', { title = M.title .. ' (closed)', items = {} })
  end
  M.items, M.qf_id = {}, nil
end

--- The {thread, frame, inline} of quickfix entry idx (1-based) if the current list is ours.
function M.item(idx)
  if not M.qf_id or vim.fn.getqflist({ id = 0 }).id ~= M.qf_id then
    return nil
  end
  return M.items[idx] or nil
end

--- Chooses entry idx of the CSI quickfix list: jumps to it and selects the frame.
function M.choose(idx)
  local it = M.item(idx)
  if not it then
    return false
  end
  local e = vim.fn.getqflist()[idx]
  if e and e.valid == 1 then
    pcall(vim.cmd, 'cc ' .. idx)
  end
  require('csi').select(it.thread, it.frame, { jump = false, inline = it.inline })
  return true
end

--- <CR> in the quickfix window selects the frame under the cursor (other lists: default <CR>).
function M.map_quickfix(bufnr)
  if vim.b[bufnr].csi_mapped then
    return
  end
  vim.b[bufnr].csi_mapped = true
  vim.keymap.set('n', '<CR>', function()
    local idx = vim.fn.line('.')
    if not M.choose(idx) then
      vim.cmd('execute "normal! \\<CR>"')
    end
  end, { buffer = bufnr, desc = 'CSI: select this frame' })
end

return M
