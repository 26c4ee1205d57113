//! The keys of `~/.gg/config.json`: which ones gg reads, and the nearest known key to one it does
//! not (`memory.enabeld` → `memory.enabled`).
//!
//! The known keys are read from the sections' own `Deserialize` impls (see [`fields_of`]), so a
//! field added to a section is known here without a second list to keep in step; only which
//! section sits at which path is written down, in [`known_keys`].

use serde::Deserialize;
use serde::de::{self, Visitor};

use super::config::{
    CompatConfig, ContextConfig, EmbeddingsConfig, EnvConfig, KbConfig, MemoryConfig,
    ProviderEntry, RawConfig, StoreConfig, ToolsConfig,
};
use crate::tools::browser::BrowserConfig;

/// A key of the file that gg does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// Dotted path (`memory.enabeld`, `providers.local.baseUrl`).
    pub path: String,
    /// The nearest key gg reads at the same place, as a dotted path.
    pub nearest: Option<String>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown key {}", self.path)?;
        match &self.nearest {
            Some(nearest) => write!(f, " (did you mean {nearest}?)"),
            None => write!(f, " (ignored)"),
        }
    }
}

/// An unknown key at `segments` (the path's parts, the key last), with the nearest known key.
pub fn unknown_key(segments: &[String]) -> UnknownKey {
    let path = segments.join(".");
    let nearest = segments.split_last().and_then(|(key, parent)| {
        let known = known_keys(parent)?;
        nearest_key(key, known).map(|best| {
            parent
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(best))
                .collect::<Vec<_>>()
                .join(".")
        })
    });
    UnknownKey { path, nearest }
}

/// The known key nearest to `key` (case aside) by edit distance, counting a swap of two
/// neighbouring letters as one edit (`memroy`), when at most a third of its letters differ.
pub fn nearest_key<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = key.to_lowercase();
    known
        .iter()
        .map(|candidate| {
            let candidate_lower = candidate.to_lowercase();
            let distance = strsim::damerau_levenshtein(&lower, &candidate_lower);
            let length = lower.chars().count().max(candidate_lower.chars().count());
            (distance, length, *candidate)
        })
        .filter(|(distance, length, _)| distance * 3 <= *length)
        .min_by_key(|(distance, _, _)| *distance)
        .map(|(_, _, candidate)| candidate)
}

/// The keys gg reads in the object at `parent` (path parts from the top); `None` where the
/// object's keys are names the person chooses (`providers`) or the place is not a section.
fn known_keys(parent: &[String]) -> Option<&'static [&'static str]> {
    let parts: Vec<&str> = parent.iter().map(String::as_str).collect();
    Some(match parts.as_slice() {
        [] => fields_of::<RawConfig>(),
        ["context"] => fields_of::<ContextConfig>(),
        ["memory"] => fields_of::<MemoryConfig>(),
        ["providers", _] => fields_of::<ProviderEntry>(),
        ["providers", _, "compat"] => fields_of::<CompatConfig>(),
        ["env"] => fields_of::<EnvConfig>(),
        ["tools"] => fields_of::<ToolsConfig>(),
        ["artifacts"] | ["library"] => fields_of::<StoreConfig>(),
        ["kb"] => fields_of::<KbConfig>(),
        ["kb", "embeddings"] => fields_of::<EmbeddingsConfig>(),
        ["browser"] => fields_of::<BrowserConfig>(),
        _ => return None,
    })
}

/// The field names (as written in the file, after renaming) of a struct that derives
/// `Deserialize`: serde hands them to the deserializer, which here only keeps them.
fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut reader = FieldNames(None);
    let _ = T::deserialize(&mut reader);
    reader.0.unwrap_or(&[])
}

struct FieldNames(Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &mut FieldNames {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom("only the field names were wanted"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
