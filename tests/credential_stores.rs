//! The credential stores and histories the thirty-third session's attacker passes read with a
//! plain `cat` are on the one deny-read list: hidden from a sandboxed command at each level and
//! from a guarded one, whatever the command's words. Each run drives the real `gg -p` with the
//! scripted model, the read inside a script (the classifier calls a named credential read
//! dangerous; the kernel is what is tried here), then checks what reached the model.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support::available_levels;
use crate::support;

use serde_json::json;
use support::{GgFixture, ScriptedServer};

/// Each store, as a file below the home, planted with a canary that names it.
const STORES: &[&str] = &[
    ".histfile",
    ".zsh_sessions/a.history",
    ".local/share/atuin/key",
    ".irb_history",
    ".viminfo",
    ".config/fish/fish_variables",
    ".boto",
    ".databrickscfg",
    ".pulumi/credentials.json",
    ".cache/huggingface/token",
    ".kaggle/kaggle.json",
    ".config/glab-cli/config.yml",
    ".sentryclirc",
    ".terraformrc",
    ".dbt/profiles.yml",
    ".config/ngrok/ngrok.yml",
    ".ollama/id_ed25519",
    ".gradle/gradle.properties",
    ".local/share/jupyter/runtime/kernel-1.json",
];

#[test]
fn the_passes_credential_stores_are_hidden_from_every_command() {
    let mut runs: Vec<(Option<&str>, Vec<&str>)> = available_levels()
        .into_iter()
        .map(|level| (Some(level), vec!["--yolo", "--sandbox"]))
        .collect();
    runs.push((None, vec!["--yolo"]));
    for (level, args) in runs {
        let what = level.unwrap_or("guard");
        let server = ScriptedServer::start();
        let fx = GgFixture::new(&server, json!({}), "repo");
        let mut script = String::new();
        for (i, store) in STORES.iter().enumerate() {
            let path = fx.home.join(store);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("CANARY-{i}-STORE\n")).unwrap();
            script.push_str(&format!("cat ~/{store} 2>/dev/null\n"));
        }
        script.push_str("echo end\n");
        std::fs::write(fx.repo.join("app.sh"), &script).unwrap();
        let env: Vec<(&str, &str)> = level
            .map(|l| ("GG_SANDBOX_BACKEND", l))
            .into_iter()
            .collect();
        let (out, results) =
            support::run_bash_calls(&fx, &server, &env, true, &["sh ./app.sh"], &args);
        assert!(out.status.success(), "{what}: {out:?}");
        let result = results.first().cloned().unwrap_or_default();
        assert!(result.contains("end"), "{what}: did not run: {result}");
        for (i, store) in STORES.iter().enumerate() {
            assert!(
                !result.contains(&format!("CANARY-{i}-STORE")),
                "{what}: ~/{store} was read: {result}"
            );
        }
    }
}
