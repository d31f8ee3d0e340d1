//! What the hub does for the agent as its ACP client: reads and writes its
//! files (`fs/*`, see `acp::files`) and runs its commands in terminals
//! (`terminal/*`), in the same command sandbox as the built-in agent's, on the
//! folder's network setting. A command runs only as it was judged: the very
//! command of a call the hub let run, or one the folder's rules, the session's
//! grants, YOLO or the mode the user picked let run without asking.

use std::ffi::OsString;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse, ReadTextFileRequest,
    ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse, SessionId, SessionUpdate,
    TerminalExitStatus, TerminalOutputRequest, TerminalOutputResponse, ToolCallContent, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::Responder;
use serde_json::json;

use super::super::files;
use super::super::modes;
use super::super::permission;
use super::super::rule_call::RuleCall;
use super::Driver;
use crate::tools::terminal::{Exit, Terminal};
use crate::tools::{Folder, MAX_OUTPUT};

/// A request of the agent's for the hub's `fs` or `terminal`.
pub(in crate::agents::acp) enum Service {
    Read(ReadTextFileRequest, Responder<ReadTextFileResponse>),
    Write(WriteTextFileRequest, Responder<WriteTextFileResponse>),
    Create(CreateTerminalRequest, Responder<CreateTerminalResponse>),
    Output(TerminalOutputRequest, Responder<TerminalOutputResponse>),
    Wait(WaitForTerminalExitRequest, Responder<WaitForTerminalExitResponse>),
    Kill(KillTerminalRequest, Responder<KillTerminalResponse>),
    Release(ReleaseTerminalRequest, Responder<ReleaseTerminalResponse>),
}

/// An error the agent reads (and passes to its model) as the reason.
fn refusal(message: impl Into<String>) -> agent_client_protocol::Error {
    let mut error = agent_client_protocol::Error::invalid_params();
    error.message = message.into();
    error
}

impl Service {
    fn session_id(&self) -> &SessionId {
        match self {
            Self::Read(request, _) => &request.session_id,
            Self::Write(request, _) => &request.session_id,
            Self::Create(request, _) => &request.session_id,
            Self::Output(request, _) => &request.session_id,
            Self::Wait(request, _) => &request.session_id,
            Self::Kill(request, _) => &request.session_id,
            Self::Release(request, _) => &request.session_id,
        }
    }

    /// Answers it with an error, doing nothing.
    pub(super) fn refuse(self, message: &str) -> Result<(), agent_client_protocol::Error> {
        let error = refusal(message);
        match self {
            Self::Read(_, responder) => responder.respond_with_error(error),
            Self::Write(_, responder) => responder.respond_with_error(error),
            Self::Create(_, responder) => responder.respond_with_error(error),
            Self::Output(_, responder) => responder.respond_with_error(error),
            Self::Wait(_, responder) => responder.respond_with_error(error),
            Self::Kill(_, responder) => responder.respond_with_error(error),
            Self::Release(_, responder) => responder.respond_with_error(error),
        }
    }
}

fn answer<T>(responder: Responder<T>, result: Result<T, String>) -> Result<(), agent_client_protocol::Error>
where
    T: agent_client_protocol::JsonRpcResponse,
{
    match result {
        Ok(response) => responder.respond(response),
        Err(message) => responder.respond_with_error(refusal(message)),
    }
}

fn exit_status(exit: &Exit) -> TerminalExitStatus {
    TerminalExitStatus::new().exit_code(exit.code).signal(exit.signal.clone())
}

impl Driver {
    pub(super) async fn serve(
        &mut self,
        service: Service,
        session: &SessionId,
    ) -> Result<(), agent_client_protocol::Error> {
        if service.session_id() != session {
            return service.refuse("This process serves one session; that is not it.");
        }
        match service {
            Service::Read(request, responder) => {
                let terms = self.hub.sandbox_terms(&self.runtime.id);
                let (root, hide) = (self.runtime.root.clone(), terms.hide_agent_config);
                // Off the async workers, answered when done: the driver goes on.
                tokio::task::spawn_blocking(move || {
                    let masked = masked_by(&terms);
                    let read = files::read(&root, hide, &masked, &request.path, request.line, request.limit);
                    let _ = answer(responder, read.map(ReadTextFileResponse::new));
                });
                Ok(())
            }
            Service::Write(request, responder) => {
                if let Err(refused) = self.may_write(&request.path).await {
                    return responder.respond_with_error(refusal(refused));
                }
                let (root, terms) = (self.runtime.root.clone(), self.hub.sandbox_terms(&self.runtime.id));
                tokio::task::spawn_blocking(move || {
                    let masked = masked_by(&terms);
                    let written = files::write(&root, &masked, &request.path, &request.content);
                    let _ = answer(responder, written.map(|()| WriteTextFileResponse::new()));
                });
                Ok(())
            }
            Service::Create(request, responder) => {
                let created = self.create_terminal(&request).await;
                answer(responder, created.map(CreateTerminalResponse::new))
            }
            Service::Output(request, responder) => {
                let output = self.terminals.get(&request.terminal_id.0).map(|terminal| {
                    let (text, truncated, exit) = terminal.output();
                    TerminalOutputResponse::new(text, truncated).exit_status(exit.as_ref().map(exit_status))
                });
                answer(responder, output.ok_or_else(|| no_terminal(&request.terminal_id.0)))
            }
            Service::Wait(request, responder) => {
                let Some(terminal) = self.terminals.get(&request.terminal_id.0) else {
                    return responder.respond_with_error(refusal(no_terminal(&request.terminal_id.0)));
                };
                // The wait holds no terminal: released or dropped, it ends, and so does its command.
                let exit = terminal.exit_watch();
                drop(terminal);
                tokio::spawn(async move {
                    let exit = Terminal::wait_on(exit).await;
                    let _ = responder.respond(WaitForTerminalExitResponse::new(exit_status(&exit)));
                });
                Ok(())
            }
            Service::Kill(request, responder) => {
                let terminal = self.terminals.get(&request.terminal_id.0);
                if let Some(terminal) = &terminal {
                    terminal.kill();
                }
                answer(
                    responder,
                    terminal.map(|_| KillTerminalResponse::new()).ok_or_else(|| no_terminal(&request.terminal_id.0)),
                )
            }
            Service::Release(request, responder) => {
                let released = self.terminals.release(&request.terminal_id.0);
                answer(
                    responder,
                    released.then(ReleaseTerminalResponse::new).ok_or_else(|| no_terminal(&request.terminal_id.0)),
                )
            }
        }
    }

    /// Starts the agent's command if it may run; its terminal's id. What
    /// runs is one shell line the hub renders and judges whole: the command
    /// (its words quoted when it came as words), after the `cd` into its
    /// `cwd` and the `export`s of its variables; only variables known to be
    /// harmless are set outside that line.
    async fn create_terminal(&mut self, request: &CreateTerminalRequest) -> Result<String, String> {
        if self.terminals.is_full() {
            return Err(format!(
                "The agent has {} terminals open: release one first.",
                super::super::terminals::MAX_OPEN
            ));
        }
        if self.stopping || self.stop_asked {
            return Err("The user stopped this turn: nothing more runs in it.".into());
        }
        let (line, plain_env) = terminal_line(&self.runtime.root, request)?;
        let terminal_id = self.terminals.reserve_id();
        let (tool_id, line) = self.may_run(&terminal_id, line).await?;
        let mut args: Vec<OsString> = vec!["--".into()];
        args.extend(plain_env.into_iter().map(OsString::from));
        args.extend(["bash".into(), "-c".into(), "--".into(), OsString::from(&line)]);
        let folder =
            Folder::held(&self.runtime.root).map_err(|err| format!("The folder could not be opened: {err}."))?;
        let limit = request.output_byte_limit.map_or(MAX_OUTPUT, |limit| usize::try_from(limit).unwrap_or(usize::MAX));
        let terms = self.hub.sandbox_terms(&self.runtime.id);
        // `env` in the sandbox sets the harmless variables, never the sandbox's own process.
        let terminal = Terminal::start(&folder, "env", &args, &terms, limit).map_err(|failure| failure.message)?;
        self.terminals.add(&terminal_id, terminal, tool_id);
        Ok(terminal_id)
    }

    /// Whether the agent's command `line` may run, and the call it is: a call
    /// the hub let run that said this very command (each runs it once); else
    /// it is judged now as a call of its own (the agent did not ask), and what
    /// would need the user is refused: there is no request to put on a card.
    /// What is judged now runs as the hub's rendering of it (`policy::render`).
    async fn may_run(&mut self, terminal_id: &str, line: String) -> Result<(Option<String>, String), String> {
        if let Some(at) = self.runnable.iter().position(|(_, command)| *command == line) {
            let (tool_id, _) = self.runnable.remove(at);
            // The gate let it run only if it renders (`policy::render`): then it runs as
            // rendered. A line the user approved on a card that does not render runs as seen.
            let rendered = crate::policy::render::faithful(&line).unwrap_or(line);
            return Ok((Some(tool_id), rendered));
        }
        let call = RuleCall { name: "run_shell_command".into(), args: json!({ "command": line }) };
        self.judge_unasked(call, terminal_id.to_string(), modes::skips_for_commands).await?;
        let rendered = crate::policy::render::faithful(&line)
            .map_err(|why| format!("The hub could not run this command as it was judged ({why})."))?;
        Ok((None, rendered))
    }

    /// Whether the agent may write `path`: a call the hub let run names it
    /// (until that call's result), else the write is judged now as a call of
    /// its own, like a command the agent did not ask about.
    async fn may_write(&mut self, path: &std::path::Path) -> Result<(), String> {
        let wanted = absolute(&self.runtime.root, &path.display().to_string());
        if self.writable.iter().any(|(_, path)| *path == wanted) {
            return Ok(());
        }
        let call = RuleCall { name: "write_file".into(), args: json!({ "file_path": path.display().to_string() }) };
        self.judge_unasked(call, format!("write:{}", wanted.display()), |mode| modes::asks(mode) == Some(false)).await
    }

    /// Judges, off the async workers, what the agent does through the hub
    /// without having asked (see `permission::judge_unasked`).
    /// `skips`: whether a mode lets this kind of call run without asking; the
    /// agent's current mode counts only when the user picked it (an agent may
    /// switch itself, and a switch back may fail).
    fn judge_unasked(
        &self,
        call: RuleCall,
        audit_id: String,
        skips: fn(&str) -> bool,
    ) -> impl std::future::Future<Output = Result<(), String>> + Send + 'static {
        let chosen = self.runtime.state().agent.acp.chosen_mode.clone();
        // A mode that skips asking is the agent's YOLO: not while the sandbox cannot work.
        let sandboxed = !matches!(
            self.hub.sandbox_terms(&self.runtime.id).sandbox.mode(),
            crate::sandbox::Mode::Unavailable { .. }
        );
        let picked_mode = self
            .modes
            .as_ref()
            .map(|modes| modes.current_mode_id.0.to_string())
            .filter(|mode| sandboxed && chosen.as_deref() == Some(mode.as_str()) && skips(mode));
        let (hub, runtime) = (self.hub.clone(), self.runtime.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                permission::judge_unasked(&*hub, &runtime, &audit_id, &call, picked_mode.as_deref())
            })
            .await
            .unwrap_or_else(|err| Err(format!("It could not be judged: {err}.")))
        }
    }

    /// The result of a call that showed a terminal: what its command printed
    /// and how it ended (the agent reports such a call's end without it).
    pub(super) fn terminal_result(&self, tool_id: &str) -> Option<String> {
        self.terminals.result_of(tool_id)
    }
}

/// Whether a path (as it really is) is masked in the sandbox `terms` give:
/// the default list and the folder's own.
fn masked_by(terms: &crate::sandbox::Terms) -> impl Fn(&std::path::Path) -> bool + '_ {
    let own = crate::sandbox::Sandbox::resolved(&terms.masks);
    move |path| terms.sandbox.masks_path(path) || own.iter().any(|mask| path.starts_with(mask))
}

/// Variables an agent may set for its command outside the judged line:
/// they change how output looks, never what runs.
const HARMLESS_VARIABLES: [&str; 10] =
    ["CLAUDECODE", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CI", "LANG", "LC_ALL"];

/// The shell line a `terminal/create` runs, as the hub judges it, and the
/// harmless variables (`NAME=value`) set around it.
fn terminal_line(root: &std::path::Path, request: &CreateTerminalRequest) -> Result<(String, Vec<String>), String> {
    let texts = std::iter::once(&request.command)
        .chain(&request.args)
        .chain(request.env.iter().flat_map(|variable| [&variable.name, &variable.value]));
    if texts.into_iter().any(|text| text.contains('\0')) {
        return Err("A command, argument or variable holds a NUL byte: no shell line can carry it.".into());
    }
    let mut line = if request.args.is_empty() {
        request.command.clone()
    } else {
        // Words, as a shell reads them: the program itself is judged, whatever it is.
        let words = std::iter::once(request.command.as_str()).chain(request.args.iter().map(String::as_str));
        shell_words::join(words)
    };
    let (mut before, mut plain) = (Vec::new(), Vec::new());
    if let Some(cwd) = request.cwd.as_ref().filter(|cwd| cwd.as_path() != root) {
        let rel = crate::tools::paths::relative_in_folder(root, &cwd.display().to_string())
            .map_err(|failure| format!("{} A terminal runs inside the folder.", failure.message))?;
        before.push(format!("cd -- {} || exit", shell_words::quote(&rel.display().to_string())));
    }
    for variable in &request.env {
        let name = &variable.name;
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("'{name}' is not a variable name."));
        }
        // Plain words only (a locale given as a path would be loaded from there).
        let plain_value = variable.value.chars().all(|c| c.is_ascii_alphanumeric() || "_.@:-".contains(c));
        if HARMLESS_VARIABLES.contains(&name.as_str()) && plain_value {
            plain.push(format!("{name}={}", variable.value));
        } else {
            before.push(format!("export {name}={}", shell_words::quote(&variable.value)));
        }
    }
    if !before.is_empty() {
        line = format!("{}; {line}", before.join("; "));
    }
    Ok((line, plain))
}

/// `path` (absolute, or relative to the root) as an absolute path, `.` and
/// `..` applied without touching the disk: how a call's path and a write's
/// are compared.
pub(super) fn absolute(root: &std::path::Path, path: &str) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for part in root.join(path).components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The terminals an update shows, and the call showing each:
/// `(terminal id, tool id)`.
pub(super) fn terminals_shown(update: &SessionUpdate) -> Vec<(String, String)> {
    let (id, content) = match update {
        SessionUpdate::ToolCall(call) => (call.tool_call_id.0.to_string(), Some(&call.content)),
        SessionUpdate::ToolCallUpdate(update) => (update.tool_call_id.0.to_string(), update.fields.content.as_ref()),
        _ => return Vec::new(),
    };
    content
        .into_iter()
        .flatten()
        .filter_map(|item| match item {
            ToolCallContent::Terminal(terminal) => Some((terminal.terminal_id.0.to_string(), id.clone())),
            _ => None,
        })
        .collect()
}

fn no_terminal(id: &str) -> String {
    format!("No terminal {id} is open.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::EnvVariable;

    fn create(command: &str, args: &[&str]) -> CreateTerminalRequest {
        CreateTerminalRequest::new("s", command).args(args.iter().map(|arg| arg.to_string()).collect())
    }

    #[test]
    fn the_line_judged_is_the_line_run_with_its_program_place_and_variables() {
        let root = std::path::Path::new("/p");
        let plain = create("ls -la", &[]).env(vec![EnvVariable::new("CLAUDECODE", "1")]);
        assert_eq!(terminal_line(root, &plain).unwrap(), ("ls -la".into(), vec!["CLAUDECODE=1".into()]));
        // A program given by path is judged as that program, never as the shell's script.
        let planted = create("/p/bash", &["-c", "ls"]);
        assert_eq!(terminal_line(root, &planted).unwrap().0, "/p/bash -c ls");
        let words = create("git", &["commit", "-m", "two words"]);
        assert_eq!(terminal_line(root, &words).unwrap().0, "git commit -m 'two words'");
        // Any other variable is part of the line judged.
        let env = create("git status", &[]).env(vec![EnvVariable::new("GIT_SSH_COMMAND", "evil now")]);
        assert_eq!(
            terminal_line(root, &env).unwrap(),
            ("export GIT_SSH_COMMAND='evil now'; git status".into(), vec![])
        );
        let sub = create("make", &[]).cwd(std::path::PathBuf::from("/p/sub dir"));
        assert_eq!(terminal_line(root, &sub).unwrap().0, "cd -- 'sub dir' || exit; make");
        let same = create("make", &[]).cwd(std::path::PathBuf::from("/p"));
        assert_eq!(terminal_line(root, &same).unwrap().0, "make");
        assert!(terminal_line(root, &create("make", &[]).cwd(std::path::PathBuf::from("/etc"))).is_err());
        let bad = create("ls", &[]).env(vec![EnvVariable::new("A=B", "x")]);
        assert!(terminal_line(root, &bad).is_err());
        assert!(terminal_line(root, &create("ls\0rm", &[])).is_err(), "a NUL is refused before judging");
        let locale = create("ls", &[]).env(vec![EnvVariable::new("LANG", "/p/evil")]);
        assert_eq!(
            terminal_line(root, &locale).unwrap(),
            ("export LANG=/p/evil; ls".into(), vec![]),
            "a path is judged"
        );
    }
}
