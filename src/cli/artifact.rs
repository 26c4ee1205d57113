//! `gg artifact …` and `gg library …`: the person's side of the artifact store and the library.
//! The model can create, edit and read artifacts and search and read the library; publishing,
//! removing and adding files happen only here (or through ggd).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::terminal::{Stream, colour_on, render_diff};
use crate::app::config::Config;
use crate::display::{visible, visible_inline};
use tools::artifacts::Store;
use tools::diff;
use tools::library::Library;
use tools::store::{StoreError, human_size};

#[derive(Subcommand, Debug)]
pub enum ArtifactCommand {
    /// List artifacts, most recently changed first.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Print an artifact's content (the latest version unless --version).
    Show {
        /// Artifact id (or a unique prefix of at least 4 digits).
        id: String,
        #[arg(long, value_name = "N")]
        version: Option<u32>,
    },
    /// Show what changed between two versions (default: the previous and the latest).
    Diff {
        id: String,
        /// The older version (default: the one before TO).
        from: Option<u32>,
        /// The newer version (default: the latest).
        to: Option<u32>,
    },
    /// Copy the latest version into the library and mark it published.
    Publish { id: String },
    /// Delete an artifact and all its versions (a published library copy stays).
    Remove { id: String },
}

#[derive(Subcommand, Debug)]
pub enum LibraryCommand {
    /// Copy a file into the library (at most 50 MiB).
    Add {
        path: PathBuf,
        /// The name in the library (default: the file's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// List the library's files.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Delete a file from the library.
    Remove {
        /// Entry id or name.
        key: String,
    },
    /// Print the path of a library file.
    Path {
        /// Entry id or name.
        key: String,
    },
}

fn stores() -> Result<(Store, Library), String> {
    let home = tools::security::home_dir();
    let config = Config::load(&home)?;
    Ok((config.artifact_store(&home), config.library(&home)))
}

fn fail(command: &str, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("gg {command}: {}", visible(&message.to_string()));
    ExitCode::from(1)
}

pub fn run_artifact(command: Option<ArtifactCommand>) -> ExitCode {
    let command = command.unwrap_or(ArtifactCommand::List { json: false });
    let (store, library) = match stores() {
        Ok(stores) => stores,
        Err(e) => return fail("artifact", e),
    };
    match artifact(&store, &library, command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("artifact", e),
    }
}

fn artifact(store: &Store, library: &Library, command: ArtifactCommand) -> Result<(), StoreError> {
    let mut out = std::io::stdout().lock();
    let write = |out: &mut std::io::StdoutLock<'_>, text: &str| {
        out.write_all(text.as_bytes()).map_err(|e| {
            // A closed pipe (`gg artifact list | head -1`) ends gg quietly, status 0.
            super::pipe::exit_if_closed(&e);
            StoreError::io("stdout", e)
        })
    };
    match command {
        ArtifactCommand::List { json } => {
            let list = store.list()?;
            if json {
                for a in &list {
                    let line =
                        serde_json::to_string(a).map_err(|e| StoreError::Io(e.to_string()))?;
                    write(&mut out, &format!("{line}\n"))?;
                }
            } else if list.is_empty() {
                write(&mut out, "no artifacts\n")?;
            } else {
                for a in &list {
                    let published = match a.published_version {
                        Some(p) => format!("published v{p}"),
                        None => "unpublished".to_string(),
                    };
                    write(
                        &mut out,
                        &format!(
                            "{}  v{:<3} {:<8} {:<16} {}  {}\n",
                            a.id,
                            a.version,
                            a.kind.name(),
                            published,
                            a.updated_at,
                            visible_inline(&a.title)
                        ),
                    )?;
                }
            }
        }
        ArtifactCommand::Show { id, version } => {
            let id = store.resolve(&id)?;
            let (_, _, text) = store.read(&id, version)?;
            // Piped: the exact bytes. On a terminal: control characters made visible, so a
            // document cannot drive the terminal.
            if std::io::stdout().is_terminal() {
                write(&mut out, &visible(&text))?;
            } else {
                write(&mut out, &text)?;
            }
        }
        ArtifactCommand::Diff { id, from, to } => {
            let id = store.resolve(&id)?;
            let latest = store.get(&id)?.version;
            let to = to.unwrap_or(latest);
            let from = from.unwrap_or(to.saturating_sub(1).max(1));
            let (a, _, before) = store.read(&id, Some(from))?;
            let (_, _, after) = store.read(&id, Some(to))?;
            let text = diff::between(
                &format!("{id}/{}", a.file_of(from)),
                &format!("{id}/{}", a.file_of(to)),
                &before,
                &after,
            );
            write(&mut out, &render_diff(&text, colour_on(Stream::Stdout)))?;
        }
        ArtifactCommand::Publish { id } => {
            let id = store.resolve(&id)?;
            let (a, entry) = store.publish(&id, library)?;
            write(
                &mut out,
                &format!(
                    "published artifact {} v{} as {}\n",
                    a.id,
                    a.published_version.unwrap_or(a.version),
                    library.path_of(&entry).display()
                ),
            )?;
        }
        ArtifactCommand::Remove { id } => {
            let id = store.resolve(&id)?;
            let a = store.remove(&id)?;
            write(
                &mut out,
                &format!(
                    "removed artifact {} {} ({} versions)\n",
                    a.id,
                    visible_inline(&a.title),
                    a.version
                ),
            )?;
        }
    }
    Ok(())
}

pub fn run_library(command: Option<LibraryCommand>) -> ExitCode {
    let command = command.unwrap_or(LibraryCommand::List { json: false });
    let library = match stores() {
        Ok((_, library)) => library,
        Err(e) => return fail("library", e),
    };
    match library_command(&library, command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("library", e),
    }
}

fn library_command(library: &Library, command: LibraryCommand) -> Result<(), StoreError> {
    let mut out = std::io::stdout().lock();
    let mut write = |text: &str| {
        out.write_all(text.as_bytes()).map_err(|e| {
            // A closed pipe (`gg artifact list | head -1`) ends gg quietly, status 0.
            super::pipe::exit_if_closed(&e);
            StoreError::io("stdout", e)
        })
    };
    match command {
        LibraryCommand::Add { path, name } => {
            let entry = library.add(&path, name.as_deref())?;
            write(&format!(
                "added {} ({}) as {} [{}]\n",
                path.display(),
                human_size(entry.size),
                library.path_of(&entry).display(),
                entry.id
            ))?;
        }
        LibraryCommand::List { json } => {
            let entries = library.list()?;
            if json {
                for e in &entries {
                    let line =
                        serde_json::to_string(e).map_err(|e| StoreError::Io(e.to_string()))?;
                    write(&format!("{line}\n"))?;
                }
            } else if entries.is_empty() {
                write(&format!(
                    "the library is empty ({}); add files with gg library add <path>\n",
                    library.root().display()
                ))?;
            } else {
                for e in &entries {
                    write(&format!(
                        "{}  {:>9}  {}  {}  ({})\n",
                        e.id,
                        human_size(e.size),
                        e.added_at,
                        visible_inline(&e.name),
                        visible_inline(&e.source)
                    ))?;
                }
            }
        }
        LibraryCommand::Remove { key } => {
            let entry = library.remove(&key)?;
            write(&format!(
                "removed {} [{}]\n",
                visible_inline(&entry.name),
                entry.id
            ))?;
        }
        LibraryCommand::Path { key } => {
            let entry = library.find(&key)?;
            write(&format!("{}\n", library.path_of(&entry).display()))?;
        }
    }
    Ok(())
}
