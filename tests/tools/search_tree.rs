//! The tree Grep and Glob are measured and checked on (the search bench
//! and tests/tools/search.rs share it): a git repository of `files` source
//! files in nested folders, with what ripgrep's rules decide on — a
//! .gitignore at the top and one deeper, ignored build output, hidden
//! files, binary files, a line too long to show, a symlink out of the tree.
//! The same `files` gives the same tree, byte for byte.

#![allow(dead_code)]

use std::path::Path;

const EXTENSIONS: [&str; 5] = ["rs", "py", "js", "txt", "md"];

/// One generated file's text: filler, with `fn main` in one file in
/// seven and `unsafe impl Send` in one in fifty.
fn body(i: usize) -> String {
    let lines = 20 + (i * 7919) % 40;
    let mut text = String::with_capacity(lines * 40);
    for l in 0..lines {
        match (l, i % 7, i % 50) {
            (3, 0, _) => text.push_str("fn main() {\n"),
            (5, _, 0) => text.push_str("unsafe impl Send for Handle {}\n"),
            (9, 3, _) => text.push_str("    // fn main is mentioned here too\n"),
            _ => text.push_str(&format!("let value_{l} = compute({i}, {l}); // filler\n")),
        }
    }
    text
}

fn write(root: &Path, path: &str, text: impl AsRef<[u8]>) -> std::io::Result<()> {
    let path = root.join(path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
}

/// Lays the tree out under `root` (which should be empty).
pub fn generate(root: &Path, files: usize) -> std::io::Result<()> {
    write(root, ".git/HEAD", "ref: refs/heads/main\nfn main in git\n")?;
    write(root, ".gitignore", "target/\n*.log\n/generated/\n")?;
    for i in 0..files {
        let path = format!(
            "{}/m{}/leaf{}/f{i}.{}",
            (b'a' + (i % 26) as u8) as char,
            (i / 26) % 12,
            (i / 312) % 5,
            EXTENSIONS[i % EXTENSIONS.len()]
        );
        write(root, &path, body(i))?;
    }
    for i in 0..500 {
        write(
            root,
            &format!("target/debug/build{}/out{i}.rs", i % 10),
            body(i * 7),
        )?;
    }
    for i in 0..20 {
        write(root, &format!("logs/run{i}.log"), "fn main() in a log\n")?;
        write(root, &format!("generated/g{i}.rs"), body(i * 7))?;
    }
    write(root, "b/m1/.gitignore", "skipped_here/\n*.tmp\n")?;
    for i in 0..10 {
        write(root, &format!("b/m1/skipped_here/s{i}.rs"), body(i * 7))?;
        write(root, &format!("b/m1/t{i}.tmp"), body(i * 7))?;
    }
    write(root, ".config/settings.rs", "fn main() { hidden }\n")?;
    write(root, "a/.hidden_dir/h.rs", "fn main() { hidden too }\n")?;
    for i in 0..5 {
        write(root, &format!("c/bin{i}.dat"), b"fn main()\0\x01\x02binary")?;
    }
    let long = format!("fn main() {{ {} }}\n", "x".repeat(600));
    write(root, "d/long.rs", long)?;
    write(root, "d/crlf.rs", "fn main() {\r\n}\r\n")?;
    std::fs::create_dir_all(root.join("e"))?;
    std::os::unix::fs::symlink("/etc", root.join("e/etc-link"))?;
    Ok(())
}

/// The tree of `files` files, generated once under `dir` and kept. It is
/// laid out under a name of its own and renamed into place whole, so a
/// tree under the final name is always complete, whoever else (another
/// test, the bench) is making one at the same time.
pub fn cached(dir: &Path, files: usize) -> std::io::Result<std::path::PathBuf> {
    let root = dir.join(format!("search-tree-{files}"));
    if !root.exists() {
        let scratch = dir.join(format!(
            "search-tree-{files}.partial-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&scratch)?;
        generate(&scratch, files)?;
        // Someone else's won: theirs is the same tree.
        if std::fs::rename(&scratch, &root).is_err() {
            let _ = std::fs::remove_dir_all(&scratch);
        }
    }
    std::fs::canonicalize(root)
}
