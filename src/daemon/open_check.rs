//! `open.check {target}`: how the agent's `open` tool would class a target
//! (`tools::computer::target::classify`), for a client that opens links itself. The desktop shell
//! asks it before handing a link from the page to the system browser, so a click and the agent's
//! tool pass the same checks. Nothing is opened here.

use serde::Deserialize;
use serde_json::{Value, json};

use super::rpc::RpcError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckParams {
    target: String,
}

/// `{target, class, reason}`: `target` is what an opener would be given (a normalised URL or an
/// absolute path), `class` one of `read-only`, `normal`, `dangerous`. A target that is never
/// opened (empty, too long, control characters) is `-32602`.
pub fn check(settings: &super::runtime::Settings, params: Value) -> Result<Value, RpcError> {
    let p: CheckParams = serde_json::from_value(params).map_err(RpcError::invalid_params)?;
    let target = tools::computer::target::classify(&p.target, &settings.cwd)
        .map_err(RpcError::invalid_params)?;
    Ok(json!({
        "target": target.argument,
        "class": target.class.as_str(),
        "reason": target.reason,
    }))
}
