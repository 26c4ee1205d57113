//! Connectors: the person's accounts elsewhere that gg can reach for them. One so far, Google
//! (sign-in, Gmail, Calendar): `google/`. The tools' chain adapter is `agent::tools::google`, the
//! command line `gg connect` (`cli::connect`).

pub mod google;

use serde::{Deserialize, Serialize};

/// The `"connectors"` section of config.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ConnectorsConfig {
    pub google: google::GoogleConfig,
}

impl ConnectorsConfig {
    /// Refuses endpoints gg would not send a token to (see [`google::GoogleConfig::validate`]).
    pub fn validate(&self) -> Result<(), String> {
        self.google.validate()
    }
}
