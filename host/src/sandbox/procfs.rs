//! Process information is never granted: a path on a proc filesystem, or a
//! tree holding one, is refused. Grants are resolved in the host, so
//! `/proc/self` there is carapace itself — its environment (the API key),
//! its memory, its open files — and `/proc/<pid>` of any other process is
//! that process's. Checked on the descriptor a call is actually given
//! (race-free) and, for the trees, against the proc mounts below them.

use nix::sys::statfs::{PROC_SUPER_MAGIC, fstatfs, statfs};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Why a grant of this open file (or, `tree`, directory and everything
/// below it) is refused, if it is. `path` is the name `fd` was opened by
/// without following a link anywhere in it ([`super::bound`]), so it is
/// already its real name: nothing to resolve again.
pub fn refused_fd(fd: impl AsFd, path: &Path, tree: bool) -> Option<String> {
    match fstatfs(fd) {
        Ok(fs) if fs.filesystem_type() == PROC_SUPER_MAGIC => Some(on_proc(path)),
        Ok(_) if tree => mounts_below(path, path),
        Ok(_) => None,
        // What cannot be told is not granted.
        Err(errno) => Some(format!(
            "{} cannot be checked for process information ({errno})",
            path.display()
        )),
    }
}

/// The same for a path named in a configuration (a hook's grants, a
/// plugin's ceiling), as written and through its links: refused when the
/// path, any folder on its way, or anything a link on its way names lies
/// on a proc filesystem (`/dev/fd/0` is `/proc/self/fd/0`); `tree`: what
/// it holds counts too.
pub fn refused_path(path: &Path, tree: bool) -> Option<String> {
    if passes_through_proc(path, 0) {
        return Some(on_proc(path));
    }
    if !tree {
        return None;
    }
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    mounts_below(&real, path)
}

/// Links followed at most when judging a path.
const MAX_LINKS: usize = 16;

fn passes_through_proc(path: &Path, links: usize) -> bool {
    if links > MAX_LINKS {
        return true; // what cannot be followed to its end is not granted
    }
    path.ancestors().filter(|p| p.exists()).any(|ancestor| {
        if matches!(statfs(ancestor), Ok(fs) if fs.filesystem_type() == PROC_SUPER_MAGIC) {
            return true;
        }
        match std::fs::read_link(ancestor) {
            Ok(target) => {
                let base = ancestor.parent().unwrap_or(Path::new("/"));
                passes_through_proc(&base.join(target), links + 1)
            }
            Err(_) => false,
        }
    })
}

fn on_proc(path: &Path) -> String {
    format!(
        "{} is process information (a proc filesystem): it would expose carapace's own environment, API key and memory, or another process's; it is never granted",
        path.display()
    )
}

/// A proc mount below `real` (the tree's name with its links resolved) or
/// below `path` (as written).
fn mounts_below(real: &Path, path: &Path) -> Option<String> {
    proc_mounts()
        .iter()
        .find(|mount| mount.starts_with(real) || mount.starts_with(path))
        .map(|mount| {
            format!(
                "{} holds {}, process information (a proc filesystem) that would expose carapace's own environment and API key; it is never granted",
                path.display(),
                mount.display()
            )
        })
}

/// Where proc filesystems are mounted in carapace's mount namespace, read
/// once: only a privileged process can add one.
fn proc_mounts() -> &'static [PathBuf] {
    static MOUNTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    MOUNTS.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut mounts = parse_proc_mounts(&text);
        // Whatever mountinfo says, /proc is one.
        if !mounts.iter().any(|m| m == Path::new("/proc")) {
            mounts.push(PathBuf::from("/proc"));
        }
        mounts
    })
}

/// The mount points of `proc` filesystems in a mountinfo text.
fn parse_proc_mounts(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fstype = after.split(' ').next()?;
            let mount_point = before.split(' ').nth(4)?;
            (fstype == "proc").then(|| PathBuf::from(unescape(mount_point)))
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_mounts_are_read_from_mountinfo() {
        let text = "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n\
                    23 1 0:22 / /sys rw shared:2 - sysfs sysfs rw\n\
                    90 1 0:21 / /tmp/a\\040b rw - proc proc rw\n";
        assert_eq!(
            parse_proc_mounts(text),
            vec![PathBuf::from("/proc"), PathBuf::from("/tmp/a b")]
        );
    }

    #[test]
    fn every_spelling_of_process_information_is_refused() {
        for path in [
            "/proc/self/environ",
            "/proc/thread-self/environ",
            "/dev/fd/0",
            "/proc",
            "/",
            "/dev/stdin",
        ] {
            assert!(refused_path(Path::new(path), true).is_some(), "{path}");
        }
        let own = format!("/proc/{}/environ", std::process::id());
        assert!(refused_path(Path::new(&own), false).is_some());
        // `/` as a root of its own is not process information; as a tree
        // it holds /proc.
        assert_eq!(refused_path(Path::new("/"), false), None);
        // Control: an ordinary folder and file are not.
        assert_eq!(refused_path(Path::new("/usr/bin"), true), None);
        assert_eq!(
            refused_path(Path::new("/etc/hostname-not-there"), false),
            None
        );
    }
}
