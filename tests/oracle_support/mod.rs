//! The execution oracle for the classifier: a command classified read-only must change nothing.
//!
//! Shared by `tests/classifier_oracle.rs` (bounded, deterministic) and the `oracle` fuzz target.
//! Commands are classified by the real `gg classify` and every read-only one is run by the real
//! `gg sandbox` in a throw-away tree whose payloads are harmless markers (`touch M`). After each
//! command, the work tree, the fake home and the sandbox's `/tmp` are compared with a snapshot
//! taken just before it: any difference is a false-safe.

#![allow(dead_code)] // each user of this module uses part of it

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proptest::prelude::*;

/// A throw-away tree: `work` (a git repository, the working directory), `home` (a fake HOME with
/// start-up files that leave markers), and planted configuration that runs `touch M` when a tool
/// is tricked into reading it.
pub struct Tree {
    pub base: PathBuf,
    pub work: PathBuf,
    pub home: PathBuf,
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create fixture directory");
    }
    std::fs::write(path, text).expect("write fixture file");
}

fn executable(path: &Path, text: &str) {
    write(path, text);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e.invalid")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?} in {}", dir.display());
}

impl Tree {
    /// Builds the tree below `base` (which must exist and be outside `/tmp`, so that the sandbox
    /// shows it rather than its private `/tmp`).
    pub fn new(base: &Path) -> Tree {
        let work = base.join("work");
        let home = base.join("home");
        std::fs::create_dir_all(&work).expect("work dir");
        std::fs::create_dir_all(&home).expect("home dir");
        write(&work.join("notes.txt"), "some notes\n");
        write(&work.join("n.txt"), "3\n");
        write(&work.join("src/main.rs"), "fn main() {}\n");
        // Tool configuration that runs a marker program when a tool reads it.
        executable(
            &work.join("evil.sh"),
            "#!/bin/sh\ntouch M\ncat \"$1\" 2>/dev/null\n",
        );
        write(&work.join("rgrc"), "--pre=./evil.sh\n");
        write(&work.join("evil.rc"), "touch M\n");
        write(
            &work.join("rust-toolchain.toml"),
            "[toolchain]\npath = \"./tc\"\n",
        );
        executable(&work.join("tc/bin/cargo"), "#!/bin/sh\ntouch M\n");
        executable(&work.join("tc/bin/rustc"), "#!/bin/sh\ntouch M\n");
        git(&work, &["init", "-q"]);
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "init"]);
        // A nested repository whose own config has a textconv driver: `cd sub && git log -p`.
        let sub = work.join("sub");
        write(&sub.join("f.txt"), "one\n");
        write(&sub.join(".gitattributes"), "*.txt diff=ev\n");
        git(&sub, &["init", "-q"]);
        git(&sub, &["add", "."]);
        git(&sub, &["commit", "-q", "-m", "one"]);
        write(&sub.join("f.txt"), "two\n");
        git(&sub, &["commit", "-q", "-am", "two"]);
        git(
            &sub,
            &["config", "diff.ev.textconv", "sh -c 'touch M; cat \"$0\"'"],
        );
        // Start-up files of the fake home leave a marker when a shell reads them.
        // Tool-private directories exist already, so that creating them is not a change.
        for private in [".npm", ".cache"] {
            std::fs::create_dir_all(home.join(private)).expect("home directory");
        }
        for rc in [".bashrc", ".bash_profile", ".profile", ".zshenv", ".zshrc"] {
            write(&home.join(rc), "touch \"$HOME/STARTUP_RAN\"\n");
        }
        Tree {
            base: base.to_path_buf(),
            work,
            home,
        }
    }
}

/// The verdict `gg classify` gives each command (in the tree's work directory, with its home).
pub fn classify_all(gg: &Path, tree: &Tree, commands: &[String]) -> Vec<String> {
    let mut child = Command::new(gg)
        .current_dir(&tree.work)
        .env("HOME", &tree.home)
        .env_remove("TMPDIR")
        .args(["classify", "--json", "--null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gg classify");
    let mut input = Vec::new();
    for c in commands {
        input.extend_from_slice(c.as_bytes());
        input.push(0);
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("gg classify output");
    writer
        .join()
        .expect("writer thread")
        .expect("write commands");
    assert!(
        out.status.success(),
        "gg classify failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            value["verdict"].as_str().unwrap_or("error").to_string()
        })
        .collect();
    assert_eq!(verdicts.len(), commands.len(), "one verdict per command");
    verdicts
}

/// The script run inside the sandbox: for each NUL-separated command in `$1`, snapshot the
/// work tree, the home and `/tmp`, run the command, snapshot again and report a difference.
/// Snapshots live in shell variables, so taking them writes nothing.
const RUNNER: &str = r#"
list=$1 W=$2 H=$3
snap() { find "$W" "$H" /tmp -path "$W/.git/objects" -prune -o -path "$W/sub/.git/objects" -prune -o -path "$H/.npm" -prune -o -path "$H/.cache" -prune -o -printf '%p|%y|%s|%T@|%m|%l\n' 2>/dev/null | LC_ALL=C sort; }
i=0
while IFS= read -r -d '' cmd; do
  before=$(snap)
  # Tool-private logs and caches in the home (npm writes one per run) are not an effect on the
  # user's files; markers are still seen there.
  (cd "$W" && HOME="$H" GIT_OPTIONAL_LOCKS=0 timeout -k 2 30 bash -c "$cmd" </dev/null >/dev/null 2>&1)
  rc=$?
  after=$(snap)
  if [ "$before" != "$after" ]; then
    printf 'CHANGED %d\n' "$i"
    diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep '^[<>]' | head -n 8 | sed 's/^/  /'
  fi
  [ "$rc" = 124 ] && printf 'TIMEOUT %d\n' "$i"
  i=$((i+1))
done < "$list"
printf 'DONE %d\n' "$i"
"#;

/// A command that changed something, with what changed.
#[derive(Debug, Clone)]
pub struct Change {
    pub command: String,
    pub diff: String,
}

/// Writes `commands` NUL-separated to `name` beside the tree, runs them one after the other in
/// one `gg sandbox FLAGS… -- bash runner` (see [`RUNNER`]) and returns what it printed. Panics
/// when the sandbox could not run the whole batch.
fn run_batch(gg: &Path, tree: &Tree, name: &str, flags: &[&OsStr], commands: &[String]) -> String {
    let list = tree.base.join(name);
    let runner = tree.base.join("runner.sh");
    let mut bytes = Vec::new();
    for c in commands {
        bytes.extend_from_slice(c.as_bytes());
        bytes.push(0);
    }
    std::fs::write(&list, bytes).expect("write command list");
    std::fs::write(&runner, RUNNER).expect("write runner");
    let out = Command::new(gg)
        .current_dir(&tree.work)
        .env("HOME", &tree.home)
        .arg("sandbox")
        .args(flags)
        .arg("--")
        .arg("bash")
        .arg(&runner)
        .arg(&list)
        .arg(&tree.work)
        .arg(&tree.home)
        .stdin(Stdio::null())
        .output()
        .expect("run gg sandbox");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains(&format!("DONE {}", commands.len())),
        "the sandboxed batch ({flags:?}) did not finish (status {:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `commands` one after the other in one `gg sandbox`, and returns the ones that changed
/// the tree. Panics when the sandbox could not run the batch at all.
pub fn execute_all(gg: &Path, tree: &Tree, commands: &[String]) -> Vec<Change> {
    if commands.is_empty() {
        return Vec::new();
    }
    let writable = [OsStr::new("--writable"), tree.home.as_os_str()];
    let stdout = run_batch(gg, tree, "commands.bin", &writable, commands);
    let mut changes: Vec<Change> = Vec::new();
    for line in stdout.lines() {
        if let Some(index) = line.strip_prefix("CHANGED ") {
            let index: usize = index.trim().parse().expect("index");
            changes.push(Change {
                command: commands[index].clone(),
                diff: String::new(),
            });
        } else if let Some(detail) = line.strip_prefix("  ")
            && let Some(last) = changes.last_mut()
        {
            last.diff.push_str(detail);
            last.diff.push('\n');
        }
    }
    changes
}

/// Every file and directory below `dirs` with its type, size, mode and modification time, as
/// the host sees it.
fn host_snapshot(dirs: &[&Path]) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        out.push(format!(
            "{}|{:o}|{}|{}.{}",
            path.display(),
            meta.mode(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        ));
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(&path)
        {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    out.sort();
    out
}

/// Runs `commands` as the agent runs a command classified read-only (`gg sandbox --read-only`:
/// nothing writable but a private temp directory, no network) and returns what changed on the
/// host below the work tree and the home, which must be nothing, whatever the commands do.
pub fn execute_enforced(gg: &Path, tree: &Tree, commands: &[String]) -> Vec<String> {
    // gg's own probe cache (written by gg on the host, under $HOME/.cache/gg) is filled first,
    // so the snapshots compare only what the commands could do.
    let _ = Command::new(gg)
        .current_dir(&tree.work)
        .env("HOME", &tree.home)
        .args(["sandbox", "--read-only", "--", "true"])
        .stdin(Stdio::null())
        .output();
    let before = host_snapshot(&[&tree.work, &tree.home]);
    run_batch(
        gg,
        tree,
        "commands-enforced.bin",
        &[OsStr::new("--read-only")],
        commands,
    );
    let after = host_snapshot(&[&tree.work, &tree.home]);
    let mut changed: Vec<String> = after
        .iter()
        .filter(|l| !before.contains(l))
        .map(|l| format!("> {l}"))
        .collect();
    changed.extend(
        before
            .iter()
            .filter(|l| !after.contains(l))
            .map(|l| format!("< {l}")),
    );
    changed
}

/// Classifies `commands` and executes the read-only ones; returns how many ran and the
/// false-safes. `GG_ORACLE_CLASSIFY_BIN` names another `gg` to take the verdicts from (to measure
/// an older classifier against the same oracle); the sandbox is always `gg`'s.
pub fn false_safes(gg: &Path, tree: &Tree, commands: &[String]) -> (usize, Vec<Change>) {
    let read_only = read_only_of(gg, tree, commands);
    let changes = execute_all(gg, tree, &read_only);
    (read_only.len(), changes)
}

/// The commands classified read-only (by `GG_ORACLE_CLASSIFY_BIN` when set, else `gg`).
pub fn read_only_of(gg: &Path, tree: &Tree, commands: &[String]) -> Vec<String> {
    let classifier_bin = std::env::var_os("GG_ORACLE_CLASSIFY_BIN").map(PathBuf::from);
    let verdicts = classify_all(classifier_bin.as_deref().unwrap_or(gg), tree, commands);
    commands
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| *v == "read-only")
        .map(|(c, _)| c.clone())
        .collect()
}

// ----- the grammar ------------------------------------------------------------------------------

/// Harmless payloads: each leaves a marker (or changes a file) when it runs.
fn payload() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("touch M".to_string()),
        Just("touch \"$HOME/M\"".to_string()),
        Just("touch /tmp/M".to_string()),
        Just("echo x >> notes.txt".to_string()),
        Just("rm -f n.txt".to_string()),
    ]
}

/// A substitution running the payload, in one of bash's spellings.
fn substitution() -> impl Strategy<Value = String> {
    (payload(), 0..3usize).prop_map(|(p, form)| match form {
        0 => format!("$({p})"),
        1 => format!("`{p}`"),
        _ => format!("$(eval '{p}')"),
    })
}

/// Places where bash evaluates a substitution or a variable's value.
fn evaluation(s: String) -> BoxedStrategy<String> {
    let op = prop::sample::select(vec![
        "#", "##", "%", "%%", "/", "//", "^", ",", ":-", "-", ":=", ":+", "+", ":?",
    ]);
    let operand = s.clone();
    let expansion = (op, any::<bool>()).prop_map(move |(op, set)| {
        let pre = if set { "v=abc; " } else { "" };
        let tail = if op.starts_with('/') { "/x" } else { "" };
        format!("{pre}echo \"${{v{op}{operand}{tail}}}\"")
    });
    let tainted = format!("a[{s}]");
    let uses = prop::sample::select(vec![
        "echo $((x))",
        "(( x ))",
        "echo $(( x + 1 ))",
        "[[ x -eq 1 ]]",
        "[[ $x -lt 2 ]]",
        "echo ${!x}",
        "echo ${a[x]}",
        "y=x; echo $((y))",
        "for ((i=0; i<x; i++)); do :; done",
        "echo ${s:x}",
        "test $x -eq 1",
        "[ \"$x\" -gt 0 ]",
        "printf '%d' \"$x\"",
        "let x",
        "declare -i y=x",
        "echo $[x]",
        "case 1 in $((x))) ;; esac",
    ]);
    let arith = (uses, any::<bool>()).prop_map(move |(use_, export)| {
        let assign = if export { "export x" } else { "x" };
        format!("{assign}='{tainted}'; {use_}")
    });
    let quoted = format!("'a[{}]'", s.replace('\'', ""));
    let names = prop::sample::select(vec![
        "printf -v {} x",
        "read {} < /dev/null",
        "read -a {} <<< hi",
        "test -v {}",
        "[ -v {} ]",
        "[[ -v {} ]]",
        "unset {}",
        "wait -p {}",
        "getopts ab {}",
        "declare {}",
        "mapfile -t {} < /dev/null",
    ])
    .prop_map(move |t| t.replace("{}", &quoted));
    let prompt = Just(format!("v='{}'; echo \"${{v@P}}\"", s.replace('\'', "")));
    let backticks = Just(format!(
        "echo `echo \\`{}\\``",
        s.trim_start_matches("$(").trim_end_matches(')')
    ));
    prop_oneof![expansion, arith, names, prompt, backticks].boxed()
}

/// Shell state and environment that change what a later, read-only-looking word runs.
fn state() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "set -k; cat PATH=./tc/bin notes.txt",
        "RIPGREP_CONFIG_PATH=./rgrc rg some notes.txt",
        "env RIPGREP_CONFIG_PATH=./rgrc rg some .",
        "export RIPGREP_CONFIG_PATH=./rgrc; rg notes",
        "declare -n r=RIPGREP_CONFIG_PATH; r=./rgrc; export RIPGREP_CONFIG_PATH; rg notes",
        "BASH_ENV=./evil.rc bash -c ls",
        "ENV=./evil.rc sh -i -c ls",
        "bash --rcfile ./evil.rc -i -c ls",
        "bash --init-file ./evil.rc -i -c ls",
        "bash -i -c ls",
        "bash -l -c ls",
        "bash --login -c ls",
        "PATH=./tc/bin:$PATH cargo --version",
        "cargo --version",
        "rustc --version",
        "LESSOPEN='|./evil.sh %s' less notes.txt",
        "PAGER=./evil.sh git log",
        "GIT_PAGER=./evil.sh git -p log",
        "GIT_EXTERNAL_DIFF=./evil.sh git diff HEAD~0",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=./evil.sh git -p log",
        "cd sub && git log -p",
        "cd sub; git show",
        "(cd sub && git log -p -1)",
        "git -C sub log -p",
        "pushd sub >/dev/null && git log -p",
        "shopt -s expand_aliases; alias ls='touch M'\nls",
        "trap 'touch M' EXIT",
        "IFS=x; ls",
        "x=./evil.sh; $x",
    ])
    .prop_map(str::to_string)
}

/// Parser differentials: line continuations with CR, long chains, deep nesting.
fn differential(p: String) -> BoxedStrategy<String> {
    let chains = (0..400usize, prop::sample::select(vec!["&&", "||", ";"])).prop_map({
        let p = p.clone();
        move |(n, op)| {
            let lead = if op == "||" { "false" } else { "true" };
            format!("{}{p}", format!("{lead} {op} ").repeat(n))
        }
    });
    let evals = (0..20usize).prop_map({
        let p = p.clone();
        move |n| format!("{}{p}", "eval ".repeat(n))
    });
    let cr = Just(format!("echo ok\\\r\n{p}"));
    let nested = (1..300usize).prop_map({
        let p = p.clone();
        move |n| format!("{}{p}{}", "( ".repeat(n), " )".repeat(n))
    });
    prop_oneof![chains, evals, cr, nested].boxed()
}

/// The same constructs with static, harmless operands: the classifier should let most of these
/// through as read-only, and the oracle then proves that they are.
fn benign() -> BoxedStrategy<String> {
    let n = 0..50u32;
    let arith = (
        n.clone(),
        prop::sample::select(vec![
            "echo $((x))",
            "(( x )) || true",
            "echo $(( x * 2 + 1 ))",
            "[[ $x -ge 0 ]]",
            "for ((i=0; i<x; i++)); do :; done",
            "echo ${a[x]}",
            "y=x; echo $((y))",
            "echo ${s:0:x}",
        ]),
    )
        .prop_map(|(n, use_)| format!("x={n}; s=hello; {use_}"));
    let expansion = (
        prop::sample::select(vec![
            "#h", "%o", "/l/L", "^", ",,", ":-d", ":+p", "@Q", ":1:2",
        ]),
        any::<bool>(),
    )
        .prop_map(|(op, quoted)| {
            if quoted {
                format!("v=hello; echo \"${{v{op}}}\"")
            } else {
                format!("v=hello; echo ${{v{op}}}")
            }
        });
    let names = prop::sample::select(vec![
        "printf -v out '%s' hi",
        "read -r line < notes.txt",
        "test -v HOME",
        "[[ -v HOME ]]",
        "unset out",
        "printf -v 'a[1]' x",
        "v=HOME; echo ${!v}",
        "echo ${!BASH*} >/dev/null",
        "v=hello; echo ${v@P}",
        "echo `echo \\`echo hi\\``",
        "echo `date`",
        "declare -p HOME",
        "set -e; set -o pipefail; ls",
        "LC_ALL=C sort notes.txt",
        "TZ=UTC date",
        "git log -p -1",
        "git status --short",
        "git diff HEAD",
        "git show --stat HEAD",
        "rg notes .",
        "cat notes.txt | wc -l",
        "ls sub",
        "cd sub && ls",
        "cd src; cat main.rs",
        "bash -c 'ls; echo $((1+2))'",
        "sh -c 'cat n.txt'",
        "eval 'echo hi'",
        "find . -name '*.txt' -type f",
        "grep -rn notes .",
        "head -c 10 notes.txt",
        "sed -n '1p' notes.txt",
        "awk '{print $1}' notes.txt",
    ])
    .prop_map(str::to_string);
    let differential = (
        0..300usize,
        0..12usize,
        prop::sample::select(vec!["&&", ";", "|"]),
    )
        .prop_map(|(n, depth, op)| {
            let chain = format!("true {op} ").repeat(n);
            format!("{}{chain}ls{}", "( ".repeat(depth), " )".repeat(depth))
        });
    let evals = (0..14usize).prop_map(|n| format!("{}ls", "eval ".repeat(n)));
    let cr = Just("echo ok\\\r\nls".to_string());
    prop_oneof![arith, expansion, names, differential, evals, cr].boxed()
}

/// A generated command: a construct from one of the families, sometimes after a harmless
/// read-only prefix.
pub fn command() -> BoxedStrategy<String> {
    let body = prop_oneof![
        4 => benign(),
        3 => substitution().prop_flat_map(evaluation),
        2 => state(),
        1 => payload().prop_flat_map(differential),
    ];
    let prefix = prop::sample::select(vec!["", "ls >/dev/null; ", "true && ", "echo hi | cat; "]);
    (prefix, body)
        .prop_map(|(prefix, body)| format!("{prefix}{body}"))
        .boxed()
}

/// `n` commands from `strategy`, deterministically from `seed`, with their value trees (for
/// shrinking).
pub fn generate(
    strategy: &BoxedStrategy<String>,
    seed: [u8; 32],
    n: usize,
) -> Vec<Box<dyn proptest::strategy::ValueTree<Value = String>>> {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    (0..n)
        .filter_map(|_| strategy.new_tree(&mut runner).ok())
        .map(|t| Box::new(t) as Box<dyn proptest::strategy::ValueTree<Value = String>>)
        .collect()
}

/// Shrinks a false-safe: simplifies the generated command while it is still classified
/// read-only and still changes the tree. At most `budget` candidates are run.
pub fn shrink(
    gg: &Path,
    tree: &Tree,
    value: &mut dyn proptest::strategy::ValueTree<Value = String>,
    budget: usize,
) -> String {
    let mut best = value.current();
    for _ in 0..budget {
        if !value.simplify() {
            break;
        }
        let candidate = value.current();
        let (_, changes) = false_safes(gg, tree, std::slice::from_ref(&candidate));
        if changes.is_empty() {
            if !value.complicate() {
                break;
            }
        } else {
            best = candidate;
        }
    }
    best
}
