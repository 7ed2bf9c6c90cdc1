// Records how the reference implementation (npm @earendil-works/pi-coding-agent 1.6.0; 0.73.1
// under its old name @mariozechner/ still works) sees the
// session files `pi run` writes, so the test suite can check that they open in the reference
// with the same context, without Node.
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0   # needs Node >= 22.19
//   PI_UPDATE_RUN_FIXTURES=1 cargo test --test cli run_compat::scenarios   # (re)writes the inputs
//   node scripts/goldens/run.mjs --pi-dir /some/dir
//
// Inputs: tests/fixtures/run/*.jsonl, written by `pi run` in the scenarios of
// tests/cli/run_compat.rs (tool calls, a retried error, a multi-edit, an overflow recovered by
// compaction, a branch with its own thinking level, runs interrupted by Ctrl-C).
// Output: tests/fixtures/run/<name>.golden.json with, from the reference's own functions:
//   leaf          SessionManager.open(file).getLeafId()
//   leaves        for every leaf of the tree (entries without children), in file order:
//                 buildSessionContext(entries, leaf): the agent messages (one JSON.stringify
//                 line each), thinkingLevel and model
//   continued     whether appending a message with the reference (appendMessage) kept the
//                 file's bytes as a prefix, and the new entry's parentId

import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where the reference is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = ["@earendil-works", "@mariozechner"]
	.map((scope) => join(resolve(piDir), "node_modules", scope, "pi-coding-agent"))
	.find((p) => existsSync(p));
if (!pkg) throw new Error(`no pi-coding-agent under ${piDir}/node_modules`);
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
const { SessionManager, buildSessionContext } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

const dir = join(repo, "tests", "fixtures", "run");
const work = mkdtempSync(join(tmpdir(), "pi-run-goldens-"));

for (const name of readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort()) {
	const file = join(dir, name);
	const copy = join(work, name);
	copyFileSync(file, copy);
	const sm = SessionManager.open(copy);
	const entries = sm.getEntries();
	const parents = new Set(entries.map((e) => e.parentId).filter((p) => p));
	const leaves = entries
		.filter((e) => !parents.has(e.id))
		.map((e) => {
			const ctx = buildSessionContext(entries, e.id);
			return {
				leaf: e.id,
				agent: ctx.messages.map((m) => JSON.stringify(m)),
				thinkingLevel: ctx.thinkingLevel,
				model: ctx.model ?? null,
			};
		});
	const before = readFileSync(copy, "utf8");
	const leaf = sm.getLeafId();
	const id = sm.appendMessage({ role: "user", content: [{ type: "text", text: "continued by the reference" }], timestamp: 0 });
	const after = readFileSync(copy, "utf8");
	const added = after
		.slice(before.length)
		.trim()
		.split("\n")
		.map((l) => JSON.parse(l));
	const golden = {
		input: `tests/fixtures/run/${name}`,
		reference: version,
		leaf,
		leaves,
		continued: {
			prefixKept: after.startsWith(before),
			parentId: added.find((e) => e.id === id)?.parentId ?? null,
		},
	};
	const out = join(dir, name.replace(/\.jsonl$/, ".golden.json"));
	writeFileSync(out, `${JSON.stringify(golden, null, 1)}\n`);
	console.log(`wrote ${out.slice(repo.length + 1)}: ${leaves.length} leaves`);
}
