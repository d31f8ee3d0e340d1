//! Sessions by id, each bound to one canonical folder. Plain data, no IO: the
//! caller supplies the settings read and the clock, so every rule here is
//! unit-testable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use app::types::{ChatConfig, ProjectSummary, ProjectsResponse, SessionStatus, SessionSummary, YoloSource};
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
    /// toggle. Returns whether anything the user sees changed.
    pub fn rederive(&mut self, settings: SettingsDefault) -> bool {
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
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

impl Session {
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
        }
    }

    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            id: self.id.clone(),
            status: self.status,
            pending_count: self.pending_count,
            yolo_mode: self.yolo.enabled,
            updated_at: self.updated_at_ms,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    InvalidSessionId(String),
    /// The id is taken by a session of another folder.
    SessionOfOtherFolder {
        id: String,
        folder: PathBuf,
    },
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidSessionId(id) => {
                write!(f, "sessionId '{id}' is not valid: use 1 to 64 letters, digits, '.', '_' or '-'.")
            }
            Self::SessionOfOtherFolder { id, folder } => {
                write!(f, "Session '{id}' belongs to another folder ({}).", folder.display())
            }
        }
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
}

impl Registry {
    /// Finds the session for (`folder`, `session_id`) or creates it, calling
    /// `read_settings` only on creation. `folder` must already be canonical.
    /// Returns the session and whether it was created.
    pub fn open(
        &mut self,
        folder: &Path,
        session_id: Option<&str>,
        now_ms: u64,
        read_settings: impl FnOnce() -> SettingsDefault,
    ) -> Result<(&mut Session, bool), RegistryError> {
        let id = match session_id {
            Some(id) if !valid_session_id(id) => return Err(RegistryError::InvalidSessionId(id.to_string())),
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
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        });
        if session.folder != folder {
            return Err(RegistryError::SessionOfOtherFolder { id: session.id.clone(), folder: session.folder.clone() });
        }
        Ok((session, created))
    }

    /// Puts back a session loaded from the store.
    pub fn restore(&mut self, session: Session) {
        self.sessions.insert(session.id.clone(), session);
    }

    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
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
        let (session, created) = registry.open(folder, None, 10, yolo_on).unwrap();
        assert!(created);
        assert_eq!((session.yolo.enabled, session.yolo.source), (true, YoloSource::Settings));
        assert_eq!(session.id, default_session_id(folder));
        let (again, created) = registry.open(folder, None, 20, || panic!("settings must not be re-read")).unwrap();
        assert!(!created);
        assert_eq!(again.created_at_ms, 10);
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
        registry.open(folder, None, 1, missing).unwrap();
        let (named, created) = registry.open(folder, Some("feature-x"), 2, yolo_on).unwrap();
        assert!(created && named.yolo.enabled);
        assert_eq!(registry.projects().projects[0].sessions.len(), 2);
        // The default session's id given back as sessionId is the same session.
        let default_id = default_session_id(folder);
        let (same, created) = registry.open(folder, Some(&default_id), 3, missing).unwrap();
        assert!(!created);
        assert_eq!(same.id, default_id);
    }

    #[test]
    fn an_id_of_another_folder_or_a_malformed_id_is_refused() {
        let mut registry = Registry::default();
        registry.open(Path::new("/work/a"), Some("s1"), 1, missing).unwrap();
        let err = registry.open(Path::new("/work/b"), Some("s1"), 2, missing).unwrap_err();
        assert!(matches!(err, RegistryError::SessionOfOtherFolder { .. }));
        for bad in ["", "has space", "../x", &"x".repeat(65)] {
            assert!(matches!(
                registry.open(Path::new("/work/a"), Some(bad), 3, missing),
                Err(RegistryError::InvalidSessionId(_))
            ));
        }
        assert_eq!(registry.projects().projects.len(), 1, "refusals create nothing");
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
    fn projects_group_by_folder_sorted() {
        let mut registry = Registry::default();
        registry.open(Path::new("/work/b"), None, 1, missing).unwrap();
        registry.open(Path::new("/work/a"), Some("old"), 1, missing).unwrap();
        registry.open(Path::new("/work/a"), Some("new"), 5, missing).unwrap();
        let projects = registry.projects().projects;
        let folders: Vec<_> = projects.iter().map(|p| p.folder_path.as_str()).collect();
        assert_eq!(folders, ["/work/a", "/work/b"]);
        let ids: Vec<_> = projects[0].sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["new", "old"]);
        assert_eq!(registry.sessions_in_mut(Path::new("/work/a")).count(), 2);
    }
}
