#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
static int lookup(lua_State *L) {
  const char *key = luaL_optstring(L, 2, NULL);
  lua_getfield(L, 1, key); /* NULL key: crashes inside the library */
  return 1;
}
int main(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  lua_register(L, "lookup", lookup);
  const char *script = "local t = {a = 1}\n"
                       "local function f(k) return lookup(t, k) end\n"
                       "for i = 1, 3 do print(f('a')) end\n"
                       "print(f())\n";
  if (luaL_dostring(L, script)) printf("error: %s\n", lua_tostring(L, -1));
  return 0;
}
