//! WASI with file streams that do their I/O on the calling thread, and
//! the names guests may not make judged (`guest_creation`).
//!
//! wasmtime-wasi's file streams hand every non-blocking `write` and `read`
//! (what wasi-libc, and so Rust's and C's standard libraries, call) to
//! tokio's blocking pool, even with `allow_blocking_current_thread` set:
//! each write of a file costs two thread hand-offs, most of a small tool
//! call or hook. Every call's context already allows blocking the current
//! thread for filesystem work, so the streams here do the same work inline.
//!
//! Only how the bytes move changes. Each stream is made exactly where
//! wasmtime-wasi makes its own (`read-via-stream`, `write-via-stream`,
//! `append-via-stream`), from the same descriptor, after the same checks
//! (a read-only preopen refuses a write stream), on the descriptor the
//! guest opened beneath its grant; the descriptor's own open mode is still
//! enforced by the operating system.

use super::SandboxError;
use bytes::{Bytes, BytesMut};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, InputStream, OutputStream, Pollable, StreamError, StreamResult,
};

/// The `wasi:filesystem/types` version wasmtime-wasi links; guests that
/// import an older 0.2 version are served by it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// What one write or read moves at most, as wasmtime-wasi's own streams.
const CHUNK_BYTES: usize = 64 * 1024;

/// Adds WASI to `linker`, its file streams replaced by the inline ones.
pub(crate) fn add_to_linker<T: super::engine::World + wasmtime_wasi::WasiView>(
    linker: &mut Linker<T>,
) -> Result<(), SandboxError> {
    wasmtime_wasi::p2::add_to_linker_async(linker).map_err(SandboxError::setup("linking WASI"))?;
    // Defining a stream function must be refused while shadowing is off:
    // if it is not, wasmtime-wasi links another version and these streams
    // would never be used.
    if define_read(&mut linker.instance(FILESYSTEM_TYPES).map_err(link_error)?).is_ok() {
        return Err(SandboxError::Prepare(format!(
            "linking file streams: wasmtime-wasi does not link {FILESYSTEM_TYPES}"
        )));
    }
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES).map_err(link_error)?;
    define_read(&mut types).map_err(link_error)?;
    types
        .func_wrap(
            "[method]descriptor.write-via-stream",
            |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
                let table = store.data_mut().ctx().table;
                Ok((stream_for(table, &fd, ErrorCode::BadDescriptor, |file| {
                    writable(file)?;
                    Ok(Box::new(InlineWriter::new(file, Some(offset))) as DynOutputStream)
                })?,))
            },
        )
        .map_err(link_error)?;
    types
        .func_wrap(
            "[method]descriptor.append-via-stream",
            |mut store, (fd,): (Resource<Descriptor>,)| {
                let table = store.data_mut().ctx().table;
                Ok((stream_for(table, &fd, ErrorCode::BadDescriptor, |file| {
                    writable(file)?;
                    Ok(Box::new(InlineWriter::new(file, None)) as DynOutputStream)
                })?,))
            },
        )
        .map_err(link_error)?;
    super::guest_creation::define(&mut types).map_err(link_error)?;
    linker.allow_shadowing(false);
    Ok(())
}

fn link_error(e: wasmtime::Error) -> SandboxError {
    SandboxError::setup("linking file streams")(e)
}

fn define_read<T: wasmtime_wasi::WasiView + 'static>(
    types: &mut wasmtime::component::LinkerInstance<'_, T>,
) -> wasmtime::Result<()> {
    types.func_wrap(
        "[method]descriptor.read-via-stream",
        |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
            let table = store.data_mut().ctx().table;
            Ok((stream_for(table, &fd, ErrorCode::IsDirectory, |file| {
                Ok(Box::new(InlineReader::new(file, offset)) as DynInputStream)
            })?,))
        },
    )
}

/// Makes a stream over `fd`'s file with `make` and puts it in the table. A
/// missing descriptor traps and a directory is `on_dir`, as in
/// wasmtime-wasi.
fn stream_for<S: Send + 'static>(
    table: &mut ResourceTable,
    fd: &Resource<Descriptor>,
    on_dir: ErrorCode,
    make: impl FnOnce(&wasmtime_wasi::filesystem::File) -> Result<S, ErrorCode>,
) -> wasmtime::Result<Result<Resource<S>, ErrorCode>> {
    let stream = match table.get(fd)? {
        Descriptor::File(file) => make(file),
        Descriptor::Dir(_) => Err(on_dir),
    };
    Ok(match stream {
        Ok(stream) => Ok(table.push(stream)?),
        Err(code) => Err(code),
    })
}

fn writable(file: &wasmtime_wasi::filesystem::File) -> Result<(), ErrorCode> {
    if file.perms.write_not_permitted() {
        return Err(ErrorCode::NotPermitted);
    }
    Ok(())
}

/// Reads from a position, on the calling thread.
struct InlineReader {
    file: Arc<std::fs::File>,
    position: u64,
    closed: bool,
}

impl InlineReader {
    fn new(file: &wasmtime_wasi::filesystem::File, position: u64) -> Self {
        Self {
            file: file.file.clone(),
            position,
            closed: false,
        }
    }
}

#[wasmtime_wasi::async_trait]
impl InputStream for InlineReader {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        if size == 0 {
            return Ok(Bytes::new());
        }
        let mut buf = BytesMut::zeroed(size.min(CHUNK_BYTES));
        loop {
            match self.file.read_at(&mut buf, self.position) {
                Ok(0) => {
                    self.closed = true;
                    return Err(StreamError::Closed);
                }
                Ok(n) => {
                    buf.truncate(n);
                    self.position += n as u64;
                    return Ok(buf.freeze());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.closed = true;
                    return Err(StreamError::LastOperationFailed(e.into()));
                }
            }
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for InlineReader {
    /// A file is always ready: a read does its I/O when it is made.
    async fn ready(&mut self) {}
}

/// Writes at a position (`Some`) or at the end (`None`), on the calling
/// thread.
struct InlineWriter {
    file: Arc<std::fs::File>,
    position: Option<u64>,
    closed: bool,
}

impl InlineWriter {
    fn new(file: &wasmtime_wasi::filesystem::File, position: Option<u64>) -> Self {
        Self {
            file: file.file.clone(),
            position,
            closed: false,
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let written = match self.position {
                Some(position) => self.file.write_at(bytes, position),
                None => append(&self.file, bytes),
            };
            match written {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    bytes = &bytes[n..];
                    if let Some(position) = &mut self.position {
                        *position += n as u64;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Appends whatever the descriptor's open flags are (WASI's append streams
/// do not need `O_APPEND`), as one `pwritev2(RWF_APPEND)`.
fn append(file: &std::fs::File, bytes: &[u8]) -> std::io::Result<usize> {
    use rustix::io::{ReadWriteFlags, pwritev2};
    pwritev2(
        file,
        &[std::io::IoSlice::new(bytes)],
        0,
        ReadWriteFlags::APPEND,
    )
    .map_err(Into::into)
}

#[wasmtime_wasi::async_trait]
impl OutputStream for InlineWriter {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        if bytes.len() > CHUNK_BYTES {
            return Err(StreamError::Trap(wasmtime::format_err!(
                "write of {} bytes: check-write allowed {CHUNK_BYTES}",
                bytes.len()
            )));
        }
        self.write_all(&bytes).map_err(|e| {
            self.closed = true;
            StreamError::LastOperationFailed(e.into())
        })
    }

    fn flush(&mut self) -> StreamResult<()> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        Ok(CHUNK_BYTES)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for InlineWriter {
    /// Always ready: each write is done before it returns.
    async fn ready(&mut self) {}
}
