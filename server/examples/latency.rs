//! Request latency of the real server (in-process, JSON-RPC over a duplex stream): opens a
//! crash, then times every request kind many times and prints p50 / p99 / max.
//!
//! `cargo run --release -p csi-lsp --example latency -- [EXE CORE SOURCE]`
//! (default: the checked-in deep_recursion crash, ~4,600 frames, the largest fixture).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (exe, core, src) = if a.len() >= 3 {
        (
            a[0].clone(),
            a[1].clone(),
            std::fs::canonicalize(&a[2]).unwrap().display().to_string(),
        )
    } else {
        (
            fixture("deep_recursion/realistic-O0/deep_recursion"),
            fixture("deep_recursion/realistic-O0/core"),
            root()
                .join("fixtures/src/deep_recursion.c")
                .display()
                .to_string(),
        )
    };
    let (client_io, server_io) = tokio::io::duplex(1 << 24);
    let (sr, sw) = tokio::io::split(server_io);
    let (service, socket) = csi_lsp::service();
    tokio::spawn(tower_lsp_server::Server::new(sr, sw, socket).serve(service));
    let (cr, cw) = tokio::io::split(client_io);
    let mut c = Client::new(cr, cw);
    c.initialize(json!({})).await;
    let t = Instant::now();
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "csi.openCrash", "arguments": [{"executable": exe, "core": core}]}),
        )
        .await;
    let open = t.elapsed();
    assert!(r.get("error").is_none(), "{r}");
    let frames: u64 = r["result"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["frameCount"].as_u64().unwrap())
        .sum();
    println!("open crash: {open:?} ({frames} frames)");
    let uri = format!("file://{src}");
    let text = std::fs::read_to_string(&src).unwrap();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}}),
    )
    .await;
    let lines = text.lines().count() as u32;
    let crash_line = r["result"]["threads"][0]["frames"][0]["line"]
        .as_u64()
        .unwrap_or(0);
    let requests: Vec<(&str, &str, Value)> = vec![
        (
            "inlayHint",
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}}}),
        ),
        (
            "codeLens",
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri}}),
        ),
        (
            "hover (crash line)",
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": crash_line, "character": 2}}),
        ),
        (
            "hover (other line)",
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}}),
        ),
        ("csi/stack", "csi/stack", json!({})),
        ("csi/pathTrace", "csi/pathTrace", json!({})),
        (
            "csi/selectFrame",
            "csi/selectFrame",
            json!({"thread": 0, "frame": 1}),
        ),
    ];
    println!(
        "{:<20} {:>10} {:>10} {:>10}",
        "request", "p50", "p99", "max"
    );
    for (name, method, params) in requests {
        let mut times = Vec::new();
        for _ in 0..300 {
            let t = Instant::now();
            let r = c.request(method, params.clone()).await;
            times.push(t.elapsed());
            assert!(r.get("error").is_none(), "{name}: {r}");
        }
        let max = *times.iter().max().unwrap();
        println!(
            "{name:<20} {:>10.3?} {:>10.3?} {:>10.3?}",
            pct(times.clone(), 0.5),
            pct(times, 0.99),
            max
        );
    }
}
