//! ggd's hooks for its own tests, compiled only with the `test-hooks` cargo feature (the test
//! command enables it; `cargo install` does not), so a release build cannot be made to use them
//! whatever its environment says. Apart from the handler and the runs, which both call them, so
//! that neither imports the other for a test's sake.

/// Panics on purpose, for the tests of panic containment.
#[allow(clippy::panic)]
pub(crate) fn panic_on_purpose(what: &str) -> ! {
    panic!("{what}")
}
