//! What gg reads of a process's `/proc/<pid>/stat`: one parser for the computer tool (its process
//! list, the ancestors it refuses to signal, the identity a kill re-checks) and for the browser's
//! shutdown (the processes descending from Chromium). Both need a process's parent and its start
//! time: a pid names the same process only while its start time is the same.

/// The fields of `/proc/<pid>/stat` gg uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The command name (in parentheses in the file; it may itself hold spaces and parentheses).
    pub name: String,
    /// A zombie (`Z`) or dead (`X`) process: it holds nothing any more.
    pub dead: bool,
    pub ppid: u32,
    /// Its process group.
    pub pgrp: u32,
    /// When it started, in clock ticks after boot.
    pub start_ticks: u64,
}

impl ProcStat {
    /// The process `pid`, or `None` when it is gone (or its line cannot be read).
    pub fn read(pid: u32) -> Option<ProcStat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let name = text.get(open + 1..close)?.to_string();
        // After the name: state(0) ppid(1) pgrp(2) … starttime (field 22 of the line, index 19).
        let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        Some(ProcStat {
            name,
            dead: matches!(*fields.first()?, "Z" | "X"),
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start_ticks: fields.get(19)?.parse().ok()?,
        })
    }

    /// Every process that is not a zombie, with its pid.
    pub fn live() -> Vec<(u32, ProcStat)> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|pid| Some((pid, ProcStat::read(pid)?)))
            .filter(|(_, s)| !s.dead)
            .collect()
    }
}
