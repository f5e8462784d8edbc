//! Files in and out: input files read with their size checked before reading, outputs written atomically
//! (a temporary file renamed over the old one once complete and synced), the first write error kept.

use relattn::error::Bytes;
use relattn::files::{read_arrays, read_at_most, TensorFile, MAX_FILE_BYTES};
use relattn::trained::chorales::Chorales;
use relattn::trained::transformer::Transformer;
use relattn::Error;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The temporary file [`write_atomic`] is writing, if any: the Ctrl-C handler removes it.
static WRITING: Mutex<Option<PathBuf>> = Mutex::new(None);
/// Whether the command running stops itself on Ctrl-C ([`stop_on_ctrl_c`]), and whether Ctrl-C was pressed.
static STOPS_ITSELF: AtomicBool = AtomicBool::new(false);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the command line's one Ctrl-C handler: it removes the temporary file being written, if any (a
/// trace of n 4096 is hundreds of MB), then ends the process with exit code 130 ("error: interrupted"), unless
/// the command stops itself ([`stop_on_ctrl_c`]), which is then told.
pub fn handle_ctrl_c() {
    let _ = ctrlc::set_handler(|| {
        let writing = WRITING.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(tmp) = &writing {
            let _ = std::fs::remove_file(tmp);
        }
        if STOPS_ITSELF.load(Ordering::SeqCst) && writing.is_none() {
            INTERRUPTED.store(true, Ordering::SeqCst);
        } else {
            eprintln!("error: interrupted; nothing written");
            std::process::exit(130);
        }
    });
}

/// From now on Ctrl-C sets the flag returned, which the command checks to stop cleanly, instead of ending the
/// process (while a file is written it still removes the file and ends it).
pub fn stop_on_ctrl_c() -> &'static AtomicBool {
    STOPS_ITSELF.store(true, Ordering::SeqCst);
    &INTERRUPTED
}

pub fn load_model(path: &Path) -> relattn::Result<Transformer> {
    Transformer::load(&read_bytes(path, "a model file", "a .safetensors model")?, &path.display().to_string())
}

/// Reads a chorale data file (see [`read_bytes`]).
pub fn read_chorales(path: &Path) -> relattn::Result<Chorales> {
    Chorales::parse(&read_bytes(path, "a chorale data file", "a .json data file")?, &path.display().to_string())
}

/// Reads a scenario file, a captured layer's too (see [`read_bytes`]), its arrays within `budget` bytes
/// ([`read_arrays`]).
pub fn read_file(path: &Path, budget: u64) -> relattn::Result<TensorFile> {
    read_arrays(&read_bytes(path, "a scenario file", "an .npz or .npy file")?, &path.display().to_string(), budget)
}

/// Reads an input file (`what`, e.g. "a scenario file"; `wanted`, what to give instead). Refused before
/// reading: anything but a regular file (/dev/zero never ends, a FIFO blocks) and a file over
/// [`MAX_FILE_BYTES`]; the read itself stops there too, should the file grow.
pub fn read_bytes(path: &Path, what: &str, wanted: &str) -> relattn::Result<Vec<u8>> {
    let name = path.display().to_string();
    let err = |reason: String| Error::File { path: name.clone(), reason };
    let not_regular = || err(format!("not a regular file (a device, FIFO or directory); give {wanted}"));
    let over = |size: String| err(format!("{size} is over the limit of {} for {what}", Bytes(MAX_FILE_BYTES)));
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(over(Bytes(meta.len()).to_string()));
    }
    let mut file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    if !file.metadata().map_err(|e| err(e.to_string()))?.is_file() {
        return Err(not_regular());
    }
    read_at_most(&mut file, MAX_FILE_BYTES).map_err(|e| err(e.to_string()))?.ok_or_else(|| over("it".into()))
}

/// Writes `path` through `write`, which is given the path to write to: a temporary file beside `path`
/// (same directory, so the rename stays on one file system; same extension, which picks the format),
/// renamed over `path` once written and synced. On failure the temporary file is removed and `path` is as
/// it was, and so on Ctrl-C ([`handle_ctrl_c`]). A `path` that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written in
/// place: a rename would replace the device node itself.
pub fn write_atomic(path: &Path, write: impl FnOnce(&Path) -> relattn::Result<()>) -> relattn::Result<()> {
    let shown = path.display().to_string();
    let named = |e: Error| match e {
        Error::Write { reason, .. } => Error::Write { path: shown.clone(), reason },
        other => other,
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return write(path).map_err(named);
    }
    let file_name = path.file_name().ok_or_else(|| Error::Write { path: shown.clone(), reason: "not a file name".into() })?;
    let ext = path.extension().map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    let tmp = path.with_file_name(format!(".{}.{}.tmp{ext}", file_name.to_string_lossy(), std::process::id()));
    // Ctrl-C while it is written removes it ([`handle_ctrl_c`]).
    let writing = |tmp: Option<PathBuf>| *WRITING.lock().unwrap_or_else(|e| e.into_inner()) = tmp;
    writing(Some(tmp.clone()));
    let result = write(&tmp).and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::Write { path: shown.clone(), reason: e.to_string() }));
    writing(None);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(named)
}

/// A file written through `write` (a buffered, seekable writer that keeps its first error), then flushed
/// and synced; every error, the first write error above all, as [`Error::Write`].
pub fn write_file(path: &Path, write: impl FnOnce(&mut FirstError<std::io::BufWriter<std::fs::File>>) -> relattn::Result<()>) -> relattn::Result<()> {
    let err = |e: std::io::Error| Error::Write { path: path.display().to_string(), reason: e.to_string() };
    let mut w = FirstError::new(std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?));
    let result = write(&mut w);
    if let Some(e) = w.first.take() {
        return Err(err(e));
    }
    result?;
    let file = w.inner.into_inner().map_err(|e| err(e.into_error()))?;
    file.sync_all().or_else(|e| if e.kind() == std::io::ErrorKind::InvalidInput { Ok(()) } else { Err(e) }).map_err(err)
}

/// A writer that returns its first error once and then accepts (and drops) every write and seek, so an
/// encoder that writes again while it is dropped (zip's `ZipWriter` finishing the archive, which printed
/// "ZipWriter drop failed") stops quietly; the first error is the one reported. It keeps the position the
/// encoder expects, so it sees consistent offsets either way.
pub struct FirstError<W> {
    inner: W,
    first: Option<std::io::Error>,
    /// Position and end of the stream as the encoder sees it.
    pos: u64,
    end: u64,
}

impl<W> FirstError<W> {
    fn new(inner: W) -> Self {
        FirstError { inner, first: None, pos: 0, end: 0 }
    }

    /// Keeps `e` and returns an error of the same kind to the caller.
    fn keep(&mut self, e: std::io::Error) -> std::io::Error {
        let returned = std::io::Error::new(e.kind(), e.to_string());
        self.first = Some(e);
        returned
    }

    fn moved_to(&mut self, pos: u64) -> u64 {
        self.pos = pos;
        self.end = self.end.max(pos);
        pos
    }
}

impl<W: Write> Write for FirstError<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = if self.first.is_some() { buf.len() } else { self.inner.write(buf).map_err(|e| self.keep(e))? };
        self.moved_to(self.pos + written as u64);
        Ok(written)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if self.first.is_some() {
            return Ok(());
        }
        self.inner.flush().map_err(|e| self.keep(e))
    }
}

impl<W: Seek> Seek for FirstError<W> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        if self.first.is_none() {
            let at = self.inner.seek(pos).map_err(|e| self.keep(e))?;
            return Ok(self.moved_to(at));
        }
        let at = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.end.checked_add_signed(d),
        };
        at.map(|p| self.moved_to(p)).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    }
}
