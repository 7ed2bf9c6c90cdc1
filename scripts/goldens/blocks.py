#!/usr/bin/env python3
"""Goldens for `pi usage blocks`: ccusage 20's `blocks --json` on the same usage as the pi
fixture tests/fixtures/usage/sessions (written by scripts/goldens/usage.py).

ccusage reads pi's sessions only for `daily`, `monthly` and `session` (`ccusage pi ...`);
its `blocks` report reads Claude Code's files. So this script writes every assistant message
with usage of the pi fixture as a Claude Code entry (same timestamp, token counts and cost,
one file per pi session, message and request ids derived from the timestamp and tokens so
that ccusage drops a fork's copies as pi does), runs `ccusage claude blocks --json` on them
and records its blocks in tests/fixtures/usage/blocks-goldens.json.

For the active block (whose burn rate and projection need "now"), it also writes a small pi
session ending a few minutes before the recording (tests/fixtures/usage/blocks-active/),
its Claude Code twin, and ccusage's output with the instant the run began (`recordedAt`:
the tests run pi with that `PI_NOW`).

    npm install --prefix /tmp/ccublk ccusage@20.0.24
    chmod +x /tmp/ccublk/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage
    python3 scripts/goldens/blocks.py --ccusage /tmp/ccublk/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage
"""

import argparse
import hashlib
import json
import os
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "usage")
RUNS = [[], ["--since", "20251231"]]


def claude_entries(path):
    """The assistant messages with usage of one pi session file, as Claude Code entries."""
    out = []
    sid = os.path.basename(path).split("_", 1)[-1].removesuffix(".jsonl")
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            m = e.get("message") if isinstance(e, dict) else None
            if not isinstance(m, dict) or m.get("role") != "assistant" or "usage" not in m:
                continue
            u = m["usage"]
            key = f"{e['timestamp']}/{u['input'] + u['output'] + u['cacheRead'] + u['cacheWrite']}"
            h = hashlib.sha256(key.encode()).hexdigest()[:16]
            out.append({
                "type": "assistant", "uuid": e["id"], "sessionId": sid, "timestamp": e["timestamp"],
                "cwd": "/x", "version": "1.0.0", "requestId": f"req_{h}", "costUSD": u["cost"]["total"],
                "message": {"id": f"msg_{h}", "type": "message", "role": "assistant", "model": m["model"],
                            "content": [], "usage": {"input_tokens": u["input"], "output_tokens": u["output"],
                                                     "cache_creation_input_tokens": u["cacheWrite"],
                                                     "cache_read_input_tokens": u["cacheRead"]}},
            })
    return out


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def active(ccusage, tmp, env):
    """A session whose last block is active now: entries 170, 110 and 20 minutes ago, and
    one the day before (a gap)."""
    now = int(time.time() * 1000)
    minutes = [60 * 26, 170, 110, 20]
    sid = "0193c000-0000-7000-8000-000000000001"
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": iso(now - minutes[0] * 60000), "cwd": "/x"}]
    for k, m in enumerate(minutes):
        inp, out, cr, cw = 1000 * (k + 1), 100 * (k + 1), 5000 * k, 300 * k
        lines.append({"type": "message", "id": f"a{k}", "parentId": None, "timestamp": iso(now - m * 60000 - 7),
                      "message": {"role": "assistant", "content": [], "api": "a", "provider": "anthropic",
                                  "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 0,
                                  "usage": {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw,
                                            "totalTokens": inp + out + cr + cw,
                                            "cost": {"total": round(0.0123 * (k + 1), 6)}}}})
    d = os.path.join(FIXTURE, "blocks-active", "--x--")
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        os.remove(os.path.join(d, old))
    path = os.path.join(d, f"{lines[0]['timestamp'].replace(':', '-').replace('.', '-')}_{sid}.jsonl")
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l, separators=(",", ":")) + "\n")
    claude = os.path.join(tmp, "active", "projects", "p")
    os.makedirs(claude)
    with open(os.path.join(claude, os.path.basename(path)), "w") as f:
        for e in claude_entries(path):
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    env = dict(env, CLAUDE_CONFIG_DIR=os.path.join(tmp, "active"))
    at = int(time.time() * 1000)
    out = subprocess.run([ccusage, "claude", "blocks", "--json", "--offline", "--mode", "display", "--timezone", "UTC",
                          "--token-limit", "20000"], env=env, check=True, capture_output=True, text=True).stdout
    return {"args": ["--token-limit", "20000"], "recordedAt": iso(at), "sessions": "usage/blocks-active",
            "output": json.loads(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccusage", required=True, help="path to ccusage 20's native binary")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        claude = os.path.join(tmp, "claude", "projects", "p")
        os.makedirs(claude)
        sessions = os.path.join(FIXTURE, "sessions")
        for d in sorted(os.listdir(sessions)):
            for name in sorted(os.listdir(os.path.join(sessions, d))):
                entries = claude_entries(os.path.join(sessions, d, name))
                with open(os.path.join(claude, name), "w") as f:
                    for e in entries:
                        f.write(json.dumps(e, separators=(",", ":")) + "\n")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp, "TZ": "UTC", "LOG_LEVEL": "0",
               "CLAUDE_CONFIG_DIR": os.path.join(tmp, "claude"), "NO_COLOR": "1"}
        runs = []
        for run in RUNS:
            out = subprocess.run([args.ccusage, "claude", "blocks", *run, "--json", "--offline", "--mode", "display",
                                  "--timezone", "UTC"], env=env, check=True, capture_output=True, text=True).stdout
            runs.append({"args": run, "output": json.loads(out)})
        runs.append(active(args.ccusage, tmp, env))
    version = subprocess.run([args.ccusage, "--version"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(FIXTURE, "blocks-goldens.json"), "w") as f:
        json.dump({"tool": version, "runs": runs}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
