//! `csi-lsp`: the crash analysis in any LSP editor (DESIGN §7). Only this crate knows LSP;
//! [`session`] holds an opened crash as plain data, [`views`] computes what the editor shows of
//! it (still plain data), [`lsp_ext`] types CSI's own messages, [`to_proto`] converts into LSP
//! and those types, and the handlers below are thin. The session is immutable and swapped
//! whole when a crash is (re)opened.

pub mod config;
pub mod crashes;
pub mod dap;
mod disasm;

pub mod lsp_ext;
pub mod to_proto;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use dashmap::DashMap;
use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::request::Request;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, ClientSocket, LanguageServer, LspService};

use config::Config;
use csi_ide::session::{self, Selection, Session};
use lsp_ext::{Args, CsiCommand};
use to_proto::Text;

struct Doc {
    version: i32,
    text: String,
    /// Edited since it was opened: the analysis' lines may no longer match, so nothing is
    /// shown for it until it is reopened unchanged.
    edited: bool,
}

#[derive(Default, Clone, Copy)]
struct ClientCaps {
    inlay_refresh: bool,
    lens_refresh: bool,
    work_done: bool,
}

#[derive(Default)]
struct State {
    session: RwLock<Option<Arc<Session>>>,
    selection: Mutex<Selection>,
    docs: DashMap<String, Doc>,
    config: RwLock<Config>,
    caps: RwLock<ClientCaps>,
    /// Files we published diagnostics for (to clear them).
    published: Mutex<Vec<Uri>>,
    /// The open session's slicer (its SDG is built on the first `csi/slice`).
    slicer: Mutex<Option<csi_analysis::slice::Slicer>>,
    /// The slice shown in hints and lenses.
    slice: RwLock<Option<session::ShownSlice>>,
    /// Held from `initialize` until the crash named by `.csi.toml` / the settings is open
    /// (in `initialized`): a command arriving meanwhile (the editor asking for the stack at
    /// once) waits for that crash instead of answering "no crash is open".
    opening_at_start: Arc<tokio::sync::Mutex<()>>,
    opening_guard: Mutex<Option<tokio::sync::OwnedMutexGuard<()>>>,
}

pub struct Backend {
    client: Client,
    state: Arc<State>,
}

/// Declares every custom request with the method that runs it: the handler registered for
/// `csi/<name>`, and the dispatch of the command `csi.<name>` to the same method.
macro_rules! csi_requests {
    ($($req:ident => $handler:ident: $run:ident),* $(,)?) => {
        /// The service with every custom method registered; serve it over stdio or any
        /// transport.
        pub fn service() -> (LspService<Backend>, ClientSocket) {
            LspService::build(|client| Backend {
                client,
                state: Arc::new(State::default()),
            })
            $(.custom_method(<lsp_ext::$req as Request>::METHOD, Backend::$handler))*
            .finish()
        }

        impl Backend {
            $(
                async fn $handler(
                    &self,
                    Args(p): Args<lsp_ext::$req>,
                ) -> Result<<lsp_ext::$req as CsiCommand>::Result> {
                    isolated(<lsp_ext::$req as CsiCommand>::COMMAND, self.$run(p)).await
                }
            )*

            /// `workspace/executeCommand`: the command's first argument as the request's
            /// params, the same method, the result as JSON.
            async fn run_command(&self, name: &str, args: Value) -> Result<Value> {
                match name {
                    $(<lsp_ext::$req as CsiCommand>::COMMAND => {
                        command::<lsp_ext::$req, _>(args, |p| self.$run(p)).await
                    })*
                    <lsp_ext::Clear as CsiCommand>::COMMAND => {
                        command::<lsp_ext::Clear, _>(args, |p| self.clear(p)).await
                    }
                    _ => isolated(name, self.unknown_command(name)).await,
                }
            }
        }
    };
}

csi_requests! {
    OpenCrash => open_crash_request: open_crash,
    OpenReport => open_report_request: open_report,
    SelectFrame => select_frame_request: select_frame,
    StepPath => step_path_request: step_path,
    Stack => stack_request: stack,
    PathTrace => path_trace_request: path_trace,
    Query => query_request: query,
    Slice => slice_request: slice,
    CrashBuckets => crash_buckets_request: crash_buckets,
    BucketCrashes => bucket_crashes_request: bucket_crashes,
    BucketLineStates => bucket_line_states_request: bucket_line_states,
    FunctionSpans => function_spans_request: function_spans,
}

/// Commands (`workspace/executeCommand`); all but `csi.clear` are also the custom requests
/// `csi/<name>`. In this order in the `initialize` result.
pub const COMMANDS: &[&str] = &[
    <lsp_ext::OpenCrash as CsiCommand>::COMMAND,
    <lsp_ext::OpenReport as CsiCommand>::COMMAND,
    <lsp_ext::SelectFrame as CsiCommand>::COMMAND,
    <lsp_ext::StepPath as CsiCommand>::COMMAND,
    <lsp_ext::Stack as CsiCommand>::COMMAND,
    <lsp_ext::PathTrace as CsiCommand>::COMMAND,
    <lsp_ext::Query as CsiCommand>::COMMAND,
    <lsp_ext::Slice as CsiCommand>::COMMAND,
    <lsp_ext::Clear as CsiCommand>::COMMAND,
    <lsp_ext::CrashBuckets as CsiCommand>::COMMAND,
    <lsp_ext::BucketCrashes as CsiCommand>::COMMAND,
    <lsp_ext::BucketLineStates as CsiCommand>::COMMAND,
    <lsp_ext::FunctionSpans as CsiCommand>::COMMAND,
];

/// Runs command `R` with the params in `args` (see [`lsp_ext::parse`]), isolated from panics.
async fn command<R: CsiCommand, F>(args: Value, run: impl FnOnce(R::Params) -> F) -> Result<Value>
where
    F: std::future::Future<Output = Result<R::Result>>,
{
    let params = lsp_ext::parse::<R>(args).map_err(invalid)?;
    let result = isolated(R::COMMAND, run(params)).await?;
    serde_json::to_value(result).map_err(|e| Error {
        code: ErrorCode::InternalError,
        message: e.to_string().into(),
        data: None,
    })
}

/// Locks that outlive a panicking request. Every guarded value is replaced whole (a session,
/// a selection, a shown slice), never left half-updated, so the value behind a poisoned lock
/// is still consistent; the one exception, the slicer's caches, is reset (`slicer_lock`).
fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lock<T>(l: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    l.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The slicer, dropped if a slice panicked while holding it (its caches may be half built).
fn slicer_lock(
    l: &Mutex<Option<csi_analysis::slice::Slicer>>,
) -> std::sync::MutexGuard<'_, Option<csi_analysis::slice::Slicer>> {
    match l.lock() {
        Ok(g) => g,
        Err(poisoned) => {
            let mut g = poisoned.into_inner();
            *g = None;
            l.clear_poison();
            g
        }
    }
}

/// Runs a request handler so that a panic in it answers an internal error and the server goes
/// on (as rust-analyzer's dispatch does); the panic message is logged by the default hook.
async fn isolated<T>(what: &str, fut: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error {
                code: ErrorCode::InternalError,
                message: format!(
                    "csi-lsp: {what} failed (internal error: {msg}); the server goes on"
                )
                .into(),
                data: None,
            })
        }
    }
}

/// A notification handler run like a request's (`isolated`): a panic is logged to the client
/// (there is no one to answer) and the server goes on.
async fn quietly<T>(client: &Client, what: &str, fut: impl std::future::Future<Output = T>) {
    let r = isolated(what, async {
        fut.await;
        Ok(())
    })
    .await;
    if let Err(e) = r {
        client.log_message(MessageType::ERROR, e.message).await;
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: msg.into().into(),
        data: None,
    }
}

fn path_of(uri: &Uri) -> Option<PathBuf> {
    let p = uri.to_file_path()?.into_owned();
    Some(std::fs::canonicalize(&p).unwrap_or(p))
}

impl Backend {
    fn session(&self) -> Option<Arc<Session>> {
        read(&self.state.session).clone()
    }

    fn selection(&self) -> Selection {
        *lock(&self.state.selection)
    }

    /// Session, file keys and text of a document; `None` when nothing applies (no crash,
    /// file not part of it, or edited since opened).
    fn view(&self, uri: &Uri) -> Option<(Arc<Session>, Vec<String>, String)> {
        let s = self.session()?;
        let path = path_of(uri)?;
        let keys: Vec<String> = s.keys_for(&path).into_iter().map(str::to_string).collect();
        if keys.is_empty() {
            return None;
        }
        let text = match self.state.docs.get(uri.as_str()) {
            Some(d) if d.edited => return None,
            Some(d) => d.text.clone(),
            None => std::fs::read_to_string(&path).unwrap_or_default(),
        };
        Some((s, keys, text))
    }

    fn resolve_input(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        match (&read(&self.state.config).root, path.is_relative()) {
            (Some(root), true) => root.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// Waits for the crash named at start to be open (see `State::opening_at_start`).
    async fn after_start(&self) {
        drop(self.state.opening_at_start.lock().await);
    }

    /// The open crash, or an error (and a warning shown) saying there is none.
    async fn require_session(&self) -> Result<Arc<Session>> {
        match self.session() {
            Some(s) => Ok(s),
            None => {
                let msg =
                    "no crash is open: run csi.openCrash (or set executable/core in .csi.toml)";
                self.client.show_message(MessageType::WARNING, msg).await;
                Err(invalid(msg))
            }
        }
    }

    /// [`Self::require_session`] once the crash named at start is open.
    async fn crash(&self) -> Result<Arc<Session>> {
        self.after_start().await;
        self.require_session().await
    }

    async fn open_crash(&self, p: lsp_ext::OpenCrashParams) -> Result<lsp_ext::StackResult> {
        self.after_start().await;
        let (exe, core) = (
            self.resolve_input(&p.executable),
            self.resolve_input(&p.core),
        );
        self.open(Source::Crash(exe, core)).await
    }

    async fn open_report(&self, p: lsp_ext::OpenReportParams) -> Result<lsp_ext::StackResult> {
        self.after_start().await;
        let (g, r) = (self.resolve_input(&p.graph), self.resolve_input(&p.report));
        self.open(Source::Report(g, r)).await
    }

    async fn clear(&self, _: lsp_ext::ClearParams) -> Result<()> {
        self.after_start().await;
        *write(&self.state.session) = None;
        self.forget_slice();
        self.after_change().await;
        Ok(())
    }

    /// A command no type declares: the panic test hook, else an error.
    async fn unknown_command(&self, name: &str) -> Result<Value> {
        self.after_start().await;
        // Test hook (CSI_LSP_TEST_HOOKS=1 only): a handler that panics, to prove isolation.
        if name == "csi.test.panic" && std::env::var_os("CSI_LSP_TEST_HOOKS").is_some() {
            panic!("csi.test.panic requested");
        }
        self.require_session().await?;
        Err(invalid(format!("unknown command {name}")))
    }

    async fn stack(&self, p: lsp_ext::StackParams) -> Result<lsp_ext::StackResult> {
        let s = self.crash().await?;
        Ok(to_proto::stack(&s, self.selection(), p.range))
    }

    async fn select_frame(
        &self,
        p: lsp_ext::SelectFrameParams,
    ) -> Result<Option<lsp_ext::PathTraceResult>> {
        let s = self.crash().await?;
        let sel = Selection {
            thread: p.thread,
            frame: p.frame,
            step: None,
            inline: p.inline,
        };
        if s.frame(sel).is_none() {
            return Err(invalid(match sel.inline {
                Some(k) => format!(
                    "no inlined call #{k} in frame #{} of thread {}",
                    sel.frame, sel.thread
                ),
                None => format!("no frame #{} in thread {}", sel.frame, sel.thread),
            }));
        }
        *lock(&self.state.selection) = sel;
        self.after_selection().await;
        Ok(to_proto::path_trace(&s, sel))
    }

    async fn step_path(&self, p: lsp_ext::StepPathParams) -> Result<lsp_ext::StepResult> {
        let s = self.crash().await?;
        let sel = {
            let mut sel = lock(&self.state.selection);
            let n = s.frame(*sel).map_or(0, |f| f.path.len());
            if n == 0 {
                return Err(invalid("the selected frame has no path trace"));
            }
            let cur = sel.step.unwrap_or(n - 1) as i64;
            sel.step = Some(cur.saturating_add(p.delta).clamp(0, n as i64 - 1) as usize);
            *sel
        };
        self.after_selection().await;
        to_proto::step(&s, sel).ok_or_else(|| invalid("the selected frame has no path trace"))
    }

    async fn path_trace(
        &self,
        p: lsp_ext::PathTraceParams,
    ) -> Result<Option<lsp_ext::PathTraceResult>> {
        let s = self.crash().await?;
        let sel = match p.frame {
            Some(frame) => Selection {
                thread: p.thread.unwrap_or(0),
                frame,
                step: None,
                inline: p.inline,
            },
            None => self.selection(),
        };
        Ok(to_proto::path_trace(&s, sel))
    }

    fn forget_slice(&self) {
        *slicer_lock(&self.state.slicer) = None;
        *write(&self.state.slice) = None;
    }

    /// `csi/slice`: computed off the runtime (the first one builds the SDG).
    async fn slice(&self, p: lsp_ext::SliceParams) -> Result<Option<lsp_ext::SliceResult>> {
        self.after_start().await;
        if p.clear {
            *write(&self.state.slice) = None;
            self.spawn_refresh();
            return Ok(None);
        }
        let s = self.require_session().await?;
        let variables = p.variables.filter(|v| !v.is_empty());
        let at = match (p.uri, p.line) {
            (Some(uri), Some(line)) => {
                let path = uri
                    .parse::<Uri>()
                    .ok()
                    .and_then(|u| path_of(&u))
                    .unwrap_or_else(|| PathBuf::from(&uri));
                let keys: Vec<String> = s.keys_for(&path).into_iter().map(str::to_string).collect();
                if keys.is_empty() {
                    return Err(invalid(format!(
                        "{uri} is not a source file of the crashed program"
                    )));
                }
                // The analysis' lines are 1-based.
                Some((keys, line + 1))
            }
            (None, None) => None,
            _ => return Err(invalid("csi/slice needs both `uri` and `line`, or neither")),
        };
        let (state, s2, sel) = (self.state.clone(), s.clone(), self.selection());
        let shown = tokio::task::spawn_blocking(move || {
            let mut slicer = slicer_lock(&state.slicer);
            let at = at
                .as_ref()
                .map(|(k, l)| (k.iter().map(String::as_str).collect(), *l));
            s2.slice(&mut slicer, sel, at, variables)
        })
        .await
        .map_err(|e| invalid(format!("internal error while slicing: {e}")))?
        .map_err(invalid)?;
        let v = to_proto::slice(&s, &shown);
        *write(&self.state.slice) = Some(shown);
        self.spawn_refresh();
        Ok(Some(v))
    }

    async fn query(&self, p: lsp_ext::QueryParams) -> Result<lsp_ext::QueryResult> {
        let s = self.crash().await?;
        let locate = |uri: &Option<String>,
                      line: Option<u32>,
                      uk: &str,
                      lk: &str|
         -> Result<Vec<csi_model::NodeId>> {
            let uri = uri
                .as_deref()
                .ok_or_else(|| invalid(format!("query needs `{uk}`")))?;
            // The analysis' lines are 1-based.
            let line = line.ok_or_else(|| invalid(format!("query needs `{lk}`")))? + 1;
            let path = uri
                .parse::<Uri>()
                .ok()
                .and_then(|u| path_of(&u))
                .unwrap_or_else(|| PathBuf::from(uri));
            let nodes: Vec<_> = s
                .keys_for(&path)
                .into_iter()
                .flat_map(|k| csi_analysis::nodes_on_line(&s.graph, k, line))
                .collect();
            if nodes.is_empty() {
                return Err(invalid(format!(
                    "no code of the program on line {} of {uri}",
                    line
                )));
            }
            Ok(nodes)
        };
        use lsp_ext::QueryKind;
        let q = match p.kind {
            QueryKind::MayRun => {
                csi_analysis::Query::MayRun(locate(&p.uri, p.line, "uri", "line")?)
            }
            QueryKind::MayNotRun => {
                csi_analysis::Query::MayNotRun(locate(&p.uri, p.line, "uri", "line")?)
            }
            QueryKind::MayRunBefore => csi_analysis::Query::MayRunBefore(
                locate(&p.uri, p.line, "uri", "line")?,
                locate(&p.uri2, p.line2, "uri2", "line2")?,
            ),
        };
        let a = csi_analysis::answer_query(&s.graph, &s.report, &q)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(lsp_ext::QueryResult {
            kind: p.kind,
            answer: to_proto::query_answer(a),
        })
    }

    /// `csi/functionSpans`: the functions of a document (none when it is not a source of the
    /// program; none and `stale` when it was edited since it was opened).
    async fn function_spans(
        &self,
        p: lsp_ext::FunctionSpansParams,
    ) -> Result<lsp_ext::FunctionSpansResult> {
        let s = self.crash().await?;
        let uri = p.uri.parse::<Uri>().ok();
        let key = uri.as_ref().map_or(p.uri.as_str(), |u| u.as_str());
        if self.state.docs.get(key).is_some_and(|d| d.edited) {
            return Ok(lsp_ext::FunctionSpansResult {
                uri: p.uri,
                functions: Vec::new(),
                stale: true,
            });
        }
        let path = uri
            .as_ref()
            .and_then(path_of)
            .unwrap_or_else(|| PathBuf::from(&p.uri));
        let keys = s.keys_for(&path);
        Ok(to_proto::function_spans(&s, &keys, p.uri))
    }

    /// Runs `job` on the store of the settings, off the runtime; a store error is one line
    /// with code RequestFailed. The crash store needs no open crash and does not wait for the
    /// one opened at start.
    async fn read_store<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Config) -> std::result::Result<T, String> + Send + 'static,
    ) -> Result<T> {
        let config = read(&self.state.config).clone();
        tokio::task::spawn_blocking(move || job(&config))
            .await
            .map_err(|e| invalid(format!("internal error reading the crash store: {e}")))?
            .map_err(|message| Error {
                // LSP's RequestFailed: the request was valid, the store could not answer.
                code: ErrorCode::ServerError(-32803),
                message: message.into(),
                data: None,
            })
    }

    async fn crash_buckets(
        &self,
        p: lsp_ext::BucketsParams,
    ) -> Result<lsp_ext::CrashBucketsResult> {
        self.read_store(move |config| {
            let b = crashes::buckets(config, p.program.as_deref())?;
            Ok(to_proto::crash_buckets(&b))
        })
        .await
    }

    async fn bucket_crashes(
        &self,
        p: lsp_ext::BucketParams,
    ) -> Result<lsp_ext::BucketCrashesResult> {
        self.read_store(move |config| {
            let (store, b, list) = crashes::bucket_crashes(config, &p.program, &p.signature)?;
            Ok(to_proto::bucket_crashes(&store, &b, &list))
        })
        .await
    }

    async fn bucket_line_states(
        &self,
        p: lsp_ext::BucketParams,
    ) -> Result<lsp_ext::BucketLineStatesResult> {
        self.read_store(move |config| {
            let b = crashes::bucket_lines(config, &p.program, &p.signature)?;
            Ok(to_proto::bucket_line_states(&b))
        })
        .await
    }

    /// Loads a crash off the runtime, with progress, then swaps the session in.
    async fn open(&self, source: Source) -> Result<lsp_ext::StackResult> {
        let progress = self.begin_progress("CSI: opening crash");
        let config = read(&self.state.config).clone();
        let loaded = tokio::task::spawn_blocking(move || match source {
            Source::Crash(exe, core) => {
                Session::open_crash(&exe, &core, &config.load_options(), &config.source_paths())
            }
            Source::Report(g, r) => Session::open_report(&g, &r, &config.source_paths()),
        })
        .await
        .unwrap_or_else(|e| Err(format!("internal error while loading: {e}")));
        if let Some(tx) = progress {
            let _ = tx.send(());
        }
        match loaded {
            Ok(session) => {
                let s = Arc::new(session);
                self.forget_slice();
                *lock(&self.state.selection) = s.default_selection();
                *write(&self.state.session) = Some(s.clone());
                if !s.notices.is_empty() {
                    self.client
                        .show_message(
                            MessageType::WARNING,
                            format!("CSI: {}", s.notices.join(" · ")),
                        )
                        .await;
                }
                self.after_change().await;
                Ok(to_proto::stack(&s, self.selection(), None))
            }
            Err(msg) => {
                self.client
                    .show_message(MessageType::ERROR, format!("CSI: {msg}"))
                    .await;
                Err(invalid(msg))
            }
        }
    }

    /// Work-done progress without awaiting the client inside the handler: a task creates
    /// the token, begins, and ends when the returned sender fires.
    fn begin_progress(&self, title: &'static str) -> Option<tokio::sync::oneshot::Sender<()>> {
        if !read(&self.state.caps).work_done {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let client = self.client.clone();
        tokio::spawn(async move {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let token = ProgressToken::String(format!("csi-open-{n}"));
            if client
                .create_work_done_progress(token.clone())
                .await
                .is_err()
            {
                return;
            }
            let p = client.progress(token, title).begin().await;
            let _ = rx.await;
            p.finish().await;
        });
        Some(tx)
    }

    /// After a new session or selection: diagnostics (or line states) and refreshes.
    async fn after_change(&self) {
        let s = self.session();
        let sel = self.selection();
        let config = read(&self.state.config).clone();
        // Clear what we published before.
        let old: Vec<Uri> = std::mem::take(&mut *lock(&self.state.published));
        if let Some(s) = &s {
            let mut published = Vec::new();
            let mut files: Vec<(&String, &PathBuf)> = s.sources.iter().collect();
            files.sort();
            let mut by_path: Vec<(PathBuf, Vec<&str>)> = Vec::new();
            for (k, p) in files {
                match by_path.iter_mut().find(|(q, _)| q == p) {
                    Some((_, ks)) => ks.push(k.as_str()),
                    None => by_path.push((p.clone(), vec![k.as_str()])),
                }
            }
            for (path, keys) in by_path {
                let Some(uri) = Uri::from_file_path(&path) else {
                    continue;
                };
                let doc = self.state.docs.get(uri.as_str());
                if doc.as_ref().is_some_and(|d| d.edited) {
                    continue;
                }
                let text = match &doc {
                    Some(d) => d.text.clone(),
                    None => std::fs::read_to_string(&path).unwrap_or_default(),
                };
                let version = doc.as_ref().map(|d| d.version);
                drop(doc);
                if config.line_states {
                    if version.is_some() {
                        let v = to_proto::line_states(s, sel, &keys, &uri, version);
                        self.client
                            .send_notification::<lsp_ext::LineStates>(v)
                            .await;
                    }
                } else {
                    let diags = to_proto::diagnostics(s, &keys, &Text::new(&text));
                    if !diags.is_empty() {
                        self.client
                            .publish_diagnostics(uri.clone(), diags, version)
                            .await;
                        published.push(uri);
                    }
                }
            }
            for u in old.iter().filter(|u| !published.contains(u)) {
                self.client
                    .publish_diagnostics(u.clone(), Vec::new(), None)
                    .await;
            }
            *lock(&self.state.published) = published;
        } else {
            for u in old {
                self.client.publish_diagnostics(u, Vec::new(), None).await;
            }
        }
        self.spawn_refresh();
    }

    /// After a new selection: only what depends on it (line states of open documents, hints,
    /// lenses); diagnostics are global and stay.
    async fn after_selection(&self) {
        if read(&self.state.config).line_states {
            if let Some(s) = self.session() {
                let sel = self.selection();
                let open: Vec<(String, i32)> = self
                    .state
                    .docs
                    .iter()
                    .filter(|d| !d.edited)
                    .map(|d| (d.key().clone(), d.version))
                    .collect();
                for (u, version) in open {
                    let Ok(uri) = u.parse::<Uri>() else { continue };
                    let Some(path) = path_of(&uri) else { continue };
                    let keys = s.keys_for(&path);
                    if !keys.is_empty() {
                        let v = to_proto::line_states(&s, sel, &keys, &uri, Some(version));
                        self.client
                            .send_notification::<lsp_ext::LineStates>(v)
                            .await;
                    }
                }
            }
        }
        self.spawn_refresh();
    }

    /// Refresh requests are spawned, never awaited in a handler.
    fn spawn_refresh(&self) {
        let caps = *read(&self.state.caps);
        let client = self.client.clone();
        tokio::spawn(async move {
            if caps.inlay_refresh {
                let _ = client.inlay_hint_refresh().await;
            }
            if caps.lens_refresh {
                let _ = client.code_lens_refresh().await;
            }
        });
    }
}

enum Source {
    Crash(PathBuf, PathBuf),
    Report(PathBuf, PathBuf),
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| path_of(&f.uri))
            .or_else(|| {
                #[allow(deprecated)]
                params.root_uri.as_ref().and_then(path_of)
            });
        let (errs, crash_at_start) = {
            let mut c = write(&self.state.config);
            c.root = root;
            let mut errs: Vec<String> = params
                .initialization_options
                .as_ref()
                .and_then(|o| c.merge_json(o).err())
                .into_iter()
                .collect();
            // `.csi.toml` is read here (not in `initialized`) so that the answer can say a
            // crash is being opened, and commands wait for it.
            errs.extend(c.merge_csi_toml().err());
            let named = c.executable.is_some() && c.core.is_some() || c.coredump.is_some();
            (errs, named)
        };
        for e in errs {
            self.client
                .show_message(MessageType::ERROR, format!("CSI: {e}"))
                .await;
        }
        if crash_at_start {
            *lock(&self.state.opening_guard) =
                self.state.opening_at_start.clone().try_lock_owned().ok();
        }
        let caps = &params.capabilities;
        *write(&self.state.caps) = ClientCaps {
            inlay_refresh: caps
                .workspace
                .as_ref()
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false),
            lens_refresh: caps
                .workspace
                .as_ref()
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false),
            work_done: caps
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false),
        };
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "csi-lsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Kind(
                    TextDocumentSyncKind::FULL,
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                code_lens_provider: Some(CodeLensOptions {
                    resolve_provider: Some(false),
                }),
                inlay_hint_provider: Some(OneOf::Left(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                    ..Default::default()
                }),
                experimental: Some(json!(lsp_ext::ExperimentalCapabilities {
                    csi: lsp_ext::CsiCapabilities {
                        line_states: true,
                        version: 1,
                        crash_at_start,
                    },
                })),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Released when this returns (or unwinds): commands waiting for the crash go on.
        let _gate = lock(&self.state.opening_guard).take();
        let paths = read(&self.state.config).crash_paths();
        self.open_configured(paths).await;
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        quietly(&self.client, "did_open", self.did_open_unisolated(p)).await;
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        quietly(&self.client, "did_change", self.did_change_unisolated(p)).await;
    }

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        quietly(&self.client, "did_close", self.did_close_unisolated(p)).await;
    }

    async fn did_change_configuration(&self, p: DidChangeConfigurationParams) {
        quietly(
            &self.client,
            "did_change_configuration",
            self.did_change_configuration_unisolated(p),
        )
        .await;
    }

    async fn execute_command(&self, p: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        self.run_command(&p.command, Value::Array(p.arguments))
            .await
            .map(Some)
    }

    async fn inlay_hint(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        isolated("inlay hints", self.inlay_hint_unisolated(p)).await
    }

    async fn code_lens(&self, p: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        isolated("code lenses", self.code_lens_unisolated(p)).await
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        isolated("hover", self.hover_unisolated(p)).await
    }
}

impl Backend {
    async fn did_open_unisolated(&self, p: DidOpenTextDocumentParams) {
        self.state.docs.insert(
            p.text_document.uri.as_str().to_string(),
            Doc {
                version: p.text_document.version,
                text: p.text_document.text,
                edited: false,
            },
        );
        if read(&self.state.config).line_states {
            if let (Some((s, keys, _)), uri) =
                (self.view(&p.text_document.uri), &p.text_document.uri)
            {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let v = to_proto::line_states(
                    &s,
                    self.selection(),
                    &keys,
                    uri,
                    Some(p.text_document.version),
                );
                self.client
                    .send_notification::<lsp_ext::LineStates>(v)
                    .await;
            }
        }
    }

    async fn did_change_unisolated(&self, p: DidChangeTextDocumentParams) {
        let uri = p.text_document.uri;
        if let Some(mut d) = self.state.docs.get_mut(uri.as_str()) {
            let new_text = p.content_changes.into_iter().last().map(|c| c.text);
            if let Some(t) = new_text {
                if t != d.text {
                    d.edited = true;
                }
                d.text = t;
            }
            d.version = p.text_document.version;
        }
        // The lines no longer match the analysis: drop what we show for this file.
        self.client
            .publish_diagnostics(uri.clone(), Vec::new(), Some(p.text_document.version))
            .await;
        if read(&self.state.config).line_states {
            let stale = to_proto::stale_line_states(&uri, p.text_document.version);
            self.client
                .send_notification::<lsp_ext::LineStates>(stale)
                .await;
        }
        self.spawn_refresh();
    }

    async fn did_close_unisolated(&self, p: DidCloseTextDocumentParams) {
        self.state.docs.remove(p.text_document.uri.as_str());
    }

    async fn did_change_configuration_unisolated(&self, p: DidChangeConfigurationParams) {
        let (reopen, err) = {
            let mut c = write(&self.state.config);
            let named = |c: &Config| (c.executable.clone(), c.core.clone(), c.coredump.clone());
            let before = named(&c);
            let err = c.merge_json(&p.settings).err();
            ((before != named(&c)).then(|| c.crash_paths()), err)
        };
        if let Some(e) = err {
            self.client
                .show_message(MessageType::ERROR, format!("CSI: {e}"))
                .await;
        }
        match reopen {
            Some(Ok(None)) | None => self.after_change().await,
            Some(paths) => self.open_configured(paths).await,
        }
    }

    /// Opens the crash the settings name (`executable` + `core`, or `coredump`), saying
    /// where a stored core came from; a selector that matches nothing is an error message.
    async fn open_configured(
        &self,
        paths: std::result::Result<Option<(PathBuf, PathBuf, Option<String>)>, String>,
    ) {
        match paths {
            Ok(Some((exe, core, notice))) => {
                if let Some(n) = notice {
                    self.client
                        .show_message(MessageType::INFO, format!("CSI: {n}"))
                        .await;
                }
                quietly(
                    &self.client,
                    "opening the crash",
                    self.open(Source::Crash(exe, core)),
                )
                .await;
            }
            Ok(None) => {}
            Err(e) => {
                self.client
                    .show_message(MessageType::ERROR, format!("CSI: {e}"))
                    .await
            }
        }
    }

    async fn inlay_hint_unisolated(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let Some((s, keys, text)) = self.view(&p.text_document.uri) else {
            return Ok(None);
        };
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let status = read(&self.state.config).status_hints;
        let text = Text::new(&text);
        let mut hints = to_proto::inlay_hints(&s, self.selection(), &keys, &text, p.range, status);
        if let Some(sl) = read(&self.state.slice).as_ref() {
            hints.extend(to_proto::slice_hints(sl, &keys, &text, p.range));
        }
        Ok(Some(hints))
    }

    async fn code_lens_unisolated(&self, p: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let Some((s, keys, _)) = self.view(&p.text_document.uri) else {
            return Ok(None);
        };
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut lenses = to_proto::code_lenses(&s, self.selection(), &keys);
        if let Some(sl) = read(&self.state.slice).as_ref() {
            lenses.extend(to_proto::slice_lens(sl, &keys));
        }
        Ok(Some(lenses))
    }

    async fn hover_unisolated(&self, p: HoverParams) -> Result<Option<Hover>> {
        let pos = p.text_document_position_params;
        let Some((s, keys, text)) = self.view(&pos.text_document.uri) else {
            return Ok(None);
        };
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let word = text
            .lines()
            .nth(pos.position.line as usize)
            .and_then(|l| to_proto::identifier_at(l, pos.position.character));
        Ok(to_proto::hover(
            &s,
            self.selection(),
            &keys,
            pos.position.line.saturating_add(1),
            word,
        ))
    }
}
