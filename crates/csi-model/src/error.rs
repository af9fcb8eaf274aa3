//! Errors of the readers: always the file, the element, and the reason.

use std::fmt;

/// A reader could not use its input. `file` is the path as given (or a description such as
/// `<memory>`), `element` locates the problem inside it (`line 12, column 5: <edge>`,
/// `stack[1].call[0]`), `reason` says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub element: String,
    pub reason: String,
}

impl InputError {
    pub fn new(
        file: impl Into<String>,
        element: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        InputError {
            file: file.into(),
            element: element.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.element.is_empty() {
            write!(f, "{}: {}", self.file, self.reason)
        } else {
            write!(f, "{}: {}: {}", self.file, self.element, self.reason)
        }
    }
}

impl std::error::Error for InputError {}
