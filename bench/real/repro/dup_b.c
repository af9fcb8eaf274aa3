#include "dup.h"
int other(int x) { return twice(x) + 1; }
