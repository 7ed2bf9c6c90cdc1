#!/usr/bin/env python3
"""Writes a seeded, realistic pi session file (version 3) for benchmarks: the same seed gives
the same bytes. Needs only Python 3.

    python3 scripts/gen_session.py --entries 100000 --seed 1 --out s100k.jsonl

The conversation is what an agent session holds: user prompts, each followed by a run of
assistant messages (thinking, text, tool calls, usage as providers report it) and tool
results (file contents, command output, edits, listings; some long), with now and then a
model or thinking-level change, a label, a session name, an extension's custom entries, an
aborted or failed answer, and a `!command` run by the user. When the estimated context
(characters / 4) passes a 200k window minus the default reserve, a compaction entry is
written that keeps about the last 20k tokens. Every so often the conversation goes back to an
earlier point of its path and continues from there, mostly through a branch summary, as the
agent's tree navigation does: so the files have branches, and the leaf is the last line.

Entries average about 2 KB, so 100k entries make a file of about 200 MB. A sidecar
OUT.meta.json records the counts (entries, branches, compactions).
"""

import argparse
import json
import random
import time

WORDS = (
    "the session file cache index entry parser tree branch leaf compaction summary context "
    "token model request stream tool result read write edit grep find bash error retry lock "
    "append fsync header label thinking usage cost window reserve keep recent path root child "
    "test bench release build crate module function struct trait error handle value field key "
    "json line byte offset column format render terminal width page link table row cell list"
).split()
TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls"]
MODELS = [
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
]
PROJECTS = ["/home/dev/api", "/home/dev/web", "/home/dev/cli", "/srv/tools", "/home/dev/infra"]
WINDOW, RESERVE, KEEP = 200_000, 16_384, 20_000


class Gen:
    def __init__(self, seed, start_ms):
        self.r = random.Random(seed)
        self.ms = start_ms
        self.ids = set()
        self.model = MODELS[seed % len(MODELS)]

    def words(self, lo, hi):
        return " ".join(self.r.choice(WORDS) for _ in range(self.r.randint(lo, hi)))

    def text(self, lo, hi):
        """Sentences of lo..hi words in all."""
        out, n = [], self.r.randint(lo, hi)
        while n > 0:
            k = min(n, self.r.randint(6, 18))
            out.append(self.words(k, k).capitalize() + ".")
            n -= k
        return " ".join(out)

    def id(self):
        while True:
            i = "%08x" % self.r.getrandbits(32)
            if i not in self.ids:
                self.ids.add(i)
                return i

    def tick(self, lo=200, hi=20_000):
        self.ms += self.r.randint(lo, hi)
        return self.ms

    def iso(self):
        t = self.ms
        secs, milli = divmod(t, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + ".%03dZ" % milli

    def usage(self, context):
        inp = self.r.randint(2, 400)
        out = self.r.randint(20, 1800)
        read = max(0, context - inp)
        cost_in, cost_out, cost_read = inp * 3e-6, out * 15e-6, read * 3e-7
        return {
            "input": inp,
            "output": out,
            "cacheRead": read,
            "cacheWrite": 0,
            "totalTokens": inp + out + read,
            "cost": {"input": cost_in, "output": cost_out, "cacheRead": cost_read, "cacheWrite": 0,
                     "total": cost_in + cost_out + cost_read},
        }

    def tool_call(self):
        name = self.r.choice(TOOLS)
        path = "src/%s/%s.rs" % (self.r.choice(WORDS), self.r.choice(WORDS))
        args = {
            "read": {"path": path},
            "bash": {"command": "cargo test -q %s 2>&1 | tail -n 20" % self.r.choice(WORDS)},
            "edit": {"path": path, "edits": [{"oldText": self.words(3, 12), "newText": self.words(3, 14)}]},
            "write": {"path": path, "content": self.text(40, 300)},
            "grep": {"pattern": self.r.choice(WORDS), "path": "src"},
            "find": {"pattern": "*.rs", "path": "crates"},
            "ls": {"path": "src/" + self.r.choice(WORDS)},
        }[name]
        return {"type": "toolCall", "id": "call_" + "%012x" % self.r.getrandbits(48), "name": name, "arguments": args}

    def tool_output(self, name):
        if name in ("read", "bash") and self.r.random() < 0.08:
            return self.text(2000, 7000)  # a long file or log
        if name == "read":
            return "\n".join("%d\t%s" % (i + 1, self.words(2, 10)) for i in range(self.r.randint(10, 120)))
        if name == "bash":
            return "\n".join(self.words(3, 12) for _ in range(self.r.randint(2, 40)))
        if name == "edit":
            return "Successfully replaced text in the file."
        if name == "write":
            return "Successfully wrote %d bytes." % self.r.randint(100, 9000)
        return "\n".join("src/%s/%s.rs" % (self.r.choice(WORDS), self.r.choice(WORDS)) for _ in range(self.r.randint(1, 25)))


def uuid7(ms, r):
    """A UUID of version 7: the time in milliseconds, then random bits."""
    h = "%012x" % ms + "7%03x" % r.getrandbits(12) + "%x" % (8 | r.getrandbits(2)) + "%015x" % r.getrandbits(60)
    return "-".join([h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    g = Gen(a.seed, 1_767_225_600_000 + a.seed * 3_600_000)  # 2026-01-01 plus the seed in hours
    r = g.r
    header = {
        "type": "session",
        "version": 3,
        "id": uuid7(g.ms, r),
        "timestamp": g.iso(),
        "cwd": PROJECTS[a.seed % len(PROJECTS)],
    }
    path = []  # (id, is_user, tokens) of the current path since the last compaction
    all_path = []  # ids of the whole current path
    meta = {"entries": 0, "branches": 0, "compactions": 0, "messages": 0}
    with open(a.out, "w") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")

        def put(entry, tokens=0, user=False):
            g.tick()
            e = {"type": entry.pop("type"), "id": g.id(), "parentId": all_path[-1] if all_path else None,
                 "timestamp": g.iso()}
            e.update(entry)
            f.write(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n")
            all_path.append(e["id"])
            path.append((e["id"], user, tokens))
            meta["entries"] += 1
            return e["id"]

        def message(msg, tokens, user=False):
            msg["timestamp"] = g.ms
            meta["messages"] += 1
            return put({"type": "message", "message": msg}, tokens, user)

        while meta["entries"] < a.entries:
            context = sum(t for _, _, t in path)
            if context > WINDOW - RESERVE:
                kept, first = 0, path[-1][0]
                for i, u, t in reversed(path):
                    kept += t
                    if u:
                        first = i
                    if kept > KEEP:
                        break
                put({"type": "compaction", "summary": "## Goal\n" + g.text(60, 200) + "\n\n## Progress\n" + g.text(80, 300),
                     "firstKeptEntryId": first, "tokensBefore": context, "details": {"readFiles": [], "modifiedFiles": []},
                     "fromHook": False})
                meta["compactions"] += 1
                keep_from = [i for i, (e, _, _) in enumerate(path) if e == first]
                path[:] = path[keep_from[0]:] if keep_from else path[-1:]
                continue
            roll = r.random()
            if roll < 0.01 and len(all_path) > 70:
                # Back to an earlier point of the path, mostly with a summary of what is left.
                # A few turns back, as people retry: most entries stay on the active path.
                back = max(1, len(all_path) - r.randint(3, 60))
                left = set(all_path[back + 1:])
                del all_path[back + 1:]
                path[:] = [p for p in path if p[0] not in left]
                meta["branches"] += 1
                if r.random() < 0.8:
                    put({"type": "branch_summary", "fromId": all_path[-1], "summary": g.text(30, 120)}, 100)
                continue
            if roll < 0.02:
                put({"type": "model_change", "provider": g.model[0], "modelId": g.model[1]})
                continue
            if roll < 0.025:
                put({"type": "thinking_level_change", "thinkingLevel": r.choice(["low", "medium", "high"])})
                continue
            if roll < 0.03 and all_path:
                put({"type": "label", "targetId": all_path[-1] if all_path else None, "label": r.choice(WORDS)})
                continue
            if roll < 0.033:
                put({"type": "custom", "customType": "bench-ext", "data": {"n": r.randint(0, 9), "note": g.words(2, 6)}})
                continue
            if roll < 0.036:
                cmd = "git status --short"
                message({"role": "bashExecution", "command": cmd, "output": g.words(5, 60), "exitCode": 0,
                         "cancelled": False, "truncated": False}, 50, user=True)
                continue
            # A user prompt, then the agent's steps.
            prompt = g.text(5, 80)
            message({"role": "user", "content": prompt if r.random() < 0.7 else [{"type": "text", "text": prompt}]},
                    len(prompt) // 4, user=True)
            for _ in range(r.randint(1, 12)):
                if meta["entries"] >= a.entries:
                    break
                provider, model, api = g.model
                calls = [g.tool_call() for _ in range(r.choice([0, 1, 1, 1, 2, 3]))]
                content = [{"type": "thinking", "thinking": g.text(10, 120), "thinkingSignature": "sig" + "%x" % r.getrandbits(64)}]
                content.append({"type": "text", "text": g.text(5, 150)})
                content.extend(calls)
                stop = "toolUse" if calls else "stop"
                if r.random() < 0.01:
                    stop = r.choice(["aborted", "error"])
                ans = {"role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
                       "usage": g.usage(sum(t for _, _, t in path)), "stopReason": stop}
                if stop == "error":
                    ans["errorMessage"] = "overloaded_error: " + g.words(3, 8)
                message(ans, len(json.dumps(content)) // 4)
                if stop != "toolUse":
                    break
                for c in calls:
                    out = g.tool_output(c["name"])
                    message({"role": "toolResult", "toolCallId": c["id"], "toolName": c["name"],
                             "content": [{"type": "text", "text": out}], "isError": r.random() < 0.05}, len(out) // 4)
    with open(a.out + ".meta.json", "w") as m:
        json.dump(meta, m)


if __name__ == "__main__":
    main()
