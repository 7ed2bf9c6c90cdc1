// Times the reference's session library on one session file, for `scripts/bench.py`:
// the steps `pi session log|tree|list` and `pi context build|stats` are compared with.
//
//     node scripts/ref_bench.mjs --ref-dir DIR SESSION.jsonl
//
// DIR is where `npm install @earendil-works/pi-coding-agent@1.6.0` (Node >= 22.19) or
// `npm install @mariozechner/pi-coding-agent@0.73.1` ran. The file is copied to a temporary
// folder first (the appends write to the copy). Prints one JSON line: the milliseconds of
// each step (`ms`), the median of single appends, the peak RSS and the package's version.
//
// The steps, in one warm process (Node's start-up and the package import are timed apart,
// as `import`):
//   open             SessionManager.open (reads and parses the whole file, builds the index)
//   tree             getTree()
//   branch           getBranch() (root to leaf)
//   context          buildSessionContext()
//   estimate_should  estimateContextTokens + shouldCompact on that context
//   list             SessionManager.list over a folder holding only the copy
//   append           appendMessage of a 2 KB user message, 20 times (median)
//   fork             createBranchedSession(leaf): the path copied into a new file (`/fork`)

import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
	const out = { refDir: null, file: null, appends: 20 };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "--ref-dir") out.refDir = argv[++i];
		else if (a === "--appends") out.appends = Number(argv[++i]);
		else if (!out.file) out.file = a;
		else throw new Error(`unexpected argument ${a}`);
	}
	if (!out.refDir || !out.file) {
		throw new Error("usage: node scripts/ref_bench.mjs --ref-dir DIR SESSION.jsonl");
	}
	return out;
}

// The package folder under DIR: the current scope first, then the old one.
function packageDir(refDir) {
	for (const scope of ["@earendil-works", "@mariozechner"]) {
		const dir = join(refDir, "node_modules", scope, "pi-coding-agent");
		if (existsSync(join(dir, "package.json"))) return dir;
	}
	throw new Error(`no pi-coding-agent package under ${refDir}/node_modules`);
}

function clock(fn) {
	const start = performance.now();
	const value = fn();
	return [performance.now() - start, value];
}

async function clockAsync(fn) {
	const start = performance.now();
	const value = await fn();
	return [performance.now() - start, value];
}

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const round = (x) => Math.round(x * 1000) / 1000;

async function main() {
	const opts = parseArgs(process.argv.slice(2));
	const pkg = packageDir(opts.refDir);
	const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
	const work = mkdtempSync(join(tmpdir(), "pi-ref-bench-"));
	const copy = join(work, basename(opts.file));
	copyFileSync(opts.file, copy);
	const ms = {};
	const result = { version, node: process.version, file_bytes: statSync(copy).size };
	try {
		let lib;
		let compaction;
		[ms.import, lib] = await clockAsync(() => import(pathToFileURL(join(pkg, "dist", "index.js")).href));
		// estimateContextTokens is not exported at the package's root.
		compaction = await import(pathToFileURL(join(pkg, "dist", "core", "compaction", "index.js")).href);
		const { SessionManager, DEFAULT_COMPACTION_SETTINGS, shouldCompact } = lib;

		let sm;
		try {
			[ms.open, sm] = clock(() => SessionManager.open(copy, work));
		} catch (e) {
			result.open_error = String(e?.message ?? e).slice(0, 300);
		}
		if (sm) {
			result.entries = sm.getEntries().length;
			[ms.tree] = clock(() => sm.getTree());
			let branch;
			[ms.branch, branch] = clock(() => sm.getBranch());
			result.branch_length = branch.length;
			let ctx;
			[ms.context, ctx] = clock(() => sm.buildSessionContext());
			result.context_messages = ctx.messages.length;
			[ms.estimate_should] = clock(() => {
				const estimate = compaction.estimateContextTokens(ctx.messages);
				return shouldCompact(estimate.tokens, 200_000, DEFAULT_COMPACTION_SETTINGS);
			});
			const times = [];
			for (let i = 0; i < opts.appends; i++) {
				const message = { role: "user", content: `${i} ${"y".repeat(2000)}`, timestamp: 1_780_000_000_000 + i };
				const [t] = clock(() => sm.appendMessage(message));
				times.push(t);
			}
			result.append = { median_ms: round(median(times)), count: times.length };
			// The listing reads and parses the file again; past a few hundred MB two copies
			// in memory can exceed the default heap, so it is left out there.
			if (result.file_bytes < 300e6) {
				let infos;
				// 1.6 lists only the sessions of the cwd it is given, in a folder of one's own.
				const cwd = sm.getCwd();
				[ms.list, infos] = await clockAsync(() => SessionManager.list(cwd, work));
				result.listed = infos.length;
			}
			// What `/fork` does: a new session file holding the path to the leaf.
			const leaf = sm.getLeafId();
			if (leaf && typeof sm.createBranchedSession === "function") {
				let file;
				[ms.fork, file] = clock(() => sm.createBranchedSession(leaf));
				result.fork_bytes = file && existsSync(file) ? statSync(file).size : null;
			}
		}
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
	result.ms = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, round(v)]));
	result.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 102.4) / 10;
	process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((e) => {
	process.stderr.write(`ref_bench: ${e?.stack ?? e}\n`);
	process.exit(1);
});
