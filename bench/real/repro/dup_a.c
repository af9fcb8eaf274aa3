#include "dup.h"
int main(int argc, char **argv) {
  int *volatile p = 0;
  return twice(argc) + other(argc) + *p;
}
