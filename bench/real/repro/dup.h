static inline int twice(int x) { return 2 * x; }
int other(int x);
/* Minimal reproduction of bench/real/FINDINGS.md 2 (with dup_a.c, dup_b.c): csi-cc -O0 emits
 * twice() in both TUs; csi analyze rejects the program with a duplicate node id. */
