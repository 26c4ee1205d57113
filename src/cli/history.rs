//! The interactive prompt's history, kept per user in `~/.gg/history` (mode 0600): one entry
//! per line, a multi-line prompt with its newlines escaped. A line that looks like it holds a
//! secret is never written (it stays recallable in memory for the rest of the session only).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Entries loaded at start: enough to reach back weeks, small enough to read at once.
const KEPT_ENTRIES: usize = 1000;

/// A word at least this long, of letters and digits mixed (`-`/`_` allowed), is taken for a
/// token even without a name before it: keys are long, words and paths rarely look like that.
const TOKEN_MIN: usize = 32;

/// Prefixes of well-known credential formats (OpenAI, GitHub, Slack, AWS, GitLab, Stripe…).
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "pk_live_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "AKIA",
    "ASIA",
    "AIza",
];

/// `~/.gg/history`.
pub fn path(home: &Path) -> PathBuf {
    crate::app::config::gg_home(home).join("history")
}

/// Whether `line` looks like it holds a credential: a `name=value` or `--name value` the
/// process-list redaction would hide, a URL with a password, a known token prefix followed by
/// a token, or a long random-looking word.
pub fn looks_secret(line: &str) -> bool {
    let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    if tools::computer::redact::command_line(&words).contains(tools::computer::redact::REDACTED) {
        return true;
    }
    words.iter().any(|word| {
        let word = word.trim_matches(|c: char| "\"'`,;()[]{}<>".contains(c));
        let prefixed = TOKEN_PREFIXES.iter().any(|prefix| {
            word.strip_prefix(prefix)
                .is_some_and(|rest| rest.len() >= 12 && rest.chars().all(token_char))
        });
        prefixed || random_looking(word)
    })
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn random_looking(word: &str) -> bool {
    word.len() >= TOKEN_MIN
        && word.chars().all(token_char)
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && word.chars().any(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        // A long snake_case or kebab-case identifier is a name, not a key.
        && word.split(['-', '_']).all(|part| part.len() >= 8 || part.is_empty())
}

/// One entry as a line of the file: `\` and newlines escaped.
fn encode(entry: &str) -> String {
    let mut out = String::with_capacity(entry.len());
    for c in entry.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn decode(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The last [`KEPT_ENTRIES`] entries of the file, oldest first; none when it does not exist.
/// A file readable by others is made 0600 first.
pub fn load(file: &Path) -> Result<Vec<String>, String> {
    let text = match std::fs::read(file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    restrict(file)?;
    let entries: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(decode).collect();
    let skip = entries.len().saturating_sub(KEPT_ENTRIES);
    Ok(entries.into_iter().skip(skip).collect())
}

fn restrict(file: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(())
}

/// Appends `entry` unless it looks like a secret. Returns whether it was written.
pub fn append(file: &Path, entry: &str) -> Result<bool, String> {
    if entry.trim().is_empty() || looks_secret(entry) {
        return Ok(false);
    }
    if let Some(dir) = file.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(file)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    // One write per entry: two gg sessions appending at once never interleave inside a line.
    out.write_all(format!("{}\n", encode(entry)).as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised() {
        for line in [
            "use the key sk-proj-abcdefghijklmnop1234",
            "export OPENAI_API_KEY=abc123",
            "password=hunter2",
            "curl -H x --token abcdef https://x",
            "clone https://user:pw@example.com/repo",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "the token is 9fQ2xL7mK3pR8sT1vW4yZ6bN0cD5eF2gH",
        ] {
            assert!(looks_secret(line), "{line}");
        }
    }

    #[test]
    fn ordinary_prompts_are_not_secrets() {
        for line in [
            "fix the failing test in src/cli/run.rs",
            "what does sk- mean in a key?",
            "rename very_long_function_name_with_many_words_in_it",
            "explain 0123456789 and the key idea",
            "/approval never",
        ] {
            assert!(!looks_secret(line), "{line}");
        }
    }

    #[test]
    fn entries_round_trip_through_the_file_with_0600_and_no_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".gg/history");
        assert!(append(&file, "first\nsecond line \\ done").unwrap());
        assert!(!append(&file, "my key is sk-abcdefghijklmnopqrstu").unwrap());
        assert!(append(&file, "plain").unwrap());
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            load(&file).unwrap(),
            ["first\nsecond line \\ done", "plain"]
        );
    }

    #[test]
    fn a_history_readable_by_others_is_restricted_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history");
        std::fs::write(&file, "old\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(load(&file).unwrap(), ["old"]);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
