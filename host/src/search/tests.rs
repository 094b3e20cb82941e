use super::*;
use std::path::Path;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(path, text);
}

fn request(root: &Path, pattern: &str, mode: GrepMode) -> GrepRequest {
    GrepRequest {
        root: root.to_path_buf(),
        pattern: pattern.into(),
        case_insensitive: false,
        multiline: false,
        only_matching: false,
        globs: Vec::new(),
        file_type: None,
        mode,
        before: 0,
        after: 0,
        withheld: None,
    }
}

fn names(root: &Path, outcome: &GrepOutcome) -> Vec<String> {
    let mut names: Vec<String> = outcome
        .files
        .iter()
        .map(|f| {
            f.path
                .strip_prefix(root)
                .unwrap_or(&f.path)
                .display()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

/// A repository: ignored files, a hidden file, a `.git` folder.
fn repository() -> Result<(tempfile::TempDir, PathBuf), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    write(&root, ".git/HEAD", "fn main in git\n");
    write(&root, ".gitignore", "target/\n*.log\n");
    write(&root, "src/a.rs", "fn main() {\n    body();\n}\n");
    write(&root, "src/b.py", "def main(): fn main\n");
    write(&root, "target/x.rs", "fn main\n");
    write(&root, "debug.log", "fn main\n");
    write(&root, ".hidden.rs", "fn main\n");
    Ok((dir, root))
}

#[test]
fn grep_walks_as_ripgrep_with_hidden_files() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, root) = repository()?;
    let cancel = Cancel::default();
    let found = grep(&request(&root, "fn main", GrepMode::Files), &cancel)?;
    assert_eq!(names(&root, &found), [".hidden.rs", "src/a.rs", "src/b.py"]);
    let mut typed = request(&root, "fn main", GrepMode::Count);
    typed.file_type = Some("rust".into());
    assert_eq!(
        names(&root, &grep(&typed, &cancel)?),
        [".hidden.rs", "src/a.rs"]
    );
    let mut globbed = request(&root, "fn main", GrepMode::Files);
    globbed.globs = vec!["*.py".into()];
    assert_eq!(names(&root, &grep(&globbed, &cancel)?), ["src/b.py"]);
    let mut unknown = request(&root, "x", GrepMode::Files);
    unknown.file_type = Some("no-such-type".into());
    assert!(matches!(
        grep(&unknown, &cancel),
        Err(SearchError::FileType(_))
    ));
    assert!(matches!(
        grep(&request(&root, "(unclosed", GrepMode::Files), &cancel),
        Err(SearchError::Pattern(_))
    ));
    Ok(())
}

#[test]
fn content_has_numbers_and_context() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, root) = repository()?;
    let mut content = request(&root.join("src/a.rs"), "body", GrepMode::Content);
    content.before = 1;
    let found = grep(&content, &Cancel::default())?;
    assert_eq!(found.files.len(), 1);
    let lines: Vec<(u64, &str, bool)> = found.files[0]
        .lines
        .iter()
        .map(|l| (l.number, l.text.as_str(), l.is_match))
        .collect();
    assert_eq!(lines, [(1, "fn main() {", false), (2, "    body();", true)]);
    let mut spanning = request(&root, r"main\(\) \{\n\s+body", GrepMode::Content);
    spanning.multiline = true;
    let found = grep(&spanning, &Cancel::default())?;
    assert_eq!(found.files[0].lines.len(), 2);
    let mut only = request(&root.join("src/a.rs"), "ma.n", GrepMode::Content);
    only.only_matching = true;
    let found = grep(&only, &Cancel::default())?;
    assert_eq!(found.files[0].lines[0].text, "main");
    Ok(())
}

#[test]
fn links_out_of_the_tree_lead_nowhere() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, root) = repository()?;
    let outside = tempfile::tempdir()?;
    write(outside.path(), "secret.txt", "fn main SECRET\n");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt"))?;
    std::os::unix::fs::symlink(outside.path(), root.join("linkdir"))?;
    let found = grep(
        &request(&root, "SECRET", GrepMode::Files),
        &Cancel::default(),
    )?;
    assert!(found.files.is_empty(), "{found:?}");
    // A root through a link is refused, not followed.
    assert!(matches!(
        grep(
            &request(&root.join("linkdir"), "SECRET", GrepMode::Files),
            &Cancel::default()
        ),
        Err(SearchError::Root { .. })
    ));
    let listed = glob(
        &GlobRequest {
            root: root.clone(),
            pattern: "**/*.txt".into(),
            limit: None,
        },
        &Cancel::default(),
    )?;
    assert!(listed.files.is_empty(), "{listed:?}");
    Ok(())
}

#[test]
fn the_confined_thread_cannot_open_what_is_outside() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, root) = repository()?;
    let outside = tempfile::tempdir()?;
    write(outside.path(), "secret.txt", "SECRET\n");
    let secret = outside.path().join("secret.txt");
    let opened = confine::confined(&confine::Root::open(&root)?, Vec::new(), |enforced| {
        (enforced, std::fs::read_to_string(&secret).is_ok())
    })?;
    // Control: the same read from an ordinary thread succeeds.
    assert!(std::fs::read_to_string(&secret).is_ok());
    let (enforced, read) = opened;
    // Without Landlock this claim cannot be checked: a failure that says
    // so, not a pass (the command sandbox's tests need Landlock too).
    assert!(
        enforced,
        "this kernel has no Landlock: the search thread's confinement is untested"
    );
    assert!(!read, "Landlock let the search thread read outside");
    Ok(())
}

#[test]
fn glob_lists_hidden_and_ignored_files_as_claude_code_does()
-> Result<(), Box<dyn std::error::Error>> {
    let (_dir, root) = repository()?;
    let listed = |pattern: &str| -> Result<Vec<String>, SearchError> {
        let mut names: Vec<String> = glob(
            &GlobRequest {
                root: root.clone(),
                pattern: pattern.into(),
                limit: None,
            },
            &Cancel::default(),
        )?
        .files
        .into_iter()
        .map(|f| {
            let path = Path::new(&f.path);
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
        names.sort();
        Ok(names)
    };
    assert_eq!(
        listed("**/*.rs")?,
        [".hidden.rs", "src/a.rs", "target/x.rs"]
    );
    assert_eq!(listed("*.log")?, ["debug.log"]);
    assert!(listed("../*")?.is_empty());
    assert!(listed("**/HEAD")?.is_empty(), "the .git folder is listed");
    Ok(())
}

#[test]
fn a_limited_glob_keeps_the_oldest_and_counts_the_rest() -> Result<(), Box<dyn std::error::Error>> {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let epoch = std::time::UNIX_EPOCH;
    // Ages out of name order, two alike (then ordered by name), and a name
    // a string cannot carry.
    let ages = [
        ("e.rs", 50),
        ("a.rs", 40),
        ("d.rs", 10),
        ("c.rs", 30),
        ("b.rs", 30),
    ];
    for (name, secs) in ages {
        let file = std::fs::File::create(root.join(name))?;
        file.set_modified(epoch + std::time::Duration::from_secs(secs))?;
    }
    let odd = root.join(std::ffi::OsStr::from_bytes(b"\xff.rs"));
    std::fs::File::create(&odd)?.set_modified(epoch)?;
    let list = |limit| {
        let request = GlobRequest {
            root: root.clone(),
            pattern: "*.rs".into(),
            limit,
        };
        glob(&request, &Cancel::default())
    };
    let shown = |listing: &GlobListing| -> Vec<String> {
        let name = |f: &GlobFile| {
            Path::new(&f.path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        };
        listing.files.iter().filter_map(name).collect()
    };
    let three = list(Some(3))?;
    assert_eq!(shown(&three), ["d.rs", "b.rs", "c.rs"]);
    assert_eq!((three.total, three.unnamed), (6, 1));
    let all = list(None)?;
    assert_eq!(shown(&all), ["d.rs", "b.rs", "c.rs", "a.rs", "e.rs"]);
    assert_eq!((all.total, all.unnamed), (6, 1));
    assert!(list(Some(0))?.files.is_empty());
    Ok(())
}

#[test]
fn patterns_past_their_bound_are_refused_before_anything_is_built()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().to_path_buf();
    write(&root, "a.txt", "alpha\n");
    let huge = "*".repeat(8 << 20);
    let glob = super::glob(
        &GlobRequest {
            root: root.clone(),
            pattern: huge.clone(),
            limit: None,
        },
        &Cancel::default(),
    );
    assert!(
        matches!(glob, Err(SearchError::TooLarge { .. })),
        "{glob:?}"
    );
    let grep = super::grep(&request(&root, &huge, GrepMode::Files), &Cancel::default());
    assert!(
        matches!(grep, Err(SearchError::TooLarge { .. })),
        "{:?}",
        grep.err()
    );
    // At the bound, a pattern is searched with.
    let fits = "a".repeat(super::MAX_PATTERN_BYTES - 8) + "|alpha";
    assert!(super::grep(&request(&root, &fits, GrepMode::Files), &Cancel::default()).is_ok());
    Ok(())
}

/// A search skips what the caller withholds (by its judgement of the
/// path) and a matching file that holds a private key, and names both;
/// without a judgement (the control) both are found.
#[test]
fn grep_skips_and_names_withheld_files() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    write(&root, ".env", "TOKEN=abc\n");
    write(
        &root,
        "keys/k.txt",
        "TOKEN\n-----BEGIN EC PRIVATE KEY-----\nx\n",
    );
    write(&root, "src/a.rs", "let TOKEN = 1;\n");
    let mut asked = request(&root, "TOKEN", GrepMode::Files);
    let open = grep(&asked, &Cancel::default())?;
    assert_eq!(names(&root, &open), [".env", "keys/k.txt", "src/a.rs"]);
    asked.withheld = Some(Withheld {
        by_path: std::sync::Arc::new(|p: &Path| p.file_name().is_some_and(|n| n == ".env")),
        by_content: |bytes| String::from_utf8_lossy(bytes).contains("PRIVATE KEY-----"),
    });
    let found = grep(&asked, &Cancel::default())?;
    assert_eq!(names(&root, &found), ["src/a.rs"]);
    assert_eq!(found.withheld, [root.join(".env"), root.join("keys/k.txt")]);
    Ok(())
}
