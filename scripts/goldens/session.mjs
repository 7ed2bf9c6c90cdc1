// Records how the reference implementation (npm @mariozechner/pi-coding-agent) sees session
// files, so the test suite can check pi against it without Node.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   cargo build
//   node scripts/goldens/session.mjs --pi-dir /some/dir [--pi target/debug/pi]
//
// Inputs, all under tests/fixtures/:
//   before-compaction.jsonl         a v1 file written by upstream (migrated on open)
//   sessions/gen-*.jsonl            sessions from ../shared/bench/gen_session.py (branches,
//                                   summaries, tool calls): `--entries 200 --branches 6 --seed N`
//   sessions/pi-written.jsonl       written by pi: sessions/scenario.sh, run here with --pi
//   sessions/pi-written.continued.jsonl
//                                   the same file after the reference appended to it
// Output: tests/fixtures/sessions/<name>.golden.json for each input, holding the reference's
// view: entry ids, leaf, branch (root → leaf), tree, labels, name, session info and context
// summary, plus for v1 files the lines the reference rewrites the file to.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const piBin = resolve(opt("--pi", join(repo, "target", "debug", "pi")));
const pkg = join(resolve(piDir), "node_modules", "@mariozechner", "pi-coding-agent");
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

const fixtures = join(repo, "tests", "fixtures");
const sessions = join(fixtures, "sessions");
const work = mkdtempSync(join(tmpdir(), "pi-goldens-"));

function simplifyTree(nodes) {
	// Iterative, like getTree itself: [id, label, labelTimestamp, children].
	const out = [];
	const stack = nodes.map((n) => [n, out]);
	stack.reverse();
	while (stack.length) {
		const [n, into] = stack.pop();
		const rec = { id: n.entry.id, children: [] };
		if (n.label !== undefined) rec.label = n.label;
		if (n.labelTimestamp !== undefined) rec.labelTimestamp = n.labelTimestamp;
		into.push(rec);
		for (let i = n.children.length - 1; i >= 0; i--) stack.push([n.children[i], rec.children]);
	}
	return out;
}

async function view(file) {
	const dir = mkdtempSync(join(work, "v-"));
	const copy = join(dir, basename(file));
	copyFileSync(file, copy);
	const sm = SessionManager.open(copy);
	const entries = sm.getEntries();
	const ctx = sm.buildSessionContext();
	const infos = await SessionManager.list("/nonexistent-cwd", dir);
	const info = infos.find((i) => i.path === copy);
	const labels = entries
		.filter((e) => sm.getLabel(e.id) !== undefined)
		.map((e) => ({ id: e.id, label: sm.getLabel(e.id) }));
	const golden = {
		input: file.slice(repo.length + 1),
		header: sm.getHeader(),
		entryIds: entries.map((e) => e.id),
		leaf: sm.getLeafId(),
		branch: sm.getBranch().map((e) => e.id),
		tree: simplifyTree(sm.getTree()),
		labels,
		name: sm.getSessionName() ?? null,
		info: info && {
			id: info.id,
			cwd: info.cwd,
			name: info.name ?? null,
			created: info.created.toISOString(),
			modified: info.modified.toISOString(),
			messageCount: info.messageCount,
			firstMessage: info.firstMessage,
		},
		context: {
			messages: ctx.messages.length,
			roles: ctx.messages.map((m) => m.role),
			thinkingLevel: ctx.thinkingLevel,
			model: ctx.model,
		},
	};
	// Small sessions: the messages themselves, as the reference serializes them.
	if (entries.length < 100) golden.context.json = ctx.messages.map((m) => JSON.stringify(m));
	const rewritten = readFileSync(copy, "utf8");
	if (rewritten !== readFileSync(file, "utf8")) {
		// Upstream's migration picks random ids, so compare lines with ids replaced by their
		// positions ("#0" is the first entry), as FNV-1a 64 hashes (the file is large).
		const pos = new Map(entries.map((e, i) => [e.id, `#${i}`]));
		golden.rewrittenLineHashes = rewritten
			.trimEnd()
			.split("\n")
			.map((line) => fnv64(line.replace(/"([0-9a-f]{8})"/g, (m, id) => (pos.has(id) ? `"${pos.get(id)}"` : m))));
	}
	return golden;
}

function fnv64(text) {
	let h = 0xcbf29ce484222325n;
	for (const b of Buffer.from(text, "utf8")) {
		h ^= BigInt(b);
		h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
	}
	return h.toString(16).padStart(16, "0");
}

// The scenario's world path is replaced by a placeholder in files and goldens.
let worldProj = null;
const normalize = (text) => (worldProj ? text.split(worldProj).join("[PROJ]") : text);

function write(name, golden) {
	const path = join(sessions, `${name}.golden.json`);
	writeFileSync(path, normalize(`${JSON.stringify(golden)}\n`));
	console.log(`wrote ${path.slice(repo.length + 1)}`);
}

// 1. A session written by pi.
const world = mkdtempSync(join(work, "world-"));
mkdirSync(join(world, "proj"));
const scenarioOut = execFileSync("sh", [join(sessions, "scenario.sh")], {
	cwd: join(world, "proj"),
	env: { PATH: `${dirname(piBin)}:${process.env.PATH}`, HOME: world, PI_CODING_AGENT_DIR: join(world, "agent") },
	encoding: "utf8",
});
const written = scenarioOut.trim().split("\n").pop();
worldProj = join(world, "proj");
const copyNormalized = (from, to) => writeFileSync(to, normalize(readFileSync(from, "utf8")));
copyNormalized(written, join(sessions, "pi-written.jsonl"));

// 2. The reference continues it: one more user and assistant message.
const contDir = mkdtempSync(join(work, "cont-"));
const cont = join(contDir, "pi-written.continued.jsonl");
copyFileSync(written, cont);
{
	const sm = SessionManager.open(cont);
	sm.appendMessage({ role: "user", content: [{ type: "text", text: "continued by the reference" }], timestamp: 1767226000000 });
	sm.appendMessage({
		role: "assistant",
		content: [{ type: "text", text: "reference reply" }],
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-test",
		usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: "stop",
		timestamp: 1767226001000,
	});
}
copyNormalized(cont, join(sessions, "pi-written.continued.jsonl"));

// 3. Goldens for every input.
const inputs = [join(fixtures, "before-compaction.jsonl")];
for (const f of readdirSync(sessions).sort()) {
	if (f.endsWith(".jsonl")) inputs.push(join(sessions, f));
}
for (const file of inputs) {
	write(basename(file, ".jsonl"), await view(file));
}
rmSync(work, { recursive: true, force: true });
