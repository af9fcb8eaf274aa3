/* Maps and touches ~1 GiB, then crashes: the core-load benchmark (bench/core-load.sh). */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

struct node { struct node *next; long payload[7]; };

static long walk(struct node *n) {
  long s = 0;
  while (n) { s += n->payload[0]; n = n->next; }
  return s;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
  char *big = malloc(mib << 20);
  if (!big) { perror("malloc"); return 1; }
  memset(big, 0x5a, mib << 20);          /* touched: the kernel must dump it */
  if (argc > 2 && strcmp(argv[2], "random") == 0) {
    /* Incompressible contents (bench/compressed-core-load.sh): xorshift64. */
    unsigned long long x = 88172645463325252ull, *w = (unsigned long long *)big;
    for (size_t k = 0; k < (mib << 20) / 8; k++) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17; w[k] = x;
    }
  }
  struct node *head = NULL;
  for (int i = 0; i < 1000; i++) {
    struct node *n = (struct node *)(big + ((size_t)i << 12));
    n->next = head; n->payload[0] = i; head = n;
  }
  ((struct node *)(big + (999u << 12)))->next = (struct node *)16; /* corrupt the list */
  printf("%ld\n", walk(head));
  return 0;
}
