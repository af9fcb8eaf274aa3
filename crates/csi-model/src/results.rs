//! Result types shared by the analyses and every view of them (CLI, server).

/// Best-effort coverage of one node (§6.7): ran on every run consistent with the report,
/// on none, or on some.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    Yes,
    No,
    Maybe,
}

/// Status of a source line, projected from its nodes (DESIGN §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineStatus {
    /// Some node on the line surely ran.
    Must,
    /// Not decided either way.
    May,
    /// No node on the line ran.
    Never,
}

/// Answer to a control-flow query (§6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryAnswer {
    Possible,
    Impossible,
}
