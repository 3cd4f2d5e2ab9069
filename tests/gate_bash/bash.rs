//! Runs lines under real bash in a throwaway directory, with logging stub
//! programs first on PATH; returns what each stub recorded.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::lines::{DIRS, Run, STUBS, WRAPPERS};

/// The throwaway world: `root` (the lines' starting directory, holding
/// [`DIRS`]), `bin` (the stubs) and `logs`.
pub struct World {
    _tmp: tempfile::TempDir,
    /// Where every line starts.
    pub root: PathBuf,
    bin: PathBuf,
    logs: PathBuf,
}

// The record is written under a temporary name and renamed by `/bin/mv`
// (not `mv`: that is one of the stubs, first on PATH).
const LOG: &str = r#"d="$STUB_LOG"; f="$d/r.$$"; n=0
while [ -e "$f.$n" ]; do n=$((n+1)); done
printf '%s\000' "${0##*/}" "$PWD" "$#" "$@" > "$d/tmp.$$.$n" && /bin/mv "$d/tmp.$$.$n" "$f.$n"
"#;

impl World {
    /// Creates the directories and stubs.
    pub fn new() -> World {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical tempdir");
        let root = base.join("root");
        let bin = base.join("bin");
        let logs = base.join("logs");
        for d in DIRS {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::create_dir_all(&bin).expect("mkdir bin");
        std::fs::create_dir_all(&logs).expect("mkdir logs");
        let write = |name: &str, body: String| {
            let p = bin.join(name);
            std::fs::write(&p, body).expect("write stub");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        };
        for s in STUBS {
            write(
                s,
                format!(
                    "#!/bin/sh\n{LOG}for a in \"$@\"; do [ \"$a\" = \"--fail\" ] && exit 1; done\nexit 0\n"
                ),
            );
        }
        for (s, real) in WRAPPERS {
            write(s, format!("#!/bin/sh\n{LOG}exec {real} \"$@\"\n"));
        }
        World {
            _tmp: tmp,
            root,
            bin,
            logs,
        }
    }

    /// Runs `line` with `bash -c` from the root; returns the stubs' records,
    /// sorted, and bash's exit status.
    pub fn run(&self, id: usize, line: &str) -> (Vec<Run>, Option<i32>, String) {
        let logs = self.logs.join(id.to_string());
        std::fs::create_dir_all(&logs).expect("mkdir log");
        let mut child = Command::new("/usr/bin/bash")
            .arg("-c")
            .arg(line)
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("STUB_LOG", &logs)
            .env("HOME", self.root.join("a"))
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bash");
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s.code();
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut stderr);
        }
        let mut runs = Vec::new();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&logs)
            .expect("read logs")
            .map(|e| e.expect("entry").path())
            // a record is written under a temporary name and renamed when
            // whole: one still being written (a stub bash left running in
            // the background) is not read half-written
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("r."))
            })
            .collect();
        entries.sort();
        for p in entries {
            let bytes = std::fs::read(&p).expect("read record");
            runs.push(self.parse(&bytes));
        }
        let _ = std::fs::remove_dir_all(&logs);
        runs.sort();
        (runs, status, stderr)
    }

    fn parse(&self, bytes: &[u8]) -> Run {
        let mut parts: Vec<String> = bytes
            .split(|b| *b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        parts.pop(); // after the last NUL
        let prog = parts[0].clone();
        let cwd = relative(&self.root, Path::new(&parts[1]));
        let argc: usize = parts[2].parse().expect("argc");
        let argv = parts[3..].to_vec();
        assert_eq!(argv.len(), argc, "record of {prog}");
        Run { prog, argv, cwd }
    }
}

fn relative(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(r) if r.as_os_str().is_empty() => ".".into(),
        Ok(r) => r.display().to_string(),
        Err(_) => format!("OUTSIDE:{}", p.display()),
    }
}
