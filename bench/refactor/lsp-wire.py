#!/usr/bin/env python3
"""Behaviour check for refactorings of csi-lsp (issue 19): the same session through an old and
a new csi-lsp binary over stdio must give byte-identical messages. Not a CI test.

    bench/refactor/lsp-wire.py OLD_CSI_LSP NEW_CSI_LSP [STORE_DIR]

For every checked-in fixture crash (fixtures/crashes/<program>/<build>/{<program>,core}), one
server (line states on every other crash, status hints on): csi/openCrash, csi/stack (whole, a
range, as a command), then for each thread's first 25 frames csi/pathTrace, csi/selectFrame,
csi/stepPath (-1, -2, 1, -100), inlay hints and code lenses of the frames' files; then, in
every frame file, a hover, csi/query mayRun and mayNotRun on every line (mayRunBefore on every
7th), csi/slice from 8 lines and for named variables, inlay hints of the whole file and of
parts of it, an edit (stale line states); slices from the crash point, clearing, csi.clear. With STORE_DIR (made by scripts/crash-store-fixture.sh):
csi/crashBuckets, each bucket's csi/bucketCrashes and csi/bucketLineStates, opening each of its
crashes, and store errors. The server's requests are answered null.

Responses are paired with their requests by id and compared byte for byte (the server
serializes through serde_json::Value, so keys come sorted whatever the Rust types);
notifications as a multiset per crash. Prints the counts and every difference; exits 1 on any.
"""
import collections, glob, json, os, subprocess, sys, tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


class Server:
    def __init__(self, binary, log, options):
        self.p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, cwd=ROOT)
        self.log = open(log, 'w', encoding='utf-8')
        self.id = 0
        self.request('initialize', {'processId': None, 'rootUri': 'file://' + ROOT,
                                    'capabilities': {}, 'initializationOptions': options})
        self.notify('initialized', {})

    def send(self, v):
        body = json.dumps(v, ensure_ascii=False).encode()
        self.log.write('> ' + body.decode() + '\n')
        self.p.stdin.write(b'Content-Length: %d\r\n\r\n' % len(body) + body)
        self.p.stdin.flush()

    def read(self):
        n = 0
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError('csi-lsp closed its output')
            line = line.strip()
            if not line:
                break
            if line.startswith(b'Content-Length: '):
                n = int(line[16:])
        body = self.p.stdout.read(n)
        self.log.write('< ' + body.decode() + '\n')
        return json.loads(body)

    def notify(self, method, params):
        self.send({'jsonrpc': '2.0', 'method': method, 'params': params})

    def request(self, method, params):
        self.id += 1
        i = self.id
        self.send({'jsonrpc': '2.0', 'id': i, 'method': method, 'params': params})
        while True:
            v = self.read()
            if 'method' in v and 'id' in v:
                self.send({'jsonrpc': '2.0', 'id': v['id'], 'result': None})
            elif v.get('id') == i and 'method' not in v:
                return v

    def close(self):
        self.request('shutdown', None)
        self.notify('exit', None)
        self.p.wait(10)
        self.log.close()


WHOLE = {'start': {'line': 0, 'character': 0}, 'end': {'line': 10000, 'character': 0}}


def crash_session(binary, log, d, prog, line_states):
    s = Server(binary, log, {'lineStates': line_states, 'statusHints': True})
    r = s.request('csi/openCrash', {'executable': os.path.join(d, prog), 'core': os.path.join(d, 'core')})
    if 'error' in r:
        s.close()
        return
    stack = r['result']
    s.request('csi/stack', {})
    s.request('csi/stack', {'range': {'thread': 0, 'from': 0, 'to': 3}})
    s.request('workspace/executeCommand', {'command': 'csi.stack', 'arguments': []})
    frames = [(t['index'], f) for t in stack['threads'] for f in t['frames'][:25]]
    uris = []
    for _, f in frames:
        if f.get('uri') and f['uri'] not in uris and os.path.exists(f['uri'][7:]):
            uris.append(f['uri'])
    texts = {u: open(u[7:], encoding='utf-8', errors='replace').read() for u in uris}
    for u in uris:
        s.notify('textDocument/didOpen', {'textDocument': {'uri': u, 'languageId': 'c', 'version': 1, 'text': texts[u]}})
    for t, f in frames:
        s.request('csi/pathTrace', {'thread': t, 'frame': f['index']})
        s.request('csi/selectFrame', {'thread': t, 'frame': f['index']})
        for delta in (-1, -2, 1, -100):
            s.request('csi/stepPath', {'delta': delta})
        s.request('csi/pathTrace', {})
        for u in uris[:3]:
            s.request('textDocument/inlayHint', {'textDocument': {'uri': u}, 'range': WHOLE})
            s.request('textDocument/codeLens', {'textDocument': {'uri': u}})
    s.request('csi/selectFrame', {'frame': 0})
    for u in uris:
        n = len(texts[u].splitlines())
        for line in range(n):
            s.request('textDocument/hover', {'textDocument': {'uri': u}, 'position': {'line': line, 'character': 4}})
            s.request('csi/query', {'uri': u, 'line': line})
            s.request('csi/query', {'kind': 'mayNotRun', 'uri': u, 'line': line})
            if line % 7 == 0:
                s.request('csi/query', {'kind': 'mayRunBefore', 'uri': u, 'line': line, 'uri2': u, 'line2': n // 2})
        for line in range(0, n, max(1, n // 8)):
            s.request('csi/slice', {'uri': u, 'line': line})
        s.request('csi/slice', {'uri': u, 'line': n // 2, 'variables': ['i', 'p', 'nope']})
        s.request('textDocument/inlayHint', {'textDocument': {'uri': u}, 'range': WHOLE})
        for first, last in ((10, 30), (n // 2, n // 2), (n - 5, n + 5)):
            part = {'start': {'line': first, 'character': 0}, 'end': {'line': last, 'character': 0}}
            s.request('textDocument/inlayHint', {'textDocument': {'uri': u}, 'range': part})
        s.request('textDocument/codeLens', {'textDocument': {'uri': u}})
        s.notify('textDocument/didChange', {'textDocument': {'uri': u, 'version': 2}, 'contentChanges': [{'text': 'x'}]})
    s.request('csi/slice', {})
    s.request('workspace/executeCommand', {'command': 'csi.slice', 'arguments': [{'clear': True}]})
    s.request('csi/slice', {'clear': True})
    s.request('workspace/executeCommand', {'command': 'csi.clear', 'arguments': []})
    s.request('csi/stack', {})
    s.close()


def store_session(binary, log, store):
    s = Server(binary, log, {'crashStore': os.path.join(store, 'crashes.db'), 'lineStates': True})
    buckets = s.request('csi/crashBuckets', {})['result']['buckets']
    s.request('workspace/executeCommand', {'command': 'csi.crashBuckets', 'arguments': [{'program': os.path.join(store, 'bin/calc')}]})
    for b in buckets:
        p = {'program': b['program'], 'signature': b['signature']}
        crashes = s.request('csi/bucketCrashes', p)['result']['crashes']
        s.request('csi/bucketLineStates', p)
        s.request('workspace/executeCommand', {'command': 'csi.bucketLineStates', 'arguments': [p]})
        for c in crashes:
            s.request('csi/openCrash', {'executable': c['executable'], 'core': c['core']})
            s.request('csi/stack', {})
            s.request('csi/pathTrace', {})
    s.request('csi/bucketCrashes', {'program': 'x', 'signature': 'y'})
    s.request('csi/bucketCrashes', {'signature': 'y'})
    s.notify('workspace/didChangeConfiguration', {'settings': {'csi': {'crashStore': ''}}})
    s.request('csi/crashBuckets', {})
    s.close()


def run(binary, out, store):
    os.makedirs(out, exist_ok=True)
    if store:
        store_session(binary, os.path.join(out, 'store.jsonl'), store)
    dirs = sorted(glob.glob(os.path.join(ROOT, 'fixtures/crashes/*/*/')))
    for i, d in enumerate(dirs):
        prog, build = d.rstrip('/').split('/')[-2:]
        if os.path.exists(os.path.join(d, prog)) and os.path.exists(os.path.join(d, 'core')):
            crash_session(binary, os.path.join(out, f'{prog}-{build}.jsonl'), d, prog, i % 2 == 0)


def messages(log):
    """Requests by id, responses in order, and notifications counted (progress left out)."""
    requests, responses, notes = {}, [], collections.Counter()
    for line in open(log, encoding='utf-8'):
        way, body = line[0], line[2:].rstrip('\n')
        v = json.loads(body)
        if way == '>':
            if 'method' in v and 'id' in v:
                requests[v['id']] = (v['method'], v.get('params'))
        elif 'method' not in v and 'id' in v:
            responses.append((v['id'], body))
        elif 'method' in v and 'id' not in v and v['method'] != '$/progress':
            notes[body] += 1
    return requests, responses, notes


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    store = sys.argv[3] if len(sys.argv) == 4 else None
    work = tempfile.mkdtemp(prefix='csi-lsp-wire.')
    run(os.path.abspath(old), os.path.join(work, 'old'), store)
    run(os.path.abspath(new), os.path.join(work, 'new'), store)
    counts = collections.Counter()
    for f in sorted(os.listdir(os.path.join(work, 'old'))):
        reqs, ra, na = messages(os.path.join(work, 'old', f))
        _, rb, nb = messages(os.path.join(work, 'new', f))
        if len(ra) != len(rb):
            print(f'{f}: {len(ra)} responses before, {len(rb)} after')
            counts['differ'] += 1
        for (i, a), (_, b) in zip(ra, rb):
            counts['responses'] += 1
            if a == b:
                counts['identical'] += 1
            else:
                counts['differ'] += 1
                print(f'{f} #{i} {json.dumps(reqs.get(i))[:300]}\n  old: {a[:400]}\n  new: {b[:400]}')
        counts['notifications'] += sum(na.values())
        counts['identical notifications'] += sum((na & nb).values())
        for k in (na - nb):
            counts['differ'] += 1
            print(f'{f}: notification only from the old server: {k[:300]}')
        for k in (nb - na):
            counts['differ'] += 1
            print(f'{f}: notification only from the new server: {k[:300]}')
    print(f"{counts['identical']} of {counts['responses']} responses and "
          f"{counts['identical notifications']} of {counts['notifications']} notifications "
          f"byte-identical; logs in {work}")
    sys.exit(1 if counts['differ'] else 0)


if __name__ == '__main__':
    main()
