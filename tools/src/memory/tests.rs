//! Unit tests of the memory store: its layout, writing and searching entries, removing them, and
//! refusing symlinks and files it cannot rewrite whole.

use super::*;

fn store(dir: &Path) -> Store {
    let home = dir.join("home");
    let repo = dir.join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    Store::new(&MemoryConfig::default(), &home, &repo)
}

fn at(text: &str) -> jiff::Zoned {
    text.parse().unwrap()
}

#[test]
fn slugs_and_scopes_follow_the_layout() {
    assert_eq!(slug("Alice Smith"), "alice-smith");
    assert_eq!(slug("Team_Ops-2"), "team_ops-2");
    assert_eq!(slug("../../etc"), "etc");
    assert_eq!(slug("日本"), "unnamed");
    assert_eq!(
        Scope::parse("person:Alice").unwrap(),
        Scope::Person("Alice".into())
    );
    assert!(Scope::parse("person:").is_err());
    assert!(Scope::parse("weekly").is_err());
    assert_eq!(Scope::parse("").unwrap(), Scope::General);
}

#[test]
fn entries_land_in_their_files_with_headers_and_times() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let now = at("2026-11-30T09:05[UTC]");
    s.add_at("prefers tabs", &Scope::General, Layer::Workspace, &now)
        .unwrap();
    s.add_at("met about billing", &Scope::Daily, Layer::Global, &now)
        .unwrap();
    let e = s
        .add_at(
            "leads\nbilling",
            &Scope::Person("Alice Smith".into()),
            Layer::Global,
            &now,
        )
        .unwrap();
    assert_eq!(e.path, "people/alice-smith.md");
    let repo = dir.path().join("repo/.gg/memory/MEMORY.md");
    assert_eq!(std::fs::read_to_string(repo).unwrap(), "- prefers tabs\n");
    let global = dir.path().join("home/.gg/memory");
    assert_eq!(
        std::fs::read_to_string(global.join("2026-11-30.md")).unwrap(),
        "- 09:05 met about billing\n"
    );
    assert_eq!(
        std::fs::read_to_string(global.join("people/alice-smith.md")).unwrap(),
        "# Alice Smith\n\n- leads billing\n"
    );
    assert_eq!(e.line, 3);
    assert_eq!(s.daily(now.date()).unwrap().len(), 1);
}

#[test]
fn curated_reads_the_workspace_first_and_drops_repeated_global_lines() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    for (text, layer) in [
        ("shared", Layer::Global),
        ("global only", Layer::Global),
        ("shared", Layer::Workspace),
        ("project", Layer::Workspace),
    ] {
        s.add(text, &Scope::General, layer).unwrap();
    }
    let lines: Vec<(Layer, String)> = s
        .curated()
        .unwrap()
        .into_iter()
        .map(|e| (e.layer, e.text))
        .collect();
    assert_eq!(
        lines,
        [
            (Layer::Workspace, "- shared".to_string()),
            (Layer::Workspace, "- project".to_string()),
            (Layer::Global, "- global only".to_string()),
        ]
    );
}

#[test]
fn search_ranks_by_words_and_workspace_pages_shadow_global_ones() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    s.add("alice likes rust", &Scope::General, Layer::Global)
        .unwrap();
    s.add("old note", &Scope::Person("alice".into()), Layer::Global)
        .unwrap();
    s.add("new note", &Scope::Person("alice".into()), Layer::Workspace)
        .unwrap();
    s.add("rust and alice", &Scope::General, Layer::Workspace)
        .unwrap();
    let hits = s.search("alice rust", 10).unwrap();
    let texts: Vec<&str> = hits.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        ["- rust and alice", "- alice likes rust", "- new note"],
        "{hits:?}"
    );
    assert!(s.search("  ", 10).is_err());
}

#[test]
fn remove_takes_an_id_or_a_prefix_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let a = s.add("keep me", &Scope::General, Layer::Global).unwrap();
    let b = s.add("drop me", &Scope::General, Layer::Global).unwrap();
    assert_ne!(a.id, b.id);
    let removed = s.remove(&b.id[..6]).unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("home/.gg/memory/MEMORY.md")).unwrap(),
        "- keep me\n"
    );
    assert!(
        s.remove(&b.id)
            .unwrap_err()
            .to_string()
            .contains("no memory entry")
    );
    assert!(s.remove("ab").is_err());
}

#[test]
fn symlinks_in_the_overlay_are_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(dir.path().join("repo/.gg")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("repo/.gg/memory")).unwrap();
    let err = s
        .add("planted", &Scope::General, Layer::Workspace)
        .unwrap_err()
        .to_string();
    assert!(err.contains("symlink"), "{err}");
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());

    // A link to a file inside the project is refused too: memory files are never links.
    std::fs::remove_file(dir.path().join("repo/.gg/memory")).unwrap();
    std::fs::create_dir_all(dir.path().join("repo/.gg/memory")).unwrap();
    std::fs::write(dir.path().join("repo/notes.txt"), "mine\n").unwrap();
    std::os::unix::fs::symlink(
        "../../notes.txt",
        dir.path().join("repo/.gg/memory/MEMORY.md"),
    )
    .unwrap();
    assert!(
        s.add("x", &Scope::General, Layer::Workspace)
            .unwrap_err()
            .to_string()
            .contains("symlink")
    );
    assert!(s.curated().is_err(), "reading through the link is refused");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("repo/notes.txt")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_symlink_swapped_in_while_a_write_runs_is_refused_at_the_open() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Swap `.gg/memory` for a link out of the project at the n-th open of the overlay
    // directory itself: 1 = when the lock is taken, 2 = when the write resolves its target;
    // and at the read of MEMORY.md under the lock.
    for (watched, nth) in [
        (".gg/memory", 1),
        (".gg/memory", 2),
        (".gg/memory/MEMORY.md", 1),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        s.add("first", &Scope::General, Layer::Workspace).unwrap();
        let repo = dir.path().join("repo");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let (r, o) = (repo.clone(), outside.clone());
        s.set_before_open_hook(Arc::new(move |rel: &Path| {
            if rel == Path::new(watched) && seen.fetch_add(1, Ordering::SeqCst) + 1 == nth {
                std::fs::rename(r.join(".gg/memory"), r.join(".gg/memory-real")).unwrap();
                std::os::unix::fs::symlink(&o, r.join(".gg/memory")).unwrap();
            }
        }));
        let result = s.add("second", &Scope::General, Layer::Workspace);
        let outside_files: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().collect();
        assert!(
            outside_files.is_empty(),
            "{watched} #{nth}: {outside_files:?}"
        );
        let real = std::fs::read_to_string(repo.join(".gg/memory-real/MEMORY.md"))
            .or_else(|_| std::fs::read_to_string(repo.join(".gg/memory/MEMORY.md")))
            .unwrap();
        let e = result.unwrap_err().to_string();
        assert!(e.contains("symlink"), "{watched} #{nth}: {e}");
        assert_eq!(real, "- first\n", "{watched} #{nth}");
    }
}

#[test]
fn a_file_gg_cannot_rewrite_whole_is_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let file = dir.path().join("home/.gg/memory/MEMORY.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, b"- caf\xe9\n").unwrap();
    let err = s
        .add("x", &Scope::General, Layer::Global)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not UTF-8"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"- caf\xe9\n");
}

#[test]
fn legacy_file_moves_once_and_old_daily_logs_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let legacy = dir.path().join("home/.gg/memory.md");
    std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    std::fs::write(&legacy, "- from the old days\n").unwrap();
    let today: jiff::civil::Date = "2026-11-30".parse().unwrap();
    let notices = s.maintain(today);
    assert!(notices[0].contains("moved"), "{notices:?}");
    assert!(dir.path().join("home/.gg/memory.md.bak").is_file());
    assert_eq!(s.curated().unwrap()[0].text, "- from the old days");

    std::fs::write(&legacy, "- second legacy\n").unwrap();
    let notices = s.maintain(today);
    assert!(notices[0].contains("not migrated"), "{notices:?}");
    assert!(legacy.is_file(), "not merged, left in place");

    let global = dir.path().join("home/.gg/memory");
    std::fs::write(global.join("2026-08-31.md"), "- old\n").unwrap();
    std::fs::write(global.join("2026-09-01.md"), "- recent\n").unwrap();
    std::fs::write(global.join("notes.md"), "- not a log\n").unwrap();
    s.maintain(today);
    assert!(!global.join("2026-08-31.md").exists());
    assert!(global.join("2026-09-01.md").exists());
    assert!(global.join("notes.md").exists());
}
