// Records the token totals ccusage 20 reads from each Claude Code and Codex CLI source file,
// the check of the usage `pi session import` attaches (tests/cli/session_import.rs), without
// Node or ccusage in the test suite.
//
//   npm install --prefix /tmp/ccusage20 ccusage@20.0.24     # the native binary it needs comes along
//   node scripts/goldens/ccusage20.mjs --ccusage /tmp/ccusage20 [--imports ../shared/imports]
//
// Each source (the hand-made files in tests/fixtures/import/ and every *.jsonl of the example
// fixtures in shared/imports/, which stay outside this repository) is put alone in a store of
// its agent (CLAUDE_CONFIG_DIR/projects/p/ or CODEX_HOME/sessions/) and read with
// `ccusage claude|codex daily --json --offline`. Recorded in
// tests/fixtures/import16/ccusage.golden.json, per source path (relative to its root): input
// (without cached tokens), output, cache read and cache write tokens of ccusage's totals.

import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const dir = opt("--ccusage");
if (!dir) throw new Error("--ccusage DIR (where ccusage@20 is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const imports = resolve(opt("--imports", join(repo, "..", "shared", "imports")));
const pkg = join(resolve(dir), "node_modules", "ccusage");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
const cli = join(pkg, "src", "cli.js");

function walk(d) {
	const out = [];
	for (const name of readdirSync(d).sort()) {
		const p = join(d, name);
		if (statSync(p).isDirectory()) out.push(...walk(p));
		else if (name.endsWith(".jsonl")) out.push(p);
	}
	return out;
}

const work = mkdtempSync(join(tmpdir(), "pi-ccusage20-"));
const roots = { own: join(repo, "tests", "fixtures", "import"), shared: imports };
const sources = {};
for (const [root, base] of Object.entries(roots)) {
	for (const src of walk(base)) {
		const rel = relative(base, src);
		const agent = rel.split("/")[0] === "codex" ? "codex" : "claude";
		rmSync(join(work, "store"), { recursive: true, force: true });
		const store = join(work, "store");
		const into = agent === "codex" ? join(store, "sessions") : join(store, "projects", "p");
		mkdirSync(into, { recursive: true });
		copyFileSync(src, join(into, basename(src)));
		const env = { ...process.env, HOME: work, CLAUDE_CONFIG_DIR: store, CODEX_HOME: store };
		let out;
		try {
			out = execFileSync(process.execPath, [cli, agent, "daily", "--json", "--offline"], { env, stdio: ["ignore", "pipe", "ignore"] }).toString();
		} catch {
			sources[`${root}/${rel}`] = { error: true };
			continue;
		}
		const t = JSON.parse(out).totals ?? {};
		sources[`${root}/${rel}`] = {
			input: t.inputTokens ?? 0,
			output: t.outputTokens ?? 0,
			cacheRead: t.cacheReadTokens ?? 0,
			cacheWrite: t.cacheCreationTokens ?? 0,
		};
	}
}
const outDir = join(repo, "tests", "fixtures", "import16");
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, "ccusage.golden.json"), `${JSON.stringify({ ccusage: version, sources }, null, 1)}\n`);
console.log(`${Object.keys(sources).length} sources read with ccusage ${version}`);
