//! `csi-dap`: a Debug Adapter Protocol server for post-mortem sessions on a core dump.
//!
//! The crash is opened once into the same [`Session`] the language server shows (threads,
//! frames, decoded path steps) and the [`Crash`] it came from (memory and debug info, read on
//! demand). Nothing runs: the program is always stopped; "stepping" moves through the frames'
//! recorded path steps, backwards (`stepBack`, `reverseContinue`) and forwards (`next`,
//! `stepIn`, `stepOut`, `continue`), and the selected step is shown as the frame's position.
//! Values are those at the crash, whatever step is shown.
//!
//! Messages are typed by the `dap` crate; the envelope (`seq`, `type`, `command`) is written
//! here so that every request, even one that does not parse, gets its response.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use base64::Engine;
use dap::events::{Event, StoppedEventBody};
use dap::requests::{Command, Request};
use dap::responses::*;
use dap::types::*;
use serde_json::{json, Value as Json};

use csi_dump::{Crash, NamedValue, Value};

use crate::config::Config;
use csi_ide::session::Session;

/// What a `variablesReference` stands for.
#[derive(Clone, Debug)]
enum Ref {
    Scope {
        thread: usize,
        frame: usize,
        scope: ScopeKind,
        /// Which inlined call of the frame (0 = the frame's own function).
        inline: Option<String>,
    },
    Value {
        value: Value,
        /// The C expression naming it (for `evaluateName` of its children), if C can.
        name: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScopeKind {
    Arguments,
    Locals,
    Globals,
    Registers,
    Trace,
}

/// A frame of the Call Stack: a physical frame, or one of the calls inlined into it.
#[derive(Clone, Debug)]
struct FrameRef {
    thread: usize,
    frame: usize,
    /// `Some(k)`: the k-th inlined call at the frame's pc (0 = innermost).
    inline: Option<usize>,
}

/// Where the user is in a thread's recorded history: frame `frame` (0 = innermost), at its
/// path step `step` (the newest when `None`). Frames inside `frame` have not been called yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Position {
    frame: usize,
    step: Option<usize>,
}

struct Loaded {
    session: Session,
    crash: Crash,
    positions: Vec<Position>,
}

pub struct Adapter<W: Write> {
    out: W,
    seq: i64,
    loaded: Option<Loaded>,
    configured: bool,
    refs: Vec<Ref>,
    frames: Vec<FrameRef>,
    done: bool,
}

/// Instruction-set names that hide the instrumentation's own state from Locals.
fn is_trace_variable(name: &str) -> bool {
    name.starts_with("__PT_")
        || name.starts_with("__CC_")
        || name.starts_with("__BBC_")
        || name.starts_with("__csi")
}

/// Runs the adapter over a byte stream (stdin/stdout for editors) until `disconnect` or the end
/// of the input.
pub fn run(input: impl Read, output: impl Write) -> std::io::Result<()> {
    let mut input = BufReader::new(input);
    let mut adapter = Adapter::new(output);
    while !adapter.done {
        let Some(body) = read_message(&mut input)? else {
            break;
        };
        adapter.handle_raw(&body)?;
    }
    Ok(())
}

/// One `Content-Length`-framed message; `None` at the end of the input.
fn read_message(input: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().ok();
            }
        }
    }
    let n = length.unwrap_or(0);
    if n > 64 << 20 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a message of {n} bytes is too large"),
        ));
    }
    let mut body = vec![0u8; n];
    input.read_exact(&mut body)?;
    Ok(Some(body))
}

type Reply = Result<ResponseBody, String>;

impl<W: Write> Adapter<W> {
    pub fn new(out: W) -> Self {
        Adapter {
            out,
            seq: 0,
            loaded: None,
            configured: false,
            refs: Vec::new(),
            frames: Vec::new(),
            done: false,
        }
    }

    fn send(&mut self, mut message: Json) -> std::io::Result<()> {
        self.seq += 1;
        message["seq"] = json!(self.seq);
        let text = serde_json::to_string(&message).expect("JSON values serialize");
        write!(self.out, "Content-Length: {}\r\n\r\n{text}", text.len())?;
        self.out.flush()
    }

    fn event(&mut self, event: Event) -> std::io::Result<()> {
        let mut v = serde_json::to_value(&event).expect("events serialize");
        v["type"] = json!("event");
        self.send(v)
    }

    fn respond(&mut self, request_seq: i64, command: &str, reply: Reply) -> std::io::Result<()> {
        let mut v = json!({
            "type": "response",
            "request_seq": request_seq,
            "command": command,
        });
        match reply {
            Ok(body) => {
                v["success"] = json!(true);
                let b = serde_json::to_value(&body).expect("responses serialize");
                if let Some(body) = b.get("body") {
                    v["body"] = body.clone();
                }
            }
            Err(message) => {
                v["success"] = json!(false);
                v["message"] = json!(message);
                v["body"] = json!({"error": {"id": 1, "format": message, "showUser": true}});
            }
        }
        self.send(v)
    }

    /// One message from the client: parsed, answered (an error when it does not parse or its
    /// handler panics), never the end of the session.
    pub fn handle_raw(&mut self, body: &[u8]) -> std::io::Result<()> {
        let raw: Json = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return self.respond(0, "unknown", Err(format!("not JSON: {e}"))),
        };
        let seq = raw.get("seq").and_then(Json::as_i64).unwrap_or(0);
        let command = raw
            .get("command")
            .and_then(Json::as_str)
            .unwrap_or("unknown")
            .to_string();
        if raw.get("type").and_then(Json::as_str) != Some("request") {
            return Ok(()); // responses to reverse requests and stray events need no answer
        }
        // Our own requests, which the `dap` crate does not know.
        if command == "csiPosition" {
            let reply = self.csi_position(raw.get("arguments"));
            return self.respond_json(seq, &command, reply);
        }
        // Requests without arguments (`threads`, `configurationDone`) parse only without the
        // `arguments` key, which clients often send empty.
        let parsed = serde_json::from_value::<Request>(raw.clone()).or_else(|e| {
            match raw.get("arguments") {
                // (`[]` from Lua clients, whose empty tables encode as arrays.)
                Some(a)
                    if a.is_null()
                        || a.as_object().is_some_and(|o| o.is_empty())
                        || a.as_array().is_some_and(|o| o.is_empty()) =>
                {
                    let mut bare = raw.clone();
                    bare.as_object_mut().map(|o| o.remove("arguments"));
                    serde_json::from_value::<Request>(bare).map_err(|_| e)
                }
                _ => Err(e),
            }
        });
        let request: Request = match parsed {
            Ok(r) => r,
            Err(e) => {
                return self.respond(seq, &command, Err(format!("bad `{command}` request: {e}")))
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handle(&command, request.command)
        }));
        let (reply, after) = match outcome {
            Ok(x) => x,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                (
                    Err(format!("internal error in `{command}`: {what}")),
                    Vec::new(),
                )
            }
        };
        self.respond(seq, &command, reply)?;
        for e in after {
            self.event(e)?;
        }
        Ok(())
    }

    fn respond_json(
        &mut self,
        seq: i64,
        command: &str,
        reply: Result<Json, String>,
    ) -> std::io::Result<()> {
        let mut v = json!({"type": "response", "request_seq": seq, "command": command});
        match reply {
            Ok(body) => {
                v["success"] = json!(true);
                v["body"] = body;
            }
            Err(m) => {
                v["success"] = json!(false);
                v["message"] = json!(m);
            }
        }
        self.send(v)
    }

    /// Handles a request; returns the reply and the events to send after it.
    fn handle(&mut self, name: &str, command: Command) -> (Reply, Vec<Event>) {
        let mut after = Vec::new();
        let reply = match command {
            Command::Initialize(_) => {
                after.push(Event::Initialized);
                Ok(ResponseBody::Initialize(capabilities()))
            }
            Command::Launch(dap::requests::LaunchRequestArguments {
                additional_data: args,
                ..
            })
            | Command::Attach(dap::requests::AttachRequestArguments {
                additional_data: args,
                ..
            }) => {
                let r = self.launch(args.as_ref());
                if r.is_ok() && self.configured {
                    after.extend(self.stopped_at_crash());
                }
                r.map(|_| ResponseBody::Launch)
            }
            Command::ConfigurationDone => {
                self.configured = true;
                after.extend(self.stopped_at_crash());
                Ok(ResponseBody::ConfigurationDone)
            }
            Command::SetBreakpoints(args) => {
                Ok(ResponseBody::SetBreakpoints(SetBreakpointsResponse {
                    breakpoints: args
                        .breakpoints
                        .unwrap_or_default()
                        .iter()
                        .map(|b| Breakpoint {
                            verified: false,
                            line: Some(b.line),
                            message: Some(
                                "a core dump does not run: breakpoints never stop".into(),
                            ),
                            ..Default::default()
                        })
                        .collect(),
                }))
            }
            Command::SetExceptionBreakpoints(_) => Ok(ResponseBody::SetExceptionBreakpoints(
                SetExceptionBreakpointsResponse { breakpoints: None },
            )),
            Command::SetFunctionBreakpoints(_) => Ok(ResponseBody::SetFunctionBreakpoints(
                SetFunctionBreakpointsResponse {
                    breakpoints: Vec::new(),
                },
            )),
            Command::Threads => self.threads(),
            Command::StackTrace(args) => self.stack_trace(args),
            Command::Scopes(args) => self.scopes(args.frame_id),
            Command::Variables(args) => self.variables(args),
            Command::Evaluate(args) => self.evaluate(args),
            Command::ReadMemory(args) => self.read_memory(args),
            Command::Disassemble(args) => self.disassemble(args),
            Command::ExceptionInfo(args) => self.exception_info(args.thread_id),
            Command::StepBack(args) => self.step(args.thread_id, Motion::Back, &mut after),
            Command::ReverseContinue(args) => {
                self.step(args.thread_id, Motion::ToStart, &mut after)
            }
            Command::Next(args) => self.step(args.thread_id, Motion::Forward, &mut after),
            Command::StepIn(args) => self.step(args.thread_id, Motion::Forward, &mut after),
            Command::StepOut(args) => self.step(args.thread_id, Motion::Out, &mut after),
            Command::Continue(args) => self.step(args.thread_id, Motion::ToCrash, &mut after),
            Command::Pause(_) => Ok(ResponseBody::Pause),
            Command::Disconnect(_) | Command::Terminate(_) => {
                self.done = true;
                Ok(ResponseBody::Disconnect)
            }
            Command::Source(_) => Err("sources are read from disk; none is held here".into()),
            _ => Err(format!("`{name}` is not supported on a core dump")),
        };
        (reply, after)
    }

    fn launch(&mut self, args: Option<&Json>) -> Result<(), String> {
        let args = args.cloned().unwrap_or(Json::Null);
        let text = |k: &str| args.get(k).and_then(Json::as_str).map(PathBuf::from);
        let program = text("program")
            .ok_or("the launch configuration needs \"program\" (the crashed executable)")?;
        let core = text("coreFile")
            .or_else(|| text("coreDumpPath"))
            .ok_or("the launch configuration needs \"coreFile\" (the core dump)")?;
        let mut config = Config {
            root: text("cwd"),
            ..Default::default()
        };
        config.merge_json(&args)?;
        let resolve = |p: PathBuf| match (&config.root, p.is_relative()) {
            (Some(root), true) => root.join(p),
            _ => p,
        };
        let (program, core) = (resolve(program), resolve(core));
        let crash =
            Crash::open(&program, &core, &config.load_options()).map_err(|e| e.to_string())?;
        let (session, crash) = Session::open_crash_keeping_memory(crash, &config.source_paths());
        self.loaded = Some(Loaded {
            positions: vec![Position::default(); session.threads.len()],
            session,
            crash,
        });
        Ok(())
    }

    fn loaded(&self) -> Result<&Loaded, String> {
        self.loaded
            .as_ref()
            .ok_or_else(|| "no crash is open (launch with \"program\" and \"coreFile\")".into())
    }

    fn stopped_at_crash(&mut self) -> Vec<Event> {
        let Some(l) = &self.loaded else {
            return Vec::new();
        };
        let crashed = l
            .session
            .threads
            .iter()
            .position(|t| t.crashed)
            .unwrap_or(0);
        let description = match &l.session.signal {
            Some(s) => format!("{} ({})", s.name, s.code),
            None => "the crash".into(),
        };
        vec![Event::Stopped(StoppedEventBody {
            reason: StoppedEventReason::Exception,
            description: Some(description.clone()),
            thread_id: Some(crashed as i64 + 1),
            preserve_focus_hint: None,
            text: Some(description),
            all_threads_stopped: Some(true),
            hit_breakpoint_ids: None,
        })]
    }

    fn threads(&self) -> Reply {
        let l = self.loaded()?;
        Ok(ResponseBody::Threads(ThreadsResponse {
            threads: l
                .session
                .threads
                .iter()
                .enumerate()
                .map(|(i, t)| Thread {
                    id: i as i64 + 1,
                    name: if t.crashed {
                        format!("Thread {} (crashed)", t.tid)
                    } else {
                        format!("Thread {}", t.tid)
                    },
                })
                .collect(),
        }))
    }

    fn thread_index(&self, id: i64) -> Result<usize, String> {
        let l = self.loaded()?;
        usize::try_from(id - 1)
            .ok()
            .filter(|&t| t < l.session.threads.len())
            .ok_or_else(|| format!("no thread {id}"))
    }

    fn stack_trace(&mut self, args: dap::requests::StackTraceArguments) -> Reply {
        let thread = self.thread_index(args.thread_id)?;
        let l = self.loaded()?;
        let pos = l.positions[thread];
        let t = &l.session.threads[thread];
        let crash_thread = &l.crash.threads[thread];
        let mut frames: Vec<(FrameRef, StackFrame)> = Vec::new();
        for (k, f) in t.frames.iter().enumerate().skip(pos.frame) {
            let cf = &crash_thread.frames[k];
            let stepped = (k == pos.frame)
                .then_some(pos.step)
                .flatten()
                .filter(|&s| s + 1 < f.path.len());
            let source = |file: &str| Source {
                name: std::path::Path::new(file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned()),
                path: Some(
                    l.session
                        .sources
                        .get(file)
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| file.to_string()),
                ),
                ..Default::default()
            };
            let pc = Some(format!("{:#x}", f.pc));
            if let Some(s) = stepped {
                let step = &f.path[s];
                frames.push((
                    FrameRef {
                        thread,
                        frame: k,
                        inline: None,
                    },
                    StackFrame {
                        id: 0,
                        name: format!(
                            "{} [step {} of {}]",
                            f.function.as_deref().unwrap_or("??"),
                            s + 1,
                            f.path.len()
                        ),
                        source: Some(source(&step.file)),
                        line: step.line as i64,
                        column: 1,
                        instruction_pointer_reference: pc,
                        ..Default::default()
                    },
                ));
                continue;
            }
            // Calls inlined at the pc, innermost first, each with the position inside it.
            for (d, inl) in cf.inlined.iter().enumerate() {
                let loc = inl.location.as_ref();
                frames.push((
                    FrameRef {
                        thread,
                        frame: k,
                        inline: Some(d),
                    },
                    StackFrame {
                        id: 0,
                        name: format!("{} [inlined]", inl.function.as_deref().unwrap_or("??")),
                        source: loc.map(|l| source(&l.file)),
                        line: loc.map_or(0, |l| l.line as i64),
                        column: loc.map_or(0, |l| l.column.max(1) as i64),
                        instruction_pointer_reference: pc.clone(),
                        ..Default::default()
                    },
                ));
            }
            // A line-0 row (merged code at -O2) is shown at the row before it, as gdb does.
            let merged = cf
                .call_location
                .as_ref()
                .filter(|l| l.line == 0 && cf.inlined.is_empty())
                .and_then(|_| {
                    let pc = if k == 0 { f.pc } else { f.pc.wrapping_sub(1) };
                    l.crash.line_for_display(pc)
                });
            let loc = merged.as_ref().or(cf.call_location.as_ref());
            let library = f.graph_function.is_none() && loc.is_none();
            frames.push((
                FrameRef {
                    thread,
                    frame: k,
                    inline: None,
                },
                StackFrame {
                    id: 0,
                    name: match &f.function {
                        Some(n) => n.clone(),
                        None => format!("{:#x} in {}", f.pc, f.module),
                    },
                    source: loc.map(|l| source(&l.file)),
                    line: loc.map_or(0, |l| l.line as i64),
                    column: loc.map_or(0, |l| l.column.max(1) as i64),
                    instruction_pointer_reference: pc,
                    presentation_hint: library.then_some(StackFramePresentationhint::Subtle),
                    ..Default::default()
                },
            ));
        }
        let total = frames.len();
        let start = args.start_frame.unwrap_or(0).max(0) as usize;
        let levels = match args.levels.unwrap_or(0) {
            n if n <= 0 => usize::MAX,
            n => n as usize,
        };
        let mut out = Vec::new();
        for (r, mut sf) in frames.into_iter().skip(start).take(levels) {
            self.frames.push(r);
            sf.id = self.frames.len() as i64;
            out.push(sf);
        }
        Ok(ResponseBody::StackTrace(StackTraceResponse {
            stack_frames: out,
            total_frames: Some(total as i64),
        }))
    }

    fn frame_ref(&self, id: i64) -> Result<FrameRef, String> {
        usize::try_from(id - 1)
            .ok()
            .and_then(|i| self.frames.get(i))
            .cloned()
            .ok_or_else(|| format!("no frame {id}"))
    }

    fn new_ref(&mut self, r: Ref) -> i64 {
        self.refs.push(r);
        self.refs.len() as i64
    }

    fn scopes(&mut self, frame_id: i64) -> Reply {
        let fr = self.frame_ref(frame_id)?;
        let l = self.loaded()?;
        let inline = fr.inline.and_then(|d| {
            l.crash.threads[fr.thread].frames[fr.frame].inlined[d]
                .function
                .clone()
        });
        let mut scopes = Vec::new();
        for (scope, name, hint, expensive) in [
            (
                ScopeKind::Arguments,
                "Arguments",
                Some(ScopePresentationhint::Arguments),
                false,
            ),
            (
                ScopeKind::Locals,
                "Locals",
                Some(ScopePresentationhint::Locals),
                false,
            ),
            (ScopeKind::Globals, "Globals", None, true),
            (
                ScopeKind::Registers,
                "Registers",
                Some(ScopePresentationhint::Registers),
                false,
            ),
            (ScopeKind::Trace, "CSI trace", None, false),
        ] {
            let reference = self.new_ref(Ref::Scope {
                thread: fr.thread,
                frame: fr.frame,
                scope,
                inline: inline.clone(),
            });
            scopes.push(Scope {
                name: name.into(),
                presentation_hint: hint,
                variables_reference: reference,
                expensive,
                ..Default::default()
            });
        }
        Ok(ResponseBody::Scopes(ScopesResponse { scopes }))
    }

    fn variables(&mut self, args: dap::requests::VariablesArguments) -> Reply {
        let r = usize::try_from(args.variables_reference - 1)
            .ok()
            .and_then(|i| self.refs.get(i))
            .cloned()
            .ok_or_else(|| format!("no variables reference {}", args.variables_reference))?;
        let l = self.loaded()?;
        let (children, parent): (Vec<NamedValue>, Option<(Option<String>, bool)>) = match r {
            Ref::Scope {
                thread,
                frame,
                scope: ScopeKind::Registers,
                ..
            } => {
                let variables = l
                    .crash
                    .frame_registers(thread, frame)
                    .into_iter()
                    .map(|(name, v)| Variable {
                        name: name.into(),
                        value: v.map_or("<not saved>".into(), |v| format!("{v:#018x}")),
                        type_field: Some("unsigned long".into()),
                        evaluate_name: None,
                        variables_reference: 0,
                        memory_reference: v.map(|v| format!("{v:#x}")),
                        ..Default::default()
                    })
                    .collect();
                return Ok(ResponseBody::Variables(VariablesResponse { variables }));
            }
            Ref::Scope {
                thread,
                frame,
                scope,
                inline,
            } => {
                let values = match scope {
                    ScopeKind::Globals => l.crash.frame_globals(thread, frame),
                    _ => l
                        .crash
                        .frame_values(thread, frame)
                        .into_iter()
                        .filter(|v| v.inlined_in == inline)
                        .filter(|v| match scope {
                            ScopeKind::Arguments => {
                                v.kind == Some(csi_dump::dwarf::VarKind::Parameter)
                                    && !is_trace_variable(&v.name)
                            }
                            ScopeKind::Locals => {
                                v.kind == Some(csi_dump::dwarf::VarKind::Local)
                                    && !is_trace_variable(&v.name)
                            }
                            _ => is_trace_variable(&v.name),
                        })
                        .collect(),
                };
                (values, None)
            }
            Ref::Value { value, name } => {
                let through_pointer = l.crash.value_type(&value).ends_with('*');
                (
                    l.crash.value_children(&value),
                    Some((name, through_pointer)),
                )
            }
        };
        let start = args.start.unwrap_or(0).max(0) as usize;
        let count = match args.count.unwrap_or(0) {
            n if n <= 0 => usize::MAX,
            n => n as usize,
        };
        let mut variables = Vec::new();
        for c in children.into_iter().skip(start).take(count) {
            // What names it in `evaluate` — none for a name C cannot spell (csi-cc's
            // `__CC_arr_…_GLOBAL__sub_I_x.cpp`) and below it.
            let evaluate_name = match &parent {
                None => is_c_name(&c.name).then(|| c.name.clone()),
                Some((None, _)) => None,
                Some((Some(p), _)) if c.name.starts_with('[') => Some(format!("({p}){}", c.name)),
                Some((Some(p), _)) if c.name == "*" => Some(format!("*({p})")),
                Some((Some(p), _)) if c.name.starts_with('<') => Some(p.clone()),
                Some((Some(p), true)) => Some(format!("({p})->{}", c.name)),
                Some((Some(p), false)) => Some(format!("({p}).{}", c.name)),
            };
            variables.push(self.variable(c.name, c.value, evaluate_name));
        }
        Ok(ResponseBody::Variables(VariablesResponse { variables }))
    }

    fn variable(&mut self, name: String, value: Value, evaluate_name: Option<String>) -> Variable {
        let l = self
            .loaded
            .as_ref()
            .expect("variables come from a loaded crash");
        let shown = l.crash.display_value(&value);
        let type_name = l.crash.value_type(&value);
        let address = l.crash.value_address(&value).map(|a| format!("{a:#x}"));
        let reference = if l.crash.has_children(&value) {
            self.new_ref(Ref::Value {
                value,
                name: evaluate_name.clone(),
            })
        } else {
            0
        };
        Variable {
            name,
            value: shown,
            type_field: Some(type_name),
            evaluate_name,
            variables_reference: reference,
            memory_reference: address,
            ..Default::default()
        }
    }

    fn evaluate(&mut self, args: dap::requests::EvaluateArguments) -> Reply {
        let l = self.loaded()?;
        let (thread, frame) = match args.frame_id {
            Some(id) => {
                let f = self.frame_ref(id)?;
                (f.thread, f.frame)
            }
            None => {
                let t = l
                    .session
                    .threads
                    .iter()
                    .position(|t| t.crashed)
                    .unwrap_or(0);
                (t, l.positions[t].frame)
            }
        };
        let value = l.crash.evaluate(thread, frame, &args.expression)?;
        let repl = matches!(args.context, Some(EvaluateArgumentsContext::Repl) | None);
        let result = if repl {
            l.crash.print_value(&value)
        } else {
            l.crash.display_value(&value)
        };
        let var = self.variable(args.expression.clone(), value, Some(args.expression));
        Ok(ResponseBody::Evaluate(EvaluateResponse {
            result,
            type_field: var.type_field,
            presentation_hint: None,
            variables_reference: var.variables_reference,
            named_variables: None,
            indexed_variables: None,
            memory_reference: var.memory_reference,
        }))
    }

    fn read_memory(&self, args: dap::requests::ReadMemoryArguments) -> Reply {
        let l = self.loaded()?;
        let base = parse_address(&args.memory_reference)?;
        let address = base.wrapping_add_signed(args.offset.unwrap_or(0));
        let count = usize::try_from(args.count).map_err(|_| "a negative count")?;
        if count > 16 << 20 {
            return Err(format!(
                "{count} bytes is more than one request reads (16 MiB)"
            ));
        }
        let data = l.crash.read_memory(address, count);
        Ok(ResponseBody::ReadMemory(ReadMemoryResponse {
            address: format!("{address:#x}"),
            unreadable_bytes: Some((count - data.len()) as i64),
            data: Some(base64::engine::general_purpose::STANDARD.encode(&data)),
        }))
    }

    fn disassemble(&self, args: dap::requests::DisassembleArguments) -> Reply {
        let l = self.loaded()?;
        let base = parse_address(&args.memory_reference)?;
        let address = base.wrapping_add_signed(args.offset.unwrap_or(0));
        let count = usize::try_from(args.instruction_count)
            .map_err(|_| "a negative instruction count")?
            .min(4096);
        let first = args.instruction_offset.unwrap_or(0);
        Ok(ResponseBody::Disassemble(DisassembleResponse {
            instructions: crate::disasm::around(&l.crash, address, first, count),
        }))
    }

    fn exception_info(&self, thread_id: i64) -> Reply {
        let thread = self.thread_index(thread_id)?;
        let l = self.loaded()?;
        let signal = l.session.signal.as_ref();
        let crashed = l.session.threads[thread].crashed;
        Ok(ResponseBody::ExceptionInfo(ExceptionInfoResponse {
            exception_id: signal.map_or("crash".into(), |s| s.name.clone()),
            description: Some(match (signal, crashed) {
                (Some(s), true) => match s.fault_address {
                    Some(a) => format!("{} (code {}) at address {a:#x}", s.name, s.code),
                    None => format!("{} (code {})", s.name, s.code),
                },
                (_, false) => "this thread was stopped when another one crashed".into(),
                (None, true) => "the program crashed".into(),
            }),
            break_mode: ExceptionBreakMode::Always,
            details: None,
        }))
    }

    fn step(&mut self, thread_id: i64, motion: Motion, after: &mut Vec<Event>) -> Reply {
        let thread = self.thread_index(thread_id)?;
        let l = self.loaded.as_mut().expect("thread_index checked it");
        let t = &l.session.threads[thread];
        let steps = |k: usize| t.frames.get(k).map_or(0, |f| f.path.len());
        let pos = l.positions[thread];
        let newest = |k: usize| steps(k).checked_sub(1);
        let cur = pos.step.or(newest(pos.frame));
        let next = match motion {
            Motion::Back => match cur {
                Some(s) if s > 0 => Position {
                    frame: pos.frame,
                    step: Some(s - 1),
                },
                // Before a frame's first step comes the call in the frame out.
                _ => match (pos.frame + 1..t.frames.len()).find(|&k| steps(k) > 0) {
                    Some(k) => Position {
                        frame: k,
                        step: newest(k),
                    },
                    None => pos,
                },
            },
            Motion::Forward => match cur {
                Some(s) if s + 1 < steps(pos.frame) => Position {
                    frame: pos.frame,
                    step: Some(s + 1),
                },
                // After a frame's newest step comes the frame it called (it never returned).
                _ => match (0..pos.frame).rev().find(|&k| steps(k) > 0) {
                    Some(k) => Position {
                        frame: k,
                        step: Some(0),
                    },
                    None => Position::default(),
                },
            },
            Motion::Out => match (pos.frame + 1..t.frames.len()).find(|&k| steps(k) > 0) {
                Some(k) => Position {
                    frame: k,
                    step: newest(k),
                },
                None => pos,
            },
            Motion::ToStart => match (0..t.frames.len()).rev().find(|&k| steps(k) > 0) {
                Some(k) => Position {
                    frame: k,
                    step: Some(0),
                },
                None => pos,
            },
            Motion::ToCrash => Position::default(),
        };
        let next = Position {
            frame: next.frame,
            // The newest step is the frame's current position: stored as `None`.
            step: next.step.filter(|&s| Some(s) != newest(next.frame)),
        };
        l.positions[thread] = next;
        let at_crash = next == Position::default();
        let f = &t.frames[next.frame.min(t.frames.len().saturating_sub(1))];
        let description = match (next.step, steps(next.frame)) {
            (_, 0) => "no recorded path here".to_string(),
            (Some(s), n) => format!(
                "step {} of {n} in {}",
                s + 1,
                f.function.as_deref().unwrap_or("??")
            ),
            (None, n) => format!(
                "step {n} of {n} in {}",
                f.function.as_deref().unwrap_or("??")
            ),
        };
        let reached_end = next == pos && !matches!(motion, Motion::ToCrash);
        self.frames.clear();
        self.refs.clear();
        after.push(Event::Stopped(StoppedEventBody {
            reason: if at_crash {
                StoppedEventReason::Exception
            } else {
                StoppedEventReason::Step
            },
            description: Some(if reached_end {
                format!("{description} (the recorded path goes no further)")
            } else {
                description
            }),
            thread_id: Some(thread_id),
            preserve_focus_hint: None,
            text: None,
            all_threads_stopped: Some(true),
            hit_breakpoint_ids: None,
        }));
        Ok(match motion {
            Motion::Back => ResponseBody::StepBack,
            Motion::ToStart => ResponseBody::ReverseContinue,
            Motion::Forward => ResponseBody::Next,
            Motion::Out => ResponseBody::StepOut,
            Motion::ToCrash => ResponseBody::Continue(ContinueResponse {
                all_threads_continued: Some(true),
            }),
        })
    }

    /// `csiPosition`: where a Call Stack frame is in the crash, for the language server's line
    /// states (`{frameId}` → `{thread, frame, inline, step, program, core}`; `inline`: which
    /// call inlined into the frame, null for the frame itself).
    fn csi_position(&self, args: Option<&Json>) -> Result<Json, String> {
        let l = self.loaded()?;
        let id = args
            .and_then(|a| a.get("frameId"))
            .and_then(Json::as_i64)
            .ok_or("csiPosition needs {\"frameId\"}")?;
        let f = self.frame_ref(id)?;
        let pos = l.positions[f.thread];
        // Path steps are the physical frame's: an inlined call has a trace of its own.
        let step = (pos.frame == f.frame && f.inline.is_none())
            .then_some(pos.step)
            .flatten();
        Ok(json!({
            "thread": f.thread,
            "frame": f.frame,
            "inline": f.inline,
            "step": step,
            "program": l.crash.exe,
            "core": l.crash.core,
        }))
    }
}

#[derive(Clone, Copy, Debug)]
enum Motion {
    Back,
    Forward,
    Out,
    ToStart,
    ToCrash,
}

/// A name `evaluate` can parse: a C identifier, or a C++ qualified one.
fn is_c_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a memory reference"))
}

fn capabilities() -> Capabilities {
    Capabilities {
        supports_configuration_done_request: Some(true),
        supports_evaluate_for_hovers: Some(true),
        supports_step_back: Some(true),
        supports_read_memory_request: Some(true),
        supports_disassemble_request: Some(true),
        supports_exception_info_request: Some(true),
        supports_terminate_request: Some(true),
        supports_stepping_granularity: Some(false),
        supports_instruction_breakpoints: Some(false),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::is_c_name;

    #[test]
    fn only_names_evaluate_can_parse_get_an_evaluate_name() {
        for ok in ["list", "_x1", "ns::Widget::count"] {
            assert!(is_c_name(ok), "{ok}");
        }
        for bad in ["", "1x", "__CC_arr_42_GLOBAL__sub_I_x.cpp", "a b", "<anon>"] {
            assert!(!is_c_name(bad), "{bad}");
        }
    }
}
