-- :CsiCrashes against the real server on a real crash store (made by run.sh with
-- scripts/crash-store-fixture.sh: calc of the triage corpus built with csi-cc, four real
-- cores of three bugs, four passing runs, `csi triage --store --passing`): the buckets and
-- their crashes in the scratch buffer, <CR> on a bucket marks its lines in calc.c (must in all
-- / never in any with the line-state signs and highlights, suspicious lines as virtual text),
-- <CR> on a crash opens it. Skipped without the store, except under CI (then it fails).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local test, eq, wait = H.test, H.eq, H.wait

local dir = os.getenv('CSI_STORE_DIR')
if not dir or vim.fn.filereadable(dir .. '/crashes.db') ~= 1 then
  local why = 'no crash store fixture (CSI_STORE_DIR; run.sh makes it with scripts/crash-store-fixture.sh)'
  if os.getenv('CI') then
    H.test(':CsiCrashes against a real store', function()
      error(why)
    end)
  else
    H.skip(':CsiCrashes against a real store', why)
  end
  H.finish()
  return
end

local db = dir .. '/crashes.db'
local exe = dir .. '/bin/calc'
local calc = H.root .. '/bench/triage/src/calc.c'
local DIV = 'SIGFPE in divide | apply | eval | main'

local function line_of(text) -- 0-based
  for i, l in ipairs(vim.fn.readfile(calc)) do
    if l:find(text, 1, true) then
      return i - 1
    end
  end
  error(text .. ' not in calc.c')
end
local DIVIDE = line_of('return a / b;')
local MODULO = line_of('long r = a % b;')

local csi = H.load_plugin({ crash_store = db, root_dir = H.root })
local crashes = require('csi.crashes')

local function press_enter_on(pattern)
  local buf = crashes.bufnr
  local rows = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i, l in ipairs(rows) do
    if l:find(pattern, 1, true) then
      vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
      return i
    end
  end
  error(('%q not in the crashes buffer:\n%s'):format(pattern, table.concat(rows, '\n')))
end

local function calc_buf()
  local b = vim.fn.bufnr(calc)
  return b > 0 and vim.api.nvim_buf_is_loaded(b) and b or nil
end

test(':CsiCrashes lists the buckets by count, each with its crashes', function()
  vim.cmd('CsiCrashes')
  local buf = wait(function()
    return crashes.bufnr and vim.api.nvim_buf_is_valid(crashes.bufnr) and #crashes.items > 0 and crashes.bufnr
  end, 'the crashes buffer', 15000)
  eq(vim.bo[buf].filetype, 'csi_crashes')
  eq(vim.api.nvim_buf_get_name(buf):sub(-#crashes.buf_name), crashes.buf_name)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  H.contains(text, ('CSI crashes — %s: 3 buckets, 4 crashes'):format(db))
  H.contains(text, '2 × ' .. DIV .. '   calc   ')
  H.contains(text, '◆ 4 passing runs')
  H.contains(text, ('sites: ./src/calc.c:%d ×2'):format(DIVIDE + 1))
  -- The division bucket's two crashes, under it.
  local kinds = {}
  for i = 1, vim.api.nvim_buf_line_count(buf) do
    local it = crashes.items[i]
    if it and it.kind == 'crash' and it.bucket.signature == DIV then
      table.insert(kinds, vim.fn.fnamemodify(it.crash.core, ':h:t'))
      eq(it.crash.executable, exe)
    end
  end
  table.sort(kinds)
  eq(kinds, { '0', '1' }, 'the crashes of the division bucket')
  H.contains(text, '…/div/0/core')
  -- The first bucket is the biggest one.
  local first
  for i = 1, vim.api.nvim_buf_line_count(buf) do
    if crashes.items[i] then
      first = crashes.items[i].bucket.signature
      break
    end
  end
  eq(first, DIV)
end)

test('<CR> on a bucket marks its lines in calc.c: must in all, never in any, suspicious', function()
  press_enter_on('2 × ' .. DIV)
  local b = wait(function()
    local b = calc_buf()
    return b and crashes.marked[b] and b
  end, 'calc.c marked', 10000)
  eq(vim.api.nvim_get_current_buf(), b, 'calc.c shown')
  local r = crashes.shown
  eq(r.signature, DIV)
  local f = r.files[1]
  eq(#r.files, 1)
  eq(f.uri, vim.uri_from_fname(calc))
  local signs = H.signs(b)
  eq(signs[DIVIDE + 1], 'CsiMust', 'the division ran in every crash')
  eq(signs[MODULO + 1], 'CsiNever', 'the modulo ran in none')
  eq(H.lines_with(signs, 'CsiMust', 1), f.must)
  eq(H.lines_with(signs, 'CsiNever', 1), f.never)
  eq(H.lines_with(signs, 'CsiMay', 1), {})
  local hl = H.line_highlights(b)
  eq(hl[DIVIDE], 'CsiMust')
  eq(hl[MODULO], 'CsiNever')
  -- Suspicious lines: virtual text with rank and Ochiai interval, the division among the top 5.
  local marks = vim.api.nvim_buf_get_extmarks(b, crashes.ns, 0, -1, { details = true })
  eq(#marks, #f.suspicious)
  local at = {}
  for _, m in ipairs(marks) do
    at[m[2]] = m[4].virt_text[1][1]
    eq(m[4].virt_text[1][2], 'CsiSuspicious')
  end
  local d = H.truthy(at[DIVIDE], 'a suspicious mark on the division')
  local rank = tonumber(d:match('^◆ #(%d+) Ochiai '))
  H.truthy(rank and rank <= 5, 'the division ranks high: ' .. d)
  H.contains(d, 'ran in 2/2 crashes, 1/4 passing runs')
  -- The cursor is on the most suspicious line.
  local top = f.suspicious[1]
  for _, s in ipairs(f.suspicious) do
    if s.rank < top.rank then
      top = s
    end
  end
  eq(vim.api.nvim_win_get_cursor(0)[1], top.line + 1, 'cursor on the top suspicious line')
  H.contains(H.messages[#H.messages], 'suspicious lines against 4 passing runs')
end)

test('<CR> on a crash opens it (csi/openCrash); the bucket marks go', function()
  -- Wait for this refresh to finish: the buffer is already shown from the tests before, and a
  -- refresh landing after the crash opened would focus its window again (seen under CI load).
  local refreshed = false
  crashes.open({
    on_done = function()
      refreshed = true
    end,
  })
  wait(function()
    return refreshed and vim.fn.bufwinid(crashes.bufnr) ~= -1
  end, 'the crashes buffer refreshed and shown')
  press_enter_on('…/div/1/core')
  local st = wait(function()
    return csi.state.stack
  end, 'the crash opened', 15000)
  eq(st.signal.name, 'SIGFPE')
  eq(st.threads[1].frames[1]['function'], 'divide')
  eq(csi.state.crash, { executable = exe, core = dir .. '/cores/div/1/core' })
  eq(crashes.shown, nil)
  local b = calc_buf()
  eq(#vim.api.nvim_buf_get_extmarks(b, crashes.ns, 0, -1, {}), 0, 'no suspicious marks left')
  eq(vim.api.nvim_get_current_buf(), b, 'at the crash line')
  eq(vim.api.nvim_win_get_cursor(0)[1], DIVIDE + 1)
end)

test('the buffer says why when there is no store', function()
  local text = crashes.render({ store = vim.NIL, message = 'no crash store is set: set `crashStore`', buckets = {} })
  eq(text, { 'CSI crashes: no crash store is set: set `crashStore`' })
  eq(crashes.ochiai({ 0.8164966, 1 }), '0.816–1')
  eq(crashes.ochiai({ 0.5, 0.5 }), '0.5')
  eq(crashes.short('/a/b/c/d/core'), '…/c/d/core')
end)

test(':help for :CsiCrashes', function()
  H.check_help({ ':CsiCrashes', 'csi-crashes' })
end)

H.finish()
