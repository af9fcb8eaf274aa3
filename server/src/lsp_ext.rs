//! CSI's own LSP messages (docs/protocol.md) as types, in the manner of rust-analyzer's
//! `lsp/ext.rs`: one type per `csi/*` request or notification with its params and result,
//! camelCase on the wire. Handlers get params parsed once (a malformed request is an
//! `InvalidParams` error before any handler runs) and [`crate::to_proto`] fills the results.
//!
//! The wire has its own structs here, never the serde derives of model types, so that a change
//! in csi-model cannot change the protocol.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

/// A message that also runs as the command `csi.<name>` of `workspace/executeCommand`.
pub trait CsiCommand {
    type Params: DeserializeOwned;
    type Result: Serialize;
    /// The command's name (`csi.stack`).
    const COMMAND: &'static str;
    /// What the params look like, said (after the command's name) when they do not parse.
    const SHAPE: &'static str;
}

/// Params of `R` as a handler takes them: the object, or the array holding it as
/// `workspace/executeCommand`'s `arguments` do (the first element; an empty array or `null`
/// is `{}`). Params that do not parse are an error naming the command and the shape expected.
pub struct Args<R: CsiCommand>(pub R::Params);

impl<'de, R: CsiCommand> Deserialize<'de> for Args<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse::<R>(Value::deserialize(d)?)
            .map(Args)
            .map_err(D::Error::custom)
    }
}

/// The params of `R` from a request's `params` or a command's `arguments` (see [`Args`]).
pub fn parse<R: CsiCommand>(v: Value) -> Result<R::Params, String> {
    let v = match v {
        Value::Array(a) => a.into_iter().next().unwrap_or(Value::Null),
        v => v,
    };
    let v = if v.is_null() {
        Value::Object(Default::default())
    } else {
        v
    };
    serde_json::from_value(v).map_err(|e| format!("{} {}: {e}", R::COMMAND, R::SHAPE))
}

/// Declares a request that is also a command: its marker type, `Request` and `CsiCommand`.
macro_rules! request {
    ($(#[$doc:meta])* $name:ident, $method:literal, $command:literal, $params:ty => $result:ty, $shape:literal) => {
        $(#[$doc])*
        pub enum $name {}

        impl Request for $name {
            type Params = $params;
            type Result = $result;
            const METHOD: &'static str = $method;
        }

        impl CsiCommand for $name {
            type Params = $params;
            type Result = $result;
            const COMMAND: &'static str = $command;
            const SHAPE: &'static str = $shape;
        }
    };
}

fn is_false(b: &bool) -> bool {
    !*b
}

// ---- Capabilities ----

/// What the server puts under `capabilities.experimental` in its `initialize` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentalCapabilities {
    pub csi: CsiCapabilities,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiCapabilities {
    /// The server sends `csi/lineStates` to clients that set `lineStates`.
    pub line_states: bool,
    /// The version of these messages.
    pub version: u32,
    /// A crash (from `.csi.toml` or the settings) is opened after `initialized`; `csi/stack`
    /// then answers it (waiting for the open): a client shows it without waiting for a source
    /// file to be opened.
    pub crash_at_start: bool,
}

// ---- Opening a crash ----

request! {
    /// `csi/openCrash`: opens an executable and its core; answers as `csi/stack`.
    OpenCrash, "csi/openCrash", "csi.openCrash", OpenCrashParams => StackResult,
    r#"needs {"executable": ..., "core": ...}"#
}

/// Paths relative to the workspace root, or absolute.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenCrashParams {
    pub executable: String,
    pub core: String,
}

request! {
    /// `csi/openReport`: opens a csi-grissom GraphML and failure report; answers as `csi/stack`.
    OpenReport, "csi/openReport", "csi.openReport", OpenReportParams => StackResult,
    r#"needs {"graph": ..., "report": ...}"#
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenReportParams {
    pub graph: String,
    pub report: String,
}

/// `csi.clear` (a command only): closes the crash; answers `null`.
pub enum Clear {}

impl CsiCommand for Clear {
    type Params = ClearParams;
    type Result = ();
    const COMMAND: &'static str = "csi.clear";
    const SHAPE: &'static str = "takes {}";
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClearParams {}

// ---- The stack ----

request! {
    /// `csi/stack`: threads and frames.
    Stack, "csi/stack", "csi.stack", StackParams => StackResult,
    r#"takes {"range"?: {"thread"?, "from"?, "to"?}}"#
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StackParams {
    /// Frames `from..to` of one thread only (every other thread's list empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<FrameRange>,
}

/// Frame indices of one thread. Bounds are signed so that a negative one (a client counting
/// back from the end) answers what lies in range (counted as 0) rather than an error.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FrameRange {
    pub thread: i64,
    pub from: i64,
    pub to: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackResult {
    pub title: String,
    pub signal: Option<Signal>,
    pub selected: Selected,
    pub notices: Vec<String>,
    pub threads: Vec<Thread>,
}

/// The signal that stopped the process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Signal {
    pub signo: i32,
    pub name: String,
    pub code: i32,
    /// snake_case unlike the rest of the protocol: the name clients have always read (it came
    /// from csi-model's own serialization before the wire had its types).
    pub fault_address: Option<u64>,
}

/// The selected frame and path step (`step` null: the newest).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Selected {
    pub thread: usize,
    pub frame: usize,
    pub step: Option<usize>,
    /// The selected call inlined into the frame (`Frame::inlined`), if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    pub index: usize,
    pub tid: u64,
    pub crashed: bool,
    /// Every frame of the thread, listed or not.
    pub frame_count: usize,
    pub frames: Vec<Frame>,
    /// The frames left out of a long stack (`from..to`); absent when none are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Omitted {
    pub from: usize,
    pub to: usize,
}

/// A frame (0-based `line` and `column`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    pub index: usize,
    /// Demangled.
    pub function: Option<String>,
    /// The mangled name, only where there is one (C++).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linkage_name: Option<String>,
    /// The debug info's file name.
    pub file: Option<String>,
    pub uri: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub module: String,
    /// Hexadecimal (`0x5575f4a991ee`).
    pub pc: String,
    pub analysed: bool,
    pub path_steps: usize,
    /// The calls inlined at the frame's pc, innermost first, each as a frame of its own (its
    /// position, and whether its activation is analysed: code instrumented before
    /// optimization), with this frame's `index`: `csi/selectFrame`'s `inline` selects one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<Frame>,
}

// ---- Frames and path traces ----

request! {
    /// `csi/selectFrame`: selects a frame, or one call inlined into it (hints, lenses and line
    /// states follow); answers its path trace.
    SelectFrame, "csi/selectFrame", "csi.selectFrame", SelectFrameParams => Option<PathTraceResult>,
    r#"needs {"thread", "frame", "inline"?}"#
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SelectFrameParams {
    #[serde(default)]
    pub thread: usize,
    pub frame: usize,
    /// A call inlined into the frame, as the debugger's Call Stack lists them (0 = innermost;
    /// `Frame::inlined`): its own activation's lines and path trace instead of the frame's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<usize>,
}

request! {
    /// `csi/pathTrace`: the decoded path of a frame (default: the selected one); null when there
    /// is no such frame.
    PathTrace, "csi/pathTrace", "csi.pathTrace", PathTraceParams => Option<PathTraceResult>,
    r#"takes {"thread"?, "frame"?, "inline"?}"#
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct PathTraceParams {
    /// With `frame` (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<usize>,
    /// None: the selected frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<usize>,
    /// With `frame`: a call inlined into it (0 = innermost; `Frame::inlined`), whose own
    /// activation's path is wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathTraceResult {
    pub thread: usize,
    pub frame: usize,
    /// The selected call inlined into the frame, if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<usize>,
    /// 0-based index into `steps`.
    pub current: usize,
    /// Why the frame has no path, when it has none for a reason.
    pub note: Option<String>,
    /// Oldest first.
    pub steps: Vec<PathStep>,
}

/// A step of a path trace (0-based `line`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathStep {
    pub file: String,
    pub uri: Option<String>,
    pub line: u32,
}

request! {
    /// `csi/stepPath`: moves the selected frame's current step.
    StepPath, "csi/stepPath", "csi.stepPath", StepPathParams => StepResult,
    r#"takes {"delta"?: integer}"#
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct StepPathParams {
    /// Steps forward (negative: back); default one back.
    #[serde(default = "one_back")]
    pub delta: i64,
}

fn one_back() -> i64 {
    -1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    /// 0-based.
    pub step: usize,
    pub of: usize,
    pub file: String,
    pub uri: Option<String>,
    pub line: u32,
}

// ---- Queries and slices ----

request! {
    /// `csi/query`: may a line run (not run, run before another) in the crashed execution.
    Query, "csi/query", "csi.query", QueryParams => QueryResult,
    r#"takes {"kind"?, "uri", "line", "uri2"?, "line2"?}"#
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueryParams {
    #[serde(default)]
    pub kind: QueryKind,
    #[serde(default)]
    pub uri: Option<String>,
    /// 0-based.
    #[serde(default, deserialize_with = "line")]
    pub line: Option<u32>,
    /// The second line of `mayRunBefore`.
    #[serde(default)]
    pub uri2: Option<String>,
    #[serde(default, deserialize_with = "line2")]
    pub line2: Option<u32>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QueryKind {
    #[default]
    MayRun,
    MayNotRun,
    MayRunBefore,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct QueryResult {
    pub kind: QueryKind,
    pub answer: QueryAnswer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryAnswer {
    Possible,
    Impossible,
}

request! {
    /// `csi/slice`: the restricted slice from the crash point or a line (shown until cleared);
    /// null after `{"clear": true}`.
    Slice, "csi/slice", "csi.slice", SliceParams => Option<SliceResult>,
    r#"takes {"uri"?, "line"?, "variables"?: [string], "clear"?: bool}"#
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SliceParams {
    /// Forget the slice shown; nothing else is read.
    #[serde(default, skip_serializing_if = "is_false")]
    pub clear: bool,
    /// With `line` (0-based): slice from that line; neither: from the crash point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(
        default,
        deserialize_with = "line",
        skip_serializing_if = "Option::is_none"
    )]
    pub line: Option<u32>,
    /// Source names to slice for (none or empty: every variable used on the line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SliceResult {
    pub criterion: SliceCriterion,
    pub unknown_variables: Vec<String>,
    /// The slice restricted by the crash's trace data.
    pub restricted: Vec<SliceFile>,
    /// The plain static slice from the same criterion.
    pub unrestricted: Vec<SliceFile>,
    pub restricted_lines: usize,
    pub unrestricted_lines: usize,
    /// 1 − restrictedLines / unrestrictedLines, to three decimals.
    pub reduction: f64,
}

/// Where a slice starts (0-based `line`, null when the criterion has no source line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SliceCriterion {
    pub uri: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub function: Option<String>,
    pub thread: usize,
    /// The frame whose stack context the slice follows; null: every calling context.
    pub frame: Option<usize>,
    /// The names asked for; null: every variable used there.
    pub variables: Option<Vec<String>>,
}

/// One file's lines of a slice (0-based).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SliceFile {
    pub uri: Option<String>,
    pub file: String,
    pub lines: Vec<u32>,
}

/// A 0-based line parameter: a number from 0 to `u32::MAX - 1` (its 1-based line must fit a
/// `u32`), so that a bigger one is refused rather than wrapped into another line.
fn zero_based_line<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<Option<u32>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|l| u32::try_from(l).ok())
            .filter(|&l| l < u32::MAX)
            .map(Some)
            .ok_or_else(|| {
                D::Error::custom(format!(
                    "`{key}` must be a 0-based line number (0 to {}), not {v}",
                    u32::MAX - 1
                ))
            }),
    }
}

fn line<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    zero_based_line(d, "line")
}

fn line2<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    zero_based_line(d, "line2")
}

// ---- Line states ----

/// `csi/lineStates` (server → client): a document's line states.
pub enum LineStates {}

impl Notification for LineStates {
    type Params = LineStatesParams;
    const METHOD: &'static str = "csi/lineStates";
}

/// A document's lines (0-based): the global answer, and the selected frame's own under
/// `frame` (null when the frame has no analysis).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LineStatesParams {
    pub uri: String,
    pub version: Option<i32>,
    #[serde(flatten)]
    pub lines: LineSets,
    pub frame: Option<FrameLineStates>,
    /// The document was edited: its lines no longer match (every set empty).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stale: bool,
}

/// Lines that must, may and never have run; `partial` ones had some code run and some not.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LineSets {
    pub must: Vec<u32>,
    pub may: Vec<u32>,
    pub never: Vec<u32>,
    pub partial: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameLineStates {
    pub thread: usize,
    pub frame: usize,
    /// The selected call inlined into the frame, if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<usize>,
    #[serde(flatten)]
    pub lines: LineSets,
}

// ---- The crash store ----

request! {
    /// `csi/crashBuckets`: the store's buckets, by count.
    CrashBuckets, "csi/crashBuckets", "csi.crashBuckets", BucketsParams => CrashBucketsResult,
    r#"takes {"program"?: string}"#
}

/// `{"program"?}`: the buckets of one program only.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BucketsParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

request! {
    /// `csi/bucketCrashes`: a bucket's crashes, oldest first.
    BucketCrashes, "csi/bucketCrashes", "csi.bucketCrashes", BucketParams => BucketCrashesResult,
    r#"needs {"program": ..., "signature": ...} (strings)"#
}

request! {
    /// `csi/bucketLineStates`: a bucket's lines per file.
    BucketLineStates, "csi/bucketLineStates", "csi.bucketLineStates", BucketParams => BucketLineStatesResult,
    r#"needs {"program": ..., "signature": ...} (strings)"#
}

/// `{"program", "signature"}`: the bucket the two bucket requests name.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BucketParams {
    pub program: String,
    pub signature: String,
}

/// `store` null and `message` saying why when no store is set or its file does not exist.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CrashBucketsResult {
    pub store: Option<String>,
    pub message: Option<String>,
    pub buckets: Vec<BucketItem>,
}

/// A bucket in the list.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketItem {
    pub program: String,
    pub signature: String,
    pub signal: String,
    pub frames: Vec<String>,
    pub count: u64,
    /// Seconds since the epoch, and as text (`2025-11-24 06:55:01 UTC`).
    pub first_time: Option<u64>,
    pub last_time: Option<u64>,
    pub first_time_text: Option<String>,
    pub last_time_text: Option<String>,
    /// The oldest crash: its core, executable and content hash.
    pub representative: CrashItem,
    /// Crash site (`file:line`, `?` unknown) → crashes.
    pub sites: BTreeMap<String, u64>,
    pub lines_analysed: bool,
    /// The bucket carries `csi triage --passing` results (suspicious lines).
    pub has_passing: bool,
    pub passing_runs: Option<u64>,
}

/// A crash of a bucket: what `csi/openCrash` takes (`executable`, `core`) and more.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrashItem {
    pub core: String,
    pub executable: String,
    pub time: Option<u64>,
    pub time_text: Option<String>,
    pub site: Option<String>,
    pub hash: String,
    pub signal: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BucketCrashesResult {
    pub store: String,
    pub program: String,
    pub signature: String,
    pub crashes: Vec<CrashItem>,
}

/// A suspicious line of a bucket (0-based `line`): Ochiai's interval over every way of
/// resolving the crashes' and passing runs' Maybes, the crashes / passing runs it surely and
/// possibly ran in, the crashes stopped in it, and its rank in the bucket (1 = most
/// suspicious).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuspiciousLine {
    pub line: u32,
    pub ochiai: [f64; 2],
    pub failed: [usize; 2],
    pub passed: [usize; 2],
    pub on_stack: usize,
    pub rank: usize,
}

/// One file of a bucket: the shape of `csi/lineStates` (`version` and `frame` null, `must` =
/// lines that ran in every crash of the bucket, `never` = in none, `may` and `partial`
/// empty), the file key(s) of the debug info, and the passing-run results.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketFile {
    pub uri: Option<String>,
    pub version: Option<i32>,
    /// The resolved file (or the debug info's name when not found).
    pub file: String,
    pub keys: Vec<String>,
    #[serde(flatten)]
    pub lines: LineSets,
    pub frame: Option<FrameLineStates>,
    pub suspicious: Vec<SuspiciousLine>,
    /// Lines that ran in every crash of the bucket and in no passing run.
    pub failing_only: Vec<u32>,
    /// Lines that ran in every passing run and in no crash of the bucket.
    pub passing_only: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketLineStatesResult {
    pub store: String,
    pub program: String,
    pub signature: String,
    pub count: u64,
    pub lines_analysed: bool,
    /// Passing runs compared (null: the bucket has no `csi triage --passing` results).
    pub passing_runs: Option<usize>,
    pub files: Vec<BucketFile>,
    pub notices: Vec<String>,
}

// ---- Function spans ----

request! {
    /// `csi/functionSpans`: every function defined in a document, with its span and global
    /// counts.
    FunctionSpans, "csi/functionSpans", "csi.functionSpans", FunctionSpansParams => FunctionSpansResult,
    r#"needs {"uri": string}"#
}

/// `{"uri"}`: the document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionSpansParams {
    pub uri: String,
}

/// The functions defined in the document, by first line. Empty for a file that is not a
/// source of the program, and for a document edited since it was opened (`stale`: the
/// analysis' lines no longer match it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionSpansResult {
    pub uri: String,
    pub functions: Vec<FunctionSpan>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub stale: bool,
}

/// A function (0-based, inclusive `first` and `last`: its declaration line, else its first
/// line with code, through its last line with code) and how many lines of that span must, may
/// and never have run (the global answer).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionSpan {
    /// Demangled.
    pub name: String,
    /// The debug info's file name.
    pub file: String,
    pub first: u32,
    pub last: u32,
    pub must: usize,
    pub may: usize,
    pub never: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every request `csi/<name>` is the command `csi.<name>`.
    #[test]
    fn methods_are_their_commands() {
        fn same<R: Request + CsiCommand>() {
            assert_eq!(R::METHOD.replace('/', "."), <R as CsiCommand>::COMMAND);
        }
        same::<OpenCrash>();
        same::<OpenReport>();
        same::<Stack>();
        same::<SelectFrame>();
        same::<PathTrace>();
        same::<StepPath>();
        same::<Query>();
        same::<Slice>();
        same::<CrashBuckets>();
        same::<BucketCrashes>();
        same::<BucketLineStates>();
        same::<FunctionSpans>();
    }

    #[test]
    fn params_as_object_array_or_nothing() {
        for v in [
            json!({}),
            json!([]),
            json!(null),
            json!([null]),
            json!([{}]),
        ] {
            let p = parse::<StepPath>(v.clone()).unwrap();
            assert_eq!(p.delta, -1, "{v}");
        }
        let p = parse::<SelectFrame>(json!([{"frame": 2}, "ignored"])).unwrap();
        assert_eq!((p.thread, p.frame), (0, 2));
        assert_eq!(
            parse::<SelectFrame>(json!({"thread": 1})).unwrap_err(),
            r#"csi.selectFrame needs {"thread", "frame", "inline"?}: missing field `frame`"#
        );
        assert!(parse::<Stack>(json!(5))
            .unwrap_err()
            .starts_with(r#"csi.stack takes {"range"?"#));
    }

    #[test]
    fn lines_are_zero_based_and_fit_u32() {
        let p = parse::<Slice>(json!({"uri": "u", "line": u32::MAX - 1})).unwrap();
        assert_eq!(p.line, Some(u32::MAX - 1));
        assert_eq!(parse::<Slice>(json!({"line": null})).unwrap().line, None);
        for bad in [json!(u32::MAX), json!(-1), json!("28"), json!(28.5)] {
            let e = parse::<Query>(json!({"uri2": "u", "line2": bad})).unwrap_err();
            assert!(e.contains("`line2` must be a 0-based line number"), "{e}");
        }
    }

    /// Command arguments the server puts in code lenses, and the stale line states, keep the
    /// shapes they had as `json!` literals.
    #[test]
    fn serialized_shapes() {
        let clear = SliceParams {
            clear: true,
            ..Default::default()
        };
        assert_eq!(json!(clear), json!({"clear": true}));
        assert_eq!(
            json!(SelectFrameParams {
                thread: 1,
                frame: 2,
                inline: None
            }),
            json!({"thread": 1, "frame": 2})
        );
        assert_eq!(
            json!(SelectFrameParams {
                thread: 1,
                frame: 2,
                inline: Some(0)
            }),
            json!({"thread": 1, "frame": 2, "inline": 0})
        );
        let stale = LineStatesParams {
            uri: "file:///a.c".into(),
            version: Some(3),
            lines: LineSets::default(),
            frame: None,
            stale: true,
        };
        assert_eq!(
            json!(stale),
            json!({"uri": "file:///a.c", "version": 3, "must": [], "may": [], "never": [],
                   "partial": [], "frame": null, "stale": true})
        );
        let fresh = LineStatesParams {
            stale: false,
            ..stale
        };
        assert!(json!(fresh).get("stale").is_none());
    }
}
