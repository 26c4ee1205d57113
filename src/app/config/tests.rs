//! Unit tests of the configuration file: parsing, selection of provider and model, and its errors.

use super::*;

fn parse(text: &str) -> Result<Config, String> {
    Config::parse(text.as_bytes(), Path::new("/h/.gg/config.json"))
}

#[test]
fn full_config_parses_and_selects() {
    let c = parse(
        r#"{"default": "local:qwen", "sandbox": true, "env": {"allow": ["GITHUB_TOKEN"]},
            "context": {"maxOutputTokens": 1000},
            "providers": {"local": {"baseURL": "http://127.0.0.1:8080/v1", "apiKey": "k",
                "models": ["qwen", "llama"], "compat": {"noStreamUsage": true}}},
            "memory": {"enabled": false}}"#,
    )
    .unwrap();
    assert!(c.sandbox);
    assert_eq!(c.context.max_output_tokens, 1000);
    assert_eq!(c.context.max_prompt_tokens, 24000);
    let s = c
        .select(Path::new("/nonexistent"), None, &Overrides::default())
        .unwrap();
    assert_eq!(s.label(), "local:qwen");
    assert_eq!(s.base_url, "http://127.0.0.1:8080/v1");
    assert!(s.compat.no_stream_usage);
    assert!(!s.images, "images are off unless the entry says so");
    assert_eq!(c.available_models(), ["local:qwen", "local:llama"]);
}

#[test]
fn images_are_on_for_a_provider_or_for_listed_models() {
    let home = Path::new("/nonexistent");
    let o = Overrides::default();
    let c = parse(
        r#"{"providers": {"a": {"models": ["m", "n"], "images": true},
                          "b": {"models": ["m", "n"], "images": ["n"]},
                          "c": {"models": ["m"], "images": false}}}"#,
    )
    .unwrap();
    let on = |sel: &str| c.select(home, Some(sel), &o).unwrap().images;
    assert!(on("a:m") && on("a:n") && on("b:n"));
    assert!(!on("b:m") && !on("c:m"));
    assert!(parse(r#"{"providers": {"a": {"images": "yes"}}}"#).is_err());
}

#[test]
fn selection_errors_use_the_reference_messages() {
    let c = parse(r#"{"providers": {"p": {"models": ["m"]}}}"#).unwrap();
    let home = Path::new("/nonexistent");
    let o = Overrides::default();
    assert_eq!(
        c.select(home, Some("nocolon"), &o).unwrap_err(),
        "model selection must use provider:model"
    );
    assert_eq!(
        c.select(home, Some("x:m"), &o).unwrap_err(),
        "unknown provider \"x\""
    );
    assert_eq!(
        c.select(home, Some("p:z"), &o).unwrap_err(),
        "unknown model \"z\" for provider \"p\""
    );
}

#[test]
fn overrides_win_and_well_known_urls_fill_in() {
    let c = parse(r#"{"providers": {"ollama": {}}}"#).unwrap();
    let o = Overrides {
        selection: Some("ollama:llama3".into()),
        api_key: Some("flag-key".into()),
        base_url: None,
    };
    let s = c.select(Path::new("/nonexistent"), None, &o).unwrap();
    assert_eq!(s.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(s.api_key, "flag-key");
}

#[test]
fn any_subset_is_valid_and_absent_keys_keep_their_defaults() {
    let defaults = Config::from_env();
    // Each section alone: the rest of the configuration is the config-less one.
    for (text, changed) in [
        (r#"{}"#, ""),
        (r#"{"memory": {"enabled": true}}"#, "memory"),
        (r#"{"context": {"tailTurns": 3}}"#, "context"),
        (r#"{"sandbox": true}"#, "sandbox"),
        (r#"{"env": {"allow": ["GITHUB_TOKEN"]}}"#, "env"),
        (r#"{"tools": {"computer": true}}"#, "tools"),
        (r#"{"artifacts": {"dir": "a"}}"#, "artifacts"),
        (r#"{"library": {"enabled": false}}"#, "library"),
        (r#"{"kb": {"tool": false}}"#, "kb"),
        (r#"{"network": "off"}"#, "network"),
        (r#"{"allowDomains": ["example.com"]}"#, "network"),
        (r#"{"browser": {"click": true}}"#, "browser"),
        (r#"{"default": "openai:gpt-4o"}"#, "default"),
    ] {
        let c = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(c.unknown_keys.is_empty(), "{text}: {:?}", c.unknown_keys);
        assert_eq!(c.providers, defaults.providers, "{text}");
        let same = |section: &str| changed != section;
        assert_eq!(same("memory"), c.memory == defaults.memory, "{text}");
        assert_eq!(same("context"), c.context == defaults.context, "{text}");
        assert_eq!(same("sandbox"), c.sandbox == defaults.sandbox, "{text}");
        assert_eq!(same("env"), c.env == defaults.env, "{text}");
        assert_eq!(same("tools"), c.tools == defaults.tools, "{text}");
        assert_eq!(
            same("artifacts"),
            c.artifacts == defaults.artifacts,
            "{text}"
        );
        assert_eq!(same("library"), c.library == defaults.library, "{text}");
        assert_eq!(same("kb"), c.kb == defaults.kb, "{text}");
        assert_eq!(same("network"), c.network == defaults.network, "{text}");
        assert_eq!(same("browser"), c.browser == defaults.browser, "{text}");
        assert_eq!(
            same("default"),
            c.default_selection == defaults.default_selection,
            "{text}"
        );
    }
    // Within a section too: one key set, its neighbours at their defaults.
    let c = parse(r#"{"memory": {"enabled": true}}"#).unwrap();
    assert!(c.memory.enabled);
    assert_eq!(
        c.memory.max_prompt_tokens,
        MemoryConfig::default().max_prompt_tokens
    );
    let s = c
        .select(Path::new("/nonexistent"), None, &Overrides::default())
        .unwrap();
    assert_eq!(s.label(), DEFAULT_SELECTION);
}

#[test]
fn unknown_keys_are_noted_with_their_path_and_the_nearest_key() {
    let c = parse(
        r#"{"memory": {"enabeld": true}, "sandbx": true,
            "providers": {"p": {"baseUrl": "http://x", "compat": {"noStreamUsge": true}}},
            "browser": {"evals": true}}"#,
    )
    .unwrap();
    let shown: Vec<String> = c.unknown_keys.iter().map(|k| k.to_string()).collect();
    assert_eq!(
        shown,
        [
            "unknown key memory.enabeld (did you mean memory.enabled?)",
            "unknown key sandbx (did you mean sandbox?)",
            "unknown key providers.p.baseUrl (did you mean providers.p.baseURL?)",
            "unknown key providers.p.compat.noStreamUsge (did you mean \
             providers.p.compat.noStreamUsage?)",
            "unknown key browser.evals (did you mean browser.eval?)",
        ]
    );
    // The typo'd keys took no effect; the rest of the file did.
    assert!(!c.memory.enabled && !c.sandbox && !c.browser.eval);
    assert!(c.providers.contains_key("p"));
}

#[test]
fn a_wrong_type_is_an_error_naming_the_key() {
    for (text, key) in [
        (
            r#"{"memory": {"enabled": "yes"}}"#,
            "memory.enabled: invalid type",
        ),
        (
            r#"{"context": {"tailTurns": -1}}"#,
            "context.tailTurns: invalid value",
        ),
        (r#"{"sandbox": 1}"#, "sandbox: invalid type"),
        (
            r#"{"providers": {"p": {"models": "m"}}}"#,
            "providers.p.models: invalid type",
        ),
        (r#"{"network": "sometimes"}"#, "network: unknown variant"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            err.starts_with(&format!("failed to parse /h/.gg/config.json: {key}")),
            "{text}: {err}"
        );
    }
    assert!(parse(r#"{"sandbox": true} trailing"#).is_err());
}

#[test]
fn bad_files_name_the_file() {
    for (text, needle) in [
        ("{", "failed to parse /h/.gg/config.json"),
        (r#"{"providers": {}}"#, "at least one provider"),
        (r#"{"providers": {"a:b": {}}}"#, "without ':'"),
        (
            r#"{"providers": {"p": {"type": "anthropic"}}}"#,
            "not supported",
        ),
        (
            r#"{"providers": {"p": {}}, "context": {"tailTurns": 0}}"#,
            "context.tailTurns",
        ),
        (
            r#"{"providers": {"p": {}}, "memory": {"maxPromptTokens": 0}}"#,
            "memory.maxPromptTokens",
        ),
    ] {
        let err = parse(text).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
        assert!(
            err.starts_with("failed to parse /h/.gg/config.json"),
            "{err}"
        );
    }
}
