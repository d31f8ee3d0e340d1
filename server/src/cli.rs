//! Command line and environment (`docs/API.md`, "Launch, auth, origin").

use std::net::IpAddr;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentKind {
    /// The hub's own tool loop over an OpenAI-compatible Chat Completions endpoint.
    Builtin,
    /// An Agent Client Protocol agent started with --acp-command.
    Acp,
}

#[derive(Debug, Clone, Parser)]
#[command(name = "agent-hub", version, about = "Supervise coding agents from your browser.")]
pub struct Cli {
    /// Project folders to open at start.
    pub folders: Vec<PathBuf>,

    /// Port to listen on (0 picks a free one). Default: Leptos.toml's `site-addr`.
    #[arg(long, env = "HUB_PORT", default_value_t = crate::site::default_addr().port())]
    pub port: u16,

    /// Address to bind. Anything but loopback exposes the hub to the network.
    /// Default: Leptos.toml's `site-addr`.
    #[arg(long, env = "HUB_HOST", default_value_t = crate::site::default_addr().ip())]
    pub host: IpAddr,

    /// Launch token required by every request (random per launch when absent).
    #[arg(long, env = "HUB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// Where the hub keeps its data (default: the platform data dir).
    #[arg(long, env = "HUB_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// The agent new sessions get unless they pick another (default: the
    /// agents file's `default`, else the built-in agent).
    #[arg(long, env = "HUB_AGENT", value_enum, default_value_t = AgentKind::Builtin)]
    pub agent: AgentKind,

    /// `--agent` (or `HUB_AGENT`) was given rather than defaulted.
    #[arg(skip)]
    pub agent_given: bool,

    /// `--acp-command` (or `HUB_ACP_COMMAND`) was given rather than defaulted.
    #[arg(skip)]
    pub acp_command_given: bool,

    /// The agents a session can pick (JSON, like Zed's `agent_servers`);
    /// default `agents.json` in the hub's config dir (`~/.config/agent-hub`).
    #[arg(long = "agents-file", env = "HUB_AGENTS_FILE", value_name = "FILE")]
    pub agents_file: Option<PathBuf>,

    /// Command that starts an ACP agent on stdio.
    #[arg(long, env = "HUB_ACP_COMMAND", default_value = "gemini --acp")]
    pub acp_command: String,

    /// A variable of the hub's environment that ACP agents get besides PATH,
    /// HOME, the locale and the like, e.g. the agent's own API key, even one the
    /// hub keeps from what it starts (`OPENAI_API_KEY`, `HUB_*`) (repeatable;
    /// `HUB_ACP_ENV` takes a comma-separated list).
    #[arg(long = "acp-env", env = "HUB_ACP_ENV", value_name = "NAME", value_delimiter = ',')]
    pub acp_env: Vec<String>,

    /// A variable of the hub's environment that the built-in agent's commands get
    /// besides PATH, HOME, the locale and the like, e.g. a registry token a build
    /// needs (repeatable; `HUB_COMMAND_ENV` takes a comma-separated list). Never
    /// one of the hub's secrets (`OPENAI_API_KEY`, `HUB_*`, the agents file's `api_key_env`).
    #[arg(long = "command-env", env = "HUB_COMMAND_ENV", value_name = "NAME", value_delimiter = ',')]
    pub command_env: Vec<String>,

    /// Base URL of the OpenAI-compatible endpoint for the built-in agent.
    #[arg(long = "model-url", env = "OPENAI_BASE_URL")]
    pub model_url: Option<String>,

    /// Model name for the built-in agent.
    #[arg(long, env = "HUB_MODEL")]
    pub model: Option<String>,

    /// Another Host name to accept besides 127.0.0.1, localhost and [::1] (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,

    /// How many idle sessions stay in memory (event log, conversation); others
    /// are read from the database when opened.
    #[arg(long, env = "HUB_MAX_RESIDENT", default_value_t = crate::hub::MAX_RESIDENT_SESSIONS)]
    pub max_resident: usize,

    /// The user's Gemini CLI policy files (`*.toml`); default `~/.gemini/policies`.
    #[arg(long = "user-policies", env = "HUB_USER_POLICIES", value_name = "DIR")]
    pub user_policies: Option<PathBuf>,

    /// The admin's policy files, honoured only when the directory is owned by
    /// root and not writable by group or others (as Gemini CLI checks).
    #[arg(
        long = "admin-policies",
        env = "HUB_ADMIN_POLICIES",
        value_name = "DIR",
        default_value = "/etc/gemini-cli/policies"
    )]
    pub admin_policies: PathBuf,

    /// Apply every folder's own `.gemini` files at once, allow rules and
    /// `disableYoloMode: false` included, without asking the user to trust the
    /// folder first. A repository you clone can then approve for itself.
    #[arg(long = "no-folder-trust", env = "HUB_NO_FOLDER_TRUST")]
    pub no_folder_trust: bool,

    /// Run commands and agents without the kernel sandbox (bubblewrap): they
    /// reach whatever you can, the network included. The header says so.
    #[arg(long = "no-sandbox", env = "HUB_NO_SANDBOX")]
    pub no_sandbox: bool,

    /// A second listener for paired devices (a phone), HTTPS only, e.g.
    /// `0.0.0.0:7746`. The launch token never opens it (docs/remote.md).
    #[arg(long, env = "HUB_REMOTE", value_name = "ADDR:PORT")]
    pub remote: Option<std::net::SocketAddr>,

    /// The remote listener's certificate chain (PEM), one the phone already
    /// trusts (`tailscale cert`, mkcert, a CA); default: one the hub makes and keeps.
    #[arg(long = "remote-cert", env = "HUB_REMOTE_CERT", value_name = "FILE")]
    pub remote_cert: Option<PathBuf>,

    /// The private key (PEM) of `--remote-cert`.
    #[arg(long = "remote-key", env = "HUB_REMOTE_KEY", value_name = "FILE")]
    pub remote_key: Option<PathBuf>,

    /// Where to POST a JSON alert (`{folderPath, sessionId, kind, summary, url}`)
    /// when a card or question starts waiting and when a turn ends: an http(s)
    /// URL, e.g. an ntfy topic (docs/API.md, "Notifications").
    #[arg(long = "notify-url", env = "HUB_NOTIFY_URL", value_name = "URL", hide_env_values = true)]
    pub notify_url: Option<String>,

    /// A header sent with each alert to --notify-url, `"Name: value"` (a
    /// token; repeatable; `HUB_NOTIFY_HEADER` takes one per line). Never logged.
    #[arg(
        long = "notify-header",
        env = "HUB_NOTIFY_HEADER",
        value_name = "HEADER",
        value_delimiter = '\n',
        hide_env_values = true
    )]
    pub notify_headers: Vec<String>,

    /// How a Web Push service may reach whoever runs this hub (the VAPID
    /// `sub`): a `mailto:` or `https:` URL.
    #[arg(
        long = "push-contact",
        env = "HUB_PUSH_CONTACT",
        value_name = "URL",
        default_value = "mailto:agent-hub@localhost.invalid"
    )]
    pub push_contact: String,

    /// Open the hub in the default browser once it listens.
    #[arg(long)]
    pub open: bool,

    /// Folder holding the built client (pkg/, CSS, icons). Default: Leptos.toml's
    /// `site-root`, relative to the directory the hub runs in.
    #[arg(long, env = "LEPTOS_SITE_ROOT")]
    pub site_root: Option<PathBuf>,
}

impl Cli {
    /// The hub's settings from its arguments and environment (exits on a
    /// parse error or `--help`, as `Cli::parse` does). See [`Cli::from_matches`].
    pub fn from_args_and_env() -> Self {
        let matches = Self::command().get_matches();
        Self::from_matches(&matches).unwrap_or_else(|err| err.exit())
    }

    /// As [`Cli::from_args_and_env`], from the given arguments (and the environment).
    pub fn try_from_args_and_env<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Self::from_matches(&Self::command().try_get_matches_from(args)?)
    }

    /// With `--agent acp` the built-in agent's model settings found in the
    /// environment (`OPENAI_BASE_URL`, `HUB_MODEL`) are not the hub's: they are
    /// there for the agent (Qwen Code and Codex read `OPENAI_BASE_URL`, which
    /// the agent gets as it is). They are dropped here, neither used nor refused.
    pub fn from_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut cli = Self::from_arg_matches(matches)?;
        let given =
            |id: &str| matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable));
        cli.agent_given = given("agent");
        cli.acp_command_given = given("acp_command");
        if cli.agent == AgentKind::Acp {
            let from_env = |id: &str| matches.value_source(id) == Some(ValueSource::EnvVariable);
            if from_env("model_url") {
                cli.model_url = None;
            }
            if from_env("model") {
                cli.model = None;
            }
        }
        Ok(cli)
    }

    /// Rejects values that would make the hub unsafe or unusable.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(token) = &self.token {
            if token.len() < 8 || !token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b)) {
                return Err("--token must be at least 8 characters of letters, digits, '-', '_', '.' or '~'.".into());
            }
        }
        if self.remote_cert.is_some() != self.remote_key.is_some() {
            return Err("--remote-cert and --remote-key go together: give both, or neither for the hub's own.".into());
        }
        if self.remote.is_none() && self.remote_cert.is_some() {
            return Err("--remote-cert is for the remote listener: add --remote ADDR:PORT.".into());
        }
        if let Some(url) = &self.notify_url {
            crate::alerts::WebhookConfig::from_flags(url, &self.notify_headers)?;
        } else if !self.notify_headers.is_empty() {
            return Err("--notify-header is sent with --notify-url's alerts: give --notify-url too.".into());
        }
        if !self.push_contact.starts_with("mailto:") && !self.push_contact.starts_with("https://") {
            return Err("--push-contact must be a mailto: or https:// URL.".into());
        }
        if self.agent == AgentKind::Acp && (self.model_url.is_some() || self.model.is_some()) {
            return Err("--model-url and --model choose the built-in agent's model; an ACP agent uses its own. \
                        Leave them out with --agent acp and point the agent at its model in its own settings \
                        or environment (it gets OPENAI_BASE_URL; --acp-env passes on OPENAI_API_KEY)."
                .into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_bind_loopback_with_a_generated_token() {
        let cli = Cli::try_parse_from(["agent-hub"]).unwrap();
        assert_eq!(cli.host.to_string(), "127.0.0.1");
        assert_eq!(cli.port, 7744, "Leptos.toml's site-addr");
        assert_eq!(cli.token, None);
        assert_eq!(cli.agent, AgentKind::Builtin);
        assert!(cli.validate().is_ok());
    }

    #[test]
    fn parses_folders_and_flags() {
        let cli = Cli::try_parse_from([
            "agent-hub",
            "/a",
            "/b",
            "--port",
            "0",
            "--token",
            "secret-123",
            "--agent",
            "acp",
            "--allow-host",
            "hub.local",
        ])
        .unwrap();
        assert_eq!(cli.folders, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!((cli.port, cli.agent), (0, AgentKind::Acp));
        assert_eq!(cli.allow_hosts, ["hub.local"]);
    }

    /// (Given in the environment they are dropped: tests/it/binary.rs, which sets
    /// the environment of a hub of its own.)
    #[test]
    fn model_flags_with_an_acp_agent_are_a_mistake_to_point_out() {
        for flag in [["--model-url", "http://127.0.0.1:9/v1"], ["--model", "m"]] {
            let cli = Cli::try_from_args_and_env(["agent-hub", "--agent", "acp", flag[0], flag[1]]).unwrap();
            let refused = cli.validate().unwrap_err();
            assert!(refused.contains("--agent acp") && refused.contains("its own"), "{refused}");
            let builtin = Cli::try_from_args_and_env(["agent-hub", flag[0], flag[1]]).unwrap();
            assert!(builtin.validate().is_ok());
        }
    }

    #[test]
    fn command_env_is_repeatable() {
        let cli = Cli::try_parse_from(["agent-hub", "--command-env", "NPM_TOKEN", "--command-env", "GOPROXY"]).unwrap();
        assert_eq!(cli.command_env, ["NPM_TOKEN", "GOPROXY"]);
        assert!(Cli::try_parse_from(["agent-hub"]).unwrap().command_env.is_empty());
    }

    #[test]
    fn notify_flags_are_checked_before_the_hub_starts() {
        let cli = Cli::try_parse_from([
            "agent-hub",
            "--notify-url",
            "https://ntfy.sh/topic",
            "--notify-header",
            "Authorization: Bearer x",
            "--notify-header",
            "X-Priority: 4",
        ])
        .unwrap();
        assert_eq!(cli.notify_headers, ["Authorization: Bearer x", "X-Priority: 4"]);
        assert!(cli.validate().is_ok());
        for args in [
            &["--notify-url", "ftp://h/x"][..],
            &["--notify-header", "A: b"],
            &["--notify-url", "https://h/", "--notify-header", "no colon"],
            &["--push-contact", "me@example.com"],
        ] {
            let cli = Cli::try_parse_from(["agent-hub"].iter().chain(args)).unwrap();
            assert!(cli.validate().is_err(), "{args:?}");
        }
    }

    #[test]
    fn refuses_weak_or_cookie_breaking_tokens() {
        for token in ["short", "has space here", "semi;colon-token"] {
            let cli = Cli::try_parse_from(["agent-hub", "--token", token]).unwrap();
            assert!(cli.validate().is_err(), "{token}");
        }
    }
}
