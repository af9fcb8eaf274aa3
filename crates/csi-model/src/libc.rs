//! What we know about C library functions: which ones never call back into the program, and
//! which of those also always come back (or end the process).
//!
//! A call to library code that receives function pointers (`qsort`, `pthread_create`,
//! `signal`, `atexit`, ...) can run program functions the graph cannot see being called.
//! When a program calls only functions listed here (and LLVM intrinsics), library code cannot
//! run program code, so address-taken functions are reached only through the graph's own
//! indirect calls. Anything not listed is assumed to call back (sound, less precise).

/// Library functions that never call a function of the program, by kind. Deliberately
/// conservative: only functions that take no function pointers and do not run
/// user-registered hooks.
const NEVER_CALLS_BACK: &[&[&str]] = &[
    MEMORY_AND_STRINGS,
    CONVERSIONS_AND_CTYPE,
    STDIO,
    PROCESS_TIME_ENVIRONMENT_FILES,
    MATH,
    THREAD_SYNCHRONIZATION,
    ENDING,
    LEAVING,
];

const MEMORY_AND_STRINGS: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "free",
    "aligned_alloc",
    "posix_memalign",
    "memalign",
    "valloc",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "memchr",
    "memrchr",
    "mempcpy",
    "strlen",
    "strnlen",
    "strcpy",
    "strncpy",
    "stpcpy",
    "stpncpy",
    "strcat",
    "strncat",
    "strcmp",
    "strncmp",
    "strcasecmp",
    "strncasecmp",
    "strchr",
    "strrchr",
    "strstr",
    "strcasestr",
    "strspn",
    "strcspn",
    "strpbrk",
    "strtok",
    "strtok_r",
    "strdup",
    "strndup",
    "strerror",
    "strerror_r",
    "strcoll",
    "strxfrm",
    "strsignal",
    "bzero",
    "explicit_bzero",
    "__memcpy_chk",
    "__memmove_chk",
    "__memset_chk",
    "__strcpy_chk",
    "__strcat_chk",
    "__strncpy_chk",
    "__stpcpy_chk",
    "__explicit_bzero_chk",
];

const CONVERSIONS_AND_CTYPE: &[&str] = &[
    "atoi",
    "atol",
    "atoll",
    "atof",
    "strtol",
    "strtoll",
    "strtoul",
    "strtoull",
    "strtod",
    "strtof",
    "strtold",
    "strtoimax",
    "strtoumax",
    "isalnum",
    "isalpha",
    "isdigit",
    "isspace",
    "isupper",
    "islower",
    "isxdigit",
    "isprint",
    "ispunct",
    "iscntrl",
    "isgraph",
    "toupper",
    "tolower",
    "__ctype_b_loc",
    "__ctype_toupper_loc",
    "__ctype_tolower_loc",
    "abs",
    "labs",
    "llabs",
    "div",
    "ldiv",
];

/// No custom streams or printf hooks assumed.
const STDIO: &[&str] = &[
    "printf",
    "fprintf",
    "sprintf",
    "snprintf",
    "vprintf",
    "vfprintf",
    "vsprintf",
    "vsnprintf",
    "dprintf",
    "puts",
    "fputs",
    "putchar",
    "fputc",
    "putc",
    "fwrite",
    "fread",
    "fgets",
    "fgetc",
    "getc",
    "getchar",
    "ungetc",
    "fopen",
    "fdopen",
    "freopen",
    "fclose",
    "fflush",
    "fseek",
    "ftell",
    "rewind",
    "fgetpos",
    "fsetpos",
    "feof",
    "ferror",
    "clearerr",
    "fileno",
    "perror",
    "setvbuf",
    "setbuf",
    "scanf",
    "fscanf",
    "sscanf",
    "tmpfile",
    "remove",
    "rename",
    "__printf_chk",
    "__fprintf_chk",
    "__sprintf_chk",
    "__snprintf_chk",
    "__vfprintf_chk",
    "__vsnprintf_chk",
    "__isoc99_scanf",
    "__isoc99_fscanf",
    "__isoc99_sscanf",
    "getline",
    "getdelim",
    "__getdelim",
    "popen",
    "pclose",
];

const PROCESS_TIME_ENVIRONMENT_FILES: &[&str] = &[
    "getenv",
    "setenv",
    "unsetenv",
    "time",
    "clock",
    "gettimeofday",
    "clock_gettime",
    "localtime",
    "localtime_r",
    "gmtime",
    "gmtime_r",
    "mktime",
    "strftime",
    "difftime",
    "sleep",
    "usleep",
    "nanosleep",
    "getpid",
    "getppid",
    "open",
    "close",
    "read",
    "write",
    "lseek",
    "stat",
    "fstat",
    "lstat",
    "unlink",
    "access",
    "mkdir",
    "rmdir",
    "dup",
    "dup2",
    "pipe",
    "isatty",
    "mmap",
    "munmap",
    "mprotect",
    "sysconf",
    "getrusage",
    "rand",
    "srand",
    "random",
    "srandom",
    "rand_r",
    "__errno_location",
    "setlocale",
    "localeconv",
    "system",
    "tmpnam",
    "mkstemp",
    "realpath",
    "getcwd",
    "chdir",
];

const MATH: &[&str] = &[
    "sqrt", "sqrtf", "pow", "powf", "exp", "expf", "log", "logf", "log10", "log2", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "floor", "floorf", "ceil",
    "ceilf", "fabs", "fabsf", "fmod", "fmodf", "frexp", "ldexp", "modf", "round", "trunc", "hypot",
    "cbrt",
];

/// `pthread_create` and `pthread_once` call back: not listed.
const THREAD_SYNCHRONIZATION: &[&str] = &[
    "pthread_join",
    "pthread_self",
    "pthread_equal",
    "pthread_detach",
    "pthread_mutex_init",
    "pthread_mutex_lock",
    "pthread_mutex_trylock",
    "pthread_mutex_unlock",
    "pthread_mutex_destroy",
    "pthread_cond_init",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_cond_signal",
    "pthread_cond_broadcast",
    "pthread_cond_destroy",
    "pthread_barrier_init",
    "pthread_barrier_wait",
    "pthread_barrier_destroy",
    "pthread_attr_init",
    "pthread_attr_destroy",
    "pthread_attr_setstacksize",
    "pthread_setname_np",
    "sched_yield",
];

/// These end the process without running program code (`exit` runs atexit handlers: not
/// listed).
const ENDING: &[&str] = &[
    "abort",
    "_exit",
    "_Exit",
    "__assert_fail",
    "__stack_chk_fail",
];

/// These do not return: a signal's handler may run, or control goes to a `setjmp`.
const LEAVING: &[&str] = &[
    "raise",
    "kill",
    "setjmp",
    "_setjmp",
    "__sigsetjmp",
    "longjmp",
    "_longjmp",
    "siglongjmp",
];

/// These run program code only by calling the function their argument at the given index
/// points to, before they return, and are no cancellation points: sorting and searching.
const CALLING_BACK_IN_PLACE: &[(&str, usize)] = &[
    ("qsort", 3),
    ("qsort_r", 3),
    ("bsearch", 4),
    ("lfind", 4),
    ("lsearch", 4),
    ("tsearch", 2),
    ("tfind", 2),
    ("tdelete", 2),
    ("twalk", 1),
    ("twalk_r", 1),
    ("tdestroy", 1),
];

/// For a library function that runs program code only through one function-pointer
/// argument, called before it returns (`qsort`'s comparator): that argument's index. Such
/// a call comes back when the function it is given does (see [`comes_back_or_ends`]).
pub fn callback_argument(name: &str) -> Option<usize> {
    CALLING_BACK_IN_PLACE
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, k)| k)
}

/// Does a call to the library function `name` never run program code?
pub fn never_calls_back(name: &str) -> bool {
    name.starts_with("llvm.") || NEVER_CALLS_BACK.iter().any(|kind| kind.contains(&name))
}

/// Does a call to the library function `name` come back, or end the process, without
/// running program code — no callback, no signal handler, no `longjmp`, and no
/// thread-cancellation point (where a thread's cancellation unwinds through its callers)?
/// Memory, strings, conversions, character classes, arithmetic and the allocator, and the
/// functions that abort.
pub fn comes_back_or_ends(name: &str) -> bool {
    [MEMORY_AND_STRINGS, CONVERSIONS_AND_CTYPE, MATH, ENDING]
        .iter()
        .any(|kind| kind.contains(&name))
}
