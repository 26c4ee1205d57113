//! Decoders and decompressors: read-only themselves, but what they print is obfuscated content
//! that must not reach a shell (`base64 -d | sh`).

use super::{Outcome, ReadOnly, check_write_target, long_is, operands, short_has};
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let outcome = match prog {
        "base64" | "base32" | "basenc" => decoder(cmd, |a| {
            a.text == "-d"
                || a.text == "-D"
                || long_is(&a.text, "--decode")
                || short_has(&a.text, 'd')
        }),
        "rev" => decoder(cmd, |_| true),
        "zcat" | "bzcat" | "xzcat" | "zstdcat" | "lz4cat" => decoder(cmd, |_| true),
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

fn xxd(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let decode =
        super::options(args).any(|a| short_has(&a.text, 'r') || long_is(&a.text, "--revert"));
    let ops = operands(args);
    let mut out = Outcome::read_only();
    if ops.len() >= 2 {
        let target = ops[1].clone();
        check_write_target(w, &target, "xxd", target.span);
        out.read_only = ReadOnly::No {
            rule: RuleId::ReadonlyFlagWrites,
            message: "\"xxd IN OUT\" writes OUT".into(),
        };
    }
    out.with_flow(Flow {
        decode,
        ..Flow::default()
    })
}
