//! What the helper mode is asked to do ([`Plan`], passed as its
//! arguments), and how each of its processes reports: a leaf that the
//! helper, `confine`, `isolate` and `guard` all read, so none of them
//! imports another for it.

use super::SandboxLayer;
use std::path::PathBuf;

/// The helper mode's argument.
pub const HELPER_ARG: &str = "__sandbox-exec";
/// The exit code of a helper that refused to run the command.
pub(super) const REFUSED_EXIT: i32 = 125;
/// The prefix of every message the helper prints about itself.
pub(super) const MESSAGE_PREFIX: &str = "carapace sandbox:";

/// What the helper was asked to do.
#[derive(Debug, Clone, Default)]
pub(super) struct Plan {
    /// Where the command may write.
    pub writes: Vec<PathBuf>,
    /// Where it may read (and run programs from); empty: everywhere.
    pub reads: Vec<PathBuf>,
    /// Existing folders that stay where they are — they cannot be renamed
    /// or removed — though what is inside may change (a git directory,
    /// whose control files are in `readonly`).
    pub pinned: Vec<PathBuf>,
    /// Existing paths under the write roots that stay read-only.
    pub readonly: Vec<PathBuf>,
    /// Existing paths the command must not read.
    pub hide: Vec<PathBuf>,
    /// Existing files the command reads in place of others, read-only:
    /// (where, what it reads there) — a masked credential's stand-in copy,
    /// the system's trusted authorities with the proxy's own.
    pub covers: Vec<(PathBuf, PathBuf)>,
    /// Names the command may not make at any depth (see `guard`).
    pub guard_names: Vec<String>,
    /// Paths the command may not make.
    pub guard_paths: Vec<PathBuf>,
    pub network: bool,
    /// Without the network: the command may still listen on ports of its
    /// own network namespace.
    pub bind: bool,
    pub required: bool,
    /// Bytes of memory for the whole process tree.
    pub memory: Option<u64>,
    /// Processes (and threads) for the whole tree.
    pub tasks: Option<u64>,
    /// The private temp dir and the bytes that may be written into it.
    pub temp: Option<(PathBuf, u64)>,
    /// carapace's egress proxy socket: the command's own network namespace
    /// gets a bridge to it on loopback (see `bridge`).
    pub egress: Option<PathBuf>,
    /// Layers turned off (tests show what each one stops).
    pub without: Vec<SandboxLayer>,
    pub command: String,
    /// Tasks the real user already ran when the helper started (the base
    /// of the per-process task limit); counted by the helper, never passed.
    pub user_tasks: u64,
}

impl Plan {
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut plan = Plan {
            required: true,
            ..Plan::default()
        };
        let mut command = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let mut value = |name: &str| {
                iter.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match arg.as_str() {
                "--write" => plan.writes.push(PathBuf::from(value("--write")?)),
                "--read" => plan.reads.push(PathBuf::from(value("--read")?)),
                "--pin" => plan.pinned.push(PathBuf::from(value("--pin")?)),
                "--readonly" => plan.readonly.push(PathBuf::from(value("--readonly")?)),
                "--hide" => plan.hide.push(PathBuf::from(value("--hide")?)),
                "--cover" => {
                    let at = PathBuf::from(value("--cover")?);
                    plan.covers.push((at, PathBuf::from(value("--cover")?)));
                }
                "--guard-name" => plan.guard_names.push(value("--guard-name")?),
                "--guard-path" => plan.guard_paths.push(PathBuf::from(value("--guard-path")?)),
                "--network" => plan.network = true,
                "--allow-bind" => plan.bind = true,
                "--sandbox-optional" => plan.required = false,
                "--memory" => {
                    plan.memory = Some(
                        value("--memory")?
                            .parse()
                            .map_err(|_| "--memory needs a number of bytes")?,
                    );
                }
                "--tasks" => {
                    plan.tasks = Some(
                        value("--tasks")?
                            .parse()
                            .map_err(|_| "--tasks needs a number")?,
                    );
                }
                "--temp" => {
                    let dir = PathBuf::from(value("--temp")?);
                    let bytes = value("--temp-size")?
                        .parse()
                        .map_err(|_| "--temp needs a folder and a number of bytes")?;
                    plan.temp = Some((dir, bytes));
                }
                "--egress" => plan.egress = Some(PathBuf::from(value("--egress")?)),
                "--without" => {
                    let name = value("--without")?;
                    plan.without.push(
                        SandboxLayer::parse(&name)
                            .ok_or_else(|| format!("unknown sandbox layer {name}"))?,
                    );
                }
                "--" => {
                    command = iter.next().cloned();
                    break;
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        plan.command = command.ok_or("no command")?;
        Ok(plan)
    }

    pub fn uses(&self, layer: SandboxLayer) -> bool {
        !self.without.contains(&layer)
    }

    /// Whether protected paths that appear during the call are moved
    /// aside after it: only when the creation guard may be missing (it is
    /// off, or the sandbox is optional and may have run without it) —
    /// with the guard, the command cannot make them, and what appears was
    /// made by someone else (the user) and is left alone.
    pub fn sweeps(&self) -> bool {
        self.uses(SandboxLayer::ProtectedPaths)
            && (!self.uses(SandboxLayer::CreationGuard) || !self.required)
    }

    /// The arguments that make a helper follow this plan.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec![HELPER_ARG.into()];
        for (flag, paths) in [
            ("--write", &self.writes),
            ("--read", &self.reads),
            ("--pin", &self.pinned),
            ("--readonly", &self.readonly),
            ("--hide", &self.hide),
            ("--guard-path", &self.guard_paths),
        ] {
            for path in paths {
                args.push(flag.into());
                args.push(path.into());
            }
        }
        for (at, shown) in &self.covers {
            args.extend(["--cover".into(), at.into(), shown.into()]);
        }
        for name in &self.guard_names {
            args.push("--guard-name".into());
            args.push(name.into());
        }
        if self.network {
            args.push("--network".into());
        }
        if self.bind {
            args.push("--allow-bind".into());
        }
        if !self.required {
            args.push("--sandbox-optional".into());
        }
        if let Some(memory) = self.memory {
            args.push("--memory".into());
            args.push(memory.to_string().into());
        }
        if let Some(tasks) = self.tasks {
            args.push("--tasks".into());
            args.push(tasks.to_string().into());
        }
        if let Some((dir, bytes)) = &self.temp {
            args.push("--temp".into());
            args.push(dir.into());
            args.push(bytes.to_string().into());
        }
        if let Some(socket) = &self.egress {
            args.push("--egress".into());
            args.push(socket.into());
        }
        for layer in &self.without {
            args.push("--without".into());
            args.push(layer.as_str().into());
        }
        args.push("--".into());
        args.push(self.command.clone().into());
        args
    }
}

pub(super) fn refuse(message: &str) -> i32 {
    eprintln!("{MESSAGE_PREFIX} {message}");
    REFUSED_EXIT
}

pub(super) fn warn(message: &str) {
    eprintln!("{MESSAGE_PREFIX} warning: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_survives_its_arguments() -> Result<(), String> {
        let plan = Plan {
            writes: vec!["/w".into()],
            reads: vec!["/usr".into(), "/w".into()],
            pinned: vec!["/w/.git".into()],
            readonly: vec!["/w/.git/config".into()],
            hide: vec!["/h/.ssh".into()],
            covers: vec![("/h/.npmrc".into(), "/tmp/p/masked-0".into())],
            guard_names: vec![".git".into(), ".cargo/config.toml".into()],
            guard_paths: vec!["/h/.bashrc".into()],
            network: true,
            bind: true,
            required: false,
            memory: Some(1 << 30),
            tasks: Some(64),
            temp: Some(("/tmp/carapace-cmd-x".into(), 16 << 20)),
            egress: Some("/tmp/carapace-egress-x/s".into()),
            without: vec![SandboxLayer::Seccomp],
            command: "echo 'hi' -- --write".into(),
            user_tasks: 0,
        };
        let args: Vec<String> = plan
            .to_args()
            .into_iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let back = Plan::parse(&args)?;
        assert_eq!(format!("{back:?}"), format!("{plan:?}"));
        assert!(Plan::parse(&["--memory".into(), "lots".into()]).is_err());
        assert!(
            Plan::parse(&["--write".into(), "/w".into()]).is_err(),
            "no command"
        );
        Ok(())
    }
}
