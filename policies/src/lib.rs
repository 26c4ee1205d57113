//! Approval policy: given who is asking and what the classifier said, allow, ask or deny.
#![forbid(unsafe_code)]
