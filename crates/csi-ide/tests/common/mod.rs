//! Opening the checked-in fixture crashes as sessions.

use std::path::{Path, PathBuf};

use csi_ide::session::Session;
use csi_ide::source::SourcePaths;

/// The repository's root.
pub fn root() -> PathBuf {
    std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).unwrap()
}

/// The checked-in crash `fixtures/crashes/<dir>` of `program`, sources found from the root.
pub fn open(program: &str, dir: &str) -> Session {
    let sources = SourcePaths {
        root: Some(root()),
        ..Default::default()
    };
    let dir = root().join("fixtures/crashes").join(dir);
    Session::open_crash(
        &dir.join(program),
        &dir.join("core"),
        &Default::default(),
        &sources,
    )
    .unwrap()
}
