//! Every integration test in one binary: one link instead of twenty-three.
//! The fault-injection run (`tests/faults/`) stays a binary of its own: it is
//! long, and it is run on its own with its own settings.

#[path = "../common/mod.rs"]
mod common;

mod acp_client;
mod acp_driver;
mod acp_failures;
mod acp_processes;
mod agent_loop;
mod agents_api;
mod alerts;
mod as_judged;
mod audit_store;
mod binary;
mod changes_api;
mod checkpoints;
mod config_api;
mod decisions;
mod decisions_acp;
mod decisions_batch;
mod decisions_turns;
mod docs_links;
mod folder_browser;
mod gates;
mod habits;
mod leptos_toml;
mod module_graph;
mod remote;
mod residency;
mod restart;
mod review_and_questions;
mod rules_api;
mod sandbox;
mod sessions_api;
mod shutdown;
mod stop;
mod storage_faults;
mod trust;
mod worktrees;
