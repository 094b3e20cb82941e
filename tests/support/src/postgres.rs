//! A PostgreSQL server on loopback for tests and benchmarks: Debian's
//! `postgresql` package, a cluster of its own in a temporary folder, on a
//! free port, trusting local connections. It stops when dropped — and when
//! the process that started it dies in any way: it runs under a shell that
//! waits for its stdin, a pipe only this process holds, to close.
//!
//! PostgreSQL refuses to run as root; as root the server runs as the
//! package's `postgres` user (`setpriv`, so the pid stays the server's).

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Postgres {
    shell: Child,
    /// Held open: closing it stops the server.
    stdin: Option<ChildStdin>,
    pub port: u16,
    _dir: tempfile::TempDir,
}

/// Why the server could not be started or asked; converts into any boxed
/// error a test returns.
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self(e.to_string())
    }
}

impl From<String> for Error {
    fn from(e: String) -> Self {
        Self(e)
    }
}

impl From<&str> for Error {
    fn from(e: &str) -> Self {
        Self(e.to_string())
    }
}

/// The newest installed server's `bin` folder.
fn binaries() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// `program` as the user the server must run as.
fn as_server_user(program: &Path) -> Command {
    if crate::runs_as_root() {
        let mut command = Command::new("setpriv");
        command.args([
            "--reuid=postgres",
            "--regid=postgres",
            "--init-groups",
            "--reset-env",
        ]);
        command.arg(program);
        command
    } else {
        Command::new(program)
    }
}

impl Postgres {
    /// Starts one. Fails with what is missing when the package is not
    /// installed (`tests/setup.sh` installs it).
    pub fn start() -> Result<Self, Error> {
        let bin = binaries().ok_or(
            "no PostgreSQL server in /usr/lib/postgresql (apt-get install postgresql; tests/setup.sh does)",
        )?;
        let dir = tempfile::tempdir()?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data)?;
        if crate::runs_as_root() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
            let owned = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&data)
                .status()?;
            if !owned.success() {
                return Err(format!("chown postgres {} failed", data.display()).into());
            }
        }
        let initdb = as_server_user(&bin.join("initdb"))
            .args(["--auth=trust", "--username=carapace", "--encoding=UTF8"])
            .arg("--pgdata")
            .arg(&data)
            .output()?;
        if !initdb.status.success() {
            return Err(
                format!("initdb failed: {}", String::from_utf8_lossy(&initdb.stderr)).into(),
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let server = as_server_user(&bin.join("postgres"));
        let mut words: Vec<String> = std::iter::once(server.get_program())
            .chain(server.get_args())
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        words.extend(
            [
                "-D",
                &data.to_string_lossy(),
                "-k",
                &data.to_string_lossy(),
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-c",
                "max_connections=200",
            ]
            .map(String::from),
        );
        // The server runs until this process stops holding the shell's
        // stdin; then it is told to shut down fast.
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(r#""$@" >/dev/null 2>&1 & pg=$!; cat >/dev/null; kill -INT $pg; wait $pg"#)
            .arg("postgres-for-tests")
            .args(&words)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = shell.stdin.take();
        let server = Self {
            shell,
            stdin,
            port,
            _dir: dir,
        };
        server.wait_ready(&bin)?;
        Ok(server)
    }

    fn wait_ready(&self, bin: &Path) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()?;
            if ready.success() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "PostgreSQL does not answer on port {} after a minute",
                    self.port
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A URL for database `postgres` as the cluster's owner.
    pub fn url(&self) -> String {
        format!("postgres://carapace@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs SQL through `psql`, returning what it printed (unaligned,
    /// tuples only).
    pub fn psql(&self, sql: &str) -> Result<String, Error> {
        let bin = binaries().ok_or("no PostgreSQL binaries")?;
        let output = Command::new(bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", &self.url()])
            .arg("-c")
            .arg(sql)
            .output()?;
        if !output.status.success() {
            return Err(format!("psql: {}", String::from_utf8_lossy(&output.stderr)).into());
        }
        String::from_utf8(output.stdout).map_err(|e| Error(e.to_string()))
    }
}

/// What one `pgbench` run did: its transactions, in how long.
pub struct PgbenchRun {
    pub transactions: u64,
    pub tps: f64,
}

impl Postgres {
    /// Runs `pgbench` against this server with `script` (its own
    /// statements, no TPC-B tables): `clients` connections on two threads,
    /// `per_client` transactions each, `options` as each connection's
    /// settings (`-c synchronous_commit=off`). The reference a bench of
    /// what carapace does with the same statements is put beside.
    pub fn pgbench(
        &self,
        script: &str,
        clients: usize,
        per_client: usize,
        options: &str,
    ) -> Result<PgbenchRun, Error> {
        let bin = binaries().ok_or("no PostgreSQL binaries")?;
        let file = tempfile::Builder::new().suffix(".sql").tempfile()?;
        std::fs::write(file.path(), script)?;
        let output = Command::new(bin.join("pgbench"))
            .args(["-n", "-M", "prepared", "-j", "2"])
            .arg(format!("-c{clients}"))
            .arg(format!("-t{per_client}"))
            .arg("-f")
            .arg(file.path())
            .arg(self.url())
            .env("PGOPTIONS", options)
            .output()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(format!(
                "pgbench failed: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let field = |prefix: &str| -> Option<f64> {
            stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix(prefix))
                .and_then(|rest| {
                    rest.split_whitespace()
                        .next()?
                        .split('/')
                        .next()?
                        .parse()
                        .ok()
                })
        };
        let transactions = field("number of transactions actually processed:")
            .ok_or_else(|| format!("no transaction count in: {stdout}"))?;
        let tps = field("tps = ").ok_or_else(|| format!("no tps in: {stdout}"))?;
        Ok(PgbenchRun {
            transactions: transactions as u64,
            tps,
        })
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.shell.wait();
    }
}
