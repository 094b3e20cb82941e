//! What a component or hook may make through WASI: the names the command
//! guard refuses a command (`.git`, `.mcp.json`, `.vscode`, a git
//! directory under another name, …) are refused to a guest too, at the
//! call that would make them — so nothing a guest plants is found by a
//! `git status` while the call runs, or after carapace is killed, and a
//! hook (whose writes nothing sweeps) plants nothing at all.
//!
//! wasmtime-wasi's calls that make a name (`open-at` creating or writing,
//! `create-directory-at`, `symlink-at`, `link-at`, `rename-at`) are
//! shadowed: each judges the name in the real folder it lands in — the
//! descriptor's own path, read from `/proc/self/fd`, then any links the
//! guest's path goes through — and either answers `access` or hands the
//! call to wasmtime-wasi unchanged. Staging directories are exempt:
//! nothing made there leaves them but the granted file itself.

use super::engine::World;
use super::process::CreationRules;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use wasmtime::component::{LinkerInstance, Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

/// How many links one path may go through, as the kernel's limit.
const MAX_HOPS: usize = 40;

type Answer<V> = wasmtime::Result<(Result<V, ErrorCode>,)>;

/// Shadows the name-making calls of `wasi:filesystem/types` in `types`.
pub(super) fn define<T: World + wasmtime_wasi::WasiView>(
    types: &mut LinkerInstance<'_, T>,
) -> wasmtime::Result<()> {
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store,
         (fd, path_flags, path, oflags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let writes = oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE)
                    || flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
                let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
                if writes && refused(store.data_mut(), &fd, &path, follow) {
                    return Ok((Err(ErrorCode::Access),));
                }
                let mut view = store.data_mut().filesystem();
                answer(
                    HostDescriptor::open_at(&mut view, fd, path_flags, path, oflags, flags).await,
                )
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                if refused(store.data_mut(), &fd, &path, false) {
                    return Ok((Err(ErrorCode::Access),));
                }
                let mut view = store.data_mut().filesystem();
                answer(HostDescriptor::create_directory_at(&mut view, fd, path).await)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, target, path): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                if refused(store.data_mut(), &fd, &path, false) {
                    return Ok((Err(ErrorCode::Access),));
                }
                let mut view = store.data_mut().filesystem();
                answer(HostDescriptor::symlink_at(&mut view, fd, target, path).await)
            })
        },
    )?;
    define_link_and_rename(types)
}

fn define_link_and_rename<T: World + wasmtime_wasi::WasiView>(
    types: &mut LinkerInstance<'_, T>,
) -> wasmtime::Result<()> {
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store,
         (fd, old_flags, old_path, new_fd, new_path): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                if refused(store.data_mut(), &new_fd, &new_path, false) {
                    return Ok((Err(ErrorCode::Access),));
                }
                let mut view = store.data_mut().filesystem();
                let linked =
                    HostDescriptor::link_at(&mut view, fd, old_flags, old_path, new_fd, new_path);
                answer(linked.await)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store,
         (fd, old_path, new_fd, new_path): (
            Resource<Descriptor>,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                if refused(state, &new_fd, &new_path, false)
                    || brings_in(state, (&fd, &old_path), (&new_fd, &new_path))
                {
                    return Ok((Err(ErrorCode::Access),));
                }
                let mut view = store.data_mut().filesystem();
                answer(HostDescriptor::rename_at(&mut view, fd, old_path, new_fd, new_path).await)
            })
        },
    )
}

/// wasmtime-wasi's own answer, its error code lowered as its glue does.
fn answer<V>(result: FsResult<V>) -> Answer<V> {
    Ok((match result {
        Ok(value) => Ok(value),
        Err(e) => Err(e.downcast()?),
    },))
}

/// Whether the guest may not make (or write) `path` beneath `fd`; a
/// refusal is said on the guest's stderr, as the command guard says it on
/// a command's.
fn refused<T: World>(state: &mut T, fd: &Resource<Descriptor>, path: &str, follow: bool) -> bool {
    let core = state.core();
    let Some(rules) = core.creation.clone() else {
        return false;
    };
    let Some(landing) = landing(&core.table, fd, path) else {
        return false;
    };
    let Some(made) = judged(&rules, landing, follow) else {
        return false;
    };
    tracing::warn!(plugin = %core.plugin, path = %made.display(), "refused a protected name a guest tried to make");
    core.say(&format!(
        "carapace: {} was not created: a tool or hook may not create it (it can make git, an editor or another tool run programs later, outside the sandbox); writing it needs the user's explicit approval\n",
        made.display()
    ));
    true
}

/// Whether renaming `old` to `new` moves a folder whole to where its
/// entries could not be made one by one.
fn brings_in<T: World>(
    state: &mut T,
    old: (&Resource<Descriptor>, &str),
    new: (&Resource<Descriptor>, &str),
) -> bool {
    let core = state.core();
    let Some(rules) = core.creation.clone() else {
        return false;
    };
    let (Some((from, old_name)), Some((to, new_name))) = (
        landing(&core.table, old.0, old.1),
        landing(&core.table, new.0, new.1),
    ) else {
        return false;
    };
    let is_folder = from
        .join(&old_name)
        .symlink_metadata()
        .is_ok_and(|m| m.is_dir());
    is_folder && rules.brings_in(&from, &to, &new_name)
}

/// The real folder `path` beneath the directory `fd` lands in, and the
/// name it makes there; `None` where nothing can be made (not a
/// directory, a folder that is not there: the call itself fails).
fn landing(
    table: &ResourceTable,
    fd: &Resource<Descriptor>,
    path: &str,
) -> Option<(PathBuf, String)> {
    let Ok(Descriptor::Dir(dir)) = table.get(fd) else {
        return None;
    };
    let base = std::fs::read_link(format!("/proc/self/fd/{}", dir.dir.as_raw_fd())).ok()?;
    let trimmed = path.trim_end_matches('/');
    let (parent, name) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
    if name.is_empty() {
        return None;
    }
    let folder = if parent.is_empty() {
        base
    } else {
        std::fs::canonicalize(base.join(parent)).ok()?
    };
    Some((folder, name.to_string()))
}

/// The path refused, following the name's own link where the call does
/// (a dangling link is made at its target).
fn judged(rules: &CreationRules, landing: (PathBuf, String), follow: bool) -> Option<PathBuf> {
    let (mut folder, mut name) = landing;
    for _ in 0..MAX_HOPS {
        let path = folder.join(&name);
        if rules.may_refuse(&name) && rules.refuses(&folder, &name) {
            return Some(path);
        }
        if !follow {
            return None;
        }
        let Ok(target) = std::fs::read_link(&path) else {
            return None;
        };
        let next = folder.join(target);
        let parent = next.parent().map(Path::to_path_buf)?;
        folder = std::fs::canonicalize(&parent).unwrap_or(parent);
        name = next.file_name()?.to_string_lossy().into_owned();
    }
    None
}
