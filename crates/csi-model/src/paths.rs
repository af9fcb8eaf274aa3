//! Source file names as different tools write them (`./src/a.c`, `/abs/src/a.c`, `src/a.c`,
//! `lib/./x.h`): the one place that decides whether two name the same file. Resolving a name
//! to a file on disk (substitute paths, the workspace) is the server's `config::resolve_source`.

use std::borrow::Cow;

/// `path` with its `dir/..` pairs and inner `.` components removed, lexically (a leading
/// `./` and leading `..`s stay): `/w/programs/../lib/compress/../common/cpu.h` →
/// `/w/lib/common/cpu.h`. One header reached through two include directories is one file
/// to the user, and its line states must be one file's: the copies of its `static` functions
/// in units that spell its path differently would otherwise answer for the same line under
/// two names, one of them `never` though the line ran. Lexical, as compilers and debuggers
/// compare paths (a `..` after a symbolic link would point elsewhere on disk; build trees do
/// not do that to their own headers).
pub fn normalize(path: &str) -> Cow<'_, str> {
    let needs = path
        .split('/')
        .enumerate()
        .any(|(i, c)| c == ".." || (c == "." && i > 0));
    if !needs {
        return Cow::Borrowed(path);
    }
    let absolute = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for (i, c) in path.split('/').enumerate() {
        match c {
            "" if i > 0 => {}
            "" => {}
            "." if i == 0 => out.push("."),
            "." => {}
            ".." => match out.last() {
                Some(&last) if last != ".." && last != "." => {
                    out.pop();
                }
                // `/..` is `/`.
                None if absolute => {}
                _ => out.push(".."),
            },
            c => out.push(c),
        }
    }
    let joined = out.join("/");
    Cow::Owned(if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    })
}

/// `a` and `b` name the same source file: equal after dropping `./` components (and
/// [`normalize`]), or one is a path suffix of the other at a `/` boundary.
pub fn same_source(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        let s = normalize(s).replace("/./", "/");
        s.trim_start_matches("./").to_string()
    };
    let (a, b) = (norm(a), norm(b));
    if a == b {
        return true;
    }
    let (long, short) = if a.len() >= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    !short.is_empty()
        && long.ends_with(short.as_str())
        && long.as_bytes()[long.len() - short.len() - 1] == b'/'
}

#[cfg(test)]
mod tests {
    use super::{normalize, same_source};

    #[test]
    fn dot_dot_pairs_are_removed_lexically() {
        for (path, want) in [
            (
                "/w/programs/../lib/compress/../common/cpu.h",
                "/w/lib/common/cpu.h",
            ),
            ("programs/./../lib/x.h", "lib/x.h"),
            ("./src/a.c", "./src/a.c"),
            ("./src/../a.c", "./a.c"),
            ("../lib/x.h", "../lib/x.h"),
            ("../../a/../b.c", "../../b.c"),
            ("a/..", "."),
            ("/..", "/"),
            ("/w//x/./y.c", "/w/x/y.c"),
            ("src/a.c", "src/a.c"),
        ] {
            assert_eq!(normalize(path), want, "{path}");
        }
        assert!(same_source(
            "/w/programs/../lib/decompress/../common/mem.h",
            "lib/common/mem.h"
        ));
    }

    #[test]
    fn suffixes_at_component_boundaries() {
        assert!(same_source("/src/a.c", "a.c"));
        assert!(same_source("a.c", "/src/a.c"));
        assert!(same_source("./lib/x.h", "lib/./x.h"));
        assert!(same_source("/w/lib/./x.h", "lib/x.h"));
        assert!(!same_source("/src/xa.c", "a.c"));
        assert!(!same_source("/src/a.c", ""));
    }
}
