-- CPU-heavy workload for the overhead benchmark: a mix of Lua calls, table work, string
-- building, closures, metatables and sorting. `lua heavy.lua [scale]` (default 70 ≈ 2.3 s plain; scale 2 is
-- for instruction counting under callgrind). Prints a checksum; `lua heavy.lua scale time` also
-- writes each round's CPU time (seconds) to stderr, one per line.
local scale = tonumber(arg and arg[1]) or 70
local timing = arg and arg[2] == "time"
local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local Point = {}
Point.__index = Point
function Point.new(x, y) return setmetatable({x = x, y = y}, Point) end
function Point:add(o) return Point.new(self.x + o.x, self.y + o.y) end
function Point:norm2() return self.x * self.x + self.y * self.y end
local acc = 0
for r = 1, scale do
  local c0 = os.clock()
  acc = acc + fib(22)
  local t = {}
  for i = 1, 40000 do t[i] = (i * 7919 + r) % 100003 end
  table.sort(t)
  acc = acc + t[1] + t[#t]
  local parts = {}
  for i = 1, 8000 do parts[#parts + 1] = string.format("%d:%s", i, tostring(t[i])) end
  local s = table.concat(parts, ",")
  acc = acc + #s
  local n = 0
  for w in s:gmatch("%d+") do n = n + #w end
  acc = acc + n + #s:gsub("1", "one")
  local p = Point.new(0, 0)
  for i = 1, 30000 do p = p:add(Point.new(i % 7, -(i % 5))) end
  acc = acc + p:norm2() % 1000003
  local counts = {}
  for i = 1, 30000 do local k = "k" .. (i % 97); counts[k] = (counts[k] or 0) + i end
  for k, v in pairs(counts) do acc = acc + #k + v % 13 end
  local fs = {}
  for i = 1, 5000 do fs[i] = function(x) return x + i end end
  for i = 1, 5000 do acc = acc + fs[i](i) % 3 end
  if timing then io.stderr:write(string.format("%.6f\n", os.clock() - c0)) end
end
print(acc)
