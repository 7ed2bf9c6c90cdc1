// Records the exact JSON lines the reference's RpcClient (npm @mariozechner/pi-coding-agent
// 0.73.1, dist/modes/rpc/rpc-client.js) writes for each of its 22 calls, so the test suite
// can send pi the same bytes (tests/cli/run_rpc_compat.rs) without Node.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   node scripts/goldens/rpc-client.mjs --pi-dir /some/dir
//
// The client is started with a stand-in agent (a small script written to a temporary
// folder) that appends every line it reads to a file and answers each with a success of the
// shape the client expects. Values the test must fill in are placeholders: @ENTRY@ (an entry
// id of the session), @SESSION@ (a session file), @PARENT@ (a parent session path),
// @OUT@ (an export path).
// Output: tests/fixtures/rpc/client-commands.jsonl, one line per call, in call order.

import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const at = args.indexOf("--pi-dir");
const piDir = at >= 0 ? args[at + 1] : process.env.PI_REFERENCE_DIR;
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = join(resolve(piDir), "node_modules", "@mariozechner", "pi-coding-agent");
const { RpcClient } = await import(pathToFileURL(join(pkg, "dist", "modes", "rpc", "rpc-client.js")).href);

const work = mkdtempSync(join(tmpdir(), "pi-rpc-client-"));
const log = join(work, "sent.jsonl");
const agent = join(work, "agent.mjs");
writeFileSync(
	agent,
	`import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
const data = {
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
// Every call, in the order the test replays them.
await client.setSessionName("compat");
await client.getState();
await client.prompt("Say hello");
await client.steer("steer text");
await client.followUp("follow-up text");
await client.abort();
await client.getMessages();
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
await client.newSession();
await client.stop();

const out = join(repo, "tests", "fixtures", "rpc", "client-commands.jsonl");
writeFileSync(out, readFileSync(log, "utf8"));
console.log(`wrote ${out}`);
