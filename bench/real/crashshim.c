/* LD_PRELOAD shim that crashes a program deterministically deep in its own code: the N-th
 * allocation call (malloc, calloc or realloc, counted together) raises SIGSEGV before
 * allocating, so the innermost frames are raise/the shim and the program's frames lie below.
 *
 *   CRASH_N=N      crash at allocation number N (1-based); unset or 0: never crash
 *   CRASH_COUNT=1  print "crashshim: <count> allocations" to stderr at exit (to choose N and to
 *                  check that a run under valgrind counts the same as a native run)
 *
 * It calls glibc's __libc_* entry points instead of dlsym(RTLD_NEXT) because dlsym itself
 * allocates. Callgrind (unlike memcheck) does not replace malloc, so the same shim counts the
 * same calls natively and under `valgrind --tool=callgrind`; run.sh checks this per crash.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static unsigned long crash_at;
static unsigned long calls;
static int report_count;

__attribute__((constructor)) static void crashshim_init(void) {
    const char *n = getenv("CRASH_N");
    const char *c = getenv("CRASH_COUNT");
    crash_at = n ? strtoul(n, NULL, 10) : 0;
    report_count = c && *c == '1';
}

__attribute__((destructor)) static void crashshim_fini(void) {
    if (report_count) {
        char buf[64];
        int len = snprintf(buf, sizeof buf, "crashshim: %lu allocations\n", calls);
        if (len > 0) (void)!write(2, buf, (size_t)len);
    }
}

/* noinline so that every allocation entry point crashes through the same frame. */
__attribute__((noinline)) static void count_allocation(void) {
    calls++;
    if (crash_at != 0 && calls == crash_at) raise(SIGSEGV);
}

void *malloc(size_t size) {
    count_allocation();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    count_allocation();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    count_allocation();
    return __libc_realloc(p, size);
}
