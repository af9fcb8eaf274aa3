/* csi-cc's runtime: coverage of runs that do not crash (CSI_COVERAGE_OUT).
 *
 * csi-cc links this file (compiled to bitcode by build.rs) into every instrumented unit; each
 * function and variable is linkonce_odr, hidden and in its own COMDAT, so each linked module
 * (the executable, each shared library) has one copy, with its own view of the `csi_cov`
 * section that holds the module's coverage arrays (`__CC_arr_*`, `__BBC_arr_*`, `__FC_arr_*`).
 *
 * Nothing happens unless the environment variable CSI_COVERAGE_OUT names a directory when the
 * module is loaded. Then the module's whole `csi_cov` section is written to
 * `$CSI_COVERAGE_OUT/<build-id>.<pid>.csicov` when the module is unloaded (normal exit, or
 * dlclose) and whenever the process receives SIGUSR2 (a snapshot; the program keeps running).
 * Nothing runs on the hot path: the probes are unchanged.
 *
 * File format (host byte order, x86-64: little endian), read by csi-dump (`coverage_file`):
 *   "CSICOV02"             8 bytes
 *   u64 section_vaddr      the section's link-time address (runtime address - load bias)
 *   u64 section_size
 *   u32 pid
 *   u32 reason             0 = unloaded (exit), 1 = SIGUSR2 snapshot
 *   u32 build_id_size, u32 path_size
 *   u64 load_bias          the module's load bias in this process
 *   u32 threads            threads in the process when the stack below was taken (0: unknown)
 *   u32 stack_size         return addresses below (0: not taken, as on SIGUSR2)
 *   build id bytes, module path bytes (not terminated)
 *   stack_size u64        the unloading thread's return addresses, innermost first
 *   section bytes
 * ("CSICOV01", written before, is the same without load_bias, threads, stack_size and stack.)
 *
 * Why the stack: the reader derives the coverage of code csi-cc left without a probe from its
 * neighbours' (a `static` helper's from its callers' blocks), which needs every activation in
 * progress when the bytes were taken. At exit those are the frames that called `exit` (none
 * when `main` returned) — when no other thread is left, and the walk is whole and stands at
 * calls only (`__csi_rt_whole_stack_at_calls`). Otherwise stack_size is 0 and the reader
 * treats the activations as unknown.
 *
 * The dump runs in a signal handler, so it uses only async-signal-safe calls (open, write,
 * rename, close, getpid) and no stdio or malloc; everything else is prepared at load time.
 * The file is written under a temporary name and renamed, so a reader never sees half of one.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h> /* rename */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

extern char __start_csi_cov[] __attribute__((weak, visibility("hidden")));
extern char __stop_csi_cov[] __attribute__((weak, visibility("hidden")));

#define CSI_RT_PATH 4096
#define CSI_RT_STACK 512

/* The stack's return addresses are written as they are, as the format's u64s. */
_Static_assert(sizeof(void *) == sizeof(uint64_t), "a 64-bit target");

char __csi_rt_dir[CSI_RT_PATH];
char __csi_rt_module[CSI_RT_PATH];
unsigned char __csi_rt_build_id[64];
uint32_t __csi_rt_build_id_size;
uint64_t __csi_rt_bias;
struct sigaction __csi_rt_previous_usr2;
void *__csi_rt_stack[CSI_RT_STACK];
/* The C library's signal trampoline (x86-64 glibc's `__restore_rt`). */
void *__csi_rt_restorer;

/* Finds this module (the one holding `__start_csi_cov`) among the loaded objects: its load
 * bias, path and GNU build id. */
int __csi_rt_find_module(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t target = (uintptr_t)data;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD && target >= lo && target < lo + p->p_memsz) mine = 1;
  }
  if (!mine) return 0;
  __csi_rt_bias = info->dlpi_addr;
  if (info->dlpi_name && info->dlpi_name[0]) {
    size_t n = strlen(info->dlpi_name);
    if (n >= CSI_RT_PATH) n = CSI_RT_PATH - 1;
    memcpy(__csi_rt_module, info->dlpi_name, n);
    __csi_rt_module[n] = 0;
  } else {
    ssize_t n = readlink("/proc/self/exe", __csi_rt_module, CSI_RT_PATH - 1);
    __csi_rt_module[n > 0 ? n : 0] = 0;
  }
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_NOTE) continue;
    const char *note = (const char *)(info->dlpi_addr + p->p_vaddr);
    const char *end = note + p->p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)note;
      const char *name = note + sizeof(ElfW(Nhdr));
      const char *desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          nh->n_descsz <= sizeof __csi_rt_build_id) {
        memcpy(__csi_rt_build_id, desc, nh->n_descsz);
        __csi_rt_build_id_size = nh->n_descsz;
        return 1;
      }
      note = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

int __csi_rt_write_all(int fd, const void *p, size_t n) {
  const char *c = (const char *)p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Appends the decimal digits of `v` at `out`; returns the end. */
char *__csi_rt_decimal(char *out, uint32_t v) {
  char digits[10];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *out++ = digits[--n];
  return out;
}

/* The number of threads of this process (field 20 of /proc/self/stat), 0 if unknown. */
uint32_t __csi_rt_threads(void) {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  /* The command name (field 2) is in parentheses and may hold spaces and parentheses. */
  char *p = strrchr(buf, ')');
  if (!p) return 0;
  for (int field = 2; field < 20; field++) {
    p = strchr(p + 1, ' ');
    if (!p) return 0;
  }
  uint32_t v = 0;
  for (p++; *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint32_t)(*p - '0');
  return v;
}

/* `stack`: the dumping thread's return addresses (`n`), and the process's `threads` then. */
void __csi_rt_dump(uint32_t reason, void *const *stack, uint32_t n, uint32_t threads) {
  char *begin = __start_csi_cov, *end = __stop_csi_cov;
  if (!__csi_rt_dir[0] || !begin || end <= begin) return;
  /* `<dir>/<build-id hex>.<pid>.csicov` and the same + ".tmp". */
  char path[CSI_RT_PATH + 200], tmp[CSI_RT_PATH + 210];
  size_t d = strlen(__csi_rt_dir);
  char *o = path;
  memcpy(o, __csi_rt_dir, d);
  o += d;
  *o++ = '/';
  static const char hex[] = "0123456789abcdef";
  for (uint32_t i = 0; i < __csi_rt_build_id_size; i++) {
    *o++ = hex[__csi_rt_build_id[i] >> 4];
    *o++ = hex[__csi_rt_build_id[i] & 15];
  }
  if (!__csi_rt_build_id_size) {
    memcpy(o, "no-build-id", 11);
    o += 11;
  }
  *o++ = '.';
  uint32_t pid = (uint32_t)getpid();
  o = __csi_rt_decimal(o, pid);
  memcpy(o, ".csicov", 8);
  memcpy(tmp, path, (size_t)(o - path) + 7);
  memcpy(tmp + (o - path) + 7, ".tmp", 5);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  struct {
    char magic[8];
    uint64_t vaddr, size;
    uint32_t pid, reason, build_id_size, path_size;
    uint64_t bias;
    uint32_t threads, stack_size;
  } head;
  memcpy(head.magic, "CSICOV02", 8);
  head.vaddr = (uint64_t)((uintptr_t)begin - __csi_rt_bias);
  head.size = (uint64_t)(end - begin);
  head.pid = pid;
  head.reason = reason;
  head.build_id_size = __csi_rt_build_id_size;
  head.path_size = (uint32_t)strlen(__csi_rt_module);
  head.bias = (uint64_t)__csi_rt_bias;
  head.threads = threads;
  head.stack_size = n;
  int bad = __csi_rt_write_all(fd, &head, sizeof head) ||
            __csi_rt_write_all(fd, __csi_rt_build_id, head.build_id_size) ||
            __csi_rt_write_all(fd, __csi_rt_module, head.path_size) ||
            __csi_rt_write_all(fd, stack, (size_t)n * sizeof stack[0]) ||
            __csi_rt_write_all(fd, begin, (size_t)head.size);
  close(fd);
  if (bad)
    unlink(tmp);
  else
    rename(tmp, path);
}

/* SIGUSR2: a snapshot of every instrumented module (each module's handler chains to the one
 * installed before it); a handler the program had is called after. */
void __csi_rt_on_usr2(int sig, siginfo_t *info, void *uc) {
  __csi_rt_dump(1, 0, 0, 0);
  struct sigaction *prev = &__csi_rt_previous_usr2;
  if (prev->sa_flags & SA_SIGINFO) {
    if (prev->sa_sigaction) prev->sa_sigaction(sig, info, uc);
  } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN && prev->sa_handler) {
    prev->sa_handler(sig);
  }
}

/* Load time (a constructor, added by csi-cc). */
void __csi_rt_init(void) {
  /* secure_getenv: a set-user-ID program does not write where its caller says. */
  const char *dir = secure_getenv("CSI_COVERAGE_OUT");
  if (!dir || !dir[0] || !__start_csi_cov) return;
  size_t n = strlen(dir);
  if (n >= CSI_RT_PATH) return;
  memcpy(__csi_rt_dir, dir, n + 1);
  dl_iterate_phdr(__csi_rt_find_module, (void *)__start_csi_cov);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = __csi_rt_on_usr2;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, &__csi_rt_previous_usr2);
  struct sigaction now;
  if (sigaction(SIGUSR2, 0, &now) == 0 && (now.sa_flags & 0x04000000 /* SA_RESTORER */))
    __csi_rt_restorer = (void *)now.sa_restorer;
  /* The first backtrace loads the C library's unwinder (dlopen): now, not during exit. */
  backtrace(__csi_rt_stack, 1);
}

/* The stack walk `stack[0..n)` is every frame, each at a call: it reached the program's entry
 * (`_start` calls `__libc_start_main`; the return address is a few bytes in) — one that
 * stopped early or filled the buffer may have missed an activation, and a thread other than
 * the main one ends in `clone` instead — and passed no signal frame, whose interrupted frame
 * stands at any instruction, not at a call: the walk shows such a frame as the kernel's
 * return into the C library's signal trampoline, the `sa_restorer` its `sigaction` gives every
 * handler (`__csi_rt_restorer`; unknown: no stack). */
int __csi_rt_whole_stack_at_calls(void *const *stack, int n) {
  uintptr_t entry = (uintptr_t)getauxval(AT_ENTRY);
  if (n <= 0 || n >= CSI_RT_STACK || !entry || !__csi_rt_restorer) return 0;
  uintptr_t last = (uintptr_t)stack[n - 1];
  if (last <= entry || last - entry > 64) return 0;
  for (int i = 0; i < n; i++)
    if (stack[i] == __csi_rt_restorer) return 0;
  return 1;
}

/* Unload time: normal exit or dlclose (a destructor, added by csi-cc). The stack's first
 * return address is this function's own (a frame of no function with records). */
__attribute__((noinline)) void __csi_rt_fini(void) {
  if (!__csi_rt_dir[0]) return;
  int n = backtrace(__csi_rt_stack, CSI_RT_STACK);
  uint32_t threads = __csi_rt_threads();
  if (!__csi_rt_whole_stack_at_calls(__csi_rt_stack, n)) n = 0;
  __csi_rt_dump(0, __csi_rt_stack, (uint32_t)n, threads);
}

/* The copy at a return of a function whose loop probes leave their global slots to the
 * returns (csi-cc's `copy_at_returns`, `.debug_CSI_CFG`'s `*_global_at_return`): for each of
 * the `n` slots, a local bit set makes its global byte 1. Only ones are written — other
 * activations and threads set the same bytes. Returns whether every listed global byte is
 * set now (the caller's flag: then its returns skip the check). Called only when the inline
 * check found a bit to copy: out of line, so the returns stay small. */
__attribute__((noinline, cold)) int __csi_rt_copy(const uint32_t *slots, uint32_t n,
                                                  const volatile char *local,
                                                  volatile char *global) {
  int all = 1;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = slots[i];
    if (local[j] && !global[j]) global[j] = 1;
    if (!global[j]) all = 0;
  }
  return all;
}
