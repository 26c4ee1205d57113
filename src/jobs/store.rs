//! `~/.gg/scheduler/`: `jobs.json` (the job list, replaced atomically) and `runs.jsonl` (the run
//! log, append-only), both guarded by an exclusive lock on `jobs.lock` so the CLI and the daemon
//! can edit them at the same time without losing an update. Directory 0700, files 0600.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{Job, RunRecord};

/// The scheduler's files.
#[derive(Debug, Clone)]
pub struct JobStore {
    dir: PathBuf,
}

/// Held while the store is edited; the lock dies with the file handle.
struct StoreLock {
    _file: File,
}

impl JobStore {
    /// `<home>/.gg/scheduler`.
    pub fn default_dir(home: &Path) -> PathBuf {
        crate::app::config::gg_home(home).join("scheduler")
    }

    /// Opens (creating) the store directory, forcing it to 0700.
    pub fn open(dir: &Path) -> Result<JobStore, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if let Some(parent) = dir.parent() {
            // `~/.gg` holds credentials; keep it private too when we are the ones creating it.
            if parent.file_name().is_some_and(|n| n == ".gg") {
                let _ = std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700));
            }
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(JobStore {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn jobs_path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    pub fn runs_path(&self) -> PathBuf {
        self.dir.join("runs.jsonl")
    }

    fn lock(&self) -> Result<StoreLock, String> {
        let path = self.dir.join("jobs.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.lock()
            .map_err(|e| format!("lock {}: {e}", path.display()))?;
        Ok(StoreLock { _file: file })
    }

    /// The jobs, as last committed. Readers need no lock: the file is only ever replaced whole.
    pub fn jobs(&self) -> Result<Vec<Job>, String> {
        let path = self.jobs_path();
        match std::fs::read(&path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Vec::new()),
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("failed to parse {}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Reads, edits and writes back the job list under the lock. `edit` returning an error
    /// leaves the file untouched.
    pub fn update<T>(
        &self,
        edit: impl FnOnce(&mut Vec<Job>) -> Result<T, String>,
    ) -> Result<T, String> {
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        let before = jobs.clone();
        let result = edit(&mut jobs)?;
        if jobs != before {
            self.write_jobs(&jobs)?;
        }
        Ok(result)
    }

    /// Temp file (0600, fsync) then rename, then fsync of the directory: a reader sees the old
    /// list or the new one, never half of either, and a crash keeps one of them.
    fn write_jobs(&self, jobs: &[Job]) -> Result<(), String> {
        let path = self.jobs_path();
        let tmp = self.dir.join(format!(
            ".jobs-{}-{:016x}.json",
            std::process::id(),
            fastrand::u64(..)
        ));
        let mut bytes = serde_json::to_vec_pretty(jobs).map_err(|e| format!("encode jobs: {e}"))?;
        bytes.push(b'\n');
        let written = (|| -> std::io::Result<()> {
            let mut file = OpenOptions::new()
                .create_new(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            File::open(&self.dir)?.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("{}: {e}", path.display()));
        }
        Ok(())
    }

    /// Appends one run record (one line, fsynced) under the lock.
    pub fn append_run(&self, record: &RunRecord) -> Result<(), String> {
        let _lock = self.lock()?;
        self.append_run_locked(record)
    }

    fn append_run_locked(&self, record: &RunRecord) -> Result<(), String> {
        let path = self.runs_path();
        let mut line = serde_json::to_vec(record).map_err(|e| format!("encode run: {e}"))?;
        line.push(b'\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every run, latest state per id, in the order the runs started. A torn final line (a crash
    /// while appending) is ignored; a bad line anywhere else is an error.
    pub fn runs(&self) -> Result<Vec<RunRecord>, String> {
        let path = self.runs_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut order: Vec<RunRecord> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (n, line) in lines.iter().enumerate() {
            let record: RunRecord = match serde_json::from_str(line) {
                Ok(record) => record,
                Err(_) if n + 1 == lines.len() && !text.ends_with('\n') => break,
                Err(e) => {
                    return Err(format!(
                        "failed to parse {} line {}: {e}",
                        path.display(),
                        n + 1
                    ));
                }
            };
            match index.get(&record.id) {
                Some(&i) => order[i] = record,
                None => {
                    index.insert(record.id.clone(), order.len());
                    order.push(record);
                }
            }
        }
        Ok(order)
    }

    /// Marks every run still `running` as `interrupted` (after a crash nothing can be running:
    /// only one scheduler runs, under the daemon's instance lock). Returns how many.
    pub fn mark_interrupted(&self, now: jiff::Timestamp) -> Result<usize, String> {
        let _lock = self.lock()?;
        let dangling: Vec<RunRecord> = self
            .runs()?
            .into_iter()
            .filter(|r| r.status == super::RunStatus::Running)
            .collect();
        for mut record in dangling.iter().cloned() {
            record.status = super::RunStatus::Interrupted;
            record.finished_at = Some(now);
            if record.summary.is_empty() {
                record.summary =
                    "interrupted: the process running this job stopped before it finished"
                        .to_string();
            }
            self.append_run_locked(&record)?;
        }
        Ok(dangling.len())
    }
}
