//! Where a source file named in the debug info (or the program graph) lives on this machine:
//! substitute paths, the path as written, relative to a root and to the input's directories,
//! and the workspace file with the longest matching path suffix. The one resolver of the
//! editor (`csi-lsp`, `.csi.toml`'s `[[substitute-path]]`) and the command line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A `from` → `to` prefix rewrite of source paths (gdb's `set substitute-path`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct SubstitutePath {
    pub from: String,
    pub to: String,
}

impl SubstitutePath {
    /// `FROM=TO` (the command line's form).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.split_once('=') {
            Some((from, to)) if !from.is_empty() => Ok(SubstitutePath {
                from: from.to_string(),
                to: to.to_string(),
            }),
            _ => Err(format!("`{s}`: expected FROM=TO")),
        }
    }
}

/// How source paths are looked for.
#[derive(Clone, Debug, Default)]
pub struct SourcePaths {
    /// `from` → `to` prefixes, tried in order, before anything else.
    pub substitute_paths: Vec<SubstitutePath>,
    /// Relative paths are tried under it first (the workspace; the command line's working
    /// directory).
    pub root: Option<PathBuf>,
    /// Last of the candidates: a file of the same name in the input's directory (the command
    /// line's; the editor has the workspace index instead).
    pub by_name_in_input_dir: bool,
}

impl SourcePaths {
    /// The places `key` may be, in order: its substitutions, then the path as written
    /// (absolute, or relative to the root and to `input_dir` and each of its ancestors),
    /// then (`by_name_in_input_dir`) the file name in `input_dir`.
    pub fn candidates(&self, key: &str, input_dir: Option<&Path>) -> Vec<PathBuf> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        for s in &self.substitute_paths {
            if let Some(rest) = key.strip_prefix(&s.from) {
                candidates.push(PathBuf::from(format!("{}{}", s.to, rest)));
            }
        }
        let p = Path::new(key);
        let input_dir =
            input_dir.map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()));
        if p.is_absolute() {
            candidates.push(p.to_path_buf());
        } else {
            if let Some(root) = &self.root {
                candidates.push(root.join(p));
            }
            if let Some(d) = &input_dir {
                candidates.extend(d.ancestors().map(|a| a.join(p)));
            }
        }
        if self.by_name_in_input_dir {
            if let (Some(d), Some(name)) = (&input_dir, p.file_name()) {
                candidates.push(d.join(name));
            }
        }
        candidates
    }

    /// Where a source path from the debug info lives: the first of its
    /// [candidates](Self::candidates) that is a file, else the workspace file with the longest
    /// matching path suffix; canonical.
    pub fn resolve(
        &self,
        key: &str,
        input_dir: Option<&Path>,
        index: &WorkspaceIndex,
    ) -> Option<PathBuf> {
        let found = self
            .candidates(key, input_dir)
            .into_iter()
            .find(|c| c.is_file())
            .or_else(|| index.suffix_match(Path::new(key)))?;
        Some(std::fs::canonicalize(&found).unwrap_or(found))
    }

    /// The text of a source file, line by line: the first candidate that reads (no workspace
    /// index).
    pub fn text(&self, key: &str, input_dir: Option<&Path>) -> Option<Vec<String>> {
        self.candidates(key, input_dir)
            .iter()
            .find_map(|c| std::fs::read_to_string(c).ok())
            .map(|t| t.lines().map(str::to_string).collect())
    }
}

/// Files of the workspace by file name, for suffix matching.
#[derive(Debug, Default)]
pub struct WorkspaceIndex {
    by_name: HashMap<String, Vec<PathBuf>>,
}

const SKIP_DIRS: &[&str] = &[".git", "target", "node_modules", ".cache", "build"];
const MAX_FILES: usize = 200_000;

impl WorkspaceIndex {
    pub fn new(root: Option<&Path>) -> Self {
        let mut by_name: HashMap<String, Vec<PathBuf>> = HashMap::new();
        let mut stack: Vec<PathBuf> = root.map(Path::to_path_buf).into_iter().collect();
        let mut seen = 0usize;
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name().to_string_lossy().into_owned();
                if ft.is_dir() {
                    if !SKIP_DIRS.contains(&name.as_str()) {
                        stack.push(e.path());
                    }
                } else if ft.is_file() {
                    seen += 1;
                    if seen > MAX_FILES {
                        return WorkspaceIndex { by_name };
                    }
                    by_name.entry(name).or_default().push(e.path());
                }
            }
        }
        WorkspaceIndex { by_name }
    }

    /// The workspace file whose path ends with the most components of `p`.
    fn suffix_match(&self, p: &Path) -> Option<PathBuf> {
        let name = p.file_name()?.to_string_lossy();
        let cands = self.by_name.get(name.as_ref())?;
        let want: Vec<_> = p
            .components()
            .rev()
            .filter(|c| c.as_os_str() != ".")
            .collect();
        cands
            .iter()
            .map(|c| {
                let have: Vec<_> = c.components().rev().collect();
                let n = want.iter().zip(&have).take_while(|(a, b)| a == b).count();
                (n, c)
            })
            .max_by_key(|(n, _)| *n)
            .map(|(_, c)| c.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_in_order() {
        let sp = SourcePaths {
            substitute_paths: vec![SubstitutePath::parse("./src=/home/me/src").unwrap()],
            root: Some(PathBuf::from("/ws")),
            by_name_in_input_dir: true,
        };
        let dir = Path::new("/nonexistent-csi/a/b");
        assert_eq!(
            sp.candidates("./src/x.c", Some(dir)),
            [
                "/home/me/src/x.c",
                "/ws/./src/x.c",
                "/nonexistent-csi/a/b/./src/x.c",
                "/nonexistent-csi/a/./src/x.c",
                "/nonexistent-csi/./src/x.c",
                "/./src/x.c",
                "/nonexistent-csi/a/b/x.c",
            ]
            .map(PathBuf::from)
        );
        // Absolute: as written, then by name; no root, no ancestors.
        assert_eq!(
            sp.candidates("/build/x.c", Some(dir)),
            ["/build/x.c", "/nonexistent-csi/a/b/x.c"].map(PathBuf::from)
        );
        assert!(SubstitutePath::parse("nothing").is_err());
        assert!(SubstitutePath::parse("=/x").is_err());
    }

    #[test]
    fn resolves_through_substitutions_then_the_workspace_index() {
        let root = std::env::temp_dir().join(format!("csi-ide-source-{}", std::process::id()));
        std::fs::create_dir_all(root.join("deep/src")).unwrap();
        std::fs::write(root.join("deep/src/x.c"), "int main;\n").unwrap();
        let want = std::fs::canonicalize(root.join("deep/src/x.c")).unwrap();
        let index = WorkspaceIndex::new(Some(&root));
        let plain = SourcePaths::default();
        // The longest path suffix in the workspace.
        assert_eq!(
            plain.resolve("/gone/src/x.c", None, &index),
            Some(want.clone())
        );
        assert_eq!(plain.resolve("/gone/src/y.c", None, &index), None);
        let sub = SourcePaths {
            substitute_paths: vec![SubstitutePath {
                from: "/gone".into(),
                to: root.join("deep").display().to_string(),
            }],
            ..Default::default()
        };
        assert_eq!(
            sub.resolve("/gone/src/x.c", None, &WorkspaceIndex::default()),
            Some(want)
        );
        assert_eq!(
            sub.text("/gone/src/x.c", None),
            Some(vec!["int main;".to_string()])
        );
        std::fs::remove_dir_all(&root).ok();
    }
}
