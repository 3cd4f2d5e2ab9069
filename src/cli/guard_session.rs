//! `toolgate guard --session ID`: the session's data-flow history
//! (`[gate.flow]`, [`toolgate::gate::flow::FlowHistory`]) kept in a state
//! file between calls, so a sequence of `guard` runs is judged as the proxy
//! judges the same calls in one MCP session.
//!
//! The file is JSON: `{"version": 1, "session": ID, "flow": {"calls": N,
//! "last": [{"label", "call", "at", "tool", "why"}, ...]}}` (`at` in seconds
//! since the Unix epoch; one entry per label: the last call that carried
//! it). It is written whole to a temporary file beside it and renamed, so a
//! reader never sees half a file. Where it lives: `--state FILE`, else
//! `$TOOLGATE_STATE_DIR/ID.json` (a folder that must exist, as every
//! folder you name), else `$XDG_STATE_HOME/toolgate/sessions/ID.json`
//! (`~/.local/state` when `XDG_STATE_HOME` is not set; created when
//! missing).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toolgate::gate::flow::FlowHistory;

/// Version of the state file's format.
const VERSION: u32 = 1;

/// Largest state file read, in bytes (a history is a few hundred bytes).
const MAX_STATE_BYTES: u64 = 1 << 20;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    version: u32,
    session: String,
    flow: FlowHistory,
}

/// One session's state file.
#[derive(Debug, Clone)]
pub struct SessionState {
    /// The session id.
    pub session: String,
    /// Where the file is.
    pub path: PathBuf,
}

impl SessionState {
    /// The state file of `session` (none without a session): `state` when
    /// given, else the default places (see the module). A session id used
    /// in a file name must be 1 to 128 characters of `A-Z a-z 0-9 . _ -`,
    /// not starting with `.`.
    pub fn locate(
        session: Option<&str>,
        state: Option<PathBuf>,
    ) -> Result<Option<SessionState>, super::Fail> {
        let Some(id) = session else {
            return Ok(None);
        };
        if let Some(path) = state {
            super::paths::existing_folder("--state", &path).map_err(super::Fail::Input)?;
            return Ok(Some(SessionState {
                session: id.to_string(),
                path,
            }));
        }
        let ok = !id.is_empty()
            && id.len() <= 128
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !ok {
            return Err(super::Fail::Input(format!(
                "--session {:?} cannot name a state file (use 1 to 128 of A-Z a-z 0-9 . _ -, or give --state FILE)",
                toolgate::diag::echo(id)
            )));
        }
        let dir = match std::env::var_os("TOOLGATE_STATE_DIR") {
            // A folder you name must exist (README, "A file you name for
            // output"); only the default home below is created.
            Some(d) if !d.is_empty() => {
                let d = PathBuf::from(d);
                if d.exists() && !d.is_dir() {
                    return Err(super::Fail::Input(format!(
                        "TOOLGATE_STATE_DIR={}: this names a file, not a folder; TOOLGATE_STATE_DIR names the folder that holds the session state files (ID.json): point it at a folder, or unset it for the default $XDG_STATE_HOME/toolgate/sessions, or give --state FILE",
                        toolgate::diag::echo(&d.display().to_string())
                    )));
                }
                if !d.is_dir() {
                    return Err(super::Fail::Input(format!(
                        "TOOLGATE_STATE_DIR={}: the folder does not exist; create it first (mkdir -p {}), or unset TOOLGATE_STATE_DIR for the default $XDG_STATE_HOME/toolgate/sessions, or give --state FILE (toolgate creates no folder you name)",
                        d.display(),
                        d.display()
                    )));
                }
                d
            }
            _ => {
                let base = match std::env::var_os("XDG_STATE_HOME") {
                    Some(d) if !d.is_empty() => PathBuf::from(d),
                    _ => match std::env::var_os("HOME") {
                        Some(h) if !h.is_empty() => PathBuf::from(h).join(".local/state"),
                        _ => {
                            return Err(super::Fail::Input(
                                "no place for the session's state file: set HOME, XDG_STATE_HOME or TOOLGATE_STATE_DIR, or give --state FILE".into(),
                            ));
                        }
                    },
                };
                base.join("toolgate").join("sessions")
            }
        };
        Ok(Some(SessionState {
            session: id.to_string(),
            path: dir.join(format!("{id}.json")),
        }))
    }

    /// The history in the file (empty when the file does not exist). A file
    /// that is not a state file of this session is an error naming it.
    pub fn load(&self) -> Result<FlowHistory, String> {
        let shown = self.path.display();
        let text =
            match toolgate::datafile::read_data_file(&self.path, MAX_STATE_BYTES).and_then(|b| {
                toolgate::datafile::decode_text(b)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            }) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FlowHistory::new()),
                Err(e) => return Err(format!("cannot read the session state {shown}: {e}")),
            };
        let s: StateFile = serde_json::from_str(&text)
            .map_err(|e| format!("{shown}: not a toolgate session state file: {e}"))?;
        if s.version != VERSION {
            return Err(format!(
                "{shown}: session state version {} (this toolgate reads {VERSION})",
                s.version
            ));
        }
        if s.session != self.session {
            return Err(format!(
                "{shown}: the state of session {:?}, not {:?}",
                toolgate::diag::echo(&s.session),
                toolgate::diag::echo(&self.session)
            ));
        }
        Ok(s.flow)
    }

    /// Writes `history`. The default folder is created when missing; the
    /// folder of a `--state FILE` and `$TOOLGATE_STATE_DIR` were checked to
    /// exist by [`Self::locate`] (`cli::paths`).
    pub fn save(&self, history: &FlowHistory) -> Result<(), String> {
        let shown = self.path.display();
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(&StateFile {
            version: VERSION,
            session: self.session.clone(),
            flow: history.clone(),
        })
        .map_err(|e| format!("{shown}: {e}"))?;
        let tmp = self
            .path
            .with_extension(format!("json.tmp{}", std::process::id()));
        std::fs::write(&tmp, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {shown}: {e}")
        })
    }
}
