//! The integration tests: one binary (link time matters on small machines), one module per
//! area. `every_test_file_is_listed` keeps the list honest.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chat_lines;
mod chat_tty;
mod cli;
mod closed_pipe;
mod common;
mod compact_cli;
mod compact_goldens;
mod completions;
mod context16;
mod context_build;
mod context_goldens;
mod context_stats;
mod diagnostics;
mod docs;
mod ext_hooks;
mod ext_tools;
mod ext_trust;
mod help;
mod hostile_entries;
mod hostile_model;
mod input_hardening;
mod llm_cloud;
mod llm_providers;
mod llm_responses;
mod model_errors;
mod models;
mod models16;
mod oauth_refresh;
mod private_data;
mod prompt_expand;
mod prompt_goldens;
mod prompt_list;
mod prompt_system;
mod robustness;
mod run_basic;
mod run_cloud;
mod run_compat;
mod run_library;
mod run_options;
mod run_recovery;
mod run_responses;
mod run_rpc;
mod run_rpc_16;
mod run_rpc_compat;
mod run_signals;
mod run_support;
mod run_tools;
mod session_append;
mod session_cache;
mod session_compat;
mod session_edit;
mod session_gc;
mod session_ids;
mod session_import;
mod session_log;
mod session_new;
mod session_safety;
mod session_search;
mod session_show;
mod session_tree;
mod session_use;
mod structure;
mod terminal;
mod tools_bash;
mod tools_cases;
mod tools_files;
mod tools_goldens;
mod tools_support;
mod usage;
mod usage_blocks;
mod usage_goldens;

#[test]
fn every_test_file_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(module) = name.strip_suffix(".rs")
            && module != "main"
        {
            assert!(
                main.contains(&format!("mod {module};")),
                "tests/cli/{name} is not listed in main.rs"
            );
        }
    }
}
