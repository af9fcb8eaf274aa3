/* Threads running the same small functions (bench/suite/threads.sh): each of THREADS threads
 * calls `step` and `leaf` N times. With coverage, every call sets bytes of the same global
 * arrays; plain stores make the threads take those cache lines from one another. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int step(int x, int k) {
  if (x & 1)
    x = 3 * x + k;
  else
    x = x / 2 + k;
  if (x > 1000000)
    x -= 999;
  return x;
}

__attribute__((noinline)) int leaf(int x) { return x ^ (x >> 3); }

static long n;

static void *work(void *arg) {
  int x = (int)(long)arg + 7;
  long s = 0;
  for (long i = 0; i < n; i++) {
    x = step(x, (int)i & 7);
    s += leaf(x);
  }
  return (void *)s;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  n = argc > 2 ? atol(argv[2]) : 100000000;
  if (threads < 1 || threads > 64) return 2;
  pthread_t th[64];
  long s = 0;
  for (int i = 0; i < threads; i++) pthread_create(&th[i], 0, work, (void *)(long)i);
  for (int i = 0; i < threads; i++) {
    void *r;
    pthread_join(th[i], &r);
    s += (long)r;
  }
  printf("%ld\n", s);
  return 0;
}
