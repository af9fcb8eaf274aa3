/* Embeds Lua; a C function registered for scripts forgets that lua_tostring can return NULL
 * (bench/lua-slice.sh builds it with csi-cc and slices its crash). */
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

static int name_length(lua_State *L) {
  const char *s = lua_tostring(L, 1); /* NULL for a table */
  lua_pushinteger(L, (lua_Integer)strlen(s));
  return 1;
}

static const char *script =
  "local total = 0\n"
  "for i = 1, 100 do total = total + name_length('item' .. i) end\n"
  "print('total', total)\n"
  "local names = {'a', 'bb', {}, 'dddd'}\n"
  "for _, n in ipairs(names) do total = total + name_length(n) end\n"
  "print('never', total)\n";

int main(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  lua_register(L, "name_length", name_length);
  if (luaL_dostring(L, script) != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_close(L);
  return 0;
}
