// Records RPC goldens from the reference 1.6 (npm @earendil-works/pi-coding-agent 1.6.0), so the
// test suite can hold pi to them without Node (tests/cli/run_rpc_16.rs):
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0
//   PATH=/path/to/node24/bin:$PATH node scripts/goldens/rpc-16.mjs --pi-dir /some/dir
//
// (1.6's RpcClient starts its agent with `node` from PATH, and 1.6 needs Node 22 or later.)
//
// 1. tests/fixtures/rpc/client-commands-1.6.jsonl: the exact line 1.6's RpcClient
//    (dist/modes/rpc/rpc-client.js) writes for each of its 33 command methods, in call order,
//    recorded by a stand-in agent that answers each with a success of the shape the client
//    expects. Placeholders the test fills in: @ENTRY@ (a user entry of the session),
//    @SESSION@ (a session file), @PARENT@ (a parent session path), @OUT@ (an export path).
// 2. tests/fixtures/rpc/transcript-1.6.json: a whole conversation with 1.6's own RPC mode
//    (dist/cli.js --mode rpc), driven by its RpcClient, against a scripted OpenAI-compatible
//    model server started here: `replies` are the chunks the server streamed, one list per
//    request, in order; `transcript` every line in order, `{"in": command}` or `{"out": line}`
//    (responses and events); `requests` the bodies of the model requests (messages only).
//    The scenario: state, a tool-calling prompt, the thinking levels, shell commands (one kept
//    out of the context), entries and tree, a queue cleared, a compaction, a last prompt.

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const at = args.indexOf("--pi-dir");
const piDir = at >= 0 ? args[at + 1] : process.env.PI_REFERENCE_DIR;
if (!piDir) throw new Error("--pi-dir DIR (where @earendil-works/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = join(resolve(piDir), "node_modules", "@earendil-works", "pi-coding-agent");
const { RpcClient } = await import(pathToFileURL(join(pkg, "dist", "modes", "rpc", "rpc-client.js")).href);
const fixtures = join(repo, "tests", "fixtures", "rpc");

// ---------------------------------------------------------------------------------------------
// 1. The lines the client writes.
// ---------------------------------------------------------------------------------------------
{
	const work = mkdtempSync(join(tmpdir(), "pi-rpc16-client-"));
	const log = join(work, "sent.jsonl");
	const agent = join(work, "agent.mjs");
	writeFileSync(
		agent,
		`import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
const data = {
	prompt: { disposition: "started" }, steer: { disposition: "queued" }, follow_up: { disposition: "queued" },
	clear_queue: { steering: [], followUp: [] }, get_available_thinking_levels: { levels: ["off"] },
	get_entries: { entries: [], leafId: null }, get_tree: { tree: [], leafId: null },
	new_session: { cancelled: false }, switch_session: { cancelled: false }, clone: { cancelled: false },
	fork: { text: "", cancelled: false }, get_fork_messages: { messages: [] }, get_commands: { commands: [] },
	get_messages: { messages: [] }, get_available_models: { models: [] }, get_last_assistant_text: { text: null },
	export_html: { path: "x.html" }, bash: { output: "", exitCode: 0, cancelled: false, truncated: false },
};
createInterface({ input: process.stdin }).on("line", (line) => {
	appendFileSync(${JSON.stringify(log)}, line + "\\n");
	const c = JSON.parse(line);
	process.stdout.write(JSON.stringify({ id: c.id, type: "response", command: c.type, success: true, data: data[c.type] ?? {} }) + "\\n");
});
`,
	);
	const client = new RpcClient({ cliPath: agent });
	await client.start();
	// Every command method, in the order the test replays them.
	await client.setSessionName("compat");
	await client.getState();
	await client.getAvailableThinkingLevels();
	await client.prompt("Say hello");
	await client.steer("steer text");
	await client.followUp("follow-up text");
	await client.clearQueue();
	await client.abort();
	await client.getMessages();
	await client.getEntries();
	await client.getEntries("@ENTRY@");
	await client.getTree();
	await client.getLastAssistantText();
	await client.getSessionStats();
	await client.getAvailableModels();
	await client.setModel("mock", "small");
	await client.cycleModel();
	await client.setThinkingLevel("high");
	await client.cycleThinkingLevel();
	await client.setSteeringMode("all");
	await client.setFollowUpMode("one-at-a-time");
	await client.setAutoCompaction(false);
	await client.setAutoRetry(false);
	await client.abortRetry();
	await client.bash("printf 'one\\ntwo\\n'");
	await client.abortBash();
	await client.getCommands();
	await client.getForkMessages();
	await client.exportHtml("@OUT@");
	await client.compact("Keep it short");
	await client.fork("@ENTRY@");
	await client.clone();
	await client.newSession("@PARENT@");
	await client.switchSession("@SESSION@");
	await client.exportHtml();
	await client.compact();
	await client.prompt("Once more", undefined, "followUp");
	await client.newSession();
	await client.stop();
	const out = join(fixtures, "client-commands-1.6.jsonl");
	writeFileSync(out, readFileSync(log, "utf8"));
	console.log(`wrote ${out}`);
}

// ---------------------------------------------------------------------------------------------
// 2. A conversation with 1.6's RPC mode.
// ---------------------------------------------------------------------------------------------
const usage = (prompt, completion) => ({
	id: "c",
	choices: [],
	usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});
const text = (pieces, prompt) => [
	{ id: "c", choices: [{ index: 0, delta: { role: "assistant", content: null } }] },
	...pieces.map((p) => ({ id: "c", choices: [{ index: 0, delta: { content: p } }] })),
	{ id: "c", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
	usage(prompt, 12),
];
const toolCall = (id, name, argsText, prompt) => [
	{ id: "c", choices: [{ index: 0, delta: { role: "assistant", content: null } }] },
	{
		id: "c",
		choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: argsText.slice(0, 8) } }] } }],
	},
	{ id: "c", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: argsText.slice(8) } }] } }] },
	{ id: "c", choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
	usage(prompt, 20),
];
const replies = [
	toolCall("call_1", "read", JSON.stringify({ path: "notes.txt" }), 200),
	text(["The notes ", "say hello."], 260),
	text(["## Goal\nRead the notes.\n\n## Progress\nDone."], 300),
	text(["Fine."], 150),
];
const requests = [];
let next = 0;
const server = createServer((req, res) => {
	let body = "";
	req.on("data", (d) => (body += d));
	req.on("end", () => {
		const parsed = JSON.parse(body || "{}");
		requests.push({ url: req.url, messages: parsed.messages ?? null });
		const chunks = replies[next++];
		if (!chunks) {
			res.writeHead(500, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { message: "no scripted reply left" } }));
			return;
		}
		res.writeHead(200, { "content-type": "text/event-stream" });
		for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
		res.end("data: [DONE]\n\n");
	});
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}/v1`;

const root = mkdtempSync(join(tmpdir(), "pi-rpc16-run-"));
const agentDir = join(root, "agent");
const proj = join(root, "proj");
mkdirSync(agentDir, { recursive: true });
mkdirSync(proj, { recursive: true });
writeFileSync(
	join(agentDir, "models.json"),
	JSON.stringify({
		providers: {
			mock: {
				baseUrl: base,
				api: "openai-completions",
				apiKey: "sk-golden",
				models: [
					{ id: "m1", contextWindow: 100000, maxTokens: 4000 },
					{ id: "small", contextWindow: 50000, maxTokens: 4000 },
				],
			},
		},
	}),
);
writeFileSync(
	join(agentDir, "settings.json"),
	JSON.stringify({ defaultProvider: "mock", defaultModel: "m1", compaction: { keepRecentTokens: 10 } }),
);
writeFileSync(join(proj, "notes.txt"), "hello\n");

const transcript = [];
const client = new RpcClient({
	cliPath: join(pkg, "dist", "cli.js"),
	cwd: proj,
	args: ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-context-files"],
	env: { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1" },
});
const handle = client.handleLine.bind(client);
client.handleLine = (line) => {
	transcript.push({ out: JSON.parse(line) });
	handle(line);
};
await client.start();
const stdin = client.process.stdin;
const write = stdin.write.bind(stdin);
stdin.write = (chunk, ...rest) => {
	transcript.push({ in: JSON.parse(String(chunk)) });
	return write(chunk, ...rest);
};
const settled = () => client.waitForIdle(30000);

await client.getState();
await client.getAvailableThinkingLevels();
let idle = settled();
await client.prompt("What is in notes.txt?");
await idle;
await client.send({ type: "bash", command: "printf 'one\\ntwo\\n'" });
await client.send({ type: "bash", command: "echo hidden", excludeFromContext: true });
await client.getEntries();
const first = (await client.getEntries()).entries[0].id;
await client.getEntries(first);
await client.send({ type: "get_entries", since: "no-such-entry" });
await client.getTree();
await client.steer("Later, please.");
await client.followUp("And then this.");
await client.clearQueue();
await client.compact("Keep it short");
idle = settled();
await client.prompt("Thanks.");
await idle;
await client.getLastAssistantText();
await client.getSessionStats();
// An orderly end: stdin closed, then the exit.
await new Promise((r) => {
	client.process.once("exit", r);
	stdin.end();
});
server.close();

const out = join(fixtures, "transcript-1.6.json");
writeFileSync(out, `${JSON.stringify({ replies, requests, transcript }, null, 1)}\n`);
console.log(`wrote ${out} (${transcript.length} lines, ${requests.length} model requests)`);
process.exit(0);
