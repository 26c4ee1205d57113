//! Decoders and decompressors: read-only themselves, but what they print is obfuscated content
//! that must not reach a shell (`base64 -d | sh`).

use super::{Outcome, ReadOnly, check_write_target, long_is, short_has};
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let outcome = match prog {
        "base64" | "base32" | "basenc" => {
            let out = decoder(cmd, |a| {
                a.text == "-d"
                    || a.text == "-D"
                    || long_is(&a.text, "--decode")
                    || short_has(&a.text, 'd')
            });
            encoder_options(w, cmd, prog, out)
        }
        "rev" => decoder(cmd, |_| true),
        "zcat" | "bzcat" | "xzcat" | "zstdcat" | "lz4cat" => {
            let out = decoder(cmd, |_| true);
            cat_options(w, cmd, prog, out)
        }
        "xxd" => xxd(w, cmd),
        "uudecode" | "gunzip" | "bunzip2" | "unxz" | "openssl" | "gpg" => {
            let flow = Flow {
                decode: true,
                ..Flow::default()
            };
            Outcome::not(
                RuleId::ReadonlyNotAllowListed,
                format!("\"{prog}\" is not on the read-only list"),
            )
            .with_flow(flow)
        }
        _ => return None,
    };
    Some(outcome)
}

fn decoder(cmd: &Cmd, decodes: impl Fn(&Word) -> bool) -> Outcome {
    let decode = super::options(&cmd.argv[1..]).any(decodes)
        || cmd.argv[0].text.ends_with("cat")
        || cmd.argv[0].text == "rev";
    Outcome::read_only().with_flow(Flow {
        decode,
        ..Flow::default()
    })
}

/// base64, base32, basenc: the GNU and BSD options; `-o`/`--output` (BSD) writes a file, any
/// option outside the table is not read-only.
fn encoder_options(w: &mut Walker, cmd: &Cmd, prog: &str, mut out: Outcome) -> Outcome {
    use super::args::{Item, Spec, getopt};
    let spec = Spec {
        short_flags: "dDih",
        short_value: "wbo",
        long_flags: &[
            "--decode",
            "--ignore-garbage",
            "--help",
            "--version",
            "--base64",
            "--base64url",
            "--base32",
            "--base32hex",
            "--base16",
            "--base2msbf",
            "--base2lsbf",
            "--z85",
        ],
        long_value: &["--wrap", "--output", "--input", "--break"],
        ..Spec::default()
    };
    for item in getopt(&cmd.argv[1..], &spec) {
        let denied = match item {
            Item::Opt { name, value } if name == "-o" || name == "--output" => {
                if let Some(target) = value.filter(|t| t.text != "-") {
                    check_write_target(w, &target, prog, target.span);
                }
                format!("\"{prog} {name}\" writes a file")
            }
            Item::Unknown(a) => format!("\"{prog} {}\" is not a known read-only option", a.text),
            _ => continue,
        };
        out.read_only = ReadOnly::No {
            rule: RuleId::ReadonlyFlagWrites,
            message: denied,
        };
        break;
    }
    out
}

/// zcat, bzcat, xzcat, zstdcat, lz4cat: `zstdcat -o FILE` (and `--output-dir-*`, `--trace FILE`)
/// write files; `--rm` deletes the input.
fn cat_options(w: &mut Walker, cmd: &Cmd, prog: &str, mut out: Outcome) -> Outcome {
    let args = &cmd.argv[1..];
    for (i, a) in args.iter().enumerate() {
        if !a.is_option() || a.text == "--" {
            continue;
        }
        let t = a.text.as_str();
        let long_writes = [
            "--output-dir-flat",
            "--output-dir-mirror",
            "--trace",
            "--rm",
        ]
        .iter()
        .any(|o| long_is(t, o));
        let output = if t.starts_with("--") {
            (long_is(t, "--output") && !t.starts_with("--output-")).then(|| {
                if t.contains('=') {
                    super::args::tail(a, t.find('=').map_or(t.len(), |p| p + 1))
                } else {
                    args.get(i + 1).cloned().unwrap_or_else(|| a.clone())
                }
            })
        } else {
            t.find('o').map(|p| {
                if p + 1 < t.len() {
                    super::args::tail(a, p + 1)
                } else {
                    args.get(i + 1).cloned().unwrap_or_else(|| a.clone())
                }
            })
        };
        if let Some(target) = &output {
            check_write_target(w, target, prog, target.span);
        }
        if output.is_some() || long_writes {
            out.read_only = ReadOnly::No {
                rule: RuleId::ReadonlyFlagWrites,
                message: format!("\"{prog} {t}\" writes or removes files"),
            };
            break;
        }
    }
    out
}

/// xxd reads its options by their first two characters (`-ps` is `-p`, `-rp` is `-r`); `-c`,
/// `-g`, `-l`, `-n`, `-o`, `-s`, `-R` take a value, attached (`-l64`) or in the next word. A
/// second operand is the output file. Any other option is not read-only.
fn xxd(w: &mut Walker, cmd: &Cmd) -> Outcome {
    const LONG_VALUE: &[&str] = &["-cols", "-groupsize", "-len", "-name", "-offset", "-seek"];
    let args = &cmd.argv[1..];
    let mut decode = false;
    let mut unknown = None;
    let mut ops = Vec::new();
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let t = a.text.as_str();
        if ended || !a.is_option() {
            ops.push(a);
            continue;
        }
        if t == "--" {
            ended = true;
            continue;
        }
        let letter = t[1..].chars().next().unwrap_or('-');
        match letter {
            'r' => decode = true,
            'a' | 'b' | 'C' | 'E' | 'e' | 'h' | 'i' | 'p' | 'u' | 'v' | 'd' => {}
            'c' | 'g' | 'l' | 'n' | 'o' | 's' | 'R' => {
                if t.len() == 2 || LONG_VALUE.contains(&t) {
                    i += 1;
                }
            }
            _ => unknown = unknown.or(Some(t.to_string())),
        }
    }
    let mut out = Outcome::read_only();
    if ops.len() >= 2 {
        let target = ops[1].clone();
        check_write_target(w, &target, "xxd", target.span);
        out.read_only = ReadOnly::No {
            rule: RuleId::ReadonlyFlagWrites,
            message: "\"xxd IN OUT\" writes OUT".into(),
        };
    } else if let Some(option) = unknown {
        out.read_only = ReadOnly::No {
            rule: RuleId::ReadonlyFlagWrites,
            message: format!("\"xxd {option}\" is not a known read-only option of xxd"),
        };
    }
    out.with_flow(Flow {
        decode,
        ..Flow::default()
    })
}
