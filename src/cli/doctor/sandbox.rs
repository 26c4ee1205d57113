//! The sandbox checks of `gg doctor`: what the sandbox crate's probes found, the level gg will
//! use and why, its self-test, and the helper beside the binary. Apart because they are plain
//! functions of [`SandboxFacts`], gathered once, which the unit tests build by hand.

use super::check::{Check, Status, check};

/// What the sandbox crate found here, gathered once so the checks below are plain functions of
/// it.
#[derive(Debug, Clone)]
pub(super) struct SandboxFacts {
    probe: sandbox::Probe,
    /// `bwrap --version` of the bubblewrap found.
    bwrap_version: Option<String>,
    /// The kernel's Landlock ABI, or why there is none.
    landlock_abi: Result<i64, String>,
    /// The kernel settings that allow or refuse unprivileged user namespaces.
    userns: Vec<(String, String)>,
    /// `GG_SANDBOX_BACKEND`, which forces the level of every sandboxed command.
    forced: Result<Option<sandbox::Backend>, String>,
    /// The level commands get, with the reasons stronger ones were not used.
    level: Result<(sandbox::Level, Vec<String>), String>,
    /// What the self-test found at that level (`None`: no level to test).
    unproven: Option<Vec<String>>,
    /// How many protections the self-test saw hold.
    proven: usize,
}

impl SandboxFacts {
    pub(super) fn gather() -> SandboxFacts {
        let probe = sandbox::probe();
        let bwrap_version = probe.bwrap.as_ref().ok().and_then(|info| {
            let out = std::process::Command::new(&info.path)
                .arg("--version")
                .stdin(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (!text.is_empty()).then_some(text)
        });
        #[cfg(target_os = "linux")]
        let landlock_abi = sandbox::fs_rules::kernel_abi().map_err(|e| e.to_string());
        #[cfg(not(target_os = "linux"))]
        let landlock_abi = Err("Landlock exists only on Linux".to_string());
        let userns = [
            "/proc/sys/user/max_user_namespaces",
            "/proc/sys/kernel/unprivileged_userns_clone",
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ]
        .iter()
        .filter_map(|path| {
            let value = std::fs::read_to_string(path).ok()?;
            let name = path.trim_start_matches("/proc/sys/").replace('/', ".");
            Some((name, value.trim().to_string()))
        })
        .collect();
        let forced = match std::env::var("GG_SANDBOX_BACKEND") {
            Ok(name) if !name.is_empty() => name
                .parse()
                .map(Some)
                .map_err(|e| format!("GG_SANDBOX_BACKEND: {e}")),
            _ => Ok(None),
        };
        let backend = forced
            .clone()
            .ok()
            .flatten()
            .unwrap_or(sandbox::Backend::Auto);
        let level = sandbox::level_for(backend).map_err(|e| e.to_string());
        let (unproven, proven) = match &level {
            Ok((l, _)) if *l != sandbox::Level::None && forced.is_ok() => {
                let report = sandbox::self_test::prove(backend, sandbox::self_test::unchanged);
                let holds = report
                    .lines
                    .iter()
                    .filter(|l| l.verdict == sandbox::self_test::Verdict::Holds)
                    .count();
                (Some(report.unproven()), holds)
            }
            _ => (None, 0),
        };
        SandboxFacts {
            probe,
            bwrap_version,
            landlock_abi,
            userns,
            forced,
            level,
            unproven,
            proven,
        }
    }
}

/// The sandbox's checks. `wants_sandbox`: the config turns the sandbox on for every command, so
/// no working level is a failure rather than a warning. A level forced by `GG_SANDBOX_BACKEND`
/// that does not work fails too: every confined command would fail.
pub(super) fn sandbox_checks(facts: &SandboxFacts, wants_sandbox: bool) -> Vec<Check> {
    use sandbox::{Backend, Level};
    let forced = facts.forced.clone().ok().flatten();
    let needed = |backend: Backend| {
        if forced == Some(backend) {
            Status::Fail
        } else {
            Status::Warn
        }
    };
    let mut checks = Vec::new();

    checks.push(match &facts.probe.bwrap {
        Ok(info) => {
            let version = facts.bwrap_version.as_deref().unwrap_or("version unknown");
            let userns = if info.disable_userns {
                ""
            } else {
                " (without --disable-userns: seccomp alone refuses new user namespaces)"
            };
            check(
                "bubblewrap",
                Status::Ok,
                format!("{} ({version}): works{userns}", info.path.display()),
            )
        }
        Err(e) => check("bubblewrap", needed(Backend::Bwrap), e.to_string()),
    });

    let settings = facts
        .userns
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let disabled = facts.userns.iter().any(|(k, v)| {
        (k.ends_with("max_user_namespaces") || k.ends_with("unprivileged_userns_clone")) && v == "0"
    });
    checks.push(match (&facts.probe.bwrap, disabled) {
        (Ok(_), _) => check(
            "user-namespaces",
            Status::Ok,
            format!("usable: bubblewrap made one ({settings})"),
        ),
        (Err(_), true) => check(
            "user-namespaces",
            Status::Warn,
            format!("disabled by the kernel ({settings}): bubblewrap cannot isolate"),
        ),
        (Err(sandbox::ProbeError::NotFound(_)), false) => check(
            "user-namespaces",
            Status::Skipped,
            format!("not tried without bubblewrap (kernel settings: {settings})"),
        ),
        (Err(e), false) => check(
            "user-namespaces",
            Status::Warn,
            format!("bubblewrap could not use one: {e} ({settings})"),
        ),
    });

    checks.push(match (&facts.landlock_abi, &facts.probe.landlock) {
        (Ok(abi), Ok(report)) => {
            let enforcement = report
                .split_whitespace()
                .find(|w| w.starts_with("landlock="))
                .unwrap_or("landlock=enforced");
            check(
                "landlock",
                Status::Ok,
                format!("kernel ABI {abi}; the helper's trial: {enforcement}"),
            )
        }
        (Ok(abi), Err(e)) => check(
            "landlock",
            needed(Backend::Landlock),
            format!("kernel ABI {abi}, but the helper's trial failed: {e}"),
        ),
        (Err(e), _) => check("landlock", needed(Backend::Landlock), e.clone()),
    });

    #[cfg(target_os = "linux")]
    let denied = sandbox::seccomp::deny_list(sandbox::Network::Off).len();
    #[cfg(not(target_os = "linux"))]
    let denied = 0;
    checks.push(match (&facts.probe.landlock, &facts.probe.bwrap) {
        (Ok(_), _) | (_, Ok(_)) => check(
            "seccomp",
            Status::Ok,
            format!("the helper installed its filter ({denied} system calls refused)"),
        ),
        (Err(e), _) if e.to_string().contains("seccomp") => {
            check("seccomp", Status::Warn, e.to_string())
        }
        (Err(e), _) => check(
            "seccomp",
            Status::Skipped,
            format!("not tried: the helper did not run ({e})"),
        ),
    });

    let scope = if wants_sandbox {
        "every bash command runs confined (\"sandbox\": true)"
    } else {
        "commands classified read-only run confined; --sandbox confines the rest"
    };
    let why = |reasons: &[String]| {
        if reasons.is_empty() {
            String::new()
        } else {
            format!(": {}", reasons.join("; "))
        }
    };
    let forced_note = if forced.is_some() {
        " forced by GG_SANDBOX_BACKEND"
    } else {
        ""
    };
    checks.push(match (&facts.forced, &facts.level) {
        (Err(e), _) => check(
            "sandbox-level",
            Status::Fail,
            format!("{e}: every sandboxed command fails"),
        ),
        (Ok(_), Err(e)) => check("sandbox-level", Status::Fail, e.clone()),
        (Ok(_), Ok((Level::None, reasons))) => check(
            "sandbox-level",
            if wants_sandbox || forced.is_some_and(|b| b != Backend::None) {
                Status::Fail
            } else {
                Status::Warn
            },
            format!("none{forced_note}: commands run unconfined{}", why(reasons)),
        ),
        (Ok(_), Ok((level, reasons))) => check(
            "sandbox-level",
            Status::Ok,
            format!("{level}{forced_note}{}; {scope}", why(reasons)),
        ),
    });

    checks.push(match &facts.unproven {
        None => check("sandbox-self-test", Status::Skipped, "no level to test"),
        Some(unproven) if unproven.is_empty() => check(
            "sandbox-self-test",
            Status::Ok,
            format!(
                "{} protections proven with canaries, none fails (gg sandbox --self-test shows \
                 the table)",
                facts.proven
            ),
        ),
        Some(unproven) => check(
            "sandbox-self-test",
            if wants_sandbox {
                Status::Fail
            } else {
                Status::Warn
            },
            format!(
                "{}; without a person to decide, no confined command runs (gg sandbox \
                 --self-test)",
                unproven.join("; ")
            ),
        ),
    });
    checks
}

/// `gg-sandbox-helper` beside this binary, as the sandbox finds it.
pub(super) fn helper_check() -> Check {
    #[cfg(target_os = "linux")]
    {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| std::fs::canonicalize(exe).ok())
            .and_then(|exe| exe.parent().map(|d| d.join(sandbox::HELPER_BINARY)));
        match (sandbox::helper_image(), beside) {
            (Ok(image), _) if image.separate => check(
                "helper",
                Status::Ok,
                format!("{} (this build)", image.path.display()),
            ),
            (Ok(_), _) if std::env::var_os(sandbox::SELF_HELPER_ENV).is_some() => check(
                "helper",
                Status::Ok,
                format!(
                    "{} is set: gg itself serves as the helper",
                    sandbox::SELF_HELPER_ENV
                ),
            ),
            (Ok(_), Some(beside)) if beside.exists() => check(
                "helper",
                Status::Warn,
                format!(
                    "{} is not of this build, so gg itself serves as the helper (slower to start \
                     each sandboxed command); install gg and the helper together",
                    beside.display()
                ),
            ),
            (Ok(_), beside) => check(
                "helper",
                Status::Warn,
                format!(
                    "{} not found, so gg itself serves as the helper (slower to start each \
                     sandboxed command); `cargo install --path .` installs it beside gg",
                    beside.map_or_else(
                        || sandbox::HELPER_BINARY.to_string(),
                        |p| p.display().to_string()
                    )
                ),
            ),
            (Err(e), _) => check("helper", Status::Warn, e.to_string()),
        }
    }
    #[cfg(not(target_os = "linux"))]
    check("helper", Status::Skipped, "used on Linux only")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox::{Backend, Level, Probe, ProbeError};

    fn facts(bwrap: bool, landlock: bool) -> SandboxFacts {
        let level = match (bwrap, landlock) {
            (true, _) => (Level::Bwrap, Vec::new()),
            (false, true) => (Level::Landlock, vec!["bwrap not found".to_string()]),
            (false, false) => (Level::None, vec!["bwrap not found".to_string()]),
        };
        SandboxFacts {
            probe: Probe {
                bwrap: if bwrap {
                    Ok(sandbox::bwrap::BwrapInfo {
                        path: "/usr/bin/bwrap".into(),
                        disable_userns: true,
                    })
                } else {
                    Err(ProbeError::NotFound("bwrap not found".into()))
                },
                landlock: if landlock {
                    Ok("gg-sandbox-helper-ok landlock=Full abi=6".into())
                } else {
                    Err(ProbeError::Kernel(
                        "Landlock not supported by this kernel".into(),
                    ))
                },
                seatbelt: Err(ProbeError::Platform("not macOS")),
            },
            bwrap_version: bwrap.then(|| "bubblewrap 0.8.0".to_string()),
            landlock_abi: if landlock {
                Ok(6)
            } else {
                Err("Landlock not supported by this kernel".into())
            },
            userns: vec![("user.max_user_namespaces".into(), "100".into())],
            forced: Ok(None),
            unproven: (level.0 != Level::None).then(Vec::new),
            level: Ok(level),
            proven: 20,
        }
    }

    fn status_of(checks: &[Check], name: &str) -> Status {
        checks
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.status)
            .unwrap()
    }

    #[test]
    fn no_level_fails_only_when_the_config_asks_for_the_sandbox() {
        let none = facts(false, false);
        assert_eq!(
            status_of(&sandbox_checks(&none, false), "sandbox-level"),
            Status::Warn
        );
        assert_eq!(
            status_of(&sandbox_checks(&none, true), "sandbox-level"),
            Status::Fail
        );
        let landlock = facts(false, true);
        let checks = sandbox_checks(&landlock, true);
        assert_eq!(status_of(&checks, "sandbox-level"), Status::Ok);
        assert_eq!(status_of(&checks, "bubblewrap"), Status::Warn);
        assert_eq!(status_of(&checks, "user-namespaces"), Status::Skipped);
        assert_eq!(status_of(&checks, "seccomp"), Status::Ok);
    }

    #[test]
    fn a_forced_level_that_does_not_work_fails() {
        let mut f = facts(false, true);
        f.forced = Ok(Some(Backend::Bwrap));
        f.level = Err("sandbox backend bwrap is unavailable: bwrap not found".into());
        f.unproven = None;
        let checks = sandbox_checks(&f, false);
        assert_eq!(status_of(&checks, "bubblewrap"), Status::Fail);
        assert_eq!(status_of(&checks, "sandbox-level"), Status::Fail);
        f.forced = Err("GG_SANDBOX_BACKEND: unknown sandbox backend \"x\"".into());
        assert_eq!(
            status_of(&sandbox_checks(&f, false), "sandbox-level"),
            Status::Fail
        );
    }

    #[test]
    fn a_protection_that_does_not_hold_warns_or_fails() {
        let mut f = facts(true, true);
        f.unproven = Some(vec!["deny-read: does not hold".into()]);
        assert_eq!(
            status_of(&sandbox_checks(&f, false), "sandbox-self-test"),
            Status::Warn
        );
        assert_eq!(
            status_of(&sandbox_checks(&f, true), "sandbox-self-test"),
            Status::Fail
        );
    }
}
