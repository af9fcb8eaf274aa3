//! `csi-cc [--csi-* options] [clang args...]`: a drop-in C compiler that instruments every
//! source file it compiles (DESIGN §4). Per source file: clang → bitcode → instrument → object;
//! linking and everything else is clang's. Exit codes and diagnostics are clang's own.

mod defuse;
mod instrument;

use instrument::{Mechanisms, Options};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

const USAGE: &str = "usage: csi-cc [--csi-scheme=realistic|pt|cc|bb|fc|all|none] \
[--csi-schema=FILE] [--csi-pt-size=N] [--csi-cc-probes=all|placed] [--csi-verbose] \
[clang arguments...]";

/// Options of clang that take the next argument as their value.
const TAKES_ARG: &[&str] = &[
    "-o",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-L",
    "-l",
    "-Xlinker",
    "-Xclang",
    "-Xassembler",
    "-Xpreprocessor",
    "-arch",
    "-target",
    "-T",
    "-u",
    "-z",
    "-e",
    "-isysroot",
    "--sysroot",
    "-aux-info",
    "-mllvm",
    "-main-file-name",
    "-ivfsoverlay",
    "-F",
];

fn clang() -> String {
    std::env::var("CSI_CLANG").unwrap_or_else(|_| "clang-19".into())
}

fn is_source(a: &str) -> bool {
    let ext = Path::new(a)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    matches!(ext, "c" | "i" | "cc" | "cpp" | "cxx" | "c++" | "C" | "ii")
}

fn fail(msg: &str) -> ! {
    eprintln!("csi-cc: error: {msg}");
    exit(1)
}

fn run(cmd: &mut Command) -> i32 {
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => fail(&format!("cannot run {:?}: {e}", cmd.get_program())),
    }
}

fn read_schema(path: &str) -> HashMap<String, Mechanisms> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| fail(&format!("cannot read schema file `{path}`: {e}")));
    let mut m = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((f, set)) = line.split_once(';') else {
            fail(&format!(
                "{path}:{}: expected `function;{{CC,PT}}`, found `{line}`",
                i + 1
            ))
        };
        let Some(mech) = Mechanisms::from_set(set) else {
            fail(&format!(
                "{path}:{}: bad mechanism set `{set}` (use PT, CC, BBC, FC)",
                i + 1
            ))
        };
        m.insert(f.trim().to_string(), mech);
    }
    m
}

struct TempDir(PathBuf);
impl TempDir {
    /// `std::process::exit` skips destructors: clean up first.
    fn exit(&self, code: i32) -> ! {
        if std::env::var_os("CSI_KEEP_TEMPS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
        exit(code)
    }

    fn fail(&self, msg: &str) -> ! {
        eprintln!("csi-cc: error: {msg}");
        self.exit(1)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("CSI_KEEP_TEMPS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut scheme = "realistic".to_string();
    let mut schema = None;
    let mut pt_size: u32 = 10;
    let mut verbose = false;
    let mut cc_all_probes = false;
    let mut args: Vec<String> = Vec::new();
    for a in argv {
        if let Some(v) = a.strip_prefix("--csi-scheme=") {
            scheme = v.to_string();
        } else if let Some(v) = a.strip_prefix("--csi-schema=") {
            schema = Some(v.to_string());
        } else if let Some(v) = a.strip_prefix("--csi-pt-size=") {
            pt_size = match v.parse() {
                Ok(n) if (1..=1_000_000).contains(&n) => n,
                _ => fail(&format!(
                    "--csi-pt-size must be a number in 1..=1000000, not `{v}`"
                )),
            };
        } else if let Some(v) = a.strip_prefix("--csi-cc-probes=") {
            cc_all_probes = match v {
                "all" => true,
                "placed" => false,
                _ => fail(&format!(
                    "--csi-cc-probes must be `all` or `placed`, not `{v}`"
                )),
            };
        } else if a == "--csi-verbose" {
            verbose = true;
        } else if a == "--csi-help" {
            println!("{USAGE}");
            return;
        } else if a.starts_with("--csi-") {
            fail(&format!("unknown option `{a}`\n{USAGE}"));
        } else {
            args.push(a);
        }
    }
    let Some(default) = Mechanisms::from_scheme(&scheme) else {
        fail(&format!(
            "unknown scheme `{scheme}` (expected realistic, pt, cc, bb, fc, all or none)"
        ))
    };
    let per_function = schema.as_deref().map(read_schema).unwrap_or_default();

    // Classify the arguments.
    let mut sources: Vec<usize> = Vec::new();
    let mut output: Option<String> = None;
    let (mut compile_only, mut asm_only, mut passthrough) = (false, false, false);
    let mut has_dep = false;
    let mut has_mt = false;
    let mut has_mf = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if TAKES_ARG.contains(&a) {
            match a {
                "-o" => output = args.get(i + 1).cloned(),
                "-x" => passthrough = true,
                "-MT" | "-MQ" => has_mt = true,
                "-MF" => has_mf = true,
                _ => {}
            }
            i += 2;
            continue;
        }
        match a {
            "-c" => compile_only = true,
            "-S" => asm_only = true,
            "-E" | "-M" | "-MM" | "-fsyntax-only" | "-emit-llvm" | "-###" | "--version" | "-v"
            | "-dumpversion" | "-dumpmachine" | "-print-search-dirs" => passthrough = true,
            "-MD" | "-MMD" => has_dep = true,
            "-" => passthrough = true,
            _ => {
                if let Some(o) = a.strip_prefix("-o") {
                    if !o.is_empty() && !a.starts_with("-objc") {
                        output = Some(o.to_string());
                    }
                } else if a.starts_with("-print-") || a.starts_with("-x") {
                    passthrough = true;
                }
                if a.starts_with("-MT") || a.starts_with("-MQ") {
                    has_mt = true;
                }
                if a.starts_with("-MF") {
                    has_mf = true;
                }
                if !a.starts_with('-') && is_source(a) {
                    sources.push(i);
                }
            }
        }
        i += 1;
    }
    let single_out = compile_only || asm_only;
    if passthrough || sources.is_empty() || (single_out && output.is_some() && sources.len() > 1) {
        // Nothing to instrument (or clang will reject the combination itself).
        exit(run(Command::new(clang()).args(&args)));
    }

    // Flags for compiling one source: everything except inputs, -o, -c, -S.
    let mut flags: Vec<String> = Vec::new();
    let mut j = 0;
    while j < args.len() {
        let a = &args[j];
        if a == "-o" {
            j += 2;
            continue;
        }
        if TAKES_ARG.contains(&a.as_str()) {
            flags.push(a.clone());
            if let Some(v) = args.get(j + 1) {
                flags.push(v.clone());
            }
            j += 2;
            continue;
        }
        let is_input = !a.starts_with('-');
        if !(is_input || a == "-c" || a == "-S" || (a.starts_with("-o") && a.len() > 2)) {
            flags.push(a.clone());
        }
        j += 1;
    }

    let tmp = TempDir(std::env::temp_dir().join(format!("csi-cc-{}", std::process::id())));
    if let Err(e) = std::fs::create_dir_all(&tmp.0) {
        fail(&format!("cannot create {}: {e}", tmp.0.display()));
    }
    let mut objects: HashMap<usize, String> = HashMap::new();
    for (k, &si) in sources.iter().enumerate() {
        let src = &args[si];
        let stem = Path::new(src)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("out");
        let out = if single_out {
            output
                .clone()
                .unwrap_or_else(|| format!("{stem}.{}", if asm_only { "s" } else { "o" }))
        } else {
            tmp.0
                .join(format!("{k}-{stem}.o"))
                .to_string_lossy()
                .into_owned()
        };
        let bc = tmp
            .0
            .join(format!("{k}-{stem}.bc"))
            .to_string_lossy()
            .into_owned();
        let ibc = tmp
            .0
            .join(format!("{k}-{stem}.csi.bc"))
            .to_string_lossy()
            .into_owned();
        let mut front = Command::new(clang());
        front.args(&flags);
        if has_dep && !has_mt {
            front.arg("-MT").arg(&out);
        }
        if has_dep && !has_mf {
            front.arg("-MF").arg(Path::new(&out).with_extension("d"));
        }
        front
            .args(["-g", "-fno-discard-value-names", "-c", "-emit-llvm", "-o"])
            .arg(&bc)
            .arg(src);
        let code = run(&mut front);
        if code != 0 {
            tmp.exit(code);
        }
        let opts = Options {
            default,
            per_function: per_function.clone(),
            pt_size,
            cc_all_probes,
            source: src.clone(),
            // The last -O flag wins, as in clang; -O0 and none mean unoptimized.
            optimized: flags
                .iter()
                .rev()
                .find(|f| f.starts_with("-O"))
                .is_some_and(|f| f != "-O0"),
        };
        match instrument::instrument_file(&bc, &ibc, &opts) {
            Ok(r) => {
                if !r.uninstrumented.is_empty() {
                    let list: Vec<String> = r
                        .uninstrumented
                        .iter()
                        .map(|(f, why)| format!("`{f}` ({why})"))
                        .collect();
                    eprintln!(
                        "csi-cc: warning: {src}: compiled without instrumentation: {}",
                        list.join(", ")
                    );
                }
                for (f, why) in r.pt_skipped {
                    if verbose {
                        eprintln!("csi-cc: {src}: `{f}` not path-traced: {why}");
                    }
                }
            }
            Err(e) => tmp.fail(&format!("{src}: {e}")),
        }
        let mut back = Command::new(clang());
        back.args(flags.iter().filter(|f| !f.starts_with("-M")))
            .args([
                "-g",
                "-Wno-unused-command-line-argument",
                "-Xclang",
                "-disable-llvm-passes",
            ])
            .arg(if asm_only { "-S" } else { "-c" })
            .arg("-o")
            .arg(&out)
            .arg(&ibc);
        let code = run(&mut back);
        if code != 0 {
            tmp.exit(code);
        }
        objects.insert(si, out);
    }
    if single_out {
        return;
    }
    // Link: the original command line with each source replaced by its instrumented object.
    let link_args: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(k, a)| objects.get(&k).cloned().unwrap_or_else(|| a.clone()))
        .collect();
    tmp.exit(run(Command::new(clang()).args(&link_args)));
}
