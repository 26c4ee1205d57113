//! Unit tests of the command line's parsing (`parse`, the run flags each subcommand takes, the colour flag).

use super::*;
use clap::error::ErrorKind;

fn parse_words(words: &[&str]) -> Result<Invocation, clap::Error> {
    let mut args: Vec<OsString> = vec!["gg".into()];
    args.extend(words.iter().map(OsString::from));
    parse(args)
}

fn ok(words: &[&str]) -> Invocation {
    match parse_words(words) {
        Ok(invocation) => invocation,
        Err(e) => panic!("{words:?}: {e}"),
    }
}

/// Every agent flag, spelled as a user would type it (with a value when it takes one).
fn every_run_flag() -> Vec<Vec<String>> {
    let cmd = RunArgs::augment_args(clap::Command::new("gg"));
    let mut flags = Vec::new();
    for arg in cmd.get_arguments() {
        let takes_value = !matches!(arg.get_action(), ArgAction::SetTrue);
        let mut spellings = Vec::new();
        if let Some(long) = arg.get_long() {
            spellings.push(format!("--{long}"));
        }
        if let Some(short) = arg.get_short() {
            spellings.push(format!("-{short}"));
        }
        for alias in arg.get_visible_aliases().unwrap_or_default() {
            spellings.push(format!("--{alias}"));
        }
        for spelling in spellings {
            let mut flag = vec![spelling.clone()];
            if takes_value {
                flag.push(format!("value-of-{}", arg.get_id()));
            }
            flags.push(flag);
            if takes_value && spelling.starts_with("--") {
                flags.push(vec![format!("{spelling}=value-of-{}", arg.get_id())]);
            }
        }
    }
    assert!(flags.len() > 20, "introspection found the flags: {flags:?}");
    flags
}

/// Whether the flag spelled `spelling` may be given several times.
fn repeatable(spelling: &str) -> bool {
    let cmd = RunArgs::augment_args(clap::Command::new("gg"));
    cmd.get_arguments().any(|arg| {
        arg.get_long().is_some_and(|l| spelling == format!("--{l}"))
            && matches!(arg.get_action(), ArgAction::Append)
    })
}

fn with<'a>(parts: &[&'a [String]]) -> Vec<&'a str> {
    parts
        .iter()
        .flat_map(|p| p.iter().map(String::as_str))
        .collect()
}

#[test]
fn every_flag_is_parsed_wherever_it_stands() {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let fix = words(&["fix", "it"]);
    let (fix0, fix1) = (words(&["fix"]), words(&["it"]));
    let dashes = words(&["--"]);
    let dash_prompt = words(&["-x", "it"]);
    let resume = words(&["resume", "abc123"]);
    let (job_well, done) = (words(&["job", "well"]), words(&["done"]));
    for flag in every_run_flag() {
        let before = ok(&with(&[&flag, &fix]));
        assert_ne!(before.run, RunArgs::default(), "{flag:?} had no effect");
        assert_eq!(before.prompt, fix, "{flag:?}");
        assert!(before.command.is_none() && before.resume.is_none());
        for line in [with(&[&fix0, &flag, &fix1]), with(&[&fix, &flag])] {
            let after = ok(&line);
            assert_eq!(after.run, before.run, "{line:?}");
            assert_eq!(after.prompt, fix, "{line:?}");
        }
        // `--` ends the options: a prompt may start with '-', and a flag after it is text.
        let line = with(&[&flag, &dashes, &dash_prompt]);
        let dashed = ok(&line);
        assert_eq!(dashed.run, before.run, "{line:?}");
        assert_eq!(dashed.prompt, dash_prompt, "{line:?}");
        let line = with(&[&fix, &dashes, &flag]);
        let literal = ok(&line);
        assert_eq!(literal.run, RunArgs::default(), "{line:?}");
        assert_eq!(literal.prompt, with(&[&fix, &flag]), "{line:?}");
        // `gg resume ID PROMPT`: before the subcommand, after the target, after the prompt.
        for line in [
            with(&[&flag, &resume, &fix]),
            with(&[&resume, &flag, &fix]),
            with(&[&resume, &fix, &flag]),
            with(&[&resume, &fix0, &flag, &fix1]),
        ] {
            let resumed = ok(&line);
            assert_eq!(resumed.run, before.run, "{line:?}");
            assert_eq!(resumed.prompt, fix, "{line:?}");
            assert_eq!(resumed.resume, Some(Some("abc123".to_string())), "{line:?}");
        }
        let line = with(&[&resume, &fix, &dashes, &flag]);
        assert_eq!(ok(&line).prompt, with(&[&fix, &flag]), "{line:?}");
        // A prompt that starts with the word `job`.
        let line = with(&[&job_well, &flag, &done]);
        let job = ok(&line);
        assert_eq!(job.run, before.run, "{line:?}");
        assert_eq!(job.prompt, ["job", "well", "done"], "{line:?}");
        // A value typed before and after `resume` is one value too many (a repeatable
        // flag such as --allow-domain collects both).
        if flag.len() == 2 && !repeatable(&flag[0]) {
            let line = with(&[&flag, &resume, &flag]);
            let err = parse_words(&line).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{line:?}");
        }
    }
}

#[test]
fn unknown_options_are_usage_errors_never_prompt_text() {
    for (line, named, suggestion) in [
        (&["-p", "hi", "--bogus"][..], "--bogus", None),
        (&["--bogus", "-p", "hi"][..], "--bogus", None),
        (&["-p", "hi", "--sandbx"][..], "--sandbx", Some("--sandbox")),
        (&["fix", "it", "--yolo=1"][..], "--yolo", None),
        (&["fix", "-x"][..], "-x", None),
        (
            &["resume", "abc", "go", "--yollo"][..],
            "--yollo",
            Some("--yolo"),
        ),
        (&["job", "well", "done", "--bogus"][..], "--bogus", None),
        (
            &[
                "job",
                "add",
                "--name",
                "n",
                "--in",
                "2s",
                "go",
                "--alow-all",
            ][..],
            "--alow-all",
            Some("--allow-all"),
        ),
    ] {
        let err = parse_words(line).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{line:?}");
        let text = err.render().to_string();
        assert!(text.contains(named), "{line:?}: {text}");
        if let Some(close) = suggestion {
            assert!(
                text.contains(&format!("similar argument exists: '{close}")),
                "{line:?}: {text}"
            );
        }
    }
}

#[test]
fn the_first_word_decides_and_later_words_are_never_subcommands() {
    assert_eq!(ok(&["fix", "the", "tests"]).prompt, ["fix", "the", "tests"]);
    let later = ok(&["fix", "--yolo", "job", "sandbox", "resume"]);
    assert_eq!(later.prompt, ["fix", "job", "sandbox", "resume"]);
    assert!(later.run.yolo && later.command.is_none());
    assert!(matches!(ok(&["--yolo", "-p", "hi"]).prompt.as_slice(), [p] if p == "hi"));
    assert!(matches!(
        ok(&["classify", "ls"]).command,
        Some(Command::Classify(_))
    ));
    assert!(matches!(
        ok(&["-C", "x", "resume", "id"]).resume,
        Some(Some(ref id)) if id == "id"
    ));
    assert_eq!(ok(&["--", "classify", "ls"]).prompt, ["classify", "ls"]);
    assert_eq!(ok(&["help", "me", "out"]).prompt, ["help", "me", "out"]);
    assert_eq!(ok(&["job"]).prompt, Vec::<String>::new());
    assert!(matches!(
        ok(&["job"]).command,
        Some(Command::Job(JobArgs { command: None, .. }))
    ));
    for line in [&["help"][..], &["help", "job"], &["job", "--help"], &["-h"]] {
        assert_eq!(
            parse_words(line).unwrap_err().kind(),
            ErrorKind::DisplayHelp,
            "{line:?}"
        );
    }
    let resume = ok(&["resume"]);
    assert_eq!(resume.resume, Some(None), "no target opens the picker");
}

#[test]
fn agent_flags_before_other_subcommands_are_refused_not_ignored() {
    for line in [
        &["--yolo", "classify", "ls"][..],
        &["--json", "audit"],
        &["-p", "job", "list"],
    ] {
        let err = parse_words(line).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{line:?}");
        assert!(
            err.to_string().contains("does not apply"),
            "{line:?}: {err}"
        );
    }
    let audit = ok(&["--session-dir", "s", "audit"]);
    assert_eq!(
        audit.run.session_dir.as_deref(),
        Some(std::path::Path::new("s"))
    );
    assert!(ok(&["--sandbox", "mcp", "list"]).run.sandbox);
    assert_eq!(
        ok(&["--color", "never", "classify", "ls"]).color,
        ColorWhen::Never
    );
    assert_eq!(
        ok(&["classify", "ls", "--color=always"]).color,
        ColorWhen::Always
    );
}

#[test]
fn job_add_flags_stand_anywhere_and_dashes_protect_the_prompt() {
    let add = |words: &[&str]| -> job::AddArgs {
        match ok(words).command {
            Some(Command::Job(JobArgs {
                command: Some(job::JobCommand::Add(args)),
                ..
            })) => args,
            other => panic!("{words:?}: {other:?}"),
        }
    };
    let flags: [&[&str]; 8] = [
        &["--in", "2s"],
        &["--timezone", "UTC"],
        &["--timeout", "1m"],
        &["--allow-all"],
        &["--no-sandbox"],
        &["--network", "off"],
        &["--allow-domain", "registry.test"],
        &["--name", "n"],
    ];
    let base = ["--cron", "@daily"];
    for flag in flags {
        let mut before = vec!["job", "add", "--name", "x"];
        before.extend(flag);
        before.extend(["do", "it"]);
        let mut after = vec!["job", "add", "--name", "x", "do"];
        after.extend(flag);
        after.push("it");
        if flag[0] == "--in" || flag[0] == "--name" {
            continue;
        }
        before.extend(base);
        after.extend(base);
        let (a, b) = (add(&before), add(&after));
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{flag:?}");
        assert_eq!(a.prompt, ["do", "it"]);
    }
    let a = add(&["job", "add", "--name", "x", "do", "--in", "2s", "it"]);
    assert_eq!(
        (a.in_.as_deref(), a.prompt.as_slice()),
        (Some("2s"), &["do".to_string(), "it".to_string()][..])
    );
    let a = add(&[
        "job",
        "add",
        "--name",
        "x",
        "--in",
        "2s",
        "--",
        "--allow-all",
        "-x",
    ]);
    assert!(!a.allow_all);
    assert_eq!(a.prompt, ["--allow-all", "-x"]);
}

#[test]
fn the_quick_version_line_is_the_one_clap_prints() {
    assert_eq!(Cli::command().render_version(), version_line());
}

#[test]
fn colour_flag_is_read_ahead_of_parsing() {
    let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
    assert_eq!(
        colour_flag(&words(&["--color", "never"])),
        Some(ColorWhen::Never)
    );
    assert_eq!(
        colour_flag(&words(&["x", "--color=always"])),
        Some(ColorWhen::Always)
    );
    assert_eq!(colour_flag(&words(&["--", "--color=always"])), None);
}

#[test]
fn the_command_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn memory_and_init_are_commands_only_when_the_next_word_says_so() {
    assert!(matches!(
        ok(&["memory", "list"]).command,
        Some(Command::Memory(MemoryArgs {
            command: Some(memory::MemoryCommand::List { json: false }),
            ..
        }))
    ));
    let prompt = ok(&["memory", "leaks", "in", "the", "parser"]);
    assert_eq!(prompt.prompt, ["memory", "leaks", "in", "the", "parser"]);
    assert!(prompt.command.is_none());
    let with_flag = ok(&["--yolo", "init", "the", "repo"]);
    assert_eq!(with_flag.prompt, ["init", "the", "repo"]);
    assert!(with_flag.run.yolo && with_flag.command.is_none());
    assert!(matches!(ok(&["init"]).command, Some(Command::Init(_))));
    let here = ok(&["-C", "dir", "memory", "search", "x"]);
    assert_eq!(
        here.run.directory.as_deref(),
        Some(std::path::Path::new("dir"))
    );
    let after = ok(&["memory", "-C", "dir"]);
    assert_eq!(
        after.run.directory.as_deref(),
        Some(std::path::Path::new("dir"))
    );
    for line in [
        &["--yolo", "memory", "list"][..],
        &["--yolo", "init"],
        &["memory", "--yolo"],
    ] {
        assert_eq!(parse_words(line).unwrap_err().exit_code(), 2, "{line:?}");
    }
}

#[test]
fn artifact_and_library_are_commands_only_when_the_next_word_says_so() {
    assert!(matches!(
        ok(&["artifact", "diff", "abcd", "1", "2"]).command,
        Some(Command::Artifact(ArtifactArgs {
            command: Some(artifact::ArtifactCommand::Diff {
                from: Some(1),
                to: Some(2),
                ..
            }),
            ..
        }))
    ));
    assert!(matches!(
        ok(&["library", "add", "f.md", "--name", "x.md"]).command,
        Some(Command::Library(LibraryArgs {
            command: Some(artifact::LibraryCommand::Add { .. }),
            ..
        }))
    ));
    assert!(matches!(
        ok(&["library"]).command,
        Some(Command::Library(LibraryArgs { command: None, .. }))
    ));
    let prompt = ok(&["--yolo", "library", "upgrade", "broke", "the", "build"]);
    assert_eq!(
        prompt.prompt,
        ["library", "upgrade", "broke", "the", "build"]
    );
    assert!(prompt.run.yolo && prompt.command.is_none());
    let prompt = ok(&["artifact", "of", "the", "old", "build", "--yolo"]);
    assert_eq!(prompt.prompt, ["artifact", "of", "the", "old", "build"]);
    assert!(prompt.run.yolo && prompt.command.is_none());
    for line in [
        &["--yolo", "artifact", "list"][..],
        &["artifact", "--yolo"],
        &["library", "--yolo", "list"],
    ] {
        assert_eq!(parse_words(line).unwrap_err().exit_code(), 2, "{line:?}");
    }
}
