//! What `deploy/` promises, checked here (issue 28): the manifests are
//! valid against the published Kubernetes schemas (and agent-sandbox's
//! fields), both network policies draw the boundary carapace's egress
//! proxy works within, the Job's job file is a valid job, and the image's
//! warm component cache serves a non-root user without a write.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::TestResult;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tests/deploy/validate.py` over `deploy`: its exit and what it said.
fn validate(deploy: &Path, job_out: &Path) -> Result<(bool, String), Box<dyn std::error::Error>> {
    let output = Command::new(carapace_test_support::deps::python())
        .arg(repo().join("tests/deploy/validate.py"))
        .arg(deploy)
        .arg(job_out)
        .output()?;
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Ok((output.status.success(), said))
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

#[test]
fn the_manifests_validate_and_draw_the_proxys_boundary() -> TestResult {
    let dir = tempfile::tempdir()?;
    let job = dir.path().join("job.json");
    let (valid, said) = validate(&repo().join("deploy"), &job)?;
    assert!(valid, "{said}");
    let checked = support::carapace()
        .args(["worker", "--check"])
        .arg(&job)
        .output()?;
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    // Each kind of mistake is caught: a mistyped Kubernetes field, a field
    // agent-sandbox does not have, a policy that leaves the metadata
    // service open, a job allowing a host the policy shuts.
    for (file, from, to, expected) in [
        (
            "agent-sandbox/sandbox-template.yaml",
            "readOnlyRootFilesystem",
            "readOnlyRootFilesytem",
            "readOnlyRootFilesytem",
        ),
        (
            "agent-sandbox/warm-pool.yaml",
            "replicas: 8",
            "replicas: 8\n  surprise: 1",
            "spec.surprise",
        ),
        (
            "kubernetes/job.yaml",
            "        - 169.254.0.0/16\n",
            "",
            "leaves open ['169.254.0.0/16']",
        ),
        (
            "kubernetes/job.yaml",
            "\"index.crates.io\"",
            "\"index.crates.io\", \"10.0.0.7\"",
            "allows 10.0.0.7",
        ),
    ] {
        let copy = dir.path().join("broken");
        let _ = std::fs::remove_dir_all(&copy);
        copy_tree(&repo().join("deploy"), &copy)?;
        let path = copy.join(file);
        let text = std::fs::read_to_string(&path)?;
        assert!(text.contains(from), "{file} no longer holds {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1))?;
        let (valid, said) = validate(&copy, &dir.path().join("job2.json"))?;
        assert!(!valid && said.contains(expected), "{file}: {said}");
    }
    Ok(())
}

#[test]
fn the_containerfile_builds_what_the_manifests_run() -> TestResult {
    let text = std::fs::read_to_string(repo().join("deploy/Containerfile"))?;
    let last_stage = text.rsplit("\nFROM ").next().ok_or("no stage")?;
    for needed in [
        "target/release/carapace ",
        "target/release/carapace-sandbox",
        "carapace plugin warm",
        "USER 10001",
        "ENTRYPOINT [\"carapace\", \"worker\"]",
    ] {
        assert!(
            last_stage.contains(needed),
            "the image's last stage lacks {needed}"
        );
    }
    // The manifests run that user, and the image's entrypoint arguments.
    for manifest in [
        "deploy/kubernetes/job.yaml",
        "deploy/agent-sandbox/sandbox-template.yaml",
    ] {
        let text = std::fs::read_to_string(repo().join(manifest))?;
        assert!(text.contains("runAsUser: 10001"), "{manifest}");
        assert!(
            text.contains("args: [\"/job/job.json\"]")
                || text.contains("args: [\"--listen\", \"0.0.0.0:8080\"]"),
            "{manifest}"
        );
    }
    Ok(())
}

fn files_in(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => files_in(&entry.path()),
            _ => vec![(entry.path(), entry.metadata().map(|m| m.len()).unwrap_or(0))],
        })
        .collect();
    found.sort();
    found
}

#[test]
fn the_images_warm_cache_serves_a_non_root_user_without_a_write() -> TestResult {
    // As the image is built: compiled by the builder, made read-only.
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    let warm = |command: &mut Command| -> Result<String, Box<dyn std::error::Error>> {
        let output = command
            .env("CARAPACE_CACHE_DIR", &cache)
            .args(["plugin", "warm"])
            .output()?;
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?)
    };
    let built = warm(&mut support::carapace())?;
    assert_eq!(built.matches(" compiled").count(), 10, "{built}");
    Command::new("chmod")
        .args(["-R", "a+rX,go-w"])
        .arg(dir.path())
        .status()?;
    let before = files_in(&cache);
    // As the pod runs: another, unprivileged user.
    let mut as_user = match carapace_test_support::runs_as_root() {
        true => {
            let mut command = Command::new("setpriv");
            command
                .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                // A copy: the build's own may be in a folder only root enters.
                .arg(support::binary_for_other_accounts(&dir.path().join("run"))?)
                .env("HOME", dir.path());
            command
        }
        false => {
            Command::new("chmod")
                .args(["-R", "a-w"])
                .arg(&cache)
                .status()?;
            support::carapace()
        }
    };
    let served = warm(&mut as_user)?;
    assert_eq!(served.matches("cached already").count(), 10, "{served}");
    assert_eq!(files_in(&cache), before, "the cache was written to");
    Ok(())
}
