//! gg's sandbox helper as a binary of its own: applies Landlock, seccomp and the rest of a
//! command's restrictions inside the sandbox, or runs the session's command server there.
//!
//! gg and ggd start it (when it lies beside them and comes from the same build) instead of
//! re-executing themselves: it is a small image, so each start costs a fraction of theirs. It is
//! not meant to be run by hand.

fn main() -> std::process::ExitCode {
    match sandbox::helper::run_if_requested() {
        Some(code) => code,
        None => {
            eprintln!(
                "gg-sandbox-helper: gg and ggd start this program inside their sandbox; it is \
                 not meant to be run by hand"
            );
            std::process::ExitCode::from(2)
        }
    }
}
