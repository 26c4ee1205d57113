//! Entry and session ids: 16 lowercase hex digits from 8 random bytes.

use super::error::{Result, SessionError};

/// A fresh random id. Fails (instead of falling back to a clock-based id as the Go
/// implementation did) when the OS has no randomness, because colliding ids corrupt the tree.
pub fn new_id() -> Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|error| SessionError::Invalid(format!("cannot generate a session id: {error}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_16_lowercase_hex_and_distinct() {
        let first = super::new_id().unwrap();
        let second = super::new_id().unwrap();
        assert_eq!(first.len(), 16);
        assert!(
            first
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_ne!(first, second);
    }
}
