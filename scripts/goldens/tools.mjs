// Records what the reference implementation's built-in tools (read, bash, edit, write, grep,
// find, ls of npm @mariozechner/pi-coding-agent) return for a set of calls on small file trees,
// so tests/cli/tools_goldens.rs can check src/tools against it without Node.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   cargo install ripgrep fd-find        # rg >= 14 and fd >= 10 on PATH (or --bin-dir DIR)
//   node scripts/goldens/tools.mjs --pi-dir /some/dir [--bin-dir DIR]
//
// (PI_REFERENCE_DIR=/some/dir works instead of --pi-dir.) Needs Node 20 or newer.
//
// Each call goes the way the agent loop sends it: prepareArguments, validateToolArguments, then
// the tool's execute; a thrown error becomes {content:[{type:"text",text:message}],details:{}}
// with isError true. rg runs with --sort=path so that results come in path order (ours do;
// upstream's vary between runs); find results are compared as sets for the same reason.
//
// Output: tests/fixtures/tools/goldens.json, {"reference": "<version>", "cases": [...]}, each
// case {name, tool, args, setup, options?, compare?, after?, result}:
//   setup.files  {path: content} under the case root; content is a string, {base64}, or a
//                generator {lines: {count, prefix?, suffix?, eol?, trailing?}} /
//                {repeat: {text, count}}
//   setup.dirs / setup.links / setup.modes   empty directories, symlinks {path: target},
//                permissions {path: octal string}
//   options      cwd (default "proj"), shellPath, commandPrefix, modelTextOnly
//   compare      "exact" (default), "unordered" (text lines as a set), "count" (number of
//                result lines and the notice only: which results a limit keeps is arbitrary)
//   after        {path: content} of files after the call
// Paths under the case root are written as [ROOT], bash temp files as pi-bash-[HEX].log.

import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";
import { deflateSync } from "node:zlib";

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = argv.indexOf(name);
	return i >= 0 ? argv[i + 1] : dflt;
};
const piDir = opt("--pi-dir", process.env.PI_REFERENCE_DIR);
if (!piDir) throw new Error("--pi-dir DIR (where @mariozechner/pi-coding-agent is installed) is required");
const binDir = opt("--bin-dir", undefined);
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const scope = join(resolve(piDir), "node_modules", "@mariozechner");
const pkg = join(scope, "pi-coding-agent");
const load = (rel) => import(pathToFileURL(join(pkg, "dist", rel)).href);
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf-8")).version;

const work = realpathSync(mkdtempSync(join(tmpdir(), "pi-tools-goldens-")));

// rg and fd wrappers: rg in path order; the real binaries from --bin-dir or PATH.
const which = (name) => {
	if (binDir) return join(binDir, name);
	return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf-8" }).trim();
};
const wrappers = join(work, "bin");
mkdirSync(wrappers);
writeFileSync(join(wrappers, "rg"), `#!/bin/sh\nexec '${which("rg")}' --sort=path "$@"\n`, { mode: 0o755 });
writeFileSync(join(wrappers, "fd"), `#!/bin/sh\nexec '${which("fd")}' "$@"\n`, { mode: 0o755 });
process.env.PATH = `${wrappers}${delimiter}${process.env.PATH}`;
process.env.PI_OFFLINE = "1";
process.env.PI_CODING_AGENT_DIR = join(work, "agent");

const { createAllToolDefinitions } = await load("core/tools/index.js");
const { validateToolArguments } = await import(pathToFileURL(join(scope, "pi-ai", "dist", "utils", "validation.js")).href);

// ---------------------------------------------------------------------------------------------
// File trees

const materialize = (spec) => {
	if (typeof spec === "string") return Buffer.from(spec, "utf-8");
	if (spec.base64 !== undefined) return Buffer.from(spec.base64, "base64");
	if (spec.lines) {
		const { count, prefix = "", suffix = "", eol = "\n", trailing = false } = spec.lines;
		const text = Array.from({ length: count }, (_, i) => `${prefix}${i + 1}${suffix}`).join(eol);
		return Buffer.from(trailing ? text + eol : text, "utf-8");
	}
	if (spec.repeat) return Buffer.from(spec.repeat.text.repeat(spec.repeat.count), "utf-8");
	throw new Error(`bad file spec ${JSON.stringify(spec)}`);
};

let caseNo = 0;
const tree = (setup) => {
	const root = join(work, `c${++caseNo}`);
	for (const d of ["proj", "home", "tmp", ...(setup.dirs ?? [])]) mkdirSync(join(root, d), { recursive: true });
	for (const [p, spec] of Object.entries(setup.files ?? {})) {
		mkdirSync(dirname(join(root, p)), { recursive: true });
		writeFileSync(join(root, p), materialize(spec));
	}
	for (const [p, target] of Object.entries(setup.links ?? {})) {
		mkdirSync(dirname(join(root, p)), { recursive: true });
		symlinkSync(target, join(root, p));
	}
	for (const [p, mode] of Object.entries(setup.modes ?? {})) chmodSync(join(root, p), Number.parseInt(mode, 8));
	return root;
};

const normalize = (root, v) =>
	JSON.parse(
		JSON.stringify(v ?? null)
			.split(root)
			.join("[ROOT]")
			.replace(/pi-bash-[0-9a-f]{16}\.log/g, "pi-bash-[HEX].log"),
	);

async function run(c) {
	const setup = c.setup ?? {};
	const root = tree(setup);
	const options = c.options ?? {};
	const cwd = join(root, options.cwd ?? "proj");
	process.env.HOME = join(root, "home");
	process.env.TMPDIR = join(root, "tmp");
	const prevCwd = process.cwd();
	if (options.cwd !== "missing") process.chdir(cwd);
	const defs = createAllToolDefinitions(cwd, {
		bash: { shellPath: options.shellPath, commandPrefix: options.commandPrefix },
	});
	const def = defs[c.tool];
	const ctx = options.modelTextOnly ? { model: { input: ["text"] } } : undefined;
	let result;
	try {
		const given = JSON.parse(JSON.stringify(c.args).split("[ROOT]").join(root));
		const prepared = def.prepareArguments ? def.prepareArguments(structuredClone(given)) : given;
		const args = validateToolArguments(def, { name: c.tool, arguments: prepared });
		const r = await def.execute("call-1", args, undefined, undefined, ctx);
		result = { content: r.content, details: r.details, isError: false };
	} catch (e) {
		result = { content: [{ type: "text", text: e instanceof Error ? e.message : String(e) }], details: {}, isError: true };
	}
	process.chdir(prevCwd);
	const out = { ...c, result: normalize(root, result) };
	if (c.after) {
		out.after = {};
		for (const p of c.after) {
			try {
				out.after[p] = readFileSync(join(root, p)).toString("utf-8");
			} catch {
				out.after[p] = null;
			}
		}
	}
	return out;
}

// ---------------------------------------------------------------------------------------------
// Cases

const PNG_1X1 =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const GIF_1X1 = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";
// A PNG header claiming w x h pixels, without image data.
const pngHeader = (w, h) => {
	const b = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 0, 0, 0, 0, 0, 8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x49, 0x44, 0x41, 0x54]);
	b.writeUInt32BE(w, 16);
	b.writeUInt32BE(h, 20);
	return b.toString("base64");
};
const PNG_BIG_HEADER = pngHeader(3000, 20);

// A real (decodable) PNG of w x h grey pixels.
const crcTable = Array.from({ length: 256 }, (_, n) => {
	let c = n;
	for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
	return c >>> 0;
});
const crc32 = (buf) => {
	let c = 0xffffffff;
	for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
	return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
	const len = Buffer.alloc(4);
	len.writeUInt32BE(data.length);
	const body = Buffer.concat([Buffer.from(type), data]);
	const crc = Buffer.alloc(4);
	crc.writeUInt32BE(crc32(body));
	return Buffer.concat([len, body, crc]);
};
const png = (w, h) => {
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(w, 0);
	ihdr.writeUInt32BE(h, 4);
	ihdr.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
	const raw = Buffer.alloc((w + 1) * h, 0x80);
	for (let y = 0; y < h; y++) raw[y * (w + 1)] = 0;
	return Buffer.concat([
		Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		chunk("IHDR", ihdr),
		chunk("IDAT", deflateSync(raw)),
		chunk("IEND", Buffer.alloc(0)),
	]).toString("base64");
};

const P = (files, extra = {}) => ({ files: Object.fromEntries(Object.entries(files).map(([k, v]) => [`proj/${k}`, v])), ...extra });
const lines = (count, prefix = "Line ", extra = {}) => ({ lines: { count, prefix, ...extra } });

const cases = [];
const add = (name, tool, args, setup = {}, more = {}) => cases.push({ name, tool, args, setup, ...more });

// read
add("TL1 read small file", "read", { path: "test.txt" }, P({ "test.txt": "Hello, world!\nLine 2\nLine 3" }));
add("TL2 read missing file", "read", { path: "missing.txt" });
add("TL3 read 2500 lines", "read", { path: "large.txt" }, P({ "large.txt": lines(2500) }));
add("TL4 read byte limit", "read", { path: "large.txt" }, P({ "large.txt": lines(500, "Line ", { suffix: `: ${"x".repeat(200)}` }) }));
add("TL5 read offset", "read", { path: "f.txt", offset: 51 }, P({ "f.txt": lines(100) }));
add("TL6 read limit", "read", { path: "f.txt", limit: 10 }, P({ "f.txt": lines(100) }));
add("TL7 read offset and limit", "read", { path: "f.txt", offset: 41, limit: 20 }, P({ "f.txt": lines(100) }));
add("TL8 read offset beyond end", "read", { path: "f.txt", offset: 100 }, P({ "f.txt": "a\nb\nc" }));
add("TL9 read png named .txt", "read", { path: "image.txt" }, P({ "image.txt": { base64: PNG_1X1 } }));
add("TL10 read text named .png", "read", { path: "not-an-image.png" }, P({ "not-an-image.png": "definitely not a png\n" }));
add("read gif", "read", { path: "a.gif" }, P({ "a.gif": { base64: GIF_1X1 } }));
add("read image for a text-only model", "read", { path: "a.png" }, P({ "a.png": { base64: PNG_1X1 } }), { options: { modelTextOnly: true } });
add("read oversized image", "read", { path: "big.png" }, P({ "big.png": { base64: PNG_BIG_HEADER } }));
add("read trailing newline", "read", { path: "f.txt" }, P({ "f.txt": "a\nb\n" }));
add("read trailing newline with limit", "read", { path: "f.txt", limit: 2 }, P({ "f.txt": "a\nb\n" }));
add("read limit 0", "read", { path: "f.txt", limit: 0 }, P({ "f.txt": "a\nb\nc" }));
add("read offset 0", "read", { path: "f.txt", offset: 0, limit: 1 }, P({ "f.txt": "a\nb\nc" }));
add("read negative offset", "read", { path: "f.txt", offset: -5 }, P({ "f.txt": "a\nb\nc" }));
add("read offset as string", "read", { path: "f.txt", offset: "2" }, P({ "f.txt": "a\nb\nc" }));
add("read first line too long", "read", { path: "wide.txt" }, P({ "wide.txt": { repeat: { text: "abcdefghij", count: 6000 } } }));
add("read long line at offset", "read", { path: "wide.txt", offset: 2 }, P({ "wide.txt": `short\n${"y".repeat(70000)}\nend` }));
add("read lines until a long one", "read", { path: "mixed.txt" }, P({ "mixed.txt": `one\ntwo\n${"z".repeat(52000)}\nfour` }));
add("read exactly 2000 lines", "read", { path: "f.txt" }, P({ "f.txt": lines(2000) }));
add("read 2001 lines", "read", { path: "f.txt" }, P({ "f.txt": lines(2000, "Line ", { trailing: true }) }));
add("read offset with truncation", "read", { path: "f.txt", offset: 1001 }, P({ "f.txt": lines(5000) }));
add("read crlf", "read", { path: "f.txt" }, P({ "f.txt": "a\r\nb\r\n" }));
add("read invalid utf-8", "read", { path: "bad.txt" }, P({ "bad.txt": { base64: Buffer.from([0x61, 0xff, 0x62, 0x0a, 0xe2, 0x82]).toString("base64") } }));
add("read empty file", "read", { path: "empty.txt" }, P({ "empty.txt": "" }));
add("read directory", "read", { path: "sub" }, { dirs: ["proj/sub"] });
add("read absolute path", "read", { path: "[ROOT]/other/x.txt" }, { files: { "other/x.txt": "outside" } });
add("read parent path", "read", { path: "../other/x.txt" }, { files: { "other/x.txt": "outside" } });
add("read at-prefixed path", "read", { path: "@notes.md" }, P({ "notes.md": "# Notes" }));
add("read unicode spaces in path", "read", { path: "my\u00a0file.txt" }, P({ "my file.txt": "spaced" }));
add("read screenshot name", "read", { path: "Shot 10.00.00 AM.txt" }, P({ "Shot 10.00.00\u202fAM.txt": "narrow" }));
add("read curly apostrophe name", "read", { path: "it's.txt" }, P({ "it\u2019s.txt": "curly" }));
add("read decomposed name", "read", { path: "caf\u00e9.txt" }, P({ "cafe\u0301.txt": "nfd" }));
add("read unreadable file", "read", { path: "secret.txt" }, P({ "secret.txt": "no" }, { modes: { "proj/secret.txt": "000" } }));

// write
add("TL11 write", "write", { path: "test.txt", content: "Test content" }, {}, { after: ["proj/test.txt"] });
add("TL12 write nested", "write", { path: "nested/dir/test.txt", content: "Nested content" }, {}, { after: ["proj/nested/dir/test.txt"] });
add("write counts utf-16 units", "write", { path: "u.txt", content: "héllo 😀\n" }, {}, { after: ["proj/u.txt"] });
add("write overwrites", "write", { path: "f.txt", content: "new" }, P({ "f.txt": "old content" }), { after: ["proj/f.txt"] });
add("write under a file", "write", { path: "f.txt/sub/x.txt", content: "x" }, P({ "f.txt": "file" }));
add("write to a directory", "write", { path: "sub", content: "x" }, { dirs: ["proj/sub"] });
add("write number content", "write", { path: "n.txt", content: 42 }, {}, { after: ["proj/n.txt"] });

// edit
const E = (path, oldText, newText) => ({ path, edits: [{ oldText, newText }] });
const edit = (name, args, files, file = "f.txt") => add(name, "edit", args, P(files), { after: [`proj/${file}`] });
edit("TL13 edit", E("f.txt", "world", "testing"), { "f.txt": "Hello, world!" });
edit("TL14 edit missing text", E("f.txt", "nope", "x"), { "f.txt": "Hello, world!" });
edit("TL15 edit three occurrences", E("f.txt", "foo", "bar"), { "f.txt": "foo foo foo" });
edit("TL16 edit trailing whitespace", E("f.txt", "line one\nline two\n", "replaced\n"), { "f.txt": "line one   \nline two  \nline three\n" });
edit("TL17 edit fullwidth punctuation", E("f.txt", "你好,世界\n你好(世界)\n", "你好，pi\n你好(pi)\n"), { "f.txt": "你好，世界\n你好（世界）\n" });
edit("TL18 edit compatibility forms", E("f.txt", "ABC123\ncafé\n", "XYZ789\ncoffee\n"), { "f.txt": "ＡＢＣ１２３\ncafe\u0301\n" });
edit("TL19 edit smart single quotes", E("f.txt", "console.log('hello');", "console.log('world');"), { "f.txt": "console.log(\u2018hello\u2019);\n" });
edit("TL20 edit smart double quotes", E("f.txt", 'say "hi"', 'say "bye"'), { "f.txt": "say \u201chi\u201d\n" });
edit("TL21 edit dashes", E("f.txt", "range: 1-5\nbreak-here", "range: 10-50\nbreak--here"), { "f.txt": "range: 1\u20135\nbreak\u2014here\n" });
edit("TL22 edit nbsp", E("f.txt", "hello world", "hello universe"), { "f.txt": "hello\u00a0world\n" });
edit("TL23 edit exact", E("f.txt", "const x = 'exact';", "const x = 'changed';"), { "f.txt": "const x = 'exact';\nconst y = 'other';\n" });
edit("TL24 edit no fuzzy match", E("f.txt", "nothing like it", "x"), { "f.txt": "completely different content\n" });
edit("TL25 edit fuzzy duplicates", E("f.txt", "hello world", "x"), { "f.txt": "hello world   \nhello world\n" });
edit("TL26 edit crlf file", E("f.txt", "line two\n", "changed two\n"), { "f.txt": "line one\r\nline two\r\nline three\r\n" });
edit("TL27 edit keeps crlf", E("f.txt", "second", "REPLACED"), { "f.txt": "first\r\nsecond\r\nthird\r\n" });
edit("TL28 edit lf", E("f.txt", "second", "REPLACED"), { "f.txt": "first\nsecond\nthird\n" });
edit("TL29 edit mixed endings duplicates", E("f.txt", "hello\nworld\n", "x\n"), { "f.txt": "hello\r\nworld\r\n---\r\nhello\nworld\n" });
edit("TL30 edit keeps bom and crlf", E("f.txt", "second", "2nd"), { "f.txt": "\ufefffirst\r\nsecond\r\nthird\r\n" });
edit("edit multiple", { path: "f.txt", edits: [{ oldText: "Line 3", newText: "third" }, { oldText: "Line 40", newText: "fortieth" }] }, { "f.txt": lines(50, "Line ", { trailing: true }) });
edit("edit multiple far apart", { path: "f.txt", edits: [{ oldText: "Line 40\n", newText: "forty\n" }, { oldText: "Line 3\n", newText: "three\n" }] }, { "f.txt": lines(50, "Line ", { trailing: true }) });
edit("edit multiple close together", { path: "f.txt", edits: [{ oldText: "Line 10\n", newText: "ten\n" }, { oldText: "Line 16\n", newText: "" }, { oldText: "Line 30", newText: "thirty\nand more" }] }, { "f.txt": lines(40, "Line ", { trailing: true }) });
edit("edit multiple not found", { path: "f.txt", edits: [{ oldText: "a", newText: "b" }, { oldText: "zzz", newText: "y" }] }, { "f.txt": "abc" });
edit("edit multiple duplicate", { path: "f.txt", edits: [{ oldText: "x", newText: "b" }, { oldText: "c", newText: "y" }] }, { "f.txt": "x c c" });
edit("edit overlap", { path: "f.txt", edits: [{ oldText: "cdef", newText: "1" }, { oldText: "abcd", newText: "2" }] }, { "f.txt": "abcdefg" });
edit("edit empty old text", E("f.txt", "", "x"), { "f.txt": "abc" });
edit("edit multiple empty old text", { path: "f.txt", edits: [{ oldText: "a", newText: "b" }, { oldText: "", newText: "y" }] }, { "f.txt": "abc" });
edit("edit no change", E("f.txt", "abc", "abc"), { "f.txt": "abc" });
edit("edit multiple no change", { path: "f.txt", edits: [{ oldText: "a", newText: "a" }, { oldText: "c", newText: "c" }] }, { "f.txt": "abc" });
edit("edit empty edits", { path: "f.txt", edits: [] }, { "f.txt": "abc" });
edit("edit legacy arguments", { path: "f.txt", oldText: "abc", newText: "xyz" }, { "f.txt": "abc def" });
edit("edit legacy plus edits", { path: "f.txt", edits: [{ oldText: "abc", newText: "1" }], oldText: "def", newText: "2" }, { "f.txt": "abc def" });
edit("edit edits as json string", { path: "f.txt", edits: JSON.stringify([{ oldText: "def", newText: "DEF" }]) }, { "f.txt": "abc def" });
edit("edit extra property", { path: "f.txt", edits: [{ oldText: "a", newText: "b", note: 1 }] }, { "f.txt": "abc" });
edit("edit missing file", E("nope.txt", "a", "b"), {}, "nope.txt");
edit("edit directory", E("sub", "a", "b"), { "sub/x": "x" }, "sub/x");
edit("edit delete lines", E("f.txt", "Line 5\nLine 6\n", ""), { "f.txt": lines(12, "Line ", { trailing: true }) });
edit("edit insert lines", E("f.txt", "Line 2\n", "Line 2\nnew a\nnew b\n"), { "f.txt": lines(3, "Line ", { trailing: true }) });
edit("edit last line without newline", E("f.txt", "c", "c\nd"), { "f.txt": "a\nb\nc" });
edit("edit wide line numbers", E("f.txt", "Line 998\n", "changed\n"), { "f.txt": lines(1200, "Line ", { trailing: true }) });
edit("edit whole file", E("f.txt", "one\ntwo\n", "uno\ndos\ntres\n"), { "f.txt": "one\ntwo\n" });
edit("edit unreadable file", E("f.txt", "a", "b"), { "f.txt": "abc" });
cases[cases.length - 1].setup.modes = { "proj/f.txt": "444" };

// bash
const bash = (name, command, more = {}, setup = {}) => add(name, "bash", { command, ...(more.args ?? {}) }, setup, more.extra ?? {});
bash("TL31 bash echo", "echo 'test output'");
bash("TL32 bash exit 1", "exit 1");
bash("bash output then failure", "echo partial; echo oops >&2; exit 3");
bash("TL33 bash timeout", "echo started; sleep 5", { args: { timeout: 1 } });
bash("bash fractional timeout", "sleep 5", { args: { timeout: 0.5 } });
bash("TL34 bash missing cwd", "echo hi", { extra: { options: { cwd: "missing" } } });
bash("TL35 bash missing shell", "echo hi", { extra: { options: { shellPath: "/nonexistent/shell" } } });
bash("TL36 bash prefix export", "echo $TEST_VAR", { extra: { options: { commandPrefix: "export TEST_VAR=hello" } } });
bash("TL37 bash prefix output", "echo command-output", { extra: { options: { commandPrefix: "echo prefix-output" } } });
bash("TL38 bash no prefix", "echo no-prefix");
bash("bash no output", "true");
bash("bash stderr", "echo to-stderr >&2");
bash("bash cwd", "pwd; ls");
bash("bash killed by signal", "echo before; kill -9 $$");
bash("bash line truncation", "seq 1 3000");
bash("bash byte truncation", "for i in $(seq 1 1000); do printf '%0100d\\n' $i; done");
bash("bash long last line", "head -c 70000 /dev/zero | tr '\\0' 'x'");
bash("bash long line then short", "head -c 70000 /dev/zero | tr '\\0' 'x'; echo; echo tail");
bash("bash line truncation with failure", "seq 1 2500; exit 2");
bash("bash invalid utf-8", "printf 'a\\377b\\342\\202\\n'");
bash("bash exactly 2000 lines", "seq 1 2000");
bash("bash timeout as string", "echo fast", { args: { timeout: "10" } });

// grep
const G = {
	"example.txt": "first line\nmatch line\nlast line",
	"context.txt": "before\nmatch one\nafter\nmiddle\nmatch two\nafter two\n",
	"src/a.ts": "export const a = 1;\n// TODO: a\n",
	"src/b.ts": "// todo: lower\nexport const b = 2;\n",
	"src/deep/c.ts": "const TODO = 'c';\n",
	"docs/readme.md": "TODO in docs\n",
	".hidden/h.txt": "TODO hidden\n",
	"crlf.txt": "one\r\nTODO crlf\r\n",
	"long.txt": `${"L".repeat(600)} TODO\n`,
	"bin.dat": { base64: Buffer.from("TODO\u0000binary\n").toString("base64") },
};
const grep = (name, args, more = {}) => add(name, "grep", args, P({ ...G, ...(more.files ?? {}) }, more.setup ?? {}), more.extra ?? {});
grep("TL39 grep single file", { pattern: "match", path: "example.txt" });
grep("TL40 grep context and limit", { pattern: "match", path: "context.txt", limit: 1, context: 1 });
grep("grep context all matches", { pattern: "match", path: "context.txt", context: 2 });
grep("grep context at end of file", { pattern: "two", path: "context.txt", context: 3 });
grep("grep directory", { pattern: "TODO" });
grep("grep ignore case", { pattern: "todo", ignoreCase: true, path: "src" });
grep("grep literal", { pattern: "a = 1;", literal: true });
grep("grep regex", { pattern: "const [ab] =" });
grep("grep glob", { pattern: "TODO", glob: "*.ts" });
grep("grep glob with dir", { pattern: "TODO", glob: "src/**/*.ts" });
grep("grep no matches", { pattern: "nothing-matches-this" });
grep("grep missing path", { pattern: "x", path: "nope" });
grep("grep bad regex", { pattern: "(" });
grep("grep pattern starting with dash", { pattern: "-x", path: "dash.txt" }, { files: { "dash.txt": "a -x b\n" } });
grep("grep newline in pattern", { pattern: "a\\nb" });
grep("grep bad glob", { pattern: "x", glob: "[" });
grep("grep limit", { pattern: "TODO", limit: 2 });
grep("grep gitignore in repo", { pattern: "secret" }, { files: { ".gitignore": "ignored.txt\n", "ignored.txt": "secret\n", "kept.txt": "secret\n" }, setup: { dirs: ["proj/.git"] } });
grep("grep gitignore outside repo", { pattern: "secret" }, { files: { ".gitignore": "ignored.txt\n", "ignored.txt": "secret\n", "kept.txt": "secret\n" } });
grep("grep ignore file", { pattern: "secret" }, { files: { ".ignore": "ignored.txt\n", "ignored.txt": "secret\n", "kept.txt": "secret\n" } });
grep("grep binary file named", { pattern: "TODO", path: "bin.dat" });
grep("grep long line", { pattern: "TODO", path: "long.txt" });
grep("grep long line with context", { pattern: "TODO", path: "long.txt", context: 1 });
grep("grep crlf with context", { pattern: "TODO", path: "crlf.txt", context: 1 });
grep("grep many matches byte limit", { pattern: "x", path: "many.txt", limit: 1000 }, { files: { "many.txt": lines(900, `${"x".repeat(80)} `) } });
grep("grep empty pattern", { pattern: "", path: "example.txt" });
grep("grep invalid utf-8 line", { pattern: "b", path: "bad.txt" }, { files: { "bad.txt": { base64: Buffer.from([0x61, 0xff, 0x62, 0x0a]).toString("base64") } } });

// find
const F = {
	"visible.txt": "v",
	".secret/hidden.txt": "h",
	"src/a.ts": "a",
	"src/b.spec.ts": "b",
	"src/deep/c.spec.ts": "c",
	"src/README.md": "r",
	"docs/guide.md": "g",
	"Upper.TXT": "u",
};
const find = (name, args, more = {}) => add(name, "find", args, P({ ...F, ...(more.files ?? {}) }, more.setup ?? {}), { compare: "unordered", ...(more.extra ?? {}) });
find("TL41 find hidden", { pattern: "**/*.txt" });
find("TL42 find gitignore", { pattern: "*.txt" }, { files: { ".gitignore": "ignored.txt\n", "ignored.txt": "i", "kept.txt": "k" } });
find("find nested gitignore stays in its folder", { pattern: "*.md" }, { files: { "docs/.gitignore": "*.md\n", "other/notes.md": "n" } });
find("find basename glob", { pattern: "*.spec.ts" });
find("find path glob", { pattern: "src/**/*.spec.ts" });
find("find path glob with star", { pattern: "src/*.ts" });
find("find directories", { pattern: "src" });
find("find smart case lower", { pattern: "*.txt" });
find("find smart case upper", { pattern: "*.TXT" });
find("find in subdirectory", { pattern: "*.ts", path: "src" });
find("find no match", { pattern: "*.nothing" });
find("find limit", { pattern: "*.ts", limit: 2 }, { extra: { compare: "count" } });
find("find missing path", { pattern: "*", path: "nope" });
find("find path is a file", { pattern: "*", path: "visible.txt" });
find("find bad glob", { pattern: "[" });
find("find limit 0", { pattern: "*.ts", limit: 0 });
find("find fractional limit", { pattern: "*.ts", limit: 2.5 });
find("find negative limit", { pattern: "*.ts", limit: -1 });
find("find fdignore", { pattern: "*.md" }, { files: { ".fdignore": "guide.md\n" } });

// ls
const L = { "b.txt": "b", "A.md": "a", ".hidden-file": "h", "_under": "u", "10.txt": "t", "9.txt": "n", "é.txt": "e", "e.txt": "e" };
const ls = (name, args, more = {}) => add(name, "ls", args, P({ ...L, ...(more.files ?? {}) }, { dirs: ["proj/.hidden-dir", "proj/sub", ...(more.dirs ?? [])], links: more.links ?? {} }));
ls("TL43 ls", {});
ls("ls limit", { limit: 3 });
ls("ls subdirectory", { path: "sub" }, { files: { "sub/x": "x" } });
ls("ls empty directory", { path: "sub" });
ls("ls missing", { path: "nope" });
ls("ls file", { path: "b.txt" });
ls("ls links", {}, { links: { "proj/dir-link": "sub", "proj/broken-link": "nowhere" } });
ls("ls limit 0", { limit: 0 });

// deliberate deviations (tests/cli/tools_goldens.rs lists what we do instead)
add("deviation read wide png", "read", { path: "wide.png" }, P({ "wide.png": { base64: png(2100, 2) } }));
add("deviation read undecodable small png", "read", { path: "broken.png" }, P({ "broken.png": { base64: pngHeader(10, 20) } }));
edit("deviation edit invalid utf-8", E("f.txt", "b", "B"), { "f.txt": { base64: Buffer.from([0x61, 0xe9, 0x62, 0x0a]).toString("base64") } });

// argument validation (as the agent loop checks before running a tool)
add("validation missing required", "read", {});
add("validation wrong type", "read", { path: ["a"] });
add("validation coerces numbers", "read", { path: "f.txt", limit: "1" }, P({ "f.txt": "a\nb" }));
add("validation boolean", "grep", { pattern: "x", ignoreCase: "yes" });
add("validation edit item", "edit", { path: "f.txt", edits: [{ oldText: "a" }] }, P({ "f.txt": "a" }));
add("validation several", "edit", { edits: 5, z: 1 });
add("validation number as string path", "write", { path: 7, content: true }, {}, { after: ["proj/7"] });

// The argument schemas without their descriptions (ours are worded differently).
const strip = (v) =>
	Array.isArray(v)
		? v.map(strip)
		: v && typeof v === "object"
			? Object.fromEntries(Object.entries(v).filter(([k]) => k !== "description").map(([k, x]) => [k, strip(x)]))
			: v;
const schemas = Object.fromEntries(Object.entries(createAllToolDefinitions("/")).map(([k, d]) => [k, strip(d.parameters)]));

const results = [];
for (const c of cases) results.push(await run(c));
const out = join(repo, "tests", "fixtures", "tools");
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "goldens.json"), `${JSON.stringify({ reference: version, schemas, cases: results }, null, 1)}\n`);
console.log(`goldens.json: ${results.length} cases`);
