//! `computer_info`: what machine this is, read through `sysinfo` (on Linux, `/proc` and
//! `statvfs`), as a few lines of text.

use std::fmt::Write as _;

use sysinfo::{Disks, System};

use super::procs::human_bytes;

/// OS, kernel, CPU, memory, disks (mount, file system, size, free), load, uptime and host name.
pub fn describe() -> String {
    let mut system = System::new();
    system.refresh_memory();
    system.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
    let mut out = String::new();
    let unknown = || "unknown".to_string();
    let _ = writeln!(
        out,
        "hostname: {}",
        System::host_name().unwrap_or_else(unknown)
    );
    let _ = writeln!(
        out,
        "os: {}",
        System::long_os_version().unwrap_or_else(unknown)
    );
    let _ = writeln!(
        out,
        "kernel: {}",
        System::kernel_version().unwrap_or_else(unknown)
    );
    let _ = writeln!(out, "arch: {}", System::cpu_arch());
    let brand = system
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(unknown);
    let physical = System::physical_core_count()
        .map(|n| format!(", {n} physical cores"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "cpu: {brand} ({} logical CPUs{physical})",
        system.cpus().len()
    );
    let _ = writeln!(
        out,
        "memory: {} total, {} available, {} used; swap {} total, {} used",
        human_bytes(system.total_memory()),
        human_bytes(system.available_memory()),
        human_bytes(system.used_memory()),
        human_bytes(system.total_swap()),
        human_bytes(system.used_swap()),
    );
    let load = System::load_average();
    let _ = writeln!(
        out,
        "load: {:.2} {:.2} {:.2} (1, 5, 15 min)",
        load.one, load.five, load.fifteen
    );
    let _ = writeln!(out, "uptime: {}", uptime(System::uptime()));
    let disks = Disks::new_with_refreshed_list();
    let _ = writeln!(out, "disks:");
    for disk in disks.list() {
        let _ = writeln!(
            out,
            "  {} ({}): {} total, {} free",
            disk.mount_point().display(),
            disk.file_system().to_string_lossy(),
            human_bytes(disk.total_space()),
            human_bytes(disk.available_space()),
        );
    }
    out
}

fn uptime(seconds: u64) -> String {
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60);
    if days > 0 {
        format!("{days}d {hours}h {minutes}m")
    } else {
        format!("{hours}h {minutes}m")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_kernel_view() {
        let text = super::describe();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert!(
            text.contains(&format!("kernel: {}", release.trim())),
            "{text}"
        );
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert!(
            text.contains(&format!("hostname: {}", hostname.trim())),
            "{text}"
        );
        assert!(text.contains("disks:\n  /"), "{text}");
    }
}
