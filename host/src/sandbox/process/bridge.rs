//! The command's only way out: inside its own network namespace, which
//! has nothing but loopback, a bridge listens on `127.0.0.1:3128` (HTTP)
//! and `127.0.0.1:1080` (SOCKS5) and carries each connection, unread, to
//! carapace's egress proxy over its Unix socket — where every connection is
//! judged. The command gets the proxy variables pointing there, no DNS of
//! its own (names are resolved by the proxy, once allowed), and Landlock
//! lets it connect to these two ports only.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

pub const HTTP_PORT: u16 = 3128;
pub const SOCKS_PORT: u16 = 1080;
pub const PORTS: [u16; 2] = [HTTP_PORT, SOCKS_PORT];

/// The variables that send a command's HTTP(S) and SOCKS clients to the
/// bridge: both cases, as tools read one or the other.
pub fn proxy_env() -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{HTTP_PORT}");
    let socks = format!("socks5h://127.0.0.1:{SOCKS_PORT}");
    let mut vars = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
    ] {
        vars.push((name.to_string(), value.clone()));
        vars.push((name.to_lowercase(), value.clone()));
    }
    vars.push(("NO_PROXY".into(), String::new()));
    vars.push(("no_proxy".into(), String::new()));
    vars
}

/// In the call's init, before the command starts: loopback up, the two
/// listeners bound (so the command never finds them missing), and a
/// process of the namespace carrying connections to `socket`; it dies with
/// the namespace.
#[cfg(target_os = "linux")]
pub(super) fn start(socket: &Path) -> Result<(), String> {
    loopback_up()?;
    let listeners = PORTS
        .iter()
        .map(|port| {
            TcpListener::bind(("127.0.0.1", *port))
                .map_err(|e| format!("cannot listen on 127.0.0.1:{port} for the egress proxy: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // SAFETY: the init is single-threaded here (the helper's fork of a
    // single thread); the child only runs the bridge and exits.
    #[allow(unsafe_code)]
    let fork = unsafe { nix::unistd::fork() };
    match fork {
        Err(e) => Err(format!("cannot start the egress bridge: {e}")),
        Ok(nix::unistd::ForkResult::Parent { .. }) => Ok(()),
        Ok(nix::unistd::ForkResult::Child) => {
            serve(listeners, socket.to_path_buf());
            std::process::exit(0);
        }
    }
}

fn serve(listeners: Vec<TcpListener>, socket: PathBuf) {
    let accepting: Vec<_> = listeners
        .into_iter()
        .map(|listener| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let socket = socket.clone();
                    std::thread::spawn(move || carry(stream, &socket));
                }
            })
        })
        .collect();
    for thread in accepting {
        let _ = thread.join();
    }
}

/// Copies one connection both ways until either side ends.
fn carry(tcp: TcpStream, socket: &Path) {
    let Ok(unix) = UnixStream::connect(socket) else {
        return;
    };
    let (Ok(mut tcp_in), Ok(mut unix_out)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = pump(&mut tcp_in, &mut unix_out);
        let _ = unix_out.shutdown(Shutdown::Write);
    });
    let (mut unix_in, mut tcp_out) = (unix, tcp);
    let _ = pump(&mut unix_in, &mut tcp_out);
    let _ = tcp_out.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn pump(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<u64> {
    std::io::copy(from, to)
}

/// Brings the namespace's loopback interface up (a new network namespace
/// starts with it down).
#[cfg(target_os = "linux")]
pub(super) fn loopback_up() -> Result<(), String> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| format!("cannot open a socket to bring loopback up: {e}"))?;
    // SAFETY: `ifreq` is plain old data, zeroed is a valid value; the name
    // is copied within its bounds (NUL-terminated by the zeroing), and both
    // ioctls read or write only that struct, which outlives them.
    #[allow(unsafe_code)]
    let result = unsafe {
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo") {
            *slot = *byte as libc::c_char;
        }
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &request) < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        }
    };
    result.map_err(|e| format!("cannot bring the namespace's loopback up: {e}"))
}
