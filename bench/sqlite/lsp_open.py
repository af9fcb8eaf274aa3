#!/usr/bin/env python3
"""Time csi-lsp opening a crash as an editor does (issue 17): start the server under
/usr/bin/time, `initialize` with the crash in `initializationOptions`, `initialized`, then
`csi/stack` (answered once the crash is open). Prints the seconds from `initialize` to the
stack's answer and the server's max RSS.

usage: lsp_open.py CSI_LSP EXECUTABLE CORE
"""
import json, os, subprocess, sys, tempfile, time


def send(p, msg):
    body = json.dumps(msg).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()


def recv(p):
    length = None
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("csi-lsp closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(p.stdout.read(length))


def wait_for(p, id_):
    while True:
        m = recv(p)
        if m.get("id") == id_ and "method" not in m:
            return m
        if "method" in m and "id" in m:  # a server request (refresh, progress): answer it
            send(p, {"jsonrpc": "2.0", "id": m["id"], "result": None})


def main():
    lsp, exe, core = sys.argv[1:4]
    timefile = tempfile.mktemp()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", timefile, lsp],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    root = os.path.dirname(os.path.abspath(exe))
    t0 = time.monotonic()
    send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": "file://" + root, "capabilities": {},
        "initializationOptions": {"executable": os.path.abspath(exe), "core": os.path.abspath(core)}}})
    wait_for(p, 1)
    send(p, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send(p, {"jsonrpc": "2.0", "id": 2, "method": "csi/stack", "params": {}})
    r = wait_for(p, 2)
    t = time.monotonic() - t0
    if "error" in r:
        raise SystemExit(f"csi/stack failed: {r['error']}")
    frames = sum(len(th.get("frames", [])) for th in r["result"].get("threads", []))
    send(p, {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None})
    wait_for(p, 3)
    send(p, {"jsonrpc": "2.0", "method": "exit", "params": None})
    p.wait(timeout=30)
    rss = int(open(timefile).read().split()[-1]) // 1024
    os.unlink(timefile)
    print(f"csi-lsp open: {t:.2f} s to the stack ({frames} frames), max RSS {rss} MB")


main()
