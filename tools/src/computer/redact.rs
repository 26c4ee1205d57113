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

/// Programs whose `-aVALUE` / `-a VALUE` is a password (`redis-cli -a`).
const PASSWORD_A_PROGRAMS: &[&str] = &["redis-cli", "keydb-cli"];

/// Programs whose `login -p VALUE` is a password (`docker login -p`).
const LOGIN_P_PROGRAMS: &[&str] = &["docker", "podman", "nerdctl", "buildah", "skopeo", "helm"];

/// Options whose `user:password` value hides the part after the colon (`curl -u`, `wget`).
const USER_PASSWORD_OPTIONS: &[&str] = &["-u", "--user", "--proxy-user", "--http-user"];

/// The command line with every secret value replaced by [`REDACTED`], words joined by spaces.
///
/// The program a rule depends on (`mysql -p`, `redis-cli -a`) is the last word naming one, not
/// only the first: wrappers (`env`, `sudo`, `bash -c … mysql`) put it further in. A word holding
/// spaces (`sh -c 'API_KEY=… cmd'`) is judged word by word. A word with a token's shape
/// (`ghp_…`, `Bearer …`, a JWT) is hidden whatever surrounds it.
pub fn command_line(argv: &[String]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(argv.len());
    let mut program = String::new();
    let mut after_login = false;
    let mut hide_next = false;
    // The word after `-u` was shown with its password hidden already.
    let mut shown_already = false;
    for (index, word) in argv.iter().enumerate() {
        if std::mem::take(&mut shown_already) {
            continue;
        }
        if hide_next {
            out.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        let base = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
        if index == 0
            || PASSWORD_P_PROGRAMS.contains(&base.as_str())
            || PASSWORD_A_PROGRAMS.contains(&base.as_str())
            || LOGIN_P_PROGRAMS.contains(&base.as_str())
        {
            program = base;
            after_login = false;
            out.push(word_redacted(word).0);
            continue;
        }
        after_login |= word == "login";
        let short = |flag: &str| word.starts_with(flag) && !word.starts_with("--");
        let value_option = (PASSWORD_P_PROGRAMS.contains(&program.as_str()) && short("-p"))
            .then_some("-p")
            .or_else(|| {
                (PASSWORD_A_PROGRAMS.contains(&program.as_str()) && short("-a")).then_some("-a")
            })
            .or_else(|| {
                (LOGIN_P_PROGRAMS.contains(&program.as_str()) && after_login && short("-p"))
                    .then_some("-p")
            });
        if let Some(flag) = value_option {
            if word == flag {
                // `sshpass -p VALUE`, `redis-cli -a VALUE`, `docker login -p VALUE`; mysql's bare
                // -p prompts instead, so the next word is not a password there — but hiding one
                // word too many is the safe mistake.
                hide_next = program != "mysql" && program != "mariadb";
                out.push(word.clone());
            } else {
                out.push(format!("{flag}{REDACTED}"));
            }
            continue;
        }
        if USER_PASSWORD_OPTIONS.contains(&word.as_str())
            && let Some(next) = argv.get(index + 1)
            && let Some((user, _)) = next.split_once(':')
        {
            out.push(word.clone());
            out.push(format!("{user}:{REDACTED}"));
            shown_already = true;
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
    if let Some(header) = header_redacted(word) {
        return (header, false);
    }
    // `--header=Authorization: …`.
    if let Some((option, value)) = word.split_once('=')
        && option.starts_with('-')
        && let Some(header) = header_redacted(value)
    {
        return (format!("{option}={header}"), false);
    }
    // Several shell words in one (`sh -c '…'`): a command line of its own.
    if word.contains(char::is_whitespace) {
        let parts: Vec<String> = word.split_whitespace().map(str::to_string).collect();
        return (command_line(&parts), false);
    }
    // `openssl … -passin pass:VALUE`.
    if let Some(value) = word.strip_prefix("pass:")
        && !value.is_empty()
    {
        return (format!("pass:{REDACTED}"), false);
    }
    let word = query_secrets_hidden(&url_credentials_hidden(word));
    if crate::secrets::has_token_shape(word.as_bytes()) {
        return (REDACTED.to_string(), false);
    }
    if let Some(option) = word.strip_prefix("--").or_else(|| word.strip_prefix('-')) {
        if let Some((name, value)) = option.split_once('=') {
            let dashes = &word[..word.len() - option.len()];
            if let Some(header) = header_redacted(value) {
                return (format!("{dashes}{name}={header}"), false);
            }
            if is_secret_name(name) && !value.is_empty() {
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
    // Every other character separates parts: `-Ddb.password=…`, `spring.datasource.password`.
    let normalized: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
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

/// Header names whose value is a credential, when a header is one word (`curl -H
/// 'Authorization: Bearer …'`).
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "private-token",
    "x-vault-token",
];

/// A header given as one word (`Authorization: Bearer …`), its value hidden; `None` for any
/// other word.
fn header_redacted(word: &str) -> Option<String> {
    let (name, _) = word.split_once(':')?;
    SECRET_HEADERS
        .contains(&name.trim().to_ascii_lowercase().as_str())
        .then(|| format!("{name}: {REDACTED}"))
}

/// `…?token=VALUE&…`, `…#access_token=VALUE`: the value of every query or fragment parameter
/// whose name says it is a credential is hidden.
fn query_secrets_hidden(word: &str) -> String {
    if !word.contains(['?', '#', '&', ';']) {
        return word.to_string();
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find(['?', '#', '&', ';']) {
        let (before, after) = rest.split_at(at + 1);
        out.push_str(before);
        let end = after.find(['?', '#', '&', ';']).unwrap_or(after.len());
        let parameter = &after[..end];
        match parameter.split_once('=') {
            Some((name, value)) if is_secret_name(name) && !value.is_empty() => {
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(parameter),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
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

    /// What an attacker pass read through `process_list` (thirty-third session), each behind a
    /// wrapper, as a program started from a shell shows it.
    #[test]
    fn the_shapes_behind_wrappers_are_hidden() {
        let line = shown(&[
            "bash",
            "-c",
            "sleep 400; :",
            "curl",
            "-H",
            "Authorization: Bearer ghp_FAKEabcdefghij1234567890",
            "-u",
            "admin:FAKE-CURL-PASS",
            "https://x/",
        ]);
        assert!(!line.contains("FAKE"), "{line}");
        assert!(line.contains("-u admin:[redacted] https://x/"), "{line}");
        for argv in [
            &["env", "X=1", "redis-cli", "-a", "FAKE-REDIS-PASS", "ping"][..],
            &["sudo", "redis-cli", "-aFAKE-REDIS-PASS"],
            &["openssl", "rsa", "-passin", "pass:FAKE-OPENSSL-PASS"],
            &["sh", "-c", "docker login -p FAKE-DOCKER-PASS registry"],
            &["docker", "login", "-p", "FAKE-DOCKER-PASS", "registry"],
            &["sh", "-c", "API_KEY=FAKE-SH-C-VALUE ./run"],
            &["java", "-Ddb.password=FAKE-D-PASS", "-jar", "a.jar"],
            &[
                "open",
                "https://app.example/cb#access_token=FAKE-FRAGMENT-TOKEN",
            ],
            &["tool", "https://x/?a=1&token=FAKE-QUERY-TOKEN"],
            &["sh", "-c", "mysql -uroot -pFAKE-MYSQL-PASS"],
            &["tool", "--header=Authorization: Basic FAKE-BASIC"],
        ] {
            let line = shown(argv);
            assert!(!line.contains("FAKE"), "{argv:?}: {line}");
        }
        // Ordinary words stay readable.
        assert_eq!(
            shown(&["curl", "-u", "admin", "https://x/"]),
            "curl -u admin https://x/"
        );
        assert_eq!(shown(&["redis-server", "-a"]), "redis-server -a");
        assert_eq!(
            shown(&["sh", "-c", "cargo test -p gg"]),
            "sh -c cargo test -p gg"
        );
    }
}
