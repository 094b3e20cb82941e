//! The helper mode: `carapace __sandbox-exec [OPTIONS] -- COMMAND`.
//!
//! carapace re-executes itself so the confinement is applied by a
//! single-threaded process before anything of the command runs. Four
//! processes take part:
//!
//! - the **helper** (started by carapace) enters new PID, mount, IPC and
//!   (without a network grant) network namespaces — through a user
//!   namespace when it is not privileged — puts the call in its own cgroup,
//!   forks the init and waits for it; on SIGTERM it ends the call;
//! - the **init**, PID 1 of the new PID namespace, mounts a private `/proc`,
//!   makes the protected paths read-only and hides the read-denied ones,
//!   forks the command and waits; when the command returns, when the helper
//!   dies, or when carapace stops reading the command's output, it exits —
//!   and the kernel kills everything left in the namespace;
//! - the **guard** (when protected names are given) applies Landlock
//!   (writes only under the write roots; signals and abstract sockets
//!   scoped to the sandbox; no TCP without a network grant), drops every
//!   capability, forks the command and answers its calls that make a name
//!   (see `guard`);
//! - the **command**, in the guard's Landlock domain (or applying it
//!   itself when there is no guard), installs its seccomp filters, hands
//!   the guard the trap's listener, then execs `/bin/sh -c COMMAND`.
//!
//! Without namespaces (and only when the sandbox is optional), the helper
//! applies what it can to itself and execs the command directly.

use super::SandboxLayer;
use super::plan::{Plan, refuse, warn};

/// The helper's entry point; returns only with an exit code.
pub fn helper_main(args: &[String]) -> i32 {
    let plan = match Plan::parse(args) {
        Ok(plan) => plan,
        Err(e) => return refuse(&e),
    };
    run(plan)
}

#[cfg(target_os = "linux")]
fn run(mut plan: Plan) -> i32 {
    use super::{confine, isolate};
    if plan.uses(SandboxLayer::Namespaces) {
        match isolate::enter(plan.network) {
            Ok(own_user_ns) => return isolate::supervise(&mut plan, own_user_ns),
            Err(reason) if plan.required => {
                return refuse(&format!(
                    "the OS sandbox is required but this system cannot give the command its own process and mount namespaces ({reason}); the command was not run (set sandbox.required to false to run commands with Landlock only)"
                ));
            }
            Err(reason) => warn(&format!(
                "running without namespaces ({reason}): the command can see other processes and outlive the call"
            )),
        }
    }
    if !(plan.hide.is_empty() && plan.covers.is_empty()) && plan.required {
        return refuse(
            "read deny rules or masked credentials cover paths the command could read, and without a mount namespace they cannot be hidden; the command was not run",
        );
    }
    // Degraded: confine this process and become the command.
    if plan.uses(SandboxLayer::Limits) && !nix::unistd::getuid().is_root() {
        plan.user_tasks = confine::count_user_tasks();
    }
    let confined = confine::apply(&plan, false, false);
    confine::exec_or_refuse(&plan, confined)
}

#[cfg(not(target_os = "linux"))]
fn run(plan: Plan) -> i32 {
    if plan.required {
        return refuse(
            "the OS sandbox is required but none is implemented for this platform; the command was not run",
        );
    }
    warn("running without the OS sandbox (none is implemented for this platform)");
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&plan.command)
        .exec();
    refuse(&format!("cannot run /bin/sh: {error}"))
}
