// Records what the reference implementation (npm @mariozechner/pi-coding-agent 0.73.1) builds
// from session files, so the test suite can check `pi context build` and `pi context stats`
// against it without Node.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   node scripts/goldens/context.mjs --pi-dir /some/dir [--generator ../shared/bench/gen_session.py]
//
// For every input and leaf it records, from the reference's own functions:
//   agent      buildSessionContext(entries, leaf).messages, one JSON.stringify line each
//   llm        the coding agent's convertToLlm (with its images.blockImages wrapper, taken
//              from a real createAgentSession)
//   openai     the `messages` of the Chat Completions request streamOpenAICompletions builds
//   anthropic  the `messages` (and `system`) of the Messages request streamAnthropic builds
//              (both captured with onPayload; nothing is sent)
//   settings   thinkingLevel and model of buildSessionContext
//   stats      estimateTokens per message, estimateContextTokens, the model's contextWindow
//              in the reference's ModelRegistry, shouldCompact, and whether an assistant has
//              reported usage since the latest compaction (AgentSession.getContextUsage's rule)
// The target model of the openai/anthropic requests is the one pi picks: `model` of the case
// or the path's model, looked up in the reference's ModelRegistry (built-in + models.json)
// with its `api` set to the format's API; an unknown model is {input: text+image, no
// reasoning, no compat}.
//
// Inputs and outputs, under tests/fixtures/:
//   before-compaction.jsonl, sessions/*.jsonl   existing fixtures → context/<name>.golden.json
//   context/gen/<name>.jsonl.deflate            generated sessions (GENERATED below): the
//       output of `gen_session.py --entries N --seed S --branches B`, shrunk (every string
//       longer than 32 UTF-16 units cut to 32, except ids, roles, types, timestamps and model
//       names; `cost` objects dropped) and compressed with raw DEFLATE. The golden records
//       the FNV-1a 64 hash of the inflated text; the test inflates the file and checks it.
//       Goldens of these large inputs hold hashes of the outputs (see `hashed`).
//   context/cases.golden.json                   hand-written sessions (CASES below) with their
//       expected output lines in full.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, copyFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { deflateRawSync, inflateRawSync } from "node:zlib";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const generator = resolve(opt("--generator", join(repo, "..", "shared", "bench", "gen_session.py")));
const mods = join(resolve(piDir), "node_modules", "@mariozechner");
const url = (p) => pathToFileURL(join(mods, p)).href;
const agent = await import(url("pi-coding-agent/dist/index.js"));
const { createAgentSession } = await import(url("pi-coding-agent/dist/core/sdk.js"));
const { estimateContextTokens } = await import(url("pi-coding-agent/dist/core/compaction/index.js"));
const { streamOpenAICompletions } = await import(url("pi-ai/dist/providers/openai-completions.js"));
const { streamAnthropic } = await import(url("pi-ai/dist/providers/anthropic.js"));
const { SessionManager, SettingsManager, AuthStorage, ModelRegistry, buildSessionContext, estimateTokens, shouldCompact, calculateContextTokens, DEFAULT_COMPACTION_SETTINGS } = agent;

const fixtures = join(repo, "tests", "fixtures");
const outDir = join(fixtures, "context");
mkdirSync(join(outDir, "gen"), { recursive: true });
const work = mkdtempSync(join(tmpdir(), "pi-context-goldens-"));

function fnv64(text) {
	let h = 0xcbf29ce484222325n;
	for (const b of Buffer.from(text, "utf8")) {
		h ^= BigInt(b);
		h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
	}
	return h.toString(16).padStart(16, "0");
}

// ---------------------------------------------------------------------------------------------
// The reference's pipeline

const convertCache = new Map();
async function converter(blockImages) {
	if (!convertCache.has(blockImages)) {
		const dir = mkdtempSync(join(work, "agent-"));
		const { session } = await createAgentSession({
			cwd: dir,
			agentDir: dir,
			sessionManager: SessionManager.inMemory(dir),
			settingsManager: SettingsManager.inMemory({ images: { blockImages } }),
			authStorage: AuthStorage.inMemory(),
		});
		convertCache.set(blockImages, (msgs) => session.agent.convertToLlm(msgs));
	}
	return convertCache.get(blockImages);
}

function registryFor(modelsJson) {
	const dir = mkdtempSync(join(work, "models-"));
	const path = join(dir, "models.json");
	if (modelsJson !== undefined) writeFileSync(path, typeof modelsJson === "string" ? modelsJson : JSON.stringify(modelsJson));
	return ModelRegistry.create(AuthStorage.inMemory(), path);
}

function targetModel(registry, provider, id, api) {
	const m = provider !== undefined ? registry.find(provider, id) : undefined;
	if (m) return { ...m, api };
	return { provider: provider ?? "", id: id ?? "", api, baseUrl: "", reasoning: false, input: ["text", "image"], contextWindow: 0, maxTokens: 0 };
}

async function capture(stream, model, context) {
	let payload;
	const s = stream(model, context, {
		apiKey: "x",
		onPayload: (p) => {
			payload = structuredClone(p);
			throw new Error("captured");
		},
	});
	for await (const _ of s) {
	}
	if (!payload) throw new Error("no payload captured");
	return payload;
}

// getContextUsage's rule: after the latest compaction on the branch, the last assistant that is
// neither aborted nor failed must report a context size above 0.
function usageStale(branch) {
	let ci = -1;
	for (let i = branch.length - 1; i >= 0; i--) {
		if (branch[i].type === "compaction") {
			ci = i;
			break;
		}
	}
	if (ci < 0) return false;
	for (let i = branch.length - 1; i > ci; i--) {
		const e = branch[i];
		if (e.type === "message" && e.message.role === "assistant") {
			const a = e.message;
			if (a.stopReason !== "aborted" && a.stopReason !== "error") {
				return !(calculateContextTokens(a.usage) > 0);
			}
		}
	}
	return true;
}

const line = (v) => JSON.stringify(v);

// Everything pi outputs for one leaf of a session.
async function record(sm, leaf, opts) {
	const entries = sm.getEntries();
	const ctx = buildSessionContext(entries, leaf ?? undefined);
	const branch = leaf ? sm.getBranch(leaf) : sm.getBranch();
	const llm = (await converter(!!opts.blockImages))(ctx.messages);
	const registry = opts.registry;
	const [provider, id] = opts.model ? [opts.model.slice(0, opts.model.indexOf("/")), opts.model.slice(opts.model.indexOf("/") + 1)] : ctx.model ? [ctx.model.provider, ctx.model.modelId] : [undefined, undefined];
	const prev = process.env.PI_CACHE_RETENTION;
	if (opts.cacheRetention) process.env.PI_CACHE_RETENTION = opts.cacheRetention;
	const openaiTarget = targetModel(registry, provider, id, "openai-completions");
	const openai = await capture(streamOpenAICompletions, openaiTarget, { systemPrompt: opts.systemPrompt, messages: llm });
	const anthropicTarget = targetModel(registry, provider, id, "anthropic-messages");
	const anthropic = await capture(streamAnthropic, anthropicTarget, { systemPrompt: opts.systemPrompt, messages: llm });
	if (opts.cacheRetention) {
		if (prev === undefined) delete process.env.PI_CACHE_RETENTION;
		else process.env.PI_CACHE_RETENTION = prev;
	}
	const est = estimateContextTokens(ctx.messages);
	const pathModel = ctx.model ? registry.find(ctx.model.provider, ctx.model.modelId) : undefined;
	const statsModel = opts.model ? registry.find(provider, id) : pathModel;
	const window = opts.contextWindow ?? statsModel?.contextWindow ?? null;
	const stale = usageStale(branch);
	const settings = { type: "settings", thinkingLevel: ctx.thinkingLevel, model: ctx.model };
	if (opts.systemPrompt !== undefined) settings.systemPrompt = opts.systemPrompt;
	const compaction = { ...DEFAULT_COMPACTION_SETTINGS, ...(opts.compaction ?? {}) };
	return {
		leaf: leaf ?? null,
		settings: line(settings),
		anthropicSystem: anthropic.system ? line(anthropic.system) : null,
		agent: ctx.messages.map(line),
		llm: llm.map(line),
		openai: openai.messages.map(line),
		anthropic: anthropic.messages.map(line),
		stats: {
			pathEntries: branch.length,
			compactionsOnPath: branch.filter((e) => e.type === "compaction").length,
			messages: ctx.messages.length,
			estimatedTokens: ctx.messages.reduce((a, m) => a + estimateTokens(m), 0),
			tokens: est.tokens,
			usageTokens: est.usageTokens,
			trailingTokens: est.trailingTokens,
			lastUsageIndex: est.lastUsageIndex,
			usageStale: stale,
			contextWindow: window,
			reserveTokens: compaction.reserveTokens,
			shouldCompact: window !== null && !stale && shouldCompact(est.tokens, window, compaction),
		},
	};
}

// A whole output as {n: lines, hash: FNV-1a 64 of the lines joined by "\n", lines: the first
// four hex digits of each line's hash, concatenated (to point at the first differing line)}.
const hashed = (r) => {
	for (const k of ["agent", "llm", "openai", "anthropic"]) {
		r[k] = { n: r[k].length, hash: fnv64(r[k].join("\n")), lines: r[k].map((l) => fnv64(l).slice(0, 4)).join("") };
	}
	return r;
};

// ---------------------------------------------------------------------------------------------
// 1. Existing fixtures and generated sessions: default leaf and a few others, hashed.

function tips(entries, branch) {
	const hasChild = new Set(entries.map((e) => e.parentId).filter(Boolean));
	const leaves = entries.filter((e) => !hasChild.has(e.id)).map((e) => e.id);
	const pick = [];
	const others = leaves.slice(0, -1);
	const n = Math.min(2, others.length);
	for (let k = 0; k < n; k++) pick.push(others[Math.floor(((k + 0.5) * others.length) / n)]);
	// Right after the latest compaction of the main path, and half way along it.
	for (let i = branch.length - 1; i >= 0; i--) {
		if (branch[i].type === "compaction") {
			pick.push(branch[i].id);
			break;
		}
	}
	if (branch.length > 4) pick.push(branch[Math.floor(branch.length / 2)].id);
	return [...new Set(pick)];
}

async function fileGolden(name, file, extra = {}) {
	const dir = mkdtempSync(join(work, "f-"));
	const copy = join(dir, basename(file));
	copyFileSync(file, copy);
	const sm = SessionManager.open(copy);
	const entries = sm.getEntries();
	// v1 files get random ids on migration: only the default leaf is comparable.
	const migrated = readFileSync(copy, "utf8") !== readFileSync(file, "utf8");
	const leaves = [null, ...(migrated ? [] : tips(entries, sm.getBranch()))];
	const registry = registryFor(undefined);
	const parents = new Set(entries.map((e) => e.parentId).filter(Boolean));
	const out = { ...extra, branchTips: entries.filter((e) => !parents.has(e.id)).length, leaves: [] };
	for (const leaf of leaves) out.leaves.push(hashed(await record(sm, leaf, { registry })));
	const path = join(outDir, `${name}.golden.json`);
	writeFileSync(path, `${JSON.stringify(out)}\n`);
	console.log(`wrote ${path.slice(repo.length + 1)} (${leaves.length} leaves)`);
}

await fileGolden("before-compaction", join(fixtures, "before-compaction.jsonl"), { input: "tests/fixtures/before-compaction.jsonl" });
for (const f of readdirSync(join(fixtures, "sessions")).sort()) {
	if (f.endsWith(".jsonl")) await fileGolden(`session-${basename(f, ".jsonl")}`, join(fixtures, "sessions", f), { input: `tests/fixtures/sessions/${f}` });
}

// Generated: [name, entries, seed, branches].
const GENERATED = [
	["g01", 1500, 1, 4],
	["g02", 2500, 2, 10],
	["g03", 3000, 3, 8],
	["g04", 2200, 4, 2],
	["g05", 2400, 5, 8],
	["g06", 2600, 6, 6],
	["g07", 1200, 7, 12],
	["g08", 3200, 8, 40],
	["g09", 900, 9, 8],
	["g10", 600, 10, 16],
	["g11", 400, 11, 6],
	["g12", 2000, 12, 0],
	["g13", 2600, 13, 10],
	["g14", 800, 14, 3],
	["g15", 2800, 15, 15],
	["g16", 2200, 16, 6],
	["g17", 300, 17, 10],
	["g18", 2400, 18, 5],
	["g19", 2200, 19, 10],
	["g20", 3500, 20, 12],
];
const KEEP = new Set(["id", "parentId", "toolCallId", "firstKeptEntryId", "fromId", "type", "role", "timestamp", "api", "provider", "model", "modelId", "stopReason", "toolName", "name", "thinkingLevel", "customType", "mimeType"]);
const CUT = 32;
const cut = (s) => {
	if (s.length <= CUT) return s;
	let e = CUT;
	const c = s.charCodeAt(e - 1);
	if (c >= 0xd800 && c <= 0xdbff) e--;
	return s.slice(0, e);
};
const shrink = (v, k) =>
	typeof v === "string"
		? KEEP.has(k)
			? v
			: cut(v)
		: Array.isArray(v)
			? v.map((x) => shrink(x, k))
			: v && typeof v === "object"
				? Object.fromEntries(
						Object.entries(v)
							.filter(([kk]) => kk !== "cost")
							.map(([kk, x]) => [kk, shrink(x, kk)]),
					)
				: v;

if (existsSync(generator)) {
	for (const [name, n, seed, branches] of GENERATED) {
		const raw = join(work, `${name}.jsonl`);
		execFileSync("python3", [generator, "--entries", String(n), "--seed", String(seed), "--branches", String(branches), "--out", raw], { stdio: "ignore" });
		const text = `${readFileSync(raw, "utf8")
			.trimEnd()
			.split("\n")
			.map((l) => JSON.stringify(shrink(JSON.parse(l), "")))
			.join("\n")}\n`;
		const packed = deflateRawSync(Buffer.from(text, "utf8"), { level: 9 });
		if (inflateRawSync(packed).toString("utf8") !== text) throw new Error("deflate round trip");
		writeFileSync(join(outDir, "gen", `${name}.jsonl.deflate`), packed);
		const file = join(work, `${name}.small.jsonl`);
		writeFileSync(file, text);
		await fileGolden(`gen-${name}`, file, {
			input: `tests/fixtures/context/gen/${name}.jsonl.deflate`,
			inputHash: fnv64(text),
			generator: `gen_session.py --entries ${n} --seed ${seed} --branches ${branches}, shrunk`,
		});
	}
} else {
	console.log(`${generator} not found: generated sessions left as they are`);
}

// ---------------------------------------------------------------------------------------------
// 2. Hand-written sessions (the spec's test cases and the provider rules), outputs in full.

let clock = Date.parse("2025-01-01T00:00:00.000Z");
const iso = () => new Date((clock += 1000)).toISOString();
const usage = (input, output, total, extra = {}) => ({ input, output, cacheRead: 0, cacheWrite: 0, totalTokens: total, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }, ...extra });
const U = (id, parent, content, extra = {}) => ({ type: "message", id, parentId: parent, timestamp: iso(), message: { role: "user", content, timestamp: clock, ...extra } });
const A = (id, parent, content, m = {}) => ({
	type: "message",
	id,
	parentId: parent,
	timestamp: iso(),
	message: {
		role: "assistant",
		content: typeof content === "string" ? [{ type: "text", text: content }] : content,
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-sonnet-4-5",
		usage: usage(10, 5, 15),
		stopReason: "stop",
		timestamp: clock,
		...m,
	},
});
const TR = (id, parent, callId, name, content, extra = {}) => ({
	type: "message",
	id,
	parentId: parent,
	timestamp: iso(),
	message: { role: "toolResult", toolCallId: callId, toolName: name, content: typeof content === "string" ? [{ type: "text", text: content }] : content, isError: false, timestamp: clock, ...extra },
});
const call = (id, name, args, extra = {}) => ({ type: "toolCall", id, name, arguments: args, ...extra });
const C = (id, parent, summary, firstKept, tokensBefore = 1000) => ({ type: "compaction", id, parentId: parent, timestamp: iso(), summary, firstKeptEntryId: firstKept, tokensBefore });
const BS = (id, parent, summary, fromId) => ({ type: "branch_summary", id, parentId: parent, timestamp: iso(), fromId, summary });
const TL = (id, parent, level) => ({ type: "thinking_level_change", id, parentId: parent, timestamp: iso(), thinkingLevel: level });
const MC = (id, parent, provider, modelId) => ({ type: "model_change", id, parentId: parent, timestamp: iso(), provider, modelId });
const CM = (id, parent, content, extra = {}) => ({ type: "custom_message", id, parentId: parent, timestamp: iso(), customType: "note", content, display: true, ...extra });
const BX = (id, parent, fields) => ({ type: "message", id, parentId: parent, timestamp: iso(), message: { role: "bashExecution", command: "ls", output: "", exitCode: 0, cancelled: false, truncated: false, timestamp: clock, ...fields } });
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const img = { type: "image", data: png, mimeType: "image/png" };
const x40 = "x".repeat(40);

const CASES = [
	{ name: "SM-H1 empty session", lines: [] },
	{ name: "SM-H2 one user message", lines: [U("1", null, "hello")] },
	{ name: "SM-H3 user/assistant chain", lines: [U("1", null, "q1"), A("2", "1", "r1"), U("3", "2", "q2"), A("4", "3", "r2")] },
	{ name: "SM-H4 thinking level", lines: [U("1", null, "q"), TL("2", "1", "high"), A("3", "2", "r")] },
	{ name: "SM-H5 model from the assistant", lines: [U("1", null, "q"), A("2", "1", "r", { model: "claude-test" })] },
	{ name: "SM-H6 a later assistant wins over model_change", lines: [U("1", null, "q"), MC("2", "1", "openai", "gpt-4"), A("3", "2", "r", { model: "claude-test" })] },
	{
		name: "SM-H7 compaction keeps from firstKeptEntryId",
		lines: [U("1", null, "first"), A("2", "1", "response1"), U("3", "2", "second"), A("4", "3", "response2"), C("5", "4", "Summary of first two turns", "3", 500), U("6", "5", "third"), A("7", "6", "response3")],
	},
	{ name: "SM-H8 compaction keeping everything", lines: [U("1", null, "a"), A("2", "1", "b"), C("3", "2", "S", "1"), U("4", "3", "c")] },
	{
		name: "SM-H9 two compactions: the latest wins",
		lines: [U("1", null, "a"), A("2", "1", "b"), C("3", "2", "first summary", "1"), U("4", "3", "c"), A("5", "4", "d"), C("6", "5", "second summary", "4"), U("7", "6", "e")],
	},
	{ name: "SM-H10 branches", lines: [U("1", null, "start"), A("2", "1", "r"), U("3", "2", "branch A"), U("4", "2", "branch B")], leaves: ["3", "4"] },
	{
		name: "SM-H11 branch summary",
		lines: [U("1", null, "start"), A("2", "1", "r"), U("3", "2", "abandoned path"), BS("4", "2", "Summary of abandoned work", "3"), U("5", "4", "new direction")],
		leaves: ["5"],
	},
	{
		name: "SM-H12 compaction and branches",
		lines: [
			U("1", null, "start"),
			A("2", "1", "r1"),
			U("3", "2", "q2"),
			A("4", "3", "r2"),
			C("5", "4", "compacted", "3"),
			U("6", "5", "q3"),
			A("7", "6", "r3"),
			U("8", "3", "wrong"),
			A("9", "8", "wrong answer"),
			BS("10", "3", "tried something", "9"),
			U("11", "10", "better approach"),
		],
		leaves: ["7", "11", "9"],
	},
	{ name: "SM-H14 broken parent chain", lines: [U("1", null, "a"), A("2", "missing", "b")], leaves: ["2"] },
	{
		name: "SM-H16 repeated compaction",
		lines: [U("u1", null, "u1"), A("a1", "u1", "a"), C("c1", "a1", "First summary", "u1"), U("u2", "c1", "u2"), A("b", "u2", "b"), U("u3", "b", "u3"), A("c", "u3", "c"), C("c2", "c", "Second summary", "u3"), U("u4", "c2", "u4"), A("d", "u4", "d")],
	},
	{ name: "SM-H17 compaction keeping all", lines: [U("u1", null, "u1"), A("a1", "u1", "a"), C("c1", "a1", "First summary", "u1"), U("u2", "c1", "u2"), A("b", "u2", "b")] },
	{ name: "SM-H18 model and thinking at the end", lines: [U("1", null, "q"), MC("2", "1", "openai", "gpt-4"), A("3", "2", "r"), TL("4", "3", "high")] },
	{ name: "SM-H20 firstKeptEntryId not on the path", lines: [U("1", null, "a"), A("2", "1", "b"), C("3", "2", "S", "nowhere"), U("4", "3", "c"), A("5", "4", "d")] },
	{
		name: "repeated compaction keeping entries before the previous one",
		lines: [U("1", null, "U1"), A("2", "1", "A1"), U("3", "2", "U2"), A("4", "3", "A2"), C("5", "4", "C1", "3"), U("6", "5", "U3"), A("7", "6", "A3"), C("8", "7", "C2 keeps from U2", "3"), U("9", "8", "U4")],
	},
	{
		name: "custom messages, custom entries, labels, names",
		lines: [
			U("1", null, "q"),
			CM("2", "1", "a note"),
			{ type: "custom", id: "3", parentId: "2", timestamp: iso(), customType: "ext", data: { x: 1 } },
			CM("4", "3", [{ type: "text", text: "block note" }, img], { display: false, details: { n: 1.5e21, list: [1, 2.0] } }),
			{ type: "label", id: "5", parentId: "4", timestamp: iso(), targetId: "1", label: "start" },
			{ type: "session_info", id: "6", parentId: "5", timestamp: iso(), name: "named" },
			A("7", "6", "r"),
			{ type: "some_future_type", id: "8", parentId: "7", timestamp: iso(), payload: true },
			CM("9", "8", "no details", { details: undefined }),
		],
	},
	{
		name: "branch summaries: empty summaries are skipped",
		lines: [U("1", null, "q"), BS("2", "1", "", "1"), A("3", "2", "r"), { type: "branch_summary", id: "4", parentId: "3", timestamp: iso(), summary: "no fromId" }, U("5", "4", "next")],
	},
	{
		name: "bash executions",
		lines: [
			U("1", null, "q"),
			BX("2", "1", { command: "ls -la", output: "a\nb", exitCode: 0 }),
			BX("3", "2", { command: "false", output: "", exitCode: 1 }),
			BX("4", "3", { command: "sleep 9", output: "partial", exitCode: null, cancelled: true }),
			BX("5", "4", { command: "cat big", output: "head", truncated: true, fullOutputPath: "/tmp/out.txt", exitCode: 0 }),
			BX("6", "5", { command: "secret", output: "hidden", excludeFromContext: true }),
			BX("7", "6", { command: "nothing", output: "", truncated: true }),
			A("8", "7", "done"),
		],
	},
	{ name: "thinking level entry without a level", lines: [U("1", null, "q"), TL("2", "1", "low"), { type: "thinking_level_change", id: "3", parentId: "2", timestamp: iso() }, A("4", "3", "r")] },
	{
		name: "unicode: astral characters, escapes and lone surrogates",
		lines: [U("1", null, "emoji 😀😀 and a lone \ud83d surrogate, \u2028 line separator, tab\t, \u0001 control"), A("2", "1", "é/\\\"quoted\"\ud800"), U("3", "2", [{ type: "text", text: "block \udc00 low" }, { type: "text", text: "   " }])],
	},
	{
		name: "numbers in JavaScript spelling",
		lines: [U("1", null, "q"), CM("2", "1", "n", { details: { a: 1.0, b: 1e21, c: 1e-7, d: 0.1, e: -0, f: 123456789012345680000, g: 5e-324 } }), A("3", "2", "r", { usage: usage(1, 2, 0, { cacheRead: 3, cacheWrite: 4 }) })],
	},
	// Providers
	{
		name: "same model: thinking with signatures, tool calls",
		lines: [
			U("1", null, "read it"),
			A("2", "1", [{ type: "thinking", thinking: "let me think", thinkingSignature: "sig1" }, { type: "text", text: "Reading." }, call("toolu_1", "read", { path: "a.ts" }), call("toolu_2", "read", { path: "b.ts" })], { stopReason: "toolUse" }),
			TR("3", "2", "toolu_1", "read", "content a"),
			TR("4", "3", "toolu_2", "read", [{ type: "text", text: "line1" }, { type: "text", text: "line2" }]),
			A("5", "4", [{ type: "thinking", thinking: "  ", thinkingSignature: "" }, { type: "thinking", thinking: "no signature" }, { type: "text", text: "Done." }]),
		],
	},
	{
		name: "PR1 thinking from another model becomes text",
		lines: [
			U("1", null, "hi"),
			A("2", "1", [{ type: "thinking", thinking: "reasoning here", thinkingSignature: "reasoning_content" }, { type: "text", text: "answer" }], { api: "openai-completions", provider: "openai", model: "gpt-4o" }),
			U("3", "2", "more"),
		],
		model: "github-copilot/claude-sonnet-4.5",
	},
	{
		name: "PR2 tool results with images, model reads images",
		lines: [
			U("1", null, "look"),
			A("2", "1", [call("call_1", "read", { path: "a.png" }), call("call_2", "read", { path: "b.png" })], { api: "openai-completions", provider: "openai", model: "gpt-4o", stopReason: "toolUse" }),
			TR("3", "2", "call_1", "read", [{ type: "text", text: "Read image file [image/png]" }, img]),
			TR("4", "3", "call_2", "read", [{ type: "text", text: "Read image file [image/png]" }, img]),
		],
		model: "openai/gpt-4o",
	},
	{
		name: "images for a model without image input",
		lines: [
			U("1", null, [{ type: "text", text: "what is this?" }, img, img, { type: "text", text: "(image omitted: model does not support images)" }, img]),
			A("2", "1", [call("call_1", "read", { path: "a.png" })], { api: "openai-completions", provider: "local", model: "llama", stopReason: "toolUse" }),
			TR("3", "2", "call_1", "read", [img]),
			TR("4", "3", "call_9", "read", [{ type: "text", text: "stray result" }, img]),
		],
		model: "local/llama",
		modelsJson: { providers: { local: { baseUrl: "http://localhost:8080/v1", api: "openai-completions", apiKey: "none", models: [{ id: "llama", contextWindow: 8192 }] } } },
	},
	{
		name: "images only in tool results and user messages",
		lines: [U("1", null, [img]), A("2", "1", [call("toolu_1", "read", { path: "p.png" })], { stopReason: "toolUse" }), TR("3", "2", "toolu_1", "read", [img]), U("4", "3", "   "), U("5", "4", [{ type: "text", text: " " }, { type: "text", text: "x" }])],
	},
	{
		name: "unanswered tool calls get results, in the middle and at the end",
		lines: [
			U("1", null, "go"),
			A("2", "1", [call("toolu_a", "bash", { command: "ls" }), call("toolu_b", "bash", { command: "pwd" })], { stopReason: "toolUse" }),
			TR("3", "2", "toolu_a", "bash", "out"),
			U("4", "3", "interrupt"),
			A("5", "4", [call("toolu_c", "read", { path: "x" })], { stopReason: "toolUse" }),
			A("6", "5", [call("toolu_d", "read", { path: "y" })], { stopReason: "toolUse" }),
		],
	},
	{
		name: "failed and aborted turns are dropped",
		lines: [
			U("1", null, "go"),
			A("2", "1", [{ type: "thinking", thinking: "partial" }, call("toolu_x", "bash", { command: "x" })], { stopReason: "error", errorMessage: "overloaded", usage: usage(0, 0, 0) }),
			A("3", "2", [], { stopReason: "aborted" }),
			A("4", "3", [{ type: "text", text: "   " }]),
			U("5", "4", "again"),
			A("6", "5", "ok", { usage: usage(100, 20, 120) }),
		],
	},
	{
		name: "tool call ids from the OpenAI Responses API",
		lines: [
			U("1", null, "go"),
			A("2", "1", [call("call_abc123|fc_0a1b2c+/=" + "z".repeat(60), "read", { path: "a" }, { thoughtSignature: JSON.stringify({ type: "reasoning.encrypted", id: "x", data: "enc" }) }), call("x".repeat(50), "read", { path: "b" })], {
				api: "openai-responses",
				provider: "openai",
				model: "gpt-5",
				stopReason: "toolUse",
			}),
			TR("3", "2", "call_abc123|fc_0a1b2c+/=" + "z".repeat(60), "read", "a"),
			TR("4", "3", "x".repeat(50), "read", "b"),
		],
		model: "openai/gpt-4o",
	},
	{
		name: "reasoning details from tool-call signatures, same model",
		lines: [
			U("1", null, "go"),
			A("2", "1", [{ type: "thinking", thinking: "t1", thinkingSignature: "reasoning" }, { type: "thinking", thinking: "t2" }, call("c1", "read", { path: "a" }, { thoughtSignature: JSON.stringify({ type: "reasoning.encrypted", id: "c1", data: "d" }) }), call("c2", "read", { path: "b" }, { thoughtSignature: "not json" })], {
				api: "openai-completions",
				provider: "openrouter",
				model: "openai/gpt-4o",
				stopReason: "toolUse",
			}),
			TR("3", "2", "c1", "read", "a"),
			TR("4", "3", "c2", "read", "b"),
		],
		model: "openrouter/openai/gpt-4o",
	},
	{
		name: "redacted thinking: kept for the same model only",
		lines: [
			U("1", null, "q"),
			A("2", "1", [{ type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true }, { type: "text", text: "a", textSignature: "ts" }]),
			A("3", "2", [{ type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque2", redacted: true }, { type: "text", text: "b" }], { provider: "other", model: "m" }),
		],
	},
	{
		name: "OpenRouter Claude: cache markers and a system prompt",
		lines: [U("1", null, "q"), A("2", "1", "answer", { api: "openai-completions", provider: "openrouter", model: "anthropic/claude-sonnet-4.5" }), U("3", "2", "follow-up")],
		model: "openrouter/anthropic/claude-sonnet-4.5",
		systemPrompt: "You are terse.",
	},
	{
		name: "compat flags from models.json",
		lines: [
			U("1", null, "q"),
			A("2", "1", [{ type: "thinking", thinking: "hmm", thinkingSignature: "reasoning_content" }, { type: "text", text: "calling" }, call("t1", "bash", { command: "ls" })], { api: "openai-completions", provider: "proxy", model: "m1", stopReason: "toolUse" }),
			TR("3", "2", "t1", "bash", [{ type: "text", text: "files" }, img]),
			U("4", "3", "next"),
			A("5", "4", [{ type: "thinking", thinking: "only thinking", thinkingSignature: "reasoning_content" }], { api: "openai-completions", provider: "proxy", model: "m1" }),
		],
		model: "proxy/m1",
		systemPrompt: "system text",
		modelsJson: `{
			// a proxy with quirks
			"providers": {
				"proxy": {
					"baseUrl": "https://proxy.example.com/v1", "api": "openai-completions", "apiKey": "K",
					"compat": {"requiresToolResultName": true, "requiresAssistantAfterToolResult": true},
					"models": [{"id": "m1", "reasoning": true, "input": ["text", "image"], "contextWindow": 32000,
					            "compat": {"requiresThinkingAsText": true, "supportsDeveloperRole": false}},],
				},
			},
		}`,
	},
	{
		name: "DeepSeek: reasoning_content on every assistant message",
		lines: [U("1", null, "q"), A("2", "1", "plain answer", { api: "openai-completions", provider: "deepseek", model: "deepseek-v4-flash" }), U("3", "2", [{ type: "text", text: "more" }, img])],
		model: "deepseek/deepseek-v4-flash",
		systemPrompt: "sys",
	},
	{
		name: "system prompt roles: developer for reasoning models",
		lines: [U("1", null, "q")],
		model: "openai/o3",
		systemPrompt: "Be brief. 😀",
	},
	{
		name: "long cache retention",
		lines: [U("1", null, "q"), A("2", "1", "r"), U("3", "2", [{ type: "text", text: "last" }])],
		systemPrompt: "sys",
		cacheRetention: "long",
	},
	{
		name: "images blocked by settings",
		lines: [U("1", null, [img, img, { type: "text", text: "Image reading is disabled." }, img, { type: "text", text: "see" }]), A("2", "1", [call("toolu_1", "read", { path: "x.png" })], { stopReason: "toolUse" }), TR("3", "2", "toolu_1", "read", [{ type: "text", text: "Read image" }, img])],
		settings: { images: { blockImages: true } },
	},
	{ name: "no model on the path", lines: [U("1", null, "q"), U("2", "1", [{ type: "text", text: "a" }, img])], contextWindow: 100000 },
	// Token math
	{ name: "CO-A9 usage plus trailing estimate", lines: [U("1", null, x40), A("2", "1", x40, { usage: usage(0, 0, 100) }), U("3", "2", x40)] },
	{ name: "CO-A10 an aborted assistant is estimated", lines: [U("1", null, x40), A("2", "1", x40, { usage: usage(0, 0, 100) }), U("3", "2", x40), A("4", "3", "xxxxxxxx", { usage: usage(0, 0, 5000), stopReason: "aborted" })] },
	{ name: "CO-A11 no usage at all", lines: [U("1", null, x40), U("2", "1", "abcd")] },
	{ name: "usage from the component sum", lines: [U("1", null, "q"), A("2", "1", "r", { usage: usage(1000, 500, 0, { cacheRead: 200, cacheWrite: 100 }) })] },
	{
		name: "right after a compaction the reported usage is stale",
		lines: [U("1", null, "q"), A("2", "1", "r", { usage: usage(190000, 100, 190100) }), U("3", "2", "q2"), A("4", "3", "r2", { usage: usage(195000, 100, 195100) }), C("5", "4", "summary", "3", 195100)],
	},
	{
		name: "over the threshold",
		lines: [U("1", null, "q"), A("2", "1", "r", { usage: usage(190000, 100, 190100) }), U("3", "2", "q2")],
		leaves: [null, "2"],
	},
	{ name: "reserve tokens from settings", lines: [U("1", null, "q"), A("2", "1", "r", { usage: usage(150000, 100, 150100) })], settings: { compaction: { reserveTokens: 60000 } } },
	{ name: "compaction disabled in settings", lines: [U("1", null, "q"), A("2", "1", "r", { usage: usage(199000, 100, 199100) })], settings: { compaction: { enabled: false } } },
	{ name: "context window from a models.json override", lines: [U("1", null, "q"), A("2", "1", "r", { usage: usage(150000, 100, 150100) })], modelsJson: { providers: { anthropic: { modelOverrides: { "claude-sonnet-4-5": { contextWindow: 1000000 } } } } } },
];

const header = { type: "session", version: 3, id: "019b0000-0000-7000-8000-000000000000", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/tmp" };
const cases = [];
for (const c of CASES) {
	const dir = mkdtempSync(join(work, "case-"));
	const file = join(dir, "s.jsonl");
	const lines = c.lines.map((e) => JSON.stringify(e));
	writeFileSync(file, [JSON.stringify(header), ...lines].join("\n") + "\n");
	const sm = SessionManager.open(file);
	const registry = registryFor(c.modelsJson);
	const leaves = c.leaves ?? [null];
	const rec = { name: c.name, lines };
	for (const k of ["model", "systemPrompt", "settings", "cacheRetention", "contextWindow"]) if (c[k] !== undefined) rec[k] = c[k];
	if (c.modelsJson !== undefined) rec.modelsJson = typeof c.modelsJson === "string" ? c.modelsJson : JSON.stringify(c.modelsJson);
	rec.leaves = [];
	for (const leaf of leaves) {
		rec.leaves.push(
			await record(sm, leaf, {
				registry,
				model: c.model,
				systemPrompt: c.systemPrompt,
				blockImages: c.settings?.images?.blockImages,
				compaction: c.settings?.compaction,
				cacheRetention: c.cacheRetention,
				contextWindow: c.contextWindow,
			}),
		);
	}
	cases.push(rec);
}
const casesPath = join(outDir, "cases.golden.json");
writeFileSync(casesPath, `${JSON.stringify({ cases }, null, 1)}\n`);
console.log(`wrote ${casesPath.slice(repo.length + 1)} (${cases.length} cases)`);
rmSync(work, { recursive: true, force: true });
