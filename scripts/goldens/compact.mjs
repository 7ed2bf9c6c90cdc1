// Records what the reference implementation (npm @earendil-works/pi-coding-agent 1.6.0; 0.73.1
// under its old name @mariozechner/ still runs) plans when it compacts a session or summarizes
// a branch, so the test suite can check `pi compact` and `pi session branch --summarize`
// against it without Node.
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0   # Node >= 22.19
//   node scripts/goldens/compact.mjs --pi-dir /some/dir
//
// For every input, leaf and keepRecentTokens it records the reference's prepareCompaction:
//   result        "none" (undefined: the leaf is a compaction, or nothing to compact) or:
//   firstKept     index of the first kept entry in the path (root first); firstKeptEntryId
//                 (omitted for v1 files, whose migrated ids are random)
//   split, turnStart (index in the path, -1 if none), tokensBefore. 1.6 plans over the
//                 projected context (context edits applied) and does not return the turn
//                 start: it is the path entry whose message is the turn prefix's first
//                 message (the same object), or null when that message was rebuilt (edited,
//                 custom or summary messages) and the test then does not compare it
//   messages, prefix          numbers of messages to summarize / of the turn prefix
//   conversation, prefixText  FNV-1a 64 of serializeConversation(convertToLlm(...)) of each
//   previousSummary           FNV-1a 64 of the previous summary, or null
//   readFiles, modifiedFiles  computeFileLists(fileOps) (for the large inputs: `files`, the
//                             hash of both lists, and their lengths)
// and, for pairs (old leaf, target) of entries, collectEntriesForBranchSummary and
// prepareBranchEntries with a few token budgets (entries, common ancestor, messages,
// totalTokens, the conversation's hash, file lists; the entries as count, first, last and
// the hash of their ids joined by newlines, in full for the hand-written cases).
//
// Inputs, under tests/fixtures/:
//   before-compaction.jsonl, sessions/*.jsonl   the existing fixtures
//   context/gen/*.jsonl.deflate                 the generated sessions (see context.mjs)
//   compact/cases/*.jsonl                       hand-written sessions (CASES below; written
//                                               by this script), with outputs in full; with
//                                               1.6 also the cases of context16.mjs (system
//                                               messages, context edits, checkpoints)
// Output: tests/fixtures/compact/goldens.json

import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inflateRawSync } from "node:zlib";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where the reference is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const scope = ["@earendil-works", "@mariozechner"].find((s) => existsSync(join(resolve(piDir), "node_modules", s, "pi-coding-agent")));
if (!scope) throw new Error(`no pi-coding-agent under ${piDir}/node_modules`);
const mods = join(resolve(piDir), "node_modules", scope);
const version = JSON.parse(readFileSync(join(mods, "pi-coding-agent", "package.json"), "utf8")).version;
const v16 = scope === "@earendil-works";
const url = (p) => pathToFileURL(join(mods, p)).href;
const { SessionManager } = await import(url("pi-coding-agent/dist/index.js"));
const C = await import(url("pi-coding-agent/dist/core/compaction/index.js"));
const { convertToLlm } = await import(url("pi-coding-agent/dist/core/messages.js"));

const fixtures = join(repo, "tests", "fixtures");
const outDir = join(fixtures, "compact");
mkdirSync(join(outDir, "cases"), { recursive: true });
const work = mkdtempSync(join(tmpdir(), "pi-compact-goldens-"));

function fnv64(text) {
	let h = 0xcbf29ce484222325n;
	for (const b of Buffer.from(text, "utf8")) {
		h ^= BigInt(b);
		h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
	}
	return h.toString(16).padStart(16, "0");
}

const serialize = (msgs) => C.serializeConversation(convertToLlm(msgs));

// The same keys as the Rust test reads.
function plan(path, keep, full, migrated) {
	const prep = C.prepareCompaction(path, { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
	if (!prep) return { result: "none" };
	const firstKept = path.findIndex((e) => e.id === prep.firstKeptEntryId);
	let turnStart = -1;
	if (prep.isSplitTurn && v16) {
		const first = prep.turnPrefixMessages[0];
		const k = path.findIndex((e) => e.type === "message" && e.message === first);
		turnStart = k >= 0 ? k : null;
	} else if (prep.isSplitTurn) {
		// The turn start is where the prefix messages begin: find it as the reference does.
		const cut = C.findCutPoint(path, boundary(path), path.length, keep);
		turnStart = cut.turnStartIndex;
	}
	const { readFiles, modifiedFiles } = C.computeFileLists(prep.fileOps);
	const conv = serialize(prep.messagesToSummarize);
	const prefix = serialize(prep.turnPrefixMessages);
	const r = {
		result: "plan",
		firstKept,
		split: prep.isSplitTurn,
		turnStart,
		tokensBefore: prep.tokensBefore,
		messages: prep.messagesToSummarize.length,
		prefix: prep.turnPrefixMessages.length,
		conversation: fnv64(conv),
		prefixText: fnv64(prefix),
		previousSummary: prep.previousSummary === undefined ? null : fnv64(prep.previousSummary),
		...files(readFiles, modifiedFiles, full),
	};
	if (!migrated) r.firstKeptEntryId = prep.firstKeptEntryId;
	if (full) {
		r.conversationText = conv;
		r.prefixTextFull = prefix;
	}
	return r;
}

// The file lists in full, or (for the large inputs) their hash: the lists joined by newlines,
// separated by a NUL.
const files = (readFiles, modifiedFiles, full) =>
	full ? { readFiles, modifiedFiles } : { files: fnv64(`${readFiles.join("\n")}\0${modifiedFiles.join("\n")}`), nFiles: [readFiles.length, modifiedFiles.length] };

// prepareCompaction's boundaryStart (0.73.1).
function boundary(path) {
	let prev = -1;
	for (let i = path.length - 1; i >= 0; i--) {
		if (path[i].type === "compaction") {
			prev = i;
			break;
		}
	}
	if (prev < 0) return 0;
	const k = path.findIndex((e) => e.id === path[prev].firstKeptEntryId);
	return k >= 0 ? k : prev + 1;
}

function branch(sm, oldLeaf, target, budgets, full) {
	const { entries, commonAncestorId } = C.collectEntriesForBranchSummary(sm, oldLeaf, target);
	const ids = entries.map((e) => e.id);
	const out = { oldLeaf, target, entries: full ? ids : { n: ids.length, first: ids[0] ?? null, last: ids.at(-1) ?? null, hash: fnv64(ids.join("\n")) }, commonAncestor: commonAncestorId, budgets: [] };
	for (const budget of budgets) {
		const p = C.prepareBranchEntries(entries, budget);
		const { readFiles, modifiedFiles } = C.computeFileLists(p.fileOps);
		const conv = serialize(p.messages);
		const b = { budget, messages: p.messages.length, totalTokens: p.totalTokens, conversation: fnv64(conv), ...files(readFiles, modifiedFiles, full) };
		if (full) b.conversationText = conv;
		out.budgets.push(b);
	}
	return out;
}

// A small deterministic generator for picking leaves and targets.
function rng(seed) {
	let s = seed >>> 0;
	return () => {
		s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
		return s / 4294967296;
	};
}

const KEEPS = [20000, 3000, 800, 150, 40];

function fileGolden(name, file, text, extra = {}) {
	const dir = mkdtempSync(join(work, "f-"));
	const copy = join(dir, basename(file).replace(/\.deflate$/, ""));
	if (text !== undefined) writeFileSync(copy, text);
	else copyFileSync(file, copy);
	const original = readFileSync(copy, "utf8");
	const sm = SessionManager.open(copy);
	const migrated = readFileSync(copy, "utf8") !== original;
	const entries = sm.getEntries();
	const parents = new Set(entries.map((e) => e.parentId).filter(Boolean));
	const tips = entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
	const main = sm.getBranch();
	const rand = rng(name.length * 7919 + entries.length);
	const leaves = [null];
	if (!migrated) {
		for (let k = 0; k < 2 && tips.length > 1; k++) leaves.push(tips[Math.floor(rand() * (tips.length - 1))]);
		for (let i = main.length - 1; i >= 0; i--) {
			if (main[i].type === "compaction") {
				leaves.push(main[i].id); // a leaf that is a compaction
				if (i > 0) leaves.push(main[i - 1].id);
				break;
			}
		}
		if (main.length > 4) leaves.push(main[Math.floor(main.length / 2)].id);
	}
	const out = { input: extra.input, ...extra, migrated, plans: [], branches: [] };
	for (const leaf of [...new Set(leaves)]) {
		const path = leaf ? sm.getBranch(leaf) : main;
		for (const keep of KEEPS) out.plans.push({ leaf, keep, ...plan(path, keep, false, migrated) });
	}
	if (!migrated) {
		const ids = entries.map((e) => e.id);
		const pairs = [];
		for (let k = 0; k < 6 && ids.length > 1; k++) {
			const old = k < 3 ? tips[Math.floor(rand() * tips.length)] : ids[Math.floor(rand() * ids.length)];
			const target = ids[Math.floor(rand() * ids.length)];
			pairs.push([old, target]);
		}
		for (const [old, target] of pairs) out.branches.push(branch(sm, old, target, [0, 400, 60], false));
	}
	return out;
}

const goldens = { reference: `${scope}/pi-coding-agent ${version}`, files: [], cases: [] };

goldens.files.push(fileGolden("before-compaction", join(fixtures, "before-compaction.jsonl"), undefined, { input: "tests/fixtures/before-compaction.jsonl" }));
for (const f of readdirSync(join(fixtures, "sessions")).sort()) {
	if (f.endsWith(".jsonl")) goldens.files.push(fileGolden(`session-${f}`, join(fixtures, "sessions", f), undefined, { input: `tests/fixtures/sessions/${f}` }));
}
for (const f of readdirSync(join(fixtures, "context", "gen")).sort()) {
	if (!f.endsWith(".jsonl.deflate")) continue;
	const text = inflateRawSync(readFileSync(join(fixtures, "context", "gen", f))).toString("utf8");
	goldens.files.push(fileGolden(`gen-${f}`, join(fixtures, "context", "gen", f), text, { input: `tests/fixtures/context/gen/${f}` }));
}

// ---------------------------------------------------------------------------------------------
// Hand-written sessions: the spec's cases (test-cases.md CO-C, CO-F, CHANGES-0.73 §3.1).

let clock = Date.parse("2025-01-01T00:00:00.000Z");
const iso = () => new Date((clock += 1000)).toISOString();
const usage = (total) => ({ input: total, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: total, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const x40 = "x".repeat(40);
const U = (id, parent, content) => ({ type: "message", id, parentId: parent, timestamp: iso(), message: { role: "user", content, timestamp: clock } });
const A = (id, parent, content, total = 10, extra = {}) => ({
	type: "message",
	id,
	parentId: parent,
	timestamp: iso(),
	message: { role: "assistant", content: typeof content === "string" ? [{ type: "text", text: content }] : content, api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage: usage(total), stopReason: "stop", timestamp: clock, ...extra },
});
const TR = (id, parent, callId, name, text) => ({ type: "message", id, parentId: parent, timestamp: iso(), message: { role: "toolResult", toolCallId: callId, toolName: name, content: [{ type: "text", text }], isError: false, timestamp: clock } });
const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
const header = { type: "session", version: 3, id: "019b0000-0000-7000-8000-000000000001", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/tmp/proj" };

const P = [
	{ type: "model_change", id: "e0", parentId: null, timestamp: iso(), provider: "anthropic", modelId: "claude-sonnet-4-5" },
	{ type: "thinking_level_change", id: "e1", parentId: "e0", timestamp: iso(), thinkingLevel: "off" },
	U("e2", "e1", x40),
	A("e3", "e2", [call("c1", "read", { path: "src/a.ts" })], 200, { stopReason: "toolUse" }),
	TR("e4", "e3", "c1", "read", x40),
	A("e5", "e4", [call("c2", "edit", { path: "src/b.ts", oldText: "a", newText: "b" })], 300, { stopReason: "toolUse" }),
	TR("e6", "e5", "c2", "edit", x40),
	A("e7", "e6", x40, 400),
	U("e8", "e7", x40),
	A("e9", "e8", x40, 500),
];
const C1 = { type: "compaction", id: "e10", parentId: "e9", timestamp: iso(), summary: "S1", firstKeptEntryId: "e8", tokensBefore: 500, details: { readFiles: ["src/a.ts"], modifiedFiles: ["src/b.ts"] } };
const MORE = [
	U("e11", "e10", x40),
	A("e12", "e11", [call("c3", "write", { path: "src/c.ts", content: "c" })], 600, { stopReason: "toolUse" }),
	TR("e13", "e12", "c3", "write", x40),
	A("e14", "e13", [call("c4", "read", { path: "src/b.ts" })], 700, { stopReason: "toolUse" }),
	TR("e15", "e14", "c4", "read", x40),
	A("e16", "e15", x40, 800),
	U("e17", "e16", x40),
	A("e18", "e17", x40, 900),
];
const t400 = "y".repeat(400);
const REPEATED = [
	U("r1", null, `U1 ${t400}`),
	A("r2", "r1", `A1 ${t400}`, 100),
	U("r3", "r2", `U2 ${t400}`),
	A("r4", "r3", `A2 ${t400}`, 200),
	{ type: "compaction", id: "r5", parentId: "r4", timestamp: iso(), summary: "C1 summary", firstKeptEntryId: "r3", tokensBefore: 200, details: { readFiles: [], modifiedFiles: [] } },
	U("r6", "r5", `U3 ${t400}`),
	A("r7", "r6", `A3 ${t400}`, 300),
	U("r8", "r7", `U4 ${t400}`),
	A("r9", "r8", `A4 ${t400}`, 400),
];
// CO-F: b0 U → b1 A → b2 U → b3 A → b4 label, and b1 → b5 U → b6 A; then a branch with a summary.
const TREE = [
	U("b0", null, "first"),
	A("b1", "b0", "answer one"),
	U("b2", "b1", "second"),
	A("b3", "b2", [{ type: "text", text: "writing" }, call("c9", "write", { path: "w.ts", content: "c".repeat(36) })], 10, { stopReason: "toolUse" }),
	{ type: "label", id: "b4", parentId: "b3", timestamp: iso(), targetId: "b1", label: "here" },
	U("b5", "b1", "another way"),
	A("b6", "b5", "answer two"),
	{ type: "branch_summary", id: "b7", parentId: "b6", timestamp: iso(), fromId: "b3", summary: "s".repeat(400), details: { readFiles: ["r.ts"], modifiedFiles: ["m.ts"] }, fromHook: false },
	U("b8", "b7", x40),
	A("b9", "b8", [call("c10", "write", { path: "w2.ts", content: "c".repeat(36) })], 10, { stopReason: "toolUse" }),
	TR("b10", "b9", "c10", "write", "z".repeat(200)),
	A("b11", "b10", x40),
];

const CASES = [
	{ name: "co-c1", entries: P, plans: [15] },
	{ name: "co-c2", entries: [...P, C1], plans: [15] },
	{ name: "co-c3", entries: [...P, C1, ...MORE], plans: [15, 5, 100000] },
	{ name: "changes-3.1-repeated", entries: REPEATED, plans: [150, 1000, 5] },
	{ name: "co-f-tree", entries: TREE, plans: [30], branches: [["b4", "b6"], ["b6", "b0"], ["b1", "b3"], ["b11", "b3"], ["b11", "b0"]] },
];

for (const c of CASES) {
	const file = join(outDir, "cases", `${c.name}.jsonl`);
	writeFileSync(file, `${[header, ...c.entries].map((e) => JSON.stringify(e)).join("\n")}\n`);
	const sm = SessionManager.open(join(work, `${c.name}.jsonl`) === file ? file : (copyFileSync(file, join(work, `${c.name}.jsonl`)), join(work, `${c.name}.jsonl`)));
	const path = sm.getBranch();
	const out = { name: c.name, input: `tests/fixtures/compact/cases/${c.name}.jsonl`, plans: [], branches: [] };
	for (const keep of c.plans) out.plans.push({ leaf: null, keep, ...plan(path, keep, true, false) });
	for (const [old, target] of c.branches ?? []) out.branches.push(branch(sm, old, target, [0, 40, 100, 150], true));
	goldens.cases.push(out);
}

// 1.6: the context16 cases (what 1.6 added), compacted at their default leaf.
if (v16) {
	const ctx = JSON.parse(readFileSync(join(fixtures, "context16", "cases.golden.json"), "utf8"));
	ctx.cases.forEach((c, k) => {
		const name = `ctx16-${String(k + 1).padStart(2, "0")}`;
		const file = join(outDir, "cases", `${name}.jsonl`);
		writeFileSync(file, `${[JSON.stringify(header), ...c.lines].join("\n")}\n`);
		const copy = join(work, `${name}.jsonl`);
		copyFileSync(file, copy);
		const sm = SessionManager.open(copy);
		const out = { name, about: c.name, input: `tests/fixtures/compact/cases/${name}.jsonl`, plans: [], branches: [] };
		const entries = sm.getEntries();
		const parents = new Set(entries.map((e) => e.parentId).filter(Boolean));
		const leaves = [null, ...entries.filter((e) => !parents.has(e.id)).map((e) => e.id)];
		for (const leaf of [...new Set(leaves)]) {
			const path = leaf ? sm.getBranch(leaf) : sm.getBranch();
			for (const keep of [1, 10, 30, 100]) {
				let r;
				try {
					r = plan(path, keep, true, false);
				} catch (e) {
					// The reference fails on this input (a context edit without content).
					r = { result: "error", error: String(e.message) };
				}
				out.plans.push({ leaf, keep, ...r });
			}
		}
		goldens.cases.push(out);
	});
}

// One line per file or case record, so a difference shows where it is.
const lines = (xs) => xs.map((x) => JSON.stringify(x)).join(",\n");
writeFileSync(join(outDir, "goldens.json"), `{"reference":${JSON.stringify(goldens.reference)},\n"files":[\n${lines(goldens.files)}\n],\n"cases":[\n${lines(goldens.cases)}\n]}\n`);
const n = goldens.files.reduce((a, f) => a + f.plans.length, 0) + goldens.cases.reduce((a, c) => a + c.plans.length, 0);
const b = goldens.files.reduce((a, f) => a + f.branches.length, 0) + goldens.cases.reduce((a, c) => a + c.branches.length, 0);
console.log(`wrote tests/fixtures/compact/goldens.json: ${n} plans, ${b} branch summaries`);
