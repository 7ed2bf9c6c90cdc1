#!/usr/bin/env python3
"""Goldens for `pi usage`: writes a generated sessions directory to tests/fixtures/usage/
and records what `@ccusage/pi` 18.0.11 prints with --json on it (tests/fixtures/usage/
goldens.json). The tests compare `pi usage` with these records and need no Node.

    npm install --prefix /tmp/ccusage @ccusage/pi@18.0.11
    python3 scripts/goldens/usage.py --ccusage /tmp/ccusage/node_modules/@ccusage/pi/dist/index.js

The directory: three projects, sessions on several days, months and ISO weeks (some
messages near midnight UTC so that time zones move them), two providers and three models,
branches (messages whose parent is not the previous entry), a fork that copies the first
messages of its parent (counted once), an empty session, invalid lines, and assistant
messages without usage.
"""

import argparse
import json
import os
import random
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "fixtures", "usage")
MODELS = [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"), ("anthropic", "claude-haiku-4-5")]
RUNS = [
    ["daily"], ["monthly"], ["session"],
    ["daily", "--since", "2025-12-01", "--until", "20251231"],
    ["daily", "--timezone", "America/New_York"],
    ["daily", "--timezone", "Asia/Tokyo"],
    ["monthly", "--timezone", "Pacific/Auckland"],
    ["session", "--since", "2026-01-01"],
]


def iso(day, sec):
    return f"{day}T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{sec * 7 % 1000:03d}Z"


def session(rng, cwd, sid, day, turns, parent=None, start=36000):
    header = {"type": "session", "version": 3, "id": sid, "timestamp": iso(day, start), "cwd": cwd}
    if parent:
        header["parentSession"] = parent
    lines = [header]
    prev = None
    t = start
    ids = []
    for k in range(turns):
        t += rng.randint(30, 4000)
        uid = f"{sid[-4:]}u{k:03d}"
        # a branch now and then: continue from an earlier assistant message
        par = rng.choice(ids) if ids and rng.random() < 0.15 else prev
        lines.append({"type": "message", "id": uid, "parentId": par, "timestamp": iso(day, t % 86400),
                      "message": {"role": "user", "content": f"question {k}", "timestamp": 0}})
        t += rng.randint(1, 60)
        provider, model = rng.choice(MODELS)
        inp, out = rng.randint(0, 20000), rng.randint(0, 3000)
        cr, cw = rng.choice([0, rng.randint(0, 90000)]), rng.choice([0, rng.randint(0, 9000)])
        usage = {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw,
                 "totalTokens": inp + out + cr + cw,
                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                          "total": round((inp * 3 + out * 15 + cr * 0.3 + cw * 3.75) / 1e6, 6)}}
        aid = f"{sid[-4:]}a{k:03d}"
        msg = {"role": "assistant", "content": [{"type": "text", "text": f"answer {k}"}], "api": "x",
               "provider": provider, "model": model, "usage": usage, "stopReason": "stop", "timestamp": 0}
        if rng.random() < 0.05:
            del msg["usage"]  # an aborted message without usage
        lines.append({"type": "message", "id": aid, "parentId": uid, "timestamp": iso(day, t % 86400), "message": msg})
        ids.append(aid)
        prev = aid
    return lines


def write(path, lines, extra=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l, separators=(",", ":")) + "\n")
        f.write(extra)


def generate():
    rng = random.Random(15)
    root = os.path.join(OUT, "sessions")
    shutil.rmtree(root, ignore_errors=True)
    projects = ["/home/me/parser", "/home/me/web app", "/srv/build"]
    days = ["2025-11-29", "2025-11-30", "2025-12-01", "2025-12-15", "2025-12-31", "2026-01-01", "2026-01-02"]
    n = 0
    for p in projects:
        d = os.path.join(root, "--" + p.strip("/").replace("/", "-") + "--")
        for day in rng.sample(days, 4):
            n += 1
            sid = f"0193b000-0000-7000-8000-{n:012d}"
            start = rng.choice([600, 36000, 84000])  # near midnight too
            lines = session(rng, p, sid, day, rng.randint(3, 25), start=start)
            path = os.path.join(d, f"{lines[0]['timestamp'].replace(':', '-').replace('.', '-')}_{sid}.jsonl")
            extra = "{not json\n" if n % 5 == 0 else ""
            write(path, lines, extra)
            if n == 2:
                # a fork: the first five entries copied, then its own turns
                n += 1
                fid = f"0193b000-0000-7000-8000-{n:012d}"
                copied = [dict(l) for l in lines[1:6]]
                own = session(rng, p, fid, "2026-01-02", 3, parent=path, start=50000)[1:]
                head = dict(own[0]) if own else None
                fork = [{"type": "session", "version": 3, "id": fid, "timestamp": "2026-01-02T13:53:20.000Z",
                         "cwd": p, "parentSession": path}] + copied + own
                write(os.path.join(d, f"2026-01-02T13-53-20-000Z_{fid}.jsonl"), fork)
    n += 1
    empty = os.path.join(root, "--srv-build--", f"2026-01-02T00-00-00-000Z_0193b000-0000-7000-8000-{n:012d}.jsonl")
    write(empty, [{"type": "session", "version": 3, "id": f"0193b000-0000-7000-8000-{n:012d}",
                   "timestamp": "2026-01-02T00:00:00.000Z", "cwd": "/srv/build"}])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccusage", required=True, help="path to @ccusage/pi's dist/index.js")
    args = ap.parse_args()
    generate()
    goldens = []
    for run in RUNS:
        env = dict(os.environ, TZ="UTC", LOG_LEVEL="0")
        out = subprocess.run(["node", args.ccusage, *run, "--json", "--piPath", os.path.join(OUT, "sessions")],
                             env=env, check=True, capture_output=True, text=True).stdout
        goldens.append({"args": run, "tz": "UTC", "output": json.loads(out)})
    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        json.dump({"tool": "@ccusage/pi 18.0.11", "runs": goldens}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
