//! The ceiling a gg session puts on a gg started by one of its commands.
//!
//! A command the agent runs can start gg again (`gg --yolo -p …`). That nested agent must not
//! run in a looser mode than its parent: every command carries [`ENV`], which names the parent's
//! approval mode, whether it was sandboxed and its network mode, and a gg that finds it takes
//! the stricter of its own settings and the parent's. (The variable is set after the scrubbed
//! environment is built, as the session tag is; `GG_*` variables of gg's own environment never
//! reach commands.)

use policies::Mode;

use crate::network::NetworkMode;

/// The variable that carries the ceiling.
pub const ENV: &str = "GG_PARENT_CEILING";

/// What the parent session allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceiling {
    pub mode: Mode,
    pub sandbox: bool,
    pub network: NetworkMode,
}

impl Ceiling {
    /// The variable's value: `mode=<mode>;sandbox=<on|off>;network=<mode>`.
    pub fn encode(&self) -> String {
        format!(
            "mode={};sandbox={};network={}",
            self.mode.as_str(),
            if self.sandbox { "on" } else { "off" },
            self.network.as_str()
        )
    }

    /// The parent's ceiling, when gg was started by a command of another gg session. A value
    /// that cannot be read is the strictest ceiling there is, not none: a command may have
    /// tampered with it.
    pub fn from_env() -> Option<Ceiling> {
        let value = std::env::var_os(ENV)?;
        Some(Ceiling::parse(&value.to_string_lossy()).unwrap_or(Ceiling::STRICTEST))
    }

    const STRICTEST: Ceiling = Ceiling {
        mode: Mode::Unattended { allow_all: false },
        sandbox: true,
        network: NetworkMode::Off,
    };

    fn parse(value: &str) -> Option<Ceiling> {
        let (mut mode, mut sandbox, mut network) = (None, None, None);
        for part in value.split(';') {
            match part.split_once('=')? {
                ("mode", m) => mode = Some(mode_named(m)?),
                ("sandbox", "on") => sandbox = Some(true),
                ("sandbox", "off") => sandbox = Some(false),
                ("network", n) => network = Some(n.parse().ok()?),
                _ => return None,
            }
        }
        Some(Ceiling {
            mode: mode?,
            sandbox: sandbox?,
            network: network?,
        })
    }

    /// The mode a nested gg runs in: its own, unless that lets more run without a person than
    /// the parent's, then the parent's.
    pub fn clamp_mode(&self, wanted: Mode) -> Mode {
        if looseness(wanted) > looseness(self.mode) {
            self.mode
        } else {
            wanted
        }
    }

    /// The network mode a nested gg runs with: never more open than the parent's.
    pub fn clamp_network(&self, wanted: NetworkMode) -> NetworkMode {
        wanted.min(self.network)
    }
}

/// The mode `Mode::as_str` names.
pub fn mode_named(name: &str) -> Option<Mode> {
    match name {
        "unattended" => Some(Mode::Unattended { allow_all: false }),
        "unattended-allow-all" => Some(Mode::Unattended { allow_all: true }),
        "remote" => Some(Mode::Remote),
        other => Mode::parse_cli(other).ok(),
    }
}

/// How much runs without a person: unattended (nothing normal) < auto, on-request (normal
/// commands asked) < never, unattended with --allow-all (normal commands run) < yolo (normal
/// commands run, dangerous ones asked at a terminal).
pub fn looseness(mode: Mode) -> u8 {
    match mode {
        Mode::Unattended { allow_all: false } => 0,
        Mode::Auto | Mode::OnRequest | Mode::Remote => 1,
        Mode::Never | Mode::Unattended { allow_all: true } => 2,
        Mode::Yolo => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tampering() {
        let c = Ceiling {
            mode: Mode::Auto,
            sandbox: true,
            network: NetworkMode::AllowList,
        };
        assert_eq!(Ceiling::parse(&c.encode()), Some(c));
        assert_eq!(Ceiling::parse("mode=yolo"), None);
        assert_eq!(Ceiling::parse("mode=root;sandbox=on;network=on"), None);
    }

    #[test]
    fn a_nested_gg_never_loosens() {
        let parent = Ceiling {
            mode: Mode::Auto,
            sandbox: false,
            network: NetworkMode::AllowList,
        };
        assert_eq!(parent.clamp_mode(Mode::Yolo), Mode::Auto);
        assert_eq!(parent.clamp_mode(Mode::Never), Mode::Auto);
        assert_eq!(parent.clamp_mode(Mode::OnRequest), Mode::OnRequest);
        assert_eq!(
            parent.clamp_mode(Mode::Unattended { allow_all: false }),
            Mode::Unattended { allow_all: false }
        );
        assert_eq!(
            parent.clamp_network(NetworkMode::On),
            NetworkMode::AllowList
        );
        assert_eq!(parent.clamp_network(NetworkMode::Off), NetworkMode::Off);
    }
}
