//! Source file names as different tools write them (`./src/a.c`, `/abs/src/a.c`, `src/a.c`,
//! `lib/./x.h`): the one place that decides whether two name the same file. Resolving a name
//! to a file on disk (substitute paths, the workspace) is the server's `config::resolve_source`.

/// `a` and `b` name the same source file: equal after dropping `./` components, or one is a
/// path suffix of the other at a `/` boundary.
pub fn same_source(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        let s = s.replace("/./", "/");
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
    use super::same_source;

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
