//! Archivers and in-place compressors: where they write. Extracting into, or compressing in
//! place, files outside the project is dangerous (`unzip -d ~`, `gzip /etc/passwd`); listing
//! is read-only (`unzip -l`, `gzip -l`).

use super::args::split_option;
use super::escapes::program_option;
use super::{Outcome, check_write_target, operands};
use crate::ids::RuleId;
use crate::walk::{Cmd, Walker};
use crate::word::Word;

/// Compressors that replace FILE by FILE.gz (or the reverse) unless told to use stdout.
const IN_PLACE: &[&str] = &[
    "gzip",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "lzma",
    "unlzma",
    "zstd",
    "unzstd",
    "lz4",
    "lzip",
    "compress",
    "uncompress",
    "pigz",
    "pbzip2",
    "brotli",
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    let outcome = match prog {
        p if IN_PLACE.contains(&p) => in_place(w, args, p),
        "unzip" => unzip(w, args),
        "7z" | "7za" | "7zr" => seven_zip(w, args),
        "zip" => zip(w, args),
        _ => return None,
    };
    Some(outcome)
}

fn in_place(w: &mut Walker, args: &[Word], prog: &str) -> Outcome {
    let mut stdout = false;
    let mut listing = false;
    let mut output = None;
    let mut i = 0;
    while i < args.len() {
        if !args[i].is_option() || args[i].text == "--" {
            i += 1;
            continue;
        }
        let (parsed, used) = split_option(args, i, &["-o", "-S", "--suffix", "--output", "-T"]);
        for opt in parsed {
            match opt.name.as_str() {
                "-c" | "--stdout" | "--to-stdout" => stdout = true,
                // `lz4 -l` compresses in the legacy format, `pbzip2 -l` sets a load limit.
                "-l" if matches!(prog, "lz4" | "pbzip2") => {}
                "-l" | "--list" | "-t" | "--test" => listing = true,
                "-o" | "--output" => output = opt.value,
                _ => {}
            }
        }
        i += used;
    }
    if let Some(out) = &output {
        check_write_target(w, out, prog, out.span);
    }
    let files = operands(args);
    if (listing || stdout) && output.is_none() {
        return Outcome::read_only();
    }
    for f in files.iter().filter(|f| f.text != "-") {
        check_write_target(w, f, &format!("{prog} (in place)"), f.span);
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        format!("\"{prog}\" replaces files"),
    )
}

fn unzip(w: &mut Walker, args: &[Word]) -> Outcome {
    let mut i = 0;
    while i < args.len() {
        if !args[i].is_option() {
            i += 1;
            continue;
        }
        let (parsed, used) = split_option(args, i, &["-d", "-x", "-P"]);
        for opt in parsed {
            if opt.name == "-d"
                && let Some(dir) = &opt.value
            {
                check_write_target(w, dir, "unzip -d", dir.span);
            }
        }
        i += used;
    }
    Outcome::not(RuleId::ReadonlyNotAllowListed, "\"unzip\" writes files")
}

/// `7z x -oDIR`, `7z l`.
fn seven_zip(w: &mut Walker, args: &[Word]) -> Outcome {
    let verb = args
        .iter()
        .find(|a| !a.is_option())
        .map(|a| a.text.as_str());
    if matches!(verb, Some("l" | "t" | "h" | "i")) {
        return Outcome::read_only();
    }
    for a in args {
        if let Some(dir) = a.text.strip_prefix("-o") {
            let dir = super::args::tail(a, a.text.len() - dir.len());
            check_write_target(w, &dir, "7z -o", a.span);
        }
    }
    if matches!(verb, Some("a" | "u" | "d" | "rn"))
        && let Some(archive) = args.iter().filter(|a| !a.is_option()).nth(1)
    {
        check_write_target(w, archive, "7z", archive.span);
    }
    Outcome::not(RuleId::ReadonlyNotAllowListed, "\"7z\" writes files")
}

/// `zip OUT FILES…`; `-T -TT CMD` / `--unzip-command CMD` runs a program to test the archive.
fn zip(w: &mut Walker, args: &[Word]) -> Outcome {
    let mut out = None;
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let command = if t == "-TT" || t == "--unzip-command" {
            args.get(i + 1).map(|v| v.text.clone())
        } else if let Some(v) = t.strip_prefix("-TT") {
            Some(v.trim_start_matches('=').to_string())
        } else {
            t.strip_prefix("--unzip-command=").map(str::to_string)
        };
        if let Some(c) = command {
            program_option(w, &c, a.span, RuleId::ExecToolCommand, "zip -TT");
        }
        if out.is_none()
            && !a.is_option()
            && !(i > 0
                && matches!(
                    args[i - 1].text.as_str(),
                    "-TT" | "--unzip-command" | "-b" | "-n" | "-t" | "-tt" | "-x" | "-i"
                ))
        {
            out = Some(a.clone());
        }
    }
    if let Some(archive) = &out {
        check_write_target(w, archive, "zip", archive.span);
    }
    Outcome::not(RuleId::ReadonlyNotAllowListed, "\"zip\" writes an archive")
}
