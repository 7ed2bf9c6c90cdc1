// Records how the reference implementation (npm @mariozechner/pi-coding-agent) expands prompt
// templates and skills, discovers them, and assembles the system prompt, so the test suite
// (tests/cli/prompt_goldens.rs) can check `pi prompt` against it without Node.
//
//   npm install --prefix /some/dir @mariozechner/pi-coding-agent@0.73.1
//   node scripts/goldens/prompt.mjs --pi-dir /some/dir
//
// (PI_REFERENCE_DIR=/some/dir works instead of --pi-dir.) Needs Node 20 or newer.
//
// Since issue 29 the tests read substitute, args, expand, frontmatter, skills, skill-expand
// and discovery from tests/fixtures/prompt/goldens16/ (scripts/goldens/prompt16.mjs, the
// reference 1.6.0), which answers every case asked here; these files stay as the 0.73 record,
// and the tests check that no case of theirs is missing from the 1.6 ones.
//
// Output: tests/fixtures/prompt/goldens/*.json, each {"reference": "<version>", "cases": [...]}:
//   substitute.json   substituteArgs(content, args) on explicit argument arrays
//   args.json         parseCommandArgs(text); cases where POSIX word splitting (our documented
//                     deviation) gives something else carry a hand-written "posix" value
//   expand.json       expandPromptTemplate(text, templates loaded from files)
//   frontmatter.json  parseFrontmatter(text): frontmatter and body, or that it throws
//   skills.json       loadSkills over the fixture directories tests/fixtures/skills*
//   index.json        formatSkillsForPrompt(skills)
//   skill-expand.json the /skill:name expansion of AgentSession
//   discovery.json    DefaultResourceLoader on file trees: templates, skills, diagnostics,
//                     context files, SYSTEM.md / APPEND_SYSTEM.md
//   (the system prompt golden is 1.6's now: scripts/goldens/prompt16.mjs writes it)
// Paths under the temporary directory a case runs in are written as [ROOT].

import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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
const pkg = join(resolve(piDir), "node_modules", "@mariozechner", "pi-coding-agent");
const load = (rel) => import(pathToFileURL(join(pkg, "dist", rel)).href);
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf-8")).version;

process.env.TZ = "JST-9";

const { substituteArgs, parseCommandArgs, expandPromptTemplate, loadPromptTemplates } = await load(
	"core/prompt-templates.js",
);
const { loadSkills, formatSkillsForPrompt } = await load("core/skills.js");
const { parseFrontmatter } = await load("utils/frontmatter.js");
const { AgentSession, DefaultResourceLoader, SettingsManager } = await load("index.js");

const out = join(repo, "tests", "fixtures", "prompt", "goldens");
mkdirSync(out, { recursive: true });
const write = (name, cases, extra = {}) => {
	writeFileSync(join(out, name), `${JSON.stringify({ reference: version, ...extra, cases }, null, 1)}\n`);
	console.log(`${name}: ${cases.length} cases`);
};

const work = realpathSync(mkdtempSync(join(tmpdir(), "pi-prompt-goldens-")));
let caseNo = 0;
/** A fresh directory for one case, with the file tree `files` ({path: content}),
 *  `links` ({path: target}) and `dirs` ([path]). */
const tree = ({ files = {}, links = {}, dirs = [] } = {}) => {
	const root = join(work, `c${++caseNo}`);
	mkdirSync(root, { recursive: true });
	for (const d of ["agent", "home", "proj", ...dirs]) mkdirSync(join(root, d), { recursive: true });
	for (const [p, content] of Object.entries(files)) {
		mkdirSync(dirname(join(root, p)), { recursive: true });
		writeFileSync(join(root, p), content);
	}
	for (const [p, target] of Object.entries(links)) {
		mkdirSync(dirname(join(root, p)), { recursive: true });
		symlinkSync(target, join(root, p));
	}
	return root;
};
const rooted = (root, v) => JSON.parse(JSON.stringify(v ?? null).split(root).join("[ROOT]"));

// ---------------------------------------------------------------------------------------------
// substituteArgs

const seq = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const substitute = [
	["Test: $ARGUMENTS", ["a", "b", "c"]],
	["Test: $@", ["a", "b", "c"]],
	["$ARGUMENTS", ["$1", "$ARGUMENTS"]],
	["$@", ["$100", "$1"]],
	["$ARGUMENTS", ["$100", "$1"]],
	["$1: $ARGUMENTS", ["prefix", "a", "b"]],
	["$1: $@", ["prefix", "a", "b"]],
	["Test: $ARGUMENTS", []],
	["Test: $@", []],
	["Test: $1", []],
	["$ARGUMENTS and $ARGUMENTS", ["a", "b"]],
	["$@ and $@", ["a", "b"]],
	["$@ and $ARGUMENTS", ["a", "b"]],
	["$1 $2: $ARGUMENTS", ["arg100", "@user"]],
	["$1 $2 $3 $4 $5", ["a", "b"]],
	["$ARGUMENTS", ["日本語", "🎉", "café"]],
	["$1 $2", ["line1\nline2", "tab\tthere"]],
	["$1$2", ["a", "b"]],
	["$ARGUMENTS", ["first arg", "second arg"]],
	["$0", ["a", "b"]],
	["$1.5", ["a"]],
	["pre$ARGUMENTS", ["a", "b"]],
	["pre$@", ["a", "b"]],
	["$ARGUMENTS", ["a", "", "c"]],
	["$ARGUMENTS", ["  leading  ", "trailing  "]],
	["Prefix $ARGUMENTS suffix", ["ARGUMENTS"]],
	["$A $$ $ $ARGS", ["a"]],
	["$arguments $Arguments $ARGUMENTS", ["a", "b"]],
	["$@ and $ARGUMENTS", ["x", "y", "z"]],
	["$ARGUMENTS and $@", ["x", "y", "z"]],
	["$ARGUMENTS", seq("arg", 100)],
	["$10 $12 $15", seq("val", 15)],
	["Price: \\$100", []],
	["$1: $@ ($ARGUMENTS)", ["first", "second", "third"]],
	["Just plain text", ["a", "b"]],
	["$1 $2 $@", ["a", "b", "c"]],
	["${@:2}", ["a", "b", "c", "d"]],
	["${@:1}", ["a", "b", "c"]],
	["${@:3}", ["a", "b", "c", "d"]],
	["${@:2:2}", ["a", "b", "c", "d"]],
	["${@:1:1}", ["a", "b", "c", "d"]],
	["${@:3:1}", ["a", "b", "c", "d"]],
	["${@:2:3}", ["a", "b", "c", "d", "e"]],
	["${@:99}", ["a", "b"]],
	["${@:5}", ["a", "b"]],
	["${@:10:5}", ["a", "b"]],
	["${@:2:0}", ["a", "b", "c"]],
	["${@:1:0}", ["a", "b", "c"]],
	["${@:2:99}", ["a", "b", "c"]],
	["${@:1:10}", ["a", "b"]],
	["${@:2} vs $@", ["a", "b", "c"]],
	["First: ${@:1:1}, All: $@", ["x", "y", "z"]],
	["${@:1}", ["${@:2}", "test"]],
	["${@:2}", ["a", "${@:3}", "c"]],
	["$1: ${@:2}", ["cmd", "arg1", "arg2"]],
	["$1 $2 ${@:3}", ["a", "b", "c", "d"]],
	["${@:0}", ["a", "b", "c"]],
	["${@:2}", []],
	["${@:1}", []],
	["${@:1}", ["only"]],
	["${@:2}", ["only"]],
	["Process ${@:2} with $1", ["tool", "file1", "file2"]],
	["${@:1:1} and ${@:2}", ["a", "b", "c"]],
	["${@:1:2} vs ${@:3:2}", ["a", "b", "c", "d", "e"]],
	["${@:2}", ["cmd", "first arg", "second arg"]],
	["${@:2}", ["cmd", "$100", "@user", "#tag"]],
	["Run $1 on ${@:2:2}, then process $@", ["eslint", "file1.ts", "file2.ts", "file3.ts"]],
	["prefix${@:2}suffix", ["a", "b", "c"]],
	["${@:5:100}", seq("arg", 11).slice(1)],
	["$1", ["${@:2}", "z"]],
	["$1 x", ["$@", "b"]],
	["$1 and $10", ["a"]],
	["${@:2", ["a", "b"]],
	["${@}", ["a", "b"]],
	["$99999999999999999999 end", ["a"]],
	["${@:99999999999999999999}|${@:1:99999999999999999999}", ["a", "b"]],
	["Create component $1 with features: $ARGUMENTS", ["Button", "onClick handler", "disabled support"]],
	["Implement: $@", ["feature1", "feature2", "feature3"]],
	["Implement: $ARGUMENTS", ["feature1", "feature2", "feature3"]],
	["$1", ["Ω≈ç√∫ 𝓤𝓷𝓲𝓬𝓸𝓭𝓮", "x"]],
	["cost: $1 and ${@:2:1}", ["$5", "$$"]],
	["$@", ["$", "$1"]],
	["$ARGUMENTS", ["$&"]],
	["<$ARGUMENTS>", ["$$", "$&x"]],
	["<$@>", ["a$'b", "c$`d"]],
	["$2 $1", ["$@", "$ARGUMENTS"]],
	["$ARGUMENTS$ARGUMENTS$@$@", ["ab"]],
	["$$1 $1$", ["x"]],
	["${@:1:1}${@:2:1}", ["a", "b"]],
	["${@:01:02}", ["a", "b", "c"]],
	["\\$1 \\${@:1}", ["a"]],
	["mixed\r\nline endings $1", ["x"]],
];
// Our substitution inserts argument values literally in every pass; upstream's last two passes
// use JavaScript string replacement, where $$, $&, $` and $' in the values are patterns.
const substituteOurs = {
	"$ARGUMENTS\u0000$&": "$&",
	"<$ARGUMENTS>\u0000$$\u0001$&x": "<$$ $&x>",
	"<$@>\u0000a$'b\u0001c$`d": "<a$'b c$`d>",
};
write(
	"substitute.json",
	substitute.map(([content, args]) => {
		const c = { content, args, upstream: substituteArgs(content, args) };
		const ours = substituteOurs[`${content}\u0000${args.join("\u0001")}`];
		if (ours !== undefined) c.ours = ours;
		return c;
	}),
);

// ---------------------------------------------------------------------------------------------
// parseCommandArgs (POSIX word splitting is a documented deviation; "posix" = what we produce)

const args = [
	["a b c"],
	['"first arg" second'],
	["'first arg' second"],
	[`"double" 'single' "double again"`],
	[""],
	["a  b   c"],
	["a\tb\tc"],
	['"" " "', [" "], ["", " "]],
	["$100 @user #tag"],
	["日本語 🎉 café"],
	['"line1\nline2" second'],
	['"quoted \\"text\\""', ["quoted \\text\\"], ['quoted "text"']],
	["a b c   "],
	["   a b c"],
	["it's here", ["its here"], ["it's", "here"]],
	['x"y z"w'],
	['"unterminated quote', ["unterminated quote"], ['"unterminated', "quote"]],
	[`mixed "a 'b' c"`],
	["a\u00A0b"],
	["fix #123 and #456"],
	["C:\\Users\\me file.txt", ["C:\\Users\\me", "file.txt"], ["C:Usersme", "file.txt"]],
	["one\ntwo", ["one\ntwo"], ["one", "two"]],
	["a\\ b c", ["a\\", "b", "c"], ["a b", "c"]],
	["'$HOME' \"$PATH\""],
	["--flag=1 -x"],
	["emoji👍🏽 ok"],
];
write(
	"args.json",
	args.map(([input, expectUpstream, posix]) => {
		const upstream = parseCommandArgs(input);
		if (expectUpstream && JSON.stringify(upstream) !== JSON.stringify(expectUpstream)) {
			throw new Error(`parseCommandArgs(${JSON.stringify(input)}) = ${JSON.stringify(upstream)}`);
		}
		return posix ? { input, upstream, posix } : { input, upstream };
	}),
);

// ---------------------------------------------------------------------------------------------
// expandPromptTemplate with templates loaded from files

const templateFiles = {
	"review.md": "---\ndescription: Review a PR\nargument-hint: <pr> [files...]\n---\nReview PR $1 focusing on ${@:2}\n",
	"t.md": "[$1][$2]",
	"all.md": "---\ndescription: everything\n---\n\n  All: $@ / $ARGUMENTS  \n\n",
	"plain.md": "  untrimmed body without frontmatter $1  \n",
	"crlf.md": "---\r\ndescription: crlf\r\n---\r\nLine $1\r\nLine $2\r\n",
	"unicode.md": "Ünïcödé → $1 ← ${@:2}",
	"dollar.md": "cost $1, all $@, money $$ and $&",
	"ünï.md": "named with unicode: $1",
	"a.b.md": "dots in the name: $@",
	"UPPER.md": "upper: $1",
};
const expandTexts = [
	"/review 1234 src/auth.ts src/db.ts",
	"/review",
	"/review  1234",
	'/review 1234 "src/my file.ts"',
	"/t one two three",
	"/t  two",
	"/t\targ",
	"/t",
	"/all x y",
	"/all",
	"/plain A",
	"/crlf a b",
	"/unicode 🎉 café 日本語",
	"/dollar $5 $$",
	"/ünï x",
	"/a.b one two",
	"/UPPER x",
	"/upper x",
	"/missing a b",
	"review 1234",
	" /review 1234",
	"/",
	"/ x",
	"//review",
	"/review 'it''s' \"a b\"",
	"/t $1 $@",
	"/t ${@:2} z",
	"/review.md 1",
	"/skill:t x",
];
{
	const root = tree({ files: Object.fromEntries(Object.entries(templateFiles).map(([n, c]) => [`agent/prompts/${n}`, c])) });
	const templates = loadPromptTemplates({
		cwd: join(root, "proj"),
		agentDir: join(root, "agent"),
		promptPaths: [join(root, "agent", "prompts")],
		includeDefaults: false,
	});
	// Argument values inserted by $@ / $ARGUMENTS are literal for us (no $$ → $).
	const expandOurs = { "/dollar $5 $$": "cost $5, all $5 $$, money $$ and $&" };
	write(
		"expand.json",
		expandTexts.map((text) => {
			const c = { text, upstream: expandPromptTemplate(text, templates) };
			if (expandOurs[text] !== undefined) c.ours = expandOurs[text];
			return c;
		}),
		{ templates: templateFiles },
	);
}

// ---------------------------------------------------------------------------------------------
// parseFrontmatter

const frontmatter = [
	"---\nname: \"skill-name\"\ndescription: 'A desc'\nfoo-bar: value\n---\n\nBody text",
	"---\r\nname: test\r\n---\r\nLine one\r\nLine two",
	"---\nfoo: [bar\n---\nBody",
	"---\ndescription: |\n  Line one\n  Line two\n---\n\nBody",
	"---\ndescription: >\n  Folded one\n  folded two\n---\nBody",
	"Just text\nsecond line",
	"---\nname: test\nBody without terminator",
	"---\n# just a comment\n---\nBody",
	"---\nkey: value\n---\n\nBody\n",
	"\n  No frontmatter body  \n",
	"---\n---\nEmpty block",
	"----\nname: x\n---\nFour dashes open",
	"---\nname: x\n----\nFour dashes close",
	"---\nname: x\n---trailing\nBody",
	"---\rname: cr\r---\rBody with CR",
	"---\nflag: true\nyes_word: yes\nnum: 42\nneg: -7\nfloat: 1.5\nnull_value: null\ntilde: ~\nempty:\n---\nTypes",
	"---\nlist:\n  - a\n  - b\nmap:\n  k: v\ninline: {x: 1, y: [2, 3]}\n---\nCollections",
	"---\nquoted: \"a\\tb\\u00e9\"\nsingle: 'it''s'\n---\nEscapes",
	"---\n- just\n- a list\n---\nList frontmatter",
	"---\njust a string\n---\nScalar frontmatter",
	"---\ndescription: \"unterminated\n---\nBody",
	"---\na: 1\na: 2\n---\nDuplicate keys",
	"---\nkey: value\n  bad indent: x\n---\nBody",
	"---\nanchor: &a hello\nalias: *a\n---\nAliases",
	"---\nunicode: ünïcödé 🎉\n\"quoted key\": v\n---\nBody",
	"---\ndescription: Text with: colon\n---\nBody",
	"---\ndate: 2024-01-01\nversion: 1.0\noctal: 0o17\nhex: 0x1F\n---\nScalars",
	"\ufeff---\nname: bom\n---\nBOM first",
	"---\n\ttab: x\n---\nTab",
];
// Where our YAML parser accepts what upstream's rejects (a tab before a top-level key).
const frontmatterOurs = { "---\n\ttab: x\n---\nTab": { frontmatter: { tab: "x" }, body: "Tab" } };
write(
	"frontmatter.json",
	frontmatter.map((input) => {
		let c;
		try {
			const { frontmatter: fm, body } = parseFrontmatter(input);
			c = { input, upstream: { frontmatter: fm, body } };
		} catch (e) {
			c = { input, upstream: { error: String(e.message) } };
		}
		if (frontmatterOurs[input]) c.ours = frontmatterOurs[input];
		return c;
	}),
);

// ---------------------------------------------------------------------------------------------
// loadSkills over the fixtures (paths relative to tests/fixtures)

{
	const fixtures = join(repo, "tests", "fixtures");
	const rel = (v) => JSON.parse(JSON.stringify(v).split(`${fixtures}/`).join(""));
	const empty = tree();
	const skillCases = [
		["skills/valid-skill"],
		["skills/name-mismatch"],
		["skills/invalid-name-chars"],
		["skills/long-name"],
		["skills/missing-description"],
		["skills/unknown-field"],
		["skills/nested"],
		["skills/root-skill-preferred"],
		["skills/no-frontmatter"],
		["skills/invalid-yaml"],
		["skills/multiline-description"],
		["skills/consecutive-hyphens"],
		["skills/disable-model-invocation"],
		["skills"],
		["skills-collision/first", "skills-collision/second"],
		["skills/valid-skill/SKILL.md"],
		["skills/valid-skill", "skills/valid-skill/SKILL.md"],
		["skills/does-not-exist"],
		["skills/PROVENANCE.txt"],
	];
	write(
		"skills.json",
		skillCases.map((paths) => {
			const r = loadSkills({
				cwd: join(empty, "proj"),
				agentDir: join(empty, "agent"),
				skillPaths: paths.map((p) => join(fixtures, p)),
				includeDefaults: false,
			});
			return {
				paths,
				upstream: rel({
					skills: r.skills.map((s) => ({
						name: s.name,
						description: s.description,
						path: s.filePath,
						baseDir: s.baseDir,
						disableModelInvocation: s.disableModelInvocation,
					})),
					diagnostics: r.diagnostics,
				}),
			};
		}),
	);
}

// ---------------------------------------------------------------------------------------------
// formatSkillsForPrompt

const sk = (name, description, filePath, disableModelInvocation = false) => ({
	name,
	description,
	filePath,
	baseDir: dirname(filePath),
	disableModelInvocation,
});
write(
	"index.json",
	[
		[],
		[sk("test-skill", "A test skill.", "/path/to/skill/SKILL.md")],
		[sk("special", 'A skill with <special> & "characters".', "/p/special/SKILL.md")],
		[sk("a", "First.", "/s/a/SKILL.md"), sk("b", "Second.", "/s/b/SKILL.md")],
		[sk("visible", "Shown.", "/s/v/SKILL.md"), sk("hidden", "Not shown.", "/s/h/SKILL.md", true)],
		[sk("hidden", "Not shown.", "/s/h/SKILL.md", true)],
		[sk("multi", "Line one\nLine two\n", "/s/it's <here>/SKILL.md")],
		[sk("ünï", "Ünïcödé 🎉 'quotes'", "/s/ü/SKILL.md")],
	].map((skills) => ({ skills, upstream: formatSkillsForPrompt(skills) })),
);

// ---------------------------------------------------------------------------------------------
// /skill:name expansion (AgentSession._expandSkillCommand)

{
	const skillFiles = {
		"agent/skills/foo/SKILL.md": "---\nname: foo\ndescription: Foo things.\n---\n\nDo X.\n",
		"agent/skills/crlf/SKILL.md": "---\r\ndescription: CRLF skill\r\n---\r\n\r\n  Body line 1\r\nBody line 2  \r\n",
		"agent/skills/nofm/SKILL.md": "---\ndescription: only frontmatter\n---\n",
		"agent/skills/dollar/SKILL.md": "---\ndescription: has dollars\n---\nUse $1 and $@ literally.\n",
		"agent/skills/ünï/SKILL.md": "---\nname: ünï\ndescription: unicode\n---\nÜnïcödé body 🎉\n",
		"agent/skills/nested/deep/SKILL.md": "---\nname: deep\ndescription: nested\n---\nSee ./scripts/run.sh\n",
		"agent/skills/quote\"dir/SKILL.md": "---\nname: quoted\ndescription: quote in path\n---\nQ\n",
	};
	const root = tree({ files: skillFiles });
	const cwd = join(root, "proj");
	const agentDir = join(root, "agent");
	const { skills } = loadSkills({ cwd, agentDir, skillPaths: [join(agentDir, "skills")], includeDefaults: false });
	const fake = {
		resourceLoader: { getSkills: () => ({ skills, diagnostics: [] }) },
		_extensionRunner: { emitError: () => {} },
	};
	const texts = [
		"/skill:foo",
		"/skill:foo  please now ",
		"/skill:foo multi word args with $1 and \"quotes\"",
		"/skill:foo\targ",
		"/skill:crlf x",
		"/skill:nofm",
		"/skill:dollar $5",
		"/skill:ünï 日本語",
		"/skill:deep run it",
		"/skill:quoted",
		"/skill:foo line1\nline2",
		"skill:foo",
		" /skill:foo",
	];
	write(
		"skill-expand.json",
		texts.map((text) => ({
			text,
			upstream: rooted(root, AgentSession.prototype._expandSkillCommand.call(fake, text)),
		})),
		{ files: skillFiles },
	);
}

// ---------------------------------------------------------------------------------------------
// Discovery: DefaultResourceLoader on file trees

const fm = (description, extra = "") => `---\ndescription: ${description}\n${extra}---\nBody of ${description}\n`;
const scenarios = [
	{
		name: "user-and-project",
		dirs: [".git"],
		files: {
			"agent/prompts/review.md": "---\ndescription: user review\nargument-hint: <pr>\n---\nUser review $1\n",
			"proj/.pi/prompts/review.md": "Project review $@\n",
			"agent/prompts/commit.md": `\n\n   \n${"A first line that is much longer than sixty characters, so it is cut"}\nsecond\n`,
			"agent/prompts/empty.md": "",
			"agent/prompts/hint-only.md": "---\nargument-hint: \"[files]\"\n---\n",
			"proj/.pi/prompts/.hidden.md": "hidden",
			"proj/.pi/prompts/notes.txt": "not a template",
			"proj/.pi/prompts/sub/deep.md": "not discovered: prompts are not searched recursively",
			"proj/.pi/prompts/bad-yaml.md": "---\ndescription: [oops\n---\nBody",
			"proj/.pi/prompts/.gitignore": "ignored.md\n",
			"proj/.pi/prompts/ignored.md": "ignored by .gitignore",
			"agent/skills/foo/SKILL.md": fm("User foo."),
			"agent/skills/loose.md": "---\nname: loose\ndescription: A loose skill file.\n---\nx\n",
			"proj/.pi/skills/foo/SKILL.md": fm("Project foo."),
			"proj/.pi/skills/nested/a/SKILL.md": "---\nname: a\ndescription: Outer.\n---\n",
			"proj/.pi/skills/nested/a/b/SKILL.md": "---\nname: b\ndescription: Inner, never reached.\n---\n",
			"proj/.pi/skills/node_modules/x/SKILL.md": fm("In node_modules."),
			"proj/.pi/skills/.gitignore": "# comment\nignored/\n",
			"proj/.pi/skills/ignored/SKILL.md": fm("Ignored."),
			"proj/.pi/skills/hidden-from-model/SKILL.md": fm("Manual only.", "disable-model-invocation: true\n"),
			"proj/.agents/skills/bar/SKILL.md": fm("Bar from .agents."),
			"proj/.agents/skills/root-file.md": fm("Root files do not count in .agents."),
			".agents/skills/up/SKILL.md": fm("From the git root."),
			"home/.agents/skills/homeskill/SKILL.md": fm("From ~/.agents."),
			"home/.agents/skills/bar/SKILL.md": fm("Loses to the project's bar."),
			"agent/AGENTS.md": "global agents\n",
			"CLAUDE.md": "root claude\n",
			"proj/AGENTS.md": "project agents\n",
			"proj/CLAUDE.md": "not used: AGENTS.md comes first\n",
			"proj/.pi/SYSTEM.md": "Project system prompt.",
			"agent/SYSTEM.md": "Global system prompt.",
			"agent/APPEND_SYSTEM.md": "Global append.",
		},
	},
	{
		name: "settings",
		dirs: [".git"],
		files: {
			"proj/.pi/settings.json": JSON.stringify({
				prompts: ["../extra-prompts", "!**/skip*.md"],
				skills: ["-skills/off", "../extra-skills"],
			}),
			"agent/settings.json": JSON.stringify({
				prompts: ["-prompts/hidden.md", "../global-prompts/one.md"],
				skills: { customDirectories: ["../legacy-skills"] },
			}),
			"proj/extra-prompts/a.md": "from project settings",
			"proj/extra-prompts/skip-me.md": "excluded by a pattern",
			"proj/extra-prompts/sub/b.md": "settings directories are searched recursively",
			"proj/.pi/prompts/a.md": "loses to the settings entry",
			"agent/prompts/hidden.md": "force-excluded",
			"agent/prompts/shown.md": "shown",
			"global-prompts/one.md": "from global settings",
			"proj/.pi/skills/off/SKILL.md": fm("Force-excluded."),
			"proj/.pi/skills/on/SKILL.md": fm("Enabled."),
			"proj/extra-skills/x/SKILL.md": fm("Extra x."),
			"proj/extra-skills/top.md": "---\nname: top\ndescription: Root file of a settings directory.\n---\n",
			"legacy-skills/old/SKILL.md": fm("From the old settings form."),
			"proj/.pi/APPEND_SYSTEM.md": "Project append.",
			"agent/APPEND_SYSTEM.md": "Global append, not used.",
		},
	},
	{
		name: "explicit-paths",
		dirs: [".git"],
		files: {
			"agent/prompts/review.md": "discovered review",
			"cli/prompts/review.md": "explicit review loses",
			"cli/prompts/extra.md": "explicit extra",
			"cli/one.md": "---\ndescription: one file\n---\nOne",
			"agent/skills/dup/SKILL.md": fm("Discovered dup."),
			"cli/skills/dup/SKILL.md": fm("Explicit dup loses."),
			"cli/skills/new/SKILL.md": fm("Explicit new."),
			"cli/single.md": "---\nname: single\ndescription: A single skill file.\n---\n",
			"cli/not-md.txt": "x",
		},
		options: {
			additionalPromptTemplatePaths: ["[ROOT]/cli/prompts", "[ROOT]/cli/one.md", "[ROOT]/cli/missing-prompts"],
			additionalSkillPaths: ["[ROOT]/cli/skills", "[ROOT]/cli/single.md", "[ROOT]/cli/not-md.txt", "[ROOT]/cli/missing-skills"],
		},
	},
	{
		name: "no-discovery",
		dirs: [".git"],
		files: {
			"agent/prompts/review.md": "not loaded",
			"agent/skills/foo/SKILL.md": fm("Not loaded."),
			"cli/p/kept.md": "kept",
			"cli/s/kept/SKILL.md": fm("Kept."),
		},
		options: {
			noPromptTemplates: true,
			noSkills: true,
			noContextFiles: true,
			additionalPromptTemplatePaths: ["[ROOT]/cli/p"],
			additionalSkillPaths: ["[ROOT]/cli/s"],
		},
	},
	{
		name: "symlinks",
		dirs: [".git"],
		files: {
			"real/skill/SKILL.md": "---\nname: skill\ndescription: Real skill.\n---\n",
			"real/prompt.md": "linked prompt",
			"agent/skills/x/SKILL.md": fm("X."),
		},
		links: {
			"agent/skills/skill": "../../real/skill",
			"proj/.pi/skills/alias": "../../../real/skill",
			"agent/prompts/linked.md": "../../real/prompt.md",
			"agent/prompts/broken.md": "../../real/missing.md",
			"agent/skills/broken": "../../real/missing",
		},
	},
	{
		name: "no-git-under-home",
		cwd: "home/work/proj",
		files: {
			"home/work/proj/.agents/skills/here/SKILL.md": fm("Here."),
			"home/work/.agents/skills/parent/SKILL.md": fm("Parent, no git root stops the walk."),
			"home/.agents/skills/user/SKILL.md": fm("User level, not project."),
			".agents/skills/top/SKILL.md": fm("Further up."),
			"home/work/AGENTS.MD": "upper-case extension\n",
			"home/work/proj/CLAUDE.md": "claude in cwd\n",
		},
	},
	{
		name: "odd-files",
		dirs: [".git"],
		files: {
			"agent/skills/crlf/SKILL.md": "---\r\nname: crlf\r\ndescription: CRLF skill.\r\n---\r\nBody\r\n",
			"agent/skills/long-desc/SKILL.md": `---\ndescription: ${"d".repeat(1030)}\n---\n`,
			"agent/skills/blank-desc/SKILL.md": "---\ndescription: \"   \"\n---\n",
			"agent/skills/-edge-/SKILL.md": fm("Hyphens at the edges."),
			"agent/skills/ünï/SKILL.md": fm("Unicode directory."),
			"agent/skills/quoted/SKILL.md": "---\nname: 'quoted'\ndescription: \"Quoted <xml> & stuff\"\nmetadata:\n  a: 1\nallowed-tools: [read]\n---\n",
			"agent/skills/bad/SKILL.md": "---\ndescription: [oops\n---\n",
			"agent/skills/dmi-string/SKILL.md": fm("String true is not true.", "disable-model-invocation: \"true\"\n"),
			"agent/skills/dmi-yes/SKILL.md": fm("yes is a string in YAML 1.2.", "disable-model-invocation: yes\n"),
			"agent/prompts/unicode-ünï.md": "Ünïcödé first line that is long enough to be cut at sixty characters: 🎉🎉🎉",
			"agent/prompts/crlf.md": "---\r\ndescription: CRLF template\r\n---\r\nBody\r\n",
			"agent/prompts/desc-number.md": "---\ndescription: 42\n---\nNumeric description",
			"agent/prompts/space only.md": "   \n\t\n",
			"agent/prompts/UPPER.MD": "upper-case extension is not .md",
		},
	},
];
{
	const cases = [];
	for (const s of scenarios) {
		const root = tree(s);
		const cwd = join(root, s.cwd ?? "proj");
		const agentDir = join(root, "agent");
		const savedHome = process.env.HOME;
		process.env.HOME = join(root, "home");
		const options = JSON.parse(JSON.stringify(s.options ?? {}).split("[ROOT]").join(root));
		const loader = new DefaultResourceLoader({
			cwd,
			agentDir,
			settingsManager: SettingsManager.create(cwd, agentDir),
			...options,
		});
		await loader.reload();
		process.env.HOME = savedHome;
		const prompts = loader.getPrompts();
		const skills = loader.getSkills();
		cases.push({
			name: s.name,
			cwd: s.cwd ?? "proj",
			dirs: s.dirs ?? [],
			files: s.files,
			links: s.links ?? {},
			options: s.options ?? {},
			upstream: rooted(root, {
				templates: prompts.prompts.map((p) => ({
					name: p.name,
					description: p.description,
					argumentHint: p.argumentHint ?? null,
					content: p.content,
					scope: p.sourceInfo.scope,
					source: p.sourceInfo.source,
					path: p.filePath,
				})),
				templateDiagnostics: prompts.diagnostics,
				skills: skills.skills.map((k) => ({
					name: k.name,
					description: k.description,
					disableModelInvocation: k.disableModelInvocation,
					scope: k.sourceInfo.scope,
					source: k.sourceInfo.source,
					path: k.filePath,
					baseDir: k.baseDir,
				})),
				skillDiagnostics: skills.diagnostics,
				contextFiles: loader.getAgentsFiles().agentsFiles.map((f) => f.path),
				systemPrompt: loader.getSystemPrompt() ?? null,
				appendSystemPrompt: loader.getAppendSystemPrompt(),
			}),
		});
	}
	write("discovery.json", cases);
}

rmSync(work, { recursive: true, force: true });
