//! Separate debug files for stripped binaries, found the way gdb and elfutils find them: the
//! binary's own sections first, then a build-id tree (`DIR/.build-id/ab/cdef….debug`, default
//! `/usr/lib/debug`), then `.gnu_debuglink` (beside the binary, in its `.debug/`, under the
//! debug directory), then debuginfod servers (`DEBUGINFOD_URLS`, `GET
//! /buildid/<hex>/debuginfo`, cached under `$XDG_CACHE_HOME/csi/debuginfod`). A candidate is
//! used only when it belongs to the same build: equal build id, or — for a binary without
//! one — the debuglink's CRC-32. csi-cc's metadata (`.debug_CSI_*`, non-allocated) is kept by
//! `objcopy --only-keep-debug`, so it is read from the debug file like the DWARF.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use object::read::elf::ElfFile64;
use object::{LittleEndian as LE, Object, ObjectSection};

use crate::process::{hex, ImageBytes};

/// Where a module's debug info came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DebugSource {
    /// The module's own file has it.
    Embedded,
    /// A build-id tree: `DIR/.build-id/ab/cdef….debug`.
    BuildId { path: PathBuf },
    /// The file `.gnu_debuglink` names.
    DebugLink { path: PathBuf },
    /// A debuginfod server (and the cached copy that was read).
    Debuginfod { url: String, path: PathBuf },
    /// Nowhere.
    None,
}

impl DebugSource {
    /// One phrase for notices: "from /usr/lib/debug/.build-id/…".
    pub fn describe(&self) -> String {
        match self {
            DebugSource::Embedded => "embedded in the binary".into(),
            DebugSource::BuildId { path } => format!("from the build-id tree: {}", path.display()),
            DebugSource::DebugLink { path } => {
                format!("from .gnu_debuglink: {}", path.display())
            }
            DebugSource::Debuginfod { url, path } => {
                format!("from debuginfod {url} (cached at {})", path.display())
            }
            DebugSource::None => "none found".into(),
        }
    }
}

/// Where to look, from the command line and the environment.
#[derive(Clone, Debug, Default)]
pub struct DebugSearch {
    /// Build-id trees and global debug directories (`--debug-dir`); empty = `/usr/lib/debug`.
    pub debug_dirs: Vec<PathBuf>,
    /// debuginfod servers; `None` = from `DEBUGINFOD_URLS`.
    pub debuginfod_urls: Option<Vec<String>>,
    /// Cache of downloaded files; `None` = `$XDG_CACHE_HOME/csi/debuginfod` (or
    /// `~/.cache/csi/debuginfod`).
    pub cache_dir: Option<PathBuf>,
    /// Per-request timeout; `None` = `DEBUGINFOD_TIMEOUT` seconds, else 30.
    pub timeout: Option<Duration>,
}

impl DebugSearch {
    fn dirs(&self) -> Vec<PathBuf> {
        if self.debug_dirs.is_empty() {
            vec![PathBuf::from("/usr/lib/debug")]
        } else {
            self.debug_dirs.clone()
        }
    }

    fn urls(&self) -> Vec<String> {
        match &self.debuginfod_urls {
            Some(u) => u.clone(),
            None => std::env::var("DEBUGINFOD_URLS")
                .unwrap_or_default()
                .split_whitespace()
                .map(|u| u.trim_end_matches('/').to_string())
                .collect(),
        }
    }

    fn cache(&self) -> Option<PathBuf> {
        if let Some(c) = &self.cache_dir {
            return Some(c.clone());
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("csi").join("debuginfod"))
    }

    fn request_timeout(&self) -> Duration {
        self.timeout.unwrap_or_else(|| {
            let secs = std::env::var("DEBUGINFOD_TIMEOUT")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(30);
            Duration::from_secs(secs.max(1))
        })
    }
}

/// A debug file found for a module.
pub struct Found {
    pub bytes: ImageBytes,
    pub source: DebugSource,
}

/// Does this ELF image carry what csi reads from debug files (DWARF or CSI metadata)?
pub fn has_debug_sections(elf: &ElfFile64<'_, LE>) -> bool {
    crate::dwarf::has_debug_info(elf) || elf.section_by_name(".debug_CSI_CFG").is_some()
}

fn map(path: &Path) -> Option<ImageBytes> {
    let f = std::fs::File::open(path).ok()?;
    // SAFETY: read-only mapping; every reader bounds-checks.
    unsafe { memmap2::Mmap::map(&f) }.ok().map(ImageBytes::File)
}

/// `.gnu_debuglink`: file name and CRC-32.
fn debuglink(elf: &ElfFile64<'_, LE>) -> Option<(String, u32)> {
    let data = elf.section_by_name(".gnu_debuglink")?.data().ok()?;
    let end = data.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&data[..end]).ok()?.to_string();
    let crc_at = (end + 4) & !3;
    let crc = u32::from_le_bytes(data.get(crc_at..crc_at + 4)?.try_into().ok()?);
    (!name.is_empty() && !name.contains('/')).then_some((name, crc))
}

/// CRC-32 (IEEE, as `.gnu_debuglink` uses).
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8)
    })
}

/// Is `candidate` the debug file of the image with `build_id` (or, without one, the
/// debuglink's `crc`)? `Err` says why not, for a notice.
pub fn same_build(
    candidate: &[u8],
    build_id: Option<&[u8]>,
    crc: Option<u32>,
) -> Result<(), String> {
    let elf = ElfFile64::<LE>::parse(candidate).map_err(|_| "not an ELF file".to_string())?;
    if !has_debug_sections(&elf) {
        return Err("has no debug info".into());
    }
    match (build_id, elf.build_id().ok().flatten()) {
        (Some(want), Some(got)) if want == got => Ok(()),
        (Some(want), Some(got)) => Err(format!(
            "belongs to another build (build id {}, the binary's is {})",
            hex(got),
            hex(want)
        )),
        _ => match crc {
            Some(c) if crc32(candidate) == c => Ok(()),
            Some(_) => Err("its CRC-32 does not match the binary's .gnu_debuglink".into()),
            None => Err("no build id to match it by".into()),
        },
    }
}

/// Finds the debug file of a module whose own image (`image`, read from `path`) lacks debug
/// info. `notices` gets one sentence per candidate that was rejected or server that failed.
/// `use_debuginfod`: also ask the servers (not done for system libraries).
pub fn find(
    image: &[u8],
    path: Option<&Path>,
    search: &DebugSearch,
    use_debuginfod: bool,
    notices: &mut Vec<String>,
) -> Option<Found> {
    let elf = ElfFile64::<LE>::parse(image).ok()?;
    let build_id = elf.build_id().ok().flatten().map(<[u8]>::to_vec);
    let link = debuglink(&elf);
    let name = path.map_or_else(|| "the executable".into(), |p| p.display().to_string());
    let try_file = |p: PathBuf, crc: Option<u32>, notices: &mut Vec<String>| {
        let bytes = map(&p)?;
        match same_build(&bytes, build_id.as_deref(), crc) {
            Ok(()) => Some((bytes, p)),
            Err(why) => {
                notices.push(format!(
                    "{}: debug file for {name} not used: it {why}",
                    p.display()
                ));
                None
            }
        }
    };
    // 1. Build-id trees.
    if let Some(id) = build_id.as_deref().filter(|id| id.len() >= 2) {
        let h = hex(id);
        for dir in search.dirs() {
            let p = dir
                .join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..]));
            if p.is_file() {
                if let Some((bytes, path)) = try_file(p, None, notices) {
                    return Some(Found {
                        bytes,
                        source: DebugSource::BuildId { path },
                    });
                }
            }
        }
    }
    // 2. .gnu_debuglink: beside the binary, in its .debug/, under each debug directory
    //    (the binary's absolute directory appended, as gdb does).
    if let Some((file, crc)) = &link {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = path.and_then(Path::parent) {
            candidates.push(dir.join(file));
            candidates.push(dir.join(".debug").join(file));
            let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            for d in search.dirs() {
                candidates.push(d.join(abs.strip_prefix("/").unwrap_or(&abs)).join(file));
                candidates.push(d.join(file));
            }
        } else {
            candidates.extend(search.dirs().into_iter().map(|d| d.join(file)));
        }
        for p in candidates {
            // The binary itself can sit where its link points (same name).
            if path.is_some_and(|b| same_file(b, &p)) || !p.is_file() {
                continue;
            }
            if let Some((bytes, path)) = try_file(p, Some(*crc), notices) {
                return Some(Found {
                    bytes,
                    source: DebugSource::DebugLink { path },
                });
            }
        }
    }
    // 3. debuginfod.
    if use_debuginfod {
        if let Some(id) = build_id.as_deref() {
            if let Some((url, p)) = debuginfod_fetch(search, id, "debuginfo", notices) {
                if let Some((bytes, path)) = try_file(p, None, notices) {
                    return Some(Found {
                        bytes,
                        source: DebugSource::Debuginfod { url, path },
                    });
                }
            }
        }
    }
    None
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Largest file accepted from a server (debug info of big programs is hundreds of MB).
const MAX_DOWNLOAD: u64 = 4 << 30;

/// `GET <url>/buildid/<hex>/<what>` from each server in turn (`what` is `debuginfo` or
/// `executable`), through the cache. Returns the server and the cached file.
pub fn debuginfod_fetch(
    search: &DebugSearch,
    build_id: &[u8],
    what: &str,
    notices: &mut Vec<String>,
) -> Option<(String, PathBuf)> {
    let urls = search.urls();
    if urls.is_empty() {
        return None;
    }
    let h = hex(build_id);
    let cache = search.cache();
    let cached = cache.as_ref().map(|c| c.join(&h).join(what));
    if let Some(p) = cached.as_ref().filter(|p| p.is_file()) {
        return Some((format!("{} (cache)", urls[0]), p.clone()));
    }
    let agent = ureq::AgentBuilder::new()
        .timeout(search.request_timeout())
        .build();
    for url in &urls {
        let full = format!("{url}/buildid/{h}/{what}");
        let resp = match agent.get(&full).call() {
            Ok(r) => r,
            Err(ureq::Error::Status(404, _)) => {
                notices.push(format!(
                    "debuginfod {url}: no {what} for build id {h} (404)"
                ));
                continue;
            }
            Err(ureq::Error::Status(code, r)) => {
                notices.push(format!(
                    "debuginfod {url}: HTTP {code} {} for build id {h}",
                    r.status_text()
                ));
                continue;
            }
            Err(e) => {
                notices.push(format!(
                    "debuginfod {url} unreachable: {}",
                    one_line(&e.to_string())
                ));
                continue;
            }
        };
        // Into the cache (or a temporary directory without one), then checked by the caller.
        let dir = cached
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| std::env::temp_dir().join(format!("csi-debuginfod-{h}")));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            notices.push(format!("debuginfod cache {}: {e}", dir.display()));
            return None;
        }
        let dest = dir.join(what);
        let part = dir.join(format!("{what}.part.{}", std::process::id()));
        let body = (|| -> std::io::Result<u64> {
            let mut out = std::fs::File::create(&part)?;
            let mut reader = resp.into_reader().take(MAX_DOWNLOAD + 1);
            let n = std::io::copy(&mut reader, &mut out)?;
            if n > MAX_DOWNLOAD {
                return Err(std::io::Error::other("file larger than 4 GiB"));
            }
            Ok(n)
        })();
        match body {
            Ok(_) => {
                // Garbage must not poison the cache: only an ELF file is kept.
                let mut head = [0u8; 4];
                let is_elf = std::fs::File::open(&part)
                    .and_then(|mut f| f.read_exact(&mut head))
                    .is_ok()
                    && &head == b"\x7fELF";
                if !is_elf {
                    std::fs::remove_file(&part).ok();
                    notices.push(format!(
                        "debuginfod {url}: the {what} for build id {h} is not an ELF file; ignored"
                    ));
                    continue;
                }
                if std::fs::rename(&part, &dest).is_err() {
                    std::fs::remove_file(&part).ok();
                    continue;
                }
                return Some((url.clone(), dest));
            }
            Err(e) => {
                std::fs::remove_file(&part).ok();
                notices.push(format!(
                    "debuginfod {url}: download of the {what} for build id {h} failed: {}",
                    one_line(&e.to_string())
                ));
            }
        }
    }
    None
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }
}
