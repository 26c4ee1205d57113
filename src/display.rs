//! Terminal-safe text: see the [`termsafe`] crate. Every path in gg that shows text from the
//! model or a tool to a person goes through [`visible`] or [`visible_inline`], which escape
//! terminal controls and invisible characters (tag characters, zero-width spaces and every other
//! `Default_Ignorable_Code_Point`); word lists match [`normalize_for_matching`]'s form of a text.

pub use termsafe::{
    flag_controls, has_controls, has_invisible, is_control, is_invisible, needs_escape,
    needs_escaping, normalize_for_matching, tag_text, visible, visible_inline,
};
