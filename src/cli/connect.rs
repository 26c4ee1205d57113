//! `gg connect`: sign in to the person's accounts for the connector tools (Google: Gmail and
//! Calendar), see which are signed in, and revoke. The work is in `connectors::google`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::app::config::Config;
use crate::connectors::google::{self, oauth, token};

#[derive(Debug, clap::Subcommand)]
pub enum ConnectCommand {
    /// Sign in to Google (OAuth in your browser); the scopes asked for are listed first.
    Google {
        /// Open the sign-in URL with xdg-open as well as printing it.
        #[arg(long)]
        open: bool,
        /// How long to wait for the browser to come back, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 300)]
        timeout: u64,
    },
    /// Which connectors are signed in, with which scopes.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a connector's access at the provider, then delete its tokens.
    Revoke {
        #[arg(value_parser = ["google"])]
        connector: String,
    },
}

pub fn run(command: ConnectCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("gg connect: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(connect(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gg connect: {}", crate::display::visible(&e));
            ExitCode::from(1)
        }
    }
}

async fn connect(command: ConnectCommand) -> Result<(), String> {
    let home = tools::security::home_dir();
    let config = Config::load(&home)?;
    let google = &config.connectors.google;
    match command {
        ConnectCommand::Google { open, timeout } => {
            if timeout == 0 {
                return Err("--timeout must be at least 1 second".to_string());
            }
            let sign_in = oauth::SignIn::begin(google).await?;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "gg asks Google for these scopes:");
            for scope in sign_in.scopes() {
                let _ = writeln!(out, "  {scope}\n    {}", google::scope_meaning(scope));
            }
            let _ = writeln!(
                out,
                "gg never sends mail. Open this URL to sign in (it comes back to 127.0.0.1):\n{}",
                sign_in.url()
            );
            let _ = out.flush();
            drop(out);
            if open {
                open_in_browser(sign_in.url().as_str());
            }
            let tokens = sign_in.finish(&home, Duration::from_secs(timeout)).await?;
            println!(
                "Signed in to Google; tokens saved in {} (0600).",
                token::path(&home).display()
            );
            if tokens.refresh_token.is_none() {
                println!("Google sent no refresh token: you will sign in again when it expires.");
            }
            if !config.tools.google {
                println!(
                    "Turn the tools on with \"tools\": {{\"google\": true}} in ~/.gg/config.json."
                );
            }
            Ok(())
        }
        ConnectCommand::Status { json } => {
            if json {
                let google = google::status(&home, google, config.tools.google)?;
                println!("{}", serde_json::json!({ "google": google }));
                return Ok(());
            }
            let tokens = token::load(&home)?;
            match tokens {
                Some(t) => {
                    println!(
                        "google: signed in since {} ({}); tools {}",
                        t.signed_in_at,
                        if t.refresh_token.is_some() {
                            "refreshed automatically"
                        } else {
                            "no refresh token"
                        },
                        if config.tools.google {
                            "on"
                        } else {
                            "off (\"tools\": {\"google\": true} turns them on)"
                        }
                    );
                    for scope in &t.scopes {
                        println!("  {scope}");
                    }
                }
                None => println!("google: not signed in (gg connect google)"),
            }
            Ok(())
        }
        ConnectCommand::Revoke { connector: _ } => {
            match oauth::revoke(&home, google).await? {
                oauth::Revoked::AtGoogle => {
                    println!("Revoked gg's access at Google and deleted the tokens.");
                }
                oauth::Revoked::AlreadyInvalid => println!(
                    "Google no longer accepted the token (already revoked or expired); deleted \
                     the tokens."
                ),
                oauth::Revoked::NotSignedIn => {
                    println!("google: not signed in; nothing to revoke.")
                }
            }
            Ok(())
        }
    }
}

/// The desktop's opener for `url`, detached; a failure is said, and the printed URL still
/// works. The opener gg's tools use: found in fixed places, nothing secret in its environment,
/// no program from a directory the agent's commands write.
fn open_in_browser(url: &str) {
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    let started = match tools::computer::opener_command(url, &cwd) {
        Some(mut command) => command.spawn(),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no desktop opener (/usr/bin/xdg-open)",
        )),
    };
    if let Err(e) = started {
        eprintln!("gg connect: could not open a browser ({e}); open the URL above yourself");
    }
}
