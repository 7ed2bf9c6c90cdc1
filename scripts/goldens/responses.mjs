// Records what the reference implementation (npm @mariozechner/pi-coding-agent 0.73.1, its model
// layer @mariozechner/pi-ai) sends to, and makes of the answers of, the OpenAI Responses family
// (`openai-responses`, `azure-openai-responses`, `openai-codex-responses`) and Mistral
// (`mistral-conversations`), so the test suite can check pi's requests and parsing without Node
// or the internet.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   node scripts/goldens/responses.mjs --pi-dir /some/dir
//
// A local HTTP server stands in for the providers. For every case below, the reference's own
// `streamSimple` (the function the agent calls) is pointed at it through the model's `baseUrl`
// (Azure: AZURE_OPENAI_BASE_URL), with a fixed context (system prompt, LLM messages, tools) and
// options (thinking level, session id, cache retention, temperature). The server records the
// request and answers with a scripted response: a stream written after the providers' public
// documentation of their streaming formats (OpenAI's Responses API streaming events; Mistral's
// chat completion chunks), or an HTTP error. The reference parses that answer into its
// assistant message and events.
//
// Output: tests/fixtures/providers/responses.golden.json: {streams: {NAME: the SSE text of a
// scripted answer}, cases: [...]}, each case with
//   name, api, provider, model    the case and the built-in model it targets
//   baseUrlPath                   the path after http://HOST:PORT of the model's baseUrl
//   env                           environment variables set for the call
//   apiKey, options, context      what the reference was called with (context.messages are
//                                 LLM messages, as `pi::llm::Request` holds them)
//   reply                         the scripted answer: {status: 200, stream: NAME}, or an HTTP
//                                 error {status, body}
//   request                       what arrived: method, path (with query), the headers that
//                                 carry meaning (see DROP), and the JSON body
//   message                       the reference's final assistant message (timestamp 0)
//   events                        its events: [type, contentIndex?, delta?]

import { createServer } from "node:http";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const mods = join(resolve(piDir), "node_modules", "@mariozechner");
const ai = await import(pathToFileURL(join(mods, "pi-ai", "dist", "index.js")).href);
const { streamSimple, getModel } = ai;

// ---------------------------------------------------------------------------------------------
// The capture server

let reply = null;
let captured = null;
const server = createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks).toString("utf8");
		captured = { method: req.method, path: req.url, headers: req.headers, body };
		if (!reply) {
			res.writeHead(599, { "content-type": "application/json" });
			res.end('{"error":{"message":"no reply scripted"}}');
			return;
		}
		res.writeHead(reply.status, { "content-type": reply.status === 200 ? "text/event-stream" : "application/json" });
		res.end(reply.body);
	});
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;

// Headers of the SDKs' own that say nothing about the protocol (platform, retry count,
// transport), and those the HTTP client adds.
const DROP = /^(x-stainless-|user-agent$|host$|connection$|content-length$|accept-encoding$|accept-language$|sec-fetch-mode$|cookie$)/;

// ---------------------------------------------------------------------------------------------
// Streams, written after the providers' documentation

const sse = (events) => events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
const seq = (events) => events.map((e, i) => ({ ...e, sequence_number: i }));

const RESP = (id, status = "in_progress", extra = {}) => ({
	id,
	object: "response",
	created_at: 1760000000,
	status,
	model: "gpt-5-mini-2025-08-07",
	output: [],
	...extra,
});

const usage = (input, cached, output, reasoning = 0) => ({
	input_tokens: input,
	input_tokens_details: { cached_tokens: cached },
	output_tokens: output,
	output_tokens_details: { reasoning_tokens: reasoning },
	total_tokens: input + output,
});

const messageItem = (id, text, phase) => ({
	id,
	type: "message",
	status: "completed",
	role: "assistant",
	content: [{ type: "output_text", annotations: [], logprobs: [], text }],
	...(phase ? { phase } : {}),
});

function textEvents(msgId, pieces, outputIndex, phase) {
	const text = pieces.join("");
	return [
		{ type: "response.output_item.added", output_index: outputIndex, item: { id: msgId, type: "message", status: "in_progress", role: "assistant", content: [], ...(phase ? { phase } : {}) } },
		{ type: "response.content_part.added", item_id: msgId, output_index: outputIndex, content_index: 0, part: { type: "output_text", annotations: [], logprobs: [], text: "" } },
		...pieces.map((delta) => ({ type: "response.output_text.delta", item_id: msgId, output_index: outputIndex, content_index: 0, delta, logprobs: [] })),
		{ type: "response.output_text.done", item_id: msgId, output_index: outputIndex, content_index: 0, text, logprobs: [] },
		{ type: "response.content_part.done", item_id: msgId, output_index: outputIndex, content_index: 0, part: { type: "output_text", annotations: [], logprobs: [], text } },
		{ type: "response.output_item.done", output_index: outputIndex, item: messageItem(msgId, text, phase) },
	];
}

const RESPONSES = {
	// A plain answer in pieces; part of the input was cached.
	text: sse(
		seq([
			{ type: "response.created", response: RESP("resp_text_1") },
			{ type: "response.in_progress", response: RESP("resp_text_1") },
			...textEvents("msg_text_1", ["Hel", "lo, ", "wörld 😀."], 0),
			{ type: "response.completed", response: RESP("resp_text_1", "completed", { usage: usage(1200, 200, 30) }) },
		]),
	),
	// A reasoning summary in two parts (kept encrypted for the next turn), a commentary
	// message, and a tool call whose arguments stream in pieces.
	reasoning_tool: sse(
		seq([
			{ type: "response.created", response: RESP("resp_tool_1") },
			{ type: "response.output_item.added", output_index: 0, item: { id: "rs_tool_1", type: "reasoning", summary: [] } },
			{ type: "response.reasoning_summary_part.added", item_id: "rs_tool_1", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "" } },
			{ type: "response.reasoning_summary_text.delta", item_id: "rs_tool_1", output_index: 0, summary_index: 0, delta: "**Reading the file**\n\nThe user " },
			{ type: "response.reasoning_summary_text.delta", item_id: "rs_tool_1", output_index: 0, summary_index: 0, delta: "wants a.ts." },
			{ type: "response.reasoning_summary_text.done", item_id: "rs_tool_1", output_index: 0, summary_index: 0, text: "**Reading the file**\n\nThe user wants a.ts." },
			{ type: "response.reasoning_summary_part.done", item_id: "rs_tool_1", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "**Reading the file**\n\nThe user wants a.ts." } },
			{ type: "response.reasoning_summary_part.added", item_id: "rs_tool_1", output_index: 0, summary_index: 1, part: { type: "summary_text", text: "" } },
			{ type: "response.reasoning_summary_text.delta", item_id: "rs_tool_1", output_index: 0, summary_index: 1, delta: "Then run it." },
			{ type: "response.reasoning_summary_part.done", item_id: "rs_tool_1", output_index: 0, summary_index: 1, part: { type: "summary_text", text: "Then run it." } },
			{
				type: "response.output_item.done",
				output_index: 0,
				item: {
					id: "rs_tool_1",
					type: "reasoning",
					encrypted_content: "gAAAAABo-encrypted-reasoning-1==",
					summary: [
						{ type: "summary_text", text: "**Reading the file**\n\nThe user wants a.ts." },
						{ type: "summary_text", text: "Then run it." },
					],
				},
			},
			...textEvents("msg_tool_1", ["I'll read ", "the file."], 1, "commentary"),
			{ type: "response.output_item.added", output_index: 2, item: { id: "fc_tool_1", type: "function_call", status: "in_progress", arguments: "", call_id: "call_tool_1", name: "read" } },
			{ type: "response.function_call_arguments.delta", item_id: "fc_tool_1", output_index: 2, delta: '{"pa' },
			{ type: "response.function_call_arguments.delta", item_id: "fc_tool_1", output_index: 2, delta: 'th":"a.t' },
			{ type: "response.function_call_arguments.done", item_id: "fc_tool_1", output_index: 2, arguments: '{"path":"a.ts"}' },
			{ type: "response.output_item.done", output_index: 2, item: { id: "fc_tool_1", type: "function_call", status: "completed", arguments: '{"path":"a.ts"}', call_id: "call_tool_1", name: "read" } },
			{ type: "response.output_item.added", output_index: 3, item: { id: "fc_tool_2", type: "function_call", status: "in_progress", arguments: "", call_id: "call_tool_2", name: "bash" } },
			{ type: "response.function_call_arguments.done", item_id: "fc_tool_2", output_index: 3, arguments: '{"command":"ls -la"}' },
			{ type: "response.output_item.done", output_index: 3, item: { id: "fc_tool_2", type: "function_call", status: "completed", arguments: '{"command":"ls -la"}', call_id: "call_tool_2", name: "bash" } },
			// Served at priority: OpenAI and Codex bill it at twice the price.
			{ type: "response.completed", response: RESP("resp_tool_1", "completed", { usage: usage(5000, 4096, 800, 600), service_tier: "priority" }) },
		]),
	),
	// Raw reasoning text (open-weight models) and a refusal.
	reasoning_text_refusal: sse(
		seq([
			{ type: "response.created", response: RESP("resp_refusal_1") },
			{ type: "response.output_item.added", output_index: 0, item: { id: "rs_raw_1", type: "reasoning", summary: [] } },
			{ type: "response.reasoning_text.delta", item_id: "rs_raw_1", output_index: 0, content_index: 0, delta: "Thinking about " },
			{ type: "response.reasoning_text.delta", item_id: "rs_raw_1", output_index: 0, content_index: 0, delta: "it." },
			{ type: "response.output_item.done", output_index: 0, item: { id: "rs_raw_1", type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "Thinking about it." }] } },
			{ type: "response.output_item.added", output_index: 1, item: { id: "msg_refusal_1", type: "message", status: "in_progress", role: "assistant", content: [] } },
			{ type: "response.content_part.added", item_id: "msg_refusal_1", output_index: 1, content_index: 0, part: { type: "refusal", refusal: "" } },
			{ type: "response.refusal.delta", item_id: "msg_refusal_1", output_index: 1, content_index: 0, delta: "I can't " },
			{ type: "response.refusal.delta", item_id: "msg_refusal_1", output_index: 1, content_index: 0, delta: "help with that." },
			{ type: "response.refusal.done", item_id: "msg_refusal_1", output_index: 1, content_index: 0, refusal: "I can't help with that." },
			{ type: "response.output_item.done", output_index: 1, item: { id: "msg_refusal_1", type: "message", status: "completed", role: "assistant", content: [{ type: "refusal", refusal: "I can't help with that." }] } },
			{ type: "response.completed", response: RESP("resp_refusal_1", "completed", { usage: usage(100, 0, 20) }) },
		]),
	),
	// The response failed after some text.
	failed: sse(
		seq([
			{ type: "response.created", response: RESP("resp_failed_1") },
			...textEvents("msg_failed_1", ["Partial"], 0).slice(0, 3),
			{ type: "response.failed", response: RESP("resp_failed_1", "failed", { error: { code: "server_error", message: "The model produced invalid content." } }) },
		]),
	),
	// An error event in the stream.
	error_event: sse(
		seq([
			{ type: "response.created", response: RESP("resp_error_1") },
			{ type: "error", code: "context_length_exceeded", message: "Your input exceeds the context window of this model.", param: "input" },
		]),
	),
	// The output limit was reached (Codex maps response.incomplete to a completed response).
	incomplete: sse(
		seq([
			{ type: "response.created", response: RESP("resp_inc_1") },
			...textEvents("msg_inc_1", ["Cut sh"], 0),
			{ type: "response.incomplete", response: RESP("resp_inc_1", "incomplete", { incomplete_details: { reason: "max_output_tokens" }, usage: usage(300, 0, 16) }) },
		]),
	),
};

// Mistral: chat completion chunks as `data:` lines, `data: [DONE]` at the end.
const chunks = (list) => `${list.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}data: [DONE]\n\n`;
const mchunk = (id, delta, finish = null, extra = {}) => ({
	id,
	object: "chat.completion.chunk",
	created: 1760000000,
	model: "mistral-small-latest",
	choices: [{ index: 0, delta, finish_reason: finish }],
	...extra,
});
const MISTRAL = {
	text: chunks([
		mchunk("cmpl-text-1", { role: "assistant", content: "" }),
		mchunk("cmpl-text-1", { content: "Hel" }),
		mchunk("cmpl-text-1", { content: "lo, wörld 😀." }),
		mchunk("cmpl-text-1", { content: "" }, "stop", { usage: { prompt_tokens: 900, total_tokens: 930, completion_tokens: 30 } }),
	]),
	thinking_tool: chunks([
		mchunk("cmpl-tool-1", { role: "assistant", content: [{ type: "thinking", thinking: [{ type: "text", text: "The user wants " }] }] }),
		mchunk("cmpl-tool-1", { content: [{ type: "thinking", thinking: [{ type: "text", text: "a.ts." }] }] }),
		mchunk("cmpl-tool-1", { content: [{ type: "text", text: "Reading it." }] }),
		mchunk("cmpl-tool-1", { content: "" , tool_calls: [{ id: "D681PevKs", function: { name: "read", arguments: '{"path": "a.ts"}' }, index: 0 }] }),
		mchunk("cmpl-tool-1", { content: "", tool_calls: [{ id: "Xy7LmQ2zR", function: { name: "bash", arguments: '{"command": "ls"}' }, index: 1 }] }, "tool_calls", {
			usage: { prompt_tokens: 2000, total_tokens: 2100, completion_tokens: 100 },
		}),
	]),
	length: chunks([
		mchunk("cmpl-len-1", { role: "assistant", content: "Cut sh" }),
		mchunk("cmpl-len-1", { content: "" }, "length", { usage: { prompt_tokens: 50, total_tokens: 66, completion_tokens: 16 } }),
	]),
};

// ---------------------------------------------------------------------------------------------
// Contexts

const SYSTEM = "You are a coding agent. Answer briefly.";
const TOOLS = [
	{
		name: "read",
		description: "Read a file",
		parameters: { type: "object", properties: { path: { type: "string", description: "Path to the file" } }, required: ["path"] },
	},
	{
		name: "bash",
		description: "Run a shell command",
		parameters: { type: "object", properties: { command: { type: "string" }, timeout: { type: "number" } }, required: ["command"] },
	},
];
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const zeroUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
let clock = 1_760_000_000_000;
const ts = () => (clock += 1000);
const user = (content) => ({ role: "user", content, timestamp: ts() });
const assistant = (m, content, stopReason = "stop", extra = {}) => ({
	role: "assistant",
	content,
	api: m.api,
	provider: m.provider,
	model: m.id,
	usage: zeroUsage,
	stopReason,
	timestamp: ts(),
	...extra,
});
const result = (toolCallId, toolName, content, isError = false) => ({ role: "toolResult", toolCallId, toolName, content, isError, timestamp: ts() });
const text = (t, extra = {}) => ({ type: "text", text: t, ...extra });
const call = (id, name, args, extra = {}) => ({ type: "toolCall", id, name, arguments: args, ...extra });

const FOREIGN = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" };

// Ids of the target's own tool calls, as its API makes them.
const ownIds = (api) =>
	api === "mistral-conversations"
		? ["Ab12Cd34E", "Fg56Hi78J", "Kl90Mn12O"]
		: ["call_a1|fc_a1", "call_b2|fc_b2", "call_c3|fc_c3"];

// A reasoning item as a thinking signature (Responses) and its text.
const reasoningSig = (id, summary) => JSON.stringify({ type: "reasoning", id, encrypted_content: `gAAAA-${id}`, summary: [{ type: "summary_text", text: summary }] });

const CONTEXTS = {
	text: () => ({ systemPrompt: SYSTEM, messages: [user("Say hi.")] }),
	images: (m) => {
		const [a] = ownIds(m.api);
		return {
			systemPrompt: SYSTEM,
			tools: TOOLS,
			messages: [
				user([text("What is in this picture?"), { type: "image", data: PNG, mimeType: "image/png" }]),
				assistant(m, [text("Let me look at the other one."), call(a, "read", { path: "b.png" })], "toolUse"),
				result(a, "read", [text("Read image file [image/png]"), { type: "image", data: PNG, mimeType: "image/png" }]),
				result("orphan-result", "read", [{ type: "image", data: PNG, mimeType: "image/png" }]),
				user("Compare them."),
			],
		};
	},
	tools: (m) => {
		const [a, b] = ownIds(m.api);
		return {
			systemPrompt: SYSTEM,
			tools: TOOLS,
			messages: [
				user("Read a.ts and list the directory."),
				assistant(m, [text("Reading."), call(a, "read", { path: "a.ts" }), call(b, "bash", { command: "ls", timeout: 10 })], "toolUse"),
				result(a, "read", [text("export const a = 1;\n")]),
				result(b, "bash", [text("a.ts\nb.ts")], true),
				assistant(m, [text("Done: a.ts exports a.")]),
				user("Now run the tests."),
			],
		};
	},
	// Thinking on; the history has the target's own reasoning (signed), a message of another
	// provider with thinking and a tool call, and one of the same API but another model.
	thinking: (m) => {
		const [a] = ownIds(m.api);
		const responses = m.api !== "mistral-conversations";
		const own = responses
			? [
					{ type: "thinking", thinking: "Plan the answer.", thinkingSignature: reasoningSig("rs_own_1", "Plan the answer.") },
					{ type: "thinking", thinking: "", thinkingSignature: JSON.stringify({ type: "reasoning", id: "rs_own_2", encrypted_content: "gAAAA-empty", summary: [] }) },
					text("Here is the plan.", { textSignature: JSON.stringify({ v: 1, id: "msg_own_1", phase: "final_answer" }) }),
					text("And a legacy one.", { textSignature: "msg_legacy_2" }),
					text("And a long id.", { textSignature: `msg_${"x".repeat(70)}` }),
					call(a, "read", { path: "plan.md" }),
				]
			: [{ type: "thinking", thinking: "Plan the answer." }, text("Here is the plan."), call(a, "read", { path: "plan.md" })];
		const other = m.api === "mistral-conversations" ? "mistral-large-latest" : m.provider === "openai-codex" ? "gpt-5.2" : "gpt-4o";
		return {
			systemPrompt: SYSTEM,
			tools: TOOLS,
			messages: [
				user("Plan the work."),
				assistant(FOREIGN, [{ type: "thinking", thinking: "Anthropic thinking.", thinkingSignature: "sig-anthropic" }, { type: "thinking", thinking: "", redacted: true, thinkingSignature: "opaque" }, text("From Claude."), call("toolu_01ABCdef+/=", "bash", { command: "pwd" })], "toolUse"),
				result("toolu_01ABCdef+/=", "bash", [text("/work")]),
				assistant({ ...m, id: other }, [text("From another model."), call(responses ? "call_x9|fc_x9" : "Zz99Yy88X", "read", { path: "x" })], "toolUse"),
				result(responses ? "call_x9|fc_x9" : "Zz99Yy88X", "read", [text("x")]),
				assistant(m, own, "toolUse"),
				result(a, "read", [text("# Plan")]),
				user("Go on."),
			],
		};
	},
	// Many turns: failed and aborted answers (left out), a tool call that never got a result,
	// whitespace-only blocks, an empty user message.
	long: (m) => {
		const ids = ownIds(m.api);
		const msgs = [];
		for (let i = 0; i < 12; i++) {
			const id = i % 3 === 0 ? ids[0].replace(/a1/g, `t${i}`).replace("Ab12", `A${i % 10}b2`) : ids[(i % 2) + 1].replace(/2|3/, String(i % 10));
			msgs.push(user(`Step ${i}: do the thing number ${i}.`));
			if (i === 4) {
				msgs.push(assistant(m, [text("half an answer")], "error", { errorMessage: "500 boom" }));
				continue;
			}
			if (i === 7) {
				msgs.push(assistant(m, [text("cut")], "aborted"));
				continue;
			}
			msgs.push(assistant(m, [text(`Working on ${i}.`), text("   "), call(id, "bash", { command: `echo ${i}` })], "toolUse"));
			if (i !== 9) msgs.push(result(id, "bash", [text(`${i}`)]));
			msgs.push(assistant(m, [text(`Finished step ${i}.`)]));
		}
		msgs.push(user([]));
		msgs.push(user([text("Summarize everything.")]));
		return { systemPrompt: SYSTEM, tools: TOOLS, messages: msgs };
	},
};

// ---------------------------------------------------------------------------------------------
// Cases

function fakeJwt(accountId) {
	const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
	return `${b64({ alg: "none", typ: "JWT" })}.${b64({ "https://api.openai.com/auth": { chatgpt_account_id: accountId }, exp: 4102444800 })}.c2ln`;
}

const SESSION = "0198f3c2-7a4e-7b21-9d3e-5f6a7b8c9d0e";
const OPENAI_ERROR = JSON.stringify({ error: { message: "Your input exceeds the context window of this model. Please adjust your input and try again.", type: "invalid_request_error", param: "input", code: "context_length_exceeded" } });

const TARGETS = [
	{ api: "openai-responses", provider: "openai", id: "gpt-5-mini", apiKey: "sk-test-openai-0123456789", baseUrlPath: "/v1" },
	{ api: "openai-responses", provider: "openai", id: "gpt-4o", apiKey: "sk-test-openai-0123456789", baseUrlPath: "/v1", only: ["text", "images", "tools"] },
	{ api: "openai-responses", provider: "openai", id: "o3-mini", apiKey: "sk-test-openai-0123456789", baseUrlPath: "/v1", only: ["text", "images"] },
	{ api: "openai-responses", provider: "github-copilot", id: "gpt-5-mini", apiKey: "tid=copilot-token-0123456789;exp=1", baseUrlPath: "", only: ["text", "images", "tools"] },
	{ api: "azure-openai-responses", provider: "azure-openai-responses", id: "gpt-5.2", apiKey: "azure-key-0123456789abcdef", baseUrlPath: "/openai/v1" },
	{ api: "openai-codex-responses", provider: "openai-codex", id: "gpt-5.2-codex", apiKey: fakeJwt("acct-1234-abcd"), baseUrlPath: "/backend-api" },
	{ api: "mistral-conversations", provider: "mistral", id: "mistral-small-latest", apiKey: "mistral-key-0123456789", baseUrlPath: "" },
	{ api: "mistral-conversations", provider: "mistral", id: "magistral-medium-latest", apiKey: "mistral-key-0123456789", baseUrlPath: "", only: ["text", "thinking"] },
	{ api: "mistral-conversations", provider: "mistral", id: "devstral-medium-latest", apiKey: "mistral-key-0123456789", baseUrlPath: "", only: ["text", "images", "tools"] },
];

// [name, context, options, reply]; reply names a stream of the target's family, or an error.
const responsesCases = (t) => [
	["text", "text", { sessionId: SESSION }, "text"],
	["images", "images", { sessionId: SESSION }, "text"],
	["tools", "tools", { sessionId: SESSION, reasoning: "low" }, "reasoning_tool"],
	["thinking", "thinking", { sessionId: SESSION, reasoning: "high" }, "reasoning_tool"],
	["thinking-xhigh-long-retention", "thinking", { sessionId: SESSION, reasoning: "xhigh", cacheRetention: "long" }, "text"],
	["minimal-no-cache", "text", { sessionId: SESSION, reasoning: "minimal", cacheRetention: "none", temperature: 0.2 }, "text"],
	["long", "long", { sessionId: SESSION }, "text"],
	["no-session", "text", {}, "reasoning_text_refusal"],
	["failed", "text", { sessionId: SESSION }, "failed"],
	["error-event", "text", { sessionId: SESSION }, "error_event"],
	...(t.api === "openai-codex-responses" ? [["incomplete", "text", { sessionId: SESSION }, "incomplete"]] : []),
	["http-error", "text", { sessionId: SESSION, maxRetries: 0 }, { status: 400, body: OPENAI_ERROR }],
];
const mistralCases = () => [
	["text", "text", { sessionId: SESSION }, "text"],
	["images", "images", { sessionId: SESSION }, "text"],
	["tools", "tools", { sessionId: SESSION, reasoning: "medium" }, "thinking_tool"],
	["thinking", "thinking", { sessionId: SESSION, reasoning: "high", temperature: 0.3 }, "thinking_tool"],
	["long", "long", {}, "text"],
	["length", "text", { sessionId: SESSION }, "length"],
	["http-error", "text", { sessionId: SESSION }, { status: 400, body: JSON.stringify({ object: "error", message: "Prompt contains 140000 tokens, too large for model with 131072 maximum context length", type: "invalid_request_message_error", param: null, code: "3051" }) }],
];

const STREAMS = {
	...Object.fromEntries(Object.entries(RESPONSES).map(([k, v]) => [`responses/${k}`, v])),
	...Object.fromEntries(Object.entries(MISTRAL).map(([k, v]) => [`mistral/${k}`, v])),
};
const out = [];
for (const t of TARGETS) {
	const mistral = t.api === "mistral-conversations";
	const base = getModel(t.provider, t.id);
	if (!base) throw new Error(`no model ${t.provider}/${t.id}`);
	for (const [name, ctxName, options, replyName] of mistral ? mistralCases() : responsesCases(t)) {
		if (t.only && !t.only.includes(name)) continue;
		const env = {};
		const model = { ...base, baseUrl: `${origin}${t.baseUrlPath}` };
		if (t.api === "azure-openai-responses") {
			// Azure models have no base URL of their own: the resource's URL comes from the
			// environment (or models.json); deployments may be renamed.
			model.baseUrl = "";
			env.AZURE_OPENAI_BASE_URL = `${origin}${t.baseUrlPath}`;
			if (name === "tools") env.AZURE_OPENAI_DEPLOYMENT_NAME_MAP = "gpt-5.2=team-gpt52, other=x";
		}
		clock = 1_760_000_000_000;
		const context = CONTEXTS[ctxName](model);
		const stream = typeof replyName === "string" ? `${mistral ? "mistral" : "responses"}/${replyName}` : undefined;
		reply = stream ? { status: 200, body: STREAMS[stream] } : replyName;
		captured = null;
		const saved = {};
		for (const [k, v] of Object.entries(env)) {
			saved[k] = process.env[k];
			process.env[k] = v;
		}
		const events = [];
		let message;
		for await (const e of streamSimple(model, context, { apiKey: t.apiKey, transport: "sse", ...options })) {
			const ev = [e.type];
			if (e.contentIndex !== undefined) ev.push(e.contentIndex);
			if (e.delta !== undefined) ev.push(e.delta);
			events.push(ev);
			if (e.type === "done") message = e.message;
			if (e.type === "error") message = e.error;
		}
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
		if (!captured) throw new Error(`${t.provider}/${t.id} ${name}: no request arrived (${message?.errorMessage})`);
		const headers = Object.fromEntries(
			Object.entries(captured.headers)
				.filter(([k]) => !DROP.test(k))
				.sort(([a], [b]) => (a < b ? -1 : 1)),
		);
		out.push({
			name: `${t.provider}/${t.id}/${name}`,
			api: t.api,
			provider: t.provider,
			model: t.id,
			baseUrlPath: t.baseUrlPath,
			// The server's port changes from run to run: recorded as PORT.
			env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace(origin, "http://127.0.0.1:PORT")])),
			apiKey: t.apiKey,
			options,
			context,
			reply: stream ? { status: 200, stream } : reply,
			request: { method: captured.method, path: captured.path, headers, body: JSON.parse(captured.body) },
			message: { ...message, timestamp: 0 },
			events,
		});
		console.log(`${t.provider}/${t.id} ${name}: ${captured.method} ${captured.path} -> ${message.stopReason}${message.errorMessage ? ` (${message.errorMessage})` : ""}`);
	}
}
server.close();

const dir = join(repo, "tests", "fixtures", "providers");
mkdirSync(dir, { recursive: true });
const path = join(dir, "responses.golden.json");
const streams = Object.entries(STREAMS).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
writeFileSync(path, `{"streams": {\n${streams.join(",\n")}\n},\n"cases": [\n${out.map((c) => JSON.stringify(c)).join(",\n")}\n]}\n`);
console.log(`wrote ${path.slice(repo.length + 1)}: ${out.length} cases`);
