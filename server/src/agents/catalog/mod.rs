//! The agents a session can work with (`GET /api/agents`): the built-in agent,
//! ready entries for Gemini CLI, Claude Code and Codex, what the user's agents
//! file adds or changes (`file`), and the agent the launch flags name. A new
//! session picks one; it keeps it for its life.

pub mod file;

use std::path::Path;
use std::sync::Arc;

use protocol::api::{AgentInfo, AgentKind, AgentRef, AgentSource};

use crate::agents::acp::AcpAgent;
use crate::agents::builtin::model::{ModelClient, ModelConfig};
use crate::agents::builtin::BuiltinAgent;
use crate::agents::Agent;
pub use file::{AgentsFile, AgentsFileError};

/// The built-in agent's id.
pub const BUILTIN_ID: &str = "builtin";
/// The id of an agent the launch flags name that is none of the ready ones.
pub const FLAGS_ACP_ID: &str = "acp";

/// An ACP agent shipped as a ready entry: found on `PATH` when installed.
struct Ready {
    id: &'static str,
    name: &'static str,
    command: &'static [&'static str],
    install: &'static str,
}

const READY: &[Ready] = &[
    Ready {
        id: "gemini",
        name: "Gemini CLI",
        command: &["gemini", "--acp"],
        install: "npm install -g @google/gemini-cli",
    },
    Ready {
        id: "claude-code",
        name: "Claude Code",
        command: &["claude-code-acp"],
        install: "npm install -g @zed-industries/claude-code-acp",
    },
    Ready { id: "codex", name: "Codex", command: &["codex-acp"], install: "npm install -g @zed-industries/codex-acp" },
];

/// How an agent runs.
pub enum Runner {
    /// The hub's own tool loop.
    Builtin(Arc<BuiltinAgent>),
    Acp(Arc<AcpAgent>),
}

pub struct AgentEntry {
    pub id: String,
    pub name: String,
    pub source: AgentSource,
    pub runner: Runner,
    /// How to install a ready agent whose command is missing.
    install: Option<&'static str>,
}

impl AgentEntry {
    /// Why a session cannot work with it now, checked each time (an agent
    /// installed while the hub runs becomes available).
    pub fn unavailable(&self) -> Option<String> {
        match &self.runner {
            Runner::Builtin(agent) if agent.model().is_some() => None,
            Runner::Builtin(_) => Some(
                "No model is configured: start the hub with --model-url and --model (OPENAI_BASE_URL and \
                 HUB_MODEL), or set \"builtin\" in the agents file."
                    .into(),
            ),
            Runner::Acp(agent) => {
                let program = agent.program();
                // Where the spawn looks: the entry's own PATH when it sets one.
                let path = match agent.var("PATH") {
                    Some(path) => path.into(),
                    None => std::env::var_os("PATH").unwrap_or_default(),
                };
                let missing = find_program_in(program, &path).err()?;
                let install = self.install.map(|how| format!(" Install it: {how}.")).unwrap_or_default();
                Some(format!("`{program}` {missing}.{install}"))
            }
        }
    }

    /// The agent itself, as the sessions drive it.
    pub fn agent(&self) -> Arc<dyn Agent> {
        match &self.runner {
            Runner::Builtin(agent) => agent.clone(),
            Runner::Acp(agent) => agent.clone(),
        }
    }

    pub fn is_builtin(&self) -> bool {
        matches!(self.runner, Runner::Builtin(_))
    }

    pub fn reference(&self) -> AgentRef {
        AgentRef { id: self.id.clone(), name: self.name.clone() }
    }

    pub fn info(&self) -> AgentInfo {
        let reason = self.unavailable();
        let (kind, command, model) = match &self.runner {
            Runner::Builtin(agent) => (AgentKind::Builtin, None, agent.model().map(|model| model.model().to_string())),
            Runner::Acp(agent) => (AgentKind::Acp, Some(agent.command_line().to_string()), None),
        };
        AgentInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            kind,
            command,
            model,
            available: reason.is_none(),
            reason,
            source: self.source,
        }
    }
}

/// What the launch says about agents.
#[derive(Default)]
pub struct AgentFlags {
    /// `--model-url`/`--model`: the built-in agent's model (before the file's).
    pub model: Option<ModelConfig>,
    /// `--agent acp --acp-command …`.
    pub acp: Option<Arc<AcpAgent>>,
    pub file: Option<AgentsFile>,
    /// `--agent` (or `HUB_AGENT`) was given: its agent is the default, not the file's.
    pub agent_flag_given: bool,
    /// `--acp-command` (or `HUB_ACP_COMMAND`) was given rather than defaulted:
    /// it replaces the file's entry for the same program; a defaulted one does not.
    pub acp_command_given: bool,
    /// `--acp-env`: variables of the hub's environment every ACP agent gets (an
    /// agent inherits little else: `tools::process::scrub_env`), such as a ready
    /// agent's API key (`GEMINI_API_KEY`, `ANTHROPIC_API_KEY`).
    pub acp_env: Vec<String>,
}

#[derive(Clone)]
pub struct Catalog {
    entries: Vec<Arc<AgentEntry>>,
    default: String,
    /// The launch flags' ACP agent.
    flags_id: Option<String>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.entries.iter().map(|entry| entry.id.as_str()).collect();
        f.debug_struct("Catalog").field("agents", &ids).field("default", &self.default).finish()
    }
}

impl Catalog {
    /// The agents in the order they are listed: the built-in agent, the ready
    /// ones, then the file's others by id. The launch flags' ACP agent takes
    /// the place of the ready entry for the same program, or comes as `acp`.
    pub fn new(launch: AgentFlags) -> Self {
        let file = launch.file.unwrap_or_default();
        let model_from_flags = launch.model.is_some();
        if let Some(name) = file.builtin.as_ref().and_then(|builtin| builtin.api_key_env.as_deref()) {
            // A secret like OPENAI_API_KEY: no command or agent gets it.
            crate::tools::keep_secret(name);
        }
        let model = launch.model.or_else(|| {
            file.builtin.as_ref().map(|builtin| ModelConfig {
                base_url: builtin.base_url.clone(),
                model: builtin.model.clone(),
                api_key: std::env::var(builtin.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY"))
                    .ok()
                    .filter(|key| !key.is_empty()),
            })
        });
        let mut entries = vec![AgentEntry {
            id: BUILTIN_ID.into(),
            name: "Built-in agent".into(),
            source: if model_from_flags || file.builtin.is_none() { AgentSource::Ready } else { AgentSource::File },
            runner: Runner::Builtin(Arc::new(BuiltinAgent::new(
                model.as_ref().map(|config| Arc::new(ModelClient::new(config))),
            ))),
            install: None,
        }];
        for ready in READY {
            let command = ready.command.iter().map(|word| word.to_string()).collect();
            entries.push(AgentEntry {
                id: ready.id.into(),
                name: ready.name.into(),
                source: AgentSource::Ready,
                runner: Runner::Acp(Arc::new(AcpAgent::from_words(command).with_env(&launch.acp_env))),
                install: Some(ready.install),
            });
        }
        for (id, server) in file.agent_servers {
            let mut command = vec![server.command];
            command.extend(server.args);
            let agent = AcpAgent::from_words(command).with_env(&launch.acp_env).with_vars(server.env);
            let ready = READY.iter().find(|ready| ready.id == id);
            let name = server.name.or_else(|| ready.map(|ready| ready.name.to_string())).unwrap_or_else(|| id.clone());
            let entry = AgentEntry {
                id,
                name,
                source: AgentSource::File,
                runner: Runner::Acp(Arc::new(agent)),
                install: ready.map(|ready| ready.install),
            };
            replace_or_push(&mut entries, entry);
        }
        let flags_id = launch.acp.map(|agent| {
            let program = Path::new(agent.program()).file_name().map(|name| name.to_string_lossy().into_owned());
            let ready = READY.iter().find(|ready| Some(ready.command[0]) == program.as_deref());
            // Named after its whole command line (a launcher such as `npx` or
            // `node` starts many agents), so a session keeps the same agent
            // across launches and another command is another agent.
            let id = match ready {
                Some(ready) => ready.id.to_string(),
                None => format!("{FLAGS_ACP_ID}-{:08x}", stable_hash(agent.command_line()) as u32),
            };
            let from_file = entries.iter().any(|entry| entry.id == id && entry.source == AgentSource::File);
            if from_file && !launch.acp_command_given {
                // `--agent acp` alone: the file's entry for the default command, with its args and env.
                return id;
            }
            if from_file {
                tracing::warn!(agent = %id, "--acp-command replaces the agents file's entry of the same program");
            }
            let entry = AgentEntry {
                id: id.clone(),
                name: ready.map_or_else(
                    || format!("{} (ACP)", program.as_deref().unwrap_or(FLAGS_ACP_ID)),
                    |ready| ready.name.to_string(),
                ),
                source: AgentSource::Flags,
                runner: Runner::Acp(agent),
                install: ready.map(|ready| ready.install),
            };
            replace_or_push(&mut entries, entry);
            id
        });
        // The file's default names a listed agent (`AgentsFile::read` checked it).
        let default = match (flags_id.clone(), file.default) {
            (Some(id), _) => id,
            (None, Some(id)) if !launch.agent_flag_given && entries.iter().any(|entry| entry.id == id) => id,
            _ => BUILTIN_ID.into(),
        };
        Self { entries: entries.into_iter().map(Arc::new).collect(), default, flags_id }
    }

    pub fn entries(&self) -> &[Arc<AgentEntry>] {
        &self.entries
    }

    pub fn get(&self, id: &str) -> Option<&Arc<AgentEntry>> {
        self.entries.iter().find(|entry| entry.id == id)
    }

    pub fn default_id(&self) -> &str {
        &self.default
    }

    /// The agent a new session gets: the one asked for (which must be listed
    /// and available), else the folder's last choice while it is available,
    /// else the hub's default. Looks at the disk (`PATH`): not under a lock.
    pub fn for_new_session(&self, asked: Option<&str>, folder_choice: Option<&str>) -> Result<String, ChoiceError> {
        let Some(id) = asked else {
            let usable = |id: &&str| self.get(id).is_some_and(|entry| entry.unavailable().is_none());
            let id = folder_choice.filter(usable).unwrap_or(&self.default);
            return Ok(id.to_string());
        };
        let entry = self.get(id).ok_or_else(|| ChoiceError::Unknown {
            id: id.to_string(),
            known: self.entries.iter().map(|entry| entry.id.clone()).collect(),
        })?;
        if let Some(reason) = entry.unavailable() {
            return Err(ChoiceError::Unavailable { name: entry.name.clone(), reason });
        }
        Ok(entry.id.clone())
    }
}

impl Catalog {
    /// The agent of a session stored before sessions had one, from what its
    /// agent kept: an ACP agent's session is the launch flags' ACP agent's (else
    /// Gemini CLI's, which `--agent acp` ran by default), a conversation the
    /// built-in agent's; nothing kept yet, the default.
    pub fn agent_of_older_session(&self, agent_state: Option<&str>) -> String {
        let state: Option<serde_json::Value> = agent_state.and_then(|text| serde_json::from_str(text).ok());
        let Some(state) = state else { return self.default.clone() };
        let acp = &state["acp"];
        if !acp["session_id"].is_null() || !acp["agent_name"].is_null() {
            return self.flags_id.clone().unwrap_or_else(|| READY[0].id.to_string());
        }
        if state["messages"].as_array().is_some_and(|messages| !messages.is_empty()) {
            return BUILTIN_ID.to_string();
        }
        self.default.clone()
    }
}

/// FNV-1a: the same on every build and platform (std's hasher is not).
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

fn replace_or_push(entries: &mut Vec<AgentEntry>, entry: AgentEntry) {
    match entries.iter_mut().find(|known| known.id == entry.id) {
        Some(known) => *known = entry,
        None => entries.push(entry),
    }
}

/// Why a new session cannot have the agent asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("No agent '{id}': GET /api/agents lists them ({}).", known.join(", "))]
    Unknown { id: String, known: Vec<String> },
    /// Listed, but it cannot start a session now (its command is not installed, no model…).
    #[error("{name} is not available: {reason}")]
    Unavailable { name: String, reason: String },
}

/// Where `program` would be run from: a path as it is, a bare name on `path`.
/// `Err` says why it cannot be run.
fn find_program_in(program: &str, path: &std::ffi::OsStr) -> Result<std::path::PathBuf, &'static str> {
    if program.contains('/') {
        let path = Path::new(program);
        return if is_executable(path) { Ok(path.to_path_buf()) } else { Err("is not an executable file") };
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or("is not installed (not found on PATH)")
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests;
