//! Processes seen through `/proc`, whatever their namespace: how a test
//! knows that what a command left running is gone — the event that makes a
//! later "the file was never written" mean something, instead of a sleep
//! past the moment it would have been.

use std::time::{Duration, Instant};

/// The processes (other than this one) whose command line contains
/// `needle`. A zombie has no command line and is not counted: it can do
/// nothing more.
pub fn mentioning(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
                let line: Vec<u8> = line
                    .into_iter()
                    .map(|b| if b == 0 { b' ' } else { b })
                    .collect();
                String::from_utf8_lossy(&line).contains(needle)
            })
        })
        .collect()
}

/// Waits until no process mentions `needle`, for at most `patience`;
/// otherwise says which are left.
pub fn wait_until_none_mention(needle: &str, patience: Duration) -> Result<(), String> {
    let deadline = Instant::now() + patience;
    loop {
        let left = mentioning(needle);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "processes mentioning {needle:?} still run after {patience:?}: {left:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
