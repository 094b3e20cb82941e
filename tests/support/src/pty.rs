//! A program on a pseudo-terminal of its own, its screen read through a
//! terminal emulator (vt100): what a person at a terminal would see, and
//! keys typed as a terminal sends them.

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub type PtyResult<T> = Result<T, Box<dyn std::error::Error>>;

pub struct PtyScreen {
    pub child: Box<dyn Child + Send + Sync>,
    pub master: Box<dyn MasterPty + Send>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pub parser: Arc<Mutex<vt100::Parser>>,
}

/// How the terminal is made.
pub struct PtySpec<'a> {
    pub program: &'a Path,
    pub args: &'a [&'a str],
    /// The whole environment (nothing is inherited).
    pub env: Vec<(String, String)>,
    pub cwd: &'a Path,
    /// What the program is told the terminal is.
    pub size: (u16, u16),
    /// Rows the emulator keeps: more than `size`'s, and what scrolls off
    /// a real terminal stays readable.
    pub emulated_rows: u16,
}

impl PtyScreen {
    pub fn open(spec: PtySpec<'_>) -> PtyResult<Self> {
        let (rows, cols) = spec.size;
        let size = PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        };
        let pair = native_pty_system()
            .openpty(size)
            .map_err(|e| e.to_string())?;
        let mut command = CommandBuilder::new(spec.program);
        command.env_clear();
        for (name, value) in spec.env {
            command.env(name, value);
        }
        command.cwd(spec.cwd);
        command.args(spec.args);
        let child = pair
            .slave
            .spawn_command(command)
            .map_err(|e| e.to_string())?;
        drop(pair.slave);
        let reader = pair.master.try_clone_reader().map_err(|e| e.to_string())?;
        let writer = Arc::new(Mutex::new(
            pair.master.take_writer().map_err(|e| e.to_string())?,
        ));
        let parser = Arc::new(Mutex::new(vt100::Parser::new(spec.emulated_rows, cols, 0)));
        spawn_reader(reader, parser.clone(), writer.clone());
        Ok(Self {
            child,
            master: pair.master,
            writer,
            parser,
        })
    }

    pub fn contents(&self) -> String {
        self.parser
            .lock()
            .map(|p| p.screen().contents())
            .unwrap_or_default()
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str, patience: Duration) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < patience {
            if self.contents().contains(text) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let shown = self.contents();
        let tail: Vec<&str> = shown.trim_end().lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "the screen never showed {text:?}; it ends:\n{}",
            tail.join("\n")
        ))
    }

    pub fn keys(&self, bytes: &str) -> PtyResult<()> {
        let mut writer = self
            .writer
            .lock()
            .map_err(|_| "the terminal's writer is unusable")?;
        writer.write_all(bytes.as_bytes())?;
        writer.flush()?;
        Ok(())
    }

    pub fn wait_exit(&mut self, patience: Duration) -> Result<portable_pty::ExitStatus, String> {
        let started = Instant::now();
        while started.elapsed() < patience {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        Err(format!(
            "the program did not exit; the screen shows:\n{}",
            self.contents()
        ))
    }
}

/// Feeds what the program writes to the emulator, and answers what a
/// terminal is asked: the device attributes (so a query for the keyboard
/// protocol ends at once instead of waiting for its timeout).
fn spawn_reader(
    mut reader: Box<dyn Read + Send>,
    parser: Arc<Mutex<vt100::Parser>>,
    answer: Arc<Mutex<Box<dyn Write + Send>>>,
) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let bytes = &buf[..n];
            if let Ok(mut parser) = parser.lock() {
                parser.process(bytes);
            }
            if bytes.windows(3).any(|w| w == b"\x1b[c")
                && let Ok(mut w) = answer.lock()
            {
                let _ = w.write_all(b"\x1b[?62;22c");
            }
        }
    });
}
