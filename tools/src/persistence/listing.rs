//! Listing a directory a command may have made unlistable. As any user but root, `chmod 311`
//! (write and search, no read) on `.git/hooks`, `.git` or a subdirectory made `read_dir` fail,
//! and the sweep took the failure for an empty directory: the hooks, `config.worktree`,
//! `AGENTS.md` and `.envrc` planted there stayed, while git (which opens hooks and config by
//! name, needing only search permission) ran them. The sweep runs as the same user as the
//! command, so it gives the owner back read, write and search on such a directory and lists it
//! again (write, so that what is planted there can be moved out); what still cannot be listed
//! (another owner's directory, a path longer than `PATH_MAX`) is said, never taken for empty.

use std::cell::RefCell;
use std::path::Path;

thread_local! {
    /// What was done or could not be done while listing, for the sweep's lines: the look and
    /// the sweep each run on one thread without yielding, and each takes what it left.
    static NOTES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// `std::fs::read_dir`, failing closed: a directory whose owner's read permission was taken
/// away gets it back (and a line says so); any other failure but an absent path or a non-
/// directory is said too.
pub(super) fn read_dir(dir: &Path) -> std::io::Result<std::fs::ReadDir> {
    use std::io::ErrorKind;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let first = match std::fs::read_dir(dir) {
        Ok(entries) => return Ok(entries),
        Err(e) => e,
    };
    let absent = matches!(first.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory);
    if absent {
        return Err(first);
    }
    // Only a directory itself (never through a link, which could name one outside the
    // project) and only one of this user's: what the command could have done to it.
    let restorable = first.kind() == ErrorKind::PermissionDenied
        && std::fs::symlink_metadata(dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw());
    if restorable && let Ok(meta) = std::fs::symlink_metadata(dir) {
        let mode = meta.permissions().mode() & 0o7777;
        let restored = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700));
        if restored.is_ok()
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            note(format!(
                "[gg: {} could not be listed (mode {mode:o}), which hid what is in it from this \
                 check; its owner's permissions were restored (u+rwx) and it was looked in]",
                shortened(dir)
            ));
            return Ok(entries);
        }
    }
    note(format!(
        "[gg: {} could not be listed ({first}), so what a command left in it was not looked \
         at: look at it before running git, an agent or an editor there]",
        shortened(dir)
    ));
    Err(first)
}

/// `dir` as a line shows it: a path past `PATH_MAX` (the one way to make some directories
/// unlistable) would fill the model's context, so its middle is left out.
fn shortened(dir: &Path) -> String {
    const KEEP: usize = 120;
    let shown = dir.display().to_string();
    if shown.len() <= 2 * KEEP {
        return shown;
    }
    let head_end = (0..=KEEP)
        .rev()
        .find(|i| shown.is_char_boundary(*i))
        .unwrap_or(0);
    let tail_start = (shown.len() - KEEP..shown.len())
        .find(|i| shown.is_char_boundary(*i))
        .unwrap_or(shown.len());
    format!(
        "{}…({} bytes)…{}",
        &shown[..head_end],
        shown.len(),
        &shown[tail_start..]
    )
}

fn note(line: String) {
    NOTES.with(|notes| {
        let mut notes = notes.borrow_mut();
        if !notes.contains(&line) {
            notes.push(line);
        }
    });
}

/// The lines noted since the last call.
pub(super) fn take_notes() -> Vec<String> {
    NOTES.with(|notes| std::mem::take(&mut *notes.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path past `PATH_MAX` is said with its two ends and its length; a short one whole.
    #[test]
    fn a_long_path_is_shortened_in_the_line() {
        let long = Path::new("/p").join("é/".repeat(2100));
        let shown = shortened(&long);
        assert!(shown.len() < 300, "{shown}");
        assert!(
            shown.starts_with("/p/é/") && shown.contains("bytes)…"),
            "{shown}"
        );
        assert_eq!(shortened(Path::new("/p/sub")), "/p/sub");
    }
}
