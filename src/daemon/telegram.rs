//! ggd's Telegram channel, resolved at start from its flags and the configuration (the channel
//! itself is `crate::telegram`; the daemon depends on it, not the other way round).

use std::path::Path;

use crate::telegram::BotOptions;

use super::args::{Failure, Flags};

/// The channel ggd serves, resolved from its flags and the configuration: `None` when the
/// configuration has no `telegram` section (an error with `--telegram`). The token, the
/// workspace and the saved offset are checked here, so that ggd does not start with a channel
/// that cannot work.
pub(super) fn ggd_channel(
    flags: &Flags,
    config: &crate::app::config::Config,
    home: &Path,
    cwd: &Path,
) -> Result<Option<BotOptions>, Failure> {
    let Some(telegram) = config.telegram.clone() else {
        if flags.telegram {
            return Err(Failure::Usage(
                "--telegram: ~/.gg/config.json has no \"telegram\" section".to_string(),
            ));
        }
        return Ok(None);
    };
    let token = telegram.token(home).map_err(Failure::Failed)?;
    let workspace = telegram.workspace_dir(home, cwd).map_err(Failure::Failed)?;
    crate::telegram::load_offset(home).map_err(|e| Failure::Failed(format!("telegram: {e}")))?;
    Ok(Some(BotOptions {
        home: home.to_path_buf(),
        session_dir: flags.session_dir.clone(),
        config: config.clone(),
        telegram,
        token,
        workspace,
        overrides: flags.overrides(),
        context_files: !flags.no_context_files,
        skills: !flags.no_skills,
        no_memory: flags.no_memory,
        turn_timeout: flags.run_timeout,
    }))
}
