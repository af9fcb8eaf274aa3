//! Coverage of runs that did not crash: the `.csicov` files csi-cc's runtime writes when a
//! program runs with `CSI_COVERAGE_OUT=dir` (crates/csi-cc/runtime/coverage_out.c has the
//! format). One file per instrumented module (executable, shared library) per process, named
//! `<build-id>.<pid>.csicov`, holding the module's `csi_cov` section — its coverage arrays —
//! as the process left it (normal exit) or when it got SIGUSR2 (a snapshot). Written at exit
//! (version 2), a file also holds the exiting thread's stack: with it the activations still
//! in progress are known, as a core's are.
//!
//! A *passing run* is the files of one process: same directory, same pid. Its coverage is
//! read against a loaded crash of the same build ([`crate::Crash::passing_run_coverage`]), so
//! it is numbered by the same program graph as the crash's own analysis.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::DumpError;

const MAGIC_V1: &[u8; 8] = b"CSICOV01";
const MAGIC: &[u8; 8] = b"CSICOV02";
const HEAD_V1: usize = 8 + 8 + 8 + 4 * 4;
const HEAD: usize = HEAD_V1 + 8 + 4 + 4;
/// The runtime's stack buffer (`CSI_RT_STACK`): it writes fewer return addresses.
const MAX_STACK: u32 = 512;

/// One module's coverage arrays from one process.
#[derive(Clone, Debug)]
pub struct CoverageFile {
    pub path: PathBuf,
    /// The module's GNU build id (empty when it has none).
    pub build_id: Vec<u8>,
    /// The module's path in the process that wrote the file.
    pub module: String,
    pub pid: u32,
    /// Written on SIGUSR2 while the process kept running, not when it ended.
    pub snapshot: bool,
    /// Link-time address of the `csi_cc` section's first byte.
    pub section_vaddr: u64,
    pub bytes: Vec<u8>,
    /// Where the activations in progress stood when the bytes were taken, if known.
    pub stack: Option<ExitStack>,
}

/// The stack of the thread that unloaded the module (normal exit, or `dlclose`), written
/// when it was the process's only thread: with it the reader knows every activation in
/// progress, as a core's threads give them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitStack {
    /// The module's load bias in the process that wrote the file.
    pub load_bias: u64,
    /// Return addresses in that process, innermost first (the runtime's own frame first).
    pub return_addresses: Vec<u64>,
}

impl CoverageFile {
    /// Reads and checks one `.csicov` file.
    pub fn read(path: &Path) -> Result<CoverageFile, DumpError> {
        let data = std::fs::read(path).map_err(|e| DumpError::io(path, e))?;
        Self::parse(path, &data)
    }

    pub fn parse(path: &Path, data: &[u8]) -> Result<CoverageFile, DumpError> {
        let bad = |what: &str| DumpError::Corrupt {
            path: path.to_path_buf(),
            what: format!("not a CSI coverage file: {what}"),
        };
        let v2 = match data.get(..8) {
            Some(m) if m == MAGIC => true,
            Some(m) if m == MAGIC_V1 => false,
            _ => return Err(bad("no CSICOV01/CSICOV02 header")),
        };
        let head = if v2 { HEAD } else { HEAD_V1 };
        if data.len() < head {
            return Err(bad("inconsistent sizes (truncated or corrupt)"));
        }
        let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
        let (vaddr, size) = (u64_at(8), u64_at(16));
        let (pid, reason, id_size, path_size) = (u32_at(24), u32_at(28), u32_at(32), u32_at(36));
        let (bias, threads, stack_size) = match v2 {
            true => (u64_at(40), u32_at(48), u32_at(52)),
            false => (0, 0, 0),
        };
        let id_end = head + id_size as usize;
        let path_end = id_end.saturating_add(path_size as usize);
        let stack_end = path_end.saturating_add(8 * stack_size as usize);
        let end = usize::try_from(size)
            .ok()
            .and_then(|s| stack_end.checked_add(s));
        if id_size > 64 || reason > 1 || stack_size >= MAX_STACK || end != Some(data.len()) {
            return Err(bad("inconsistent sizes (truncated or corrupt)"));
        }
        // Every activation is known from the stack only when no other thread was left.
        let stack = (reason == 0 && threads == 1 && stack_size > 0).then(|| ExitStack {
            load_bias: bias,
            return_addresses: (path_end..stack_end).step_by(8).map(u64_at).collect(),
        });
        Ok(CoverageFile {
            path: path.to_path_buf(),
            build_id: data[head..id_end].to_vec(),
            module: String::from_utf8_lossy(&data[id_end..path_end]).into_owned(),
            pid,
            snapshot: reason == 1,
            section_vaddr: vaddr,
            bytes: data[stack_end..].to_vec(),
            stack,
        })
    }

    /// `n` bytes at link-time address `vaddr`, if the section holds them.
    pub fn bytes_at(&self, vaddr: u64, n: usize) -> Option<&[u8]> {
        let off = usize::try_from(vaddr.checked_sub(self.section_vaddr)?).ok()?;
        self.bytes.get(off..off.checked_add(n)?)
    }
}

/// The coverage files of one process.
#[derive(Clone, Debug)]
pub struct PassingRun {
    /// `dir/pid`, for messages.
    pub name: String,
    pub files: Vec<CoverageFile>,
}

/// Every passing run under `dirs` (searched recursively for `*.csicov`), and the files that
/// could not be read (path, reason). Sorted by name.
pub fn find_passing_runs(dirs: &[PathBuf]) -> (Vec<PassingRun>, Vec<(PathBuf, String)>) {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&p, out),
                Ok(_) if p.extension().is_some_and(|x| x == "csicov") => out.push(p),
                _ => {}
            }
        }
    }
    let mut paths = Vec::new();
    for d in dirs {
        if d.is_dir() {
            walk(d, &mut paths);
        } else {
            paths.push(d.clone());
        }
    }
    paths.sort();
    let mut runs: BTreeMap<(PathBuf, u32), Vec<CoverageFile>> = BTreeMap::new();
    let mut bad = Vec::new();
    for p in paths {
        match CoverageFile::read(&p) {
            Ok(f) => {
                let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
                runs.entry((dir, f.pid)).or_default().push(f);
            }
            Err(e) => bad.push((p, e.to_string())),
        }
    }
    let runs = runs
        .into_iter()
        .map(|((dir, pid), files)| PassingRun {
            name: format!("{}/{pid}", dir.display()),
            files,
        })
        .collect();
    (runs, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(id: &[u8], module: &str, vaddr: u64, bytes: &[u8]) -> Vec<u8> {
        file_v2(id, module, vaddr, bytes, 1, &[])
    }

    /// A version 2 file written at exit with `threads` threads and `stack`.
    fn file_v2(
        id: &[u8],
        module: &str,
        vaddr: u64,
        bytes: &[u8],
        threads: u32,
        stack: &[u64],
    ) -> Vec<u8> {
        let mut d = MAGIC.to_vec();
        d.extend(vaddr.to_le_bytes());
        d.extend((bytes.len() as u64).to_le_bytes());
        for v in [42u32, 0, id.len() as u32, module.len() as u32] {
            d.extend(v.to_le_bytes());
        }
        d.extend(0x7f00_0000_0000u64.to_le_bytes());
        d.extend(threads.to_le_bytes());
        d.extend((stack.len() as u32).to_le_bytes());
        d.extend(id);
        d.extend(module.as_bytes());
        for pc in stack {
            d.extend(pc.to_le_bytes());
        }
        d.extend(bytes);
        d
    }

    #[test]
    fn reads_the_exit_stack_of_a_lone_thread() {
        let stack = [0x7f00_0000_1234u64, 0x7f00_0000_5678];
        let d = file_v2(&[1], "/bin/app", 0x5000, &[1, 0], 1, &stack);
        let f = CoverageFile::parse(Path::new("x"), &d).unwrap();
        assert_eq!(f.bytes, [1, 0]);
        assert_eq!(
            f.stack,
            Some(ExitStack {
                load_bias: 0x7f00_0000_0000,
                return_addresses: stack.to_vec()
            })
        );
        // Another thread was left, or the stack was not taken: activations unknown.
        let two = file_v2(&[1], "/bin/app", 0x5000, &[1, 0], 2, &stack);
        assert_eq!(
            CoverageFile::parse(Path::new("x"), &two).unwrap().stack,
            None
        );
        let none = file_v2(&[1], "/bin/app", 0x5000, &[1, 0], 1, &[]);
        assert_eq!(
            CoverageFile::parse(Path::new("x"), &none).unwrap().stack,
            None
        );
        // A stack that runs past the end of the file.
        let mut long = d.clone();
        long[52..56].copy_from_slice(&400u32.to_le_bytes());
        assert!(CoverageFile::parse(Path::new("x"), &long).is_err());
    }

    #[test]
    fn reads_version_1() {
        let mut d = MAGIC_V1.to_vec();
        d.extend(0x5000u64.to_le_bytes());
        d.extend(2u64.to_le_bytes());
        for v in [7u32, 0, 1, 4] {
            d.extend(v.to_le_bytes());
        }
        d.extend([9]);
        d.extend(b"/app");
        d.extend([0, 1]);
        let f = CoverageFile::parse(Path::new("x"), &d).unwrap();
        assert_eq!((f.pid, f.module.as_str()), (7, "/app"));
        assert_eq!(f.stack, None);
        assert_eq!(f.bytes_at(0x5001, 1), Some(&[1u8][..]));
    }

    #[test]
    fn parses_and_bounds_checks() {
        let d = file(&[1, 2, 3], "/bin/app", 0x5000, &[0, 1, 1, 0]);
        let f = CoverageFile::parse(Path::new("x"), &d).unwrap();
        assert_eq!(
            (f.pid, f.snapshot, f.module.as_str()),
            (42, false, "/bin/app")
        );
        assert_eq!(f.bytes_at(0x5001, 2), Some(&[1u8, 1][..]));
        assert_eq!(f.bytes_at(0x5003, 2), None);
        assert_eq!(f.bytes_at(0x4fff, 1), None);
        for cut in [0, 7, 20, d.len() - 1] {
            assert!(
                CoverageFile::parse(Path::new("x"), &d[..cut]).is_err(),
                "{cut}"
            );
        }
        let mut long = d.clone();
        long.push(0);
        assert!(CoverageFile::parse(Path::new("x"), &long).is_err());
        let mut huge = d;
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(CoverageFile::parse(Path::new("x"), &huge).is_err());
    }
}
