//! The allocator of the binaries that open crashes (`csi`, `csi-lsp`, `csi-dap`): mimalloc.
//!
//! Opening a large optimized program's crash builds and frees millions of small records
//! (CFG records, graph nodes, def/use names); with glibc's malloc a quarter of `csi analyze`
//! on a 250k-line program at -O2 went to consolidating freed chunks (1.0 s → 0.6 s CPU).
//! mimalloc's `arena_eager_commit` is turned off: committing whole arenas up front added
//! ~30 MB of resident memory and saved no time. Each binary says `csi_dump::use_mimalloc!();`
//! at its top level.

pub use mimalloc::MiMalloc;

/// Sets mimalloc's options; runs from `.init_array`, before the Rust runtime's first
/// allocation creates the first arena (in `main` it would be too late).
pub extern "C" fn tune() {
    // `mi_option_arena_eager_commit` in mimalloc's `mi_option_e` (the Rust bindings do not
    // name it).
    const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    // SAFETY: sets a process-wide option before any thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) };
}

/// Makes mimalloc (tuned by [`tune`]) the binary's global allocator.
#[macro_export]
macro_rules! use_mimalloc {
    () => {
        #[global_allocator]
        static GLOBAL_ALLOCATOR: $crate::allocator::MiMalloc = $crate::allocator::MiMalloc;

        #[used]
        #[unsafe(link_section = ".init_array")]
        static TUNE_ALLOCATOR: extern "C" fn() = $crate::allocator::tune;
    };
}
