//! Secrets out of other processes' command lines before `process_list` shows them to the model.
//!
//! A command line is as revealing as an environment: `--token X`, `mysql -pPASS`,
//! `postgres://u:p@host`, `API_KEY=… cmd`. The rules below mirror the environment scrub (a name
//! that looks like a credential hides its value) and add the argument shapes that carry one.

/// What a hidden value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Option names (without dashes, lower-case, `_` and `-` equal) whose value is a secret.
const SECRET_OPTION_WORDS: &[&str] = &[
    "token",
    "password",
    "passwd",
    "pass",
    "secret",
    "key",
    "apikey",
    "auth",
    "credential",
    "credentials",
    "privatekey",
    "accesskey",
    "clientsecret",
    "cookie",
    "bearer",
    "signature",
    "pat",
];

/// Programs whose `-pVALUE` / `-p VALUE` is a password (not a port or a path).
const PASSWORD_P_PROGRAMS: &[&str] = &[
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mariadb",
    "mariadb-dump",
    "sshpass",
];

/// A value at least this long, with letters and digits mixed, after a key-like word, is a secret
/// even when the option name alone would not say so (`key=3f9a…`).
const HIGH_ENTROPY_MIN: usize = 16;

/// The command line with every secret value replaced by [`REDACTED`], words joined by spaces.
pub fn command_line(argv: &[String]) -> String {
    let program = argv
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_ascii_lowercase())
        .unwrap_or_default();
    let password_p = PASSWORD_P_PROGRAMS.contains(&program.as_str());
    let mut out: Vec<String> = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for (index, word) in argv.iter().enumerate() {
        if hide_next {
            out.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        if index > 0 && password_p && word.starts_with("-p") && !word.starts_with("--") {
            if word == "-p" {
                // sshpass -p VALUE; mysql's bare -p prompts instead, so the next word is not a
                // password there — but hiding one word too many is the safe mistake.
                hide_next = program == "sshpass";
                out.push(word.clone());
            } else {
                out.push(format!("-p{REDACTED}"));
            }
            continue;
        }
        let (redacted, takes_next) = word_redacted(word);
        hide_next = takes_next;
        out.push(redacted);
    }
    out.join(" ")
}

/// One word: returns its shown form and whether the next word is this option's secret value.
fn word_redacted(word: &str) -> (String, bool) {
    let word = url_credentials_hidden(word);
    if let Some(option) = word.strip_prefix("--").or_else(|| word.strip_prefix('-')) {
        if let Some((name, value)) = option.split_once('=') {
            if is_secret_name(name) && !value.is_empty() {
                let dashes = &word[..word.len() - option.len()];
                return (format!("{dashes}{name}={REDACTED}"), false);
            }
            return (word, false);
        }
        // `--token VALUE`: the next word is the secret.
        return (word.clone(), is_secret_name(option));
    }
    if let Some((name, value)) = word.split_once('=')
        && !name.is_empty()
        && !name.contains('/')
        && (is_secret_name(name) || (key_like(name) && high_entropy(value)))
    {
        return (format!("{name}={REDACTED}"), false);
    }
    (word, false)
}

/// Whether an option or variable name says its value is a credential.
fn is_secret_name(name: &str) -> bool {
    let normalized: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let joined = normalized.replace('_', "");
    if SECRET_OPTION_WORDS.contains(&joined.as_str()) {
        return true;
    }
    // Compound names: `github_token`, `db-password`, `aws_secret_access_key`, `x_api_key`.
    normalized.split('_').filter(|p| !p.is_empty()).any(|part| {
        matches!(
            part,
            "token" | "password" | "passwd" | "secret" | "apikey" | "credentials" | "pat"
        )
    }) || normalized.ends_with("api_key")
        || normalized.ends_with("private_key")
        || normalized.ends_with("access_key")
}

/// `key`, `secret`, `token` and the like anywhere in the name (case-insensitive).
fn key_like(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["key", "secret", "token", "auth", "pass"]
        .iter()
        .any(|w| lower.contains(w))
}

fn high_entropy(value: &str) -> bool {
    value.len() >= HIGH_ENTROPY_MIN
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
        && !value.contains(char::is_whitespace)
}

/// `scheme://user:password@host…` → `scheme://user:[redacted]@host…`, anywhere in the word.
fn url_credentials_hidden(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(start) = rest.find("://") {
        let (before, after) = rest.split_at(start + 3);
        out.push_str(before);
        let authority_end = after
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(after.len());
        let authority = &after[..authority_end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _password)) => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(REDACTED);
                    }
                    // A bare userinfo is often a token (`https://TOKEN@github.com`).
                    None if high_entropy(userinfo) => out.push_str(REDACTED),
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(argv: &[&str]) -> String {
        command_line(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn secret_option_values_are_hidden_in_both_shapes() {
        assert_eq!(
            shown(&["srv", "--token", "abc", "--port", "80"]),
            "srv --token [redacted] --port 80"
        );
        assert_eq!(
            shown(&["srv", "--password=hunter2"]),
            "srv --password=[redacted]"
        );
        assert_eq!(
            shown(&["srv", "--api-key", "K", "--github-token=T", "-token", "X"]),
            "srv --api-key [redacted] --github-token=[redacted] -token [redacted]"
        );
        assert_eq!(
            shown(&["aws", "--aws-secret-access-key", "S"]),
            "aws --aws-secret-access-key [redacted]"
        );
    }

    #[test]
    fn password_p_of_known_tools_only() {
        assert_eq!(
            shown(&["mysql", "-uroot", "-pS3cret"]),
            "mysql -uroot -p[redacted]"
        );
        assert_eq!(
            shown(&["sshpass", "-p", "pw", "ssh", "h"]),
            "sshpass -p [redacted] ssh h"
        );
        // For other programs -p is a port, a path or a flag.
        assert_eq!(shown(&["ssh", "-p2222", "h"]), "ssh -p2222 h");
        assert_eq!(shown(&["mkdir", "-p", "a/b"]), "mkdir -p a/b");
    }

    #[test]
    fn url_credentials_and_assignments() {
        assert_eq!(
            shown(&["psql", "postgres://app:pw@db:5432/x"]),
            "psql postgres://app:[redacted]@db:5432/x"
        );
        assert_eq!(
            shown(&[
                "git",
                "clone",
                "https://ghp_0123456789abcdefABCDEF@github.com/o/r"
            ]),
            "git clone https://[redacted]@github.com/o/r"
        );
        assert_eq!(
            shown(&[
                "env",
                "DATABASE_PASSWORD=pw",
                "OPENAI_API_KEY=sk-1",
                "LANG=C",
                "x"
            ]),
            "env DATABASE_PASSWORD=[redacted] OPENAI_API_KEY=[redacted] LANG=C x"
        );
        assert_eq!(
            shown(&["tool", "signing_key=9f86d081884c7d659a2feaa0c55ad015"]),
            "tool signing_key=[redacted]"
        );
        // Ordinary words and short values stay readable.
        assert_eq!(
            shown(&["cargo", "build", "--key-file", "k"]),
            "cargo build --key-file k"
        );
        assert_eq!(
            shown(&["python3", "-m", "http.server"]),
            "python3 -m http.server"
        );
    }
}
