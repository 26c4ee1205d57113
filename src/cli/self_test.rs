//! `gg sandbox --self-test`: the table of every protection the resource policy declares, proven
//! at each Linux level available here by `sandbox::self_test` (a canary tried for real, the host
//! checked afterwards). Sessions prove the level they use the same way before their first
//! command; this command shows every level and never answers from the cache.

use std::process::ExitCode;

use sandbox::self_test::{Verdict, prove, unchanged};
use sandbox::{Backend, Level};

/// Runs every probe at every available level and prints the table; exit 1 when a protection
/// does not hold at a level that runs, 0 otherwise.
pub fn run() -> ExitCode {
    let mut failed = false;
    println!("LEVEL\tPROTECTION\tRESULT");
    for (name, backend) in [("bwrap", Backend::Bwrap), ("landlock", Backend::Landlock)] {
        let report = prove(backend, unchanged);
        if report.level == Level::None {
            println!("{name}\t(every protection)\tnot run: the level is not available here");
            continue;
        }
        for line in &report.lines {
            let result = match &line.verdict {
                Verdict::Holds => "holds".to_string(),
                Verdict::CoveredElsewhere(why) => {
                    format!("not by the kernel at this level: {why}")
                }
                Verdict::NotDeclared => "not declared at this level".to_string(),
                Verdict::Fails(why) => {
                    failed = true;
                    if why.is_empty() {
                        "FAILS".to_string()
                    } else {
                        format!("FAILS ({why})")
                    }
                }
                Verdict::NotRun(why) => format!("not run: {why}"),
                Verdict::Untestable(program) => {
                    format!("untestable here: {program} is not installed")
                }
            };
            println!("{name}\t{}\t{result}", line.protection);
        }
    }
    if failed {
        eprintln!("gg sandbox --self-test: a protection does not hold here (FAILS above)");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
