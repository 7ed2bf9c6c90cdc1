// Writes crates/pi-ai/src/models/builtin.jsonl: the reference's built-in model registry, reduced to what
// pi needs to build and measure a context (context window, output limit, input types,
// reasoning, API, base URL, compatibility flags). One model per line, in the reference's
// order (provider, then model id as listed by @mariozechner/pi-ai).
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   node scripts/models.mjs --pi-dir /some/dir
//
// To carry more of a model's definition (cost, headers, thinkingLevelMap…), add its key to
// KEYS below, regenerate, and read it in crates/pi-ai/src/models.rs (`Model::from_builtin`).

import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const i = args.indexOf("--pi-dir");
const piDir = i >= 0 ? args[i + 1] : process.env.PI_REFERENCE_DIR;
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ai = join(resolve(piDir), "node_modules", "@mariozechner", "pi-ai", "dist", "index.js");
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
const out = join(repo, "crates", "pi-ai", "src", "models", "builtin.jsonl");
writeFileSync(out, `${lines.join("\n")}\n`);
console.log(`wrote ${lines.length} models to ${out.slice(repo.length + 1)}`);
