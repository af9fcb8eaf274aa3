-- A spread of Lua features; output must be identical across builds.
local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
print("fib", fib(24))
local t = {}
for i = 1, 2000 do t[i] = (i * 7919) % 1009 end
table.sort(t)
print("sort", t[1], t[1000], t[2000])
local words = {}
for w in ("the quick brown fox jumps over the lazy dog the end"):gmatch("%a+") do
  words[w] = (words[w] or 0) + 1
end
local keys = {} for k in pairs(words) do keys[#keys+1] = k end table.sort(keys)
for _, k in ipairs(keys) do io.write(k, "=", words[k], " ") end print()
print("fmt", string.format("%5.2f|%x|%q|%s", math.pi, 255, "a\nb", 1e100))
local co = coroutine.wrap(function(a) for i = 1, 3 do a = coroutine.yield(a + i) end return "done" end)
print("co", co(10), co(20), co(30), co(40))
print("pcall", select("#", pcall(error, {code = 42})), (select(2, pcall(error, {code = 42}))).code)
print("err", select(2, pcall(function() local x = nil; return x.y end)))
local mt = setmetatable({}, {__index = function(_, k) return k * 2 end, __call = function(_, x) return x + 1 end})
print("meta", mt[21], mt(41))
local s = {} for i = 1, 100 do s[#s+1] = string.rep("x", i % 7) .. i end
print("concat", #table.concat(s, ","))
print("utf8", utf8.len("héllo wörld"), utf8.char(72, 228, 8364))
print("int", 7 // 2, 7 % -3, 2^10, math.maxinteger + 1 == math.mininteger, 1 << 62)
collectgarbage() print("gc", collectgarbage("count") > 0)
local ok, msg = load("return 1 +")
print("load", ok, msg ~= nil)
print("goto") do local i = 1 ::top:: if i < 3 then io.write(i, " ") i = i + 1 goto top end print() end
os.exit(3)
