#!/usr/bin/env python3
"""Checks an exported HTML page of a session in a real headless browser, offline.

    python3 scripts/check-export.py SESSION.jsonl PAGE.html [--check-html PATH]

Runs the shared `check-html` tool (a headless Chromium that blocks every request) on PAGE
with:
  * the text of every user message on the session's active path as expected text (a run of
    plain words from its first line: the rendered Markdown drops the markup);
  * evaluations that switch to another branch (through an entry link, and by clicking a
    row of the tree pane filtered to user messages), then check that the conversation shows
    that branch with the chosen entry in it;
  * an evaluation that scrolls the conversation down 40 screens and reports how many
    articles were made on the way and how long it took.
Prints check-html's JSON report; exits with its status. Not used by the tests (they parse
the page with an HTML parser); needs node and the browser of check-html's setup.sh.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def entries(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and e.get("type") != "session" and isinstance(e.get("id"), str):
                out.append(e)
    return out


def probe(text):
    """A run of plain words from the first non-empty line, as the page shows it."""
    for line in text.splitlines():
        words = re.findall(r"[A-Za-z0-9][A-Za-z0-9 ,.]*[A-Za-z0-9]", line)
        best = max(words, key=len, default="")
        if len(best) >= 4:
            return best[:60].strip()
    return None


def user_text(m):
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text")
    return ""


SWITCH_BY_LINK = r"""(async () => {
  const D = JSON.parse(document.getElementById("pi-data").textContent);
  const conv = document.getElementById("conv");
  const before = conv.dataset.leaf;
  const onPath = new Set();
  for (let i = D.ids.indexOf(before); i >= 0; i = D.parent[i]) onPath.add(i);
  let target = -1;
  for (let i = 0; i < D.ids.length; i++) if (!onPath.has(i) && D.show[i] === i && D.kind[i] === "u") { target = i; break; }
  if (target < 0) return { skipped: "no other branch" };
  location.hash = "#" + D.ids[target];
  await new Promise((r) => setTimeout(r, 200));
  const el = document.getElementById(D.ids[target]);
  const r = el ? el.getBoundingClientRect() : null;
  return { before, after: conv.dataset.leaf, switched: conv.dataset.leaf !== before,
           target: D.ids[target], shown: !!el && conv.contains(el), inView: !!r && r.top < innerHeight && r.bottom > 0 };
})()"""

SWITCH_BY_TREE = r"""(async () => {
  const conv = document.getElementById("conv"), rows = document.getElementById("rows");
  const only = document.getElementById("only");
  only.value = "u"; only.dispatchEvent(new Event("change"));
  const before = conv.dataset.leaf;
  let row = null;
  for (let y = 0; y <= rows.scrollHeight && !row; y += rows.clientHeight) {
    rows.scrollTop = y;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    row = rows.querySelector(".row:not(.on)");
  }
  if (!row) return { skipped: "every user message is on this branch" };
  const id = row.title;
  row.click();
  await new Promise((r) => setTimeout(r, 200));
  const el = document.getElementById(id);
  only.value = ""; only.dispatchEvent(new Event("change"));
  return { before, after: conv.dataset.leaf, switched: conv.dataset.leaf !== before, target: id,
           shown: !!el && conv.contains(el), rowNowOnPath: !!rows.querySelector('.row.on') };
})()"""

SCROLL = r"""(async () => {
  const main = document.getElementById("main"), conv = document.getElementById("conv");
  location.hash = ""; main.scrollTop = 0;
  const t0 = performance.now(), a0 = conv.querySelectorAll("article").length;
  let frames = 0;
  for (let k = 0; k < 40; k++) {
    main.scrollTop += main.clientHeight;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    frames++;
  }
  return { screens: frames, ms: Math.round(performance.now() - t0), articlesBefore: a0,
           articlesAfter: conv.querySelectorAll("article").length, scrollTop: main.scrollTop,
           lazyLeft: conv.querySelectorAll(".lazy").length };
})()"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("session")
    ap.add_argument("page")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--check-html", default=os.path.join(here, "..", "..", "shared", "tools", "browser", "check-html"))
    a = ap.parse_args()
    es = entries(a.session)
    by_id = {e["id"]: e for e in es}
    leaf = es[-1]["id"] if es else None
    path, seen = [], set()
    while leaf in by_id and leaf not in seen:
        seen.add(leaf)
        path.append(by_id[leaf])
        leaf = by_id[leaf].get("parentId")
    path.reverse()
    expect = []
    for e in path:
        m = e.get("message")
        if e.get("type") == "message" and isinstance(m, dict) and m.get("role") == "user":
            p = probe(user_text(m))
            if p:
                expect.append(p)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(expect) + "\n")
        expect_file = f.name
    cmd = [a.check_html, a.page, "--expect-file", expect_file, "--timeout-ms", "180000",
           "--eval", SWITCH_BY_LINK, "--eval", SWITCH_BY_TREE, "--eval", SCROLL]
    r = subprocess.run(cmd, capture_output=True, text=True)
    os.unlink(expect_file)
    sys.stderr.write(r.stderr)
    try:
        report = json.loads(r.stdout)
        report["expected"] = len(expect)
        for ev in report.get("evals", []):
            ev["js"] = ev["js"].split("\n", 1)[0][:40] + "…"
        print(json.dumps(report, indent=1))
    except ValueError:
        print(r.stdout)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
