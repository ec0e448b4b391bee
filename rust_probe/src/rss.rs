//! Resident set size of this process, read from `/proc/self/status`.
//!
//! Reading it allocates a little and does a syscall, so the loop only calls it
//! outside the timed region. `None` where the file does not exist (not Linux).

pub fn current_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_vm_rss_line() {
        let status = "Name:\tp10\nVmPeak:\t  9000 kB\nVmRSS:\t    2048 kB\nThreads:\t1\n";
        assert_eq!(parse_vm_rss(status), Some(2048 * 1024));
        assert_eq!(parse_vm_rss("Name:\tp10\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_a_plausible_value_here() {
        let rss = current_bytes().expect("VmRSS on Linux");
        assert!(rss > 100 * 1024, "{rss}");
    }
}
