//! Placeholders that are symbolic links when a command starts (`AGENTS.md -> CLAUDE.md`,
//! `.envrc -> conf/envrc`, `.vscode -> ide/vscode`, and the hooks directory `core.hooksPath`
//! names through a link, `.githooks -> tools/hooks`). The sweep's placeholder check covers only
//! what was absent, and the hooks comparison the link's target: an attacker pass re-pointed
//! such links (into a directory it re-pointed next, so that the next session's sandbox bound
//! the host's `/tmp`) or replaced them with a file or directory of its own (instructions the
//! next session sent the model, a `.vscode/tasks.json` run on opening, a hook the next
//! `git commit` ran), and nothing was said. Each is recorded before the command; after it, a
//! link that was changed, replaced or removed is put back (the replacement moved to the
//! quarantine), and one whose text is the same but that now leads somewhere else (a directory
//! on its way was re-pointed) is moved aside. What a link leads to inside the project is
//! the person's too (`AGENTS.md -> docs/agents.md`): a file written, or replaced under the same
//! path (its directory renamed away and made again), is put back as it was; a directory
//! replaced is moved aside.

use std::path::{Component, Path, PathBuf};

/// A link as it was before the command.
pub(super) struct PinnedLink {
    path: PathBuf,
    target: PathBuf,
    /// Where it led (`None`: nowhere).
    resolved: Option<PathBuf>,
    /// What it led to, when that lies inside the project.
    led_to: Option<LedTo>,
}

/// What a link led to inside the project: a file's content, or a directory's identity (its
/// content is the landlock level's copy to put back, [`super::Kept`]; the bwrap level mounts
/// it read-only).
#[derive(PartialEq)]
enum LedTo {
    File(super::Content),
    Dir((u64, u64)),
}

impl LedTo {
    fn of(path: &Path) -> Option<LedTo> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if meta.is_dir() {
            return Some(LedTo::Dir(super::identity_of(&meta)));
        }
        super::Content::of(path).map(LedTo::File)
    }
}

/// The placeholders and the links on the way to the `core.hooksPath` directory that are links
/// now.
///
/// `may_exist`: the placeholders a listing of their directories does not rule out
/// (`sandbox::protected::placeholders_that_may_exist`, read once for the command by
/// `Before::look`); the rest are not there, links or otherwise.
///
/// `config`: the text of `.git/config` as [`super::read_text`] reads it, where the same look
/// read it already (`None`: read here).
pub(super) fn look(
    root: &Path,
    may_exist: &[PathBuf],
    config: Option<Option<&str>>,
) -> Vec<PinnedLink> {
    // Resolved at the first link found: most projects have none.
    let canonical_root = std::cell::OnceCell::new();
    let mut paths: Vec<PathBuf> = may_exist.to_vec();
    let config = match config {
        Some(text) => text.map(str::to_string),
        None => super::read_text(&root.join(".git/config")),
    };
    paths.extend(hooks_path_links(root, &config.unwrap_or_default()));
    paths
        .into_iter()
        .filter_map(|path| {
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if !meta.file_type().is_symlink() {
                return None;
            }
            let target = std::fs::read_link(&path).ok()?;
            let resolved = std::fs::canonicalize(&path).ok();
            let led_to = resolved
                .as_deref()
                .filter(|r| {
                    canonical_root
                        .get_or_init(|| std::fs::canonicalize(root).ok())
                        .as_deref()
                        .and_then(|root| sandbox::protected::inside_project(root, r))
                        .is_some()
                })
                .and_then(LedTo::of);
            Some(PinnedLink {
                path,
                target,
                resolved,
                led_to,
            })
        })
        .collect()
}

/// The links git follows to reach the hooks directory `.git/config`'s `core.hooksPath` names
/// in the work tree: the path itself and each directory on its way that is a link.
fn hooks_path_links(root: &Path, config: &str) -> Vec<PathBuf> {
    let mut named = None;
    for (header, line) in super::config_lines(config) {
        let section = header
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim()
            .to_ascii_lowercase();
        // `[core] hooksPath = x` is one line.
        let body = match line.strip_prefix('[') {
            Some(rest) => rest.split_once(']').map_or("", |(_, body)| body),
            None => line.as_str(),
        };
        let Some((key, value)) = body.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section.starts_with("core") && key.eq_ignore_ascii_case("hookspath") {
            named = Some(value.trim().trim_matches('"').to_string());
        }
    }
    let Some(named) = named.filter(|n| !n.is_empty()) else {
        return Vec::new();
    };
    let path = root.join(&named);
    let Ok(relative) = path.strip_prefix(root) else {
        return Vec::new();
    };
    let mut links = Vec::new();
    let mut at = root.to_path_buf();
    for component in relative.components() {
        let Component::Normal(part) = component else {
            break;
        };
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => links.push(at.clone()),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    links
}

/// After the command: puts back each link it changed; a line about each.
pub(super) fn sweep(root: &Path, links: &[PinnedLink]) -> Vec<String> {
    const WHY: &str = "a symbolic link of the person's that an agent, editor or git follows \
                       (to instructions, settings or hooks)";
    let mut lines = Vec::new();
    for link in links {
        let name = super::shown(root, &link.path);
        let now = std::fs::symlink_metadata(&link.path);
        let same_text = now.as_ref().is_ok_and(|m| m.file_type().is_symlink())
            && std::fs::read_link(&link.path).is_ok_and(|t| t == link.target);
        if same_text {
            let resolved = std::fs::canonicalize(&link.path).ok();
            let elsewhere = match (&link.resolved, &resolved) {
                (Some(was), Some(now)) => was != now,
                // Dangling before: only a target outside the project is someone else's.
                (None, Some(now)) => std::fs::canonicalize(root).is_ok_and(|r| !now.starts_with(r)),
                (_, None) => false,
            };
            if elsewhere {
                lines.extend(super::quarantine(
                    root,
                    &[(
                        link.path.clone(),
                        format!(
                            "{WHY}, which now leads to {} instead of {}: a directory on its way \
                             was changed",
                            resolved.as_deref().unwrap_or(Path::new("?")).display(),
                            link.resolved
                                .as_deref()
                                .unwrap_or(Path::new("nowhere"))
                                .display()
                        ),
                    )],
                ));
            } else if let (Some(was), Some(now)) = (&link.led_to, &resolved)
                && LedTo::of(now).as_ref() != Some(was)
            {
                let why = format!(
                    "what {name}, {WHY}, leads to inside the project ({})",
                    super::shown(root, now)
                );
                match was {
                    LedTo::File(content) => lines.push(super::move_aside_and_put_back(
                        root,
                        now,
                        &why,
                        Some(content),
                    )),
                    // Replaced: the person's directory was renamed away by the command, to
                    // where it may still be.
                    LedTo::Dir(_) => lines.extend(super::quarantine(
                        root,
                        &[(
                            now.clone(),
                            format!("{why}, made again in place of the person's"),
                        )],
                    )),
                }
            }
            continue;
        }
        let content = super::Content::Link(link.target.clone());
        if now.is_ok() {
            lines.push(super::move_aside_and_put_back(
                root,
                &link.path,
                &format!("{WHY} (-> {})", link.target.display()),
                Some(&content),
            ));
            continue;
        }
        let put = super::open_spot(root, &link.path)
            .map_err(std::io::Error::other)
            .and_then(|spot| content.put_back(&spot.dir, &spot.name));
        lines.push(match put {
            Ok(()) => format!(
                "[gg: the command removed {name}, {WHY} (-> {}); put back]",
                link.target.display()
            ),
            Err(e) => format!(
                "[gg: the command removed {name}, {WHY} (-> {}), and it could not be put back \
                 ({e})]",
                link.target.display()
            ),
        });
    }
    lines
}
