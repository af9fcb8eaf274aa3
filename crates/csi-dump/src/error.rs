//! Errors as values with context: what file, what part of it, and why.

use std::path::{Path, PathBuf};

/// Why a crash could not be loaded. Each variant's message is one sentence a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not an ELF file", path.display())]
    NotElf { path: PathBuf },
    #[error("{}: {what}", path.display())]
    Unsupported { path: PathBuf, what: String },
    #[error("{}: not a core dump (ELF type {kind}); pass the core file with --core", path.display())]
    NotCore { path: PathBuf, kind: String },
    #[error("{}: is a core dump, not an executable; pass the program with --exe", path.display())]
    CoreGivenAsExe { path: PathBuf },
    #[error("{}: truncated or corrupt core dump: {what}", path.display())]
    Corrupt { path: PathBuf, what: String },
    #[error("the core dump {} was not produced by {}: {why}", core.display(), exe.display())]
    Mismatch {
        core: PathBuf,
        exe: PathBuf,
        why: String,
    },
    #[error("{}: {what}", path.display())]
    BadMetadata { path: PathBuf, what: String },
}

impl DumpError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        DumpError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &Path, what: impl Into<String>) -> Self {
        DumpError::Corrupt {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }
}
