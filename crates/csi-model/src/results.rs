//! Result types shared by the analyses and every view of them (CLI, server).

/// Best-effort coverage of one node (§6.7): ran on every run consistent with the report,
/// on none, or on some.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Coverage {
    Yes,
    No,
    Maybe,
}

impl Coverage {
    /// `yes`, `no` or `maybe`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Coverage::Yes => "yes",
            Coverage::No => "no",
            Coverage::Maybe => "maybe",
        }
    }
}

/// Status of a source line, projected from its nodes (DESIGN §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineStatus {
    /// Some node on the line surely ran.
    Must,
    /// Not decided either way.
    May,
    /// No node on the line ran.
    Never,
}

impl LineStatus {
    /// `must`, `may` or `never`.
    pub fn as_str(&self) -> &'static str {
        match self {
            LineStatus::Must => "must",
            LineStatus::May => "may",
            LineStatus::Never => "never",
        }
    }
}

/// Answer to a control-flow query (§6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryAnswer {
    Possible,
    Impossible,
}

impl QueryAnswer {
    /// `possible` or `impossible`.
    pub fn as_str(&self) -> &'static str {
        match self {
            QueryAnswer::Possible => "possible",
            QueryAnswer::Impossible => "impossible",
        }
    }
}
