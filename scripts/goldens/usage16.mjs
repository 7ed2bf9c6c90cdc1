// Goldens for `pi usage` against the reference 1.6's session totals: builds session files with
// 1.6's own SessionManager, covering every entry type and field that carries usage in its
// session-format and message-types docs, then records what 1.6 reports for each file.
//
//   node scripts/goldens/usage16.mjs --pi-dir /work/ref16      (Node 24)
//
// where --pi-dir holds node_modules/@earendil-works/{pi-coding-agent,pi-ai} 1.6.0.
//
// Entries written (ids and times come from a fixed clock and counter, so a rerun writes the
// same bytes): assistant messages with usage (with and without `responseModel`, with
// `cacheWrite1h` and `reasoning`, a `totalTokens` that is not the sum of the four counts, an
// error with zero usage), tool results with and without `usage`, `usage` entries
// (`cache_warm` and an unknown kind with a `note`), compactions and branch summaries with and
// without `usage`, an abandoned branch, and costs from pi-ai's calculateCost on a model with
// `cost.tiers` (the stored `cost.total` is what totals add).
//
// Output, under tests/fixtures/usage/v16/:
//   sessions/--<cwd>--/<stamp>_<id>.jsonl   the files as 1.6 wrote them
//   goldens.json   per file, what 1.6 computes after opening it again:
//     stats      AgentSession.getSessionStats() (the /session view and RPC get_session_stats):
//                counts, tokens {input, output, cacheRead, cacheWrite, total}, cost
//     breakdown  getUsageCostBreakdown(entries) (the /session cost-by-model rows): key, tokens, cost
//     assistantOnly  the same sums over assistant messages alone (what ccusage counts), from
//                addUsageToTotals over those entries

import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const at = args.indexOf("--pi-dir");
if (at < 0) throw new Error("--pi-dir DIR (where @earendil-works/pi-coding-agent 1.6.0 is installed) is required");
const modules = join(resolve(args[at + 1]), "node_modules", "@earendil-works");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = join(repo, "tests", "fixtures", "usage", "v16");

// A fixed clock (each `new Date()` 1.5 s after the one before) and fixed ids.
const RealDate = Date;
let clock = RealDate.parse("2026-02-10T09:00:00.000Z");
globalThis.Date = class extends RealDate {
	constructor(...a) {
		if (a.length === 0) {
			clock += 1500;
			super(clock);
		} else super(...a);
	}
	static now() {
		clock += 1500;
		return clock;
	}
};
let idCounter = 0;
crypto.randomUUID = () => {
	idCounter += 1;
	const hex = (idCounter * 2654435761 >>> 0).toString(16).padStart(8, "0");
	return `${hex}-0000-4000-8000-000000000000`;
};
syncBuiltinESMExports();

const url = (p) => pathToFileURL(join(modules, p)).href;
const { SessionManager } = await import(url("pi-coding-agent/dist/core/session-manager.js"));
const { AgentSession } = await import(url("pi-coding-agent/dist/core/agent-session.js"));
const { addUsageToTotals, createUsageTotals, getUsageCostBreakdown } = await import(
	url("pi-coding-agent/dist/core/usage-totals.js")
);
const { calculateCost } = await import(url("pi-ai/dist/index.js"));

// Prices per million tokens; the second model has a tier above 200k input tokens.
const PRICES = {
	"claude-sonnet-4-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
	"gemini-2.5-pro": {
		input: 1.25,
		output: 10,
		cacheRead: 0.31,
		cacheWrite: 0,
		tiers: [{ inputTokensAbove: 200000, input: 2.5, output: 15, cacheRead: 0.625, cacheWrite: 0 }],
	},
	"gpt-5-mini": { input: 0.25, output: 2, cacheRead: 0.025, cacheWrite: 0 },
};

function usage(model, input, output, cacheRead = 0, cacheWrite = 0, extra = {}) {
	const u = {
		input,
		output,
		cacheRead,
		cacheWrite,
		...extra,
		totalTokens: input + output + cacheRead + cacheWrite,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
	};
	if (extra.totalTokens !== undefined) u.totalTokens = extra.totalTokens;
	calculateCost({ id: model, cost: PRICES[model] }, u);
	return u;
}

const user = (text) => ({ role: "user", content: text, timestamp: Date.now() });
function assistant(provider, model, u, more = {}) {
	return {
		role: "assistant",
		content: [{ type: "text", text: "done" }],
		api: provider === "google" ? "google-generative-ai" : "anthropic-messages",
		provider,
		model,
		usage: u,
		stopReason: "stop",
		timestamp: Date.now(),
		...more,
	};
}
const call = (id) => ({ type: "toolCall", id, name: "read", arguments: { path: "a.txt" } });
function toolResult(id, u) {
	return {
		role: "toolResult",
		toolCallId: id,
		toolName: "read",
		content: [{ type: "text", text: "contents" }],
		isError: false,
		timestamp: Date.now(),
		...(u ? { usage: u } : {}),
	};
}

rmSync(out, { recursive: true, force: true });
const sessionsDir = join(out, "sessions");
const dirOf = (cwd) => join(sessionsDir, `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);

function create(cwd, id) {
	const dir = dirOf(cwd);
	mkdirSync(dir, { recursive: true });
	const sm = SessionManager.create(cwd, dir);
	sm.newSession({ id });
	return sm;
}

// 1. Every usage-carrying entry type, an abandoned branch, responseModel, tiers.
{
	const sm = create("/home/me/app", "0194f000-0000-7000-8000-000000000001");
	sm.appendMessage(user("read a.txt"));
	sm.appendMessage(
		assistant("anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 1200, 300, 0, 8000, { cacheWrite1h: 2000 }), {
			content: [call("c1")],
			stopReason: "toolUse",
		}),
	);
	// A tool that made a model call of its own.
	sm.appendMessage(toolResult("c1", usage("gpt-5-mini", 4000, 500, 1000)));
	const fork = sm.appendMessage(
		assistant("anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 50, 700, 9200, 0, { reasoning: 400 }), {
			content: [call("c2")],
			stopReason: "toolUse",
		}),
	);
	sm.appendMessage(toolResult("c2"));
	// A router: requested `auto`, the provider reports the model that answered.
	sm.appendMessage(
		assistant("openrouter", "auto", usage("gemini-2.5-pro", 210000, 900, 0, 0), {
			api: "openai-completions",
			responseModel: "google/gemini-2.5-pro",
		}),
	);
	sm.appendUsage("cache_warm", "anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 0, 0, 50000, 0));
	sm.appendUsage("title_generation", "google", "gemini-2.5-pro", usage("gemini-2.5-pro", 800, 20), "session title");
	sm.appendMessage(user("keep going"));
	// totalTokens reported without the cache (some providers do): totals add the four counts.
	const last = sm.appendMessage(
		assistant("google", "gemini-2.5-pro", usage("gemini-2.5-pro", 3000, 400, 150000, 0, { totalTokens: 3400 })),
	);
	sm.appendCompaction("summary of the work so far", last, 160000, { readFiles: ["a.txt"], modifiedFiles: [] }, false,
		usage("claude-sonnet-4-5", 30000, 1500));
	sm.appendMessage(user("and now?"));
	sm.appendMessage(
		assistant("anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 0, 0), {
			content: [],
			stopReason: "error",
			errorMessage: "overloaded",
		}),
	);
	// Back to an earlier message with a summary of the abandoned path (which still counts).
	sm.branchWithSummary(fork, "tried the long road", { readFiles: [], modifiedFiles: [] }, false,
		usage("gpt-5-mini", 12000, 600));
	sm.appendMessage(user("another way"));
	sm.appendMessage(
		assistant("anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 400, 250, 9200, 300), {
			responseModel: "claude-sonnet-4-5",
		}),
	);
}

// 2. Summaries and tool results without usage; only assistant messages count.
{
	const sm = create("/home/me/app", "0194f000-0000-7000-8000-000000000002");
	sm.appendMessage(user("hello"));
	const first = sm.appendMessage(
		assistant("anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 900, 120, 0, 4000), {
			content: [call("d1")],
			stopReason: "toolUse",
		}),
	);
	sm.appendMessage(toolResult("d1"));
	sm.appendMessage(assistant("anthropic", "claude-sonnet-4-5", usage("claude-sonnet-4-5", 40, 300, 4900, 0)));
	sm.appendCompaction("short summary", first, 6000, undefined, false, undefined);
	sm.branchWithSummary(first, "plain summary", undefined, true, undefined);
	sm.appendMessage(user("again"));
	sm.appendMessage(assistant("google", "gemini-2.5-pro", usage("gemini-2.5-pro", 2500, 100)));
}

// 3. Mostly usage that is not an assistant message: cache warming between turns, a retain-none
//    compaction, a tool result's nested calls.
{
	const sm = create("/srv/build", "0194f000-0000-7000-8000-000000000003");
	sm.appendMessage(user("build it"));
	sm.appendMessage(
		assistant("google", "gemini-2.5-pro", usage("gemini-2.5-pro", 205000, 2000, 0, 0), {
			content: [call("e1")],
			stopReason: "toolUse",
		}),
	);
	sm.appendMessage(toolResult("e1", usage("gpt-5-mini", 64000, 3000, 0, 0)));
	for (let k = 0; k < 3; k++) {
		sm.appendUsage("cache_warm", "google", "gemini-2.5-pro", usage("gemini-2.5-pro", 0, 0, 205000, 0));
	}
	sm.appendCompaction("retain none", undefined, 210000, undefined, true, usage("gemini-2.5-pro", 209000, 4000));
	sm.appendMessage(user("status?"));
	sm.appendMessage(assistant("google", "gemini-2.5-pro", usage("gemini-2.5-pro", 5000, 300)));
}

// What 1.6 reports for each file, read back from disk.
const files = readdirSync(sessionsDir, { recursive: true })
	.filter((f) => f.endsWith(".jsonl"))
	.sort();
const goldens = [];
for (const rel of files) {
	const sm = SessionManager.open(join(sessionsDir, rel));
	const self = {
		sessionManager: sm,
		sessionFile: sm.getSessionFile(),
		sessionId: sm.getSessionId(),
		getContextUsage: () => undefined,
	};
	const stats = AgentSession.prototype.getSessionStats.call(self);
	delete stats.sessionFile;
	delete stats.contextUsage;
	const entries = sm.getEntries();
	const assistantOnly = createUsageTotals();
	for (const e of entries) {
		if (e.type === "message" && e.message.role === "assistant") addUsageToTotals(assistantOnly, e.message.usage);
	}
	goldens.push({
		file: rel,
		stats,
		breakdown: getUsageCostBreakdown(entries),
		assistantOnly,
	});
}
writeFileSync(
	join(out, "goldens.json"),
	`${JSON.stringify({ tool: "@earendil-works/pi-coding-agent 1.6.0", sessions: goldens }, null, 1)}\n`,
);
console.log(`${goldens.length} sessions -> ${out}`);
