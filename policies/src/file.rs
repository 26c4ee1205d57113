//! Policy files: user and project TOML files that tune the classifier without a rebuild.
//!
//! ```toml
//! version = 1                      # optional; 1 is the only version
//!
//! [[read_only]]                    # user policy only: never asks
//! prefix = "cargo metadata"
//!
//! [[dangerous]]                    # always needs a person to confirm
//! prefix = "terraform apply"
//! reason = "changes real infrastructure"
//!
//! [[forbidden]]                    # always denied, in every mode
//! prefix = "git push"
//! reason = "pushes go through CI"  # required
//! ```
//!
//! Layers merge in order: built-in defaults, then the user file, then the project file. A project
//! file can only tighten: a cloned repository must not be able to whitelist its own commands, so
//! its `read_only` rules are reported as errors and ignored.
//!
//! This module parses text only; the caller reads the files.

use std::fmt;

use serde::Deserialize;
use toml::Spanned;

use crate::decision::Forbidden;

/// The built-in defaults, compiled into the binary so they are readable and auditable.
pub const BUILTIN_POLICY: &str = include_str!("../default-policy.toml");

/// Which layer a policy file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Builtin,
    User,
    Project,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Builtin => "builtin",
            Layer::User => "user",
            Layer::Project => "project",
        }
    }

    /// Whether rules of this layer may make commands *less* guarded.
    fn may_loosen(self) -> bool {
        match self {
            Layer::Builtin | Layer::User => true,
            Layer::Project => false,
        }
    }
}

/// What a rule does to the commands it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleKind {
    ReadOnly,
    Dangerous,
    Forbidden,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::ReadOnly => "read_only",
            RuleKind::Dangerous => "dangerous",
            RuleKind::Forbidden => "forbidden",
        }
    }
}

/// One rule of a policy file, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    pub kind: RuleKind,
    /// The prefix split into words (shell quoting rules).
    pub prefix: Vec<String>,
    /// The prefix as written.
    pub prefix_text: String,
    pub reason: Option<String>,
    pub layer: Layer,
    /// The file name (or `builtin`).
    pub origin: String,
    /// 1-based line of the rule's table in its file.
    pub line: usize,
}

impl PolicyRule {
    /// `origin:line`, for messages and `gg policy show`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.origin, self.line)
    }

    /// Word-by-word prefix match on a normalised argv. Program names compare by base name,
    /// because the classifier reduces `/usr/bin/git` to `git` and so must the rule.
    pub fn matches(&self, argv: &[String]) -> bool {
        if argv.len() < self.prefix.len() || self.prefix.is_empty() {
            return false;
        }
        self.prefix
            .iter()
            .zip(argv)
            .enumerate()
            .all(|(i, (want, got))| {
                if i == 0 {
                    base_name(want) == base_name(got)
                } else {
                    want == got
                }
            })
    }
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A problem in a policy file, naming the file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub origin: String,
    /// 1-based line; 0 when the problem has no position.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}:{}: {}", self.origin, self.line, self.message)
        }
    }
}

impl std::error::Error for PolicyError {}

/// A parsed file: its rules, and rules that were reported and ignored (project loosening).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedPolicy {
    pub rules: Vec<PolicyRule>,
    pub ignored: Vec<PolicyError>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: Option<Spanned<i64>>,
    #[serde(default)]
    read_only: Vec<Spanned<RawRule>>,
    #[serde(default)]
    dangerous: Vec<Spanned<RawRule>>,
    #[serde(default)]
    forbidden: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    prefix: String,
    reason: Option<String>,
}

/// Parses one policy file. A malformed file is an error: gg refuses to start rather than run
/// with a half-read policy.
pub fn parse_policy(text: &str, layer: Layer, origin: &str) -> Result<ParsedPolicy, PolicyError> {
    let error_at = |offset: Option<usize>, message: String| PolicyError {
        origin: origin.to_string(),
        line: offset.map_or(0, |o| line_of(text, o)),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        error_at(e.span().map(|s| s.start), message)
    })?;
    if let Some(version) = &raw.version
        && *version.get_ref() != 1
    {
        return Err(error_at(
            Some(version.span().start),
            format!(
                "unsupported policy version {} (expected 1)",
                version.get_ref()
            ),
        ));
    }

    let mut parsed = ParsedPolicy::default();
    let groups = [
        (RuleKind::ReadOnly, raw.read_only),
        (RuleKind::Dangerous, raw.dangerous),
        (RuleKind::Forbidden, raw.forbidden),
    ];
    for (kind, entries) in groups {
        for entry in entries {
            let line = line_of(text, entry.span().start);
            let RawRule { prefix, reason } = entry.into_inner();
            let rule = build_rule(kind, prefix, reason, layer, origin, line)?;
            if kind == RuleKind::ReadOnly && !layer.may_loosen() {
                parsed.ignored.push(PolicyError {
                    origin: origin.to_string(),
                    line,
                    message: format!(
                        "project policy cannot add read-only rules (`{}` ignored): a repository \
                         must not whitelist its own commands; put it in ~/.gg/policy.toml instead",
                        rule.prefix_text
                    ),
                });
                continue;
            }
            parsed.rules.push(rule);
        }
    }
    Ok(parsed)
}

fn build_rule(
    kind: RuleKind,
    prefix_text: String,
    reason: Option<String>,
    layer: Layer,
    origin: &str,
    line: usize,
) -> Result<PolicyRule, PolicyError> {
    let error = |message: String| PolicyError {
        origin: origin.to_string(),
        line,
        message,
    };
    let prefix = shell_words::split(&prefix_text).map_err(|e| {
        error(format!(
            "prefix {prefix_text:?} is not valid shell words: {e}"
        ))
    })?;
    if prefix.is_empty() {
        return Err(error("prefix must name at least one word".to_string()));
    }
    let reason = reason
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    if kind == RuleKind::Forbidden && reason.is_none() {
        return Err(error(format!(
            "forbidden rule `{prefix_text}` needs a reason (it is shown to the model and the user)"
        )));
    }
    Ok(PolicyRule {
        kind,
        prefix,
        prefix_text,
        reason,
        layer,
        origin: origin.to_string(),
        line,
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The merged policy of every layer, in layer order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffectivePolicy {
    pub rules: Vec<PolicyRule>,
    /// Rules that were reported and ignored while merging.
    pub ignored: Vec<PolicyError>,
}

impl EffectivePolicy {
    /// The built-in defaults alone.
    pub fn builtin() -> Result<EffectivePolicy, PolicyError> {
        let mut policy = EffectivePolicy::default();
        policy.add(parse_policy(BUILTIN_POLICY, Layer::Builtin, "builtin")?);
        Ok(policy)
    }

    /// Appends a parsed layer. Call in layer order: builtin, user, project.
    pub fn add(&mut self, parsed: ParsedPolicy) {
        self.rules.extend(parsed.rules);
        self.ignored.extend(parsed.ignored);
    }

    /// The prefixes the classifier applies itself.
    pub fn classifier_rules(&self) -> classifier::ExtraRules {
        let prefixes = |kind: RuleKind| {
            self.rules
                .iter()
                .filter(|r| r.kind == kind)
                .map(|r| r.prefix.clone())
                .collect()
        };
        classifier::ExtraRules {
            read_only_prefixes: prefixes(RuleKind::ReadOnly),
            dangerous_prefixes: prefixes(RuleKind::Dangerous),
        }
    }

    /// The first forbidden rule matching any command the classifier found in the script.
    pub fn forbidden_match(&self, verdict: &classifier::Verdict) -> Option<Forbidden> {
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::Forbidden)
            .find(|rule| verdict.commands.iter().any(|c| rule.matches(&c.argv)))
            .map(|rule| Forbidden {
                prefix: rule.prefix_text.clone(),
                reason: rule.reason.clone().unwrap_or_default(),
                source: rule.location(),
            })
    }
}
