//! Managing the job store: adding a job from its arguments, finding one by id or name, pausing,
//! resuming and removing. Both front ends use it: `gg job` (`cli/job.rs`) and ggd's `job.*`
//! methods. Errors are text for the front end to show.

use std::path::Path;

use jiff::Timestamp;
use policies::Mode;
use tools::ceiling::{Ceiling, looseness};
use tools::network::NetworkMode;

use super::schedule::{
    default_time_zone_name, next_cron, parse_at, parse_cron, parse_duration, time_zone,
};
use super::{DEFAULT_TIMEOUT, Job, JobStore, Kind, random_hex};

/// The note printed when no daemon holds the instance lock.
pub const NO_DAEMON_NOTE: &str =
    "note: ggd is not running; jobs fire only while the daemon is alive";

/// `gg job add` arguments.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "at", "in_"])))]
pub struct AddArgs {
    #[arg(long)]
    pub name: String,
    /// 5-field cron expression or @hourly/@daily/@weekly/@monthly/@yearly.
    #[arg(long)]
    pub cron: Option<String>,
    /// RFC 3339, or "YYYY-MM-DD HH:MM" in the job's time zone.
    #[arg(long)]
    pub at: Option<String>,
    /// From now: 90s, 10m, 2h, 1d, 1h30m.
    #[arg(long = "in", value_name = "DURATION")]
    pub in_: Option<String>,
    /// IANA zone (default: the system's).
    #[arg(long)]
    pub timezone: Option<String>,
    /// Per-run limit (default 10m).
    #[arg(long)]
    pub timeout: Option<String>,
    /// Let the job run normal gated tools; dangerous commands stay denied.
    #[arg(long)]
    pub allow_all: bool,
    /// Run the job's tools outside the sandbox.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Network policy of the job's sandboxed commands: off, on or allow-list.
    #[arg(long, value_name = "MODE")]
    pub network: Option<String>,
    /// A further host the allow-list lets through (repeatable; *.example.com for subdomains).
    #[arg(long = "allow-domain", value_name = "HOST")]
    pub allow_domain: Vec<String>,
    /// The prompt (options may follow it; put `--` before a prompt that starts with '-').
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

/// Builds and stores a job; `cwd` becomes the directory it runs in. Started by a command of a gg
/// session (`GG_PARENT_CEILING`), the job is held to that session's ceiling ([`hold_to_ceiling`]).
pub fn add_job(
    store: &JobStore,
    args: &AddArgs,
    cwd: &Path,
    now: Timestamp,
) -> Result<Job, String> {
    add_job_within(store, args, cwd, now, ceiling_from_env()?.as_ref())
}

/// [`add_job`] under an explicit ceiling (`None`: not started by a gg session's command), and
/// the network mode a job that names none would fire with.
pub fn add_job_within(
    store: &JobStore,
    args: &AddArgs,
    cwd: &Path,
    now: Timestamp,
    ceiling: Option<&(Ceiling, NetworkMode)>,
) -> Result<Job, String> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err("--name must not be empty".to_string());
    }
    check_name(name)?;
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() {
        return Err("a prompt is required".to_string());
    }
    let timezone = args.timezone.clone().unwrap_or_else(default_time_zone_name);
    let tz = time_zone(&timezone)?;
    let (kind, schedule, next_run) = match (&args.cron, &args.at, &args.in_) {
        (Some(expr), None, None) => {
            let cron = parse_cron(expr)?;
            (
                Kind::Cron,
                expr.trim().to_string(),
                next_cron(&cron, &tz, now)?,
            )
        }
        (None, Some(at), None) => {
            let at = parse_at(at, &tz)?;
            if at <= now {
                return Err(format!("--at {at} is in the past"));
            }
            (Kind::Once, at.to_string(), at)
        }
        (None, None, Some(after)) => {
            let after = parse_duration(after)?;
            let at = jiff::SignedDuration::try_from(after)
                .ok()
                .and_then(|d| now.checked_add(d).ok())
                .and_then(|t| t.round(jiff::Unit::Second).ok())
                .ok_or_else(|| "--in is too far in the future".to_string())?;
            (Kind::Once, at.to_string(), at)
        }
        _ => return Err("exactly one of --cron, --at or --in is required".to_string()),
    };
    let timeout = match &args.timeout {
        Some(text) => parse_duration(text).map_err(|e| format!("--timeout: {e}"))?,
        None => DEFAULT_TIMEOUT,
    };
    let timeout =
        u64::try_from(timeout.as_nanos()).map_err(|_| "--timeout is too large".to_string())?;
    // Checked now, so a typo fails at `gg job add` rather than at 3 a.m.
    if let Some(mode) = &args.network {
        mode.parse::<tools::network::NetworkMode>()
            .map_err(|e| format!("--network: {e}"))?;
    }
    tools::network::AllowList::parse(&args.allow_domain)
        .map_err(|e| format!("--allow-domain: {e}"))?;
    let mut job = Job {
        id: String::new(),
        name: name.to_string(),
        kind,
        schedule,
        prompt,
        timezone,
        workspace: cwd.display().to_string(),
        workspace_id: String::new(),
        enabled: true,
        auto_approve: args.allow_all,
        sandbox: !args.no_sandbox,
        network: args.network.clone(),
        allow_domains: args.allow_domain.clone(),
        timeout,
        created_at: now,
        last_run: None,
        next_run: Some(next_run),
        run_count: 0,
    };
    if let Some((ceiling, default_network)) = ceiling {
        hold_to_ceiling(ceiling, *default_network, &mut job)?;
    }
    store.update(|jobs| {
        let mut id = random_hex(3)?;
        while jobs.iter().any(|j| j.id == id) {
            id = random_hex(3)?;
        }
        job.id = id;
        jobs.push(job.clone());
        Ok(job.clone())
    })
}

/// The ceiling of the gg session whose command started this process, with the network mode a
/// job that names none fires with (`network` in `~/.gg/config.json`, else the allow-list), which
/// the ceiling is checked against. `None` outside a gg session's command.
pub fn ceiling_from_env() -> Result<Option<(Ceiling, NetworkMode)>, String> {
    let Some(ceiling) = Ceiling::from_env() else {
        return Ok(None);
    };
    let user = tools::network::load_user_settings(&tools::security::home_dir())
        .map_err(|e| e.to_string())?;
    Ok(Some((
        ceiling,
        user.network.unwrap_or(NetworkMode::AllowList),
    )))
}

/// Refuses a job that would do more, when it fires, than the gg session it is scheduled (or
/// fired) from may: a command of a sandboxed session cannot schedule an unsandboxed job, a job
/// with a wider network than the session's, or (with `--allow-all`) one that runs normal commands
/// unasked when the session asks for them. The job runs later, out of the session's reach, so
/// the ceiling a nested `gg` gets must hold for it too. `network` is the mode the job fires with.
pub fn within_ceiling(
    ceiling: &Ceiling,
    sandbox: bool,
    allow_all: bool,
    network: NetworkMode,
) -> Result<(), String> {
    const FROM: &str = "this gg was started by a command of another gg session";
    if ceiling.sandbox && !sandbox {
        return Err(format!(
            "--no-sandbox: {FROM}, which is sandboxed; a job it schedules cannot run without the \
             sandbox"
        ));
    }
    let mode = Mode::Unattended { allow_all };
    if looseness(mode) > looseness(ceiling.mode) {
        return Err(format!(
            "--allow-all: {FROM}, whose approval mode is {}; a job it schedules cannot run \
             commands that session would ask about",
            ceiling.mode.as_str()
        ));
    }
    if sandbox && network > ceiling.network {
        return Err(format!(
            "--network: {FROM}, whose network is {}; a job it schedules cannot open it to {network}",
            ceiling.network
        ));
    }
    Ok(())
}

/// [`within_ceiling`] for a stored or new job. A sandboxed job under a sandboxed ceiling that
/// names no network is given one (the default, no wider than the ceiling), so a later change of
/// `~/.gg/config.json` cannot widen it past the ceiling.
pub fn hold_to_ceiling(
    ceiling: &Ceiling,
    default_network: NetworkMode,
    job: &mut Job,
) -> Result<(), String> {
    let named = job
        .network
        .as_deref()
        .map(str::parse::<NetworkMode>)
        .transpose()
        .map_err(|e| format!("--network: {e}"))?;
    let network = named.unwrap_or(default_network.min(ceiling.network));
    within_ceiling(ceiling, job.sandbox, job.auto_approve, network)?;
    if ceiling.sandbox && job.sandbox {
        job.network = Some(network.as_str().to_string());
    }
    Ok(())
}

/// The longest job name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// A job name is shown on terminals (`gg job list`, notifications), in the web UI and to the model
/// in the job's prompt, and becomes part of its sessions' names: letters and digits of any script,
/// spaces, `.`, `_` and `-`, at most [`MAX_NAME_CHARS`]. No terminal controls, invisible
/// characters, quotes or path separators (`../../x` is refused).
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_alphanumeric() || matches!(c, ' ' | '.' | '_' | '-');
    if name.chars().count() <= MAX_NAME_CHARS && name.chars().all(allowed) {
        return Ok(());
    }
    Err(format!(
        "--name \"{}\": a job name may hold letters, digits, spaces, '.', '_' and '-', at most \
         {MAX_NAME_CHARS} characters",
        crate::display::visible_inline(name)
    ))
}

/// Finds a job by id, else by unique name.
pub fn resolve<'a>(jobs: &'a [Job], reference: &str) -> Result<&'a Job, String> {
    if let Some(job) = jobs.iter().find(|j| j.id == reference) {
        return Ok(job);
    }
    let mut named = jobs.iter().filter(|j| j.name == reference);
    match (named.next(), named.next()) {
        (Some(job), None) => Ok(job),
        (Some(_), Some(_)) => Err(format!("multiple jobs named \"{reference}\"; use the id")),
        _ => Err(format!("no job \"{reference}\"")),
    }
}

fn resolve_mut<'a>(jobs: &'a mut [Job], reference: &str) -> Result<&'a mut Job, String> {
    let id = resolve(jobs, reference)?.id.clone();
    jobs.iter_mut()
        .find(|j| j.id == id)
        .ok_or_else(|| format!("no job \"{reference}\""))
}

/// Stops a job from firing.
pub fn pause(store: &JobStore, reference: &str) -> Result<Job, String> {
    store.update(|jobs| {
        let job = resolve_mut(jobs, reference)?;
        job.enabled = false;
        Ok(job.clone())
    })
}

/// Re-enables a job. A one-shot job that already ran refuses; one that never ran and is past
/// due fires immediately; a cron job is rescheduled from now. Started by a command of a gg
/// session, only a job within that session's ceiling is resumed ([`hold_to_ceiling`]).
pub fn resume(store: &JobStore, reference: &str, now: Timestamp) -> Result<Job, String> {
    resume_checked(store, reference, now, &|_| Ok(()))
}

/// [`resume`], with the job first held to `check` (ggd's floor), under the store's lock so
/// what is checked is what is resumed; `check` may pin the job's network.
pub fn resume_checked(
    store: &JobStore,
    reference: &str,
    now: Timestamp,
    check: &dyn Fn(&mut Job) -> Result<(), String>,
) -> Result<Job, String> {
    let ceiling = ceiling_from_env()?;
    store.update(|jobs| {
        let job = resolve_mut(jobs, reference)?;
        let mut held = job.clone();
        if let Some((ceiling, default_network)) = &ceiling {
            hold_to_ceiling(ceiling, *default_network, &mut held)?;
        }
        check(&mut held)?;
        *job = held;
        match job.kind {
            Kind::Once if job.run_count > 0 || job.last_run.is_some() => {
                return Err(format!(
                    "job {} already ran; a one-shot job cannot be resumed",
                    job.id
                ));
            }
            Kind::Once => {
                let at = job
                    .schedule
                    .parse::<Timestamp>()
                    .map_err(|e| format!("job {}: bad schedule: {e}", job.id))?;
                job.next_run = Some(at.max(now));
            }
            Kind::Cron => job.next_run = Some(super::scheduler::next_cron_run(job, now)?),
        }
        job.enabled = true;
        Ok(job.clone())
    })
}

/// Deletes a job.
pub fn remove(store: &JobStore, reference: &str) -> Result<Job, String> {
    store.update(|jobs| {
        let id = resolve(jobs, reference)?.id.clone();
        let index = jobs
            .iter()
            .position(|j| j.id == id)
            .ok_or_else(|| format!("no job \"{reference}\""))?;
        Ok(jobs.remove(index))
    })
}

/// Whether a daemon holds `~/.gg/ggd.pid`. An unreadable lock file counts as "not running" so
/// the user is warned rather than reassured.
pub fn daemon_running(home: &Path) -> bool {
    crate::app::lock::daemon_alive(home).unwrap_or(false)
}
