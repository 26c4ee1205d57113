//! The keys of `~/.gg/config.json`: which ones gg reads, and the nearest known key to one it does
//! not (`memory.enabeld` → `memory.enabled`).
//!
//! The known keys are read from the sections' own `Deserialize` impls (see [`fields_of`]), so a
//! field added to a section is known without a second list to keep in step; which section sits
//! at which path is written down beside the sections (`config::known_keys`), so that this file
//! knows no section and the configuration imports it, not the other way round.

use serde::Deserialize;
use serde::de::{self, Visitor};

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

/// An unknown key at `segments` (the path's parts, the key last), with the nearest of the keys
/// `known_keys` says are read in its parent object.
pub fn unknown_key(
    segments: &[String],
    known_keys: impl Fn(&[String]) -> Option<&'static [&'static str]>,
) -> UnknownKey {
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

/// The field names (as written in the file, after renaming) of a struct that derives
/// `Deserialize`: serde hands them to the deserializer, which here only keeps them.
pub fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
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
