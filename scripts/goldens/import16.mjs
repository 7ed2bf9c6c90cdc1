// Records what the reference 1.6.0 (npm @earendil-works/pi-coding-agent) builds from sessions
// that `pi session import` wrote, so that the test suite can check, without Node, that the
// reference opens every imported session and builds the same context as `pi context build`.
//
//   npm install --prefix /some/dir @earendil-works/pi-coding-agent@1.6.0   # Node >= 22.19
//   cargo build && node scripts/goldens/import16.mjs --pi-dir /some/dir [--pi target/debug/pi]
//       [--imports ../shared/imports]
//
// For every source (the hand-made files in tests/fixtures/import/ and every *.jsonl of the
// example fixtures in shared/imports/, which stay outside this repository), pi imports it
// with `-o FILE`; 1.6's SessionManager.open reads the file (the leaf, the number of entries
// it kept) and buildSessionContext + convertToLlm build the context of its leaf. Recorded in
// tests/fixtures/import16/context.golden.json, per source path (relative to its root): the
// entries 1.6 read, its leaf id, and the agent and llm forms as a count and FNV-1a hashes of
// the JSON lines (pi's `context build` writes them in the same form).

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @earendil-works/pi-coding-agent 1.6 is installed) is required");
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pi = resolve(opt("--pi", join(repo, "target", "debug", "pi")));
const imports = resolve(opt("--imports", join(repo, "..", "shared", "imports")));
const pkg = join(resolve(piDir), "node_modules", "@earendil-works", "pi-coding-agent");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
const { SessionManager, buildSessionContext, convertToLlm } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

function fnv64(text) {
	let h = 0xcbf29ce484222325n;
	for (const b of Buffer.from(text, "utf8")) {
		h ^= BigInt(b);
		h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
	}
	return h.toString(16).padStart(16, "0");
}
const hash = (lines) => ({ n: lines.length, hash: fnv64(lines.join("\n")) });

function walk(dir) {
	const out = [];
	for (const name of readdirSync(dir).sort()) {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) out.push(...walk(p));
		else if (name.endsWith(".jsonl")) out.push(p);
	}
	return out;
}

// What 1.6 reads from the session file `out`: its entries, leaf and context.
function record(out, text = readFileSync(out, "utf8")) {
	const sm = SessionManager.open(out);
	const entries = sm.getEntries();
	const leaf = sm.getLeafId();
	const ctx = buildSessionContext(entries, leaf ?? undefined);
	const agent = ctx.messages.map((m) => JSON.stringify(m));
	const llm = convertToLlm(ctx.messages).map((m) => JSON.stringify(m));
	return {
		lines: text.trimEnd().split("\n").length - 1,
		entries: entries.length,
		leaf,
		agent: hash(agent),
		llm: hash(llm),
	};
}

const work = mkdtempSync(join(tmpdir(), "pi-import16-"));
const env = { ...process.env, HOME: work, PI_CODING_AGENT_DIR: join(work, "agent") };
const roots = { own: join(repo, "tests", "fixtures", "import"), shared: imports };
const sources = {};
let n = 0;
for (const [root, dir] of Object.entries(roots)) {
	for (const src of walk(dir)) {
		const out = join(work, `${n++}.jsonl`);
		try {
			execFileSync(pi, ["session", "import", src, "-o", out], { env, stdio: ["ignore", "ignore", "ignore"] });
		} catch (e) {
			// exit 1: lines were skipped (the session is written) or the file is neither format
			if (e.status !== 1) throw e;
		}
		let text;
		try {
			text = readFileSync(out, "utf8");
		} catch {
			continue; // not imported
		}
		sources[`${root}/${relative(dir, src)}`] = record(out, text);
	}
}
// A source imported, then grown and imported again into the same file (a message caught
// mid-stream gets a completion appended): recorded as `own/<file>+<growth>`.
for (const [file, growth] of [["claude/streaming.jsonl", "claude/streaming.growth"]]) {
	const src = join(work, `grown-${n}.jsonl`);
	const out = join(work, `${n++}.jsonl`);
	writeFileSync(src, readFileSync(join(roots.own, file)));
	execFileSync(pi, ["session", "import", src, "-o", out], { env, stdio: "ignore" });
	writeFileSync(src, Buffer.concat([readFileSync(src), readFileSync(join(roots.own, growth))]));
	execFileSync(pi, ["session", "import", src, "-o", out], { env, stdio: "ignore" });
	sources[`own/${file}+${growth}`] = record(out);
}
const outDir = join(repo, "tests", "fixtures", "import16");
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, "context.golden.json"), `${JSON.stringify({ reference: version, sources }, null, 1)}\n`);
console.log(`${Object.keys(sources).length} imported sessions recorded with ${version}`);
