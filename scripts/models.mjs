// Writes crates/pi-ai/src/models/builtin.jsonl: the reference's built-in model registry, reduced to what
// pi needs to build and measure a context (context window, output limit, input types,
// reasoning, API, base URL, compatibility flags). One model per line, in the reference's
// order (provider, then model id as listed by pi-ai).
//
// The reference is 1.6 (npm scope @earendil-works, Node >= 22.19); 0.73 (@mariozechner) still
// works, for comparisons (tests/fixtures/llm/models-0.73.json was made that way, see --models-json).
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0
//   node scripts/models.mjs --pi-dir /some/dir
//   node scripts/models.mjs --pi-dir /some/dir --models-json OUT   (the table as a models.json
//                                                                  of modelOverrides-free providers)
//
// To carry more of a model's definition (cost, headers, thinkingLevelMap…), add its key to
// KEYS below, regenerate, and read it in crates/pi-ai/src/models.rs (`Model::from_builtin`).

import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const i = args.indexOf("--pi-dir");
const piDir = i >= 0 ? args[i + 1] : process.env.PI_REFERENCE_DIR;
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const modules = join(resolve(piDir), "node_modules");
// 1.6 keeps the static catalogue reads in `compat.js`; 0.73 exports them from its index.
const candidates = [
	join(modules, "@earendil-works", "pi-ai", "dist", "compat.js"),
	join(modules, "@mariozechner", "pi-ai", "dist", "index.js"),
];
const ai = candidates.find((p) => existsSync(p));
if (!ai) throw new Error(`no pi-ai under ${modules} (@earendil-works or @mariozechner)`);
const { getProviders, getModels } = await import(pathToFileURL(ai).href);

const KEYS = ["provider", "id", "name", "api", "baseUrl", "reasoning", "thinkingLevelMap", "input", "cost", "contextWindow", "maxTokens", "headers", "compat"];
const lines = [];
for (const provider of getProviders()) {
	for (const m of getModels(provider)) {
		const rec = {};
		for (const k of KEYS) if (m[k] !== undefined) rec[k] = m[k];
		lines.push(JSON.stringify(rec));
	}
}
const j = args.indexOf("--models-json");
if (j >= 0) {
	// The same table as a models.json: each provider's models, in full, as custom models.
	const providers = {};
	for (const line of lines) {
		const { provider, ...model } = JSON.parse(line);
		(providers[provider] ??= { models: [] }).models.push(model);
	}
	writeFileSync(args[j + 1], `${JSON.stringify({ providers }, null, "\t")}\n`);
	console.log(`wrote ${lines.length} models to ${args[j + 1]}`);
} else {
	const out = join(repo, "crates", "pi-ai", "src", "models", "builtin.jsonl");
	writeFileSync(out, `${lines.join("\n")}\n`);
	console.log(`wrote ${lines.length} models to ${out.slice(repo.length + 1)}`);
}
