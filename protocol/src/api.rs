//! Request and response bodies of the HTTP contract (`docs/API.md`), camelCase.

use serde::{Deserialize, Serialize};

/// Where a session's current YOLO value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum YoloSource {
    /// `security.disableYoloMode` in the folder's `.gemini/settings.json`.
    Settings,
    /// No usable setting: YOLO is off.
    Default,
    /// Toggled at runtime by the user.
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    Running,
    WaitingApproval,
    WaitingInput,
    Error,
}

impl SessionStatus {
    pub fn label(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::WaitingApproval => "waiting approval",
            Self::WaitingInput => "waiting input",
            Self::Error => "error",
        }
    }
}

/// `GET/POST /api/chat/config` response. `folderPath`, `sessionId` and `note` are
/// additions to the contract's `{yoloMode, yoloLocked, source}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatConfig {
    pub yolo_mode: bool,
    pub yolo_locked: bool,
    pub source: YoloSource,
    pub folder_path: String,
    pub session_id: String,
    /// Why the settings file gave this default (missing, invalid, locked…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether a decision on an edit may carry the user's own version
    /// (`modifiedContent`); an ACP agent applies its edits itself.
    #[serde(default = "yes")]
    pub accepts_modified_content: bool,
    /// The ACP agent's session modes, once its process has said them (an addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_modes: Option<AgentModes>,
    /// The agent the session works with (an addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRef>,
    /// Whether the user trusts the folder: only then may its own `.gemini`
    /// files loosen anything (an addition; true when folder trust is off).
    #[serde(default = "yes")]
    pub trusted: bool,
    /// What the folder's own files would loosen once trusted (an untrusted
    /// folder whose files would loosen something; the page offers Trust).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_needed: Option<TrustNeeded>,
    /// The folder's approval timeout: a card or question left this many
    /// seconds is answered "no decision" by the hub (an addition; `null`: it
    /// waits forever).
    #[serde(default)]
    pub approval_timeout_secs: Option<u64>,
    /// Whether the folder's commands may reach the network (an addition;
    /// off by default: a command runs in a network namespace of its own).
    /// Neither YOLO nor a rule turns it on.
    #[serde(default)]
    pub network: bool,
    /// What the folder's sandbox masks besides the default list (an addition):
    /// absolute paths, for its commands and agents alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_mask: Vec<String>,
    /// Whether commands and agents run in the kernel sandbox, and why not
    /// (an addition; absent from a hub older than the sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxStatus>,
}

/// Whether the hub's commands and agents run in its sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    pub state: SandboxState,
    /// Why it is not on, in words for the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// Every command and agent runs in bubblewrap.
    On,
    /// The sandbox cannot work on this machine: YOLO stays off.
    Unavailable,
    /// Started with `--no-sandbox`.
    Disabled,
}

/// The longest approval timeout a folder may set: a day.
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 86_400;

/// What an untrusted folder's own files would loosen once the user trusts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustNeeded {
    /// Its allow rules, a line each ("x.toml, rule 1: allows run_shell_command `git status`").
    pub allows: Vec<String>,
    /// Its settings would turn YOLO on.
    pub yolo: bool,
    /// What the folder's own agent config would run once trusted (hooks, MCP
    /// servers, discovery commands), a line each; hidden from agents until then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_config: Vec<String>,
}

/// `POST /api/folders/trust`, `DELETE /api/folders/trust`: the folder's trust as it now is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderTrust {
    pub folder_path: String,
    pub trusted: bool,
    /// When the user trusted it (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_at: Option<u64>,
}

/// An agent as a session names it: its id in `GET /api/agents` and its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRef {
    pub id: String,
    pub name: String,
}

/// `GET /api/agents`: the agents a new session can work with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsResponse {
    pub agents: Vec<AgentInfo>,
    /// The hub's default: the launch flags', else the agents file's, else the built-in agent.
    pub default: String,
    /// With `?folderPath=`: the agent of the folder's newest session (its last
    /// choice) while that agent is still listed, else the hub's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder_default: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    pub id: String,
    pub name: String,
    pub kind: AgentKind,
    /// An ACP agent's command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The built-in agent's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub available: bool,
    /// Why it is not available (its command is not installed, no model…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the entry comes from.
    pub source: AgentSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// The hub's own tool loop over an OpenAI-compatible endpoint.
    Builtin,
    /// An Agent Client Protocol agent on stdio.
    Acp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentSource {
    /// Shipped with the hub (the built-in agent, Gemini CLI, Claude Code, Codex).
    Ready,
    /// The user's agents file.
    File,
    /// The launch flags (`--agent acp --acp-command …`).
    Flags,
}

/// An ACP agent's session modes (`session/new`'s `modes`). The hub puts each
/// session in a mode whose permission requests reach the user; another mode is
/// only taken when the user picks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModes {
    pub current_mode_id: String,
    pub modes: Vec<AgentMode>,
    /// The user picked the current mode (else the hub did).
    pub chosen_by_user: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMode {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the agent asks before it runs a command or writes a file in this
    /// mode: `Some(false)` for modes known to skip asking (shown like YOLO),
    /// `None` when the hub does not know this mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asks: Option<bool>,
}

/// `POST /api/sessions/{id}/mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeRequest {
    pub mode_id: String,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigQuery {
    pub folder_path: String,
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Default, Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigRequest {
    pub folder_path: String,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Absent: YOLO stays as it is (then `approvalTimeoutSecs` must be given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yolo_mode: Option<bool>,
    /// The folder's approval timeout (an addition): absent leaves it, `null`
    /// waits forever, 1 to [`MAX_APPROVAL_TIMEOUT_SECS`] seconds.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    pub approval_timeout_secs: Option<Option<u64>>,
    /// The folder's network for commands (an addition): absent leaves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// What the folder's sandbox masks besides the default list (an
    /// addition): `~/…` or absolute paths; absent leaves it, `[]` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_mask: Option<Vec<String>>,
}

/// A field that is absent (`None`), `null` (`Some(None)`) or a value.
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// From the first prompt unless the user named it; `null` before the first prompt.
    #[serde(default)]
    pub title: Option<String>,
    pub status: SessionStatus,
    pub pending_count: usize,
    pub yolo_mode: bool,
    /// Milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// The agent the session works with (an addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRef>,
    /// While it waits on the user: since when, milliseconds since the Unix
    /// epoch (an addition; with the folder's timeout, when the wait ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_since: Option<u64>,
    /// When the folder's approval timeout answers the wait "no decision", ms
    /// since the Unix epoch (an addition; none without a timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<u64>,
    /// An isolated session's worktree (issue 29). Not read by the page (its
    /// first load stays small: it reads `branch`, and the worktree's status
    /// from `GET /api/sessions/{id}/worktree`).

    /// An isolated session's branch (issue 29); `GET /api/sessions/{id}/worktree`
    /// has the rest. (Kept to one string: the page's first load reads this type.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSummary {
    pub folder_path: String,
    pub sessions: Vec<SessionSummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectsResponse {
    pub projects: Vec<ProjectSummary>,
}

/// `POST /api/sessions`: a new session in the folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSessionRequest {
    pub folder_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent's id (`GET /api/agents`); default: the folder's last choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A git worktree of its own (issue 29): the folder must be in a git
    /// repository with a commit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub isolated: bool,
}

/// `POST /api/sessions`'s answer: the session's summary and, for an isolated
/// one, its worktree (issue 29). Written by the hub only: the page reads the
/// answer as a [`SessionSummary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreatedSession {
    #[serde(flatten)]
    pub summary: SessionSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
}

/// `GET /api/folders/git?folderPath=`: whether a new session in the folder
/// may be isolated (a git repository with a commit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderGit {
    pub isolatable: bool,
}

/// An isolated session's worktree (issue 29).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeInfo {
    /// The worktree's directory, under the hub's data dir.
    pub path: String,
    /// `agent-hub/<slug>`.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// Its directory is gone (deleted outside the hub).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
}

/// A file of an isolated session's change against its base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeFile {
    pub path: String,
    /// `added`, `modified` or `deleted`.
    pub status: String,
}

/// `GET /api/sessions/{id}/worktree`: the session's worktree and its change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeStatus {
    pub worktree: WorktreeInfo,
    pub files: Vec<WorktreeFile>,
}

/// `POST /api/sessions/{id}/worktree/commit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeCommitRequest {
    pub message: String,
}

/// What Apply, Commit or Discard did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeDone {
    /// Apply: the files brought into the folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<String>,
    /// Commit: the new commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// `DELETE /api/sessions/{id}` of an isolated session (200, not 204).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleted {
    /// The session's branch, kept because it has commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_kept: Option<String>,
    pub worktree_removed: bool,
}

/// `PATCH /api/sessions/{id}`: the session's new title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameSessionRequest {
    pub title: String,
}

/// Pushed to open pages on `GET /api/updates` (server-sent events, one JSON per event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HubUpdate {
    /// A session's YOLO state changed (settings file edited, or toggled elsewhere).
    Config(Box<ChatConfig>),
    /// The list of folders or sessions changed: refetch `/api/projects`.
    Projects,
    /// Nobody decided in time: the hub answered a waiting call or question
    /// "no decision" (the folder's approval timeout).
    TimedOut(Box<TimedOut>),
    /// A device paired with the remote listener: every open page says so, so
    /// a pairing the user did not make does not go unseen.
    DevicePaired(Box<DevicePaired>),
}

/// What `HubUpdate::DevicePaired` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DevicePaired {
    pub name: String,
    /// The address it paired from.
    pub address: String,
}

/// What `HubUpdate::TimedOut` says: whose call went unanswered, and what it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimedOut {
    pub folder_path: String,
    pub session_id: String,
    pub summary: String,
}

/// `POST /api/chat/prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub folder_path: String,
    #[serde(default)]
    pub session_id: Option<String>,
    pub message: String,
    /// `false` answers with one JSON object once the turn ends or pauses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The agent of a session this prompt creates (an addition); an existing
    /// session keeps its own and refuses another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// `POST /api/sessions/{id}/approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveRequest {
    pub tool_id: String,
    pub decision: ApprovalDecision,
    /// With `agent_option`: the `AgentChoice.id` the user picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
    /// With `approve_always` on a shell command: the command prefix the saved rule
    /// allows (defaults to the command's first words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_instruction: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

words! {
    /// What the user decided on a card (`ApproveRequest.decision`).
    pub enum ApprovalDecision {
        /// Run it (with `modifiedContent`: run the user's version of the edit).
        Approve = "approve",
        /// Do not run it; the model is told so.
        Reject = "reject",
        /// Run it and the same tool's later calls in this session, through the gate.
        ApproveSession = "approve_session",
        /// Run it and save an "Always in this folder" rule (`commandPrefix` for a shell command).
        ApproveAlways = "approve_always",
        /// Skip it and give the model `editInstruction` instead, or with
        /// `modifiedContent` run the user's version of the edit.
        Edit = "edit",
        /// An ACP agent's own option (`optionId`), answered as it is.
        AgentOption = "agent_option",
        /// Run it and the same tool's later calls in this turn, through the gate
        /// (an addition): the grant ends with the turn.
        ApproveTurn = "approve_turn",
        /// Run this one command with the network though the folder's is off
        /// (an addition; the built-in agent's commands only).
        ApproveNetwork = "approve_network",
        /// Run this one command outside the sandbox (an addition; the built-in
        /// agent's commands only, and only one the sandbox refused before in
        /// the session).
        ApproveUnsandboxed = "approve_unsandboxed",
    }
}

/// `POST /api/approvals`: decisions on waiting calls of any sessions, at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchApproveRequest {
    pub decisions: Vec<BatchDecision>,
}

/// One decision of [`BatchApproveRequest`]: a single approve's body with its session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchDecision {
    pub session_id: String,
    /// The call as the list showed it (`WaitingCall.fingerprint`): a call that
    /// changed since is not decided (that item's `not_pending`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    #[serde(flatten)]
    pub request: ApproveRequest,
}

/// `POST /api/approvals`' answer: one result per decision, in the same order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchApproveResponse {
    pub results: Vec<BatchResult>,
}

/// What came of one decision of a batch: `ok`, or the error (`error`,
/// `message`) the single approve would have answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchResult {
    pub session_id: String,
    pub tool_id: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `GET /api/approvals`: every card waiting on the user, across folders.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingList {
    pub waiting: Vec<WaitingCall>,
}

/// One waiting card (or question), as the inbox lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingCall {
    pub folder_path: String,
    pub session_id: String,
    #[serde(default)]
    pub session_title: Option<String>,
    /// The call's id (a question's `requestId`).
    pub tool_id: String,
    pub tool_name: String,
    /// The call's arguments, readable and short (a command, a path).
    pub summary: String,
    /// A question to answer on its page, not a call to approve.
    #[serde(default)]
    pub question: bool,
    /// Whether the summary says all the call does, so it may be decided from
    /// the list: not a question, not a file edit (its diff is on its card),
    /// not a command too long to show whole.
    #[serde(default)]
    pub batchable: bool,
    /// What identifies the call as listed; sent back with a batch decision.
    #[serde(default)]
    pub fingerprint: String,
    /// When the hub answers it "no decision" (the folder's timeout), ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<u64>,
}

/// `POST /api/sessions/{id}/input`: the answer to the agent's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputAnswer {
    pub request_id: String,
    /// `"approve"`, `"reject"`, `{"index", "value"}` or text, by the question's type.
    pub response: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// `GET /api/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    pub id: String,
    #[serde(default)]
    pub title: Option<String>,
    pub folder_path: String,
    pub status: SessionStatus,
    pub yolo_mode: bool,
    pub pending_approval: Option<serde_json::Value>,
    pub pending_input: Option<serde_json::Value>,
    /// A page of the events: `?after=SEQ&limit=N` (5,000 by default).
    pub events: Vec<crate::events::SeqEvent>,
    /// More events follow this page (an addition).
    #[serde(default)]
    pub has_more: bool,
    /// Where the next page starts (`?after=`), when `hasMore` (an addition).
    #[serde(default)]
    pub next_after: Option<u64>,
}

/// A rule's decision, as in Gemini CLI's policy files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDecision {
    Allow,
    Deny,
    AskUser,
}

impl PolicyDecision {
    pub fn label(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::AskUser => "ask",
        }
    }
}

/// The tiers of Gemini CLI's policy engine, lowest first: a rule of a higher
/// tier beats every rule of a lower one, whatever their priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleTier {
    /// The hub's built-in guard rails (Gemini CLI's own defaults live here too).
    Default,
    /// `<folder>/.gemini/policies/*.toml`, and the rules saved in the hub ("Always in this folder", priority 950).
    Workspace,
    /// `~/.gemini/policies/*.toml`.
    User,
    /// `/etc/gemini-cli/policies/*.toml` (root-owned, not writable by others).
    Admin,
}

/// Where a rule was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleOrigin {
    /// A policy file; `source` names it and the rule's number in it.
    File,
    /// Saved in the hub's database from a card; the only kind the hub deletes.
    Hub,
    /// The hub's built-in guard rails.
    BuiltIn,
}

/// One rule that applies in a folder, as the Rules panel lists it (`GET /api/rules`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    /// Stable while the rule exists: `hub-<n>` for saved rules, `builtin-<name>`,
    /// `file-<n>` for file rules (valid until the files change).
    pub id: String,
    pub tier: RuleTier,
    pub origin: RuleOrigin,
    /// Readable: a file path and the rule's number in it, "saved in the hub", or the guard rail's name.
    pub source: String,
    pub tool_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_prefixes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_pattern: Option<String>,
    pub decision: PolicyDecision,
    /// As written, 0–999.
    pub priority: u32,
    /// `tier base + priority / 1000`, as Gemini CLI ranks rules.
    pub effective_priority: f64,
    /// Empty: every mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_message: Option<String>,
    #[serde(default)]
    pub allow_redirection: bool,
    /// Whether the rule applies in the folder's mode now (YOLO or not).
    pub active: bool,
    /// Milliseconds since the Unix epoch, for rules saved in the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
}

/// A policy file or rule that was ignored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyProblem {
    pub file: String,
    /// The rule's number in the file (1-based); none when the whole file was ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<usize>,
    pub message: String,
}

/// "Yes, for this session": a tool allowed without a card until the session ends or the grant is withdrawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionGrant {
    pub session_id: String,
    pub tool_name: String,
}

/// `GET /api/rules?folderPath=F`: every rule that applies in the folder, highest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesResponse {
    pub folder_path: String,
    /// `default` (YOLO off) or `yolo`: the mode rules are matched against.
    pub mode: String,
    /// Whether built-in guard rails are among the rules (they keep asking in YOLO).
    pub guard_rails: bool,
    pub rules: Vec<RuleView>,
    pub problems: Vec<PolicyProblem>,
    pub grants: Vec<SessionGrant>,
    /// Whether the user trusts the folder (an addition; true when folder trust is off).
    #[serde(default = "yes")]
    pub trusted: bool,
    /// The folder's own allow rules, held back until it is trusted (an addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<RuleView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesQuery {
    pub folder_path: String,
}

/// `GET /api/fs/dirs?path=P`: the directory whose sub-directories to list, an
/// absolute path or one starting with `~` (the hub user's home).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirsQuery {
    pub path: String,
}

/// The names of a directory's sub-directories (symlinks to directories count),
/// sorted; nothing else about them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirListing {
    /// The directory listed, `~` expanded.
    pub path: String,
    pub dirs: Vec<String>,
    /// More sub-directories exist than `dirs` holds.
    pub truncated: bool,
}

/// `GET /api/folders/recent`: the folders opened last, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentFolders {
    pub folders: Vec<RecentFolder>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentFolder {
    pub folder_path: String,
    /// Milliseconds since the Unix epoch.
    pub opened_at: u64,
}

/// Body of every 4xx/5xx response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_serializes_with_contract_names() {
        let config = ChatConfig {
            yolo_mode: true,
            yolo_locked: false,
            source: YoloSource::Settings,
            folder_path: "/p".into(),
            session_id: "s".into(),
            note: None,
            accepts_modified_content: false,
            trusted: true,
            trust_needed: None,
            agent_modes: None,
            agent: Some(AgentRef { id: "gemini".into(), name: "Gemini CLI".into() }),
            approval_timeout_secs: None,
            network: false,
            sandbox_mask: vec!["/srv/keys".into()],
            sandbox: Some(SandboxStatus { state: SandboxState::Unavailable, reason: Some("no bwrap".into()) }),
        };
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(json["sandboxMask"], serde_json::json!(["/srv/keys"]));
        assert_eq!(json["sandbox"], serde_json::json!({"state": "unavailable", "reason": "no bwrap"}));
        assert_eq!(json["network"], false);
        assert_eq!(json["agent"], serde_json::json!({"id": "gemini", "name": "Gemini CLI"}));
        assert_eq!(json["acceptsModifiedContent"], false);
        let mut older = json.clone();
        older.as_object_mut().unwrap().remove("acceptsModifiedContent");
        let read: ChatConfig = serde_json::from_value(older).unwrap();
        assert!(read.accepts_modified_content, "a hub that does not say accepts the user's version");
        assert_eq!(json["yoloMode"], true);
        assert_eq!(json["yoloLocked"], false);
        assert_eq!(json["source"], "settings");
        assert!(json.get("note").is_none());
    }

    #[test]
    fn status_and_updates_use_snake_case_tags() {
        assert_eq!(serde_json::to_value(SessionStatus::WaitingApproval).unwrap(), "waiting_approval");
        let update = serde_json::to_value(HubUpdate::Projects).unwrap();
        assert_eq!(update, serde_json::json!({"type": "projects"}));
    }

    #[test]
    fn a_decision_is_read_as_its_word_and_an_unknown_word_is_kept() {
        let read = |decision: serde_json::Value| {
            serde_json::from_value::<ApproveRequest>(serde_json::json!({"toolId": "t", "decision": decision}))
                .map(|request| request.decision)
        };
        for decision in ApprovalDecision::ALL {
            assert_eq!(serde_json::to_value(decision).unwrap(), decision.as_str());
            assert_eq!(read(decision.as_str().into()).unwrap(), *decision);
        }
        assert_eq!(ApprovalDecision::ALL.len(), 9);
        let unknown = read("approve_everything".into()).unwrap();
        assert_eq!(unknown, ApprovalDecision::Other("approve_everything".into()));
        assert_eq!(serde_json::to_value(&unknown).unwrap(), "approve_everything");
        assert_eq!(read("Approve".into()).unwrap(), ApprovalDecision::Other("Approve".into()), "words are exact");
        // Only a string is a word: serde's map form of a variant is not one.
        for not_a_word in [serde_json::json!({"approve": null}), serde_json::json!(5), serde_json::Value::Null] {
            let err = read(not_a_word.clone()).unwrap_err().to_string();
            assert!(err.contains("expected a string"), "{not_a_word}: {err}");
        }
    }

    #[test]
    fn set_config_tells_an_absent_timeout_from_a_null_one() {
        let req: SetConfigRequest = serde_json::from_str(r#"{"folderPath":"/p","yoloMode":true}"#).unwrap();
        assert_eq!((req.session_id, req.yolo_mode, req.approval_timeout_secs), (None, Some(true), None));
        let req: SetConfigRequest = serde_json::from_str(r#"{"folderPath":"/p","approvalTimeoutSecs":null}"#).unwrap();
        assert_eq!((req.yolo_mode, req.approval_timeout_secs), (None, Some(None)));
        let req: SetConfigRequest = serde_json::from_str(r#"{"folderPath":"/p","approvalTimeoutSecs":90}"#).unwrap();
        assert_eq!(req.approval_timeout_secs, Some(Some(90)));
        for bad in [r#""90""#, "-1", "1.5", "true"] {
            let body = format!(r#"{{"folderPath":"/p","approvalTimeoutSecs":{bad}}}"#);
            assert!(serde_json::from_str::<SetConfigRequest>(&body).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<SetConfigRequest>(r#"{"folderPath":"/p","yoloMode":"on"}"#).is_err());
    }

    #[test]
    fn a_batch_decision_is_a_single_approve_with_its_session() {
        let batch: BatchApproveRequest =
            serde_json::from_str(r#"{"decisions":[{"sessionId":"s","toolId":"t","decision":"approve_turn"}]}"#)
                .unwrap();
        assert_eq!(batch.decisions[0].session_id, "s");
        assert_eq!(batch.decisions[0].request.decision, ApprovalDecision::ApproveTurn);
        assert!(serde_json::from_str::<BatchApproveRequest>(r#"{"decisions":[{"toolId":"t","decision":"approve"}]}"#)
            .is_err());
    }
}
