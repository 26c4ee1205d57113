//! The user profile, `~/.gg/USER.md`: a few `- Key: Value` lines the person writes about
//! themselves (name, what to call them, timezone, language) and free notes. It is the person's
//! own text, created by `gg init` and edited by hand; gg never writes it after creating it.

use std::path::{Path, PathBuf};

/// The profile file under a home directory.
pub fn path(home: &Path) -> PathBuf {
    home.join(".gg").join("USER.md")
}

/// What USER.md says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub name: Option<String>,
    pub call_me: Option<String>,
    pub timezone: Option<String>,
    pub language: Option<String>,
    /// Every other non-empty line (headings and HTML comments left out).
    pub notes: Vec<String>,
}

impl Profile {
    /// Reads `- Key: Value` lines before the first `##` heading: `name`, `call me`/`callme`,
    /// `timezone`/`tz`, `language`/`lang` (any case); an empty value is no value. Everything
    /// else is kept as notes.
    pub fn parse(text: &str) -> Profile {
        let mut profile = Profile::default();
        let mut in_header = true;
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("##") {
                in_header = false;
                continue;
            }
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("<!--") {
                continue;
            }
            if in_header
                && let Some((key, value)) = trimmed
                    .strip_prefix("- ")
                    .or_else(|| trimmed.strip_prefix("* "))
                    .and_then(|item| item.split_once(':'))
            {
                let value = value.trim();
                let slot = match key.trim().to_lowercase().as_str() {
                    "name" => Some(&mut profile.name),
                    "call me" | "callme" => Some(&mut profile.call_me),
                    "timezone" | "tz" => Some(&mut profile.timezone),
                    "language" | "lang" => Some(&mut profile.language),
                    _ => None,
                };
                if let Some(slot) = slot {
                    if !value.is_empty() {
                        *slot = Some(value.to_string());
                    }
                    continue;
                }
            }
            profile.notes.push(trimmed.to_string());
        }
        profile
    }

    /// The system-prompt block (`User profile:` …), or `None` when the profile says nothing.
    pub fn prompt_block(&self) -> Option<String> {
        let mut lines = Vec::new();
        match (&self.name, &self.call_me) {
            (Some(name), Some(call)) => lines.push(format!("- Name: {name} (call me {call})")),
            (Some(name), None) => lines.push(format!("- Name: {name}")),
            (None, Some(call)) => lines.push(format!("- Call me: {call}")),
            (None, None) => {}
        }
        if let Some(tz) = &self.timezone {
            lines.push(format!("- Timezone: {tz}"));
        }
        if let Some(language) = &self.language {
            lines.push(format!("- Language: {language}"));
        }
        if !self.notes.is_empty() {
            lines.push("- Notes:".to_string());
            lines.extend(self.notes.iter().map(|n| format!("  {n}")));
        }
        (!lines.is_empty()).then(|| format!("User profile:\n{}", lines.join("\n")))
    }
}

/// Reads and parses the profile; `None` when there is none (or it cannot be read: the profile
/// is optional, and a run does not fail over it).
pub fn load(home: &Path) -> Option<Profile> {
    let path = path(home);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return None;
    }
    std::fs::read_to_string(&path)
        .ok()
        .map(|t| Profile::parse(&t))
}

/// The `gg init` template. The language defaults to `zh` as in gg's design, unless `LANG` names
/// another one; the timezone is the system's when it has an IANA name.
pub fn template(language: &str, timezone: Option<&str>) -> String {
    format!(
        "# About me\n\
         <!-- gg sends this file to the model provider you use, with every request. -->\n\
         \n\
         - Name: \n\
         - Call me: \n\
         - Timezone: {}\n\
         - Language: {language}\n\
         \n\
         ## Notes\n\
         <!-- Anything gg should know about you: your role, how you like answers. -->\n",
        timezone.unwrap_or_default()
    )
}

/// The template's language: the language part of `LANG` (`de_DE.UTF-8` → `de`), else `zh`.
pub fn default_language(lang_env: Option<&str>) -> String {
    lang_env
        .and_then(|l| l.split(['_', '.', '@']).next())
        .filter(|l| l.len() >= 2 && l.chars().all(|c| c.is_ascii_lowercase()))
        .map(str::to_string)
        .unwrap_or_else(|| "zh".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_before_the_first_section_are_fields_and_the_rest_are_notes() {
        let p = Profile::parse(
            "# About me\n- Name: Ada Lovelace\n- callme: Ada\n- TZ: Europe/London\n- lang: en\n\
             - Editor: vim\nLikes short answers.\n\n## Notes\n- Name: not a field here\n",
        );
        assert_eq!(p.name.as_deref(), Some("Ada Lovelace"));
        assert_eq!(p.call_me.as_deref(), Some("Ada"));
        assert_eq!(p.timezone.as_deref(), Some("Europe/London"));
        assert_eq!(p.language.as_deref(), Some("en"));
        assert_eq!(
            p.notes,
            [
                "- Editor: vim",
                "Likes short answers.",
                "- Name: not a field here"
            ]
        );
        let block = p.prompt_block().unwrap();
        assert!(
            block.starts_with(
                "User profile:\n- Name: Ada Lovelace (call me Ada)\n- Timezone: Europe/London\n\
                 - Language: en\n- Notes:\n  - Editor: vim"
            ),
            "{block}"
        );
    }

    #[test]
    fn the_untouched_template_says_only_the_language_and_timezone() {
        let p = Profile::parse(&template("zh", None));
        assert_eq!(p.name, None);
        assert_eq!(p.timezone, None);
        assert_eq!(p.language.as_deref(), Some("zh"));
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        assert_eq!(
            Profile::default().prompt_block(),
            None,
            "an empty profile adds nothing"
        );
    }

    #[test]
    fn the_template_language_follows_lang_else_zh() {
        assert_eq!(default_language(Some("de_DE.UTF-8")), "de");
        assert_eq!(default_language(Some("C.UTF-8")), "zh");
        assert_eq!(default_language(Some("POSIX")), "zh");
        assert_eq!(default_language(None), "zh");
    }
}
