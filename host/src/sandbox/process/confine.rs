//! What the command's own process applies to itself before it execs:
//! limits, Landlock, no capabilities, a seccomp filter.

use super::SandboxLayer;
use super::plan::{Plan, refuse, warn};
use std::path::PathBuf;

/// Why a layer of the OS sandbox could not be applied to the command's
/// process; what the refusal (or the warning) says, its causes joined.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConfineError {
    #[error("Landlock cannot be set up")]
    Landlock(#[source] landlock::RulesetError),
    #[error("the kernel does not enforce Landlock")]
    LandlockNotEnforced,
    #[error(
        "Landlock ABI {abi} cannot stop a command from truncating files outside the write roots (ABI {TRUNCATE_ABI}, Linux 6.2, is needed)"
    )]
    NoTruncateControl { abi: i32 },
    #[error(
        "without a network namespace, Landlock ABI {NETWORK_ABI} (Linux 6.7) is needed to keep the command off the network"
    )]
    NoNetworkControl,
    #[error("cannot set no_new_privs")]
    NoNewPrivs(#[source] nix::Error),
    #[error("cannot limit {what}")]
    Limit {
        what: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("cannot {what}")]
    Capabilities {
        what: String,
        #[source]
        source: caps::errors::CapsError,
    },
    #[error("cannot build the seccomp filter")]
    SeccompFilter(#[source] seccompiler::BackendError),
    #[error("cannot apply seccomp")]
    Seccomp(#[source] seccompiler::Error),
    /// The creation guard's own filter or its hand-off.
    #[error("{0}")]
    Guard(String),
    #[error("cannot hand the creation guard its listener")]
    Handoff(#[source] nix::Error),
    #[cfg(not(target_os = "linux"))]
    #[error("no OS sandbox is implemented for this platform")]
    Unsupported,
}

impl ConfineError {
    /// The message with its causes, as the refusal says it.
    pub(super) fn describe(&self) -> String {
        crate::sandbox::describe_chain(self)
    }
}

/// The Landlock ABI from which pathname UNIX sockets are governed by
/// Landlock itself (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`); below it, seccomp
/// refuses new UNIX sockets altogether.
const UNIX_SOCKETS_ABI: i32 = 9;
/// The Landlock ABI from which truncating a file counts as a write.
const TRUNCATE_ABI: i32 = 3;
/// The Landlock ABI from which TCP connect and bind are governed.
const NETWORK_ABI: i32 = 4;

/// Applies every layer the plan uses to this process. `namespaced`: the
/// process is inside the call's namespaces (a private network, PID and
/// mount view) and its tree is already limited by a cgroup when
/// `limited_by_group`.
#[cfg(target_os = "linux")]
pub(super) fn apply(
    plan: &Plan,
    namespaced: bool,
    limited_by_group: bool,
) -> Result<(), ConfineError> {
    let abi = restrict(plan, namespaced)?;
    finish(plan, namespaced, limited_by_group, abi)
}

/// The layers a process and everything it forks share: Landlock, no core
/// dumps, `no_new_privs`, no capabilities. Returns the Landlock ABI the
/// kernel enforced (what [`finish`] judges by).
#[cfg(target_os = "linux")]
pub(super) fn restrict(plan: &Plan, namespaced: bool) -> Result<i32, ConfineError> {
    let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
    let abi = if plan.uses(SandboxLayer::Landlock) {
        landlock(plan, namespaced)?
    } else {
        0
    };
    nix::sys::prctl::set_no_new_privs().map_err(ConfineError::NoNewPrivs)?;
    if plan.uses(SandboxLayer::Capabilities) {
        drop_capabilities()?;
    }
    Ok(abi)
}

/// Puts the command in a Landlock domain of its own, nested in the one it
/// shares with its guard (the same rules: nothing more or less is
/// allowed). Landlock lets a process trace or signal only processes in
/// its own domain or one nested in it, so the guard — which must read the
/// command's memory — stays out of the command's reach.
#[cfg(target_os = "linux")]
pub(super) fn nest(plan: &Plan, abi: i32) -> Result<i32, ConfineError> {
    if abi == 0 || !plan.uses(SandboxLayer::GuardIsolation) {
        return Ok(abi);
    }
    landlock(plan, true)
}

/// The guard's own filter, once it holds its listener: what the command
/// may not call, the guard may not either (the keyring; new UNIX sockets
/// where Landlock cannot govern them), so a guard somehow driven by the
/// command gains nothing the command lacks.
#[cfg(target_os = "linux")]
pub(super) fn guard_filter(plan: &Plan, abi: i32) -> Result<(), ConfineError> {
    if !plan.uses(SandboxLayer::Seccomp) || !plan.uses(SandboxLayer::GuardIsolation) {
        return Ok(());
    }
    seccomp(abi < UNIX_SOCKETS_ABI)
}

/// The command's own layers, after [`restrict`]: its limits and seccomp
/// filter, and the checks that the kernel's Landlock is enough.
#[cfg(target_os = "linux")]
pub(super) fn finish(
    plan: &Plan,
    namespaced: bool,
    limited_by_group: bool,
    abi: i32,
) -> Result<(), ConfineError> {
    if plan.uses(SandboxLayer::Limits) && !limited_by_group {
        per_process_limits(plan)?;
    }
    if abi > 0 && abi < TRUNCATE_ABI {
        return Err(ConfineError::NoTruncateControl { abi });
    }
    if !plan.network && !namespaced && abi < NETWORK_ABI {
        return Err(ConfineError::NoNetworkControl);
    }
    if plan.uses(SandboxLayer::Seccomp) {
        seccomp(abi < UNIX_SOCKETS_ABI)?;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(super) fn apply(
    _plan: &Plan,
    _namespaced: bool,
    _limited_by_group: bool,
) -> Result<(), ConfineError> {
    Err(ConfineError::Unsupported)
}

/// Execs the command if confinement worked (or is optional).
pub(super) fn exec_or_refuse(plan: &Plan, confined: Result<(), ConfineError>) -> i32 {
    if let Err(reason) = confined {
        let reason = reason.describe();
        if plan.required {
            return refuse(&format!(
                "the OS sandbox is required but cannot be applied here ({reason}); the command was not run"
            ));
        }
        warn(&format!("running without the full OS sandbox ({reason})"));
    }
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&plan.command)
        .exec();
    refuse(&format!("cannot run /bin/sh: {error}"))
}

/// Without a cgroup: each process gets the memory cap; the user gets the
/// task cap on top of the tasks it already runs (`RLIMIT_NPROC` counts every
/// task of the real user; the kernel does not apply it to root).
fn per_process_limits(plan: &Plan) -> Result<(), ConfineError> {
    use nix::sys::resource::{Resource, setrlimit};
    if let Some(memory) = plan.memory {
        setrlimit(Resource::RLIMIT_DATA, memory, memory).map_err(|source| ConfineError::Limit {
            what: "memory",
            source,
        })?;
    }
    if let Some(tasks) = plan.tasks {
        let limit = plan.user_tasks.saturating_add(tasks);
        setrlimit(Resource::RLIMIT_NPROC, limit, limit).map_err(|source| ConfineError::Limit {
            what: "processes",
            source,
        })?;
    }
    Ok(())
}

/// How many tasks (threads) the real user runs now, from `/proc` — read
/// before the call's own `/proc` is mounted.
pub(super) fn count_user_tasks() -> u64 {
    let uid = nix::unistd::getuid().as_raw().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut count = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
        };
        let real_uid = field("Uid:").and_then(|v| v.split_whitespace().next());
        if real_uid == Some(uid.as_str()) {
            count += field("Threads:").and_then(|v| v.parse().ok()).unwrap_or(1);
        }
    }
    count
}

/// Reads anywhere (or only under the plan's read roots); writes only under
/// the write roots (and a few devices);
/// signals and abstract UNIX sockets only within the sandbox; no TCP
/// without a network grant. Returns the ABI the kernel enforced.
#[cfg(target_os = "linux")]
fn landlock(plan: &Plan, namespaced: bool) -> Result<i32, ConfineError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    // Everything this crate knows; the kernel enforces what it has.
    let abi = ABI::V10;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(ConfineError::Landlock)?
        .scope(Scope::from_all(abi))
        .map_err(ConfineError::Landlock)?;
    // Listening (and connecting to what listens) is harmless only in the
    // call's own network namespace, where nothing but its own processes
    // and the bridge is on loopback and nothing leads outside.
    let open_loopback = plan.bind && namespaced;
    if !plan.network && !open_loopback {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(ConfineError::Landlock)?;
    }
    // Only inside the call's own network namespace is loopback the bridge:
    // without one, these ports would be whatever listens on the host.
    let egress_ports: Vec<u16> = if plan.network || plan.egress.is_none() || !namespaced {
        Vec::new()
    } else {
        super::bridge::PORTS.to_vec()
    };
    let readable: Vec<PathBuf> = if plan.reads.is_empty() {
        vec!["/".into()]
    } else {
        plan.reads.clone()
    };
    let mut writable: Vec<PathBuf> = plan.writes.clone();
    if namespaced {
        // A tmpfs of this call's own.
        writable.push("/dev/shm".into());
    }
    let status = ruleset
        .create()
        .map_err(ConfineError::Landlock)?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(abi)))
        .map_err(ConfineError::Landlock)?
        .add_rules(path_beneath_rules(
            [
                "/dev/null",
                "/dev/zero",
                "/dev/tty",
                "/dev/urandom",
                "/dev/random",
            ],
            AccessFs::from_all(abi),
        ))
        .map_err(ConfineError::Landlock)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        .map_err(ConfineError::Landlock)?
        // The bridge to the egress proxy, on the namespace's loopback.
        .add_rules(egress_ports.into_iter().map(|port| {
            Ok::<_, landlock::RulesetError>(landlock::NetPort::new(port, AccessNet::ConnectTcp))
        }))
        .map_err(ConfineError::Landlock)?
        .restrict_self()
        .map_err(ConfineError::Landlock)?;
    let enforced = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
        _ => 0,
    };
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(ConfineError::LandlockNotEnforced),
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(enforced),
    }
}

/// Empties every capability set, the bounding set included, so nothing
/// the command execs (even as root, even setuid) gets one back.
#[cfg(target_os = "linux")]
fn drop_capabilities() -> Result<(), ConfineError> {
    use caps::CapSet;
    let holds_setpcap = caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP)
        .map_err(|source| ConfineError::Capabilities {
            what: "read the capabilities".into(),
            source,
        })?;
    if holds_setpcap {
        for cap in caps::all() {
            caps::drop(None, CapSet::Bounding, cap).map_err(|source| {
                ConfineError::Capabilities {
                    what: format!("drop {cap} from the bounding set"),
                    source,
                }
            })?;
        }
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(|source| ConfineError::Capabilities {
            what: format!("clear the {set:?} set"),
            source,
        })?;
    }
    Ok(())
}

/// Refuses the kernel keyring (shared by every process of the user) and,
/// where Landlock cannot govern them, new UNIX-domain sockets
/// (`socketpair` still works: it reaches nothing outside).
#[cfg(target_os = "linux")]
fn seccomp(block_unix_sockets: bool) -> Result<(), ConfineError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    use std::collections::BTreeMap;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key] {
        rules.insert(call, Vec::new());
    }
    if block_unix_sockets {
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(ConfineError::SeccompFilter)?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![unix]).map_err(ConfineError::SeccompFilter)?],
        );
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(ConfineError::SeccompFilter)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(ConfineError::SeccompFilter)?;
    let program: BpfProgram = filter.try_into().map_err(ConfineError::SeccompFilter)?;
    seccompiler::apply_filter(&program).map_err(ConfineError::Seccomp)
}
