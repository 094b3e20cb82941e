//! The seccomp filter that traps the calls making a name, and the
//! listener's protocol (receive, check, respond, hand a file over).
//!
//! Written as BPF here rather than with `seccompiler`, which has no
//! user-notification action; the program is a flat list of "this call →
//! this action" pairs, one masked check for `open`'s flags.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Calls that make a name: always trapped.
const TRAPPED: &[i64] = &[
    libc::SYS_mkdirat,
    libc::SYS_mknodat,
    libc::SYS_symlinkat,
    libc::SYS_linkat,
    libc::SYS_renameat,
    libc::SYS_renameat2,
];

/// Their older forms, which only some architectures have.
#[cfg(target_arch = "x86_64")]
const TRAPPED_LEGACY: &[i64] = &[
    libc::SYS_creat,
    libc::SYS_mkdir,
    libc::SYS_mknod,
    libc::SYS_symlink,
    libc::SYS_link,
    libc::SYS_rename,
];
#[cfg(not(target_arch = "x86_64"))]
const TRAPPED_LEGACY: &[i64] = &[];

/// Calls trapped when their flags (the argument at this index) ask to
/// create.
#[cfg(target_arch = "x86_64")]
const TRAPPED_WHEN_CREATING: &[(i64, u32)] = &[(libc::SYS_openat, 2), (libc::SYS_open, 1)];
#[cfg(not(target_arch = "x86_64"))]
const TRAPPED_WHEN_CREATING: &[(i64, u32)] = &[(libc::SYS_openat, 2)];

/// Calls that reach into another process's memory by its id: trapped so
/// the guard can refuse any target that is not the caller's descendant.
const TRAPPED_TRACING: &[i64] = &[libc::SYS_process_vm_readv, libc::SYS_process_vm_writev];

/// `ptrace` requests that take hold of a process by its id (a child that
/// asks its parent to trace it, `PTRACE_TRACEME`, is the parent's own).
const TRACE_REQUESTS: &[u32] = &[libc::PTRACE_ATTACH, libc::PTRACE_SEIZE];

/// Calls that would go around the filter (their paths are in a structure
/// or a ring the filter cannot see): "not implemented", so programs fall
/// back to the calls above.
const REFUSED: &[i64] = &[libc::SYS_openat2, libc::SYS_io_uring_setup];

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// x86_64's x32 calls: another numbering, refused.
const X32_BIT: u32 = 0x4000_0000;

const NR: u32 = 0;
const ARCH_FIELD: u32 = 4;
const fn arg_low(index: u32) -> u32 {
    16 + 8 * index
}

fn statement(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The filter's program.
fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let load = |offset| statement(BPF_LD | BPF_W | BPF_ABS, offset);
    let ret = |action| statement(BPF_RET | BPF_K, action);
    let not_implemented = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    let notify = libc::SECCOMP_RET_USER_NOTIF;
    let mut program = vec![
        load(ARCH_FIELD),
        jump(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        ret(not_implemented),
        load(NR),
    ];
    if cfg!(target_arch = "x86_64") {
        program.push(jump(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1));
        program.push(ret(not_implemented));
    }
    for (calls, action) in [
        (REFUSED, not_implemented),
        (TRAPPED, notify),
        (TRAPPED_LEGACY, notify),
        (TRAPPED_TRACING, notify),
    ] {
        for &nr in calls {
            program.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr as u32, 0, 1));
            program.push(ret(action));
        }
    }
    // ptrace: past the request checks when it is another call; the
    // request is its first argument.
    let requests = TRACE_REQUESTS.len() as u8;
    program.push(jump(
        BPF_JMP | BPF_JEQ | BPF_K,
        libc::SYS_ptrace as u32,
        0,
        requests + 3,
    ));
    program.push(load(arg_low(0)));
    for (at, &request) in TRACE_REQUESTS.iter().enumerate() {
        // To the notify after the allow that ends the checks.
        program.push(jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            request,
            requests - at as u8,
            0,
        ));
    }
    program.push(ret(libc::SECCOMP_RET_ALLOW));
    program.push(ret(notify));
    for &(nr, flags) in TRAPPED_WHEN_CREATING {
        // Not this call: past the four that judge it.
        program.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr as u32, 0, 4));
        program.push(load(arg_low(flags)));
        program.push(jump(BPF_JMP | BPF_JSET | BPF_K, libc::O_CREAT as u32, 0, 1));
        program.push(ret(notify));
        program.push(ret(libc::SECCOMP_RET_ALLOW));
    }
    program.push(ret(libc::SECCOMP_RET_ALLOW));
    program
}

/// Installs the filter on this process (`no_new_privs` must be set) and
/// returns its listener.
pub(crate) fn install() -> Result<OwnedFd, String> {
    let mut filter = program();
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| "the guard's filter is too long")?,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `program` points at `filter`, alive for the call; the kernel
    // copies it.
    #[allow(unsafe_code)]
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &program as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(format!(
            "cannot install the creation guard's filter: {}",
            std::io::Error::last_os_error()
        ));
    }
    let fd = i32::try_from(fd).map_err(|_| "the kernel returned no listener")?;
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The next trapped call, or `None` when the caller went away first.
pub(super) fn receive(listener: &OwnedFd) -> Option<libc::seccomp_notif> {
    // SAFETY: a plain-data structure the kernel fills; it must be zeroed.
    #[allow(unsafe_code)]
    let mut request: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one `seccomp_notif` into `request`.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &mut request as *mut libc::seccomp_notif,
        )
    };
    (done == 0).then_some(request)
}

/// Whether the call `id` is still waiting (its task alive, not
/// interrupted): checked after reading its memory, so that a reused
/// process id cannot have been what was read.
pub(super) fn is_waiting(listener: &OwnedFd, id: u64) -> bool {
    // SAFETY: the ioctl reads one u64.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &id as *const u64,
        )
    };
    done == 0
}

/// Ends the call `id` with `value` (a negative errno on failure).
pub(super) fn respond(listener: &OwnedFd, id: u64, value: i32) {
    send(
        listener,
        &libc::seccomp_notif_resp {
            id,
            val: if value < 0 { 0 } else { i64::from(value) },
            error: value.min(0),
            flags: 0,
        },
    );
}

/// Lets the call `id` go on as the task made it. Sound only for calls
/// whose arguments are all in registers (a process id, a request), which
/// the task cannot change after the guard read them.
pub(super) fn let_through(listener: &OwnedFd, id: u64) {
    send(
        listener,
        &libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        },
    );
}

fn send(listener: &OwnedFd, response: &libc::seccomp_notif_resp) {
    // SAFETY: the ioctl reads one `seccomp_notif_resp`.
    #[allow(unsafe_code)]
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            response as *const libc::seccomp_notif_resp,
        );
    }
}

/// Ends the call `id` by giving the task a copy of `file` (its number
/// there is the call's result).
pub(super) fn hand_over(listener: &OwnedFd, id: u64, file: i32, cloexec: bool) {
    let request = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32,
        srcfd: file as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: the ioctl reads one `seccomp_notif_addfd`.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD,
            &request as *const libc::seccomp_notif_addfd,
        )
    };
    if done < 0 {
        // The task went away, or its table is full: say so to it.
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EMFILE);
        respond(listener, id, -errno);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program() {
        let program = program();
        for (at, op) in program.iter().enumerate() {
            if u32::from(op.code) & 0x07 == libc::BPF_JMP {
                for offset in [op.jt, op.jf] {
                    assert!(at + 1 + usize::from(offset) < program.len(), "jump at {at}");
                }
            }
        }
        let last = program.last().map(|op| (u32::from(op.code), op.k));
        assert_eq!(
            last,
            Some((libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW))
        );
    }
}
