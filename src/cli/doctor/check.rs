//! One check of `gg doctor` and its outcome, shared by the files that make the checks and the
//! report that prints them.

use serde::Serialize;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Status {
    Ok,
    Skipped,
    Warn,
    Fail,
}

impl Status {
    pub(super) fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Skipped => "skipped",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }

    pub(super) fn colour(self) -> &'static str {
        match self {
            Status::Ok => "32",
            Status::Skipped => "2",
            Status::Warn => "33",
            Status::Fail => "1;31",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Check {
    pub(super) name: String,
    pub(super) status: Status,
    pub(super) detail: String,
}

pub(super) fn check(name: &str, status: Status, detail: impl Into<String>) -> Check {
    Check {
        name: name.to_string(),
        status,
        detail: detail.into(),
    }
}
