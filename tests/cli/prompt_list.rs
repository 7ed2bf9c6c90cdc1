//! `pi prompt list`: discovery of templates and skills and their diagnostics (test-cases SK,
//! RL1–RL3, and the frontmatter cases FM as they show through loading).

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::common::*;

fn list(w: &World, args: &[&str]) -> Vec<Value> {
    jsonl(&w.ok(&[&["prompt", "list", "--json"], args].concat()))
}

fn kind<'a>(recs: &'a [Value], k: &str) -> Vec<&'a Value> {
    recs.iter().filter(|r| r["kind"] == k).collect()
}

fn names(recs: &[Value], k: &str) -> Vec<String> {
    kind(recs, k)
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

fn messages(recs: &[Value]) -> Vec<String> {
    kind(recs, "diagnostic")
        .iter()
        .map(|r| r["message"].as_str().unwrap().to_owned())
        .collect()
}

/// `pi prompt list` over one fixture directory given with --skill-dir (discovery off).
fn fixture_skills(dir: &str) -> Vec<Value> {
    let w = World::new();
    let p = fixture(dir);
    list(
        &w,
        &[
            "--no-skills",
            "--no-prompt-templates",
            "--skill-dir",
            p.to_str().unwrap(),
        ],
    )
}

#[test]
fn sk1_valid_skill() {
    let r = fixture_skills("skills/valid-skill");
    let s = kind(&r, "skill");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["name"], "valid-skill");
    assert_eq!(s[0]["description"], "A valid skill for testing purposes.");
    assert_eq!(s[0]["disableModelInvocation"], false);
    assert_eq!(s[0]["scope"], "temporary");
    assert_eq!(s[0]["command"], "/skill:valid-skill");
    assert!(messages(&r).is_empty());
}

#[test]
fn sk2_to_sk12_validation() {
    let contains = |dir: &str, skills: &[&str], needle: &str| {
        let r = fixture_skills(dir);
        assert_eq!(names(&r, "skill"), skills, "{dir}");
        let m = messages(&r);
        if needle.is_empty() {
            assert!(m.is_empty(), "{dir}: {m:?}");
        } else {
            assert!(m.iter().any(|x| x.contains(needle)), "{dir}: {m:?}");
        }
    };
    // SK2 as in 1.6: a name that differs from its directory is fine.
    contains("skills/name-mismatch", &["different-name"], "");
    contains(
        "skills/invalid-name-chars",
        &["Invalid_Name"],
        "invalid characters",
    ); // SK3
    contains(
        "skills/long-name",
        &[
            "this-is-a-very-long-skill-name-that-exceeds-the-sixty-four-character-limit-set-by-the-standard",
        ],
        "exceeds 64 characters",
    ); // SK4
    contains("skills/missing-description", &[], "description is required"); // SK5
    contains("skills/unknown-field", &["unknown-field"], ""); // SK6
    contains("skills/nested", &["child-skill"], ""); // SK7
    contains("skills/no-frontmatter", &[], "description is required"); // SK9
    contains("skills/invalid-yaml", &[], "at line"); // SK10
    contains(
        "skills/consecutive-hyphens",
        &["bad--name"],
        "consecutive hyphens",
    ); // SK12
    let r = fixture_skills("skills/consecutive-hyphens");
    assert_eq!(messages(&r), ["name must not contain consecutive hyphens"]);
}

#[test]
fn sk8_root_skill_is_preferred() {
    let r = fixture_skills("skills/root-skill-preferred");
    let s = kind(&r, "skill");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["name"], "root-skill-preferred");
    assert_eq!(s[0]["description"], "Root skill should win.");
    assert!(messages(&r).is_empty());
}

#[test]
fn sk11_multiline_description() {
    let r = fixture_skills("skills/multiline-description");
    let d = kind(&r, "skill")[0]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        d.contains('\n') && d.contains("This is a multiline description."),
        "{d:?}"
    );
    assert!(messages(&r).is_empty());
}

#[test]
fn sk13_whole_directory_and_sk15() {
    let r = fixture_skills("skills");
    let n = names(&r, "skill");
    assert!(n.len() >= 6, "{n:?}");
    assert!(
        !n.iter()
            .any(|x| x == "missing-description" || x == "no-frontmatter")
    );
    let dmi = kind(&r, "skill")
        .into_iter()
        .find(|s| s["name"] == "disable-model-invocation")
        .unwrap();
    assert_eq!(dmi["disableModelInvocation"], true); // SK15
    assert!(!messages(&r).iter().any(|m| m.contains("unknown")));
}

#[test]
fn sk14_sk18_missing_paths() {
    let w = World::new();
    let r = list(&w, &["--no-skills", "--skill-dir", "/non/existent/path"]);
    assert!(kind(&r, "skill").is_empty());
    let d = kind(&r, "diagnostic");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["message"], "skill path does not exist");
    assert_eq!(d[0]["path"], "/non/existent/path");
}

#[test]
fn sk16_collision_first_wins() {
    let w = World::new();
    let first = fixture("skills-collision/first");
    let second = fixture("skills-collision/second");
    let r = list(
        &w,
        &[
            "--skill-dir",
            first.to_str().unwrap(),
            "--skill-dir",
            second.to_str().unwrap(),
        ],
    );
    let s = kind(&r, "skill");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["name"], "calendar");
    assert_eq!(s[0]["description"], "First calendar skill.");
    let c = kind(&r, "diagnostic");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["type"], "collision");
    assert_eq!(c[0]["message"], "name \"calendar\" collision");
    assert_eq!(c[0]["collision"]["resourceType"], "skill");
    assert!(
        c[0]["collision"]["winnerPath"]
            .as_str()
            .unwrap()
            .contains("/first/")
    );
    assert!(
        c[0]["collision"]["loserPath"]
            .as_str()
            .unwrap()
            .contains("/second/")
    );
}

#[test]
fn sk17_explicit_file_and_sk19_tilde() {
    let w = World::new();
    let p = fixture("skills/valid-skill");
    let r = list(&w, &["--skill-dir", p.to_str().unwrap()]);
    assert_eq!(names(&r, "skill"), ["valid-skill"]);
    assert_eq!(kind(&r, "skill")[0]["source"], "local");
    assert!(messages(&r).is_empty());
    // SK19: `~/…` is the same directory as its absolute form.
    w.write("home/my-skills/s/SKILL.md", "---\ndescription: S.\n---\n");
    let a = list(&w, &["--skill-dir", "~/my-skills"]);
    let abs = w.path("home/my-skills");
    let b = list(&w, &["--skill-dir", abs.to_str().unwrap()]);
    assert_eq!(names(&a, "skill"), ["s"]);
    assert_eq!(names(&a, "skill"), names(&b, "skill"));
}

#[test]
fn sk20_to_sk22_discovered_skills() {
    let w = World::new();
    w.write(
        "agent/skills/test-skill.md",
        "---\nname: test-skill\ndescription: A test skill.\n---\n",
    ); // SK20: a root-level .md file in the agent's skills directory
    w.write(
        "agent/skills/pi-skills/browser-tools/SKILL.md",
        "---\nname: browser-tools\ndescription: Browser tools.\n---\n",
    );
    w.write(
        "agent/skills/pi-skills/browser-tools/EFFICIENCY.md",
        "not a skill",
    ); // SK21
    w.write(
        "agent/skills/same/SKILL.md",
        "---\ndescription: User same.\n---\n",
    );
    w.write(
        "proj/.pi/skills/same/SKILL.md",
        "---\ndescription: Project same.\n---\n",
    ); // SK22
    let r = list(&w, &[]);
    let n = names(&r, "skill");
    assert!(n.contains(&"test-skill".to_owned()), "{n:?}");
    assert!(n.contains(&"browser-tools".to_owned()), "{n:?}");
    assert!(
        !kind(&r, "diagnostic")
            .iter()
            .any(|d| d["path"].as_str().unwrap().ends_with("EFFICIENCY.md"))
    );
    let same = kind(&r, "skill")
        .into_iter()
        .find(|s| s["name"] == "same")
        .unwrap();
    assert_eq!(same["description"], "Project same.");
    assert_eq!(same["scope"], "project");
    // `test-skill.md` sits directly in skills/: its directory name differs from the name,
    // which the reference 1.6 no longer reports.
    assert!(
        !messages(&r)
            .iter()
            .any(|m| m.contains("does not match parent directory"))
    );
}

#[test]
fn sk23_rl3_settings_can_switch_off_discovered_files() {
    let w = World::new();
    w.write(
        "agent/settings.json",
        r#"{"skills": ["-skills/skip-skill"], "prompts": ["-prompts/skip.md"]}"#,
    );
    w.write(
        "agent/skills/skip-skill/SKILL.md",
        "---\ndescription: Skip.\n---\n",
    );
    w.write(
        "agent/skills/keep-skill/SKILL.md",
        "---\ndescription: Keep.\n---\n",
    );
    w.write("agent/prompts/skip.md", "skip");
    w.write("agent/prompts/keep.md", "keep");
    let r = list(&w, &[]);
    assert_eq!(names(&r, "skill"), ["keep-skill"]);
    assert_eq!(names(&r, "template"), ["keep"]);
}

#[test]
fn agents_skills_up_to_the_git_root() {
    let w = World::new();
    std::fs::create_dir_all(w.path("proj/.git")).unwrap();
    w.write(
        "proj/.agents/skills/here/SKILL.md",
        "---\ndescription: Here.\n---\n",
    );
    w.write(
        "proj/.agents/skills/root-file.md",
        "---\nname: rf\ndescription: Ignored.\n---\n",
    );
    std::fs::create_dir_all(w.path("proj/sub/deeper")).unwrap();
    w.write(
        "proj/sub/.agents/skills/mid/SKILL.md",
        "---\ndescription: Mid.\n---\n",
    );
    // Above the git root: not searched.
    w.write(
        ".agents/skills/outside/SKILL.md",
        "---\ndescription: Outside.\n---\n",
    );
    w.write(
        "home/.agents/skills/mine/SKILL.md",
        "---\ndescription: Mine.\n---\n",
    );
    let r = list(&w, &["--cwd", "sub/deeper"]);
    let s = kind(&r, "skill");
    let got: Vec<(String, String)> = s
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().into(),
                x["scope"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("mid".to_owned(), "project".to_owned()),
            ("here".to_owned(), "project".to_owned()),
            ("mine".to_owned(), "user".to_owned())
        ]
    );
}

#[test]
fn rl1_templates_and_descriptions() {
    let w = World::new();
    w.write(
        "agent/prompts/test-prompt.md",
        "---\ndescription: A test prompt\nargument-hint: <file>\n---\nBody",
    );
    w.write(
        "agent/prompts/long.md",
        format!("\n\n{}\nmore", "word ".repeat(20)),
    );
    w.write("agent/prompts/ignored.txt", "x");
    w.write("agent/prompts/nested/deep.md", "not recursive");
    // FM3: skipped, with a warning since the reference 1.6.
    w.write("agent/prompts/broken.md", "---\ndescription: [\n---\nBody");
    w.write(
        "agent/prompts/crlf.md",
        "---\r\ndescription: Windows\r\n---\r\nBody\r\n",
    ); // FM2
    let r = list(&w, &[]);
    assert_eq!(names(&r, "template"), ["crlf", "long", "test-prompt"]);
    let t = kind(&r, "template");
    assert_eq!(t[0]["description"], "Windows");
    assert_eq!(
        t[1]["description"],
        format!("{}...", &"word ".repeat(20)[..60])
    );
    assert_eq!(t[2]["description"], "A test prompt");
    assert_eq!(t[2]["argumentHint"], "<file>");
    assert_eq!(t[2]["command"], "/test-prompt");
    assert_eq!(t[2]["scope"], "user");
    assert_eq!(t[2]["source"], "auto");
    let d = kind(&r, "diagnostic");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (&d[0]["resource"], &d[0]["type"]),
        (&json!("prompt"), &json!("warning"))
    );
    assert!(
        d[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("agent/prompts/broken.md")
    );
    assert!(d[0]["message"].as_str().unwrap().contains("line"), "{d:?}");
}

#[test]
fn rl2_collisions_are_reported() {
    let w = World::new();
    w.write("agent/prompts/commit.md", "user");
    w.write("proj/.pi/prompts/commit.md", "project");
    let r = list(&w, &[]);
    let t = kind(&r, "template");
    assert_eq!(t.len(), 1);
    assert_eq!(t[0]["scope"], "project");
    let d = kind(&r, "diagnostic");
    assert_eq!(d[0]["resource"], "prompt");
    assert_eq!(d[0]["type"], "collision");
    assert_eq!(d[0]["message"], "name \"/commit\" collision");
}

#[test]
fn ignore_files_are_honoured() {
    let w = World::new();
    w.write("agent/skills/.gitignore", "drafts/\n*.tmp.md\n");
    w.write(
        "agent/skills/drafts/x/SKILL.md",
        "---\ndescription: Draft.\n---\n",
    );
    w.write("agent/skills/y.tmp.md", "---\ndescription: Tmp.\n---\n");
    w.write("agent/skills/z/SKILL.md", "---\ndescription: Z.\n---\n");
    w.write("agent/prompts/.ignore", "secret.md\n");
    w.write("agent/prompts/secret.md", "s");
    w.write("agent/prompts/open.md", "o");
    let r = list(&w, &[]);
    assert_eq!(names(&r, "skill"), ["z"]);
    assert_eq!(names(&r, "template"), ["open"]);
}

#[test]
fn human_listing() {
    let w = World::new();
    w.write(
        "proj/.pi/prompts/review.md",
        "---\ndescription: Review a PR\nargument-hint: <pr>\n---\nx",
    );
    w.write(
        "agent/skills/foo/SKILL.md",
        "---\ndescription: Foo skill.\n---\n",
    );
    w.write(
        "agent/skills/Bad/SKILL.md",
        "---\ndescription: Bad name.\n---\n",
    );
    // The invalid name is listed, and warned about after the list.
    insta::assert_snapshot!(w.snap(&["prompt", "list", "--format", "human"]), @"
    status: 0
    ----- stdout -----
    /review <pr>  project  Review a PR
    /skill:Bad    user     Bad name.
    /skill:foo    user     Foo skill.
    warning: [AGENT]/skills/Bad/SKILL.md: name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)
    ----- stderr -----
    ");
}

#[test]
fn nothing_found() {
    let w = World::new();
    assert!(list(&w, &[]).is_empty());
    insta::assert_snapshot!(w.snap(&["prompt", "list", "--format", "human"]), @"
    status: 0
    ----- stdout -----
    ----- stderr -----
    pi: no prompt templates or skills found
    ");
}

#[test]
fn bad_settings_are_a_warning() {
    let w = World::new();
    w.write("proj/.pi/settings.json", "{not json");
    w.write("agent/prompts/a.md", "a");
    let out = w
        .pi()
        .args(["prompt", "list", "--json"])
        .assert()
        .success()
        .stderr(predicate::str::contains("pi: warning: ignoring"));
    assert_eq!(
        jsonl(&String::from_utf8_lossy(&out.get_output().stdout))[0]["name"],
        json!("a")
    );
}

#[test]
fn cwd_must_be_a_directory() {
    let w = World::new();
    w.pi()
        .args(["prompt", "list", "--cwd", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a directory"));
}

#[test]
fn symlink_cycles_end() {
    let w = World::new();
    w.write("agent/skills/a/b/SKILL.md", "---\ndescription: B.\n---\n");
    for l in ["l1", "l2", "l3"] {
        std::os::unix::fs::symlink("..", w.path(&format!("agent/skills/a/{l}"))).unwrap();
    }
    std::os::unix::fs::symlink(".", w.path("agent/skills/a/b/self")).unwrap();
    std::os::unix::fs::symlink("missing", w.path("agent/skills/broken")).unwrap();
    let r = list(&w, &[]);
    assert_eq!(names(&r, "skill"), ["b"]);
}

#[test]
fn explicit_paths_are_relative_to_where_pi_runs() {
    let w = World::new();
    std::fs::create_dir_all(w.path("proj/elsewhere")).unwrap();
    w.write("proj/mine/s/SKILL.md", "---\ndescription: Mine.\n---\n");
    let r = list(&w, &["--cwd", "elsewhere", "--skill-dir", "mine"]);
    assert_eq!(names(&r, "skill"), ["s"]);
    assert!(kind(&r, "diagnostic").is_empty());
}

/// SK14: skill folders that do not exist (the default ones here) give no skills and no
/// diagnostics; only an explicit path that does not exist is reported (SK18).
#[test]
fn sk14_missing_default_folders_are_silent() {
    let w = World::new();
    assert!(!w.agent().join("skills").exists());
    let r = list(&w, &[]);
    assert!(kind(&r, "skill").is_empty(), "{r:?}");
    assert!(kind(&r, "diagnostic").is_empty(), "{r:?}");
}
