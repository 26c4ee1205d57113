//! `ggd install-service` / `uninstall-service`: a systemd user unit (Linux) or a launchd agent
//! (macOS) that runs the daemon in HTTP mode.

use std::path::{Path, PathBuf};

/// The platforms with a service manager we know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    MacOs,
}

impl Platform {
    pub fn current() -> Result<Platform, String> {
        match std::env::consts::OS {
            "linux" => Ok(Platform::Linux),
            "macos" => Ok(Platform::MacOs),
            other => Err(format!("install-service is not supported on {other}")),
        }
    }
}

/// A service definition to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceFile {
    pub path: PathBuf,
    pub text: String,
    /// The command the user runs to enable it.
    pub enable: String,
}

/// Where the definition lives.
pub fn service_path(platform: Platform, home: &Path) -> PathBuf {
    match platform {
        Platform::Linux => home.join(".config/systemd/user/ggd.service"),
        Platform::MacOs => home.join("Library/LaunchAgents/com.gg.ggd.plist"),
    }
}

/// Builds the definition for `ggd <daemon args>`; the current directory is injected as
/// `--cwd <dir>` right after the executable, so a later `--cwd` from the user wins.
pub fn service_file(
    platform: Platform,
    home: &Path,
    exe: &Path,
    cwd: &Path,
    args: &[String],
) -> Result<ServiceFile, String> {
    let args: &[String] = match args.first() {
        Some(first) if first == "--" => &args[1..],
        _ => args,
    };
    if !args
        .iter()
        .any(|a| a == "--http" || a.starts_with("--http="))
    {
        return Err(
            "install-service requires --http ADDR (the service runs in HTTP mode)".to_string(),
        );
    }
    let mut argv = vec![
        exe.display().to_string(),
        "--cwd".to_string(),
        cwd.display().to_string(),
    ];
    argv.extend(args.iter().cloned());
    let path = service_path(platform, home);
    Ok(match platform {
        Platform::Linux => ServiceFile {
            text: format!(
                "[Unit]\nDescription=gg daemon (ggd)\nAfter=network-online.target\nWants=network-online.target\n\n\
                 [Service]\nExecStart={}\nRestart=always\nRestartSec=5\n\n[Install]\nWantedBy=default.target\n",
                argv.iter()
                    .map(|a| systemd_quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            enable: "systemctl --user daemon-reload && systemctl --user enable --now ggd.service"
                .to_string(),
            path,
        },
        Platform::MacOs => {
            let log = crate::app::config::gg_home(home).join("ggd.log");
            let log = xml_escape(&log.display().to_string());
            let program: String = argv
                .iter()
                .map(|a| format!("    <string>{}</string>\n", xml_escape(a)))
                .collect();
            ServiceFile {
                text: format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                     <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
                     <plist version=\"1.0\">\n<dict>\n  <key>Label</key>\n  <string>com.gg.ggd</string>\n\
                     \x20 <key>ProgramArguments</key>\n  <array>\n{program}  </array>\n\
                     \x20 <key>RunAtLoad</key>\n  <true/>\n  <key>KeepAlive</key>\n  <true/>\n\
                     \x20 <key>StandardOutPath</key>\n  <string>{log}</string>\n\
                     \x20 <key>StandardErrorPath</key>\n  <string>{log}</string>\n</dict>\n</plist>\n"
                ),
                enable: format!("launchctl load -w {}", path.display()),
                path,
            }
        }
    })
}

/// systemd `ExecStart` quoting: plain words stay bare, anything else is double-quoted with `\`,
/// `"` escaped and `%` doubled (systemd expands `%` specifiers).
fn systemd_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@+".contains(&b));
    if plain {
        return arg.to_string();
    }
    let mut quoted = String::from("\"");
    for c in arg.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '$' => quoted.push_str("$$"),
            '\n' => quoted.push_str("\\n"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn systemd_unit() {
        let home = Path::new("/home/u");
        let file = service_file(
            Platform::Linux,
            home,
            Path::new("/opt/gg/ggd"),
            Path::new("/home/u/my proj"),
            &args(&["--", "--http", "127.0.0.1:7777", "--token", "a%b"]),
        )
        .unwrap();
        assert_eq!(
            file.path,
            Path::new("/home/u/.config/systemd/user/ggd.service")
        );
        assert_eq!(
            file.text,
            "[Unit]\nDescription=gg daemon (ggd)\nAfter=network-online.target\nWants=network-online.target\n\n\
             [Service]\nExecStart=/opt/gg/ggd --cwd \"/home/u/my proj\" --http 127.0.0.1:7777 --token \"a%%b\"\n\
             Restart=always\nRestartSec=5\n\n[Install]\nWantedBy=default.target\n"
        );
        assert!(
            file.enable
                .contains("systemctl --user enable --now ggd.service")
        );
    }

    #[test]
    fn launchd_plist() {
        let file = service_file(
            Platform::MacOs,
            Path::new("/Users/u"),
            Path::new("/usr/local/bin/ggd"),
            Path::new("/Users/u/p"),
            &args(&["--http=127.0.0.1:1", "--token", "<t&>"]),
        )
        .unwrap();
        assert_eq!(
            file.path,
            Path::new("/Users/u/Library/LaunchAgents/com.gg.ggd.plist")
        );
        for want in [
            "<string>/usr/local/bin/ggd</string>\n    <string>--cwd</string>\n    <string>/Users/u/p</string>\n    <string>--http=127.0.0.1:1</string>",
            "<string>&lt;t&amp;&gt;</string>",
            "<key>RunAtLoad</key>\n  <true/>",
            "<key>KeepAlive</key>\n  <true/>",
            "<string>/Users/u/.gg/ggd.log</string>",
        ] {
            assert!(
                file.text.contains(want),
                "missing {want:?} in\n{}",
                file.text
            );
        }
    }

    #[test]
    fn http_is_required() {
        let err = service_file(
            Platform::Linux,
            Path::new("/h"),
            Path::new("/g"),
            Path::new("/c"),
            &args(&["--token", "x"]),
        );
        assert!(err.unwrap_err().contains("--http"));
    }
}
