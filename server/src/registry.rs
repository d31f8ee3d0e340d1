//! Sessions by id, each bound to one canonical folder. Plain data, no IO: the
//! caller supplies the settings read and the clock, so every rule here is
//! unit-testable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use protocol::api::{ChatConfig, ProjectSummary, ProjectsResponse, SessionStatus, SessionSummary, YoloSource};
use sha2::{Digest, Sha256};

use crate::settings::SettingsDefault;

/// A session's YOLO value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YoloState {
    pub enabled: bool,
    pub source: YoloSource,
    pub settings: SettingsDefault,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YoloLocked;

impl YoloState {
    pub fn from_settings(settings: SettingsDefault) -> Self {
        let source = if settings.from_settings { YoloSource::Settings } else { YoloSource::Default };
        Self { enabled: settings.yolo_mode, source, settings }
    }

    pub fn locked(&self) -> bool {
        self.settings.locked
    }

    /// A runtime toggle; never written back to the settings file.
    pub fn set_by_user(&mut self, enabled: bool) -> Result<(), YoloLocked> {
        if enabled && self.locked() {
            return Err(YoloLocked);
        }
        self.enabled = enabled;
        self.source = YoloSource::User;
        Ok(())
    }

    /// The settings file changed on disk: its newer word replaces any runtime
    /// toggle. An event that leaves the file's word as it was (a `touch`, a
    /// rewrite of other keys) keeps the user's toggle. Returns whether anything
    /// the user sees changed.
    pub fn rederive(&mut self, settings: SettingsDefault) -> bool {
        if settings == self.settings {
            return false;
        }
        let next = Self::from_settings(settings);
        let changed = next != *self;
        *self = next;
        changed
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: String,
    pub folder: PathBuf,
    pub status: SessionStatus,
    /// Tool calls waiting for the user.
    pub pending_count: usize,
    pub yolo: YoloState,
    /// Named by the user, else taken from the first prompt; `None` before it.
    pub title: Option<String>,
    /// The id of the agent it works with, chosen when it was created.
    pub agent: String,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    /// While it waits on the user: since when (its machine's, as last shown).
    pub waiting_since_ms: Option<u64>,
    /// An isolated session's git worktree (issue 29).
    pub worktree: Option<crate::worktrees::Worktree>,
}

impl Session {
    /// Where the session works: its worktree's part for the folder when it
    /// is isolated, else the folder. The agent's cwd, the file tools'
    /// confinement, an ACP session's `cwd`, the changes and checkpoints go
    /// by this; rules, trust and YOLO go by the folder.
    pub fn root(&self) -> PathBuf {
        self.worktree.as_ref().map_or_else(|| self.folder.clone(), crate::worktrees::Worktree::root)
    }

    /// Shows the status its machine gives (without touching `updated_at_ms`).
    pub fn show(&mut self, status: crate::session::Status) {
        self.status = status.status;
        self.pending_count = status.pending_count;
        self.waiting_since_ms = status.waiting_since;
    }

    pub fn config(&self) -> ChatConfig {
        ChatConfig {
            yolo_mode: self.yolo.enabled,
            yolo_locked: self.yolo.locked(),
            source: self.yolo.source,
            folder_path: self.folder.display().to_string(),
            session_id: self.id.clone(),
            note: self.yolo.settings.note.clone(),
            accepts_modified_content: true,
            agent_modes: None,
            agent: None,
            // The hub says whether the folder is trusted, and its timeout.
            trusted: true,
            trust_needed: None,
            approval_timeout_secs: None,
            // The hub says the folder's network and the sandbox.
            network: false,
            sandbox_mask: Vec::new(),
            sandbox: None,
        }
    }

    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            id: self.id.clone(),
            title: self.title.clone(),
            status: self.status,
            pending_count: self.pending_count,
            yolo_mode: self.yolo.enabled,
            updated_at: self.updated_at_ms,
            // The hub puts the agent's name in.
            agent: Some(protocol::api::AgentRef { id: self.agent.clone(), name: self.agent.clone() }),
            waiting_since: self.waiting_since_ms,
            // The hub puts in when the folder's timeout answers it.
            deadline_at: None,
            branch: self.worktree.as_ref().map(|worktree| worktree.branch.clone()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    InvalidSessionId(String),
    /// The session was deleted (a page that still shows it).
    Deleted(String),
    /// The id is taken by a session of another folder.
    SessionOfOtherFolder {
        id: String,
        folder: PathBuf,
    },
}

impl std::error::Error for RegistryError {}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidSessionId(id) => {
                write!(f, "sessionId '{id}' is not valid: use 1 to 64 letters, digits, '.', '_' or '-'.")
            }
            Self::Deleted(id) => write!(f, "Session '{id}' was deleted."),
            Self::SessionOfOtherFolder { id, folder } => {
                write!(f, "Session '{id}' belongs to another folder ({}).", folder.display())
            }
        }
    }
}

/// A title the user gives is at most this long (in characters).
pub const TITLE_MAX_CHARS: usize = 200;
/// A title taken from a prompt is cut to this many characters.
pub const PROMPT_TITLE_CHARS: usize = 80;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TitleError {
    #[error("title must not be blank.")]
    Blank,
    #[error("title is {0} characters long; at most {TITLE_MAX_CHARS} are allowed.")]
    TooLong(usize),
}

/// A title as the user gave it, trimmed; blank or too long is refused.
pub fn checked_title(text: &str) -> Result<String, TitleError> {
    let title = text.trim();
    let chars = title.chars().count();
    match chars {
        0 => Err(TitleError::Blank),
        n if n > TITLE_MAX_CHARS => Err(TitleError::TooLong(n)),
        _ => Ok(title.to_string()),
    }
}

/// The title a session takes from its first prompt: the first line with text,
/// trimmed, cut at a character boundary (an ellipsis says it was cut).
pub fn title_from_prompt(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|line| !line.is_empty())?;
    match line.char_indices().nth(PROMPT_TITLE_CHARS) {
        None => Some(line.to_string()),
        Some((cut, _)) => Some(format!("{}…", line[..cut].trim_end())),
    }
}

/// The id of a folder's default session: stable for the folder across restarts,
/// distinct between folders.
pub fn default_session_id(folder: &Path) -> String {
    let digest = Sha256::digest(folder.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|byte| format!("{byte:02x}")).collect()
}

pub fn valid_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[derive(Debug, Default)]
pub struct Registry {
    sessions: BTreeMap<String, Session>,
    /// The agent of each folder's last session made since the hub started
    /// or restored (two can share a millisecond, so not from `created_at_ms`).
    chosen: BTreeMap<PathBuf, String>,
    /// Sessions deleted since the hub started (but folders' default ones): a
    /// page still showing one must not make it anew by prompting.
    deleted: std::collections::BTreeSet<String>,
}

impl Registry {
    /// Finds the session for (`folder`, `session_id`) or creates it with
    /// `agent`, calling `read_settings` only on creation. `folder` must already be canonical.
    /// Returns the session and whether it was created.
    pub fn open(
        &mut self,
        folder: &Path,
        session_id: Option<&str>,
        now_ms: u64,
        agent: &str,
        read_settings: impl FnOnce() -> SettingsDefault,
    ) -> Result<(&mut Session, bool), RegistryError> {
        let id = match session_id {
            Some(id) if !valid_session_id(id) => return Err(RegistryError::InvalidSessionId(id.to_string())),
            Some(id) if self.deleted.contains(id) => return Err(RegistryError::Deleted(id.to_string())),
            Some(id) => id.to_string(),
            None => default_session_id(folder),
        };
        let created = !self.sessions.contains_key(&id);
        let session = self.sessions.entry(id.clone()).or_insert_with(|| Session {
            id,
            folder: folder.to_path_buf(),
            status: SessionStatus::Idle,
            pending_count: 0,
            yolo: YoloState::from_settings(read_settings()),
            title: None,
            agent: agent.to_string(),
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            waiting_since_ms: None,
            worktree: None,
        });
        if session.folder != folder {
            return Err(RegistryError::SessionOfOtherFolder { id: session.id.clone(), folder: session.folder.clone() });
        }
        if created {
            self.chosen.insert(folder.to_path_buf(), agent.to_string());
        }
        Ok((session, created))
    }

    /// What [`Registry::open`] would give, making nothing: the session, or
    /// the id a new one would take (`Err` as `open` would fail).
    pub fn peek(&self, folder: &Path, session_id: Option<&str>) -> Result<Result<&Session, String>, RegistryError> {
        let id = match session_id {
            Some(id) if !valid_session_id(id) => return Err(RegistryError::InvalidSessionId(id.to_string())),
            Some(id) if self.deleted.contains(id) => return Err(RegistryError::Deleted(id.to_string())),
            Some(id) => id.to_string(),
            None => default_session_id(folder),
        };
        match self.sessions.get(&id) {
            Some(session) if session.folder != folder => {
                Err(RegistryError::SessionOfOtherFolder { id: session.id.clone(), folder: session.folder.clone() })
            }
            Some(session) => Ok(Ok(session)),
            None => Ok(Err(id)),
        }
    }

    /// Puts back a session loaded from the store. The store gives them in the
    /// order they were made: the last one restored is its folder's last choice.
    pub fn restore(&mut self, session: Session) {
        self.chosen.insert(session.folder.clone(), session.agent.clone());
        self.sessions.insert(session.id.clone(), session);
    }

    /// Forgets a session (deleted); its folder's default comes back empty on
    /// next use, any other id is refused from now on.
    pub fn remove(&mut self, id: &str) -> Option<Session> {
        let session = self.sessions.remove(id)?;
        if session.id != default_session_id(&session.folder) {
            self.deleted.insert(session.id.clone());
        }
        Some(session)
    }

    /// Gives the session the title the user chose. `None`: no such session.
    pub fn rename(&mut self, id: &str, title: String) -> Option<&Session> {
        let session = self.sessions.get_mut(id)?;
        session.title = Some(title);
        Some(session)
    }

    /// A prompt was sent: a session without a title takes it from the prompt.
    /// Returns the session when its title changed.
    pub fn note_prompt(&mut self, id: &str, prompt: &str) -> Option<&Session> {
        let session = self.sessions.get_mut(id).filter(|session| session.title.is_none())?;
        session.title = Some(title_from_prompt(prompt)?);
        Some(session)
    }

    /// Whether (`folder`, `session_id`) names a session already there.
    pub fn exists(&self, folder: &Path, session_id: Option<&str>) -> bool {
        let id = session_id.map_or_else(|| default_session_id(folder), str::to_string);
        self.sessions.contains_key(&id)
    }

    /// The folder's last choice: the agent of its last session made (deleted
    /// since or not), or restored.
    pub fn last_agent_in(&self, folder: &Path) -> Option<&str> {
        self.chosen.get(folder).map(String::as_str)
    }

    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
    }

    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Session> {
        self.sessions.get_mut(id)
    }

    pub fn sessions_in_mut<'a>(&'a mut self, folder: &'a Path) -> impl Iterator<Item = &'a mut Session> + 'a {
        self.sessions.values_mut().filter(move |session| session.folder == folder)
    }

    /// Folders with their sessions, folders by path, sessions most recent first.
    pub fn projects(&self) -> ProjectsResponse {
        let mut by_folder: BTreeMap<&Path, Vec<&Session>> = BTreeMap::new();
        for session in self.sessions.values() {
            by_folder.entry(&session.folder).or_default().push(session);
        }
        let projects = by_folder
            .into_iter()
            .map(|(folder, mut sessions)| {
                sessions.sort_by(|a, b| b.updated_at_ms.cmp(&a.updated_at_ms).then_with(|| a.id.cmp(&b.id)));
                ProjectSummary {
                    folder_path: folder.display().to_string(),
                    sessions: sessions.into_iter().map(Session::summary).collect(),
                }
            })
            .collect();
        ProjectsResponse { projects }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::parse_settings;

    fn locked() -> SettingsDefault {
        parse_settings(r#"{"security":{"disableYoloMode":true}}"#)
    }
    fn yolo_on() -> SettingsDefault {
        parse_settings(r#"{"security":{"disableYoloMode":false}}"#)
    }
    fn missing() -> SettingsDefault {
        parse_settings("{}")
    }

    #[test]
    fn first_use_creates_and_reads_settings_once() {
        let mut registry = Registry::default();
        let folder = Path::new("/work/a");
        let (session, created) = registry.open(folder, None, 10, "builtin", yolo_on).unwrap();
        assert!(created);
        assert_eq!((session.yolo.enabled, session.yolo.source), (true, YoloSource::Settings));
        assert_eq!(session.id, default_session_id(folder));
        let (again, created) =
            registry.open(folder, None, 20, "builtin", || panic!("settings must not be re-read")).unwrap();
        assert!(!created);
        assert_eq!(again.created_at_ms, 10);
    }

    #[test]
    fn a_folder_remembers_the_agent_of_its_newest_session() {
        let mut registry = Registry::default();
        let folder = Path::new("/work/a");
        assert_eq!(registry.last_agent_in(folder), None);
        let restored = |id: &str, at: u64, agent: &str| Session {
            agent: agent.into(),
            created_at_ms: at,
            ..registry_session(id, folder)
        };
        registry.restore(restored("old", 1, "gemini"));
        registry.restore(restored("new", 5, "codex"));
        registry.open(Path::new("/work/b"), Some("other"), 9, "builtin", missing).unwrap();
        let (again, created) = registry.open(folder, Some("old"), 10, "builtin", missing).unwrap();
        assert!(!created && again.agent == "gemini", "an existing session keeps its agent");
        assert_eq!(registry.last_agent_in(folder), Some("codex"), "the last stored session's");

        // Made in the same millisecond: the last one made counts, and stays when it is deleted.
        registry.open(folder, Some("a"), 20, "codex", missing).unwrap();
        registry.open(folder, Some("b"), 20, "builtin", missing).unwrap();
        assert_eq!(registry.last_agent_in(folder), Some("builtin"));
        registry.remove("b");
        assert_eq!(registry.last_agent_in(folder), Some("builtin"));
    }

    #[test]
    fn a_deleted_session_is_not_made_anew_but_a_folders_default_one_is() {
        let mut registry = Registry::default();
        let folder = Path::new("/work/a");
        registry.open(folder, Some("named"), 1, "builtin", missing).unwrap();
        let (default, _) = registry.open(folder, None, 1, "builtin", missing).unwrap();
        let default = default.id.clone();
        registry.remove("named").unwrap();
        registry.remove(&default).unwrap();
        assert_eq!(
            registry.open(folder, Some("named"), 2, "builtin", missing).err(),
            Some(RegistryError::Deleted("named".into()))
        );
        assert!(registry.get("named").is_none(), "nothing was made");
        let (again, created) = registry.open(folder, None, 2, "builtin", missing).unwrap();
        assert!(created && again.id == default, "the folder's default comes back, empty");
    }

    fn registry_session(id: &str, folder: &Path) -> Session {
        Session {
            id: id.into(),
            folder: folder.into(),
            status: SessionStatus::Idle,
            pending_count: 0,
            yolo: YoloState::from_settings(missing()),
            title: None,
            agent: "builtin".into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            waiting_since_ms: None,
            worktree: None,
        }
    }

    #[test]
    fn default_ids_are_stable_and_distinct_per_folder() {
        let a = default_session_id(Path::new("/work/a"));
        assert_eq!(a, default_session_id(Path::new("/work/a")));
        assert_ne!(a, default_session_id(Path::new("/work/b")));
        assert!(valid_session_id(&a));
    }

    #[test]
    fn named_sessions_are_separate_and_id_lookup_finds_them() {
        let mut registry = Registry::default();
        let folder = Path::new("/work/a");
        registry.open(folder, None, 1, "builtin", missing).unwrap();
        let (named, created) = registry.open(folder, Some("feature-x"), 2, "builtin", yolo_on).unwrap();
        assert!(created && named.yolo.enabled);
        assert_eq!(registry.projects().projects[0].sessions.len(), 2);
        // The default session's id given back as sessionId is the same session.
        let default_id = default_session_id(folder);
        let (same, created) = registry.open(folder, Some(&default_id), 3, "builtin", missing).unwrap();
        assert!(!created);
        assert_eq!(same.id, default_id);
    }

    #[test]
    fn an_id_of_another_folder_or_a_malformed_id_is_refused() {
        let mut registry = Registry::default();
        registry.open(Path::new("/work/a"), Some("s1"), 1, "builtin", missing).unwrap();
        let err = registry.open(Path::new("/work/b"), Some("s1"), 2, "builtin", missing).unwrap_err();
        assert!(matches!(err, RegistryError::SessionOfOtherFolder { .. }));
        for bad in ["", "has space", "../x", &"x".repeat(65)] {
            assert!(matches!(
                registry.open(Path::new("/work/a"), Some(bad), 3, "builtin", missing),
                Err(RegistryError::InvalidSessionId(_))
            ));
        }
        assert_eq!(registry.projects().projects.len(), 1, "refusals create nothing");
    }

    #[test]
    fn a_prompt_titles_the_session_by_its_first_line() {
        let long = "é".repeat(PROMPT_TITLE_CHARS + 5);
        let cut = format!("{}…", "é".repeat(PROMPT_TITLE_CHARS));
        let rows: [(&str, Option<&str>); 6] = [
            ("Fix the login bug", Some("Fix the login bug")),
            ("  padded  \nsecond line", Some("padded")),
            ("\n\n  \nafter blank lines", Some("after blank lines")),
            ("   \n\t", None),
            (&long, Some(&cut)),
            ("exactly", Some("exactly")),
        ];
        for (prompt, expected) in rows {
            assert_eq!(title_from_prompt(prompt).as_deref(), expected, "prompt {prompt:?}");
        }
        let at_limit = "x".repeat(PROMPT_TITLE_CHARS);
        assert_eq!(title_from_prompt(&at_limit), Some(at_limit), "a line at the limit is not cut");
    }

    #[test]
    fn a_given_title_is_trimmed_and_bounded() {
        assert_eq!(checked_title("  Release notes "), Ok("Release notes".into()));
        assert_eq!(checked_title(" \t\n"), Err(TitleError::Blank));
        assert_eq!(checked_title(&"ü".repeat(TITLE_MAX_CHARS)).map(|t| t.chars().count()), Ok(TITLE_MAX_CHARS));
        assert_eq!(checked_title(&"ü".repeat(TITLE_MAX_CHARS + 1)), Err(TitleError::TooLong(TITLE_MAX_CHARS + 1)));
    }

    #[test]
    fn only_the_first_prompt_titles_and_a_chosen_title_stays() {
        let mut registry = Registry::default();
        let folder = Path::new("/work/a");
        registry.open(folder, Some("s"), 1, "builtin", missing).unwrap();
        assert_eq!(registry.note_prompt("s", "first\nmore").and_then(|s| s.title.clone()), Some("first".into()));
        assert!(registry.note_prompt("s", "second").is_none(), "the first prompt's title stays");
        assert_eq!(registry.rename("s", "Mine".into()).and_then(|s| s.title.clone()), Some("Mine".into()));
        assert!(registry.note_prompt("s", "third").is_none());
        assert_eq!(registry.projects().projects[0].sessions[0].title.as_deref(), Some("Mine"));
        assert!(registry.rename("nope", "x".into()).is_none());
        assert!(registry.note_prompt("nope", "x").is_none());
    }

    #[test]
    fn a_removed_default_session_comes_back_empty() {
        let mut registry = Registry::default();
        let folder = Path::new("/work/a");
        let id = registry.open(folder, None, 1, "builtin", yolo_on).unwrap().0.id.clone();
        registry.note_prompt(&id, "hello");
        assert_eq!(registry.remove(&id).map(|s| s.title), Some(Some("hello".into())));
        assert!(registry.get(&id).is_none() && registry.projects().projects.is_empty());
        assert!(registry.remove(&id).is_none());
        let (again, created) = registry.open(folder, None, 2, "builtin", missing).unwrap();
        assert!(created, "created anew");
        assert_eq!((again.id.as_str(), again.title.as_deref(), again.created_at_ms), (id.as_str(), None, 2));
    }

    #[test]
    fn locked_yolo_refuses_on_but_allows_off() {
        let mut yolo = YoloState::from_settings(locked());
        assert!(yolo.locked() && !yolo.enabled);
        assert_eq!(yolo.set_by_user(true), Err(YoloLocked));
        assert_eq!((yolo.enabled, yolo.source), (false, YoloSource::Settings), "refusal changes nothing");
        assert_eq!(yolo.set_by_user(false), Ok(()));
    }

    #[test]
    fn user_toggle_then_settings_change_rederives() {
        let mut yolo = YoloState::from_settings(missing());
        assert_eq!(yolo.source, YoloSource::Default);
        yolo.set_by_user(true).unwrap();
        assert_eq!((yolo.enabled, yolo.source), (true, YoloSource::User));
        assert!(yolo.rederive(locked()));
        assert_eq!((yolo.enabled, yolo.locked(), yolo.source), (false, true, YoloSource::Settings));
        assert!(!yolo.rederive(locked()), "same settings again is no change");
    }

    #[test]
    fn an_event_that_leaves_the_files_word_as_it_was_keeps_the_users_toggle() {
        let mut yolo = YoloState::from_settings(yolo_on());
        yolo.set_by_user(false).unwrap();
        assert!(!yolo.rederive(yolo_on()), "a touch of settings.json");
        assert_eq!((yolo.enabled, yolo.source), (false, YoloSource::User), "the user's off holds");
        assert!(yolo.rederive(missing()), "a new word replaces the toggle");
        assert_eq!((yolo.enabled, yolo.source), (false, YoloSource::Default));
    }

    #[test]
    fn projects_group_by_folder_sorted() {
        let mut registry = Registry::default();
        registry.open(Path::new("/work/b"), None, 1, "builtin", missing).unwrap();
        registry.open(Path::new("/work/a"), Some("old"), 1, "builtin", missing).unwrap();
        registry.open(Path::new("/work/a"), Some("new"), 5, "builtin", missing).unwrap();
        let projects = registry.projects().projects;
        let folders: Vec<_> = projects.iter().map(|p| p.folder_path.as_str()).collect();
        assert_eq!(folders, ["/work/a", "/work/b"]);
        let ids: Vec<_> = projects[0].sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["new", "old"]);
        assert_eq!(registry.sessions_in_mut(Path::new("/work/a")).count(), 2);
    }
}
