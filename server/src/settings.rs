//! Reads the per-folder YOLO default from `<folder>/.gemini/settings.json`,
//! whichever agent works in the folder (Gemini CLI's file, read by the hub for
//! every agent).
//!
//! `security.disableYoloMode` present and boolean → `yoloMode = !value`, and `true`
//! also locks YOLO off. Anything else (no file, unreadable, invalid JSON, key
//! missing or not a boolean) → YOLO off, unlocked. `note` says why, for the UI,
//! in words that fit any agent: it names the file as the hub's source, never
//! as if Gemini CLI were running.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub const SETTINGS_DIR: &str = ".gemini";
pub const SETTINGS_FILE: &str = "settings.json";

/// What the settings file says about YOLO for one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsDefault {
    pub yolo_mode: bool,
    pub locked: bool,
    /// True when the value came from `security.disableYoloMode` itself.
    pub from_settings: bool,
    /// Why the default is what it is, when that is not obvious.
    pub note: Option<String>,
    /// The file would turn YOLO on, and the folder is not trusted: it stays off.
    pub held_for_trust: bool,
}

impl SettingsDefault {
    /// YOLO starts off, for the reason given (a sentence that says the hub
    /// reads the file for every agent, as the agent may not be Gemini CLI).
    fn fallback(why: impl std::fmt::Display) -> Self {
        let note = format!("YOLO starts off: {why}.");
        Self { yolo_mode: false, locked: false, from_settings: false, note: Some(note), held_for_trust: false }
    }

    /// In a folder the user has not trusted, its settings may only tighten:
    /// `disableYoloMode: true` locks YOLO off at once, but a `false` that would
    /// turn YOLO on waits for the user's trust.
    pub fn under_trust(self, trusted: bool) -> Self {
        if trusted || !self.yolo_mode {
            return self;
        }
        let note = "Its .gemini/settings.json would turn YOLO on (security.disableYoloMode is false): that \
                    waits until you trust this folder."
            .to_string();
        Self { yolo_mode: false, locked: false, from_settings: false, note: Some(note), held_for_trust: true }
    }
}

pub fn settings_path(folder: &Path) -> PathBuf {
    folder.join(SETTINGS_DIR).join(SETTINGS_FILE)
}

/// Reads and interprets the folder's settings file; never fails.
/// The most of a settings file the hub reads (a repository may plant a link to
/// `/dev/zero` there).
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

pub fn read_settings(folder: &Path) -> SettingsDefault {
    interpret(crate::folder::read_planted(&settings_path(folder), MAX_SETTINGS_BYTES))
}

/// Interprets the outcome of reading the settings file.
pub fn interpret(read: io::Result<String>) -> SettingsDefault {
    match read {
        Ok(text) => parse_settings(&text),
        Err(err) if err.kind() == io::ErrorKind::NotFound => SettingsDefault::fallback(
            "no .gemini/settings.json in this folder (the hub reads security.disableYoloMode from it for every \
                 agent)",
        ),
        Err(err) => SettingsDefault::fallback(format!(
            ".gemini/settings.json, where the hub reads security.disableYoloMode for every agent, could not be \
             read: {err}"
        )),
    }
}

/// Interprets the text of a settings file.
pub fn parse_settings(text: &str) -> SettingsDefault {
    let json: Value = match serde_json::from_str(text) {
        Ok(json) => json,
        Err(err) => {
            return SettingsDefault::fallback(format!(
                ".gemini/settings.json, where the hub reads security.disableYoloMode for every agent, is not \
                 valid JSON: {err}"
            ))
        }
    };
    match json.get("security").and_then(|security| security.get("disableYoloMode")) {
        Some(Value::Bool(disabled)) => SettingsDefault {
            yolo_mode: !disabled,
            locked: *disabled,
            from_settings: true,
            held_for_trust: false,
            note: disabled.then(|| {
                "YOLO is locked off by security.disableYoloMode in .gemini/settings.json (the hub reads it for \
                 every agent)."
                    .to_string()
            }),
        },
        Some(other) => SettingsDefault::fallback(format!(
            "security.disableYoloMode in .gemini/settings.json (read by the hub for every agent) is {other}, not \
             true or false"
        )),
        None => SettingsDefault::fallback(
            ".gemini/settings.json does not set security.disableYoloMode (the hub reads it for every agent)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yolo_locked_source(d: &SettingsDefault) -> (bool, bool, bool) {
        (d.yolo_mode, d.locked, d.from_settings)
    }

    /// Issue 39, item 7: `.gemini/settings.json -> /dev/zero` in a cloned
    /// repository was read without bound (out of memory); a FIFO held the read.
    #[test]
    fn a_planted_device_fifo_or_huge_settings_file_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let gemini = dir.path().join(".gemini");
        std::fs::create_dir(&gemini).unwrap();
        std::os::unix::fs::symlink("/dev/zero", gemini.join("settings.json")).unwrap();
        let device = read_settings(dir.path());
        assert_eq!(yolo_locked_source(&device), (false, false, false));
        assert!(device.note.unwrap().contains("not a regular file"));
        std::fs::remove_file(gemini.join("settings.json")).unwrap();
        let fifo = gemini.join("settings.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(read_settings(dir.path()).note.unwrap().contains("not a regular file"), "returned, not blocked");
        std::fs::remove_file(&fifo).unwrap();
        let huge = format!("{{\"security\":{{\"disableYoloMode\":false}},\"pad\":\"{}\"}}", "x".repeat(2 << 20));
        std::fs::write(&fifo, huge).unwrap();
        let large = read_settings(dir.path());
        assert!(!large.yolo_mode && large.note.unwrap().contains("larger than"));
    }

    #[test]
    fn disable_true_means_off_and_locked() {
        let d = parse_settings(r#"{"security":{"disableYoloMode":true}}"#);
        assert_eq!(yolo_locked_source(&d), (false, true, true));
        assert!(d.note.unwrap().contains("locked"));
    }

    #[test]
    fn disable_false_means_on_and_unlocked() {
        let d = parse_settings(r#"{"security":{"disableYoloMode":false},"other":1}"#);
        assert_eq!(yolo_locked_source(&d), (true, false, true));
        assert_eq!(d.note, None);
    }

    #[test]
    fn missing_key_or_section_is_off() {
        for text in [r#"{}"#, r#"{"security":{}}"#, r#"{"security":null}"#, r#"{"disableYoloMode":false}"#] {
            assert_eq!(yolo_locked_source(&parse_settings(text)), (false, false, false), "{text}");
        }
    }

    #[test]
    fn non_boolean_values_are_off() {
        for value in ["\"true\"", "\"false\"", "0", "1", "null", "[]", "{}"] {
            let text = format!(r#"{{"security":{{"disableYoloMode":{value}}}}}"#);
            let d = parse_settings(&text);
            assert_eq!(yolo_locked_source(&d), (false, false, false), "{text}");
            assert!(d.note.unwrap().contains("not true or false"));
        }
    }

    #[test]
    fn invalid_json_or_non_object_is_off() {
        for text in ["", "{", "{\"security\":", "not json", "[1,2]", "true", "\"s\""] {
            assert_eq!(yolo_locked_source(&parse_settings(text)), (false, false, false), "{text:?}");
        }
        assert!(parse_settings("{").note.unwrap().contains("not valid JSON"));
    }

    /// The notes fit any agent: they say the hub reads the file, not that Gemini CLI runs.
    #[test]
    fn every_note_says_the_hub_reads_the_file_for_every_agent() {
        let missing = interpret(Err(io::Error::from(io::ErrorKind::NotFound)));
        assert_eq!(
            missing.note.as_deref(),
            Some(
                "YOLO starts off: no .gemini/settings.json in this folder (the hub reads security.disableYoloMode \
                 from it for every agent)."
            )
        );
        let notes = [
            missing,
            interpret(Err(io::Error::from(io::ErrorKind::PermissionDenied))),
            parse_settings("{"),
            parse_settings("{}"),
            parse_settings(r#"{"security":{"disableYoloMode":"yes"}}"#),
            parse_settings(r#"{"security":{"disableYoloMode":true}}"#),
        ];
        for default in notes {
            let note = default.note.unwrap();
            assert!(note.contains("for every agent"), "{note}");
            assert!(
                note.starts_with(if default.locked { "YOLO is locked off" } else { "YOLO starts off: " }),
                "{note}"
            );
        }
    }

    #[test]
    fn missing_or_unreadable_file_is_off() {
        let missing = interpret(Err(io::Error::from(io::ErrorKind::NotFound)));
        assert_eq!(yolo_locked_source(&missing), (false, false, false));
        let denied = interpret(Err(io::Error::from(io::ErrorKind::PermissionDenied)));
        assert_eq!(yolo_locked_source(&denied), (false, false, false));
        assert!(denied.note.unwrap().contains("could not be read"));
    }

    #[test]
    fn reads_the_file_from_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!read_settings(dir.path()).yolo_mode);
        std::fs::create_dir(dir.path().join(SETTINGS_DIR)).unwrap();
        std::fs::write(settings_path(dir.path()), r#"{"security":{"disableYoloMode":false}}"#).unwrap();
        assert_eq!(yolo_locked_source(&read_settings(dir.path())), (true, false, true));
        // A directory where the file should be is "unreadable", not a crash.
        std::fs::remove_file(settings_path(dir.path())).unwrap();
        std::fs::create_dir(settings_path(dir.path())).unwrap();
        assert_eq!(yolo_locked_source(&read_settings(dir.path())), (false, false, false));
    }
}
