-- Deterministic Lua workload for the crash harness (allocates a few thousand times, < 0.1 s):
-- tables, strings, closures, string library, sorting, coroutines, metatables, pcall.
local words = {}
for i = 1, 400 do
  words[#words + 1] = string.format("w%03d_%s", i % 97, string.rep(string.char(97 + i % 26), i % 7 + 1))
end
local counts = {}
for _, w in ipairs(words) do
  local key = w:gsub("_%a+$", "")
  counts[key] = (counts[key] or 0) + 1
end
local keys = {}
for k in pairs(counts) do keys[#keys + 1] = k end
table.sort(keys, function(a, b)
  if counts[a] ~= counts[b] then return counts[a] > counts[b] end
  return a < b
end)

local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({x = a.x + b.x, y = a.y + b.y}, Vec) end
local function vec(x, y) return setmetatable({x = x, y = y}, Vec) end
local acc = vec(0, 0)
for i = 1, 300 do acc = acc + vec(i, -i * 2) end

local gen = coroutine.wrap(function()
  for i = 1, 50 do coroutine.yield(("%d:%s"):format(i, keys[i % #keys + 1])) end
end)
local parts = {}
for _ = 1, 50 do parts[#parts + 1] = gen() end

local ok, err = pcall(function() error({code = 7}) end)
local s = table.concat(parts, ","):upper()
local n = 0
for a, b in s:gmatch("(%d+):(W%d+)") do n = n + #a + #b end
print(#keys, keys[1], acc.x, acc.y, ok, err.code, #s, n)
