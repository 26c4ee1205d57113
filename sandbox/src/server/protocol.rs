//! What passes between gg (the host) and the command server inside the sandbox: the server's
//! configuration, a command's request and its encoding, the exit report, and the one-byte
//! messages that carry descriptors. Both sides import this; neither imports the other.

use std::ffi::OsString;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use serde::{Deserialize, Serialize};

use crate::policy::Network;

/// Second argument of the helper that selects the command server.
pub const SERVER_ARG: &str = "--server";

/// What the server itself applies, passed as one JSON argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerConfig {
    /// Selects the seccomp socket rules (part of the key: a change restarts the server).
    pub network: Network,
    /// No bubblewrap around the server (the landlock level).
    pub standalone: bool,
    /// Inside bubblewrap with network [`Network::Proxy`]: the proxy forwarder to start, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<crate::netfwd::Forward>,
    /// Allow `socket(AF_UNIX)` although the network is isolated ([`crate::Policy::local_sockets`];
    /// bubblewrap level only).
    #[serde(default)]
    pub local_sockets: bool,
    /// The guard's server (`crate::guard`): commands on the host that keep their capabilities,
    /// under the guard's seccomp filters rather than the sandbox's. No private temp directory,
    /// no network rules; each command's Landlock plan is the guard's.
    #[serde(default)]
    pub guard: bool,
    /// Every command of this server runs read-only (the read-only sandbox of a session without
    /// `--sandbox`): the server installs the read-only filter
    /// ([`crate::seccomp::read_only_programs`]) on itself with the others, once, rather than
    /// each command after its fork. Attaching a filter costs the kernel a compile and a pass
    /// over every system call number (its cache of what is always allowed): about a quarter of
    /// a millisecond a command, measured.
    #[serde(default)]
    pub read_only: bool,
}

/// One command, as the server receives it.
#[cfg(target_os = "linux")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub cwd: PathBuf,
    pub landlock: crate::fs_rules::LandlockPlan,
    pub tmpdir: Option<PathBuf>,
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

#[cfg(target_os = "linux")]
#[derive(Serialize, Deserialize)]
struct RequestHead {
    cwd: PathBuf,
    landlock: crate::fs_rules::LandlockPlan,
    tmpdir: Option<PathBuf>,
}

/// The most a request may take (a script is at most 1 MiB; environments are small).
#[cfg(target_os = "linux")]
pub(crate) const MAX_REQUEST: usize = 16 << 20;

#[cfg(target_os = "linux")]
impl Request {
    /// `[u32 total][u32 head len][head JSON][u32 argc]([u32 len][bytes])*[u32 envc]([u32][k][u32][v])*`
    pub(crate) fn encode(&self) -> Result<Vec<u8>, String> {
        use std::os::unix::ffi::OsStrExt;
        fn put(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let head = serde_json::to_vec(&RequestHead {
            cwd: self.cwd.clone(),
            landlock: self.landlock.clone(),
            tmpdir: self.tmpdir.clone(),
        })
        .map_err(|e| format!("request encoding: {e}"))?;
        let mut body = Vec::new();
        put(&mut body, &head);
        let argv: Vec<&OsString> = std::iter::once(&self.program).chain(&self.args).collect();
        body.extend_from_slice(&(argv.len() as u32).to_le_bytes());
        for a in argv {
            put(&mut body, a.as_bytes());
        }
        body.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for (k, v) in &self.env {
            put(&mut body, k.as_bytes());
            put(&mut body, v.as_bytes());
        }
        if body.len() > MAX_REQUEST {
            return Err(format!("command too large ({} bytes)", body.len()));
        }
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// The inverse of [`Request::encode`] for the body (after the total length).
    pub(crate) fn decode(body: &[u8]) -> Option<Request> {
        use std::os::unix::ffi::OsStringExt;
        struct Reader<'a>(&'a [u8]);
        impl Reader<'_> {
            fn number(&mut self) -> Option<usize> {
                let (n, rest) = self.0.split_first_chunk::<4>()?;
                self.0 = rest;
                Some(u32::from_le_bytes(*n) as usize)
            }
            fn bytes(&mut self) -> Option<Vec<u8>> {
                let n = self.number()?;
                if n > self.0.len() {
                    return None;
                }
                let (b, rest) = self.0.split_at(n);
                self.0 = rest;
                Some(b.to_vec())
            }
        }
        let mut r = Reader(body);
        let head: RequestHead = serde_json::from_slice(&r.bytes()?).ok()?;
        let argc = r.number()?;
        let mut argv = Vec::new();
        for _ in 0..argc {
            argv.push(OsString::from_vec(r.bytes()?));
        }
        let envc = r.number()?;
        let mut env = Vec::new();
        for _ in 0..envc {
            let k = OsString::from_vec(r.bytes()?);
            let v = OsString::from_vec(r.bytes()?);
            env.push((k, v));
        }
        if !r.0.is_empty() || argv.is_empty() {
            return None;
        }
        let program = argv.remove(0);
        Some(Request {
            cwd: head.cwd,
            landlock: head.landlock,
            tmpdir: head.tmpdir,
            program,
            args: argv,
            env,
        })
    }
}

/// How a served command ended, as its server reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signalled(i32),
    /// The server stopped it because the host asked (closed the channel), or vanished
    /// without a report.
    Stopped,
}

impl Ended {
    /// Parses the server's report (`exit <wait status>`); anything else is [`Ended::Stopped`].
    pub fn parse(report: &[u8]) -> Ended {
        let status = std::str::from_utf8(report)
            .ok()
            .and_then(|t| t.trim().strip_prefix("exit "))
            .and_then(|n| n.parse::<i32>().ok());
        match status {
            Some(s) if libc::WIFEXITED(s) => Ended::Exited(libc::WEXITSTATUS(s)),
            Some(s) if libc::WIFSIGNALED(s) => Ended::Signalled(libc::WTERMSIG(s)),
            _ => Ended::Stopped,
        }
    }
}

/// Sends one byte with `fds` attached.
#[cfg(target_os = "linux")]
pub(crate) fn send_fds(sock: &impl AsRawFd, fds: &[i32]) -> std::io::Result<()> {
    let payload = [b'C'];
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let bytes = std::mem::size_of_val(fds);
    let mut control = [0u64; 16];
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(bytes as u32) } as usize;
    if space > std::mem::size_of_val(&control) {
        return Err(std::io::Error::other("too many descriptors"));
    }
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the control buffer is large enough for one header with `bytes` of data
    // (checked above) and suitably aligned (u64); CMSG_* stay inside it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast::<i32>(), fds.len());
    }
    loop {
        // SAFETY: msg points at live local buffers; MSG_NOSIGNAL turns a dead peer into EPIPE.
        let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(target_os = "linux")]
/// Receives one message; `None` at end of file (the host is gone).
pub(crate) fn recv_fds(sock: RawFd) -> std::io::Result<Option<Vec<OwnedFd>>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = [0u64; 16];
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at live local buffers.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `control`, within
    // msg_controllen; each SCM_RIGHTS payload holds whole descriptors that are now ours.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<i32>();
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<i32>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some(fds))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_garbage_is_refused() {
        let r = Request {
            cwd: "/w".into(),
            landlock: crate::fs_rules::LandlockPlan {
                read_only: vec!["/".into()],
                read_write: vec!["/w".into()],
                devices: Vec::new(),
                devices_only: None,
                own_terminals: Vec::new(),
                deny_tcp: true,
                connect_tcp: Vec::new(),
                scoped: true,
                signals_scoped: false,
                deny_read: vec!["/root/.ssh".into()],
                no_sockets: false,
                split_writable: false,
                keep: Vec::new(),
            },
            tmpdir: Some("/tmp".into()),
            program: "/bin/sh".into(),
            args: vec!["-lc".into(), "echo 'a\0b'".into()],
            env: vec![("A".into(), "1".into()), ("EMPTY".into(), "".into())],
        };
        let bytes = r.encode().unwrap();
        let total = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(total, bytes.len() - 4);
        assert_eq!(Request::decode(&bytes[4..]), Some(r));
        assert_eq!(Request::decode(&bytes[4..bytes.len() - 1]), None);
        assert_eq!(Request::decode(b"garbage"), None);
    }

    #[test]
    fn reports_parse() {
        assert_eq!(Ended::parse(b"exit 0\n"), Ended::Exited(0));
        assert_eq!(Ended::parse(b"exit 512\n"), Ended::Exited(2));
        assert_eq!(Ended::parse(b"exit 9\n"), Ended::Signalled(9));
        assert_eq!(Ended::parse(b""), Ended::Stopped);
        assert_eq!(Ended::parse(b"nonsense"), Ended::Stopped);
    }
}
