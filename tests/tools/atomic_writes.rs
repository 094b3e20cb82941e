//! Write, Edit and NotebookEdit replace a file as Claude Code does: a new
//! file renamed over the old one, so that a reader (or a crash) sees the
//! old content or the new, never a truncated mix. What proves a
//! replacement rather than a write in place: another name of the old file
//! keeps the old content.

use super::{TestResult, bench, ok_text};
use carapace::policy::PermissionMode;
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

#[tokio::test]
async fn edit_and_write_replace_the_file_whole_and_keep_its_mode() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let script = b.p("run.sh");
    let other_name = b.p("run-old.sh");
    std::fs::write(&script, "echo one\n")?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    std::fs::hard_link(&script, &other_name)?;
    let before = std::fs::metadata(&script)?.ino();

    ok_text(&b.call("Read", json!({"file_path": script})).await);
    ok_text(
        &b.call(
            "Edit",
            json!({"file_path": script, "old_string": "one", "new_string": "two"}),
        )
        .await,
    );
    assert_eq!(std::fs::read_to_string(&script)?, "echo two\n");
    assert_eq!(
        std::fs::read_to_string(&other_name)?,
        "echo one\n",
        "the edit replaced the file; it did not write into the old one"
    );
    let after = std::fs::metadata(&script)?;
    assert_ne!(after.ino(), before);
    assert_eq!(after.mode() & 0o7777, 0o755, "the mode is kept");

    // Write over an existing file: the same.
    std::fs::hard_link(&script, b.p("run-two.sh"))?;
    ok_text(&b.call("Read", json!({"file_path": script})).await);
    ok_text(
        &b.call(
            "Write",
            json!({"file_path": script, "content": "echo three\n"}),
        )
        .await,
    );
    assert_eq!(std::fs::read_to_string(&script)?, "echo three\n");
    assert_eq!(std::fs::read_to_string(b.p("run-two.sh"))?, "echo two\n");
    assert_eq!(
        std::fs::metadata(&script)?.mode() & 0o7777,
        0o755,
        "the mode is kept"
    );

    // A new file gets the mode any new file of this process gets.
    let created = b.p("new.txt");
    ok_text(
        &b.call("Write", json!({"file_path": created, "content": "x\n"}))
            .await,
    );
    let native = b.ws.join("native-new.txt");
    std::fs::write(&native, "x\n")?;
    assert_eq!(
        std::fs::metadata(&created)?.mode() & 0o7777,
        std::fs::metadata(&native)?.mode() & 0o7777,
        "Write creates files as any program does (0666 less the umask)"
    );
    std::fs::remove_file(&created)?;
    std::fs::remove_file(&native)?;

    // Nothing of the replacement is left beside it.
    let mut names: Vec<String> = std::fs::read_dir(&b.ws)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    assert_eq!(names, ["run-old.sh", "run-two.sh", "run.sh"]);
    Ok(())
}

#[tokio::test]
async fn notebook_edit_replaces_the_notebook_whole() -> TestResult {
    let b = bench(PermissionMode::AcceptEdits, &[]).await?;
    let notebook = b.p("nb.ipynb");
    let cells = json!({"cells": [{"cell_type": "code", "id": "c1", "metadata": {},
        "source": ["print(1)"], "outputs": [], "execution_count": null}],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5});
    std::fs::write(&notebook, cells.to_string())?;
    std::fs::hard_link(&notebook, b.p("nb-old.ipynb"))?;
    ok_text(&b.call("Read", json!({"file_path": notebook})).await);
    ok_text(
        &b.call(
            "NotebookEdit",
            json!({"notebook_path": notebook, "cell_id": "c1", "new_source": "print(2)"}),
        )
        .await,
    );
    assert!(std::fs::read_to_string(&notebook)?.contains("print(2)"));
    assert!(std::fs::read_to_string(b.p("nb-old.ipynb"))?.contains("print(1)"));
    Ok(())
}
