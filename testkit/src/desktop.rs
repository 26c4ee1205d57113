//! A desktop of a test's own, for gg's computer tools and gg-desktop's window: a real X server
//! (Xvfb) on a free display and a private session bus, each a child killed with the test.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A child killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The programs of `tools` that are not on `PATH` (each looked up with `command -v`).
pub fn missing_tools<'a>(tools: &[&'a str]) -> Vec<&'a str> {
    tools
        .iter()
        .copied()
        .filter(|tool| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect()
}

/// Xvfb on a display it picks and a private session bus; dropping it stops both.
pub struct Desktop {
    pub xvfb: Killed,
    pub bus: Killed,
    /// For `DISPLAY`, e.g. `:1`.
    pub display: String,
    /// For `DBUS_SESSION_BUS_ADDRESS`.
    pub bus_address: String,
}

impl Desktop {
    /// Starts Xvfb with one screen of `screen` (`WIDTHxHEIGHTxDEPTH`, e.g. `640x480x24`) and a
    /// session bus, and waits until both have said where they are.
    pub fn start(screen: &str) -> Desktop {
        let mut xvfb = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-screen",
                "0",
                screen,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let display = format!(":{}", first_line_of(&mut xvfb));
        let xvfb = Killed(xvfb);
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let bus_address = first_line_of(&mut bus);
        Desktop {
            xvfb,
            bus: Killed(bus),
            display,
            bus_address,
        }
    }
}

/// The first line `child` writes to its standard output, trimmed.
pub fn first_line_of(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim().to_string()
}
