//! Settings (`initializationOptions`, `workspace/didChangeConfiguration`, `.csi.toml`). The
//! mapping from source paths in debug info to files in the workspace is csi-ide's
//! ([`csi_ide::source`]); the settings give it its substitute paths and root.

use std::path::{Path, PathBuf};

pub use csi_ide::source::SubstitutePath;

/// Everything configurable. Unknown keys are ignored.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    /// Workspace root (from `initialize`).
    #[serde(skip)]
    pub root: Option<PathBuf>,
    /// Crash to open at start-up.
    pub executable: Option<PathBuf>,
    pub core: Option<PathBuf>,
    /// A core of systemd-coredump's store instead of `core`: `latest`, a pid or a program
    /// name (as `csi --coredump`); the executable is the one systemd recorded unless
    /// `executable` is given.
    pub coredump: Option<String>,
    /// systemd-coredump's store (default /var/lib/systemd/coredump).
    pub coredump_dir: Option<PathBuf>,
    /// csi-grissom GraphML for programs built by the original csi-cc.
    pub graphml: Option<PathBuf>,
    /// Directories of separate debug files (build-id trees, `.gnu_debuglink` targets), as
    /// `csi --debug-dir`.
    pub debug_dirs: Vec<PathBuf>,
    /// The crashed machine's file system, as `csi --sysroot`.
    pub sysroot: Option<PathBuf>,
    /// `from` → `to` prefixes for source paths, tried in order.
    pub substitute_paths: Vec<SubstitutePath>,
    /// Send `csi/lineStates` instead of Unnecessary hint diagnostics.
    pub line_states: bool,
    /// Per-line status glyphs as inlay hints.
    pub status_hints: bool,
    /// The crash store of `csi triage --store` (a SQLite file or a `postgres://` URL) that
    /// `csi/crashBuckets`, `csi/bucketCrashes` and `csi/bucketLineStates` read.
    pub crash_store: Option<String>,
}

/// `.csi.toml` in the workspace root: `executable`, `core` (or `coredump` = `"latest"`, a
/// pid or a program name, and `coredump-dir`), `graphml`, `debug-dirs`,
/// `sysroot`, `crash-store` (a SQLite file relative to the root, or a `postgres://` URL),
/// and `[[substitute-path]] from = "..." to = "..."` tables.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case", default)]
struct CsiToml {
    executable: Option<PathBuf>,
    core: Option<PathBuf>,
    coredump: Option<String>,
    coredump_dir: Option<PathBuf>,
    graphml: Option<PathBuf>,
    debug_dirs: Vec<PathBuf>,
    sysroot: Option<PathBuf>,
    substitute_path: Vec<SubstitutePath>,
    crash_store: Option<String>,
}

impl Config {
    /// Merges a JSON settings object (initialization options or a configuration change;
    /// either flat or under a `csi` key).
    pub fn merge_json(&mut self, v: &serde_json::Value) -> Result<(), String> {
        let v = v.get("csi").unwrap_or(v);
        if !v.is_object() {
            return Ok(());
        }
        let root = self.root.take();
        let incoming: Config =
            serde_json::from_value(v.clone()).map_err(|e| format!("settings: {e}"))?;
        let has = |k: &str| v.get(k).is_some();
        if has("executable") {
            self.executable = incoming.executable;
        }
        if has("core") {
            self.core = incoming.core;
        }
        if has("coredump") {
            self.coredump = incoming.coredump;
        }
        if has("coredumpDir") {
            self.coredump_dir = incoming.coredump_dir;
        }
        if has("graphml") {
            self.graphml = incoming.graphml;
        }
        if has("debugDirs") {
            self.debug_dirs = incoming.debug_dirs;
        }
        if has("sysroot") {
            self.sysroot = incoming.sysroot;
        }
        if has("substitutePaths") {
            self.substitute_paths = incoming.substitute_paths;
        }
        if has("lineStates") {
            self.line_states = incoming.line_states;
        }
        if has("statusHints") {
            self.status_hints = incoming.status_hints;
        }
        if has("crashStore") {
            // An empty string (an editor's unset setting) is no store.
            self.crash_store = incoming.crash_store.filter(|s| !s.is_empty());
        }
        self.root = root;
        Ok(())
    }

    /// Reads `.csi.toml` from the workspace root, if there is one. Settings already given
    /// win over the file for the crash paths.
    pub fn merge_csi_toml(&mut self) -> Result<bool, String> {
        let Some(root) = &self.root else {
            return Ok(false);
        };
        let path = root.join(".csi.toml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(false);
        };
        let t: CsiToml = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let abs = |p: PathBuf| if p.is_relative() { root.join(p) } else { p };
        if self.executable.is_none() {
            self.executable = t.executable.map(abs);
        }
        if self.core.is_none() {
            self.core = t.core.map(abs);
        }
        if self.coredump.is_none() {
            self.coredump = t.coredump;
        }
        if self.coredump_dir.is_none() {
            self.coredump_dir = t.coredump_dir.map(abs);
        }
        if self.graphml.is_none() {
            self.graphml = t.graphml.map(abs);
        }
        if self.debug_dirs.is_empty() {
            self.debug_dirs = t.debug_dirs.into_iter().map(abs).collect();
        }
        if self.sysroot.is_none() {
            self.sysroot = t.sysroot.map(abs);
        }
        if self.crash_store.is_none() {
            self.crash_store = t.crash_store.filter(|s| !s.is_empty()).map(|s| {
                if s.contains("://") || Path::new(&s).is_absolute() {
                    s
                } else {
                    root.join(s).display().to_string()
                }
            });
        }
        self.substitute_paths.extend(t.substitute_path);
        Ok(true)
    }
}

impl Config {
    /// How the settings say a crash is read (separate debug files, sysroot, GraphML).
    pub fn load_options(&self) -> csi_dump::LoadOptions {
        csi_dump::LoadOptions {
            graphml: self.graphml.clone(),
            debug: csi_dump::debug_files::DebugSearch {
                debug_dirs: self.debug_dirs.clone(),
                ..Default::default()
            },
            sysroot: self.sysroot.clone(),
            cache: None,
        }
    }

    /// Where the settings say sources are: the substitute paths, then the workspace.
    pub fn source_paths(&self) -> csi_ide::SourcePaths {
        csi_ide::SourcePaths {
            substitute_paths: self.substitute_paths.clone(),
            root: self.root.clone(),
            by_name_in_input_dir: false,
        }
    }

    /// The crash the settings name: `executable` + `core`, or a core of systemd-coredump's
    /// store (`coredump`), with its notice (pid, signal, time).
    pub fn crash_paths(&self) -> Result<Option<(PathBuf, PathBuf, Option<String>)>, String> {
        if let Some(sel) = &self.coredump {
            let dir = self
                .coredump_dir
                .clone()
                .unwrap_or_else(|| csi_dump::coredump_store::DEFAULT_STORE.into());
            let c = csi_dump::coredump_store::select(&dir, sel).map_err(|e| e.to_string())?;
            let exe = self
                .executable
                .clone()
                .or_else(|| c.executable())
                .ok_or_else(|| {
                    format!(
                        "{}: systemd recorded no executable that exists here; set `executable`",
                        c.path.display()
                    )
                })?;
            let notice = format!("systemd-coredump ({}): {}", c.source, c.describe());
            return Ok(Some((exe, c.path, Some(notice))));
        }
        Ok(match (&self.executable, &self.core) {
            (Some(e), Some(c)) => Some((e.clone(), c.clone(), None)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `debugDirs` / `sysroot` (settings) and `debug-dirs` / `sysroot` (`.csi.toml`, relative
    /// to the workspace root) reach the crash loader as `csi --debug-dir` / `--sysroot` do.
    #[test]
    fn debug_dirs_and_sysroot_from_settings_and_csi_toml() {
        let mut c = Config::default();
        c.merge_json(&serde_json::json!({"csi": {"debugDirs": ["/dbg"], "sysroot": "/prod"}}))
            .unwrap();
        assert_eq!(c.debug_dirs, vec![PathBuf::from("/dbg")]);
        assert_eq!(c.sysroot, Some(PathBuf::from("/prod")));

        let root = std::env::temp_dir().join(format!("csi-config-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join(".csi.toml"),
            "debug-dirs = [\"debug\", \"/usr/lib/debug\"]\nsysroot = \"image\"\n",
        )
        .unwrap();
        let mut c = Config {
            root: Some(root.clone()),
            ..Config::default()
        };
        assert!(c.merge_csi_toml().unwrap());
        assert_eq!(
            c.debug_dirs,
            vec![root.join("debug"), PathBuf::from("/usr/lib/debug")]
        );
        assert_eq!(c.sysroot, Some(root.join("image")));
        std::fs::remove_dir_all(&root).ok();
    }

    /// `crashStore` (settings; "" unsets it) and `crash-store` (`.csi.toml`: a path relative to
    /// the workspace root, a URL as written; the settings win).
    #[test]
    fn crash_store_from_settings_and_csi_toml() {
        let mut c = Config::default();
        c.merge_json(&serde_json::json!({"crashStore": "postgres://h/db"}))
            .unwrap();
        assert_eq!(c.crash_store.as_deref(), Some("postgres://h/db"));
        c.merge_json(&serde_json::json!({"csi": {"crashStore": ""}}))
            .unwrap();
        assert_eq!(c.crash_store, None);
        c.merge_json(&serde_json::json!({"csi": {"lineStates": true}}))
            .unwrap();
        assert_eq!(c.crash_store, None);

        let root = std::env::temp_dir().join(format!("csi-config-store-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join(".csi.toml"), "crash-store = \"ci/crashes.db\"\n").unwrap();
        let mut c = Config {
            root: Some(root.clone()),
            ..Config::default()
        };
        assert!(c.merge_csi_toml().unwrap());
        assert_eq!(
            c.crash_store,
            Some(root.join("ci/crashes.db").display().to_string())
        );
        std::fs::write(
            root.join(".csi.toml"),
            "crash-store = \"postgres://u@h/db\"\n",
        )
        .unwrap();
        let mut c = Config {
            root: Some(root.clone()),
            ..Config::default()
        };
        c.merge_csi_toml().unwrap();
        assert_eq!(c.crash_store.as_deref(), Some("postgres://u@h/db"));
        let mut c = Config {
            root: Some(root.clone()),
            crash_store: Some("/given.db".into()),
            ..Config::default()
        };
        c.merge_csi_toml().unwrap();
        assert_eq!(c.crash_store.as_deref(), Some("/given.db"));
        std::fs::remove_dir_all(&root).ok();
    }
}
