//! `gg policy show`: the effective merged policy, with the source of every rule.

use std::path::PathBuf;
use std::process::ExitCode;

use policies::RuleKind;

use tools::security;

#[derive(clap::Subcommand, Debug)]
pub enum PolicyCommand {
    /// Print the effective merged policy (builtin, user, project) with each rule's source.
    Show {
        /// The working directory whose project policy applies (default: the current one).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Use this file in place of ~/.gg/policy.toml.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
    },
}

pub fn run(command: PolicyCommand) -> ExitCode {
    match command {
        PolicyCommand::Show { cwd, policy } => show(cwd, policy),
    }
}

fn show(cwd: Option<PathBuf>, user_override: Option<PathBuf>) -> ExitCode {
    let cwd = match cwd.map_or_else(std::env::current_dir, std::fs::canonicalize) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("gg policy show: working directory: {e}");
            return ExitCode::from(2);
        }
    };
    let policy = match security::load_policy(&cwd, user_override.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("gg policy show: {e}");
            return ExitCode::from(2);
        }
    };
    let user = user_override.unwrap_or_else(security::user_policy_path);
    println!("# layers, in merge order:");
    println!("#   builtin  compiled into gg (policies/default-policy.toml)");
    println!("#   user     {}", user.display());
    println!(
        "#   project  {} (may only tighten)",
        security::project_policy_path(&cwd).display()
    );
    for kind in [RuleKind::Forbidden, RuleKind::Dangerous, RuleKind::ReadOnly] {
        println!();
        println!("[{}]", kind.as_str());
        let rules: Vec<_> = policy.rules.iter().filter(|r| r.kind == kind).collect();
        if rules.is_empty() {
            println!("  (none)");
        }
        for rule in rules {
            let reason = rule
                .reason
                .as_deref()
                .map(|r| format!("  # {r}"))
                .unwrap_or_default();
            println!(
                "  {:<32} {:<8} {}{reason}",
                rule.prefix_text,
                rule.layer.as_str(),
                rule.location()
            );
        }
    }
    if !policy.ignored.is_empty() {
        println!();
        println!("[ignored]");
        for ignored in &policy.ignored {
            println!("  {ignored}");
        }
    }
    ExitCode::SUCCESS
}
