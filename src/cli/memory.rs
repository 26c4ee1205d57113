//! `gg memory list|show|search|add|rm|edit` and `gg init`: the person's side of memory and the
//! user profile. Everything the agent stored can be seen, searched, removed and edited here;
//! entries that read as instructions to the agent are shown marked, with the rule that marked
//! them.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;

use crate::agent::tools::memory::{added_line, hit_line};
use crate::app::config::Config;
use crate::display::visible_inline;
use tools::memory::{Entry, Layer, Scope, Store, profile};

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Every entry, with its id and any mark, workspace first.
    List {
        /// One JSON object per entry.
        #[arg(long)]
        json: bool,
    },
    /// What the next session's prompt gets: curated memory, or today's log with `daily`.
    Show {
        #[arg(value_parser = ["daily"])]
        which: Option<String>,
    },
    /// Keyword search: `[layer] path:line: text`, at most 10 hits.
    Search {
        #[arg(required = true, value_name = "QUERY")]
        query: Vec<String>,
    },
    /// Add an entry.
    Add {
        /// general (MEMORY.md), daily, person:<name> or group:<name>.
        #[arg(long, default_value = "general")]
        scope: String,
        /// workspace (this project's .gg/memory) or global (~/.gg/memory).
        #[arg(long, default_value = "workspace")]
        target: String,
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Remove entries by id (or a unique prefix of at least 4 characters; see `list`).
    Rm {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Open a memory file in $VISUAL / $EDITOR (else vi); written back atomically.
    Edit {
        /// general (MEMORY.md), daily, person:<name> or group:<name>.
        #[arg(long, default_value = "general")]
        scope: String,
        /// workspace or global.
        #[arg(long, default_value = "workspace")]
        target: String,
    },
}

/// The store of the current (or `-C`) directory, if memory is on.
fn open_store(directory: Option<&Path>) -> Result<Store, (u8, String)> {
    let home = tools::security::home_dir();
    let config = Config::load(&home).map_err(|e| (1, e))?;
    if !config.memory.enabled {
        return Err((
            1,
            format!(
                "memory is disabled (turn it on with \"memory\": {{\"enabled\": true}} in {})",
                crate::app::config::gg_home(&home)
                    .join("config.json")
                    .display()
            ),
        ));
    }
    let cwd = match directory {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(|e| (1, format!("current directory: {e}")))?,
    };
    let store = Store::new(&config.memory, &home, &cwd);
    for notice in store.maintain(jiff::Zoned::now().date()) {
        eprintln!("gg: {}", visible_inline(&notice));
    }
    Ok(store)
}

pub fn run(command: MemoryCommand, directory: Option<&Path>) -> ExitCode {
    let store = match open_store(directory) {
        Ok(store) => store,
        Err((code, message)) => {
            eprintln!("gg memory: {message}");
            return ExitCode::from(code);
        }
    };
    let result = match command {
        MemoryCommand::List { json } => list(&store, json),
        MemoryCommand::Show { which } => show(&store, which.is_some()),
        MemoryCommand::Search { query } => search(&store, &query.join(" ")),
        MemoryCommand::Add {
            scope,
            target,
            text,
        } => add(&store, &scope, &target, &text.join(" ")),
        MemoryCommand::Rm { ids } => remove(&store, &ids),
        MemoryCommand::Edit { scope, target } => edit(&store, &scope, &target),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gg memory: {}", visible_inline(&message));
            ExitCode::from(1)
        }
    }
}

fn marked(entry: &Entry) -> String {
    entry
        .mark()
        .map(|m| format!("  [marked: {m}]"))
        .unwrap_or_default()
}

fn list(store: &Store, json: bool) -> Result<(), String> {
    let entries = store.list().map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    if json {
        for e in &entries {
            let mark = e
                .mark()
                .map(|m| serde_json::json!({"rule": m.rule, "why": m.why, "matched": m.matched}));
            let row = serde_json::json!({"id": e.id, "layer": e.layer, "path": e.path,
                "line": e.line, "text": e.text, "marked": mark});
            let _ = writeln!(out, "{row}");
        }
        return Ok(());
    }
    if entries.is_empty() {
        let _ = writeln!(out, "no memory entries");
        return Ok(());
    }
    let mut current: Option<(Layer, &str)> = None;
    for e in &entries {
        if current != Some((e.layer, e.path.as_str())) {
            current = Some((e.layer, e.path.as_str()));
            let _ = writeln!(
                out,
                "{} {}",
                e.layer.as_str(),
                visible_inline(&store.display_path(e.layer, &e.path).display().to_string())
            );
        }
        let _ = writeln!(
            out,
            "  {}  {}{}",
            e.id,
            visible_inline(&e.text),
            visible_inline(&marked(e))
        );
    }
    Ok(())
}

fn show(store: &Store, daily: bool) -> Result<(), String> {
    let entries = if daily {
        store
            .daily(jiff::Zoned::now().date())
            .map_err(|e| e.to_string())?
    } else {
        store.curated().map_err(|e| e.to_string())?
    };
    let mut out = std::io::stdout().lock();
    if entries.is_empty() {
        let _ = writeln!(out, "{}", if daily { "no log today" } else { "no memory" });
    }
    for e in &entries {
        let _ = writeln!(
            out,
            "{}{}",
            visible_inline(&e.text),
            visible_inline(&marked(e))
        );
    }
    Ok(())
}

fn search(store: &Store, query: &str) -> Result<(), String> {
    let hits = store
        .search(query, tools::memory::SEARCH_LIMIT)
        .map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    if hits.is_empty() {
        let _ = writeln!(out, "no memory matches");
    }
    for hit in &hits {
        let _ = writeln!(out, "{}", visible_inline(&hit_line(hit)));
    }
    Ok(())
}

fn add(store: &Store, scope: &str, target: &str, text: &str) -> Result<(), String> {
    let scope = Scope::parse(scope).map_err(|e| e.to_string())?;
    let target = Layer::parse(target).map_err(|e| e.to_string())?;
    let entry = store.add(text, &scope, target).map_err(|e| e.to_string())?;
    for line in added_line(&entry, text).lines() {
        println!("{}", visible_inline(line));
    }
    Ok(())
}

fn remove(store: &Store, ids: &[String]) -> Result<(), String> {
    for id in ids {
        for e in store.remove(id).map_err(|e| e.to_string())? {
            println!(
                "removed {} from {} ({}): {}",
                e.id,
                e.path,
                e.layer.as_str(),
                visible_inline(&e.text)
            );
        }
    }
    Ok(())
}

/// The file a scope edits.
fn scope_file(scope: &Scope) -> String {
    match scope {
        Scope::General => "MEMORY.md".to_string(),
        Scope::Daily => format!("{}.md", jiff::Zoned::now().date()),
        Scope::Person(n) => format!("people/{}.md", tools::memory::slug(n)),
        Scope::Group(n) => format!("groups/{}.md", tools::memory::slug(n)),
    }
}

/// Edits a copy in the global store's directory (private to the person), then writes it back
/// through the store: atomically, refusing links, and only if nobody changed the file meanwhile
/// (then the edited copy is kept and named).
fn edit(store: &Store, scope: &str, target: &str) -> Result<(), String> {
    let scope = Scope::parse(scope).map_err(|e| e.to_string())?;
    let layer = Layer::parse(target).map_err(|e| e.to_string())?;
    let path = scope_file(&scope);
    let before = store.read_file(layer, &path).map_err(|e| e.to_string())?;
    let dir = store.global_dir().to_path_buf();
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let copy = dir.join(format!(
        ".edit-{}-{:08x}.md",
        layer.as_str(),
        fastrand::u32(..)
    ));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&copy)
            .map_err(|e| format!("{}: {e}", copy.display()))?;
        file.write_all(before.as_deref().unwrap_or_default().as_bytes())
            .map_err(|e| format!("{}: {e}", copy.display()))?;
    }
    let status = run_editor(&copy);
    let after = std::fs::read_to_string(&copy).map_err(|e| format!("{}: {e}", copy.display()));
    let outcome = match (status, after) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(()), Ok(after)) if Some(after.as_str()) == before.as_deref() => {
            println!("no changes");
            Ok(())
        }
        (Ok(()), Ok(after)) if after.is_empty() && before.is_none() => {
            println!("no changes");
            Ok(())
        }
        (Ok(()), Ok(after)) => match store.replace_file(layer, &path, before.as_deref(), &after) {
            Ok(()) => {
                println!(
                    "saved {}",
                    visible_inline(&store.display_path(layer, &path).display().to_string())
                );
                Ok(())
            }
            Err(e) => {
                return Err(format!("{e}; your edited copy is {}", copy.display()));
            }
        },
    };
    let _ = std::fs::remove_file(&copy);
    outcome
}

/// The editor as git finds it (`$VISUAL`, then `$EDITOR`, else `vi`), run through `sh -c` so
/// that a value with arguments (`code --wait`) works.
fn run_editor(file: &Path) -> Result<(), String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string());
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(file)
        .status()
        .map_err(|e| format!("cannot run the editor {editor:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the editor {editor:?} failed ({status}); nothing written"
        ))
    }
}

/// `gg init`: the profile template (never overwritten) and the memory directories.
pub fn init() -> ExitCode {
    let home = tools::security::home_dir();
    match init_in(&home) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gg init: {e}");
            ExitCode::from(1)
        }
    }
}

fn init_in(home: &Path) -> Result<Vec<String>, String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let config = Config::load(home)?;
    let gg_home = crate::app::config::gg_home(home);
    let memory_dir = config.memory.global_dir(home);
    for dir in [
        gg_home.clone(),
        memory_dir.clone(),
        memory_dir.join("people"),
        memory_dir.join("groups"),
    ] {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let profile_path = profile::path(home);
    let language = profile::default_language(std::env::var("LANG").ok().as_deref());
    let timezone = jiff::tz::TimeZone::system().iana_name().map(str::to_string);
    let created = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&profile_path)
    {
        Ok(mut file) => {
            file.write_all(profile::template(&language, timezone.as_deref()).as_bytes())
                .map_err(|e| format!("{}: {e}", profile_path.display()))?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(format!("{}: {e}", profile_path.display())),
    };
    let mut lines = vec![
        format!(
            "profile: {} ({})",
            profile_path.display(),
            if created {
                "created"
            } else {
                "exists, left as it is"
            }
        ),
        format!("memory:  {}", memory_dir.display()),
    ];
    if !config.memory.enabled {
        lines.push(format!(
            "memory is off; turn it on with \"memory\": {{\"enabled\": true}} in {}",
            gg_home.join("config.json").display()
        ));
    }
    lines.push(
        "the profile and memory are sent to your model provider with every request.".to_string(),
    );
    lines.push(format!(
        "edit {} to tell gg about yourself.",
        profile_path.display()
    ));
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn init_creates_the_profile_once_and_never_overwrites_it() {
        let dir = tempfile::tempdir().unwrap();
        let home: PathBuf = dir.path().to_path_buf();
        let first = init_in(&home).unwrap();
        assert!(first[0].ends_with("(created)"), "{first:?}");
        assert!(first.last().unwrap().starts_with("edit "));
        assert!(home.join(".gg/memory/people").is_dir());
        std::fs::write(profile::path(&home), "- Name: Ada\n").unwrap();
        let second = init_in(&home).unwrap();
        assert!(second[0].contains("exists"), "{second:?}");
        assert_eq!(
            std::fs::read_to_string(profile::path(&home)).unwrap(),
            "- Name: Ada\n"
        );
    }
}
