// Records what the reference implementation (npm @mariozechner/pi-coding-agent 0.73.1, whose
// model layer is @mariozechner/pi-ai) sends to, and makes of the answers of, the Google
// Generative AI, Google Vertex and Amazon Bedrock Converse Stream APIs, so that
// tests/cli/llm_cloud.rs can check pi's requests and parsing against it without Node or the
// internet.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   node scripts/goldens/cloud.mjs --pi-dir /some/dir
//
// (PI_REFERENCE_DIR=/some/dir works instead of --pi-dir.) Needs Node 20 or newer.
//
// How: a capture server on 127.0.0.1 stands in for the providers. Every case points a built-in
// model's baseUrl at it, queues the replies (streams written after the providers' public
// documentation: Gemini's `streamGenerateContent?alt=sse` chunks, Bedrock's ConverseStream
// events in the binary AWS event-stream framing, encoded with the AWS SDK's own codec), calls
// the reference's streamSimple (or the provider's own stream function for options only it
// takes, such as a tool choice), and records the requests that arrived and the assistant
// message (and events) the reference's parser made of the replies.
//
// Determinism: the clock is fixed (Date, for the messages' timestamps, SigV4's x-amz-date and
// the Google service-account JWT), the AWS credentials are fixed (the AWS documentation's
// example keys), and the AWS SDK's telemetry headers (amz-sdk-invocation-id, amz-sdk-request,
// x-amz-user-agent), which carry random ids and versions, are dropped before the request is
// signed; everything else is signed as the SDK signs it. The Google token endpoint
// (https://oauth2.googleapis.com/token, fixed in google-auth-library) is redirected to the
// capture server. The service account's RSA key is a throwaway test key, generated once and
// kept in tests/fixtures/llm/cloud/service-account.json.
//
// Output: tests/fixtures/llm/cloud/{google,vertex,bedrock}.json:
//   {reference, now, cases: [{name, provider, model, baseUrl, env, context, options, direct,
//    replies: [{status, headers, body | bodyBase64}],
//    requests: [{method, path, headers: [[name, value], ...], body (JSON, text or base64)}],
//    message (timestamp left out), events: [[type, contentIndex, delta?], ...]}]}
// `baseUrl` is written with [SERVER] for the capture server's address; env values likewise.

import { createServer } from "node:http";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = argv.indexOf(name);
	return i >= 0 ? argv[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const nm = join(resolve(piDir), "node_modules");
const aiDir = join(nm, "@mariozechner", "pi-ai");
const ai = await import(pathToFileURL(join(aiDir, "dist", "index.js")).href);
const google = await import(pathToFileURL(join(aiDir, "dist", "providers", "google.js")).href);
const bedrock = await import(pathToFileURL(join(aiDir, "dist", "providers", "amazon-bedrock.js")).href);
const requireAi = createRequire(join(aiDir, "dist", "index.js"));
const { BedrockRuntimeClient } = requireAi("@aws-sdk/client-bedrock-runtime");
const gaxios = requireAi(requireAi.resolve("gaxios", { paths: [requireAi.resolve("google-auth-library")] }));
const smithyRequire = createRequire(requireAi.resolve("@aws-sdk/client-bedrock-runtime"));
const { EventStreamCodec } = smithyRequire("@smithy/core/event-streams");
const reference = JSON.parse(readFileSync(join(nm, "@mariozechner", "pi-coding-agent", "package.json"), "utf8")).version;

const outDir = join(repo, "tests", "fixtures", "llm", "cloud");
mkdirSync(outDir, { recursive: true });

// ---------------------------------------------------------------------------------------------
// A fixed clock.
const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
const RealDate = Date;
class FixedDate extends RealDate {
	constructor(...a) {
		if (a.length === 0) super(NOW);
		else super(...a);
	}
	static now() {
		return NOW;
	}
}
globalThis.Date = FixedDate;

// ---------------------------------------------------------------------------------------------
// The capture server.
const replies = [];
const received = [];
const server = createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks);
		const headers = [];
		for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i].toLowerCase(), req.rawHeaders[i + 1]]);
		received.push({ method: req.method, path: req.url, headers, body });
		const r = replies.shift() ?? { status: 599, headers: { "content-type": "application/json" }, body: Buffer.from('{"error":"no reply"}') };
		res.sendDate = false;
		res.writeHead(r.status, r.headers);
		res.end(r.body);
	});
});
// A fixed port: the Host header is signed (SigV4), so the recordings depend on it
// (tests/cli/llm_cloud.rs signs for the same address). --port changes it.
const PORT = Number(opt("--port", "40001"));
await new Promise((ok, fail) => server.once("error", fail).listen(PORT, "127.0.0.1", ok));
const SERVER = `http://127.0.0.1:${server.address().port}`;
const hide = (s) => (typeof s === "string" ? s.split(SERVER).join("[SERVER]") : s);

// Google's token endpoint goes to the capture server.
const origRequest = gaxios.Gaxios.prototype.request;
gaxios.Gaxios.prototype.request = function (opts = {}) {
	const u = String(opts.url ?? "");
	if (u.startsWith("https://oauth2.googleapis.com/token")) opts = { ...opts, url: `${SERVER}/token` };
	return origRequest.call(this, opts);
};

// The AWS SDK's telemetry headers go before signing.
const origSend = BedrockRuntimeClient.prototype.send;
BedrockRuntimeClient.prototype.send = function (...a) {
	if (!this.__piStrip) {
		this.__piStrip = true;
		this.middlewareStack.addRelativeTo(
			(next) => async (args) => {
				const h = args.request?.headers;
				if (h) for (const k of Object.keys(h)) if (["amz-sdk-invocation-id", "amz-sdk-request", "x-amz-user-agent"].includes(k.toLowerCase())) delete h[k];
				return next(args);
			},
			{ relation: "before", toMiddleware: "httpSigningMiddleware", name: "piStripTelemetry", override: true },
		);
	}
	return origSend.apply(this, a);
};

// ---------------------------------------------------------------------------------------------
// Replies.
const sse = (chunks) => ({
	status: 200,
	headers: { "content-type": "text/event-stream" },
	body: Buffer.from(chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join("")),
});
const jsonReply = (status, v, headers = {}) => ({
	status,
	headers: { "content-type": "application/json; charset=UTF-8", ...headers },
	body: Buffer.from(typeof v === "string" ? v : JSON.stringify(v)),
});
const codec = new EventStreamCodec(
	(b) => Buffer.from(b).toString("utf8"),
	(s) => new Uint8Array(Buffer.from(s, "utf8")),
);
const str = (value) => ({ type: "string", value });
const frame = (type, payload, kind = "event") =>
	Buffer.from(
		codec.encode({
			headers:
				kind === "event"
					? { ":event-type": str(type), ":content-type": str("application/json"), ":message-type": str("event") }
					: { ":exception-type": str(type), ":content-type": str("application/json"), ":message-type": str("exception") },
			body: new Uint8Array(Buffer.from(JSON.stringify(payload))),
		}),
	);
const eventStream = (events) => ({
	status: 200,
	headers: { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "4b2f1c1e-0000-4000-8000-000000000001" },
	body: Buffer.concat(events.map(([t, p, k]) => frame(t, p, k))),
});

// ---------------------------------------------------------------------------------------------
// Contexts (the reference's Message shapes, as a session replays them).
const PNG =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const zeroUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
let ts = NOW - 3_600_000;
const user = (content) => ({ role: "user", content, timestamp: (ts += 1000) });
const assistant = (m, content, stopReason = "stop", extra = {}) => ({
	role: "assistant",
	content,
	api: m.api,
	provider: m.provider,
	model: m.id,
	usage: zeroUsage,
	stopReason,
	timestamp: (ts += 1000),
	...extra,
});
const toolResult = (id, name, content, isError = false) => ({ role: "toolResult", toolCallId: id, toolName: name, content, isError, timestamp: (ts += 1000) });
const TOOLS = [
	{
		name: "read",
		description: "Read a file",
		parameters: { type: "object", properties: { path: { type: "string", description: "Path to the file" }, limit: { type: "number" } }, required: ["path"] },
	},
	{
		name: "bash",
		description: "Run a shell command",
		parameters: {
			$schema: "http://json-schema.org/draft-07/schema#",
			type: "object",
			properties: { command: { type: "string" }, timeout: { anyOf: [{ type: "number" }, { type: "null" }] } },
			required: ["command"],
			additionalProperties: false,
		},
	},
];
const OTHER = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" };

function contexts(m) {
	const sys = "You are a careful assistant. Answer briefly.";
	return {
		text: { systemPrompt: sys, messages: [user("Say hello in three words.")] },
		images: {
			systemPrompt: sys,
			messages: [
				user([
					{ type: "text", text: "What is in this picture?" },
					{ type: "image", data: PNG, mimeType: "image/png" },
				]),
			],
		},
		tools: {
			systemPrompt: sys,
			tools: TOOLS,
			messages: [
				user("List the files, then read both."),
				assistant(m, [
					{ type: "text", text: "Listing the files." },
					{ type: "toolCall", id: "call_1|fc_abc+/=", name: "bash", arguments: { command: "ls" } },
				], "toolUse"),
				toolResult("call_1|fc_abc+/=", "bash", [{ type: "text", text: "a.txt\nb.png" }]),
				assistant(m, [
					{ type: "toolCall", id: "call_2", name: "read", arguments: { path: "a.txt" } },
					{ type: "toolCall", id: "call_3", name: "read", arguments: { path: "b.png" } },
					{ type: "toolCall", id: "call_4", name: "read", arguments: { path: "missing.txt" } },
				], "toolUse"),
				toolResult("call_2", "read", [{ type: "text", text: "hello é 😀" }]),
				toolResult("call_3", "read", [
					{ type: "text", text: "Read image file [image/png]" },
					{ type: "image", data: PNG, mimeType: "image/png" },
				]),
				toolResult("call_4", "read", [{ type: "text", text: "ENOENT: no such file" }], true),
				user("Thanks. Now summarize."),
			],
		},
		thinking: {
			systemPrompt: sys,
			tools: TOOLS,
			messages: [
				user("What is 17 * 23?"),
				assistant(OTHER, [
					{ type: "thinking", thinking: "Another model's thoughts.", thinkingSignature: "EqQBCkYIBxgCKkD" },
					{ type: "text", text: "It is 391." },
				]),
				user("And check it with a tool."),
				assistant(m, [
					{ type: "thinking", thinking: "I should verify with bash.", thinkingSignature: "c2lnbmF0dXJlLTE=" },
					{ type: "text", text: "Checking.", textSignature: "dGV4dC1zaWc=" },
					{ type: "toolCall", id: "call_9", name: "bash", arguments: { command: "echo $((17*23))" }, thoughtSignature: "dG9vbC1zaWc=" },
				], "toolUse"),
				toolResult("call_9", "bash", [{ type: "text", text: "391" }]),
				assistant(m, [{ type: "thinking", thinking: "   " }, { type: "text", text: "" }, { type: "thinking", thinking: "No signature here." }]),
				user("Good. Think about 19 * 21."),
			],
		},
		long: {
			systemPrompt: sys,
			messages: (() => {
				const out = [];
				for (let i = 0; i < 12; i++) {
					out.push(user(`Question ${i}: what comes after ${i}?`));
					if (i === 4) out.push(assistant(m, [{ type: "text", text: "partial" }], "aborted"));
					else if (i === 7) out.push(assistant(m, [], "error", { errorMessage: "boom" }));
					else out.push(assistant(m, [{ type: "text", text: `${i + 1}, and then ${i + 2}.` }]));
				}
				out.push(user([{ type: "text", text: "Last one: what comes after 12?" }, { type: "text", text: "  " }]));
				return out;
			})(),
		},
	};
}

// ---------------------------------------------------------------------------------------------
// Provider streams (after the public documentation of each API).
const G = {
	text: (model) =>
		sse([
			{ candidates: [{ content: { parts: [{ text: "Hello" }], role: "model" }, index: 0 }], usageMetadata: { promptTokenCount: 21, totalTokenCount: 21 }, modelVersion: model, responseId: "resp-text-1" },
			{ candidates: [{ content: { parts: [{ text: " there, friend." }], role: "model" }, index: 0 }], usageMetadata: { promptTokenCount: 21, totalTokenCount: 21 }, modelVersion: model, responseId: "resp-text-1" },
			{
				candidates: [{ content: { parts: [{ text: "" }], role: "model" }, finishReason: "STOP", index: 0 }],
				usageMetadata: { promptTokenCount: 21, candidatesTokenCount: 4, totalTokenCount: 25, promptTokensDetails: [{ modality: "TEXT", tokenCount: 21 }] },
				modelVersion: model,
				responseId: "resp-text-1",
			},
		]),
	thinkingTool: (model) =>
		sse([
			{ candidates: [{ content: { parts: [{ text: "**Planning**\n\nI need", thought: true }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-tool-1" },
			{ candidates: [{ content: { parts: [{ text: " to read the file.", thought: true, thoughtSignature: "Q2lRQmpZSGR0aG91Z2h0" }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-tool-1" },
			{ candidates: [{ content: { parts: [{ text: "Reading " }, { text: "it now." }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-tool-1" },
			{
				candidates: [
					{
						content: {
							parts: [
								{ functionCall: { name: "read", args: { path: "a.txt", limit: 10 } }, thoughtSignature: "Q2lRQmZ1bmNjYWxs" },
								{ functionCall: { id: "fc-2", name: "bash", args: { command: "ls -la" } } },
							],
							role: "model",
						},
						finishReason: "STOP",
						index: 0,
					},
				],
				usageMetadata: { promptTokenCount: 1200, candidatesTokenCount: 40, thoughtsTokenCount: 25, cachedContentTokenCount: 1000, totalTokenCount: 1265 },
				modelVersion: model,
				responseId: "resp-tool-1",
			},
		]),
	textSignature: (model) =>
		sse([
			{ candidates: [{ content: { parts: [{ text: "Thinking quietly.", thought: true }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-sig-1" },
			{ candidates: [{ content: { parts: [{ text: "The answer " }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-sig-1" },
			{ candidates: [{ content: { parts: [{ text: "is 399.", thoughtSignature: "dGV4dHNpZ25hdHVyZQ==" }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-sig-1" },
			{ candidates: [{ content: { parts: [{ text: "" }], role: "model" }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 300, candidatesTokenCount: 5, thoughtsTokenCount: 12, totalTokenCount: 317 }, modelVersion: model, responseId: "resp-sig-1" },
		]),
	maxTokens: (model) =>
		sse([
			{ candidates: [{ content: { parts: [{ text: "This answer is cut" }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-len-1" },
			{ candidates: [{ content: { parts: [{ text: " off" }], role: "model" }, finishReason: "MAX_TOKENS", index: 0 }], usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 8, totalTokenCount: 58 }, modelVersion: model, responseId: "resp-len-1" },
		]),
	safety: (model) =>
		sse([
			{ candidates: [{ content: { parts: [{ text: "I can" }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-safety-1" },
			{ candidates: [{ finishReason: "SAFETY", index: 0, safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH", blocked: true }] }], usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 2, totalTokenCount: 52 }, modelVersion: model, responseId: "resp-safety-1" },
		]),
	overflow: () =>
		jsonReply(400, {
			error: { code: 400, message: "The input token count (1250000) exceeds the maximum number of tokens allowed (1048576).", status: "INVALID_ARGUMENT" },
		}),
	denied: () =>
		jsonReply(403, {
			error: { code: 403, message: "Permission denied: Consumer 'api_key:AIzaSyTESTKEY0123456789' has been suspended.", status: "PERMISSION_DENIED", details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "CONSUMER_SUSPENDED" }] },
		}),
	plainError: () => ({ status: 502, headers: { "content-type": "text/html" }, body: Buffer.from("<html><body>Bad Gateway</body></html>") }),
	errorChunk: (model) =>
		sse([
			{ candidates: [{ content: { parts: [{ text: "Partial" }], role: "model" }, index: 0 }], modelVersion: model, responseId: "resp-err-1" },
			{ error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } },
		]),
	promptBlocked: (model) => sse([{ promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, modelVersion: model, responseId: "resp-blocked-1" }]),
};

const B = {
	text: () =>
		eventStream([
			["messageStart", { p: "abcdefgh", role: "assistant" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hello" }, p: "abcdefghijk" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { text: " there, é 😀." }, p: "abc" }],
			["contentBlockStop", { contentBlockIndex: 0, p: "abcdefghijklmn" }],
			["messageStop", { p: "abcd", stopReason: "end_turn" }],
			["metadata", { metrics: { latencyMs: 512 }, p: "ab", usage: { inputTokens: 25, outputTokens: 6, totalTokens: 31 } }],
		]),
	thinkingTool: () =>
		eventStream([
			["messageStart", { p: "abcdefgh", role: "assistant" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text: "The user wants " } }, p: "a" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text: "a.txt read." } }, p: "a" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { signature: "EqoBCkgIARABGAIiQL" } }, p: "a" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { signature: "more-signature" } }, p: "a" }],
			["contentBlockStop", { contentBlockIndex: 0, p: "abc" }],
			["contentBlockDelta", { contentBlockIndex: 1, delta: { text: "Reading it." }, p: "abc" }],
			["contentBlockStop", { contentBlockIndex: 1, p: "abc" }],
			["contentBlockStart", { contentBlockIndex: 2, start: { toolUse: { name: "read", toolUseId: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q" } }, p: "abc" }],
			["contentBlockDelta", { contentBlockIndex: 2, delta: { toolUse: { input: "" } }, p: "abc" }],
			["contentBlockDelta", { contentBlockIndex: 2, delta: { toolUse: { input: '{"path": "a' } }, p: "abc" }],
			["contentBlockDelta", { contentBlockIndex: 2, delta: { toolUse: { input: '.txt", "limit": 5}' } }, p: "abc" }],
			["contentBlockStop", { contentBlockIndex: 2, p: "abc" }],
			["contentBlockStart", { contentBlockIndex: 3, start: { toolUse: { name: "bash", toolUseId: "tooluse_2" } }, p: "abc" }],
			["contentBlockDelta", { contentBlockIndex: 3, delta: { toolUse: { input: '{"command":"ls"}' } }, p: "abc" }],
			["contentBlockStop", { contentBlockIndex: 3, p: "abc" }],
			["messageStop", { p: "abcd", stopReason: "tool_use" }],
			["metadata", { metrics: { latencyMs: 900 }, p: "ab", usage: { inputTokens: 30, outputTokens: 120, totalTokens: 2150, cacheReadInputTokens: 1500, cacheWriteInputTokens: 500 } }],
		]),
	maxTokens: () =>
		eventStream([
			["messageStart", { role: "assistant" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { text: "This is cut" } }],
			["contentBlockStop", { contentBlockIndex: 0 }],
			["messageStop", { stopReason: "max_tokens" }],
			["metadata", { metrics: { latencyMs: 10 }, usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 } }],
		]),
	windowExceeded: () =>
		eventStream([
			["messageStart", { role: "assistant" }],
			["messageStop", { stopReason: "model_context_window_exceeded" }],
			["metadata", { metrics: { latencyMs: 10 }, usage: { inputTokens: 200000, outputTokens: 0, totalTokens: 200000 } }],
		]),
	guardrail: () =>
		eventStream([
			["messageStart", { role: "assistant" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Sorry" } }],
			["contentBlockStop", { contentBlockIndex: 0 }],
			["messageStop", { stopReason: "guardrail_intervened" }],
			["metadata", { metrics: { latencyMs: 10 }, usage: { inputTokens: 10, outputTokens: 1, totalTokens: 11 } }],
		]),
	throttledMidway: () =>
		eventStream([
			["messageStart", { role: "assistant" }],
			["contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Half an answer" } }],
			["throttlingException", { message: "Too many tokens, please wait before trying again." }, "exception"],
		]),
	streamValidation: () =>
		eventStream([
			["messageStart", { role: "assistant" }],
			["validationException", { message: "Input is too long for requested model." }, "exception"],
		]),
	overflow: () =>
		jsonReply(400, { message: "The model returned the following errors: prompt is too long: 230000 tokens > 200000 maximum" }, {
			"x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
			"x-amzn-requestid": "4b2f1c1e-0000-4000-8000-000000000002",
		}),
	denied: () =>
		jsonReply(403, { message: "You don't have access to the model with the specified model ID." }, {
			"x-amzn-errortype": "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/",
			"x-amzn-requestid": "4b2f1c1e-0000-4000-8000-000000000003",
		}),
	throttled: () =>
		jsonReply(429, { message: "Too many requests, please wait before trying again." }, {
			"x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
		}),
	unknown: () => ({ status: 500, headers: { "content-type": "text/plain" }, body: Buffer.from("upstream connect error") }),
	badSignature: () =>
		jsonReply(403, { message: "The request signature we calculated does not match the signature you provided." }, {
			"x-amzn-errortype": "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/",
		}),
};

// ---------------------------------------------------------------------------------------------
// Running one case.
const ENV_KEYS = [
	"GEMINI_API_KEY",
	"GOOGLE_CLOUD_API_KEY",
	"GOOGLE_APPLICATION_CREDENTIALS",
	"GOOGLE_CLOUD_PROJECT",
	"GCLOUD_PROJECT",
	"GOOGLE_CLOUD_LOCATION",
	"AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN",
	"AWS_PROFILE",
	"AWS_REGION",
	"AWS_DEFAULT_REGION",
	"AWS_BEARER_TOKEN_BEDROCK",
	"AWS_CONFIG_FILE",
	"AWS_SHARED_CREDENTIALS_FILE",
	"AWS_BEDROCK_SKIP_AUTH",
	"PI_CACHE_RETENTION",
];
const work = mkdtempSync(join(tmpdir(), "pi-cloud-goldens-"));
const baseEnv = {
	AWS_CONFIG_FILE: join(work, "no-aws-config"),
	AWS_SHARED_CREDENTIALS_FILE: join(work, "no-aws-credentials"),
	AWS_EC2_METADATA_DISABLED: "true",
	AWS_BEDROCK_FORCE_HTTP1: "1",
	HOME: work,
};

function bodyOf(buf, headers) {
	const ct = headers.find(([k]) => k === "content-type")?.[1] ?? "";
	const text = buf.toString("utf8");
	if (ct.includes("json")) {
		try {
			return { json: JSON.parse(text) };
		} catch {}
	}
	if (Buffer.from(text, "utf8").equals(buf)) return { text: hide(text) };
	return { base64: buf.toString("base64") };
}

async function run(c) {
	const model = { ...ai.getModel(c.provider, c.model) };
	if (!model.id) throw new Error(`no model ${c.provider}/${c.model}`);
	model.baseUrl = c.baseUrl.replace("[SERVER]", SERVER);
	for (const k of ENV_KEYS) delete process.env[k];
	Object.assign(process.env, baseEnv);
	for (const [k, v] of Object.entries(c.env ?? {})) process.env[k] = v.replace("[SERVER]", SERVER).replace("[WORK]", work);
	for (const [name, text] of Object.entries(c.files ?? {})) writeFileSync(join(work, name), text);
	replies.length = 0;
	received.length = 0;
	replies.push(...c.replies);
	const events = [];
	const options = { ...c.options };
	let s;
	if (c.direct === "google") s = google.streamGoogle(model, c.context, options);
	else if (c.direct === "bedrock") s = bedrock.streamBedrock(model, c.context, options);
	else s = ai.streamSimple(model, c.context, options);
	for await (const e of s) {
		const ev = [e.type];
		if (e.contentIndex !== undefined) ev.push(e.contentIndex);
		if (e.delta !== undefined) ev.push(e.delta);
		events.push(ev);
	}
	const message = await s.result();
	delete message.timestamp;
	return {
		name: c.name,
		provider: c.provider,
		model: c.model,
		baseUrl: c.baseUrl,
		env: c.env ?? {},
		...(c.files && { files: c.files }),
		context: c.context,
		options: c.options,
		...(c.direct && { direct: c.direct }),
		replies: c.replies.map((r) => {
			const ct = String(r.headers["content-type"] ?? "");
			const out = { status: r.status, headers: r.headers };
			if (ct.includes("eventstream")) out.bodyBase64 = r.body.toString("base64");
			else out.body = r.body.toString("utf8");
			return out;
		}),
		requests: received.map((r) => ({
			method: r.method,
			path: r.path,
			headers: r.headers.map(([k, v]) => [k, hide(v)]),
			body: bodyOf(r.body, r.headers),
		})),
		message: JSON.parse(hide(JSON.stringify(message))),
		events,
	};
}

async function record(file, cases) {
	const out = [];
	for (const c of cases) {
		const r = await run(c);
		out.push(r);
		console.log(`${file}: ${c.name}: ${r.requests.length} request(s), ${r.message.stopReason}${r.message.errorMessage ? ` (${r.message.errorMessage.slice(0, 80)})` : ""}`);
	}
	const path = join(outDir, `${file}.json`);
	writeFileSync(path, `${JSON.stringify({ reference, now: new RealDate(NOW).toISOString(), cases: out }, null, 1)}\n`);
	console.log(`wrote ${path.slice(repo.length + 1)}`);
}

// ---------------------------------------------------------------------------------------------
// Google Generative AI.
const gm = (id) => ({ ...ai.getModel("google", id) });
{
	const flash = gm("gemini-2.5-flash");
	const pro3 = gm("gemini-3-pro-preview");
	const cx = contexts(flash);
	const cx3 = contexts(pro3);
	const KEY = { GEMINI_API_KEY: "AIzaSyTESTKEY0123456789" };
	const base = { provider: "google", baseUrl: "[SERVER]/v1beta", env: KEY };
	await record("google", [
		{ ...base, name: "text", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.text("gemini-2.5-flash")] },
		{ ...base, name: "text-no-thinking-model", model: "gemini-2.0-flash", context: cx.text, options: { temperature: 0.3, maxTokens: 500 }, replies: [G.text("gemini-2.0-flash")] },
		{ ...base, name: "images", model: "gemini-2.5-flash", context: cx.images, options: { reasoning: "low" }, replies: [G.text("gemini-2.5-flash")] },
		{ ...base, name: "tools", model: "gemini-2.5-flash", context: cx.tools, options: { reasoning: "medium" }, replies: [G.thinkingTool("gemini-2.5-flash")] },
		{ ...base, name: "tools-gemini-2", model: "gemini-2.0-flash", context: contexts(gm("gemini-2.0-flash")).tools, options: {}, replies: [G.text("gemini-2.0-flash")] },
		{ ...base, name: "thinking-budget", model: "gemini-2.5-flash", context: cx.thinking, options: { reasoning: "high", thinkingBudgets: { high: 12000 } }, replies: [G.textSignature("gemini-2.5-flash")] },
		{ ...base, name: "thinking-level", model: "gemini-3-pro-preview", context: cx3.thinking, options: { reasoning: "medium" }, replies: [G.textSignature("gemini-3-pro-preview")] },
		{ ...base, name: "thinking-off-gemini-3", model: "gemini-3-pro-preview", context: cx3.text, options: {}, replies: [G.text("gemini-3-pro-preview")] },
		{ ...base, name: "thinking-minimal-flash-3", model: "gemini-3-flash-preview", context: contexts(gm("gemini-3-flash-preview")).text, options: { reasoning: "minimal" }, replies: [G.text("gemini-3-flash-preview")] },
		{ ...base, name: "thinking-gemma-4", model: "gemma-4-31b-it", context: contexts(gm("gemma-4-31b-it")).text, options: { reasoning: "low" }, replies: [G.text("gemma-4-31b-it")] },
		{ ...base, name: "long", model: "gemini-2.5-flash", context: cx.long, options: { reasoning: "xhigh" }, replies: [G.text("gemini-2.5-flash")] },
		{ ...base, name: "tool-choice", model: "gemini-2.5-flash", direct: "google", context: cx.tools, options: { toolChoice: "any", maxTokens: 1000 }, replies: [G.thinkingTool("gemini-2.5-flash")] },
		{ ...base, name: "max-tokens", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.maxTokens("gemini-2.5-flash")] },
		{ ...base, name: "safety", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.safety("gemini-2.5-flash")] },
		{ ...base, name: "overflow", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.overflow()] },
		{ ...base, name: "denied", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.denied()] },
		{ ...base, name: "bad-gateway", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.plainError()] },
		{ ...base, name: "stream-error-chunk", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.errorChunk("gemini-2.5-flash")] },
		{ ...base, name: "prompt-blocked", model: "gemini-2.5-flash", context: cx.text, options: {}, replies: [G.promptBlocked("gemini-2.5-flash")] },
		{ ...base, name: "headers", model: "gemini-2.5-flash", context: cx.text, options: { headers: { "X-Custom": "yes" }, apiKey: "AIzaSyOPTIONKEY987654" }, replies: [G.text("gemini-2.5-flash")] },
	]);
}

// ---------------------------------------------------------------------------------------------
// Google Vertex.
const SA_FILE = join(outDir, "service-account.json");
if (!existsSync(SA_FILE)) {
	const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
	const sa = {
		type: "service_account",
		project_id: "pi-test-project",
		private_key_id: "0123456789abcdef0123456789abcdef01234567",
		private_key: privateKey,
		client_email: "pi-test@pi-test-project.iam.gserviceaccount.com",
		client_id: "100000000000000000001",
		auth_uri: "https://accounts.google.com/o/oauth2/auth",
		token_uri: "https://oauth2.googleapis.com/token",
		universe_domain: "googleapis.com",
		_comment: "A throwaway key made for pi's tests by scripts/goldens/cloud.mjs; it opens nothing.",
	};
	writeFileSync(SA_FILE, `${JSON.stringify(sa, null, 1)}\n`);
}
{
	const vm = (id) => ({ ...ai.getModel("google-vertex", id) });
	const pro = vm("gemini-2.5-pro");
	const cx = contexts(pro);
	const token = (t) => jsonReply(200, { access_token: t, expires_in: 3599, token_type: "Bearer" });
	const adc = {
		GOOGLE_APPLICATION_CREDENTIALS: "[WORK]/sa.json",
		GOOGLE_CLOUD_PROJECT: "pi-test-project",
		GOOGLE_CLOUD_LOCATION: "us-central1",
	};
	const sa = readFileSync(SA_FILE, "utf8");
	const user = JSON.stringify({ type: "authorized_user", client_id: "764086051850-test.apps.googleusercontent.com", client_secret: "d-FL95Q19q7MQmFpd7hHD0Ty", refresh_token: "1//0test-refresh-token", quota_project_id: "pi-quota-project" });
	const base = { provider: "google-vertex", model: "gemini-2.5-pro" };
	await record("vertex", [
		{ ...base, name: "api-key", baseUrl: "[SERVER]", env: { GOOGLE_CLOUD_API_KEY: "AQ.TESTVERTEXKEY0123456789" }, context: cx.text, options: {}, replies: [G.text("gemini-2.5-pro")] },
		{ ...base, name: "api-key-versioned-base", baseUrl: "[SERVER]/v1beta1", env: { GOOGLE_CLOUD_API_KEY: "AQ.TESTVERTEXKEY0123456789" }, context: cx.tools, options: { reasoning: "medium" }, replies: [G.thinkingTool("gemini-2.5-pro")] },
		{ ...base, name: "service-account", baseUrl: "[SERVER]", env: adc, files: { "sa.json": sa }, context: cx.thinking, options: { reasoning: "low" }, replies: [token("ya29.test-access-token-sa"), G.textSignature("gemini-2.5-pro")] },
		{ ...base, name: "authorized-user", baseUrl: "[SERVER]", env: { ...adc, GOOGLE_CLOUD_LOCATION: "global" }, files: { "sa.json": user }, context: cx.images, options: {}, replies: [token("ya29.test-access-token-user"), G.text("gemini-2.5-pro")] },
		{ ...base, name: "token-refused", baseUrl: "[SERVER]", env: adc, files: { "sa.json": sa }, context: cx.text, options: {}, replies: [jsonReply(400, { error: "invalid_grant", error_description: "Invalid JWT Signature." })] },
		{ ...base, name: "overflow", baseUrl: "[SERVER]", env: { GOOGLE_CLOUD_API_KEY: "AQ.TESTVERTEXKEY0123456789" }, context: cx.text, options: {}, replies: [G.overflow()] },
		{ ...base, name: "gemini-3-level", model: "gemini-3-pro-preview", baseUrl: "[SERVER]", env: { GOOGLE_CLOUD_API_KEY: "AQ.TESTVERTEXKEY0123456789" }, context: contexts(vm("gemini-3-pro-preview")).long, options: { reasoning: "minimal" }, replies: [G.text("gemini-3-pro-preview")] },
	]);
}

// ---------------------------------------------------------------------------------------------
// Amazon Bedrock.
{
	const bm = (id) => ({ ...ai.getModel("amazon-bedrock", id) });
	const sonnet = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
	const cx = contexts(bm(sonnet));
	const KEYS = { AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
	const base = { provider: "amazon-bedrock", model: sonnet, baseUrl: "[SERVER]", env: KEYS };
	const credentials = "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n[work]\naws_access_key_id = AKIDWORKPROFILE\naws_secret_access_key = work/secret+key\naws_session_token = work-session-token\n";
	const config = "[default]\nregion = us-east-2\n\n[profile work]\nregion = eu-central-1\n";
	await record("bedrock", [
		{ ...base, name: "text", context: cx.text, options: {}, replies: [B.text()] },
		{ ...base, name: "text-nova", model: "amazon.nova-pro-v1:0", context: contexts(bm("amazon.nova-pro-v1:0")).text, options: { temperature: 0.2 }, replies: [B.text()] },
		{ ...base, name: "images", context: cx.images, options: {}, replies: [B.text()] },
		{ ...base, name: "tools", context: cx.tools, options: { reasoning: "medium" }, replies: [B.thinkingTool()] },
		{ ...base, name: "thinking-budget", context: cx.thinking, options: { reasoning: "high", thinkingBudgets: { high: 20000 }, maxTokens: 8000 }, replies: [B.thinkingTool()] },
		{ ...base, name: "thinking-adaptive", model: "us.anthropic.claude-opus-4-6-v1", context: contexts(bm("us.anthropic.claude-opus-4-6-v1")).thinking, options: { reasoning: "xhigh" }, replies: [B.text()] },
		{ ...base, name: "thinking-other-model", model: "deepseek.r1-v1:0", context: contexts(bm("deepseek.r1-v1:0")).thinking, options: { reasoning: "medium" }, replies: [B.text()] },
		{ ...base, name: "long-cache-long", context: cx.long, options: { cacheRetention: "long" }, replies: [B.text()] },
		{ ...base, name: "no-cache", context: cx.tools, options: { cacheRetention: "none" }, replies: [B.text()] },
		{ ...base, name: "tool-choice", direct: "bedrock", context: cx.tools, options: { toolChoice: { type: "tool", name: "read" }, maxTokens: 1000 }, replies: [B.thinkingTool()] },
		{ ...base, name: "session-token-region", env: { ...KEYS, AWS_SESSION_TOKEN: "IQoJb3JpZ2luX2VjEXAMPLE//token", AWS_REGION: "us-west-2" }, context: cx.text, options: {}, replies: [B.text()] },
		{
			...base,
			name: "profile",
			env: { AWS_PROFILE: "work", AWS_SHARED_CREDENTIALS_FILE: "[WORK]/credentials", AWS_CONFIG_FILE: "[WORK]/config" },
			files: { credentials, config },
			context: cx.text,
			options: {},
			replies: [B.text()],
		},
		{ ...base, name: "bearer-token", env: { AWS_BEARER_TOKEN_BEDROCK: "ABSKQmVkcm9ja0FQSUtleS1test" }, context: cx.text, options: {}, replies: [B.text()] },
		{ ...base, name: "max-tokens", context: cx.text, options: {}, replies: [B.maxTokens()] },
		{ ...base, name: "window-exceeded", context: cx.text, options: {}, replies: [B.windowExceeded()] },
		{ ...base, name: "guardrail", context: cx.text, options: {}, replies: [B.guardrail()] },
		{ ...base, name: "throttled-midway", context: cx.text, options: {}, replies: [B.throttledMidway()] },
		{ ...base, name: "stream-validation", context: cx.text, options: {}, replies: [B.streamValidation()] },
		{ ...base, name: "overflow", context: cx.text, options: {}, replies: [B.overflow()] },
		{ ...base, name: "denied", context: cx.text, options: {}, replies: [B.denied()] },
		{ ...base, name: "throttled-then-ok", context: cx.text, options: {}, replies: [B.throttled(), B.text()] },
		{ ...base, name: "unknown-error", context: cx.text, options: {}, replies: [B.unknown(), B.unknown(), B.unknown()] },
		{ ...base, name: "bad-signature", context: cx.text, options: {}, replies: [B.badSignature()] },
	]);
}

server.close();
