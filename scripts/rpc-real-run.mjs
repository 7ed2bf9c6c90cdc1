// Drives `pi run --rpc` with the reference's own RpcClient (npm @earendil-works/pi-coding-agent
// 1.6, or @mariozechner/pi-coding-agent 0.73.1: whichever --pi-dir holds) through
// scripts/rpc-shim.cjs, against a model, calling every method of the client, then checks
// every session file written with `pi session check` and opens it with the reference's
// SessionManager. Not part of the test suite (it needs Node and a model server).
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0   # Node 22 or later
//   bash ../shared/tools/real-llm/start.sh DIR        # SmolLM2 on http://127.0.0.1:8088/v1
//   node scripts/rpc-real-run.mjs --pi-dir /some/dir --pi target/debug/pi \
//        [--base-url http://127.0.0.1:8088/v1] [--model smollm2-135m-instruct]
//   node scripts/rpc-real-run.mjs --pi-dir /some/dir --scripted   # no model server: a
//        stand-in started here answers every request with a short text
//
// Prints one line per call (ok / FAILED, and what came back), then the session files.
// Exit status 0 when every call and every check succeeded.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pi = resolve(opt("--pi", join(repo, "target", "debug", "pi")));
let baseUrl = opt("--base-url", "http://127.0.0.1:8088/v1");
const model = opt("--model", "smollm2-135m-instruct");
const pkg = ["@earendil-works", "@mariozechner"]
	.map((scope) => join(resolve(piDir), "node_modules", scope, "pi-coding-agent"))
	.find((p) => existsSync(p));
if (!pkg) throw new Error(`no pi-coding-agent under ${piDir}/node_modules`);
let server;
if (args.includes("--scripted")) {
	// A stand-in OpenAI-compatible server: every request gets "Hello." with a usage.
	server = createServer((req, res) => {
		req.resume();
		req.on("end", () => {
			const chunk = (delta, extra = {}) => `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta, ...extra }] })}\n\n`;
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.write(chunk({ role: "assistant", content: "Hello." }));
			res.write(chunk({}, { finish_reason: "stop" }));
			res.write(`data: ${JSON.stringify({ id: "c", choices: [], usage: { prompt_tokens: 50, completion_tokens: 3, total_tokens: 53 } })}\n\n`);
			res.end("data: [DONE]\n\n");
		});
	});
	await new Promise((r) => server.listen(0, "127.0.0.1", r));
	baseUrl = `http://127.0.0.1:${server.address().port}/v1`;
}
const { RpcClient } = await import(pathToFileURL(join(pkg, "dist", "modes", "rpc", "rpc-client.js")).href);
const { SessionManager, buildSessionContext } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

// A world of its own: agent folder (models, settings, a template, a skill) and a project.
const root = mkdtempSync(join(tmpdir(), "pi-rpc-real-"));
const agentDir = join(root, "agent");
const proj = join(root, "proj");
mkdirSync(join(agentDir, "prompts"), { recursive: true });
mkdirSync(join(agentDir, "skills", "greeting"), { recursive: true });
mkdirSync(proj, { recursive: true });
// Short answers and summaries (compaction writes up to 0.8 × reserveTokens): the client gives
// every call 30 s, and a 135M model on a busy CPU is slow.
const m = (id) => ({ id, contextWindow: 8192, maxTokens: 48 });
writeFileSync(
	join(agentDir, "models.json"),
	JSON.stringify({
		providers: {
			local: { baseUrl, api: "openai-completions", apiKey: "none", models: [m(model), m(`${model}-alt`)] },
		},
	}),
);
writeFileSync(
	join(agentDir, "settings.json"),
	JSON.stringify({ defaultProvider: "local", defaultModel: model, compaction: { keepRecentTokens: 20, reserveTokens: 120 } }),
);
writeFileSync(join(agentDir, "prompts", "short.md"), "---\ndescription: Ask for a short answer\n---\nAnswer in one line: $@\n");
writeFileSync(
	join(agentDir, "skills", "greeting", "SKILL.md"),
	"---\nname: greeting\ndescription: How to greet\n---\nSay hello first.\n",
);
writeFileSync(join(proj, "notes.txt"), "a file of the project\n");

const client = new RpcClient({
	cliPath: join(repo, "scripts", "rpc-shim.cjs"),
	cwd: proj,
	provider: "local",
	model,
	env: { PI_CODING_AGENT_DIR: agentDir, PI_BIN: pi },
});
const results = [];
const call = async (name, f, show = (r) => r) => {
	const t = Date.now();
	try {
		const r = await f();
		const shown = JSON.stringify(show(r)) ?? "";
		results.push({ name, ok: true });
		console.log(`ok      ${name.padEnd(22)} ${((Date.now() - t) / 1000).toFixed(1)}s  ${shown.slice(0, 110)}`);
		return r;
	} catch (e) {
		results.push({ name, ok: false });
		console.log(`FAILED  ${name.padEnd(22)} ${String(e.message ?? e).slice(0, 200)}`);
		return undefined;
	}
};
const idle = (ms = 600000) => client.waitForIdle(ms);
const has = (method) => typeof client[method] === "function";

await client.start();
const state = await call("getState", () => client.getState(), (s) => ({ model: s.model.id, sessionFile: s.sessionFile }));
const first = state?.sessionFile;
await call("setSessionName", () => client.setSessionName("real run"));
let ended = idle();
await call("prompt", () => client.prompt("Say hello in five words."));
await call("steer", () => client.steer("Also name a colour."));
await call("followUp", () => client.followUp("Now say goodbye."));
await ended;
await call("abort", () => client.abort());
if (has("clearQueue")) {
	await call("steer (idle)", () => client.steer("Queued for later."));
	await call("clearQueue", () => client.clearQueue());
}
await call("getMessages", () => client.getMessages(), (ms) => ms.map((x) => x.role));
await call("getLastAssistantText", () => client.getLastAssistantText());
await call("getSessionStats", () => client.getSessionStats(), (s) => ({ totalMessages: s.totalMessages, tokens: s.tokens.total }));
await call("getAvailableModels", () => client.getAvailableModels(), (ms) => ms.map((x) => x.id));
await call("setModel", () => client.setModel("local", `${model}-alt`), (x) => x.id);
await call("cycleModel", () => client.cycleModel(), (x) => x && { model: x.model.id, isScoped: x.isScoped });
if (has("getAvailableThinkingLevels")) await call("getAvailableThinkingLevels", () => client.getAvailableThinkingLevels());
await call("setThinkingLevel", () => client.setThinkingLevel("low"));
await call("cycleThinkingLevel", () => client.cycleThinkingLevel());
await call("setSteeringMode", () => client.setSteeringMode("all"));
await call("setFollowUpMode", () => client.setFollowUpMode("one-at-a-time"));
await call("setAutoCompaction", () => client.setAutoCompaction(true));
await call("setAutoRetry", () => client.setAutoRetry(true));
await call("abortRetry", () => client.abortRetry());
await call("bash", () => client.bash("ls; echo done"));
await call("abortBash", () => client.abortBash());
await call("getCommands", () => client.getCommands(), (cs) => cs.map((c) => `${c.source}:${c.name}`));
const forks = await call("getForkMessages", () => client.getForkMessages());
if (has("getEntries")) {
	const all = await call("getEntries", () => client.getEntries(), (r) => ({ entries: r.entries.length, leafId: r.leafId }));
	await call("getEntries (since)", () => client.getEntries(all?.entries[0]?.id), (r) => r.entries.length);
	await call("getTree", () => client.getTree(), (r) => ({ roots: r.tree.length, leafId: r.leafId }));
}
await call("exportHtml", () => client.exportHtml(join(proj, "page.html")));
await call("compact", () => client.compact("Be brief."), (c) => ({ tokensBefore: c.tokensBefore, summary: c.summary.slice(0, 60) }));
await call("fork", () => client.fork(forks?.[0]?.entryId ?? "none"));
await call("clone", () => client.clone());
await call("newSession", () => client.newSession(first));
await call("switchSession", () => client.switchSession(first));
await call("exportHtml (default)", () => client.exportHtml());
await call("newSession (plain)", () => client.newSession());
ended = idle();
await call("prompt (new session)", () => client.prompt("Name one fruit."));
await ended;
await call("getLastAssistantText", () => client.getLastAssistantText());
await client.stop();
server?.close();

const methods = new Set(results.map((r) => r.name.split(" ")[0]));
const failed = results.filter((r) => !r.ok).length;
console.log(`\n${results.length} calls (${methods.size} distinct client methods), ${results.length - failed} ok, ${failed} failed`);

// Every session file: `pi session check`, and the reference opens it.
const sessions = join(agentDir, "sessions");
const files = readdirSync(sessions, { recursive: true })
	.filter((f) => String(f).endsWith(".jsonl"))
	.map((f) => join(sessions, String(f)))
	.sort();
let bad = 0;
for (const f of files) {
	let check = "ok";
	try {
		const out = execFileSync(pi, ["session", "check", f, "--json"], { env: { ...process.env, PI_CODING_AGENT_DIR: agentDir } });
		if (String(out).trim()) check = `problems: ${String(out).trim().slice(0, 200)}`;
	} catch (e) {
		check = `FAILED: ${String(e.stdout ?? e.message).slice(0, 200)}`;
	}
	let ref;
	try {
		const sm = SessionManager.open(f);
		const ctx = buildSessionContext(sm.getEntries(), sm.getLeafId());
		ref = `reference: ${sm.getEntries().length} entries, ${ctx.messages.length} messages`;
	} catch (e) {
		ref = `reference FAILED: ${e.message}`;
		bad++;
	}
	if (check !== "ok") bad++;
	console.log(`${check === "ok" ? "check ok" : check}  ${ref}  ${f.slice(sessions.length + 1)}`);
}
console.log(`${files.length} session files, ${files.length - bad} pass pi session check and open in the reference`);
process.exit(failed || bad ? 1 : 0);
