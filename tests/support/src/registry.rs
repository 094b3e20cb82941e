//! An OCI registry on loopback for tests and benchmarks: Debian's
//! `docker-registry`, on a free port, its storage in a temporary folder,
//! killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Registry {
    child: Child,
    pub port: u16,
    storage: tempfile::TempDir,
}

impl Registry {
    /// Starts one; `Ok(None)`: the package is not installed.
    pub fn start() -> Result<Option<Self>, Box<dyn std::error::Error>> {
        let Some(binary) = ["/usr/bin/docker-registry", "/usr/bin/registry"]
            .into_iter()
            .find(|p| Path::new(p).exists())
        else {
            return Ok(None);
        };
        let storage = tempfile::tempdir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                storage.path().join("data").display()
            ),
        )?;
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let registry = Self {
            child,
            port,
            storage,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(
                    format!("the registry does not listen on port {port} after a minute").into(),
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Some(registry))
    }

    /// `127.0.0.1:PORT/REPO_AND_TAG`.
    pub fn reference(&self, repo_and_tag: &str) -> String {
        format!("127.0.0.1:{}/{repo_and_tag}", self.port)
    }

    /// The file the registry keeps a blob in (to tamper with it).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(hex.get(..2).unwrap_or_default())
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
