#![allow(dead_code)]
//! Finding the checked-in fixture crashes (`fixtures/crashes/**/{<exe>,core}`).

use std::path::{Path, PathBuf};

pub struct FixtureCrash {
    pub dir: PathBuf,
    pub exe: PathBuf,
    pub core: PathBuf,
    /// `coverage.json` of the clang source-coverage oracle for the same run, if present.
    pub oracle: Option<PathBuf>,
}

impl FixtureCrash {
    pub fn name(&self) -> String {
        let root = fixtures_root();
        self.dir
            .strip_prefix(&root)
            .unwrap_or(&self.dir)
            .display()
            .to_string()
    }
}

/// `fixtures/crashes` (checked in), or the directory in `CSI_FIXTURES` (e.g. the full
/// matrix `fixtures/build.sh` writes to `fixtures/build`).
pub fn fixtures_root() -> PathBuf {
    match std::env::var_os("CSI_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/crashes"),
    }
}

fn is_elf_exe(p: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return false;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"\x7fELF"
}

/// Every fixture crash, sorted by directory. Empty (and says so) when there are none.
pub fn fixture_crashes() -> Vec<FixtureCrash> {
    let mut out = Vec::new();
    let mut stack = vec![fixtures_root()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        let core = d.join("core");
        if core.is_file() {
            if let Some(exe) = entries.iter().find(|p| {
                // Shared libraries of the program lie beside it.
                let lib = p.to_string_lossy().ends_with(".so");
                is_elf_exe(p) && !lib && p.file_name() != Some("core".as_ref())
            }) {
                let oracle = [
                    d.join("coverage.json"),
                    // `../oracle-O<n>/` in a build directory.
                    d.join(format!(
                        "../oracle-{}/coverage.json",
                        d.file_name()
                            .and_then(|n| n.to_str())
                            .and_then(|n| n.rsplit_once('-'))
                            .map_or("", |(_, o)| o)
                    )),
                ]
                .into_iter()
                .find(|p| p.is_file());
                out.push(FixtureCrash {
                    dir: d.clone(),
                    exe: exe.clone(),
                    core,
                    oracle,
                });
            }
        }
        stack.extend(entries.into_iter().filter(|p| p.is_dir()));
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    if out.is_empty() {
        eprintln!(
            "no fixture crashes under {}; skipping",
            fixtures_root().display()
        );
    }
    out
}

/// A test whose inputs are missing here says why and passes — except in CI (`CI` set), where
/// scripts/test installs every tool and builds the fixture matrix, so a missing input is a
/// failure, not a silent skip.
pub fn cannot_run(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "this test must run in CI, but: {why}"
    );
    eprintln!("skipping: {why}");
}

/// A test of the full fixture matrix (`fixtures/build.sh`, `CSI_FIXTURES`) that found no
/// build of `program`: fine without the matrix, a failure when CSI_FIXTURES names one.
pub fn matrix_lacks(program: &str) {
    match std::env::var_os("CSI_FIXTURES") {
        Some(dir) => panic!(
            "no {program} fixture crash under {} (fixtures/build.sh builds it)",
            std::path::Path::new(&dir).display()
        ),
        None => eprintln!(
            "skipping: {program} is only in the full fixture matrix (run fixtures/build.sh, set CSI_FIXTURES; scripts/test does)"
        ),
    }
}

pub fn have(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
