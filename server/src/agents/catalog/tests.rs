use axum::http::StatusCode;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::file::{AgentServer, BuiltinEntry};
use super::*;

fn server(command: &str) -> AgentServer {
    AgentServer {
        name: None,
        kind: None,
        default_mode: None,
        default_model: None,
        command: command.into(),
        args: vec![],
        env: BTreeMap::new(),
    }
}

fn file(servers: &[(&str, AgentServer)], default: Option<&str>) -> AgentsFile {
    AgentsFile {
        default: default.map(str::to_string),
        agent_servers: servers.iter().map(|(id, server)| (id.to_string(), server.clone())).collect(),
        builtin: None,
    }
}

fn ids(catalog: &Catalog) -> Vec<&str> {
    catalog.entries().iter().map(|entry| entry.id.as_str()).collect()
}

fn model() -> ModelConfig {
    ModelConfig { base_url: "http://127.0.0.1:9/v1".into(), model: "m".into(), api_key: None }
}

#[test]
fn the_built_in_agent_and_the_ready_ones_come_first() {
    let catalog = Catalog::new(AgentFlags { model: Some(model()), ..AgentFlags::default() });
    assert_eq!(ids(&catalog), ["builtin", "gemini", "claude-code", "codex"]);
    assert_eq!(catalog.default_id(), "builtin");
    let builtin = catalog.get("builtin").unwrap().info();
    assert_eq!((builtin.available, builtin.model.as_deref(), builtin.kind), (true, Some("m"), AgentKind::Builtin));
    let claude = catalog.get("claude-code").unwrap().info();
    assert_eq!((claude.command.as_deref(), claude.source), (Some("claude-code-acp"), AgentSource::Ready));
}

#[test]
fn without_a_model_the_built_in_agent_is_unavailable_and_says_how_to_set_one() {
    let catalog = Catalog::new(AgentFlags::default());
    let info = catalog.get("builtin").unwrap().info();
    assert!(!info.available);
    assert!(info.reason.unwrap().contains("--model-url"));
}

#[test]
fn the_files_builtin_entry_gives_the_model_unless_the_flags_do() {
    let mut agents = file(&[], None);
    agents.builtin =
        Some(BuiltinEntry { base_url: "http://x/v1".into(), model: "from-file".into(), api_key_env: None });
    let catalog = Catalog::new(AgentFlags { file: Some(agents.clone()), ..AgentFlags::default() });
    let info = catalog.get("builtin").unwrap().info();
    assert_eq!((info.model.as_deref(), info.source), (Some("from-file"), AgentSource::File));
    let catalog = Catalog::new(AgentFlags { file: Some(agents), model: Some(model()), ..AgentFlags::default() });
    assert_eq!(catalog.get("builtin").unwrap().info().model.as_deref(), Some("m"));
}

#[test]
fn a_missing_command_is_unavailable_with_the_reason() {
    let catalog = Catalog::new(AgentFlags {
        file: Some(file(&[("mine", server("/nonexistent/agent-hub-agent"))], None)),
        ..AgentFlags::default()
    });
    let info = catalog.get("mine").unwrap().info();
    assert!(!info.available);
    assert_eq!(info.reason.as_deref(), Some("`/nonexistent/agent-hub-agent` is not an executable file."));
    assert_eq!(info.source, AgentSource::File);
    let err = crate::http::error::ApiError::from(catalog.for_new_session(Some("mine"), None).unwrap_err());
    assert_eq!((err.status, err.code), (StatusCode::CONFLICT, "agent_unavailable"));
}

#[test]
fn programs_are_found_on_path_only_when_executable() {
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::join_paths([dir.path()]).unwrap();
    assert_eq!(find_program_in("agent", &path), Err("is not installed (not found on PATH)"));
    let program = dir.path().join("agent");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    assert!(find_program_in("agent", &path).is_err(), "not executable yet");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(find_program_in("agent", &path), Ok(program.clone()));
    assert_eq!(find_program_in(program.to_str().unwrap(), &std::ffi::OsString::new()), Ok(program));
    assert!(find_program_in(dir.path().to_str().unwrap(), &path).is_err(), "a directory is no program");
}

#[test]
fn a_file_entry_with_a_ready_id_takes_its_place_and_keeps_its_name() {
    let mut gemini = server("/opt/gemini");
    gemini.args = vec!["--acp".into()];
    gemini.env.insert("GEMINI_API_KEY".into(), "k".into());
    let catalog = Catalog::new(AgentFlags {
        file: Some(file(&[("gemini", gemini), ("zed", server("z"))], None)),
        ..AgentFlags::default()
    });
    assert_eq!(ids(&catalog), ["builtin", "gemini", "claude-code", "codex", "zed"]);
    let info = catalog.get("gemini").unwrap().info();
    assert_eq!((info.name.as_str(), info.command.as_deref()), ("Gemini CLI", Some("/opt/gemini --acp")));
    assert_eq!(catalog.get("zed").unwrap().name, "zed", "no name: the id");
}

#[test]
fn the_flags_agent_is_the_default_and_takes_the_ready_entry_of_its_program() {
    let acp = Arc::new(AcpAgent::new("/usr/local/bin/gemini --acp -m x").unwrap());
    let catalog = Catalog::new(AgentFlags { acp: Some(acp), agent_flag_given: true, ..AgentFlags::default() });
    assert_eq!(ids(&catalog), ["builtin", "gemini", "claude-code", "codex"]);
    assert_eq!(catalog.default_id(), "gemini");
    assert_eq!(catalog.get("gemini").unwrap().source, AgentSource::Flags);

    let acp = Arc::new(AcpAgent::new("qwen --acp").unwrap());
    let catalog = Catalog::new(AgentFlags {
        acp: Some(acp),
        file: Some(file(&[], Some("codex"))),
        agent_flag_given: true,
        acp_command_given: true,
        ..AgentFlags::default()
    });
    let id = catalog.default_id().to_string();
    assert!(id.starts_with("acp-") && id.len() == 12, "named after its command line: {id}");
    assert_eq!(catalog.get(&id).unwrap().name, "qwen (ACP)");
    let again = |command: &str| {
        let acp = Some(Arc::new(AcpAgent::new(command).unwrap()));
        Catalog::new(AgentFlags { acp, agent_flag_given: true, acp_command_given: true, ..AgentFlags::default() })
            .default_id()
            .to_string()
    };
    assert_eq!(again("qwen --acp"), id, "the same command is the same agent in another launch");
    assert_ne!(again("npx -y other-agent"), again("npx -y some-agent"), "a launcher does not make them one");
    assert_eq!(again("codex --acp").len(), 12, "a program named codex is not the ready codex-acp");
}

#[test]
fn a_defaulted_acp_command_leaves_the_files_entry_for_its_program_alone() {
    let mut gemini = server("/opt/gemini");
    gemini.env.insert("GEMINI_API_KEY".into(), "k".into());
    let agents = file(&[("gemini", gemini)], None);
    let acp = || Some(Arc::new(AcpAgent::new("gemini --acp").unwrap()));
    let catalog = Catalog::new(AgentFlags {
        acp: acp(),
        file: Some(agents.clone()),
        agent_flag_given: true,
        ..AgentFlags::default()
    });
    assert_eq!(catalog.default_id(), "gemini");
    let info = catalog.get("gemini").unwrap().info();
    assert_eq!(
        (info.source, info.command.as_deref()),
        (AgentSource::File, Some("/opt/gemini")),
        "the file's, with its env"
    );
    let catalog = Catalog::new(AgentFlags {
        acp: acp(),
        file: Some(agents),
        agent_flag_given: true,
        acp_command_given: true,
        ..AgentFlags::default()
    });
    assert_eq!(catalog.get("gemini").unwrap().source, AgentSource::Flags, "a given --acp-command wins");
}

#[test]
fn a_session_stored_before_agents_gets_the_agent_its_state_shows() {
    let acp = Some(Arc::new(AcpAgent::new("qwen --acp").unwrap()));
    let with_flags = Catalog::new(AgentFlags { acp, model: Some(model()), ..AgentFlags::default() });
    let without =
        Catalog::new(AgentFlags { file: Some(file(&[("zed", server("z"))], Some("zed"))), ..AgentFlags::default() });
    let acp_state = r#"{"messages": [], "acp": {"session_id": "s1", "agent_name": "qwen"}}"#;
    let builtin_state = r#"{"messages": [{"role": "user", "content": "hi"}], "acp": {}}"#;
    assert_eq!(with_flags.agent_of_older_session(Some(acp_state)), with_flags.default_id());
    assert!(with_flags.default_id().starts_with("acp-"));
    assert_eq!(without.agent_of_older_session(Some(acp_state)), "gemini", "what --agent acp ran by default");
    assert_eq!(with_flags.agent_of_older_session(Some(builtin_state)), "builtin");
    assert_eq!(without.agent_of_older_session(Some(builtin_state)), "builtin");
    assert_eq!(without.agent_of_older_session(None), "zed", "nothing kept: the default");
    assert_eq!(without.agent_of_older_session(Some("not json")), "zed");
}

#[test]
fn an_agents_own_path_decides_whether_it_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("my-agent"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(dir.path().join("my-agent"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut found = server("my-agent");
    found.env.insert("PATH".into(), dir.path().display().to_string());
    let catalog = Catalog::new(AgentFlags { file: Some(file(&[("found", found)], None)), ..AgentFlags::default() });
    assert_eq!(catalog.get("found").unwrap().unavailable(), None);
}

#[test]
fn the_files_default_counts_unless_the_agent_flag_was_given() {
    let agents = file(&[("zed", server("z"))], Some("zed"));
    let catalog = Catalog::new(AgentFlags { file: Some(agents.clone()), ..AgentFlags::default() });
    assert_eq!(catalog.default_id(), "zed");
    let catalog = Catalog::new(AgentFlags { file: Some(agents), agent_flag_given: true, ..AgentFlags::default() });
    assert_eq!(catalog.default_id(), "builtin");
    // `AgentsFile::read` refuses such a file; were one built by hand, the built-in agent stays the default.
    let catalog = Catalog::new(AgentFlags { file: Some(file(&[], Some("nope"))), ..AgentFlags::default() });
    assert_eq!(catalog.default_id(), "builtin");
}

#[test]
fn a_new_session_gets_the_asked_agent_else_the_folders_else_the_default() {
    let sh = server("/bin/sh");
    let agents = file(&[("sh", sh), ("missing", server("/nonexistent/agent-hub-agent"))], None);
    let catalog = Catalog::new(AgentFlags { model: Some(model()), file: Some(agents), ..AgentFlags::default() });
    assert_eq!(catalog.for_new_session(None, None).unwrap(), "builtin");
    assert_eq!(catalog.for_new_session(None, Some("sh")).unwrap(), "sh", "the folder's last choice");
    assert_eq!(catalog.for_new_session(None, Some("missing")).unwrap(), "builtin", "a choice that cannot start now");
    assert_eq!(catalog.for_new_session(None, Some("gone")).unwrap(), "builtin", "a choice no longer listed");
    assert_eq!(catalog.for_new_session(Some("builtin"), Some("sh")).unwrap(), "builtin");
    let err = crate::http::error::ApiError::from(catalog.for_new_session(Some("nope"), None).unwrap_err());
    assert_eq!((err.status, err.code), (StatusCode::BAD_REQUEST, "unknown_agent"));
    assert!(err.message.contains("builtin, gemini, claude-code, codex, missing, sh"), "{}", err.message);
}

/// An ACP agent inherits little of the hub's environment: `--acp-env` is how a
/// ready agent or a file's entry gets its API key from it.
#[test]
fn every_acp_agent_gets_the_variables_acp_env_names() {
    let mut zed = server("z");
    zed.env.insert("Z_MODE".into(), "fast".into());
    let catalog = Catalog::new(AgentFlags {
        file: Some(file(&[("zed", zed)], None)),
        acp_env: vec!["GEMINI_API_KEY".into(), "ANTHROPIC_API_KEY".into()],
        ..AgentFlags::default()
    });
    for id in ["gemini", "claude-code", "codex", "zed"] {
        let Runner::Acp(agent) = &catalog.get(id).unwrap().runner else { panic!("{id} is an ACP agent") };
        assert_eq!(agent.passed_env(), ["GEMINI_API_KEY", "ANTHROPIC_API_KEY"], "{id}");
    }
    let Runner::Acp(zed) = &catalog.get("zed").unwrap().runner else { unreachable!() };
    assert_eq!(zed.var("Z_MODE"), Some("fast"), "and the entry's own env");
}
