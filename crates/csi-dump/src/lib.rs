//! From a real crash to a failure report (DESIGN §5): read an ELF core dump and its executable,
//! walk every thread's stack, read each frame's csi-cc trace data (`__PT_*`, `__CC_arr`,
//! `__BBC_arr`) and the coverage globals, decode path traces, and map it all onto the program
//! graph from `.debug_CSI_CFG`.
//!
//! ```no_run
//! let crash = csi_dump::Crash::open("app".as_ref(), "core".as_ref(), &Default::default())?;
//! for t in &crash.threads { println!("thread {} has {} frames", t.tid, t.frames.len()); }
//! # Ok::<(), csi_dump::DumpError>(())
//! ```

pub mod allocator;

pub use csi_model::paths::same_source;

pub mod compressed;
pub mod core;
pub mod coredump_store;
pub mod coverage_file;
pub mod debug_files;
pub mod dwarf;
mod error;
pub mod expr;
mod extract;
mod minidump_file;
pub mod process;
pub mod tracing_switches;
pub mod unwind;
mod values;

use std::path::{Path, PathBuf};

pub use error::DumpError;
pub use extract::{
    load_bytes, Crash, CrashFrame, CrashThread, FrameContext, LoadCache, LoadOptions, Metadata,
    ModuleInfo, PathStep,
};
pub use values::{NamedValue, Value, REGISTER_NAMES};

/// Values of global variables by name (see [`Crash::global_values`]).
pub fn global_values(crash: &Crash, names: &[String]) -> Vec<Option<String>> {
    crash.global_values(names)
}

impl Crash {
    /// Loads the crash `core` of the program `exe`.
    pub fn open(exe: &Path, core: &Path, opts: &LoadOptions) -> Result<Crash, DumpError> {
        extract::load(exe, core, opts)
    }
}

/// Paths the user gave, for messages.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub exe: PathBuf,
    pub core: PathBuf,
}
