//! Unit tests of the known configuration keys: each comes from its section's own type.

use super::*;
use config_keys::fields_of;
use tools::browser::BrowserConfig;

fn segments(path: &str) -> Vec<String> {
    path.split('.').map(str::to_string).collect()
}

#[test]
fn the_known_keys_come_from_the_sections_themselves() {
    assert!(fields_of::<MemoryConfig>().contains(&"enabled"));
    assert!(fields_of::<MemoryConfig>().contains(&"maxPromptTokens"));
    assert!(fields_of::<ProviderEntry>().contains(&"baseURL"));
    assert!(fields_of::<RawConfig>().contains(&"allowDomains"));
    assert!(fields_of::<BrowserConfig>().contains(&"allowPrivateHosts"));
}

#[test]
fn a_typo_gets_the_nearest_key_at_its_own_place() {
    for (typo, nearest) in [
        ("memory.enabeld", "memory.enabled"),
        ("memroy", "memory"),
        ("context.maxPromptToken", "context.maxPromptTokens"),
        ("providers.local.baseUrl", "providers.local.baseURL"),
        (
            "providers.local.compat.noStreamUsge",
            "providers.local.compat.noStreamUsage",
        ),
        ("kb.embeddings.modle", "kb.embeddings.model"),
        ("browser.evals", "browser.eval"),
        ("allowDomain", "allowDomains"),
        ("library.dri", "library.dir"),
        ("connectors.google.clientID", "connectors.google.clientId"),
        ("tools.gogle", "tools.google"),
    ] {
        let found = unknown_key(&segments(typo));
        assert_eq!(found.path, typo);
        assert_eq!(found.nearest.as_deref(), Some(nearest), "{typo}");
    }
}

#[test]
fn nothing_alike_means_no_suggestion() {
    let found = unknown_key(&segments("memory.zzzz"));
    assert_eq!(found.nearest, None);
    assert_eq!(found.to_string(), "unknown key memory.zzzz (ignored)");
    // Under a place that is not a section there is nothing to compare with.
    assert_eq!(unknown_key(&segments("sandbox.on")).nearest, None);
}

#[test]
fn google_endpoints_must_be_https_or_loopback() {
    let c = Config::parse(
        br#"{"tools": {"google": true}, "connectors": {"google": {"clientId": "id",
            "tokenUrl": "http://127.0.0.1:9/token"}}}"#,
        std::path::Path::new("config.json"),
    )
    .unwrap();
    assert!(c.tools.google);
    assert_eq!(c.connectors.google.client_id.as_deref(), Some("id"));
    let error = Config::parse(
        br#"{"connectors": {"google": {"apiBase": "http://example.com"}}}"#,
        std::path::Path::new("config.json"),
    )
    .unwrap_err();
    assert!(error.contains("connectors.google.apiBase"), "{error}");
    assert!(error.contains("plain HTTP"), "{error}");
}
