//! A loopback HTTP server that answers every request `pong` and counts the
//! connections it took: what a command's network grant is tried against.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running pong server.
pub struct Pong {
    pub port: u16,
    served: Arc<AtomicUsize>,
}

impl Pong {
    pub fn start() -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let served = Arc::new(AtomicUsize::new(0));
        let counted = served.clone();
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            for mut stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong");
            }
        });
        Ok(Self { port, served })
    }

    /// Connections taken so far.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }

    /// A command that fetches this server by `host` with Python and prints
    /// the answer (or the error).
    pub fn fetch_command(&self, host: &str) -> String {
        format!(
            "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://{host}:{}/\", timeout=20).read().decode())'",
            self.port
        )
    }
}
