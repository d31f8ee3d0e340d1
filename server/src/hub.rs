//! The hub's shared state: the session registry, the settings watcher and the
//! channel that pushes updates to open pages.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use protocol::api::{ChatConfig, HubUpdate, ProjectsResponse, SessionStatus, YoloSource};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::agents::acp::AcpAgent;
use crate::agents::builtin::model::ModelConfig;
use crate::agents::catalog::{AgentEntry, Catalog};
use crate::agents::port::HubPort;
use crate::agents::{AgentError, SessionRuntime};
use crate::folder::canonical_folder;
use crate::policy::{PolicyDirs, PolicyFiles};
use crate::registry::{Registry, Session, YoloLocked, YoloState};
use crate::store::{SessionRow, Store, StoreError};
use crate::watcher::SettingsWatcher;
use trust::FolderTrust;

mod checkpoints;
mod error;
mod habits;
mod rules;
mod sandbox;
mod sessions;
mod trust;
mod user_actions;
mod waits;
mod worktrees;

pub use error::{HubError, HubResult};
pub use waits::checked_timeout;

/// How the hub's agents work.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// The built-in agent's model; `None` answers prompts with `agent_unavailable`.
    pub model: Option<ModelConfig>,
    pub shell_timeout: Duration,
    /// Where sessions and events are kept; `None` keeps them in memory only.
    pub store: Option<Arc<Store>>,
    /// The launch's ACP agent (`--agent acp`): the default for new sessions.
    pub acp: Option<Arc<AcpAgent>>,
    /// Every agent a session can pick; `None`: the built-in agent with `model`,
    /// the ready ones, and `acp`.
    pub agents: Option<Catalog>,
    /// How many sessions' runtimes (event log, conversation) stay in memory
    /// once idle; more are loaded from the store when used (with a store only).
    pub max_resident: usize,
    /// Where the user's and the admin's policy files are (none: only the folder's own).
    pub policy_dirs: PolicyDirs,
    /// Whether a folder's own files may loosen anything only once the user
    /// trusts it (`--no-folder-trust` turns this off: every folder is trusted).
    pub folder_trust: bool,
    /// Where the folders' checkpoints are kept (`<data dir>/checkpoints`);
    /// `None`: turns are not recorded and cannot be rewound.
    pub checkpoints: Option<std::path::PathBuf>,
    /// Where isolated sessions' worktrees are made (`<data dir>/worktrees`);
    /// `None`: no session can be isolated.
    pub worktrees: Option<std::path::PathBuf>,
    /// The sandbox every command and agent runs in; `None`: bwrap as probed
    /// on this machine, with the store's dir masked.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

/// Enough for every session a person has open at once; an idle one beyond
/// costs a read of its events when it is opened again.
pub const MAX_RESIDENT_SESSIONS: usize = 64;

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            model: None,
            shell_timeout: Duration::from_secs(120),
            store: None,
            acp: None,
            agents: None,
            max_resident: MAX_RESIDENT_SESSIONS,
            // Only the folder's own policy files unless told (tests stay hermetic; main passes the real ones).
            policy_dirs: PolicyDirs { user: None, admin: None, admin_checked: true },
            folder_trust: true,
            checkpoints: None,
            worktrees: None,
            sandbox: None,
        }
    }
}

pub struct Hub {
    registry: Mutex<Registry>,
    runtimes: Mutex<HashMap<String, Arc<SessionRuntime>>>,
    updates: broadcast::Sender<HubUpdate>,
    watcher: Option<SettingsWatcher>,
    shell_timeout: Duration,
    store: Option<Arc<Store>>,
    agents: Catalog,
    max_resident: usize,
    /// The policy files, read again when they change.
    policies: PolicyFiles,
    /// Counts runtimes handed out: which idle one was used longest ago.
    uses: std::sync::atomic::AtomicU64,
    /// Cancelled when the hub begins to shut down: live streams end on it.
    shutdown: CancellationToken,
    /// The folder last recorded as opened (`Store::record_folder_opened`).
    last_opened: Mutex<Option<std::path::PathBuf>>,
    pub(crate) trust: FolderTrust,
    /// Each folder's approval timeout.
    timeouts: waits::Timeouts,
    /// Each folder's checkpoints.
    checkpoints: Option<Arc<crate::checkpoints::Checkpoints>>,
    /// Isolated sessions' worktrees.
    worktrees: Option<Arc<crate::worktrees::Worktrees>>,
    /// What every command and agent runs in.
    sandbox: Arc<crate::sandbox::Sandbox>,
    /// Each folder's network for commands.
    networks: sandbox::Networks,
    masks: sandbox::Masks,
}

impl Hub {
    /// A hub whose settings watcher runs on the current tokio runtime, with the
    /// sessions of its store restored. Panics when they cannot be read (see
    /// [`Hub::try_new`], which says so instead).
    pub fn new(options: HubOptions) -> Arc<Self> {
        Self::try_new(options).unwrap_or_else(|err| panic!("the hub cannot start: {err}"))
    }

    /// [`Hub::new`], or why the store's sessions could not be read: a hub that
    /// started empty would hide them, and the next default session made in a
    /// folder would write over a stored one's history.
    pub fn try_new(options: HubOptions) -> Result<Arc<Self>, StoreError> {
        let agents = options.agents.unwrap_or_else(|| {
            Catalog::new(crate::agents::catalog::AgentFlags {
                model: options.model.clone(),
                acp: options.acp.clone(),
                ..Default::default()
            })
        });
        let hub = Arc::new_cyclic(|weak: &std::sync::Weak<Hub>| {
            let hub = weak.clone();
            let changed: crate::watcher::SettingsChanged = Box::new(move |folder| match hub.upgrade() {
                Some(hub) => {
                    hub.settings_changed(folder);
                    true
                }
                None => false,
            });
            let watcher = SettingsWatcher::start(changed)
                .map_err(|err| tracing::warn!("settings files will not be watched: {err}"))
                .ok();
            Self {
                registry: Mutex::default(),
                runtimes: Mutex::default(),
                updates: broadcast::channel(256).0,
                watcher,
                shell_timeout: options.shell_timeout,
                store: options.store.clone(),
                agents,
                max_resident: options.max_resident,
                policies: PolicyFiles::new(options.policy_dirs.clone()),
                uses: Default::default(),
                shutdown: CancellationToken::new(),
                last_opened: Mutex::default(),
                trust: FolderTrust::load(options.folder_trust, options.store.as_deref()),
                timeouts: waits::Timeouts::load(options.store.as_deref()),
                checkpoints: options
                    .checkpoints
                    .clone()
                    .map(|root| Arc::new(crate::checkpoints::Checkpoints::new(root))),
                worktrees: options.worktrees.clone().map(|root| Arc::new(crate::worktrees::Worktrees::new(root))),
                sandbox: options.sandbox.clone().unwrap_or_else(|| {
                    let data_dir =
                        options.store.as_ref().and_then(|store| store.path().parent().map(Path::to_path_buf));
                    crate::sandbox::Sandbox::detected(data_dir)
                }),
                networks: sandbox::Networks::load(
                    options.store.as_deref(),
                    crate::store::Store::network_folders,
                    "the folders' network settings could not be read; every folder's is off",
                ),
                masks: sandbox::Masks::load(
                    options.store.as_deref(),
                    crate::store::Store::folder_masks,
                    "the folders' own masks could not be read; only the default list holds",
                ),
            }
        });
        hub.restore()?;
        waits::spawn_sweeper(Arc::downgrade(&hub), hub.shutdown.clone());
        Ok(hub)
    }

    /// Brings back the stored sessions: each one's status follows from its log,
    /// and a turn that was running when the hub stopped is closed as an error.
    fn restore(&self) -> Result<(), StoreError> {
        let Some(store) = &self.store else { return Ok(()) };
        let rows = store.sessions()?;
        for row in rows {
            let mut yolo = YoloState::from_settings(self.folder_settings(&row.folder));
            if let Some(enabled) = row.yolo_override {
                // A lock set in the settings file since then wins.
                let _ = yolo.set_by_user(enabled);
            }
            let session = Session {
                id: row.id.clone(),
                folder: row.folder.clone(),
                status: SessionStatus::Idle,
                pending_count: 0,
                yolo,
                title: row.title.clone(),
                agent: row.agent.clone().unwrap_or_else(|| {
                    self.agents.agent_of_older_session(store.agent_state(&row.id).ok().flatten().as_deref())
                }),
                created_at_ms: row.created_at_ms,
                updated_at_ms: row.updated_at_ms,
                waiting_since_ms: None,
                worktree: row.worktree.clone(),
            };
            if let Some(worktree) = session.worktree.as_ref().filter(|worktree| !worktree.exists()) {
                // Said (the session's summary shows it missing), not fatal.
                tracing::warn!(
                    session = %row.id,
                    path = %worktree.path.display(),
                    "the isolated session's worktree is gone (deleted outside the hub)"
                );
            }
            self.registry().restore(session);
            if let Some(watcher) = self.watcher.as_ref().filter(|_| row.folder.is_dir()) {
                watcher.watch(&row.folder);
            }
            if let Some(runtime) = self.runtime(&row.id) {
                // Saved by the runtime; a restart is no update, `updatedAt` stays.
                let status = runtime.recover();
                if let Some(session) = self.registry().get_mut(&row.id) {
                    session.show(status);
                    // The agent given to a session from before sessions had one is kept.
                    self.persist(session);
                }
            }
        }
        Ok(())
    }

    fn persist(&self, session: &Session) {
        if let Some(store) = &self.store {
            store.save_session(SessionRow {
                id: session.id.clone(),
                folder: session.folder.clone(),
                status: session.status,
                yolo_override: (session.yolo.source == YoloSource::User).then_some(session.yolo.enabled),
                pending_count: session.pending_count,
                title: session.title.clone(),
                agent: Some(session.agent.clone()),
                created_at_ms: session.created_at_ms,
                updated_at_ms: session.updated_at_ms,
                worktree: session.worktree.clone(),
            });
        }
    }

    /// The agents a session can pick.
    pub fn agents(&self) -> &Catalog {
        &self.agents
    }

    /// The agent the session works with; 409 `agent_unavailable` when the hub
    /// no longer lists it (the agents file changed since the session began).
    pub fn agent_of(&self, session_id: &str) -> Result<Arc<AgentEntry>, AgentError> {
        let id = self.registry().get(session_id).map(|session| session.agent.clone());
        let Some(id) = id else { return Err(AgentError::NoSession(session_id.to_string())) };
        self.agents.get(&id).cloned().ok_or(AgentError::AgentGone(id))
    }

    /// An agent as a session names it; one no longer listed by its id.
    pub(crate) fn agent_ref(&self, id: &str) -> protocol::api::AgentRef {
        match self.agents.get(id) {
            Some(entry) => entry.reference(),
            None => protocol::api::AgentRef { id: id.to_string(), name: id.to_string() },
        }
    }

    /// The agent the folder's next new session gets unless it asks for another.
    /// Looks for programs on PATH: not on the runtime's threads.
    pub fn folder_agent(&self, folder: &Path) -> String {
        let choice = self.registry().last_agent_in(folder).map(str::to_string);
        // An asked-for agent is checked; none asked cannot fail.
        self.agents.for_new_session(None, choice.as_deref()).unwrap_or_else(|_| self.agents.default_id().into())
    }

    /// Whether YOLO is on for the session (an unknown session: off; off
    /// whatever was chosen while the sandbox cannot work).
    pub fn yolo(&self, session_id: &str) -> bool {
        self.yolo_allowed().is_ok() && self.session(session_id).is_some_and(|session| session.yolo.enabled)
    }

    pub fn policies(&self) -> &PolicyFiles {
        &self.policies
    }

    pub fn store(&self) -> Option<&Arc<Store>> {
        self.store.as_ref()
    }

    /// The ids of the folder's sessions.
    pub fn sessions_in(&self, folder: &Path) -> Vec<String> {
        self.registry().sessions_in_mut(folder).map(|session| session.id.clone()).collect()
    }

    pub fn shell_timeout(&self) -> Duration {
        self.shell_timeout
    }

    /// The agent runtime of an existing session (loaded from the store if it
    /// is not in memory); `None` when there is no such session or it cannot be read.
    pub fn runtime(&self, id: &str) -> Option<Arc<SessionRuntime>> {
        self.try_runtime(id).unwrap_or_else(|err| {
            tracing::error!(session = id, "{err}");
            None
        })
    }

    /// [`Hub::runtime`], saying why a session that exists could not be read.
    pub fn try_runtime(&self, id: &str) -> Result<Option<Arc<SessionRuntime>>, StoreError> {
        let Some((folder, root)) = self.registry().get(id).map(|session| (session.folder.clone(), session.root()))
        else {
            return Ok(None);
        };
        let resident = self.runtimes().get(id).cloned();
        let runtime = match resident {
            Some(runtime) => runtime,
            None => {
                // Not kept when it fails: the next use tries again.
                let loaded =
                    Arc::new(SessionRuntime::load(id.to_string(), folder.clone(), self.store.clone())?.rooted(root));
                // Kept only while the session still exists, checked under the
                // registry's lock, which a delete holds while it removes both:
                // a runtime read just before a delete must not outlive it.
                let kept = {
                    let registry = self.registry();
                    if registry.get(id).is_none_or(|session| session.folder != folder) {
                        return Ok(None);
                    }
                    self.runtimes().entry(id.to_string()).or_insert_with(|| loaded.clone()).clone()
                };
                // Read later than the start (its first read failed): what a
                // killed hub left is settled now, as a restart would have.
                if Arc::ptr_eq(&kept, &loaded) && kept.needs_recovery() {
                    let status = kept.recover();
                    if let Some(session) = self.registry().get_mut(id) {
                        session.show(status);
                    }
                    self.projects_changed();
                }
                kept
            }
        };
        let mut runtimes = self.runtimes();
        runtime.last_used.store(self.uses.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        self.bound_resident(&mut runtimes);
        Ok(Some(runtime))
    }

    /// Bounded memory: past `max_resident`, the idle runtimes used longest ago
    /// leave memory. Only those whose saves are all on disk, with no turn and
    /// nobody else holding them (a clone is only made under this lock), so a
    /// later load reads back exactly what left.
    fn bound_resident(&self, runtimes: &mut HashMap<String, Arc<SessionRuntime>>) {
        if runtimes.len() <= self.max_resident {
            return;
        }
        let mut idle: Vec<(u64, String)> = runtimes
            .iter()
            .filter(|(_, runtime)| runtime.can_leave_memory(1))
            .map(|(id, runtime)| (runtime.last_used.load(Ordering::Relaxed), id.clone()))
            .collect();
        idle.sort_unstable();
        let excess = runtimes.len() - self.max_resident;
        for (_, id) in idle.into_iter().take(excess) {
            runtimes.remove(&id);
        }
    }

    /// How many sessions' runtimes are in memory.
    pub fn resident_sessions(&self) -> usize {
        self.runtimes().len()
    }

    /// The pages' copy of a session's status takes its machine's (which the
    /// runtime saved with its state), and open pages refetch. Only a
    /// session's runtime calls this, under the session's lock.
    fn show_status(&self, id: &str, status: crate::session::Status, at_ms: u64) {
        if let Some(session) = self.registry().get_mut(id) {
            // The time the database took for the change: a restart shows the same.
            if (session.status, session.pending_count) != (status.status, status.pending_count) {
                session.updated_at_ms = session.updated_at_ms.max(at_ms);
            }
            session.show(status);
        }
        self.projects_changed();
    }

    /// Tells open pages to refetch the folders and sessions.
    pub fn projects_changed(&self) {
        self.publish(HubUpdate::Projects);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<HubUpdate> {
        self.updates.subscribe()
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn runtimes(&self) -> MutexGuard<'_, HashMap<String, Arc<SessionRuntime>>> {
        self.runtimes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Tells every open page that a device paired (the remote listener's).
    pub fn device_paired(&self, name: &str, address: &str) {
        let paired = protocol::api::DevicePaired { name: name.to_string(), address: address.to_string() };
        self.publish(HubUpdate::DevicePaired(Box::new(paired)));
    }

    pub(crate) fn publish(&self, update: HubUpdate) {
        // No open page is not an error.
        let _ = self.updates.send(update);
    }

    /// Validates the folder and opens (creating on first use) the session.
    pub fn open_session(&self, folder_path: &str, session_id: Option<&str>) -> HubResult<ChatConfig> {
        self.with_session(folder_path, session_id, None, |session| Ok(self.config_of(session)))
    }

    /// As [`Hub::open_session`]; a session this creates works with `agent`
    /// (else the folder's last choice), and an existing one must already.
    pub fn open_session_with(
        &self,
        folder_path: &str,
        session_id: Option<&str>,
        agent: Option<&str>,
    ) -> HubResult<ChatConfig> {
        self.with_session(folder_path, session_id, agent, |session| Ok(self.config_of(session)))
    }

    pub fn set_yolo(&self, folder_path: &str, session_id: Option<&str>, enabled: bool) -> HubResult<ChatConfig> {
        if enabled {
            self.yolo_allowed()?;
        }
        let config = self.with_session(folder_path, session_id, None, |session| {
            session.yolo.set_by_user(enabled).map_err(|YoloLocked| HubError::YoloLocked)?;
            session.updated_at_ms = now_ms();
            self.persist(session);
            Ok(self.config_of(session))
        })?;
        self.publish(HubUpdate::Config(Box::new(config.clone())));
        Ok(config)
    }

    /// Runs `act` on the session (created on first use, with `agent` or the
    /// folder's last choice); a folder whose session is used goes to the front
    /// of the recent folders.
    fn with_session<T>(
        &self,
        folder_path: &str,
        session_id: Option<&str>,
        agent: Option<&str>,
        act: impl FnOnce(&mut Session) -> HubResult<T>,
    ) -> HubResult<T> {
        self.with_session_tries(folder_path, session_id, agent, None, act, 1)
    }

    /// [`Hub::with_session`]; `retries`: how often it starts over when the
    /// session came or went between choosing its agent and opening it.
    fn with_session_tries<T>(
        &self,
        folder_path: &str,
        session_id: Option<&str>,
        agent: Option<&str>,
        worktree: Option<crate::worktrees::Worktree>,
        act: impl FnOnce(&mut Session) -> HubResult<T>,
        retries: u8,
    ) -> HubResult<T> {
        let folder = canonical_folder(folder_path)?;
        // The agent of a session this would make, chosen before the registry's
        // lock is taken (it looks for programs on PATH), and only then.
        let (exists, folder_choice) = {
            let registry = self.registry();
            (registry.exists(&folder, session_id), registry.last_agent_in(&folder).map(str::to_string))
        };
        let new_agent = match exists {
            true => self.agents.default_id().to_string(),
            false => self.agents.for_new_session(agent, folder_choice.as_deref())?,
        };
        let (result, created) = {
            let mut registry = self.registry();
            if retries > 0 && registry.exists(&folder, session_id) != exists {
                drop(registry);
                return self.with_session_tries(folder_path, session_id, agent, worktree, act, retries - 1);
            }
            let (session, created) =
                registry.open(&folder, session_id, now_ms(), &new_agent, || self.folder_settings(&folder))?;
            if let Some(asked) = agent.filter(|asked| !created && *asked != session.agent) {
                return Err(HubError::Invalid(format!(
                    "Session '{}' works with {}; `agent` ('{asked}') picks the agent of a new session only.",
                    session.id,
                    self.agent_ref(&session.agent).name
                )));
            }
            if worktree.is_some() && !created {
                return Err(HubError::Invalid(format!("Session '{}' exists already.", session.id)));
            }
            if created {
                session.worktree = worktree;
                self.persist(session);
                // Nothing of it is stored yet: no need to read it back.
                let runtime = SessionRuntime::fresh(session.id.clone(), folder.clone(), self.store.clone())
                    .rooted(session.root());
                self.runtimes().insert(session.id.clone(), Arc::new(runtime));
            }
            (act(session), created)
        };
        if created {
            if let Some(watcher) = &self.watcher {
                watcher.watch(&folder);
            }
            self.publish(HubUpdate::Projects);
        }
        if let (Ok(_), Some(store)) = (&result, &self.store) {
            // Once per switch of folder, not on every prompt and config read in it.
            let mut last = self.last_opened.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if last.as_deref() != Some(folder.as_path()) {
                store.record_folder_opened(&folder, now_ms());
                *last = Some(folder);
            }
        }
        result
    }

    /// A session's config as the page sees it, with what the hub's agent can do.
    fn config_of(&self, session: &Session) -> ChatConfig {
        let agent_modes = self.runtimes().get(&session.id).and_then(|runtime| runtime.agent_modes());
        // An ACP agent applies its edits itself; one no longer listed takes none.
        let builtin = self.agents.get(&session.agent).is_some_and(|entry| entry.is_builtin());
        let trusted = self.trusted(&session.folder);
        let base = session.config();
        let (yolo_mode, note) = match self.yolo_allowed() {
            Err(refused) if base.yolo_mode => (false, Some(refused.to_string())),
            _ => (base.yolo_mode, base.note.clone()),
        };
        ChatConfig {
            yolo_mode,
            note,
            network: self.network(&session.folder),
            sandbox_mask: self.masks(&session.folder).iter().map(|mask| mask.display().to_string()).collect(),
            sandbox: Some(self.sandbox.status()),
            accepts_modified_content: builtin,
            agent_modes,
            agent: Some(self.agent_ref(&session.agent)),
            trusted,
            trust_needed: (!trusted).then(|| self.trust_needed(&session.folder)).flatten(),
            approval_timeout_secs: self.approval_timeout(&session.folder),
            ..base
        }
    }

    /// A session's config changed outside the registry (its agent's modes): open pages are told.
    pub fn config_changed(&self, session_id: &str) {
        let config = self.registry().get(session_id).map(|session| self.config_of(session));
        if let Some(config) = config {
            self.publish(HubUpdate::Config(Box::new(config)));
        }
    }

    /// A session's config as the page sees it.
    pub fn config(&self, session_id: &str) -> Option<ChatConfig> {
        self.registry().get(session_id).map(|session| self.config_of(session))
    }

    pub fn projects(&self) -> ProjectsResponse {
        let mut projects = self.registry().projects();
        for project in &mut projects.projects {
            let folder = Path::new(&project.folder_path).to_path_buf();
            for session in &mut project.sessions {
                session.agent = session.agent.take().map(|agent| self.agent_ref(&agent.id));
                session.deadline_at = session.waiting_since.and_then(|since| self.deadline(&folder, since));
            }
        }
        projects
    }

    pub fn session(&self, id: &str) -> Option<Session> {
        self.registry().get(id).cloned()
    }

    /// The folder's settings file changed on disk: re-derive every session's YOLO
    /// default and push what changed.
    pub fn settings_changed(&self, folder: &Path) {
        let settings = self.folder_settings(folder);
        let changed: Vec<ChatConfig> = {
            let mut registry = self.registry();
            registry
                .sessions_in_mut(folder)
                .filter_map(|session| {
                    let changed = session.yolo.rederive(settings.clone());
                    if changed {
                        self.persist(session);
                    }
                    changed.then(|| self.config_of(session))
                })
                .collect()
        };
        for config in changed {
            tracing::info!(folder = %folder.display(), yolo = config.yolo_mode, "settings changed on disk");
            self.publish(HubUpdate::Config(Box::new(config)));
        }
    }
}

pub use crate::clock::now_ms;

/// Shutting down: what ends when the hub stops.
impl Hub {
    /// Cancelled once the hub begins to shut down; live streams end on it, so
    /// an open page cannot hold the server's graceful shutdown up.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Ends every live stream and stops each running turn as Stop does (its
    /// running command is killed, its `result` is `cancelled`). A waiting card
    /// is left as it is: it is kept and comes back after a restart.
    pub fn begin_shutdown(self: &Arc<Self>) {
        self.shutdown.cancel();
        let runtimes: Vec<Arc<SessionRuntime>> = self.runtimes().values().cloned().collect();
        for runtime in runtimes {
            crate::agents::stop_running(&self.port(), &runtime);
        }
    }

    /// How many sessions have a turn running (a stopped turn counts until its
    /// end is written down).
    pub fn running_turns(&self) -> usize {
        let runtimes: Vec<Arc<SessionRuntime>> = self.runtimes().values().cloned().collect();
        runtimes.iter().filter(|runtime| runtime.state().machine.is_running()).count()
    }
}

/// The hub as its agents see it (see [`HubPort`]).
impl HubPort for Hub {
    fn yolo(&self, session_id: &str) -> bool {
        Hub::yolo(self, session_id)
    }

    fn policy_set(&self, folder: &Path) -> crate::policy::PolicySet {
        Hub::policy_set(self, folder)
    }

    fn agent_of(&self, session_id: &str) -> Result<Arc<dyn crate::agents::Agent>, AgentError> {
        Hub::agent_of(self, session_id).map(|entry| entry.agent())
    }

    fn shell_timeout(&self) -> Duration {
        Hub::shell_timeout(self)
    }

    fn shutdown_token(&self) -> CancellationToken {
        Hub::shutdown_token(self)
    }

    fn show_status(&self, session_id: &str, status: crate::session::Status, at_ms: u64) {
        Hub::show_status(self, session_id, status, at_ms)
    }

    fn projects_changed(&self) {
        Hub::projects_changed(self)
    }

    fn config_changed(&self, session_id: &str) {
        Hub::config_changed(self, session_id)
    }

    fn checkpoints(&self) -> Option<Arc<crate::checkpoints::Checkpoints>> {
        self.checkpoints.clone()
    }

    fn sandbox_terms(&self, session_id: &str) -> crate::agents::port::SandboxTerms {
        Hub::sandbox_terms(self, session_id)
    }
}

impl Hub {
    /// The hub as its agents see it.
    pub fn port(self: &Arc<Self>) -> Arc<dyn HubPort> {
        self.clone()
    }
}
