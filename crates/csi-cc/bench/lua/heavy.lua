-- CPU-heavy workload for the overhead benchmark.
local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local acc = 0
for r = 1, 3 do
  acc = acc + fib(27)
  local t = {}
  for i = 1, 200000 do t[i] = (i * 7919) % 100003 end
  table.sort(t)
  local parts = {}
  for i = 1, 20000 do parts[#parts + 1] = string.format("%d:%s", i, tostring(t[i])) end
  acc = acc + #table.concat(parts)
end
print(acc)
