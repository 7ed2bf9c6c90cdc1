//! The shape of the workspace, read from its manifests and its source: the library crates and
//! the direction of their dependencies, no cycle between the top-level modules of any crate,
//! few long functions, errors downcast only in the binary, visibility as the API, one
//! implementation of each shared mechanism, the documents, and CI running the README's test
//! command. `docs/architecture.md` describes the design these tests hold the code to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The library crates, bottom layer first, each with the pi crates it may use.
const LAYERS: &[(&str, &[&str])] = &[
    ("pi-base", &[]),
    ("pi-session", &["pi-base"]),
    ("pi-ai", &["pi-base"]),
    ("pi-prompt", &["pi-base"]),
    ("pi-tools", &["pi-base", "pi-prompt"]),
    (
        "pi-agent",
        &["pi-base", "pi-session", "pi-ai", "pi-prompt", "pi-tools"],
    ),
];

/// Every crate's source folder: the libraries' and the binary's (`src`).
fn source_roots() -> Vec<(String, PathBuf)> {
    let mut roots: Vec<(String, PathBuf)> = LAYERS
        .iter()
        .map(|(name, _)| {
            (
                (*name).to_owned(),
                root().join("crates").join(name).join("src"),
            )
        })
        .collect();
    roots.push(("pi".to_owned(), root().join("src")));
    roots
}

/// The `.rs` files below `dir`, in path order.
fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The names in the `[dependencies]` table of a manifest (not dev- or build-dependencies).
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut inside = false;
    let mut out = BTreeSet::new();
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == "[dependencies]";
            continue;
        }
        if inside && !t.is_empty() && !t.starts_with('#') {
            let name = t.split(['=', '.', ' ']).next().unwrap_or("").trim();
            out.insert(name.to_owned());
        }
    }
    out
}

/// Whether an item is compiled only for tests (`#[cfg(test)]`, `#[test]`).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
    })
}

fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn parse(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path).unwrap();
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_libraries_are_layers_whose_dependencies_point_one_way() {
    assert!(read("Cargo.toml").contains("members = [\"crates/*\"]"));
    for (name, allowed) in LAYERS {
        let manifest = read(&format!("crates/{name}/Cargo.toml"));
        assert!(manifest.contains(&format!("name = \"{name}\"")), "{name}");
        let deps = dependencies(&manifest);
        for dep in deps.iter().filter(|d| d.starts_with("pi-")) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{name} depends on {dep}, a crate of its own layer or above"
            );
        }
        // Terminals and the command line belong to the binary.
        for ui in [
            "clap",
            "indicatif",
            "console",
            "terminal_size",
            "anstyle",
            "anyhow",
        ] {
            assert!(!deps.contains(ui), "{name} depends on {ui}");
        }
    }
    // The crate other programs embed knows no models, agents or async runtime.
    let session = dependencies(&read("crates/pi-session/Cargo.toml"));
    for far in [
        "reqwest",
        "tokio",
        "pi-ai",
        "pi-agent",
        "pi-tools",
        "pi-prompt",
    ] {
        assert!(!session.contains(far), "pi-session depends on {far}");
    }
    let binary = dependencies(&read("Cargo.toml"));
    for (name, _) in LAYERS {
        assert!(binary.contains(*name), "the binary does not use {name}");
    }
}

#[test]
fn every_wire_api_is_one_folder_implementing_the_provider_trait() {
    let providers = root().join("crates/pi-ai/src/providers");
    for api in [
        "anthropic",
        "openai",
        "responses",
        "google",
        "bedrock",
        "mistral",
    ] {
        let text = std::fs::read_to_string(providers.join(api).join("mod.rs")).unwrap();
        assert!(
            text.contains("Provider for "),
            "{api} implements no Provider"
        );
        // Request building and stream parsing live together.
        assert!(
            text.contains("fn request(") && text.contains("fn parser("),
            "{api}"
        );
    }
    for shared in ["sse.rs", "blocks.rs"] {
        assert!(providers.join(shared).is_file(), "{shared}");
    }
    assert!(root().join("crates/pi-ai/src/json_partial.rs").is_file());
}

/// The top-level modules of one crate that each top-level module uses.
struct ModuleUses<'a> {
    tops: &'a BTreeSet<String>,
    /// Names the crate root re-exports, and the module they come from.
    reexports: &'a BTreeMap<String, String>,
    /// The module being read, from the crate root.
    module: Vec<String>,
    found: BTreeSet<String>,
}

impl ModuleUses<'_> {
    /// Notes the top-level module a path starting with `segments` names, if any.
    fn note(&mut self, segments: &[String]) {
        let target = match segments.first().map(String::as_str) {
            Some("crate") => segments.get(1),
            Some("super") => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                match self.module.len().checked_sub(ups) {
                    Some(0) => segments.get(ups),
                    Some(_) => self.module.first(),
                    None => None,
                }
            }
            _ => None,
        };
        if let Some(t) = target {
            if self.tops.contains(t) {
                self.found.insert(t.clone());
            } else if let Some(m) = self.reexports.get(t) {
                self.found.insert(m.clone());
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.note(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.note(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.note(&prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for ModuleUses<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !test_only(attrs_of(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `format!("{}", crate::x::y())`: paths inside macro calls are tokens.
        let tokens: Vec<String> = m
            .tokens
            .clone()
            .into_iter()
            .map(|t| t.to_string())
            .collect();
        for w in tokens.windows(4) {
            if w[0] == "crate" && w[1] == ":" && w[2] == ":" {
                self.note(&["crate".to_owned(), w[3].clone()]);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// The edges between the top-level modules of the crate whose source is in `src`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let root_file = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.is_file())
        .unwrap();
    let mut tops = BTreeSet::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p == root_file {
            continue;
        }
        if p.is_dir() || p.extension().is_some_and(|e| e == "rs") {
            tops.insert(name);
        }
    }
    // `pub use store::Session;` in lib.rs: `crate::Session` is a use of `store`.
    let mut reexports = BTreeMap::new();
    for item in parse(&root_file).items {
        if let syn::Item::Use(u) = item {
            let mut leaves = Vec::new();
            collect_leaves(&u.tree, &mut Vec::new(), &mut leaves);
            for path in leaves {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                let from = if path.first() == Some(&"crate") { 1 } else { 0 };
                if let (Some(m), Some(leaf)) = (path.get(from), path.last())
                    && tops.contains(*m)
                {
                    reexports.insert((*leaf).to_owned(), (*m).to_owned());
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for file in rs_files(src) {
        let rel = file.strip_prefix(src).unwrap();
        let mut module: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let Some(top) = module.first().cloned() else {
            continue;
        };
        if !tops.contains(&top) {
            continue; // the crate root, or a file no module declares
        }
        let mut v = ModuleUses {
            tops: &tops,
            reexports: &reexports,
            module,
            found: BTreeSet::new(),
        };
        v.visit_file(&parse(&file));
        v.found.remove(&top);
        graph
            .entry(top)
            .or_insert_with(BTreeSet::new)
            .extend(v.found);
    }
    graph
}

fn collect_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            collect_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.rename.to_string());
            out.push(path);
        }
        syn::UseTree::Glob(_) => {}
        syn::UseTree::Group(g) => {
            for t in &g.items {
                collect_leaves(t, prefix, out);
            }
        }
    }
}

/// The groups of modules that reach each other (strongly connected, more than one module).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in graph.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for (m, r) in &reaches {
        let group: BTreeSet<String> = r
            .iter()
            .filter(|n| reaches.get(n).is_some_and(|back| back.contains(*m)))
            .cloned()
            .collect();
        if group.len() > 1 && !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

#[test]
fn no_crate_has_a_cycle_between_its_top_level_modules() {
    for (name, src) in source_roots() {
        let graph = module_graph(&src);
        assert!(
            graph.len() >= 5,
            "{name}: only {} modules read",
            graph.len()
        );
        assert_eq!(
            cycles(&graph),
            Vec::<BTreeSet<String>>::new(),
            "{name}: {graph:#?}"
        );
    }
}

#[test]
fn the_cycle_check_finds_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod c; pub use c::Thing;").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::f; fn g() { f() }").unwrap();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod inner; pub fn f() {}").unwrap();
    // `super::super::a` from b/inner.rs, and `crate::Thing` re-exported from c.
    std::fs::write(
        src.join("b/inner.rs"),
        "fn h() { super::super::a::g(); let _ = crate::Thing; }",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub struct Thing; #[cfg(test)] mod tests { use crate::a; }",
    )
    .unwrap();
    let graph = module_graph(src);
    assert_eq!(graph["a"], BTreeSet::from(["b".to_owned()]));
    assert_eq!(graph["b"], BTreeSet::from(["a".to_owned(), "c".to_owned()]));
    assert!(
        graph["c"].is_empty(),
        "test modules do not count: {graph:?}"
    );
    assert_eq!(
        cycles(&graph),
        vec![BTreeSet::from(["a".to_owned(), "b".to_owned()])]
    );
}

/// Functions longer than `max` lines (from `fn` to the closing brace), outside test code.
struct LongFunctions {
    file: String,
    max: usize,
    found: Vec<String>,
}

impl LongFunctions {
    fn check(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = end + 1 - start;
        if lines > self.max {
            self.found
                .push(format!("{}:{start} {name} ({lines} lines)", self.file));
        }
    }
}

impl<'ast> Visit<'ast> for LongFunctions {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !test_only(attrs_of(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.check(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !test_only(&f.attrs) {
            self.check(&f.sig.ident, &f.sig.fn_token, &f.block);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.check(&f.sig.ident, &f.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn long_functions(files: &[PathBuf], max: usize) -> Vec<String> {
    let mut v = LongFunctions {
        file: String::new(),
        max,
        found: Vec::new(),
    };
    for f in files {
        v.file = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        v.visit_file(&parse(f));
    }
    v.found
}

#[test]
fn at_most_ten_functions_are_over_100_lines() {
    let files: Vec<PathBuf> = source_roots()
        .iter()
        .flat_map(|(_, src)| rs_files(src))
        .collect();
    let long = long_functions(&files, 100);
    // The ones left are long matches over a protocol or a format, which read better whole.
    assert!(
        long.len() <= 10,
        "{} functions over 100 lines:\n{}",
        long.len(),
        long.join("\n")
    );
    // The check itself: a function of 101 lines is found, one of 100 is not.
    let dir = tempfile::tempdir().unwrap();
    let body = |n: usize| "    let _ = 1;\n".repeat(n - 2);
    let path = dir.path().join("x.rs");
    std::fs::write(
        &path,
        format!(
            "fn long() {{\n{}}}\nfn short() {{\n{}}}\n",
            body(101),
            body(100)
        ),
    )
    .unwrap();
    let found = long_functions(&[path], 100);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("long (101 lines)"), "{found:?}");
}

/// The lines of the Rust files below `dir` with their comments cut off, up to the file's
/// test module.
fn code_lines(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for f in rs_files(dir) {
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or("");
        for line in code.lines() {
            let code = line.split("//").next().unwrap_or("").to_owned();
            out.push((f.clone(), code));
        }
    }
    out
}

#[test]
fn only_the_binary_downcasts_errors() {
    for (name, _) in LAYERS {
        for (f, code) in code_lines(&root().join("crates").join(name).join("src")) {
            assert!(!code.contains("downcast"), "{}: {code}", f.display());
            assert!(!code.contains("anyhow"), "{}: {code}", f.display());
        }
    }
    // The binary is where errors become messages and exit codes.
    assert!(read("src/error.rs").contains("downcast_ref"));
}

#[test]
fn visibility_is_the_api_of_every_library() {
    let workspace = read("Cargo.toml");
    let lints = workspace
        .split("[workspace.lints.rust]")
        .nth(1)
        .unwrap_or("");
    assert!(lints.contains("unreachable_pub = \"warn\""), "{lints}");
    for (name, _) in LAYERS {
        let manifest = read(&format!("crates/{name}/Cargo.toml"));
        assert!(
            manifest.contains("[lints]\nworkspace = true"),
            "{name} does not take the workspace's lints"
        );
    }
    // CI makes warnings errors.
    assert!(read(".ci/run").contains("-D warnings"));
}

#[test]
fn each_shared_mechanism_is_written_once() {
    let mut manifests = vec![read("Cargo.toml")];
    manifests.extend(
        LAYERS
            .iter()
            .map(|(n, _)| read(&format!("crates/{n}/Cargo.toml"))),
    );
    for m in &manifests {
        let deps = dependencies(m);
        assert!(!deps.contains("jiff"), "one date crate: chrono");
    }
    assert!(dependencies(&read("Cargo.toml")).contains("roff"));
    assert!(read("src/render/roff.rs").contains("roff::"));
    let base = root().join("crates/pi-base/src");
    for (name, src) in source_roots() {
        for (f, code) in code_lines(&src) {
            let at = || format!("{name}: {}: {code}", f.display());
            assert!(!code.contains("flock"), "std's File::lock: {}", at());
            if !f.starts_with(&base) {
                assert!(
                    !code.contains("fs::rename"),
                    "atomic writes: pi_base::fs: {}",
                    at()
                );
                assert!(
                    !code.contains("available_parallelism"),
                    "thread counts: pi_base::par: {}",
                    at()
                );
            }
        }
    }
    let fs = read("crates/pi-base/src/fs.rs");
    assert!(fs.contains(".lock()") && fs.contains("fs::rename"));
    // The hand-written JSON scanner and SSE reader say, with a benchmark's figures, why
    // they are not the crates; the vector paths kept are the ones that benchmark justifies.
    let json = read("crates/pi-base/src/json.rs");
    assert!(json.contains("cargo bench -p pi-base --bench json") && json.contains("MB/s"));
    assert!(
        !json.contains("avx512bw\")"),
        "the AVX-512 path measured no faster"
    );
    let sse = read("crates/pi-ai/src/providers/sse.rs");
    assert!(sse.contains("cargo bench -p pi-ai --bench sse") && sse.contains("MB/s"));
    for bench in [
        "crates/pi-base/benches/json.rs",
        "crates/pi-ai/benches/sse.rs",
    ] {
        assert!(root().join(bench).is_file(), "{bench}");
    }
}

#[test]
fn the_documents_show_the_design() {
    let arch = read("docs/architecture.md");
    for (name, _) in LAYERS {
        assert!(
            arch.contains(&format!("`{name}`")),
            "architecture.md: {name}"
        );
    }
    for topic in ["pi run", "pi compact", "eighth provider", "new entry type"] {
        assert!(arch.contains(topic), "architecture.md: {topic}");
    }
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines < 520, "README.md has {lines} lines");
    assert!(readme.contains("## Architecture"));
    // The install's build time, measured.
    let install = readme.split("## Install").nth(1).unwrap_or("");
    let install = install.split("\n## ").next().unwrap_or("");
    assert!(
        install.contains("on two cores") && install.contains(" min "),
        "{install}"
    );
    assert!(readme.contains("docs/performance.md"));
    assert!(read("docs/performance.md").contains("| ratio |"));
}

#[test]
fn every_decisions_reference_points_into_the_record() {
    let record = read("docs/decisions.md");
    let sections: BTreeSet<String> = record
        .lines()
        .filter_map(|l| l.strip_prefix("## §"))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    assert!(sections.len() >= 7, "{sections:?}");
    // Written in two parts so that this file does not cite itself.
    let needle = ["docs/decisions.md", " §"].concat();
    let mut cited = 0;
    let mut files: Vec<PathBuf> = source_roots()
        .iter()
        .flat_map(|(_, src)| rs_files(src))
        .collect();
    files.extend(rs_files(&root().join("tests")));
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains(&["DECISIONS", " §"].concat()),
            "{}: cites a file outside the repository",
            f.display()
        );
        for (k, _) in text.match_indices(&needle) {
            let n: String = text[k + needle.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            assert!(
                sections.contains(&n),
                "{}: §{n} is not in docs/decisions.md",
                f.display()
            );
            cited += 1;
        }
    }
    assert!(cited >= 5, "only {cited} citations found");
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = read("README.md");
    let test = readme.split("## Test\n").nth(1).unwrap();
    let command = test
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.lines().next())
        .unwrap();
    assert!(
        command.contains("cargo test --locked --workspace"),
        "{command}"
    );
    let ci = read(".ci/run");
    let last = ci.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(last, command);
}
