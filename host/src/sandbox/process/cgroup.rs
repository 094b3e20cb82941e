//! One cgroup per command: a memory cap and a task cap for the whole
//! process tree, whatever it forks. cgroup v2 when `/sys/fs/cgroup` is the
//! unified hierarchy, else the v1 `memory` and `pids` hierarchies. The group
//! is made beside the helper's own (where the helper may write: root, or a
//! delegated subtree) and removed when the call ends.

use nix::unistd::Pid;
use std::path::{Path, PathBuf};

const ROOT: &str = "/sys/fs/cgroup";

pub(super) struct CallGroup {
    /// One directory per hierarchy (one under v2, two under v1).
    dirs: Vec<PathBuf>,
}

impl CallGroup {
    pub fn create(memory: Option<u64>, tasks: Option<u64>) -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let name = format!("carapace-call-{}", std::process::id());
        let unified = Path::new(ROOT).join("cgroup.controllers").exists();
        let mut group = CallGroup { dirs: Vec::new() };
        let made = if unified {
            group.make_v2(&own, &name, memory, tasks)
        } else {
            group.make_v1(&own, &name, memory, tasks)
        };
        match made {
            Ok(()) => Ok(group),
            Err(e) => {
                group.remove();
                Err(e)
            }
        }
    }

    fn make_v2(
        &mut self,
        own: &str,
        name: &str,
        memory: Option<u64>,
        tasks: Option<u64>,
    ) -> Result<(), String> {
        let path = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or("no cgroup v2 entry")?;
        let parent = Path::new(ROOT).join(path.trim_start_matches('/'));
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.dirs.push(dir.clone());
        if !dir.join("memory.max").exists() || !dir.join("pids.max").exists() {
            // The controllers are not delegated to this level yet.
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory +pids");
        }
        if let Some(memory) = memory {
            write(&dir.join("memory.max"), &memory.to_string())?;
            let _ = std::fs::write(dir.join("memory.swap.max"), "0");
        }
        if let Some(tasks) = tasks {
            write(&dir.join("pids.max"), &tasks.to_string())?;
        }
        Ok(())
    }

    fn make_v1(
        &mut self,
        own: &str,
        name: &str,
        memory: Option<u64>,
        tasks: Option<u64>,
    ) -> Result<(), String> {
        for (controller, file, limit) in [
            ("memory", "memory.limit_in_bytes", memory),
            ("pids", "pids.max", tasks),
        ] {
            let Some(limit) = limit else { continue };
            let path = own
                .lines()
                .find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                    controllers
                        .split(',')
                        .any(|c| c == controller)
                        .then_some(path)
                })
                .ok_or_else(|| format!("no {controller} cgroup"))?;
            let dir = Path::new(ROOT)
                .join(controller)
                .join(path.trim_start_matches('/'))
                .join(name);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            self.dirs.push(dir.clone());
            write(&dir.join(file), &limit.to_string())?;
            if controller == "memory" {
                // No swapping past the cap where the kernel accounts swap.
                let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
            }
        }
        Ok(())
    }

    /// Moves `pid` (and so everything it will fork) into the group.
    pub fn admit(&self, pid: Pid) -> Result<(), String> {
        for dir in &self.dirs {
            write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Removes the group (its processes are gone: the call's init has been
    /// reaped, and the namespace died with it).
    pub fn remove(self) {
        for dir in self.dirs.iter().rev() {
            for _ in 0..50 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(2)),
                }
            }
        }
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Removes what a helper that was killed outright (SIGKILL) left behind:
/// the group it made for its call, found where it would have made it.
pub(super) fn remove_leftover(helper: u32) {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
        return;
    };
    let name = format!("carapace-call-{helper}");
    let mut dirs = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            dirs.push(Path::new(ROOT).join(path).join(&name));
        }
        for controller in ["memory", "pids"] {
            if controllers.split(',').any(|c| c == controller) {
                dirs.push(Path::new(ROOT).join(controller).join(path).join(&name));
            }
        }
    }
    dirs.retain(|d| d.is_dir());
    if !dirs.is_empty() {
        CallGroup { dirs }.remove();
    }
}
