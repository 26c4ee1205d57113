//! Taking ownership of a descriptor a parent left open across `execve` on purpose.
//!
//! gg re-executes itself at start-up to hand secrets over through a sealed memfd (see
//! `gg::secrets`); the new image learns the descriptor's number from its own argument list and
//! must own it to read and close it. Turning a number into an owned descriptor is the one unsafe
//! step, so it lives here with the crate's other unsafe code.

use std::os::fd::OwnedFd;

/// Takes ownership of the open descriptor `fd` (above 2), or `None` when no such descriptor is
/// open. Call it once, at the start of `main`, before anything else could own that number.
pub fn take_inherited_fd(fd: i32) -> Option<OwnedFd> {
    if fd <= 2 {
        return None;
    }
    // SAFETY: F_GETFD has no memory arguments; it only tells whether the number is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return None;
    }
    // SAFETY: the descriptor is open (checked above), and at the start of main no Rust object
    // owns a descriptor above 2 (std opens none before main), so this is its only owner.
    Some(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}
