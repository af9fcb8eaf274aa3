/* LD_PRELOAD shim that crashes a program deterministically deep in its own code: the N-th
 * allocation call (malloc, calloc or realloc, counted together) raises SIGSEGV before
 * allocating, so the innermost frames are raise/the shim and the program's frames lie below.
 *
 *   CRASH_N=N      crash at allocation number N (1-based); unset or 0: never crash
 *   CRASH_COUNT=1  print "crashshim: <count> allocations" to stderr at exit (to choose N and to
 *                  check that a run under valgrind counts the same as a native run), to a copy
 *                  of stderr made at start, so a program that closes its stderr is counted too
 *   CRASH_SIGNAL=S the signal raised (a number; default SIGSEGV): a program that catches
 *                  SIGSEGV to clean up and exit (bzip2) leaves no core for it
 *   CRASH_ON=read  count input calls (read, fread) instead of allocations: a compressor
 *                  allocates its buffers once, up front, but reads inside its compression
 *                  loop, so the N-th read stops it with the loop's frames on the stack
 *
 * Only allocations made once main() has started count (the shim wraps main through
 * __libc_start_main): constructors are where builds differ, e.g. jq's jv_mem_uninit_setup does
 * malloc(1)/free(), which clang removes at -O2 and keeps at -O0, so counting from process start
 * put the -O0 oracle one allocation ahead of every -O2 build.
 *
 * Randomness is fixed (arc4random, getentropy, getrandom): the oracle run must execute what
 * the crashed run executed, and programs seed hash tables from it (jq's jvp_hash_seed_init: a
 * random seed changes which keys collide, so which lines of jvp_object_find_slot run).
 *
 * It calls glibc's __libc_* entry points instead of dlsym(RTLD_NEXT) because dlsym itself
 * allocates. Callgrind (unlike memcheck) does not replace malloc, so the same shim counts the
 * same calls natively and under `valgrind --tool=callgrind`; run.sh checks this per crash.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* Deterministic "randomness": the same bytes in every run, natively and under valgrind. */
static void fixed_bytes(void *buf, size_t n) { memset(buf, 0x5a, n); }
uint32_t arc4random(void) { return 0x5a5a5a5au; }
void arc4random_buf(void *buf, size_t n) { fixed_bytes(buf, n); }
uint32_t arc4random_uniform(uint32_t upper) { return upper ? 0x5a5a5a5au % upper : 0; }
int getentropy(void *buf, size_t n) {
    fixed_bytes(buf, n);
    return 0;
}
ssize_t getrandom(void *buf, size_t n, unsigned flags) {
    (void)flags;
    fixed_bytes(buf, n);
    return (ssize_t)n;
}

static unsigned long crash_at;
static int count_reads;
static int crash_signal = SIGSEGV;
static unsigned long calls;
static int report_count;
/* Where the count goes: a copy of the stderr the program started with, since programs may close
 * theirs before exit (grep's gnulib close_stdout closes stderr too). */
static int report_fd = 2;
static int in_main;

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
                             void *);
static main_fn real_main;

static int main_wrapper(int argc, char **argv, char **envp) {
    in_main = 1;
    return real_main(argc, argv, envp);
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    real_main = main;
    return real(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((constructor)) static void crashshim_init(void) {
    const char *n = getenv("CRASH_N");
    const char *c = getenv("CRASH_COUNT");
    const char *on = getenv("CRASH_ON");
    crash_at = n ? strtoul(n, NULL, 10) : 0;
    count_reads = on && strcmp(on, "read") == 0;
    const char *sig = getenv("CRASH_SIGNAL");
    if (sig && atoi(sig) > 0) crash_signal = atoi(sig);
    report_count = c && *c == '1';
    if (report_count) {
        int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0) report_fd = fd;
    }
}

__attribute__((destructor)) static void crashshim_fini(void) {
    if (report_count) {
        char buf[64];
        int len = snprintf(buf, sizeof buf, "crashshim: %lu %s\n", calls, count_reads ? "reads" : "allocations");
        if (len > 0) (void)!write(report_fd, buf, (size_t)len);
    }
}

/* noinline so that every counted entry point crashes through the same frame. */
__attribute__((noinline)) static void count_call(void) {
    if (!in_main) return;
    calls++;
    if (crash_at != 0 && calls == crash_at) raise(crash_signal);
}

static void count_allocation(void) {
    if (!count_reads) count_call();
}

/* glibc's own entry points (exported, as the __libc_* allocators are): dlsym would allocate. */
extern ssize_t __read(int, void *, size_t);
extern size_t _IO_fread(void *, size_t, size_t, FILE *);

ssize_t read(int fd, void *buf, size_t n) {
    if (count_reads) count_call();
    return __read(fd, buf, n);
}

size_t fread(void *buf, size_t size, size_t n, FILE *f) {
    if (count_reads) count_call();
    return _IO_fread(buf, size, n, f);
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
