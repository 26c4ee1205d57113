//! Network "allow-list" routing: the command has no route out except to an HTTP proxy that the
//! host runs outside the sandbox (the proxy itself, and the list it enforces, live in the host
//! program; this crate only builds the route and stays synchronous).
//!
//! * bubblewrap level: the command gets an empty network namespace (`--unshare-net`). The host
//!   proxy's Unix socket is bound into it at [`SOCKET_IN_SANDBOX`], and a small forwarder that the
//!   helper starts inside the namespace listens on `127.0.0.1:<port>` and relays each connection
//!   to that socket, so `HTTP_PROXY=http://127.0.0.1:<port>` works unchanged inside.
//! * helper-only level: no namespace, so the command reaches the host proxy on
//!   `127.0.0.1:<port>` directly; Landlock (ABI ≥ 4) allows TCP connections to that port only,
//!   and seccomp refuses every socket that is not a TCP stream (UDP, raw, netlink, Unix).
//!
//! Landlock matches ports, not addresses: at the helper-only level a command could still open a
//! TCP connection to *another* host on the proxy's port. The bubblewrap level has no such gap.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::policy::ProxyRoute;

/// Where the host socket appears inside the bubblewrap sandbox when `/tmp` is private: a path
/// that bubblewrap can always create (the private `/tmp` is a fresh tmpfs).
pub const SOCKET_IN_SANDBOX: &str = "/tmp/.gg-proxy.sock";

/// What the helper's forwarder needs (inside the namespace).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forward {
    /// The proxy socket as seen inside the sandbox.
    pub socket: PathBuf,
    /// The port to listen on at 127.0.0.1 inside the namespace.
    pub port: u16,
}

/// The socket path inside the sandbox for `route`.
pub fn socket_in_sandbox(route: &ProxyRoute, private_tmp: bool) -> PathBuf {
    if private_tmp {
        PathBuf::from(SOCKET_IN_SANDBOX)
    } else {
        route.socket.clone()
    }
}

/// bubblewrap arguments that make the host socket visible inside; they go right after the
/// private `/tmp` is mounted (before anything is bound below it).
pub fn bwrap_bind(route: &ProxyRoute, private_tmp: bool) -> Vec<std::ffi::OsString> {
    let inside = socket_in_sandbox(route, private_tmp);
    if inside == route.socket {
        // Already visible through the read-only root.
        return Vec::new();
    }
    vec![
        "--ro-bind".into(),
        route.socket.clone().into_os_string(),
        inside.into_os_string(),
    ]
}

/// The most connections the forwarder relays at once; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 256;

/// Starts the forwarder: binds `127.0.0.1:<port>` in this (namespaced, single-threaded) process
/// first, so the listener exists before the command runs, then double-forks a process that
/// relays every accepted connection to the proxy socket. The forwarder is reparented to
/// bubblewrap's init and dies with the namespace when the command ends.
#[cfg(target_os = "linux")]
pub fn start(forward: &Forward) -> Result<(), crate::error::HelperError> {
    use crate::error::HelperError;
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, forward.port))
        .map_err(|error| HelperError::Setup {
            step: "proxy forwarder: bind 127.0.0.1",
            error,
        })?;
    // SAFETY: the helper is single-threaded here (it runs first in main), so the child may run
    // ordinary Rust code after fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(HelperError::Setup {
            step: "proxy forwarder: fork",
            error: std::io::Error::last_os_error(),
        });
    }
    if pid > 0 {
        let mut status = 0;
        // SAFETY: waitpid writes into a local integer; the intermediate child exits at once.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        drop(listener);
        return Ok(());
    }
    // Intermediate child: fork the forwarder and exit, so the command is not its parent.
    // SAFETY: still single-threaded.
    let pid = unsafe { libc::fork() };
    if pid != 0 {
        // SAFETY: _exit skips destructors and atexit handlers that belong to the parent.
        unsafe { libc::_exit(0) };
    }
    detach_stdio();
    serve(listener, &forward.socket);
    // SAFETY: as above.
    unsafe { libc::_exit(0) }
}

/// The forwarder must not hold the command's stdout/stderr: whoever reads them waits for EOF.
#[cfg(target_os = "linux")]
fn detach_stdio() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..=2 {
            // SAFETY: dup2 onto the standard descriptors of this process, which owns them.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

#[cfg(target_os = "linux")]
fn serve(listener: std::net::TcpListener, socket: &Path) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(client) = stream else { continue };
        if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            // Dropping closes it: the client sees a reset instead of a hang.
            continue;
        }
        let Ok(upstream) = std::os::unix::net::UnixStream::connect(socket) else {
            continue;
        };
        active.fetch_add(1, Ordering::SeqCst);
        let active = Arc::clone(&active);
        std::thread::spawn(move || {
            relay(client, upstream);
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Copies both ways until both directions are finished, passing half-closes on.
#[cfg(target_os = "linux")]
fn relay(client: std::net::TcpStream, upstream: std::os::unix::net::UnixStream) {
    use std::net::Shutdown;
    let (Ok(mut client_r), Ok(mut upstream_w)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_r, &mut upstream_w);
        let _ = upstream_w.shutdown(Shutdown::Write);
    });
    let (mut upstream_r, mut client_w) = (upstream, client);
    let _ = std::io::copy(&mut upstream_r, &mut client_w);
    let _ = client_w.shutdown(Shutdown::Write);
    let _ = up.join();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_is_bound_into_the_private_tmp() {
        let route = ProxyRoute {
            socket: "/home/u/.gg/run/p.sock".into(),
            port: 4000,
        };
        let args = bwrap_bind(&route, true);
        assert_eq!(
            args,
            vec![
                std::ffi::OsString::from("--ro-bind"),
                "/home/u/.gg/run/p.sock".into(),
                SOCKET_IN_SANDBOX.into()
            ]
        );
        assert!(bwrap_bind(&route, false).is_empty());
        assert_eq!(socket_in_sandbox(&route, false), route.socket);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn relay_copies_both_ways_and_passes_half_close() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap();
        let path2 = path.clone();
        std::thread::spawn(move || serve(tcp, &path2));
        let echo = std::thread::spawn(move || {
            let (mut s, _) = unix.accept().unwrap();
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
            s.write_all(b"!").unwrap();
        });
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"hello").unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        assert_eq!(out, "hello!");
        echo.join().unwrap();
    }
}
