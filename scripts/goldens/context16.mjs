// Records what the reference 1.6.0 (npm @earendil-works/pi-coding-agent) builds from session
// files, for `pi context build` (agent and llm forms) and `pi context stats`, without Node in
// the test suite.
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0   # Node >= 22.19
//   node scripts/goldens/context16.mjs --pi-dir /some/dir
//
// 1. Agreement with the 0.73.1 goldens (tests/fixtures/context/*.golden.json, recorded by
//    context.mjs): for every input and leaf there, 1.6's buildSessionContext and convertToLlm
//    are computed again and compared with the recorded lines (or their hashes). Where 1.6
//    differs, tests/fixtures/context16/changed.json holds 1.6's answer (lines in full for
//    hand-written cases, hashes for files), and the test suite expects that instead. The
//    same for `pi context stats` (`stats`: 1.6's figures where they differ, keyed by golden
//    file, or `case:NAME`, and leaf number; see stats16 below).
// 2. Sessions with what 1.6 added (CASES below; tests/fixtures/context16/cases.golden.json):
//    system messages with sections and tool deltas, compactions carrying a systemMessage and
//    system messages in their kept range, older compactions inside a kept range, retain-none
//    compactions, context_edit entries (omit, replace with text or blocks, the latest on the
//    branch wins, edits on other branches, edits of summarized or non-editable entries),
//    several roots, usage entries, messages with null content. For every leaf:
//      agent     buildSessionContext(entries, leaf).messages, JSON.stringify per line
//      llm       convertToLlm(agent)
//      settings  thinkingLevel and model
//      stats     estimateTokens per message summed, estimateContextTokens, and
//                estimateProjectedContextTokens(buildSessionProjection, branch) (the figure 1.6
//                uses for tokensBefore and its context gauge)
//    The last case is written by 1.6's own SessionManager API (appendContextEdit,
//    appendCompaction with its systemMessage, branchWithSummary(null), resetLeaf); its ids
//    and timestamps are random, so re-recording changes them.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
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
if (!piDir) throw new Error("--pi-dir DIR (where @earendil-works/pi-coding-agent 1.6 is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = join(resolve(piDir), "node_modules", "@earendil-works", "pi-coding-agent");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
const agent = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);
const compaction = await import(pathToFileURL(join(pkg, "dist", "core", "compaction", "compaction.js")).href);
const { SessionManager, buildSessionContext, buildSessionProjection, convertToLlm, estimateTokens, shouldCompact, calculateContextTokens } = agent;
const { estimateContextTokens, estimateProjectedContextTokens } = compaction;

const fixtures = join(repo, "tests", "fixtures");
const oldDir = join(fixtures, "context");
const outDir = join(fixtures, "context16");
mkdirSync(outDir, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "pi-context16-"));

function fnv64(text) {
	let h = 0xcbf29ce484222325n;
	for (const b of Buffer.from(text, "utf8")) {
		h ^= BigInt(b);
		h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
	}
	return h.toString(16).padStart(16, "0");
}
const line = (v) => JSON.stringify(v);
const hash = (lines) => ({ n: lines.length, hash: fnv64(lines.join("\n")), lines: lines.map((l) => fnv64(l).slice(0, 4)).join("") });

// The images.blockImages wrapper createAgentSession puts around convertToLlm (sdk.js; not
// exported): images in user and tool-result messages become one note per run of images.
const NOTE = "Image reading is disabled.";
const blockImages = (msgs) =>
	msgs.map((m) => {
		if ((m.role !== "user" && m.role !== "toolResult") || !Array.isArray(m.content) || !m.content.some((c) => c.type === "image")) return m;
		const content = m.content
			.map((c) => (c.type === "image" ? { type: "text", text: NOTE } : c))
			.filter((c, i, a) => !(c.type === "text" && c.text === NOTE && i > 0 && a[i - 1].type === "text" && a[i - 1].text === NOTE));
		return { ...m, content };
	});

function outputs(sm, leaf, block = false) {
	const entries = sm.getEntries();
	const ctx = buildSessionContext(entries, leaf ?? undefined);
	const llm = convertToLlm(ctx.messages);
	return {
		settings: line({ type: "settings", thinkingLevel: ctx.thinkingLevel, model: ctx.model }),
		agent: ctx.messages.map(line),
		llm: (block ? blockImages(llm) : llm).map(line),
		ctx,
	};
}
// The 0.73 goldens' settings line, without the system prompt the case passed in.
const settingsOf = (l) => {
	const s = JSON.parse(l);
	delete s.systemPrompt;
	return line(s);
};

// ---------------------------------------------------------------------------------------------
// 1. Agreement with the 0.73.1 goldens.

// `pi context stats` as 1.6 counts (AgentSession.getContextUsage and _checkCompaction): the
// projected estimate (reported usage only while no context edit or compaction came after
// it), and no size known after a compaction until a reply since reported one. The window
// and reserve are the 0.73 golden's (the model catalogue is another matter).
function stats16(sm, leaf, ctx, old, settings = {}) {
	const entries = sm.getEntries();
	const projection = buildSessionProjection(entries, leaf ?? undefined);
	const branch = leaf ? sm.getBranch(leaf) : sm.getBranch();
	const est = estimateProjectedContextTokens(projection, branch);
	let stale = false;
	const ci = branch.findLastIndex((e) => e.type === "compaction");
	if (ci >= 0) {
		const reported = new Set(
			projection.entries
				.filter((e) => e.messages.some((m) => m.role === "assistant" && m.stopReason !== "aborted" && m.stopReason !== "error" && calculateContextTokens(m.usage) > 0))
				.map((e) => e.sourceEntry.id),
		);
		stale = !branch.slice(ci + 1).some((e) => reported.has(e.id));
	}
	const window = old.contextWindow;
	return {
		...old,
		messages: ctx.messages.length,
		estimatedTokens: ctx.messages.reduce((a, m) => a + estimateTokens(m), 0),
		tokens: est.tokens,
		usageTokens: est.usageTokens,
		trailingTokens: est.trailingTokens,
		lastUsageIndex: est.lastUsageIndex,
		usageStale: stale,
		shouldCompact: window !== null && !stale && shouldCompact(est.tokens, window, { enabled: true, keepRecentTokens: 20000, ...settings, reserveTokens: old.reserveTokens }),
	};
}
const sameStats = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const changed = { reference: version, files: {}, cases: {}, stats: {} };
let compared = 0;
let differ = 0;
let statsDiffer = 0;
const sameHash = (a, b) => a.n === b.n && a.hash === b.hash;
for (const name of readdirSync(oldDir).filter((f) => f.endsWith(".golden.json") && f !== "cases.golden.json").sort()) {
	const g = JSON.parse(readFileSync(join(oldDir, name), "utf8"));
	let text;
	if (g.input.endsWith(".deflate")) text = inflateRawSync(readFileSync(join(repo, g.input))).toString("utf8");
	else text = readFileSync(join(repo, g.input), "utf8");
	const dir = mkdtempSync(join(work, "f-"));
	const file = join(dir, basename(g.input).replace(/\.deflate$/, ""));
	writeFileSync(file, text);
	const sm = SessionManager.open(file);
	g.leaves.forEach((l, k) => {
		const o = outputs(sm, l.leaf);
		const ours = { settings: o.settings, agent: hash(o.agent), llm: hash(o.llm) };
		compared++;
		if (ours.settings !== settingsOf(l.settings) || !sameHash(ours.agent, l.agent) || !sameHash(ours.llm, l.llm)) {
			differ++;
			changed.files[name] ??= {};
			changed.files[name][k] = ours;
		}
		const st = stats16(sm, l.leaf, o.ctx, l.stats);
		if (!sameStats(st, l.stats)) {
			statsDiffer++;
			changed.stats[name] ??= {};
			changed.stats[name][k] = st;
		}
	});
}
{
	const g = JSON.parse(readFileSync(join(oldDir, "cases.golden.json"), "utf8"));
	const header = { type: "session", version: 3, id: "019b0000-0000-7000-8000-000000000000", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/tmp" };
	for (const c of g.cases) {
		const dir = mkdtempSync(join(work, "c-"));
		const file = join(dir, "s.jsonl");
		writeFileSync(file, [JSON.stringify(header), ...c.lines].join("\n") + "\n");
		const sm = SessionManager.open(file);
		c.leaves.forEach((l, k) => {
			const o = outputs(sm, l.leaf, !!c.settings?.images?.blockImages);
			compared++;
			const same = o.settings === settingsOf(l.settings) && line(o.agent) === line(l.agent) && line(o.llm) === line(l.llm);
			if (!same) {
				differ++;
				changed.cases[c.name] ??= {};
				changed.cases[c.name][k] = { settings: o.settings, agent: o.agent, llm: o.llm };
			}
			const st = stats16(sm, l.leaf, o.ctx, l.stats, c.settings?.compaction);
			if (!sameStats(st, l.stats)) {
				statsDiffer++;
				changed.stats[`case:${c.name}`] ??= {};
				changed.stats[`case:${c.name}`][k] = st;
			}
		});
	}
}
changed.compared = compared;
changed.differ = differ;
changed.statsDiffer = statsDiffer;
writeFileSync(join(outDir, "changed.json"), `${JSON.stringify(changed, null, 1)}\n`);
console.log(`0.73.1 goldens: ${compared} leaves compared, ${differ} differ in 1.6.0, ${statsDiffer} in their stats`);

// ---------------------------------------------------------------------------------------------
// 2. What 1.6 added.

let clock = Date.parse("2026-11-01T00:00:00.000Z");
const iso = () => new Date((clock += 1000)).toISOString();
const usage = (input, output) => ({ input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const E = (type, id, parentId, fields) => ({ type, id, parentId, timestamp: iso(), ...fields });
const M = (id, parentId, message) => E("message", id, parentId, { message: { ...message, timestamp: clock } });
const U = (id, p, content) => M(id, p, { role: "user", content });
const A = (id, p, text, u = usage(100, 20), extra = {}) =>
	M(id, p, { role: "assistant", content: [{ type: "text", text }], api: "openai-completions", provider: "acme", model: "m1", usage: u, stopReason: "stop", ...extra });
const TC = (id, p, callId, name, a) =>
	M(id, p, { role: "assistant", content: [{ type: "toolCall", id: callId, name, arguments: a }], api: "openai-completions", provider: "acme", model: "m1", usage: usage(120, 10), stopReason: "toolUse" });
const TR = (id, p, callId, name, text) => M(id, p, { role: "toolResult", toolCallId: callId, toolName: name, content: [{ type: "text", text }], isError: false });
const READ = { name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };
const WRITE = { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } } } };
const GREP = { name: "grep", description: "Search files", parameters: { type: "object", properties: { pattern: { type: "string" } } } };
const SYS = (id, p, fields) => M(id, p, { role: "system", content: "", ...fields });
const SYS0 = (id) => SYS(id, null, { sections: { preamble: "You are a careful coding assistant.", cwd: "Working directory: /work" }, toolsAdded: [READ, WRITE] });
const EDIT = (id, p, targetId, replacement) => E("context_edit", id, p, { targetId, replacement });
const COMPACT = (id, p, firstKeptEntryId, fields = {}) => E("compaction", id, p, { summary: `Summary made at ${id}.`, firstKeptEntryId, tokensBefore: 5000, ...fields });

const CASES = [
	{
		name: "system messages: a leading one, then a patch of sections and tools",
		lines: [
			SYS0("s0"),
			U("u1", "s0", "Read the README."),
			TC("a1", "u1", "c1", "read", { path: "README.md" }),
			TR("t1", "a1", "c1", "read", "# Project"),
			A("a2", "t1", "It is a project."),
			SYS("s1", "a2", { sections: { skills: "<skills>review</skills>", cwd: null }, toolsAdded: [GREP], toolsRemoved: [{ name: "write" }] }),
			U("u2", "s1", "Now search."),
			A("a3", "u2", "Searching."),
		],
		leaves: [null, "a2", "s1", "s0"],
	},
	{
		name: "system messages with content, and messages whose content is null or missing",
		lines: [
			M("s0", null, { role: "system", content: "Base prompt." }),
			M("s1", "s0", { role: "system", content: null, sections: { extra: "More." } }),
			M("s2", "s1", { role: "system" }),
			M("u1", "s2", { role: "user", content: null }),
			M("a1", "u1", { role: "assistant", api: "openai-completions", provider: "acme", model: "m1", usage: usage(10, 1), stopReason: "stop" }),
			M("t1", "a1", { role: "toolResult", toolCallId: "x", toolName: "read", content: null, isError: false }),
			M("u2", "t1", { role: "user", content: [{ type: "text", text: "still here" }] }),
		],
	},
	{
		name: "a compaction with its system checkpoint; system messages in the kept range are dropped",
		lines: [
			SYS0("s0"),
			U("u1", "s0", "First question."),
			A("a1", "u1", "First answer."),
			U("u2", "a1", "Second question."),
			SYS("s1", "u2", { sections: { note: "Be brief." } }),
			A("a2", "s1", "Second answer."),
			COMPACT("c1", "a2", "u2", {
				usage: usage(900, 120),
				systemMessage: { role: "system", content: "", sections: { preamble: "You are a careful coding assistant.", cwd: "Working directory: /work", note: "Be brief." }, toolsAdded: [READ, WRITE], timestamp: 1798761600000 },
			}),
			U("u3", "c1", "Third question."),
			SYS("s2", "u3", { toolsRemoved: [{ name: "read" }] }),
			A("a3", "s2", "Third answer.", usage(300, 30)),
		],
		leaves: [null, "c1", "a2", "u3"],
	},
	{
		name: "an older compaction without a checkpoint; kept system messages still dropped",
		lines: [
			SYS0("s0"),
			U("u1", "s0", "One."),
			A("a1", "u1", "Uno."),
			U("u2", "a1", "Two."),
			A("a2", "u2", "Dos."),
			COMPACT("c1", "a2", "s0"),
			U("u3", "c1", "Three."),
		],
	},
	{
		name: "two compactions: the older one inside the newer one's kept range gives nothing",
		lines: [
			U("u1", null, "One."),
			A("a1", "u1", "Uno."),
			U("u2", "a1", "Two."),
			A("a2", "u2", "Dos."),
			COMPACT("c1", "a2", "u2"),
			U("u3", "c1", "Three."),
			A("a3", "u3", "Tres."),
			COMPACT("c2", "a3", "u2", { systemMessage: { role: "system", content: "Checkpoint prompt.", timestamp: 1798761700000 } }),
			U("u4", "c2", "Four."),
		],
		leaves: [null, "a3", "c2"],
	},
	{
		name: "a retain-none compaction keeps nothing before it",
		lines: [U("u1", null, "One."), A("a1", "u1", "Uno."), COMPACT("c1", "a1", "c1"), U("u2", "c1", "Two."), A("a2", "u2", "Dos.")],
	},
	{
		name: "context edits: omit, replace with text and with blocks, the latest edit wins",
		lines: [
			SYS0("s0"),
			U("u1", "s0", "Read the big file."),
			TC("a1", "u1", "c1", "read", { path: "big.log" }),
			TR("t1", "a1", "c1", "read", "x".repeat(400)),
			A("a2", "t1", "A long answer about the log."),
			E("custom_message", "m1", "a2", { customType: "ticket", content: "Ticket 7 text", display: true }),
			U("u2", "m1", [{ type: "text", text: "Secret-looking line" }]),
			A("a3", "u2", "Noted."),
			EDIT("e1", "a3", "t1", { content: [{ type: "text", text: "(big log removed)" }] }),
			EDIT("e2", "e1", "a2", { content: "Short answer." }),
			EDIT("e3", "e2", "u2", null),
			EDIT("e4", "e3", "m1", { content: "Ticket 7, short" }),
			EDIT("e5", "e4", "t1", { content: "(log replaced again)" }),
			EDIT("e6", "e5", "u1", { content: [{ type: "text", text: "Read it." }] }),
			U("u3", "e6", "Go on."),
			A("a4", "u3", "Going on."),
		],
		leaves: [null, "e1", "e3", "a3"],
	},
	{
		name: "context edits are branch-relative",
		lines: [
			U("u1", null, "Question."),
			A("a1", "u1", "Answer one."),
			U("u2", "a1", "Follow-up."),
			A("a2", "u2", "Answer two."),
			EDIT("e1", "a2", "a1", null),
			U("u3", "e1", "On the edited branch."),
			U("v1", "a2", "On the other branch."),
			A("v2", "v1", "Other answer."),
		],
		leaves: [null, "u3", "v2"],
	},
	{
		name: "context edits and compaction: summarized targets, edits in the kept range, the compaction itself",
		lines: [
			U("u1", null, "One."),
			A("a1", "u1", "Uno."),
			EDIT("e0", "a1", "u1", { content: "One, edited before compaction." }),
			U("u2", "e0", "Two."),
			A("a2", "u2", "Dos."),
			EDIT("e1", "a2", "a2", { content: "Dos, edited in the kept range." }),
			COMPACT("c1", "e1", "u2"),
			EDIT("e2", "c1", "u1", null),
			U("u3", "e2", "Three."),
			A("a3", "u3", "Tres."),
			EDIT("e3", "a3", "c1", null),
			U("u4", "e3", "Four."),
		],
		leaves: ["a3", null],
	},
	{
		name: "context edits of entries that carry no editable content",
		lines: [
			SYS0("s0"),
			U("u1", "s0", "One."),
			A("a1", "u1", "Uno."),
			E("branch_summary", "b1", "a1", { fromId: "zz", summary: "A branch was tried." }),
			U("u2", "b1", "Two."),
			EDIT("e1", "u2", "s0", { content: "Replaced prompt?" }),
			EDIT("e2", "e1", "b1", { content: "Replaced summary?" }),
			EDIT("e3", "e2", "u2", { note: "no content" }),
			A("a2", "e3", "Dos."),
			EDIT("e4", "a2", "b1", null),
		],
		leaves: ["a2", null],
	},
	{
		name: "several roots, usage entries and a branch summary without a parent",
		lines: [
			U("u1", null, "First root."),
			A("a1", "u1", "First answer."),
			E("usage", "w1", "a1", { kind: "cache_warm", provider: "acme", model: "m1", usage: usage(0, 0) }),
			U("r2", null, "Second root."),
			A("a2", "r2", "Second answer."),
			E("branch_summary", "b3", null, { fromId: "a2", summary: "The second root was left." }),
			U("u3", "b3", "Third start."),
			E("model_change", "mc", "u3", { provider: "other", modelId: "m2" }),
			E("thinking_level_change", "tl", "mc", { thinkingLevel: "high" }),
		],
		leaves: [null, "a1", "w1", "a2"],
	},
	{
		name: "every entry type and message field of the session-format and message-types docs",
		lines: [
			SYS("s0", null, { content: [{ type: "text", text: "Prompt as blocks." }], sections: { preamble: "Hello." }, toolsAdded: [READ] }),
			E("session_info", "n1", "s0", { name: "Named" }),
			U("u1", "n1", [
				{ type: "text", text: "Look at this." },
				{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
			]),
			M("a1", "u1", {
				role: "assistant",
				content: [
					{ type: "thinking", thinking: "Hmm.", thinkingSignature: "sig" },
					{ type: "text", text: "Reading.", textSignature: "ts1" },
					{ type: "toolCall", id: "c1", name: "read", arguments: { path: "x" } },
				],
				api: "anthropic-messages",
				provider: "anthropic",
				model: "claude-sonnet-4-5",
				responseModel: "claude-sonnet-4-5-20250929",
				thinkingLevel: "medium",
				responseId: "msg_1",
				usage: { ...usage(200, 30), cacheRead: 50, cacheWrite: 10, totalTokens: 290 },
				stopReason: "toolUse",
			}),
			M("t1", "a1", { role: "toolResult", toolCallId: "c1", toolName: "read", content: [{ type: "text", text: "content" }], details: { lines: 1 }, isError: true }),
			E("label", "l1", "t1", { targetId: "u1", label: "start" }),
			E("custom", "x1", "l1", { customType: "state", data: { n: 1 } }),
			E("custom_message", "m1", "x1", { customType: "note", content: [{ type: "text", text: "Hidden note." }], display: false, details: { k: 1 } }),
			A("a2", "m1", "Done.", usage(300, 10), { errorMessage: undefined }),
			E("branch_summary", "b1", "a2", { fromId: "zz", summary: "Another way.", details: { readFiles: ["x"], modifiedFiles: [] }, usage: usage(40, 5), fromHook: false }),
			E("compaction", "c1", "b1", { summary: "All of it.", firstKeptEntryId: "a2", tokensBefore: 900, details: { readFiles: ["x"], modifiedFiles: [] }, usage: usage(500, 50), fromHook: false, systemMessage: { role: "system", content: "Prompt as blocks.", sections: { preamble: "Hello." }, toolsAdded: [READ], timestamp: 1798761800000 } }),
			E("usage", "w1", "c1", { kind: "cache_warm", provider: "anthropic", model: "claude-sonnet-4-5", usage: usage(0, 0), note: "warm" }),
			E("model_change", "mc", "w1", { provider: "openai", modelId: "gpt-4o" }),
			E("thinking_level_change", "tl", "mc", { thinkingLevel: "low" }),
			U("u2", "tl", "Next."),
		],
		leaves: [null, "a2", "t1"],
	},
	{
		name: "bash executions, one excluded from context",
		lines: [
			U("u1", null, "Run things."),
			M("x1", "u1", { role: "bashExecution", command: "ls", output: "a b", exitCode: 0, cancelled: false, truncated: false }),
			M("x2", "x1", { role: "bashExecution", command: "cat secret", output: "s3cr3t", exitCode: 0, cancelled: false, truncated: false, excludeFromContext: true }),
			A("a1", "x2", "Ran."),
		],
	},
];

function stats(sm, leaf, ctx) {
	const entries = sm.getEntries();
	const projection = buildSessionProjection(entries, leaf ?? undefined);
	const branch = leaf ? sm.getBranch(leaf) : sm.getBranch();
	const est = estimateContextTokens(ctx.messages);
	const projected = estimateProjectedContextTokens(projection, branch);
	return {
		estimatedTokens: ctx.messages.reduce((a, m) => a + estimateTokens(m), 0),
		tokens: est.tokens,
		usageTokens: est.usageTokens,
		trailingTokens: est.trailingTokens,
		lastUsageIndex: est.lastUsageIndex,
		projectedTokens: projected.tokens,
		projectedLastUsageIndex: projected.lastUsageIndex,
	};
}

const header = { type: "session", version: 3, id: "019c0000-0000-7000-8000-000000000000", timestamp: "2026-11-01T00:00:00.000Z", cwd: "/work" };
function recordCase(name, lines, leaves) {
	const dir = mkdtempSync(join(work, "n-"));
	const file = join(dir, "s.jsonl");
	writeFileSync(file, [JSON.stringify(header), ...lines].join("\n") + "\n");
	const sm = SessionManager.open(file);
	const rec = { name, lines, leaves: [] };
	for (const leaf of leaves) {
		const o = outputs(sm, leaf);
		let st;
		try {
			st = stats(sm, leaf, o.ctx);
		} catch (e) {
			// The reference's estimator throws on content it does not expect.
			st = { error: String(e.message) };
		}
		rec.leaves.push({ leaf, settings: o.settings, agent: o.agent, llm: o.llm, stats: st });
	}
	return rec;
}

const cases = CASES.map((c) => recordCase(c.name, c.lines.map(line), c.leaves ?? [null]));

// A session written by `pi chat` (tests/fixtures/chat/session.jsonl, made by the script of
// chat_lines::the_recorded_chat_fixture_is_what_pi_chat_writes_today): every branch tip.
{
	const text = readFileSync(join(fixtures, "chat", "session.jsonl"), "utf8");
	const entries = text.split("\n").filter((l) => l.trim()).slice(1).map((l) => JSON.parse(l));
	const parents = new Set(entries.map((e) => e.parentId).filter(Boolean));
	const leaves = entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
	cases.push(recordCase("written by pi chat", entries.map(line), [...leaves, null]));
}

// A session written through 1.6's own API.
{
	const dir = mkdtempSync(join(work, "api-"));
	const sm = SessionManager.create(dir, dir);
	sm.appendMessage({ role: "system", content: "", sections: { preamble: "API-made prompt." }, toolsAdded: [READ], timestamp: Date.now() });
	const u1 = sm.appendMessage({ role: "user", content: "Read it.", timestamp: Date.now() });
	const a1 = sm.appendMessage({ role: "assistant", content: [{ type: "toolCall", id: "k1", name: "read", arguments: { path: "x" } }], api: "openai-completions", provider: "acme", model: "m1", usage: usage(50, 5), stopReason: "toolUse", timestamp: Date.now() });
	const t1 = sm.appendMessage({ role: "toolResult", toolCallId: "k1", toolName: "read", content: [{ type: "text", text: "y".repeat(200) }], isError: false, timestamp: Date.now() });
	sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "Read." }], api: "openai-completions", provider: "acme", model: "m1", usage: usage(90, 5), stopReason: "stop", timestamp: Date.now() });
	sm.appendContextEdit(t1, { content: "(trimmed)" });
	sm.appendContextEdit(u1, null);
	sm.appendMessage({ role: "system", content: "", sections: { later: "Added later." }, toolsRemoved: [{ name: "read" }], timestamp: Date.now() });
	const u2 = sm.appendMessage({ role: "user", content: "More.", timestamp: Date.now() });
	sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "More done." }], api: "openai-completions", provider: "acme", model: "m1", usage: usage(120, 5), stopReason: "stop", timestamp: Date.now() });
	sm.appendCompaction("API summary.", u2, 130, { readFiles: ["x"], modifiedFiles: [] }, false, usage(400, 50));
	sm.appendMessage({ role: "user", content: "After compaction.", timestamp: Date.now() });
	sm.branchWithSummary(null, "Left for a new root.", undefined, false, usage(10, 2));
	sm.appendMessage({ role: "user", content: "New root.", timestamp: Date.now() });
	sm.resetLeaf();
	sm.appendMessage({ role: "user", content: "Another root.", timestamp: Date.now() });
	sm.branch(a1);
	sm.appendMessage({ role: "user", content: "Back at the tool call.", timestamp: Date.now() });
	const entries = sm.getEntries();
	const parents = new Set(entries.map((e) => e.parentId).filter(Boolean));
	const leaves = entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
	cases.push(recordCase("written by 1.6's SessionManager API", entries.map(line), [...leaves, null]));
}

const out = join(outDir, "cases.golden.json");
writeFileSync(out, `${JSON.stringify({ reference: version, cases }, null, 1)}\n`);
console.log(`wrote ${out.slice(repo.length + 1)} (${cases.length} cases)`);
rmSync(work, { recursive: true, force: true });
