//! `gg kb`: the knowledge bases under `~/.gg/kb` that the `kb_search` tool searches.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};

use crate::app::config::Config;

#[derive(Subcommand, Debug)]
pub enum KbCommand {
    /// Index files and directories (Markdown, text, code, HTML); re-running it re-indexes what
    /// changed and drops what was deleted. Without PATH, refreshes the knowledge base's paths.
    Add(AddArgs),
    /// List the knowledge bases.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete a knowledge base (its index only; your files are untouched).
    #[command(alias = "remove")]
    Rm { name: String },
    /// Search a knowledge base.
    Search(SearchArgs),
    /// Files, passages, sizes and settings of a knowledge base.
    Stats {
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Measure retrieval: recall@k and MRR over a JSONL file of {"query","expect"} lines
    /// (`expect`: a file path suffix or a text the passage contains).
    Eval(EvalArgs),
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// Files and directories to index.
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The knowledge base (default: kb.default in config, else "default").
    #[arg(long)]
    name: Option<String>,
    /// Never index paths matching this gitignore-style pattern (repeatable; remembered).
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// BM25 only, even when an embeddings endpoint is configured.
    #[arg(long)]
    no_embed: bool,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What to look for; several words are joined.
    #[arg(required = true, value_name = "QUERY")]
    query: Vec<String>,
    #[arg(long)]
    name: Option<String>,
    /// How many passages.
    #[arg(long = "k", short = 'k', value_name = "N", default_value_t = 5)]
    k: usize,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// JSONL: one {"query": "...", "expect": "..."} per line; '#' lines are comments.
    file: PathBuf,
    #[arg(long)]
    name: Option<String>,
    #[arg(long = "k", short = 'k', value_name = "N", default_value_t = 5)]
    k: usize,
    #[arg(long)]
    json: bool,
}

pub fn run(command: KbCommand) -> ExitCode {
    match kb_command(command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gg kb: {}", crate::display::visible(&e));
            ExitCode::from(1)
        }
    }
}

struct Context {
    store: kb::Store,
    config: Config,
}

impl Context {
    fn load() -> Result<Context, String> {
        let home = tools::security::home_dir();
        let config = Config::load(&home)?;
        Ok(Context {
            store: kb::Store::in_home(&home),
            config,
        })
    }

    fn name(&self, given: Option<String>) -> String {
        given.unwrap_or_else(|| self.config.kb.default_name().to_string())
    }

    fn embedder(&self) -> Result<Option<kb::HttpEmbedder>, String> {
        crate::agent::tools::kb::embedder(self.config.kb.embeddings()?).map_err(|e| e.to_string())
    }
}

fn kb_command(command: KbCommand) -> Result<ExitCode, String> {
    let cx = Context::load()?;
    match command {
        KbCommand::Add(args) => add(&cx, args),
        KbCommand::List { json } => list(&cx, json),
        KbCommand::Rm { name } => {
            cx.store.remove(&name).map_err(|e| e.to_string())?;
            println!("removed knowledge base {name}");
            Ok(ExitCode::SUCCESS)
        }
        KbCommand::Search(args) => search(&cx, args),
        KbCommand::Stats { name, json } => stats(&cx, name, json),
        KbCommand::Eval(args) => eval(&cx, args),
    }
}

fn add(cx: &Context, args: AddArgs) -> Result<ExitCode, String> {
    let name = cx.name(args.name);
    let embedder = if args.no_embed { None } else { cx.embedder()? };
    // Secrets are never indexed: a root that is one, or holds one, is refused or skipped, and
    // so is a file that turns out to be one when opened (a hard link to one).
    let hidden = tools::paths::DenyRead::everywhere();
    let refuse = |file: &std::fs::File| hidden.covers_open(file);
    let options = kb::AddOptions {
        excludes: args.exclude,
        embedder: embedder.as_ref().map(|e| e as &dyn kb::Embedder),
        deny_read: hidden.clone().into_paths(),
        refuse_open: Some(&refuse),
    };
    let started = Instant::now();
    let mut progress = Progress::new();
    let result = cx.store.add(&name, &args.paths, &options, &mut progress);
    progress.finish();
    let report = result.map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{name}: {} indexed, {} unchanged, {} removed, {} skipped; {} files, {} passages{}{} ({:.1}s{})",
        report.indexed,
        report.unchanged,
        report.removed,
        report.skipped,
        report.files,
        report.chunks,
        if report.rebuilt { ", rebuilt" } else { "" },
        match &embedder {
            Some(e) => format!(", embeddings: {}", kb::Embedder::model(e)),
            None => String::new(),
        },
        seconds,
        if report.bytes_indexed > 0 && seconds > 0.0 {
            format!(", {:.1} MB/s", report.bytes_indexed as f64 / 1e6 / seconds)
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn list(cx: &Context, json: bool) -> Result<ExitCode, String> {
    let all = cx.store.list().map_err(|e| e.to_string())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        println!("no knowledge bases; create one with: gg kb add PATH [--name NAME]");
    }
    let default = cx.config.kb.default_name();
    for info in all {
        let mark = if info.name == default {
            " (default)"
        } else {
            ""
        };
        match &info.problem {
            Some(problem) => println!("{}{mark}: {problem}", info.name),
            None => println!(
                "{}{mark}: {} files, {} passages, {}{}",
                info.name,
                info.files,
                info.chunks,
                info.embed_model
                    .as_deref()
                    .map_or("bm25".to_string(), |m| format!("hybrid ({m})")),
                info.roots
                    .iter()
                    .map(|r| format!(" {}", crate::display::visible_inline(&r.to_string_lossy())))
                    .collect::<String>()
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn search(cx: &Context, args: SearchArgs) -> Result<ExitCode, String> {
    if args.k == 0 {
        return Err("--k must be at least 1".to_string());
    }
    let name = cx.name(args.name);
    let kb = cx.store.open(&name).map_err(|e| e.to_string())?;
    let embedder = cx.embedder()?;
    let query = args.query.join(" ");
    let found = kb
        .search(
            &query,
            args.k,
            embedder.as_ref().map(|e| e as &dyn kb::Embedder),
        )
        .map_err(|e| e.to_string())?;
    if let Some(note) = &found.note {
        eprintln!("gg kb: {note}");
    }
    if args.json {
        let value =
            serde_json::json!({"kb": name, "query": query, "mode": found.mode, "hits": found.hits});
        println!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if found.hits.is_empty() {
        println!("no passages match");
    }
    let mut out = std::io::stdout().lock();
    for (i, hit) in found.hits.iter().enumerate() {
        let heading = if hit.heading.is_empty() {
            String::new()
        } else {
            format!("  ({})", hit.heading.join(" > "))
        };
        let _ = writeln!(
            out,
            "[{}] {}{}",
            i + 1,
            crate::display::visible_inline(&hit.location()),
            crate::display::visible_inline(&heading)
        );
        for line in hit.text.lines().filter(|l| !l.trim().is_empty()).take(6) {
            let line: String = line.chars().take(160).collect();
            let _ = writeln!(out, "    {}", crate::display::visible_inline(&line));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(cx: &Context, name: Option<String>, json: bool) -> Result<ExitCode, String> {
    let name = cx.name(name);
    let kb = cx.store.open(&name).map_err(|e| e.to_string())?;
    let stats = kb.stats(&cx.store);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&stats).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("name:        {}", stats.name);
    println!("path:        {}", stats.path.display());
    println!("format:      {}", stats.format);
    println!("files:       {}", stats.files);
    println!("passages:    {}", stats.chunks);
    println!("source size: {}", human_bytes(stats.source_bytes));
    println!("index size:  {}", human_bytes(stats.index_bytes));
    println!(
        "retrieval:   {}",
        match (&stats.embed_model, stats.embed_dim) {
            (Some(m), Some(d)) => format!("hybrid: BM25 + {m} ({d} dimensions)"),
            _ => "BM25".to_string(),
        }
    );
    for root in &stats.roots {
        println!(
            "path added:  {}",
            crate::display::visible_inline(&root.to_string_lossy())
        );
    }
    for pattern in &stats.excludes {
        println!("excluded:    {}", crate::display::visible_inline(pattern));
    }
    Ok(ExitCode::SUCCESS)
}

fn eval(cx: &Context, args: EvalArgs) -> Result<ExitCode, String> {
    if args.k == 0 {
        return Err("--k must be at least 1".to_string());
    }
    let text =
        std::fs::read_to_string(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let cases = kb::eval::parse(&text).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let name = cx.name(args.name);
    let kb = cx.store.open(&name).map_err(|e| e.to_string())?;
    let embedder = cx.embedder()?;
    let report = kb::eval::run(
        &kb,
        &cases,
        args.k,
        embedder.as_ref().map(|e| e as &dyn kb::Embedder),
    )
    .map_err(|e| e.to_string())?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for case in &report.cases {
        match case.rank {
            Some(rank) => println!(
                "PASS @{rank} {}",
                crate::display::visible_inline(&case.query)
            ),
            None => println!(
                "FAIL {} (expected {}; top: {})",
                crate::display::visible_inline(&case.query),
                crate::display::visible_inline(&case.expect),
                crate::display::visible_inline(case.top.as_deref().unwrap_or("nothing"))
            ),
        }
    }
    println!(
        "recall@{}: {}/{} ({:.1}%)  MRR@{}: {:.3}  mode: {}",
        report.k,
        report.hits,
        report.cases.len(),
        report.recall * 100.0,
        report.k,
        report.mrr,
        match report.mode {
            kb::Mode::Bm25 => "bm25",
            kb::Mode::Hybrid => "hybrid",
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// A progress bar on a terminal; otherwise one plain line per indexed, removed or skipped file
/// (unchanged files are silent, so a re-run of a big tree prints only what changed).
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines,
}

impl Progress {
    fn new() -> Progress {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} [{bar:30}] {pos}/{len} files {elapsed} {wide_msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            Progress::Bar(bar)
        } else {
            Progress::Lines
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

fn short(path: &Path) -> String {
    crate::display::visible_inline(&path.to_string_lossy()).into_owned()
}

impl kb::Progress for Progress {
    fn start(&mut self, total: usize) {
        if let Progress::Bar(bar) = self {
            bar.set_length(u64::try_from(total).unwrap_or(u64::MAX));
        }
    }

    fn file(&mut self, done: usize, path: &Path, status: &kb::FileStatus) {
        let line = match status {
            kb::FileStatus::Indexed { chunks } => {
                Some(format!("indexed {} ({chunks} passages)", short(path)))
            }
            kb::FileStatus::Removed => Some(format!("removed {}", short(path))),
            kb::FileStatus::Skipped(why) => Some(format!("skipped {}: {why}", short(path))),
            kb::FileStatus::Unchanged => None,
        };
        match self {
            Progress::Bar(bar) => {
                bar.set_position(u64::try_from(done).unwrap_or(u64::MAX));
                bar.set_message(short(path));
            }
            Progress::Lines => {
                if let Some(line) = line {
                    eprintln!("{line}");
                }
            }
        }
    }

    fn note(&mut self, message: &str) {
        match self {
            Progress::Bar(bar) => bar.println(message),
            Progress::Lines => eprintln!("{message}"),
        }
    }
}
