//! systemd-coredump's store: the cores a systemd machine kept of crashed processes, as
//! `coredumpctl` lists them, with what systemd recorded about each (executable, signal, time).
//!
//! Cores are files `core.<comm>.<uid>.<boot id>.<pid>.<µs since the epoch>[.zst|.lz4|.xz]` in
//! `/var/lib/systemd/coredump`, and systemd-coredump writes its metadata into their extended
//! attributes (`user.coredump.exe`, `.signal`, `.timestamp`, `.pid`, `.comm`, …). When the
//! store has no such core (cores kept in the journal, a store elsewhere) and `coredumpctl` is
//! installed, it is asked instead (`coredumpctl --json=short list`, `coredumpctl dump`).

use std::path::{Path, PathBuf};

use crate::error::DumpError;

/// Where systemd-coredump keeps cores.
pub const DEFAULT_STORE: &str = "/var/lib/systemd/coredump";

/// One core of the store.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StoredCore {
    /// The core file (compressed as systemd stored it; `Crash::open` reads any of them).
    pub path: PathBuf,
    pub pid: u32,
    pub uid: u32,
    /// The process name (`comm`) as systemd recorded it.
    pub comm: String,
    /// When it crashed, µs since the epoch.
    pub time_usec: u64,
    /// The crashed executable, when systemd recorded it.
    pub exe: Option<PathBuf>,
    /// The signal that killed it, when systemd recorded it.
    pub signal: Option<i32>,
    /// How it was found: `store` (the directory) or `coredumpctl`.
    pub source: &'static str,
}

impl StoredCore {
    /// The executable to read the core with: the one systemd recorded, else the one the core
    /// records (its mapping at the entry point), when that file exists here.
    pub fn executable(&self) -> Option<PathBuf> {
        if let Some(e) = self.exe.as_ref().filter(|e| e.is_file()) {
            return Some(e.clone());
        }
        let core = crate::core::CoreFile::open(&self.path).ok()?;
        Some(PathBuf::from(core.executable_path()?)).filter(|p| p.is_file())
    }

    /// `pid 1234 (lua5.4), SIGSEGV, 2026-11-24 06:55:01 UTC` for notices.
    pub fn describe(&self) -> String {
        let mut s = format!("pid {} ({})", self.pid, self.comm);
        if let Some(sig) = self.signal {
            s.push_str(&format!(", {}", crate::core::signal_name(sig)));
        }
        s.push_str(&format!(", {}", utc(self.time_usec)));
        s
    }
}

/// `core.<comm>.<uid>.<boot id>.<pid>.<usec>[.ext]` → (comm, uid, pid, usec). `comm` may
/// itself hold dots, so the fields are taken from the right.
fn parse_name(name: &str) -> Option<(String, u32, u32, u64)> {
    let rest = name.strip_prefix("core.")?;
    let rest = ["zst", "lz4", "xz"]
        .iter()
        .find_map(|e| rest.strip_suffix(&format!(".{e}")))
        .unwrap_or(rest);
    let mut parts = rest.rsplitn(5, '.');
    let usec: u64 = parts.next()?.parse().ok()?;
    let pid: u32 = parts.next()?.parse().ok()?;
    let boot = parts.next()?;
    if boot.len() != 32 || !boot.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let uid: u32 = parts.next()?.parse().ok()?;
    let comm = parts.next()?;
    // systemd escapes unusual characters of comm as `\xNN`.
    Some((unescape(comm), uid, pid, usec))
}

fn unescape(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            if let Some(v) = s
                .get(i + 2..i + 4)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn xattr_text(path: &Path, name: &str) -> Option<String> {
    let v = xattr::get(path, name).ok()??;
    let s = String::from_utf8_lossy(&v);
    let s = s.trim_end_matches('\0').trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Every core in the store directory `dir`, oldest first. Files that are not systemd cores
/// are skipped; an unreadable directory is an error.
pub fn list(dir: &Path) -> Result<Vec<StoredCore>, DumpError> {
    let entries = std::fs::read_dir(dir).map_err(|e| DumpError::io(dir, e))?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((comm, uid, pid, usec)) = parse_name(name) else {
            continue;
        };
        if !path.is_file() {
            continue;
        }
        // The extended attributes, where systemd wrote them, are authoritative.
        let num = |k: &str| xattr_text(&path, k).and_then(|v| v.parse::<u64>().ok());
        out.push(StoredCore {
            pid: num("user.coredump.pid").map_or(pid, |v| v as u32),
            uid: num("user.coredump.uid").map_or(uid, |v| v as u32),
            comm: xattr_text(&path, "user.coredump.comm").unwrap_or(comm),
            time_usec: num("user.coredump.timestamp").unwrap_or(usec),
            exe: xattr_text(&path, "user.coredump.exe").map(PathBuf::from),
            signal: num("user.coredump.signal").map(|v| v as i32),
            path,
            source: "store",
        });
    }
    out.sort_by_key(|c| (c.time_usec, c.pid));
    Ok(out)
}

/// The core `selector` names: `latest`, a pid (the newest core of that pid), or a comm (the
/// newest core of that program), from the store `dir`, else from `coredumpctl`.
pub fn select(dir: &Path, selector: &str) -> Result<StoredCore, DumpError> {
    let stored = match list(dir) {
        Ok(v) => v,
        Err(e) if !have_coredumpctl() => return Err(e),
        Err(_) => Vec::new(),
    };
    let matches = |c: &StoredCore| match selector {
        "latest" => true,
        s => match s.parse::<u32>() {
            Ok(pid) => c.pid == pid,
            Err(_) => c.comm == s,
        },
    };
    if let Some(c) = stored.iter().rev().find(|c| matches(c)) {
        return Ok(c.clone());
    }
    if have_coredumpctl() {
        if let Some(c) = from_coredumpctl(selector)? {
            return Ok(c);
        }
    }
    Err(DumpError::Unsupported {
        path: dir.to_path_buf(),
        what: format!(
            "no systemd-coredump core matches `{selector}` ({} cores in the store{})",
            stored.len(),
            if have_coredumpctl() {
                ", none in coredumpctl's list"
            } else {
                "; coredumpctl is not installed"
            }
        ),
    })
}

fn coredumpctl() -> std::process::Command {
    let mut c = std::process::Command::new(
        std::env::var_os("CSI_COREDUMPCTL").unwrap_or_else(|| "coredumpctl".into()),
    );
    c.arg("--no-pager");
    c
}

fn have_coredumpctl() -> bool {
    coredumpctl()
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Asks `coredumpctl` (cores in the journal, or a store elsewhere): the newest entry matching
/// `selector` whose core is present, dumped into a temporary file.
fn from_coredumpctl(selector: &str) -> Result<Option<StoredCore>, DumpError> {
    let tool = Path::new("coredumpctl");
    let mut list = coredumpctl();
    list.args(["--json=short", "list"]);
    if selector != "latest" {
        list.arg(selector);
    }
    let out = list.output().map_err(|e| DumpError::io(tool, e))?;
    if !out.status.success() {
        // "No coredumps found." exits non-zero.
        return Ok(None);
    }
    let entries: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).map_err(|e| DumpError::Corrupt {
            path: tool.to_path_buf(),
            what: format!("`coredumpctl --json=short list` printed no JSON list: {e}"),
        })?;
    let Some(e) = entries
        .iter()
        .rev()
        .find(|e| e["corefile"].as_str().is_some_and(|s| s == "present"))
    else {
        return Ok(None);
    };
    let pid = e["pid"].as_u64().unwrap_or(0) as u32;
    let dump = std::env::temp_dir().join(format!("csi-coredump-{pid}-{}", std::process::id()));
    let st = coredumpctl()
        .args(["dump", &pid.to_string(), "--output"])
        .arg(&dump)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| DumpError::io(tool, e))?;
    if !st.success() || !dump.is_file() {
        return Err(DumpError::Unsupported {
            path: tool.to_path_buf(),
            what: format!("`coredumpctl dump {pid}` wrote no core"),
        });
    }
    let exe = e["exe"].as_str().map(PathBuf::from);
    Ok(Some(StoredCore {
        path: dump,
        pid,
        uid: e["uid"].as_u64().unwrap_or(0) as u32,
        comm: exe
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        time_usec: e["time"].as_u64().unwrap_or(0),
        exe,
        signal: e["sig"].as_i64().map(|s| s as i32),
        source: "coredumpctl",
    }))
}

/// `YYYY-MM-DD hh:mm:ss UTC` of µs since the epoch.
fn utc(usec: u64) -> String {
    format!("{} UTC", utc_date(usec / 1_000_000))
}

/// `YYYY-MM-DD hh:mm:ss` (UTC) of seconds since the epoch: civil-from-days (H. Hinnant), no
/// time zone data needed.
pub fn utc_date(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_core_names() {
        assert_eq!(
            parse_name(
                "core.lua5\\x2e4.1000.0123456789abcdef0123456789abcdef.4242.1763967301000000.zst"
            ),
            Some(("lua5.4".into(), 1000, 4242, 1_763_967_301_000_000))
        );
        assert_eq!(
            parse_name("core.my.prog.0.0123456789abcdef0123456789abcdef.7.1"),
            Some(("my.prog".into(), 0, 7, 1))
        );
        for bad in [
            "core",
            "core.x",
            "core.x.1.2.3.4",
            "core.x.0.nothex0123456789abcdef012345678.1.2",
            "notcore.x.0.0123456789abcdef0123456789abcdef.1.2",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_763_967_301_000_000), "2025-11-24 06:55:01 UTC");
        assert_eq!(utc(951_782_400_000_000), "2000-02-29 00:00:00 UTC");
    }
}
