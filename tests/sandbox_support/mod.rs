//! The attack table of the sandbox tests (`tests/sandbox_escape.rs`, `network_policy.rs`,
//! `sandbox_server.rs`) and the fixtures of `testkit::sandbox` bound to this build's `gg`.

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use testkit::fixture::Bins;

use crate::support::GgBins;

pub use testkit::sandbox::{Launch, Out, python};

pub const GG: &str = GgBins::GG;

/// The host layout of `testkit::sandbox`, running this build's `gg sandbox`.
pub type Fixture = testkit::sandbox::Fixture<GgBins>;

/// Whether `level` works here (see `testkit::sandbox::usable`).
pub fn usable(level: &str) -> bool {
    testkit::sandbox::usable::<GgBins>(level)
}

/// The Linux levels that work here (see `testkit::sandbox::available_levels`).
pub fn available_levels() -> Vec<&'static str> {
    testkit::sandbox::available_levels::<GgBins>()
}

/// Host resources an attack aims at, alive during the run.
#[derive(Default)]
pub struct Host {
    pub env: Vec<(String, String)>,
    pub tcp: Option<TcpListener>,
    pub udp: Option<UdpSocket>,
    pub unix: Option<UnixListener>,
    pub process: Option<Child>,
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(p) = &mut self.process {
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

impl Host {
    fn tcp_listener(&mut self) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind tcp");
        l.set_nonblocking(true).expect("nonblocking");
        self.env.push((
            "PORT".into(),
            l.local_addr().expect("addr").port().to_string(),
        ));
        self.tcp = Some(l);
    }
    fn udp_listener(&mut self) {
        let s = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        s.set_nonblocking(true).expect("nonblocking");
        self.env.push((
            "PORT".into(),
            s.local_addr().expect("addr").port().to_string(),
        ));
        self.udp = Some(s);
    }
    fn unix_listener_at(&mut self, path: &Path, env: &str) {
        let l = UnixListener::bind(path).expect("bind unix");
        l.set_nonblocking(true).expect("nonblocking");
        self.env
            .push((env.into(), path.to_string_lossy().into_owned()));
        self.unix = Some(l);
    }
    fn abstract_listener(&mut self, name: &str) {
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract addr");
        let l = UnixListener::bind_addr(&addr).expect("bind abstract");
        l.set_nonblocking(true).expect("nonblocking");
        self.env.push(("ABSTRACT".into(), name.into()));
        self.unix = Some(l);
    }
    fn process_with_secret(&mut self) {
        let child = Command::new("sleep")
            .arg("60")
            .env("GG_TEST_SECRET", "hunter2-secret")
            .spawn()
            .expect("sleep");
        self.env.push(("HOSTPID".into(), child.id().to_string()));
        self.process = Some(child);
    }
    fn tcp_was_reached(&self) -> bool {
        self.tcp.as_ref().is_some_and(|l| l.accept().is_ok())
    }
    fn udp_was_reached(&self) -> bool {
        let mut buf = [0u8; 64];
        self.udp
            .as_ref()
            .is_some_and(|s| s.recv_from(&mut buf).is_ok())
    }
    fn unix_was_reached(&self) -> bool {
        self.unix.as_ref().is_some_and(|l| match l.accept() {
            Ok(_) => true,
            Err(e) => e.kind() != ErrorKind::WouldBlock,
        })
    }
    fn process_alive(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|p| matches!(p.try_wait(), Ok(None)))
    }
}

type Check = fn(&Fixture, &Out, &mut Host) -> Result<(), String>;

/// One attack (or positive control).
pub struct Case {
    pub id: &'static str,
    pub what: &'static str,
    pub flags: &'static [&'static str],
    pub launch: Launch,
    pub script: &'static str,
    pub setup: fn(&Fixture, &mut Host),
    pub check: Check,
    /// Why the landlock level does not stop this (documented gap), if it does not.
    pub landlock_gap: Option<&'static str>,
}

fn no_setup(_: &Fixture, _: &mut Host) {}

fn ensure(ok: bool, msg: impl Into<String>) -> Result<(), String> {
    if ok { Ok(()) } else { Err(msg.into()) }
}

fn victim_intact(fx: &Fixture) -> Result<(), String> {
    ensure(
        fx.read("o/victim").as_deref() == Some("orig\n"),
        format!("o/victim changed: {:?}", fx.read("o/victim")),
    )
}

fn no_marker(out: &Out, marker: &str) -> Result<(), String> {
    ensure(
        !out.stdout.contains(marker),
        format!("{marker} printed: {out:?}"),
    )
}

macro_rules! case {
    ($id:literal, $what:literal, $script:expr, $check:expr) => {
        Case {
            id: $id,
            what: $what,
            flags: &[],
            launch: Launch::Plain,
            script: $script,
            setup: no_setup,
            check: $check,
            landlock_gap: None,
        }
    };
}

/// The table. Scripts see `$W`, `$O`, `$HOME` (fake, with secrets), `$PY` (python3), `$U` (unique).
pub fn cases() -> Vec<Case> {
    let gap_meta = Some(
        "Landlock does not control metadata changes (chmod/utime/setxattr) by the file's owner",
    );
    let gap_carve =
        Some("no bind mounts: Landlock cannot make a path inside a writable root read-only");
    let gap_pidns = Some("no PID namespace: host processes are listed in /proc");
    let gap_dev = Some("no private /dev: host device nodes are listed (not writable)");
    let gap_unix = Some(
        "pathname Unix sockets are not covered by Landlock before ABI 9 and the network is on",
    );
    let v = vec![
        // ---- writes outside the working directory
        case!(
            "T01",
            "write into $HOME",
            "echo x > \"$HOME/pwned\"",
            |fx, _, _| ensure(!fx.exists("home/pwned"), "home/pwned created")
        ),
        case!(
            "T02",
            "append to a file outside",
            "echo x >> \"$O/victim\"",
            |fx, _, _| victim_intact(fx)
        ),
        case!(
            "T03",
            "write into /etc",
            "echo x > \"/etc/gg-sbx-$U\"",
            |fx, _, _| {
                let p = format!("/etc/gg-sbx-{}", fx.unique);
                let escaped = Path::new(&p).exists();
                let _ = std::fs::remove_file(&p);
                ensure(!escaped, format!("{p} created"))
            }
        ),
        case!(
            "T04",
            "write through a symlink",
            "ln -s \"$O/victim\" sl; echo x > sl",
            |fx, _, _| victim_intact(fx)
        ),
        case!(
            "T05",
            "write through a hard link",
            "ln \"$O/victim\" hl && echo x >> hl",
            |fx, _, _| victim_intact(fx)
        ),
        case!(
            "T06",
            "move a file out",
            "mv \"$W/file.txt\" \"$O/\"",
            |fx, _, _| {
                ensure(
                    fx.exists("w/file.txt") && !fx.exists("o/file.txt"),
                    "file.txt moved out",
                )
            }
        ),
        case!(
            "T07",
            "write via /proc/self/root",
            "echo x > \"/proc/self/root$O/f\"",
            |fx, _, _| ensure(!fx.exists("o/f"), "o/f created")
        ),
        case!(
            "T08",
            "write via .. and cd ..",
            "echo x > \"$W/../o/f\"; cd ..; echo x > o/f2",
            |fx, _, _| {
                ensure(
                    !fx.exists("o/f") && !fx.exists("o/f2"),
                    "o/f or o/f2 created",
                )
            }
        ),
        Case {
            landlock_gap: gap_meta,
            ..case!(
                "T09",
                "chmod outside",
                "chmod 777 \"$O/victim\"",
                |fx, _, _| {
                    let mode = std::fs::metadata(fx.o.join("victim"))
                        .map(|m| m.permissions().mode() & 0o777)
                        .unwrap_or(0);
                    ensure(mode == 0o644, format!("mode is {mode:o}"))
                }
            )
        },
        case!(
            "T10a",
            "chown outside",
            "chown nobody \"$O/victim\"",
            |fx, _, _| {
                use std::os::unix::fs::MetadataExt;
                let uid = std::fs::metadata(fx.o.join("victim"))
                    .map(|m| m.uid())
                    .unwrap_or(u32::MAX);
                // The owner must still be the test's user (who owns the directory).
                let me = std::fs::metadata(&fx.o)
                    .map(|m| m.uid())
                    .unwrap_or(u32::MAX - 1);
                ensure(uid == me, format!("owner changed to {uid}"))
            }
        ),
        Case {
            landlock_gap: gap_meta,
            ..case!(
                "T10b",
                "utime outside",
                "touch -d 2001-01-01 \"$O/victim\"",
                |fx, _, _| {
                    let m = std::fs::metadata(fx.o.join("victim"))
                        .and_then(|m| m.modified())
                        .map_err(|e| e.to_string())?;
                    ensure(
                        m > std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000),
                        "mtime set to 2001",
                    )
                }
            )
        },
        Case {
            landlock_gap: gap_meta,
            ..case!(
                "T11",
                "setxattr outside",
                "\"$PY\" -c 'import os; os.setxattr(os.environ[\"O\"]+\"/victim\", \"user.gg\", b\"1\"); print(\"XATTR-SET\")'",
                |_, out, _| no_marker(out, "XATTR-SET")
            )
        },
        case!(
            "T12",
            "nested user+mount namespace to unmount a carve-out",
            "\"$PY\" -c 'import ctypes,os\nlibc=ctypes.CDLL(None)\nif libc.unshare(0x10000000|0x00020000)==0:\n  print(\"UNSHARED\")\n  os.system(\"umount -l .git/config .git; git config core.fsmonitor evil\")\nelse:\n  print(\"blocked\")'",
            |fx, out, _| {
                no_marker(out, "UNSHARED")?;
                ensure(
                    !fx.read("w/.git/config")
                        .unwrap_or_default()
                        .contains("fsmonitor"),
                    ".git/config changed",
                )
            }
        ),
        case!(
            "T13",
            "unshare -U",
            "unshare -U true && echo UNSHARED",
            |_, out, _| no_marker(out, "UNSHARED")
        ),
        case!(
            "T14",
            "remount / read-write",
            "mount -o remount,rw / && touch \"/gg-sbx-$U\"",
            |fx, _, _| {
                let p = format!("/gg-sbx-{}", fx.unique);
                let escaped = Path::new(&p).exists();
                let _ = std::fs::remove_file(&p);
                ensure(!escaped, format!("{p} created"))
            }
        ),
        Case {
            landlock_gap: gap_carve,
            ..case!(
                "T15",
                "umount a read-only carve-out",
                "umount \"$W/.git/hooks\"; echo evil > \"$W/.git/hooks/pre-commit\"",
                |fx, _, _| ensure(!fx.exists("w/.git/hooks/pre-commit"), "hook written")
            )
        },
        Case {
            launch: Launch::Pty,
            ..case!(
                "T16",
                "TIOCSTI into the inherited terminal",
                "\"$PY\" -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b\"#\")' && echo INJECTED || echo blocked",
                |_, out, _| {
                    no_marker(out, "INJECTED")?;
                    ensure(
                        out.stdout.contains("blocked"),
                        format!("no verdict: {out:?}"),
                    )
                }
            )
        },
        Case {
            launch: Launch::Pty,
            ..case!(
                "T17",
                "TIOCSTI into a freshly opened /dev/tty",
                "\"$PY\" -c 'import os,fcntl,termios; fd=os.open(\"/dev/tty\", os.O_RDWR); fcntl.ioctl(fd, termios.TIOCSTI, b\"#\")' && echo INJECTED || echo blocked",
                |_, out, _| no_marker(out, "INJECTED")
            )
        },
        Case {
            setup: |_, h| h.process_with_secret(),
            ..case!(
                "T18",
                "signal a host process",
                "kill -9 \"$HOSTPID\"; kill -0 \"$HOSTPID\" && echo ALIVE-SEEN",
                |_, out, h| {
                    no_marker(out, "ALIVE-SEEN")?;
                    ensure(h.process_alive(), "host process killed")
                }
            )
        },
        Case {
            setup: |_, h| h.process_with_secret(),
            ..case!(
                "T19",
                "read a host process's environment",
                "cat \"/proc/$HOSTPID/environ\" | tr '\\0' '\\n'",
                |_, out, _| no_marker(out, "hunter2-secret")
            )
        },
        Case {
            landlock_gap: gap_pidns,
            ..case!(
                "T20",
                "enumerate host processes",
                "ls /proc | grep -c '^[0-9]'",
                |_, out, _| {
                    let n: usize = out
                        .stdout
                        .trim()
                        .parse()
                        .map_err(|_| format!("bad count {out:?}"))?;
                    ensure(n < 10, format!("{n} processes visible"))
                }
            )
        },
        Case {
            setup: |_, h| h.process_with_secret(),
            ..case!(
                "T21",
                "ptrace-attach a host process",
                "\"$PY\" -c 'import ctypes,os; libc=ctypes.CDLL(None); print(\"ATTACHED\" if libc.ptrace(16, int(os.environ[\"HOSTPID\"]), 0, 0)==0 else \"blocked\")'",
                |_, out, _| no_marker(out, "ATTACHED")
            )
        },
        // ---- network off
        Case {
            flags: &["--network", "off"],
            setup: |_, h| h.tcp_listener(),
            ..case!(
                "T22",
                "TCP to a host listener, network off",
                "\"$PY\" -c 'import socket,os; s=socket.create_connection((\"127.0.0.1\", int(os.environ[\"PORT\"])), 2); print(\"CONNECTED\")'",
                |_, out, h| {
                    no_marker(out, "CONNECTED")?;
                    ensure(!h.tcp_was_reached(), "host listener reached")
                }
            )
        },
        Case {
            flags: &["--network", "off"],
            setup: |_, h| h.udp_listener(),
            ..case!(
                "T23",
                "UDP to a host listener and DNS, network off",
                "\"$PY\" -c 'import socket,os; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"127.0.0.1\", int(os.environ[\"PORT\"]))); print(\"SENT\")'; getent hosts example.com && echo RESOLVED",
                |_, out, h| {
                    no_marker(out, "SENT")?;
                    no_marker(out, "RESOLVED")?;
                    ensure(!h.udp_was_reached(), "host UDP listener reached")
                }
            )
        },
        Case {
            flags: &["--network", "off"],
            ..case!(
                "T24",
                "netlink and raw sockets, network off",
                "\"$PY\" -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print(\"NETLINK\")'; \"$PY\" -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1); print(\"RAW\")'",
                |_, out, _| {
                    no_marker(out, "NETLINK")?;
                    no_marker(out, "RAW")
                }
            )
        },
        Case {
            flags: &["--network", "off"],
            setup: |fx, h| h.unix_listener_at(&fx.o.join("host.sock"), "SOCK"),
            ..case!(
                "T25",
                "connect to a host Unix socket outside W, network off",
                "\"$PY\" -c 'import socket,os; s=socket.socket(socket.AF_UNIX); s.connect(os.environ[\"SOCK\"]); print(\"CONNECTED\")'",
                |_, out, h| {
                    no_marker(out, "CONNECTED")?;
                    ensure(!h.unix_was_reached(), "host socket reached")
                }
            )
        },
        Case {
            flags: &["--network", "off"],
            setup: |fx, h| h.abstract_listener(&format!("gg-sbx-{}", fx.unique)),
            ..case!(
                "T26",
                "connect to a host abstract socket, network off",
                "\"$PY\" -c 'import socket,os; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0\"+os.environ[\"ABSTRACT\"]); print(\"CONNECTED\")'",
                |_, out, h| {
                    no_marker(out, "CONNECTED")?;
                    ensure(!h.unix_was_reached(), "host socket reached")
                }
            )
        },
        Case {
            setup: |fx, h| h.abstract_listener(&format!("gg-sbx-on-{}", fx.unique)),
            ..case!(
                "T26b",
                "connect to a host abstract socket, network on",
                "\"$PY\" -c 'import socket,os; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0\"+os.environ[\"ABSTRACT\"]); print(\"CONNECTED\")'",
                |_, out, h| {
                    no_marker(out, "CONNECTED")?;
                    ensure(!h.unix_was_reached(), "host socket reached")
                }
            )
        },
        Case {
            landlock_gap: gap_unix,
            // gg gets the socket as SSH_AUTH_SOCK (and keeps it from children); the attack is
            // told where it is through another name, so the check cannot pass vacuously.
            setup: |fx, h| {
                let sock = fx.o.join("agent.sock");
                h.unix_listener_at(&sock, "SSH_AUTH_SOCK");
                h.env
                    .push(("AGENT_SOCK".into(), sock.to_string_lossy().into_owned()));
            },
            ..case!(
                "T27",
                "reach the ssh agent socket (network on)",
                "\"$PY\" -c 'import socket,os; s=socket.socket(socket.AF_UNIX); s.connect(os.environ[\"AGENT_SOCK\"]); print(\"CONNECTED\")'",
                |_, out, h| {
                    no_marker(out, "CONNECTED")?;
                    ensure(!h.unix_was_reached(), "agent socket reached")
                }
            )
        },
        // ---- deny-read and carve-outs
        // Landlock hides these too: read is granted around them, not on the tree above.
        case!(
            "T28",
            "read ~/.ssh, ~/.aws and ~/.gg/config.json",
            "cat \"$HOME/.ssh/id_rsa\" \"$HOME/.aws/credentials\" \"$HOME/.gg/config.json\"",
            |_, out, _| no_marker(out, "SECRET")
        ),
        Case {
            landlock_gap: gap_carve,
            ..case!(
                "T29",
                "write a git hook",
                "echo evil > \"$W/.git/hooks/pre-commit\"",
                |fx, _, _| ensure(!fx.exists("w/.git/hooks/pre-commit"), "hook written")
            )
        },
        Case {
            landlock_gap: gap_carve,
            ..case!(
                "T30",
                "git config core.hooksPath / core.fsmonitor",
                "git config core.hooksPath .h; git config core.fsmonitor evil",
                |fx, _, _| {
                    let c = fx.read("w/.git/config").unwrap_or_default();
                    ensure(
                        !c.contains("hooksPath") && !c.contains("fsmonitor"),
                        ".git/config changed",
                    )
                }
            )
        },
        Case {
            landlock_gap: gap_carve,
            ..case!(
                "T31",
                "rename .git away and plant hooks",
                "mv .git .gitx && mkdir -p .git/hooks && cp -a .gitx/. .git/ && echo evil > .git/hooks/post-checkout",
                |fx, _, _| ensure(
                    !fx.exists("w/.gitx") && !fx.exists("w/.git/hooks/post-checkout"),
                    ".git renamed or hook planted"
                )
            )
        },
        Case {
            landlock_gap: gap_carve,
            ..case!(
                "T32",
                "rewrite .bashrc and .vscode/ in W",
                "echo evil >> .bashrc; echo evil > .vscode/tasks.json; echo evil >> .vscode/settings.json",
                |fx, _, _| ensure(
                    fx.read("w/.bashrc").as_deref() == Some("orig\n")
                        && !fx.exists("w/.vscode/tasks.json")
                        && fx.read("w/.vscode/settings.json").as_deref() == Some("{}\n"),
                    "carve-out changed"
                )
            )
        },
        Case {
            landlock_gap: gap_carve,
            ..case!(
                "T32b",
                "plant .gg/ in W (absent before)",
                "mkdir -p .gg/x && echo evil > .gg/config.json",
                |fx, _, _| {
                    let planted = std::fs::read_dir(fx.w.join(".gg"))
                        .map(|d| d.count())
                        .unwrap_or(0);
                    ensure(planted == 0, format!("{planted} entries planted in w/.gg"))
                }
            )
        },
        // ---- private temp
        case!(
            "T34",
            "write /tmp (private), TMPDIR works",
            "echo x > \"/tmp/gg-sbx-$U\"; echo y > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
            |fx, out, _| {
                let p = format!("/tmp/gg-sbx-{}", fx.unique);
                let leaked = Path::new(&p).exists();
                let _ = std::fs::remove_file(&p);
                ensure(!leaked, format!("{p} on host"))?;
                ensure(
                    out.stdout.contains('y'),
                    format!("TMPDIR not writable: {out:?}"),
                )
            }
        ),
        case!(
            "T35",
            "write /dev/shm (private)",
            "echo x > \"/dev/shm/gg-sbx-$U\"",
            |fx, _, _| {
                let p = format!("/dev/shm/gg-sbx-{}", fx.unique);
                let leaked = Path::new(&p).exists();
                let _ = std::fs::remove_file(&p);
                ensure(!leaked, format!("{p} on host"))
            }
        ),
        // ---- devices, kernel interfaces, privileges
        case!(
            "T36",
            "mknod a device in W",
            "mknod \"$W/null2\" c 1 3",
            |fx, _, _| ensure(!fx.exists("w/null2"), "device node created")
        ),
        Case {
            landlock_gap: gap_dev,
            ..case!(
                "T37",
                "host disks and kernel devices under /dev",
                "ls /dev",
                |_, out, _| {
                    let bad: Vec<&str> = out
                        .stdout
                        .lines()
                        .filter(|l| {
                            ["kmsg", "mem", "kvm", "fuse", "btrfs-control", "loop0"].contains(l)
                                || l.starts_with("sd")
                                || l.starts_with("vd")
                                || l.starts_with("nvme")
                        })
                        .collect();
                    ensure(bad.is_empty(), format!("visible: {bad:?}"))
                }
            )
        },
        case!(
            "T38",
            "write /proc/sys",
            "echo gg-sbx > /proc/sys/kernel/domainname",
            |_, _, _| {
                let now =
                    std::fs::read_to_string("/proc/sys/kernel/domainname").unwrap_or_default();
                if now.trim() == "gg-sbx" {
                    let _ = std::fs::write("/proc/sys/kernel/domainname", "(none)");
                    return Err("host domainname changed".into());
                }
                Ok(())
            }
        ),
        case!(
            "T39",
            "no_new_privs is set",
            "grep NoNewPrivs /proc/self/status",
            |_, out, _| ensure(out.stdout.contains("NoNewPrivs:\t1"), format!("{out:?}"))
        ),
        case!(
            "T40",
            "no capabilities, also through sudo/su",
            "grep CapEff /proc/self/status; sudo -n grep CapEff /proc/self/status; su -c 'grep CapEff /proc/self/status'",
            |_, out, _| {
                let caps: Vec<&str> = out
                    .stdout
                    .lines()
                    .filter(|l| l.starts_with("CapEff"))
                    .collect();
                ensure(
                    !caps.is_empty() && caps.iter().all(|l| l.ends_with("0000000000000000")),
                    format!("capabilities: {caps:?}"),
                )
            }
        ),
        // ---- harness-level leaks the helper closes anyway
        Case {
            launch: Launch::LeakedFds,
            ..case!(
                "T42",
                "write to a leaked fd and through a leaked directory fd",
                "echo pwn >&9; echo x > /proc/self/fd/8/viafd",
                |fx, _, _| ensure(
                    fx.read("o/leak").as_deref() == Some("") && !fx.exists("o/viafd"),
                    "leaked fd written"
                )
            )
        },
        case!(
            "T43",
            "background processes outliving the command",
            "(setsid sh -c 'sleep 1; touch \"$W/survivor\"' &); (nohup sh -c 'sleep 1; touch \"$W/survivor2\"' >/dev/null 2>&1 &); echo started",
            |fx, _, _| {
                std::thread::sleep(Duration::from_millis(2500));
                ensure(
                    !fx.exists("w/survivor") && !fx.exists("w/survivor2"),
                    "a background process survived",
                )
            }
        ),
        case!(
            "T44",
            "io_uring_setup",
            "\"$PY\" -c 'import ctypes; libc=ctypes.CDLL(None); p=ctypes.create_string_buffer(120); print(\"URING\" if libc.syscall(425, 8, p) >= 0 else \"blocked\")'",
            |_, out, _| no_marker(out, "URING")
        ),
        case!(
            "X01",
            "kernel keyring, bpf, perf_event_open, userfaultfd",
            "\"$PY\" -c 'import ctypes\nlibc=ctypes.CDLL(None, use_errno=True)\nbad=[]\nfor n,a in ((\"keyctl\",(250,0,0)),(\"bpf\",(321,0,0,0)),(\"perf\",(298,0,0,0,0,0)),(\"uffd\",(323,0))):\n  r=libc.syscall(*a)\n  if r>=0 or ctypes.get_errno()!=1: bad.append(n)\nprint(\"NOT-BLOCKED\", bad) if bad else print(\"all-blocked\")'",
            |_, out, _| ensure(out.stdout.contains("all-blocked"), format!("{out:?}"))
        ),
        case!(
            "X02",
            "x32 syscall numbers bypassing the filter (getpid | 0x40000000)",
            "\"$PY\" -c 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 + 39); print(\"SURVIVED\")'; echo \"rc=$?\"",
            |_, out, _| {
                no_marker(out, "SURVIVED")?;
                ensure(
                    out.stdout.contains("rc=159"),
                    format!("not killed by SIGSYS: {out:?}"),
                )
            }
        ),
        case!(
            "X03",
            "clone3 (flags out of the filter's sight) answers ENOSYS",
            "\"$PY\" -c 'import ctypes; libc=ctypes.CDLL(None, use_errno=True); libc.syscall(435, 0, 0); print(\"errno\", ctypes.get_errno())'",
            |_, out, _| ensure(out.stdout.contains("errno 38"), format!("{out:?}"))
        ),
        // ---- positive controls
        case!(
            "P01",
            "the working directory is writable",
            "echo ok > new.txt && mkdir -p d/e && echo ok2 > d/e/f",
            |fx, _, _| {
                ensure(
                    fx.read("w/new.txt").as_deref() == Some("ok\n")
                        && fx.read("w/d/e/f").as_deref() == Some("ok2\n"),
                    "write in W failed",
                )
            }
        ),
        case!(
            "P02",
            "cc builds and runs",
            "printf '#include <stdio.h>\\nint main(void){puts(\"built-ok\");return 0;}\\n' > h.c && cc -o h h.c && ./h",
            |_, out, _| { ensure(out.stdout.contains("built-ok"), format!("{out:?}")) }
        ),
        case!(
            "P03",
            "git commits",
            "git add file.txt && git -c user.name=t -c user.email=t@e commit -qm init && git log --oneline | wc -l",
            |_, out, _| { ensure(out.stdout.trim() == "1", format!("{out:?}")) }
        ),
        case!("P04", "cargo --version", "cargo --version", |_, out, _| {
            ensure(out.stdout.starts_with("cargo "), format!("{out:?}"))
        }),
        case!(
            "P05",
            "exit status is the command's",
            "exit 7",
            |_, out, _| ensure(out.code == Some(7), format!("{out:?}"))
        ),
        Case {
            flags: &["--network", "on"],
            setup: |_, h| h.tcp_listener(),
            ..case!(
                "P06",
                "network on: TCP to the host works",
                "\"$PY\" -c 'import socket,os; s=socket.create_connection((\"127.0.0.1\", int(os.environ[\"PORT\"])), 2); print(\"CONNECTED\")'",
                |_, out, h| ensure(
                    out.stdout.contains("CONNECTED") && h.tcp_was_reached(),
                    format!("{out:?}")
                )
            )
        },
        Case {
            flags: &["--network", "off"],
            ..case!(
                "P07",
                "local IPC (pipes, socketpair) works with network off",
                "echo piped | cat; \"$PY\" -c 'import socket; a,b=socket.socketpair(); a.send(b\"pair-ok\"); print(b.recv(9).decode())'",
                |_, out, _| ensure(
                    out.stdout.contains("piped") && out.stdout.contains("pair-ok"),
                    format!("{out:?}")
                )
            )
        },
    ];
    v
}

/// Harness items of the design table that are not the sandbox's to stop.
pub const HARNESS_ITEMS: &[(&str, &str)] = &[
    (
        "T33",
        "planted bare repository / .git pointer: the agent's own git must run with safe.bareRepository=explicit, core.fsmonitor= and core.hooksPath=/dev/null",
    ),
    (
        "T41",
        "environment secrets: the agent starts commands with an environment allow-list",
    ),
    (
        "T45",
        "fork bomb: not run on a shared machine; the harness applies timeouts and kills the tree (the landlock level kills leftovers, the bwrap level's PID namespace dies with it)",
    ),
];

/// Runs the whole table at `level`, reporting every failure at once.
pub fn run_suite(level: &str) {
    if !usable(level) {
        return;
    }
    let mut failures = Vec::new();
    let (mut passed, mut gaps) = (0, 0);
    for case in cases() {
        let fx = Fixture::new();
        let mut host = Host::default();
        (case.setup)(&fx, &mut host);
        let mut flags = vec!["--backend", level];
        flags.extend_from_slice(case.flags);
        let out = fx.gg_launch(case.launch, &flags, case.script, &host.env);
        let verdict = (case.check)(&fx, &out, &mut host);
        let gap = if level == "landlock" {
            case.landlock_gap
        } else {
            None
        };
        match (verdict, gap) {
            (Ok(()), None) => {
                passed += 1;
                println!("ok    {level} {} {}", case.id, case.what);
            }
            (Ok(()), Some(_)) => {
                gaps += 1;
                println!(
                    "gap   {level} {} {} (documented gap, stopped here anyway)",
                    case.id, case.what
                );
            }
            (Err(e), Some(why)) => {
                gaps += 1;
                println!(
                    "gap   {level} {} {}: {e} (documented: {why})",
                    case.id, case.what
                );
            }
            (Err(e), None) => {
                println!(
                    "FAIL  {level} {} {}: {e}\n      stdout: {:?}\n      stderr: {:?}",
                    case.id, case.what, out.stdout, out.stderr
                );
                failures.push(format!("{} {}: {e}", case.id, case.what));
            }
        }
    }
    for (id, why) in HARNESS_ITEMS {
        println!("n/a   {level} {id}: harness item, not a sandbox property: {why}");
    }
    println!(
        "{level}: {passed} passed, {gaps} documented gaps, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "escapes at level {level}:\n{}",
        failures.join("\n")
    );
}

/// Attack cases (not positive controls) whose check passes with `--backend none`.
pub fn unsandboxed_passes() -> Vec<&'static str> {
    let mut vacuous = Vec::new();
    for case in cases() {
        // Positive controls, and attacks that would change the host for real when unsandboxed
        // (remounting / read-write, the kernel's domain name), are not replayed bare.
        if case.id.starts_with('P') || ["T14", "T38"].contains(&case.id) {
            continue;
        }
        let fx = Fixture::new();
        let mut host = Host::default();
        (case.setup)(&fx, &mut host);
        let mut flags = vec!["--backend", "none"];
        flags.extend_from_slice(case.flags);
        let out = fx.gg_launch(case.launch, &flags, case.script, &host.env);
        if (case.check)(&fx, &out, &mut host).is_ok() {
            vacuous.push(case.id);
        }
    }
    vacuous
}
