//! The `browser` section of `~/.gg/config.json`: which browser tools exist and which private
//! hosts the browser may reach. Apart from the tools themselves because the config loader and
//! the front end read it without starting a browser.

use std::path::PathBuf;

use serde::Deserialize;

use crate::network::AllowList;

/// The `browser` section of `~/.gg/config.json`. A key it does not have is warned about like any
/// other in the file (an ignored key leaves its feature at the safe default: off).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrowserConfig {
    /// The browser tools exist (when a Chromium is found). On by default.
    pub enabled: bool,
    /// The Chromium to run instead of searching `PATH`.
    pub executable: Option<PathBuf>,
    /// `browser_click`.
    pub click: bool,
    /// `browser_type`.
    #[serde(rename = "type")]
    pub type_text: bool,
    /// `browser_eval` (always dangerous).
    pub eval: bool,
    /// Private or special hosts the browser may reach without asking (`10.0.0.5`,
    /// `intranet.corp.test`, `*.corp.test`).
    pub allow_private_hosts: Vec<String>,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            enabled: true,
            executable: None,
            click: false,
            type_text: false,
            eval: false,
            allow_private_hosts: Vec::new(),
        }
    }
}

impl BrowserConfig {
    /// Checks the values (a bad host rule names the key).
    pub fn validate(&self) -> Result<(), super::BrowserError> {
        AllowList::parse(&self.allow_private_hosts)
            .map(|_| ())
            .map_err(super::BrowserError::PrivateHosts)
    }

    /// The tools this config enables, in the order the model sees them.
    pub fn tool_names(&self) -> Vec<&'static str> {
        let mut v = vec!["browser_navigate", "browser_read", "browser_screenshot"];
        if self.click {
            v.push("browser_click");
        }
        if self.type_text {
            v.push("browser_type");
        }
        if self.eval {
            v.push("browser_eval");
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_validation() {
        let c: BrowserConfig = serde_json::from_str("{}").unwrap();
        assert!(c.enabled);
        assert_eq!(
            c.tool_names(),
            vec!["browser_navigate", "browser_read", "browser_screenshot"]
        );
        let c: BrowserConfig = serde_json::from_str(
            r#"{"click": true, "eval": true, "allowPrivateHosts": ["10.0.0.5"]}"#,
        )
        .unwrap();
        assert!(c.tool_names().contains(&"browser_eval"));
        assert!(c.validate().is_ok());
        // A key the section does not have is left to config.json's loader, which warns about it
        // by name (an ignored key keeps its feature at the default: off).
        let c: BrowserConfig = serde_json::from_str(r#"{"evil": 1}"#).unwrap();
        assert_eq!(c, BrowserConfig::default());
        let c: BrowserConfig = serde_json::from_str(r#"{"allowPrivateHosts": ["*.com"]}"#).unwrap();
        assert!(c.validate().is_err());
    }
}
