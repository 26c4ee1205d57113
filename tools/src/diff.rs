//! Before/after previews for write and edit approvals.

/// A unified diff of `before` → `after`, labelled with `path`. Plain text; the CLI colours it.
pub fn unified(path: &str, before: &str, after: &str) -> String {
    if before == after {
        return format!("{path}: no changes");
    }
    let diff = similar::TextDiff::from_lines(before, after);
    let out = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    truncate_preview(out)
}

fn truncate_preview(out: String) -> String {
    const MAX_PREVIEW: usize = 16 * 1024;
    crate::registry::clip_marked(out, MAX_PREVIEW, "\n... preview truncated ...\n")
}

/// A unified diff between two differently named texts (`v1.md` → `v2.md` of an artifact), in
/// the same form as [`unified`] so the same colouring applies.
pub fn between(old_label: &str, new_label: &str, before: &str, after: &str) -> String {
    if before == after {
        return format!("{new_label}: no changes from {old_label}");
    }
    let diff = similar::TextDiff::from_lines(before, after);
    let out = diff
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string();
    truncate_preview(out)
}
