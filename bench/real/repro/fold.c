#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const char *l, const char *r, size_t ll, size_t lr) {
  int t = strcmp(l, r);
  if (t != 0)
    return t;
  if (ll == lr)
    return (ll == 0) ? 0 : 1;   /* line 10: folded away in less(), kept in lesseq() */
  return -1;
}

__attribute__((noinline)) int less(const char *a, const char *b) {
  return cmp(a, b, strlen(a), strlen(b)) < 0;
}

__attribute__((noinline)) int lesseq(const char *a, const char *b) {
  return cmp(a, b, strlen(a), strlen(b)) <= 0;
}

int main(int argc, char **argv) {
  int n = less(argv[0], argv[0]);          /* equal strings: line 10 runs */
  if (argc > 5) n += lesseq(argv[0], argv[1]);
  printf("%d\n", n);
  int *volatile p = NULL;
  return *p;                                /* crash */
}
/* Minimal reproduction of bench/real/FINDINGS.md 1: at -O2 csi says "never" for line 10, which
 * runs (in the copy of cmp() inlined into less(), where "(ll == 0) ? 0 : 1" is folded away). */
