//! Credential files: what no tool reads, in any mode, unless the user's
//! own settings name the file. Judged by name (`.env`, private keys,
//! package-manager tokens, the cloud tools' folders in the home directory,
//! and what settings add) and, where a name does not say, by content (a
//! PEM private-key block).
//!
//! This is the table; who may read one anyway is the policy's to say, and
//! it hands the answer down as a [`Withholding`] with each grant.

use std::path::{Path, PathBuf};

/// Names that hold credentials wherever they are.
const NAMES: &[(&str, &str)] = &[
    (".npmrc", "npm's registry tokens"),
    (".pypirc", "PyPI upload credentials"),
    (".netrc", "login credentials"),
    ("_netrc", "login credentials"),
    (".git-credentials", "git's stored credentials"),
    (
        ".mcp-credentials.json",
        "carapace's sign-ins to MCP servers",
    ),
];

/// Suffixes of `.env.*` files that are templates, not secrets.
const TEMPLATES: &[&str] = &[
    "example", "sample", "template", "dist", "defaults", "schema",
];

/// Paths under the home directory that hold credentials (a folder
/// withholds everything inside it).
pub const HOME_CREDENTIALS: &[(&str, &str)] = &[
    (".aws", "the AWS tools' credentials"),
    (".ssh", "ssh keys"),
    (".config/gcloud", "Google Cloud credentials"),
    (".azure", "Azure credentials"),
    (".kube/config", "Kubernetes credentials"),
    (".docker/config.json", "registry credentials"),
];

/// Why a file is withheld, and what an allow rule must name to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithheldFile {
    /// What it holds, in words.
    pub holds: String,
    /// The file, or the folder it lies in that is withheld whole: an allow
    /// rule must name this path or one below it.
    pub root: PathBuf,
}

/// The credential files of one session: the table, the home directory it
/// is read against, and the paths settings add
/// (`sandbox.credentials.files`).
#[derive(Debug, Clone, Default)]
pub struct CredentialFiles {
    added: Vec<PathBuf>,
    /// Files commands read as stand-in copies (`mask` mode), links
    /// resolved.
    masked: Vec<PathBuf>,
    /// The home directory's credential paths, joined once.
    home_paths: Vec<(PathBuf, &'static str)>,
}

impl CredentialFiles {
    pub fn new(home: &Path, added: Vec<PathBuf>) -> Self {
        Self {
            added,
            masked: Vec::new(),
            home_paths: HOME_CREDENTIALS
                .iter()
                .map(|(rel, holds)| (home.join(rel), *holds))
                .collect(),
        }
    }

    /// With `masked` read by commands as stand-in copies.
    pub fn masking(mut self, masked: &[PathBuf]) -> Self {
        let real = |p: &PathBuf| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        self.masked = masked.iter().map(real).collect();
        self
    }

    /// Whether commands read `path` (links resolved) as a stand-in copy.
    pub fn is_masked(&self, path: &Path) -> bool {
        self.masked.iter().any(|m| m == path)
    }

    /// The folders and files withheld by where they are (not by name):
    /// the home directory's credential paths and what settings add.
    pub fn anchored(&self) -> Vec<PathBuf> {
        self.home_paths
            .iter()
            .map(|(p, _)| p.clone())
            .chain(self.added.iter().cloned())
            .collect()
    }

    /// Why `path` (absolute, links resolved) is withheld by its path, or
    /// `None`.
    pub fn by_path(&self, path: &Path) -> Option<WithheldFile> {
        for added in &self.added {
            if path.starts_with(added) {
                return Some(WithheldFile {
                    holds: "a credential your settings name (sandbox.credentials.files)".into(),
                    root: added.clone(),
                });
            }
        }
        for (root, holds) in &self.home_paths {
            if path.starts_with(root) {
                return Some(WithheldFile {
                    holds: (*holds).to_string(),
                    root: root.clone(),
                });
            }
        }
        let name = path.file_name()?.to_str()?;
        name_holds(name).map(|holds| WithheldFile {
            holds: holds.to_string(),
            root: path.to_path_buf(),
        })
    }
}

/// What a file of this name holds, when its name says it holds
/// credentials. Compared without regard to case (case-insensitive file
/// systems exist).
pub fn name_holds(name: &str) -> Option<&'static str> {
    // Called for every file a search or a command's listing meets: no
    // allocation on the way.
    let bytes = name.as_bytes();
    let starts = |prefix: &str| {
        bytes.len() >= prefix.len() && bytes[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
    };
    let ends = |suffix: &str| {
        bytes.len() >= suffix.len()
            && bytes[bytes.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    };
    if let Some((_, holds)) = NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Some(holds);
    }
    if name.eq_ignore_ascii_case(".env") {
        return Some("environment secrets");
    }
    if starts(".env.") {
        let template = String::from_utf8_lossy(&bytes[5..])
            .split('.')
            .any(|part| TEMPLATES.iter().any(|t| t.eq_ignore_ascii_case(part)));
        return (!template).then_some("environment secrets");
    }
    if ends(".pem") || ends(".key") {
        return Some("a key or certificate");
    }
    // ssh's key names (`id_rsa`, `id_ed25519_sk`), not their `.pub` halves
    // nor source files that happen to start so (`id_map.rs`).
    if starts("id_") && name.len() > 3 && !name.contains('.') {
        return Some("an ssh private key");
    }
    None
}

/// Whether `bytes` hold a PEM private-key block
/// (`-----BEGIN … PRIVATE KEY-----`).
pub fn holds_private_key(bytes: &[u8]) -> bool {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let finder = memchr::memmem::Finder::new(BEGIN);
    for start in finder.find_iter(bytes) {
        let rest = &bytes[start + BEGIN.len()..];
        let line = &rest[..rest.len().min(64)];
        let end = line.iter().position(|b| *b == b'\n').unwrap_or(line.len());
        if memchr::memmem::find(&line[..end], b"PRIVATE KEY-----").is_some() {
            return true;
        }
    }
    false
}

/// Bytes of a file read for a private-key block (a key past this is not
/// looked for: a file this large is not a key file).
const CONTENT_SCAN_LIMIT: u64 = 64 << 20;

/// Whether the file at `path` holds a private-key block. Only a regular
/// file is read (opened without blocking: a FIFO or a device planted
/// under a credential-looking name never stalls the caller), at most
/// [`CONTENT_SCAN_LIMIT`] bytes of it; what cannot be read holds nothing
/// readable.
pub fn file_holds_private_key(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut bytes = Vec::new();
    file.take(CONTENT_SCAN_LIMIT)
        .read_to_end(&mut bytes)
        .is_ok()
        && holds_private_key(&bytes)
}

/// `path` as a withheld file when it holds a private key (see
/// [`file_holds_private_key`]): what a name does not give away.
pub fn key_file(path: &Path) -> Option<WithheldFile> {
    file_holds_private_key(path).then(|| WithheldFile {
        holds: "a private key".into(),
        root: path.to_path_buf(),
    })
}

/// What a grant carries down to the host functions that list or search a
/// granted tree: which files inside it the call may not read.
pub trait Withholding: Send + Sync + std::fmt::Debug {
    /// Why `path` is withheld from this call, or `None`.
    fn withheld(&self, path: &Path) -> Option<WithheldFile>;

    /// The allow rule that would let tools read `file`, as the user
    /// writes it.
    fn lifting_rule(&self, file: &WithheldFile) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_hold_credentials_and_names_that_do_not() {
        for name in [
            ".env",
            ".ENV",
            ".env.local",
            ".env.production",
            "id_rsa",
            "id_ed25519",
            "server.pem",
            "tls.key",
            ".npmrc",
            ".pypirc",
            ".netrc",
            ".git-credentials",
        ] {
            assert!(name_holds(name).is_some(), "{name}");
        }
        for name in [
            ".env.example",
            ".env.sample",
            ".env.local.template",
            "id_rsa.pub",
            "id_map.rs",
            "env.rs",
            "README.md",
            ".envrc",
            "keys.txt",
            "é",
            "ééé.x",
        ] {
            assert!(name_holds(name).is_none(), "{name}");
        }
    }

    #[test]
    fn home_folders_and_added_paths_are_withheld_whole() {
        let files = CredentialFiles::new(Path::new("/h"), vec![PathBuf::from("/srv/tokens")]);
        let aws = files.by_path(Path::new("/h/.aws/credentials"));
        assert_eq!(aws.map(|w| w.root), Some(PathBuf::from("/h/.aws")));
        let added = files.by_path(Path::new("/srv/tokens/a"));
        assert_eq!(added.map(|w| w.root), Some(PathBuf::from("/srv/tokens")));
        assert!(files.by_path(Path::new("/h/.kube/cache/x")).is_none());
        assert!(files.by_path(Path::new("/h/project/src/main.rs")).is_none());
    }

    /// A FIFO is never read (it would block the caller until a writer
    /// came); the control, a regular file holding a key, is.
    #[test]
    fn only_a_regular_file_is_read_for_a_key() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let fifo = dir.path().join("key.txt");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)?;
        assert!(!file_holds_private_key(&fifo));
        let file = dir.path().join("real.txt");
        std::fs::write(&file, "-----BEGIN PRIVATE KEY-----\nx\n")?;
        assert!(file_holds_private_key(&file));
        Ok(())
    }

    #[test]
    fn a_private_key_block_is_found_by_content() {
        let key = b"{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIE...\"}";
        assert!(holds_private_key(key));
        assert!(holds_private_key(
            b"x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n"
        ));
        assert!(!holds_private_key(b"-----BEGIN CERTIFICATE-----\nMII\n"));
        assert!(!holds_private_key(b"-----BEGIN \n PRIVATE KEY----- later"));
    }
}
