//! Sandbox: turns a `std::process::Command` into one that runs under the best available isolation.
