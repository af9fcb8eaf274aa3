//! A minimal LSP client for end-to-end tests: Content-Length framing over any async byte
//! stream, answering the server's own requests (refreshes, progress tokens) and collecting
//! its notifications.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

pub fn root() -> PathBuf {
    std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).unwrap()
}

pub fn fixture(rel: &str) -> String {
    root()
        .join("fixtures/crashes")
        .join(rel)
        .display()
        .to_string()
}

pub fn uri(rel: &str) -> String {
    format!("file://{}", root().join(rel).display())
}

/// Replaces the checkout's absolute path with `$ROOT` so whole responses compare equal on
/// any machine.
pub fn scrub(v: &Value) -> Value {
    let root = root().display().to_string();
    serde_json::from_str(&serde_json::to_string(v).unwrap().replace(&root, "$ROOT")).unwrap()
}

pub struct Client<R, W> {
    reader: BufReader<R>,
    writer: W,
    next_id: i64,
    pub notifications: VecDeque<Value>,
    /// Methods of requests the server sent us.
    pub server_requests: Vec<String>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Client<R, W> {
    pub fn new(reader: R, writer: W) -> Self {
        Client {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
            notifications: VecDeque::new(),
            server_requests: Vec::new(),
        }
    }

    async fn send(&mut self, v: &Value) {
        let body = serde_json::to_string(v).unwrap();
        let msg = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.writer.write_all(msg.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).await.unwrap();
            assert!(n > 0, "server closed the stream");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                len = v.parse().unwrap();
            }
        }
        let mut body = vec![0u8; len];
        self.reader.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Sends a request and returns its response (`result` or `error` object), handling
    /// whatever the server sends meanwhile.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(30), self.read())
                .await
                .expect("server answered within 30 s");
            if msg.get("id").and_then(Value::as_i64) == Some(id) && msg.get("method").is_none() {
                return msg;
            }
            self.handle(msg).await;
        }
    }

    async fn handle(&mut self, msg: Value) {
        match (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
            (Some(id), Some(m)) => {
                self.server_requests.push(m.to_string());
                let id = id.clone();
                self.send(&json!({"jsonrpc": "2.0", "id": id, "result": null}))
                    .await;
            }
            (None, Some(_)) => self.notifications.push_back(msg),
            _ => {}
        }
    }

    /// Reads until a notification of `method` arrives (or `timeout`), returns it.
    pub async fn wait_notification(&mut self, method: &str, timeout: Duration) -> Option<Value> {
        if let Some(i) = self
            .notifications
            .iter()
            .position(|n| n["method"] == method)
        {
            return self.notifications.remove(i);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let msg = tokio::time::timeout(left, self.read()).await.ok()?;
            if msg["method"] == method && msg.get("id").is_none() {
                return Some(msg);
            }
            self.handle(msg).await;
        }
    }

    pub fn take_notifications(&mut self, method: &str) -> Vec<Value> {
        let (mine, rest): (Vec<Value>, Vec<Value>) = self
            .notifications
            .drain(..)
            .partition(|n| n["method"] == method);
        self.notifications = rest.into();
        mine
    }

    pub async fn initialize(&mut self, options: Value) -> Value {
        let r = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": format!("file://{}", root().display()),
                    "capabilities": {
                        "workspace": {"inlayHint": {"refreshSupport": true}, "codeLens": {"refreshSupport": true}},
                        "window": {"workDoneProgress": true}
                    },
                    "initializationOptions": options,
                }),
            )
            .await;
        self.notify("initialized", json!({})).await;
        r
    }

    pub async fn open_doc(&mut self, rel: &str) {
        let text = std::fs::read_to_string(root().join(rel)).unwrap();
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(rel), "languageId": "c", "version": 1, "text": text}}),
        )
        .await;
    }
}
