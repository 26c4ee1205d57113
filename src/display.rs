//! Terminal-safe text: see the [`termsafe`] crate. Every path in gg that shows text from the
//! model or a tool to a person goes through [`visible`] or [`visible_inline`].

pub use termsafe::{flag_controls, has_controls, is_control, visible, visible_inline};
