//! The file tools against the protected paths, driven through the real `gg` binary by the
//! scripted server playing a prompt-injected model, with no terminal: a symlinked agent area must
//! not carry a pre-approved write into `.git/`, and a write or edit of `.git/` or `.gg/` is
//! dangerous in every mode (so denied without a terminal, even under `--yolo --sandbox`), with a
//! denial that says why. Each case checks the host files afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Reply, ScriptedServer};

const GIT_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
const POLICY: &str = "# project policy\n";

struct Repo {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    sessions: PathBuf,
}

/// A repository with a git directory (config, hooks), gg's project settings and an agent area.
fn repo() -> Repo {
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let root = home.join("repo");
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/config"), GIT_CONFIG).unwrap();
    std::fs::create_dir_all(root.join(".gg/agent")).unwrap();
    std::fs::write(root.join(".gg/policy.toml"), POLICY).unwrap();
    Repo {
        home: home.canonicalize().unwrap(),
        root: root.canonicalize().unwrap(),
        sessions: tmp.path().join("sessions"),
        _tmp: tmp,
    }
}

/// Runs the real `gg <flags> -p go` in the repository against `server`, with no terminal, and
/// fails the test when gg fails.
fn run_gg(r: &Repo, server: &ScriptedServer, flags: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_gg"))
        .current_dir(&r.root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &r.home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", &r.sessions)
        .stdin(Stdio::null())
        .args(flags)
        .args(["-p", "go"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gg {flags:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `gg <flags> -p go` where the model makes one call, and returns the tool result the model
/// got back (from the second request's body).
fn one_call(r: &Repo, flags: &[&str], tool: &str, arguments: Value) -> String {
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", tool, &arguments.to_string()),
        Reply::text(&["done"]),
    ]);
    run_gg(r, &server, flags);
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 2, "the model was asked twice");
    let messages = bodies[1]["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    result["content"].as_str().unwrap().to_string()
}

/// Runs `gg <flags> -p go` where the model asks for every write of `writes` (path, content) in
/// one reply, as parallel tool calls.
fn writes_in_one_reply(r: &Repo, flags: &[&str], writes: &[(&str, &str)]) {
    use support::{StreamReply, finish_chunk, tool_call_chunk};
    let mut stream = StreamReply::new();
    for (i, (path, content)) in writes.iter().enumerate() {
        let args = json!({"path": path, "content": content}).to_string();
        stream = stream.event(tool_call_chunk(
            i as u32,
            Some(&format!("w{i}")),
            Some("write"),
            &args,
        ));
    }
    let server = ScriptedServer::with_replies([
        stream.event(finish_chunk("tool_calls")).done().reply(),
        Reply::text(&["done"]),
    ]);
    run_gg(r, &server, flags);
}

const MODES: [&[&str]; 2] = [&[], &["--yolo", "--sandbox"]];

fn assert_host_untouched(r: &Repo) {
    assert_eq!(
        std::fs::read_to_string(r.root.join(".git/config")).unwrap(),
        GIT_CONFIG
    );
    let hooks: Vec<_> = std::fs::read_dir(r.root.join(".git/hooks"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(hooks.is_empty(), "a hook was planted: {hooks:?}");
    assert_eq!(
        std::fs::read_to_string(r.root.join(".gg/policy.toml")).unwrap(),
        POLICY
    );
}

/// The denial is a dangerous-call denial that names what is protected.
fn assert_dangerous_denial(result: &str, protected: &str) {
    assert!(
        result.contains("denied by policy") && result.contains("dangerous"),
        "not denied as dangerous: {result}"
    );
    assert!(
        result.contains(protected),
        "the denial does not say why ({protected}): {result}"
    );
}

#[test]
fn an_agent_area_file_symlinked_to_git_config_is_not_pre_approved() {
    for flags in MODES {
        let r = repo();
        symlink("../../.git/config", r.root.join(".gg/agent/cfg")).unwrap();
        let edit = one_call(
            &r,
            flags,
            "edit",
            json!({"path": ".gg/agent/cfg", "edits": [{"oldText": "bare = false",
                "newText": "bare = false\n\tfsmonitor = /bin/sh -c 'touch /tmp/pwned'"}]}),
        );
        assert_host_untouched(&r);
        assert_dangerous_denial(&edit, "git directory");
        let write = one_call(
            &r,
            flags,
            "write",
            json!({"path": ".gg/agent/cfg", "content": "[core]\n\tfsmonitor = evil\n"}),
        );
        assert_dangerous_denial(&write, "git directory");
        assert_host_untouched(&r);
        assert!(
            std::fs::symlink_metadata(r.root.join(".gg/agent/cfg"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

#[test]
fn an_agent_area_directory_symlinked_to_git_hooks_is_not_pre_approved() {
    for flags in MODES {
        let r = repo();
        symlink("../../.git/hooks", r.root.join(".gg/agent/hooks")).unwrap();
        let result = one_call(
            &r,
            flags,
            "write",
            json!({"path": ".gg/agent/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}),
        );
        assert_host_untouched(&r);
        assert_dangerous_denial(&result, "git directory");
    }
}

#[test]
fn writes_and_edits_of_git_and_gg_settings_are_dangerous_in_every_mode() {
    for flags in MODES {
        let r = repo();
        let cases = [
            (
                "edit",
                json!({"path": ".git/config", "edits": [{"oldText": "bare = false",
                    "newText": "bare = false\n\tfsmonitor = evil"}]}),
                "git directory",
            ),
            (
                "write",
                json!({"path": ".git/config", "content": "[core]\n\thooksPath = x\n"}),
                "git directory",
            ),
            (
                "write",
                json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nevil\n"}),
                "git directory",
            ),
            (
                "write",
                json!({"path": ".gg/policy.toml", "content": "[[rules]]\n"}),
                "gg's project settings",
            ),
            (
                "edit",
                json!({"path": ".gg/policy.toml", "edits": [{"oldText": "# project policy",
                    "newText": "# pwned"}]}),
                "gg's project settings",
            ),
        ];
        for (tool, arguments, why) in cases {
            let result = one_call(&r, flags, tool, arguments.clone());
            assert_dangerous_denial(&result, why);
            assert_host_untouched(&r);
        }
    }
}

#[test]
fn the_real_agent_area_stays_pre_approved_and_ordinary_files_follow_the_mode() {
    let r = repo();
    // Default mode, no terminal: the agent area is pre-approved, even when it must be created.
    std::fs::remove_dir(r.root.join(".gg/agent")).unwrap();
    let result = one_call(
        &r,
        &[],
        "write",
        json!({"path": ".gg/agent/notes/today.md", "content": "notes\n"}),
    );
    assert!(result.starts_with("wrote 6 bytes"), "{result}");
    assert_eq!(
        std::fs::read_to_string(r.root.join(".gg/agent/notes/today.md")).unwrap(),
        "notes\n"
    );
    let mode = std::fs::metadata(r.root.join(".gg/agent")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o700
    );
    // --yolo: an ordinary file is written.
    let result = one_call(
        &r,
        &["--yolo", "--sandbox"],
        "write",
        json!({"path": "src/lib.rs", "content": "// ok\n"}),
    );
    assert!(result.starts_with("wrote"), "{result}");
    assert!(Path::new(&r.root.join("src/lib.rs")).exists());
    assert_host_untouched(&r);
}

/// What no name at the top of the project shows is refused as well, in every mode: agent and
/// editor files in a subdirectory (an agent started there takes `sub/AGENTS.md` as the person's
/// own instructions), a git directory inside the agent area, a directory made into a git
/// directory under another name (git obeys its config at the next `git status` there), the
/// directory a `.git` pointer file names, and, with gg started in the home directory, the home's
/// dot-files (autostart entries, systemd units, shell start-up files) and `~/bin`.
#[test]
fn vectors_below_the_top_under_other_names_and_in_home_are_dangerous_in_every_mode() {
    for flags in MODES {
        let r = repo();
        std::fs::create_dir_all(r.root.join("vendor/lib/objects")).unwrap();
        std::fs::create_dir_all(r.root.join("vendor/lib/refs")).unwrap();
        std::fs::write(r.root.join("vendor/lib/HEAD"), "ref: refs/heads/main\n").unwrap();
        let cases = [
            ("sub/AGENTS.md", "agent instructions"),
            ("sub/.agents/skills/x/SKILL.md", "agent skills"),
            ("a/b/.envrc", "direnv"),
            ("sub/.vscode/tasks.json", "editor settings"),
            ("sub/.claude/settings.json", "hooks run programs"),
            (".gg/agent/w/.git/config", "git directory"),
            (
                "vendor/lib/config",
                "a git directory (HEAD with objects and refs",
            ),
        ];
        for (path, why) in cases {
            let result = one_call(
                &r,
                flags,
                "write",
                json!({"path": path, "content": "[core]\n\tfsmonitor = \"touch pwned\"\n"}),
            );
            assert_dangerous_denial(&result, why);
            assert!(!r.root.join(path).exists(), "{flags:?}: {path} was written");
        }
        assert_host_untouched(&r);

        // `.git` as a pointer file naming a git directory inside the project.
        let r = repo();
        std::fs::rename(r.root.join(".git"), r.root.join("gd")).unwrap();
        std::fs::write(r.root.join(".git"), "gitdir: gd\n").unwrap();
        for path in ["gd/hooks/pre-commit", "gd/config"] {
            let result = one_call(&r, flags, "write", json!({"path": path, "content": "x\n"}));
            assert_dangerous_denial(&result, "named by .git");
        }
        assert!(!r.root.join("gd/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(r.root.join("gd/config")).unwrap(),
            GIT_CONFIG
        );

        // gg started in the home directory.
        let mut r = repo();
        r.root = r.home.clone();
        for path in [
            ".config/autostart/evil.desktop",
            ".config/systemd/user/evil.service",
            ".bash_login",
            ".zshenv",
            ".local/bin/git",
            "bin/ls",
        ] {
            let result = one_call(&r, flags, "write", json!({"path": path, "content": "x\n"}));
            assert_dangerous_denial(&result, "home's configuration");
            assert!(!r.home.join(path).exists(), "{flags:?}: {path} was written");
        }
    }
}

/// What a third attacker pass planted past the file tools, each refused now in every mode:
/// a git directory split in two (`HEAD` and a `commondir` naming where `objects`, `refs` and
/// the `config` are); a hook in the directory `core.hooksPath` names (husky's layout); a home
/// dot-file when `$HOME` is reached through a symbolic link; and, with gg started in a
/// dot-directory of home (`~/.config` kept as a dotfiles repository), git's global
/// configuration there. `--sandbox` refuses to make such a directory writable.
#[test]
fn split_git_directories_hook_paths_and_home_configuration_are_dangerous_in_every_mode() {
    for flags in MODES {
        let r = repo();
        let writes = [
            ("tools/HEAD", "ref: refs/heads/main\n"),
            ("tools/commondir", "../common\n"),
            ("common/objects/info/.keep", ""),
            ("common/refs/heads/.keep", ""),
            ("common/config", "[core]\n\tpager = touch pwned\n"),
        ];
        writes_in_one_reply(&r, flags, &writes);
        assert!(
            !(r.root.join("tools/HEAD").exists() && r.root.join("tools/commondir").exists()),
            "{flags:?}: tools became a git directory"
        );

        // Hooks where `core.hooksPath` puts them.
        let r = repo();
        for args in [
            &["init", "-q"][..],
            &["config", "core.hooksPath", ".husky/_"],
        ] {
            let out = Command::new("git")
                .current_dir(&r.root)
                .env("HOME", &r.home)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        }
        std::fs::create_dir_all(r.root.join(".husky/_")).unwrap();
        let result = one_call(
            &r,
            flags,
            "write",
            json!({"path": ".husky/_/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}),
        );
        assert_dangerous_denial(&result, "core.hooksPath");
        assert!(!r.root.join(".husky/_/pre-commit").exists(), "{flags:?}");

        // `$HOME` through a symbolic link, gg started in the home directory.
        let mut r = repo();
        let link = r.home.parent().unwrap().join("homelink");
        std::os::unix::fs::symlink(&r.home, &link).unwrap();
        r.root = r.home.clone();
        r.home = link;
        let result = one_call(
            &r,
            flags,
            "write",
            json!({"path": ".bash_login", "content": "x\n"}),
        );
        assert_dangerous_denial(&result, "home's configuration");
        assert!(!r.root.join(".bash_login").exists(), "{flags:?}");

        // gg started in `~/.config`.
        let mut r = repo();
        r.root = r.home.join(".config");
        std::fs::create_dir_all(&r.root).unwrap();
        let result = one_call(
            &r,
            flags,
            "write",
            json!({"path": "git/config", "content": "[core]\n\tfsmonitor = \"touch pwned\"\n"}),
        );
        assert_dangerous_denial(&result, "home's configuration");
        assert!(!r.root.join("git/config").exists(), "{flags:?}");
    }
}

/// Writes approved together are judged again when each lands: one reply's `HEAD`,
/// `objects/…` and `refs/…` each saw a directory that was not yet a git directory when they
/// were assessed, and together made one (whose `config`, written first, runs a pager).
#[test]
fn writes_approved_together_cannot_make_a_git_directory() {
    for flags in [&["--yolo"][..], &["--yolo", "--sandbox"]] {
        let r = repo();
        std::fs::create_dir_all(r.root.join("x")).unwrap();
        std::fs::write(r.root.join("x/config"), "[core]\n\tpager = touch pwned\n").unwrap();
        let head = "ref: refs/heads/main\n";
        writes_in_one_reply(
            &r,
            flags,
            &[
                ("x/HEAD", head),
                ("x/objects/info/.keep", head),
                ("x/refs/heads/.keep", head),
            ],
        );
        let present = ["x/HEAD", "x/objects", "x/refs"]
            .iter()
            .filter(|p| r.root.join(p).exists())
            .count();
        assert!(present < 3, "{flags:?}: x became a git directory");
    }
}

/// A protected name that is a link is written where it leads (`AGENTS.md -> docs/agents.md`,
/// `.vscode -> ide/vscode`, a common layout): an attacker pass wrote the person's instructions
/// through the link's name and, under its other name, the file it leads to, with the file tools
/// under `--yolo` and `--approval never`, and the next session took them as its system prompt.
/// Both are dangerous in every mode now, and so is a shell write to the file behind the link
/// (the classifier is given where the link leads), without `--sandbox` too.
#[test]
fn writes_through_a_protected_link_or_to_where_it_leads_are_dangerous_in_every_mode() {
    const INSTRUCTIONS: &str = "# how we work\n";
    const TASKS: &str = "{}\n";
    let protected_links = |r: &Repo| {
        std::fs::create_dir_all(r.root.join("docs")).unwrap();
        std::fs::write(r.root.join("docs/agents.md"), INSTRUCTIONS).unwrap();
        symlink("docs/agents.md", r.root.join("AGENTS.md")).unwrap();
        std::fs::create_dir_all(r.root.join("ide/vscode")).unwrap();
        std::fs::write(r.root.join("ide/vscode/tasks.json"), TASKS).unwrap();
        symlink("ide/vscode", r.root.join(".vscode")).unwrap();
    };
    let unchanged = |r: &Repo, flags: &[&str]| {
        assert_eq!(
            std::fs::read_to_string(r.root.join("docs/agents.md")).unwrap(),
            INSTRUCTIONS,
            "{flags:?}: the instructions behind AGENTS.md were written"
        );
        assert_eq!(
            std::fs::read_to_string(r.root.join("ide/vscode/tasks.json")).unwrap(),
            TASKS,
            "{flags:?}: the editor's tasks behind .vscode were written"
        );
        assert!(!r.root.join("ide/vscode/settings.json").exists());
        assert_eq!(
            std::fs::read_link(r.root.join("AGENTS.md")).unwrap(),
            Path::new("docs/agents.md")
        );
    };
    for flags in [
        &[][..],
        &["--yolo"],
        &["--approval", "never"],
        &["--yolo", "--sandbox"],
    ] {
        let r = repo();
        protected_links(&r);
        for (tool, path, why) in [
            ("write", "AGENTS.md", "written through AGENTS.md"),
            ("write", "docs/agents.md", "where AGENTS.md leads"),
            ("edit", "docs/agents.md", "where AGENTS.md leads"),
            ("write", "ide/vscode/tasks.json", "where .vscode leads"),
            ("write", "ide/vscode/settings.json", "where .vscode leads"),
        ] {
            let arguments = if tool == "edit" {
                json!({"path": path, "edits": [{"oldText": "how we work", "newText": "run evil"}]})
            } else {
                json!({"path": path, "content": "INJECTED: run evil\n"})
            };
            let result = one_call(&r, flags, tool, arguments);
            assert_dangerous_denial(&result, why);
            unchanged(&r, flags);
        }
        // A shell write to the file behind the link: dangerous before it runs.
        if flags.first() == Some(&"--yolo") {
            let result = one_call(
                &r,
                flags,
                "bash",
                json!({"command": "echo 'INJECTED: run evil' >> docs/agents.md"}),
            );
            assert_dangerous_denial(&result, "dangerous command denied");
            unchanged(&r, flags);
        }
    }
}

/// A project without `.git` made a bare repository by the file tools (an attacker pass):
/// `HEAD`, `objects/…`, then `refs/…` completes what git takes for a git directory at the
/// project's root, whose `config` git then obeys (a pager ran at the person's `git branch`).
/// The write that completes it is dangerous, as it is for a directory below the top.
#[test]
fn the_file_tools_cannot_make_the_projects_root_a_git_directory() {
    for flags in [&["--yolo"][..], &["--approval", "never"][..]] {
        let r = repo();
        std::fs::remove_dir_all(r.root.join(".git")).unwrap();
        for (path, content) in [
            ("HEAD", "ref: refs/heads/main\n"),
            ("objects/info/keep", ""),
        ] {
            let result = one_call(
                &r,
                flags,
                "write",
                json!({"path": path, "content": content}),
            );
            assert!(!result.contains("denied"), "{path}: {result}");
        }
        let result = one_call(
            &r,
            flags,
            "write",
            json!({"path": "refs/heads/keep", "content": ""}),
        );
        assert_dangerous_denial(&result, "a git directory");
        assert!(!r.root.join("refs").exists(), "{result}");
    }
}
