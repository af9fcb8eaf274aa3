//! Function names as people read them: the one place that turns linkage names into
//! source-level names, for every view (terminal, JSON, editor).

use std::borrow::Cow;

/// The demangled form of an Itanium C++ linkage name (`_ZN3xml8Document8LoadFileEP8_IO_FILE`
/// → `xml::Document::LoadFile(_IO_FILE*)`); `None` for a name that is not mangled or does not
/// demangle.
pub fn demangle(linkage: &str) -> Option<String> {
    if !linkage.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(linkage).ok()?;
    sym.demangle().ok()
}

/// The name to show for a function: its demangled linkage name when it has a mangled one,
/// else its name (demangled if it is itself mangled, as a symbol-table name may be).
pub fn display_name<'a>(name: &'a str, linkage: Option<&str>) -> Cow<'a, str> {
    match linkage.and_then(demangle).or_else(|| demangle(name)) {
        Some(d) => Cow::Owned(d),
        None => Cow::Borrowed(name),
    }
}

/// A shown name as a call, `walk()`: demangled C++ names already end in their parameter
/// list.
pub fn call_form(shown: &str) -> String {
    if shown.ends_with(')') {
        shown.to_string()
    } else {
        format!("{shown}()")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itanium_names_demangle() {
        assert_eq!(
            demangle("_ZN3xml8Document8LoadFileEP8_IO_FILE").as_deref(),
            Some("xml::Document::LoadFile(_IO_FILE*)")
        );
        assert_eq!(
            display_name("LoadFile", Some("_ZN3xml8Document8LoadFileEP8_IO_FILE")),
            "xml::Document::LoadFile(_IO_FILE*)"
        );
        assert_eq!(display_name("_Z4walkv", None), "walk()");
    }

    #[test]
    fn c_names_and_garbage_stay_as_they_are() {
        assert_eq!(display_name("walk_sum", None), "walk_sum");
        assert_eq!(display_name("main", Some("main")), "main");
        assert_eq!(demangle("_Z"), None);
        assert_eq!(display_name("_Zfoo", None), "_Zfoo");
        assert_eq!(call_form("walk"), "walk()");
        assert_eq!(
            call_form("xml::Document::LoadFile(_IO_FILE*)"),
            "xml::Document::LoadFile(_IO_FILE*)"
        );
    }
}
