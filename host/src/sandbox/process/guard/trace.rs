//! Taking hold of another process — `ptrace` attaching to it, reading or
//! writing its memory by id — is allowed a command process only on its
//! own descendants, as Yama's ptrace scope 1 allows it, whatever the
//! machine's setting. The sandbox's own processes are further out of
//! reach (not dumpable, in an outer Landlock domain); this keeps one part
//! of a command's tree from driving another it did not start.

use super::emulate::Call;
use nix::errno::Errno;
use nix::unistd::Pid;

/// The most parent links followed before a target counts as unrelated.
const MOST_GENERATIONS: usize = 4096;

/// Whether the trapped call `nr` is one this file judges.
pub(super) fn is_tracing(nr: i64) -> bool {
    matches!(
        nr,
        libc::SYS_ptrace | libc::SYS_process_vm_readv | libc::SYS_process_vm_writev
    )
}

/// `Ok` lets the call go on; `EPERM` refuses it (what the kernel answers
/// when tracing is not allowed). `isolate` off: everything goes on.
pub(super) fn judge(
    call: &Call,
    isolate: bool,
    still_waiting: &dyn Fn() -> bool,
) -> Result<(), Errno> {
    if !isolate {
        return Ok(());
    }
    let index = if call.nr == libc::SYS_ptrace { 1 } else { 0 };
    let target = call.args[index] as u32 as i32;
    let caller = thread_group(call.tid).ok_or(Errno::ESRCH)?;
    let below = target > 0 && is_descendant(Pid::from_raw(target), caller);
    // The caller's id read above must still be the caller's.
    if !still_waiting() {
        return Err(Errno::ESRCH);
    }
    if below {
        return Ok(());
    }
    eprintln!(
        "carapace: process {caller} may not trace process {target}: a command may trace only processes it started"
    );
    Err(Errno::EPERM)
}

/// The process (thread group) the thread `tid` belongs to.
fn thread_group(tid: Pid) -> Option<Pid> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .map(Pid::from_raw)
}

/// The parent of the process or thread `pid`.
fn parent(pid: Pid) -> Option<Pid> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name in parentheses may hold anything, spaces and `)` included:
    // the fields that follow start after its last `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok().map(Pid::from_raw)
}

/// Whether `pid` descends from `ancestor` (a thread of a descendant
/// does too; `ancestor` itself does not).
fn is_descendant(pid: Pid, ancestor: Pid) -> bool {
    let mut at = pid;
    for _ in 0..MOST_GENERATIONS {
        match parent(at) {
            Some(up) if up == ancestor => return true,
            Some(up) if up.as_raw() > 1 && up != at => at = up,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_descends_from_this_process_and_this_process_from_no_child() -> std::io::Result<()> {
        let me = nix::unistd::getpid();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read line"])
            .stdin(std::process::Stdio::piped())
            .spawn()?;
        let child_pid = Pid::from_raw(child.id() as i32);
        let seen = (
            is_descendant(child_pid, me),
            is_descendant(me, child_pid),
            is_descendant(me, me),
        );
        drop(child.stdin.take());
        child.wait()?;
        assert_eq!(seen, (true, false, false));
        assert_eq!(thread_group(me), Some(me));
        Ok(())
    }
}
