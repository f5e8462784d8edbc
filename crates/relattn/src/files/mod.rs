//! Scenario files read: the arrays of an .npz (or a single .npy) as f32, with a captured layer's description
//! ([`capture`]), every size checked before anything is inflated. The arrays' names and shapes are
//! relattn_core's (`layer::scenario`: what each is, what is generated when it is absent); a trace is
//! written back with [`write_trace`].

pub mod atlas;
pub mod capture;

use capture::CaptureInfo;
use ndarray::ArrayD;
use ndarray_npy::npy::header::Header;
use ndarray_npy::ReadNpyExt;
use relattn_core::error::{Bytes, Error, Result};
use relattn_core::layer::scenario::{Arrays, NAMES};
use relattn_core::layer::trace::Trace;
use std::collections::BTreeMap;
use std::io::{Cursor, Read};

/// Most bytes of arrays a scenario file may hold once decompressed, and most bytes of the file itself.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// A scenario file's arrays, and the description of the model layer it was captured from, if it was
/// ([`capture`]).
#[derive(Clone, Debug, Default)]
pub struct TensorFile {
    pub arrays: Arrays,
    pub capture: Option<CaptureInfo>,
}

/// Most bytes a capture's description (its member `capture`, UTF-8 JSON) may hold: a description is a few
/// KiB (its tokens included); more is not one.
pub const MAX_CAPTURE_BYTES: u64 = 4 << 20;

/// Bytes an .npy header may take beyond its data (numpy pads it to a multiple of 64; the 4-byte length of
/// formats 2 and 3 allows more, which nothing writes).
const NPY_HEADER_SLACK: u64 = 64 << 10;

/// Reads the arrays of an .npz (or, for a single array `x`, an .npy) from bytes, and a capture's description
/// (its member `capture.npy`, read as bytes).
/// Nothing is allocated for more elements than the file's bytes can hold, nor past `budget` bytes: each
/// member's declared size and each array's header are checked before its data is read, decompression stops at
/// [`MAX_FILE_BYTES`] and at what is left of `budget`, and the decompressed bytes of the members plus their
/// float32 copies (4 bytes an element, whatever the dtype) must fit `budget` (the caller's memory budget:
/// the command line's --max-memory-mb, the page's limit), each refusal naming the member and the budget.
pub fn read_arrays(bytes: &[u8], file_name: &str, budget: u64) -> Result<TensorFile> {
    let file_err = |reason: String| Error::File { path: file_name.into(), reason };
    if bytes.starts_with(b"\x93NUMPY") {
        let x = read_npy(bytes, budget.saturating_sub(bytes.len() as u64), budget).map_err(|e| file_err(format!("not a numeric .npy: {e}")))?;
        return Ok(TensorFile { arrays: BTreeMap::from([("x".to_string(), x)]), capture: None });
    }
    if !bytes.starts_with(b"PK") {
        return Err(file_err("neither an .npz (zip) nor an .npy file".into()));
    }
    let allowed = format!("{}, and capture (a captured layer's description)", NAMES.join(", "));
    let kind_of = |name: &str| match name {
        capture::MEMBER => Some(MemberKind::Description),
        _ if NAMES.contains(&name) => Some(MemberKind::Array),
        _ => None,
    };
    let (mut arrays, mut capture) = (BTreeMap::new(), None);
    for (name, member) in read_npz(bytes, file_name, budget, kind_of, &allowed)? {
        match member {
            Member::Array(a) => {
                arrays.insert(name, a);
            }
            Member::Description(json) => capture = Some(CaptureInfo::parse(&json, file_name)?),
        }
    }
    Ok(TensorFile { arrays, capture })
}

/// What a reader takes a member of an .npz as ([`read_npz`]'s `kind_of`, by the member's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberKind {
    /// An array, read as f32.
    Array,
    /// A description: the UTF-8 bytes of a JSON object, 1-D uint8 of at most [`MAX_CAPTURE_BYTES`].
    Description,
}

/// A member of an .npz as read.
#[derive(Clone, Debug)]
pub enum Member {
    Array(ArrayD<f32>),
    Description(Vec<u8>),
}

/// Reads every member of an .npz (a zip of .npy, stored or deflated) as `kind_of` its name (without ".npy")
/// says, refusing a name it does not know (field "array name", allowed: `allowed`) or a name twice, within
/// `budget` as [`read_arrays`] says; in the zip's order.
pub fn read_npz(bytes: &[u8], file_name: &str, budget: u64, kind_of: impl Fn(&str) -> Option<MemberKind>, allowed: &str) -> Result<Vec<(String, Member)>> {
    let file_err = |reason: String| Error::File { path: file_name.into(), reason };
    if !bytes.starts_with(b"PK") {
        return Err(file_err("not an .npz (zip) file".into()));
    }
    let corrupt = |e: &dyn std::fmt::Display| file_err(format!("corrupt .npz: {e}"));
    let limit = MAX_FILE_BYTES.min(budget);
    let too_big = |name: &str| {
        file_err(if budget < MAX_FILE_BYTES {
            format!("array '{name}' does not fit: the arrays exceed the memory budget of {} once decompressed and read as float32", Bytes(budget))
        } else {
            format!("array '{name}' does not fit: its arrays exceed {} once decompressed", Bytes(MAX_FILE_BYTES))
        })
    };
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| corrupt(&e))?;
    // `held`: the bytes decompressed so far plus the float32 arrays read from them.
    let (mut out, mut seen, mut held) = (Vec::<(String, Member)>::new(), std::collections::BTreeSet::new(), 0u64);
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| corrupt(&e))?;
        let name = entry.name().trim_end_matches(".npy").to_string();
        let Some(kind) = kind_of(&name) else {
            return Err(Error::invalid("array name", format!("'{name}' in {file_name}"), allowed));
        };
        if !seen.insert(name.clone()) {
            return Err(Error::invalid("array name", format!("'{name}' twice in {file_name}"), "each array once"));
        }
        // The declared size first (a zip bomb says what it inflates to), then a bounded read in case it lies.
        let is_description = kind == MemberKind::Description;
        let room = if is_description { (MAX_CAPTURE_BYTES + NPY_HEADER_SLACK).min(limit - held) } else { limit - held };
        let description_too_long = is_description && held + MAX_CAPTURE_BYTES + NPY_HEADER_SLACK <= limit;
        let refuse = |size: String| {
            if description_too_long {
                file_err(format!("member '{name}' holds {size}; a description is at most {} (uint8)", Bytes(MAX_CAPTURE_BYTES)))
            } else {
                too_big(&name)
            }
        };
        if entry.size() > room {
            return Err(refuse(Bytes(entry.size()).to_string()));
        }
        let data = read_at_most(&mut entry, room).map_err(|e| corrupt(&e))?.ok_or_else(|| refuse(format!("more than {}", Bytes(room))))?;
        held += data.len() as u64;
        if is_description {
            let json = read_bytes_npy(&data).map_err(|e| file_err(format!("member '{name}': {e}")))?;
            if json.len() as u64 > MAX_CAPTURE_BYTES {
                return Err(refuse(Bytes(json.len() as u64).to_string()));
            }
            out.push((name, Member::Description(json.to_vec())));
            continue;
        }
        let a = read_npy(&data, budget - held, budget).map_err(|e| file_err(format!("array '{name}': {e}")))?;
        held += 4 * a.len() as u64;
        out.push((name, Member::Array(a)));
    }
    Ok(out)
}

/// Everything `r` yields, or `None` when that is more than `limit` bytes; the buffer never grows past
/// `limit + 1` bytes.
pub fn read_at_most(r: &mut impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 1 << 16];
    loop {
        let got = r.read(&mut chunk)?;
        if got == 0 {
            return Ok(Some(data));
        }
        if (data.len() + got) as u64 > limit {
            return Ok(None);
        }
        if data.capacity() - data.len() < got {
            // Doubling, but never past the limit.
            let want = (data.len() * 2).max(data.len() + got).min(limit as usize);
            data.try_reserve_exact(want - data.len())
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::OutOfMemory, format!("no memory for {}", Bytes(want as u64))))?;
        }
        data.extend_from_slice(&chunk[..got]);
    }
}

/// Deepest bracket nesting an .npy header may have: numpy's `{'descr': …, 'shape': (…), }` has 2, a
/// structured dtype's list of tuples 3 (refused later, by its dtype).
const MAX_HEADER_DEPTH: i64 = 3;

/// The header text of an .npy (after the magic, the version and the length: 2 bytes in format 1, 4 in
/// formats 2 and 3), when `bytes` hold all of it.
fn header_text(bytes: &[u8]) -> Option<&[u8]> {
    let (len, start) = match bytes.get(6)? {
        1 => (u16::from_le_bytes(bytes.get(8..10)?.try_into().ok()?) as usize, 10usize),
        _ => (u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize, 12),
    };
    bytes.get(start..start.checked_add(len)?)
}

/// The element types a scenario file's arrays may have: numpy's type character and item size.
const DTYPES: [(&str, usize, &str); 6] =
    [("f4", 4, "float32"), ("f8", 8, "float64"), ("i8", 8, "int64"), ("i4", 4, "int32"), ("b1", 1, "bool"), ("u1", 1, "uint8")];

/// An .npy's header, its dtype as written ("<f4", "|u1", …) and where its data starts.
fn npy_header(bytes: &[u8]) -> std::result::Result<(Header, String, usize), String> {
    // The header's Python-literal parser takes exponential time on deeply nested brackets (a 150-byte
    // header of 40 '{' ran for minutes, found by scripts/fuzz.sh); numpy writes a dict holding a tuple.
    let depth = header_text(bytes).unwrap_or_default().iter().scan(0i64, |d, c| {
        *d += match c {
            b'(' | b'[' | b'{' => 1,
            b')' | b']' | b'}' => -1,
            _ => 0,
        };
        Some(*d)
    });
    if let Some(deep) = depth.max().filter(|&d| d > MAX_HEADER_DEPTH) {
        return Err(format!("the header nests brackets {deep} deep; an .npy header is a dict of a tuple (at most {MAX_HEADER_DEPTH})"));
    }
    let mut cursor = Cursor::new(bytes);
    let header = Header::from_reader(&mut cursor).map_err(|e| e.to_string())?;
    let descr = header.type_descriptor.as_string().map_or_else(|| header.type_descriptor.to_string(), String::clone);
    Ok((header, descr, cursor.position() as usize))
}

/// The bytes of a 1-D uint8 .npy (a capture's description): any other dtype or shape is refused.
fn read_bytes_npy(bytes: &[u8]) -> std::result::Result<&[u8], String> {
    let (header, descr, start) = npy_header(bytes)?;
    if descr.trim_start_matches('|') != "u1" || header.shape.len() != 1 {
        return Err(format!("dtype '{descr}' of shape {:?}; allowed: uint8 of one axis (UTF-8 bytes)", header.shape));
    }
    let data = &bytes[start..];
    if data.len() != header.shape[0] {
        return Err(format!("the header says {} bytes but the data holds {}", header.shape[0], data.len()));
    }
    Ok(data)
}

/// One .npy as f32, from float32, float64, int64, int32, bool or uint8 data (key masks are often
/// integers or booleans). Before anything is allocated, the header's dtype must be one of those, its shape
/// must hold at most [`MAX_FILE_BYTES`] (∏ max(dᵢ, 1) · itemsize, the same bound on every target: ndarray
/// refuses shapes whose non-zero axes multiply past isize::MAX, 2³¹ − 1 on wasm32), its float32 copy (4 bytes
/// an element) must fit `room`, what is left of the memory budget `budget`, and the data after the header must
/// be exactly that many bytes.
fn read_npy(bytes: &[u8], room: u64, budget: u64) -> std::result::Result<ArrayD<f32>, String> {
    let (header, descr, start) = npy_header(bytes)?;
    let code = descr.trim_start_matches(['<', '>', '=', '|']);
    let Some(&(_, item, dtype)) = DTYPES.iter().find(|(c, _, _)| *c == code) else {
        return Err(format!("dtype '{descr}' is not allowed; allowed: float32, float64 (key_mask may also be bool, int32, int64 or uint8)"));
    };
    let span = header.shape.iter().try_fold(item as u64, |n, &d| n.checked_mul(d.max(1) as u64)).filter(|&n| n <= MAX_FILE_BYTES);
    if span.is_none() {
        return Err(format!("the shape {:?} is too large: at most {} per array", header.shape, Bytes(MAX_FILE_BYTES)));
    }
    let elements = header.shape.iter().product::<usize>(); // ≤ span: no overflow
    let claimed = elements * item;
    let data = bytes.len() - start;
    if claimed != data {
        return Err(format!("the header says shape {:?} of {dtype} ({claimed} bytes) but the data holds {data} bytes", header.shape));
    }
    let widened = 4 * elements as u64;
    if widened > room {
        return Err(format!(
            "shape {:?} read as float32 takes {}, beyond the memory budget of {} (the file's arrays, decompressed and as float32, must fit it)",
            header.shape,
            Bytes(widened),
            Bytes(budget)
        ));
    }
    let read = || Cursor::new(bytes);
    let e = |e: ndarray_npy::ReadNpyError| e.to_string();
    Ok(match code {
        "f4" => ArrayD::<f32>::read_npy(read()).map_err(e)?,
        "f8" => ArrayD::<f64>::read_npy(read()).map_err(e)?.mapv(|v| v as f32),
        "i8" => ArrayD::<i64>::read_npy(read()).map_err(e)?.mapv(|v| v as f32),
        "i4" => ArrayD::<i32>::read_npy(read()).map_err(e)?.mapv(|v| v as f32),
        "b1" => ArrayD::<bool>::read_npy(read()).map_err(e)?.mapv(|v| v as u8 as f32),
        _ => ArrayD::<u8>::read_npy(read()).map_err(e)?.mapv(|v| v as f32),
    })
}

/// Writes a trace's arrays ([`Trace::arrays`], under the names in `Stage::name` plus `x`, `q`, `k`, `v`,
/// `heads`) to an .npz (uncompressed).
pub fn write_trace<W: std::io::Write + std::io::Seek>(trace: &Trace, w: W) -> Result<()> {
    use relattn_core::layer::trace::Named;
    let io = |e: ndarray_npy::WriteNpzError| Error::Write { path: "trace .npz".into(), reason: e.to_string() };
    let mut npz = ndarray_npy::NpzWriter::new(w);
    for (name, a) in trace.arrays()? {
        match a {
            Named::F32(a) => npz.add_array(name, &a),
            Named::I64(a) => npz.add_array(name, &a),
        }
        .map_err(io)?;
    }
    npz.finish().map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};

    /// An .npz of the members `add` writes.
    fn npz(add: impl FnOnce(&mut ndarray_npy::NpzWriter<Cursor<Vec<u8>>>)) -> Vec<u8> {
        let mut w = ndarray_npy::NpzWriter::new(Cursor::new(Vec::new()));
        add(&mut w);
        w.finish().unwrap().into_inner()
    }

    const JSON: &[u8] = br#"{"options": {}, "model": "m", "family": "f", "part": "p", "layer": 0}"#;

    #[test]
    fn a_description_is_read_as_bytes_and_bounded() {
        let good = npz(|w| w.add_array("capture", &Array1::from(JSON.to_vec())).unwrap());
        assert!(read_arrays(&good, "c.npz", MAX_FILE_BYTES).unwrap().capture.is_some());
        // Padded with spaces past the bound: refused by name, whatever the budget.
        let padded = [JSON, &vec![b' '; MAX_CAPTURE_BYTES as usize + 1]].concat();
        let big = npz(|w| w.add_array("capture", &Array1::from(padded)).unwrap());
        let e = read_arrays(&big, "c.npz", MAX_FILE_BYTES).unwrap_err().to_string();
        assert!(e.contains("'capture'") && e.contains("4.0 MiB"), "{e}");
        // Only 1-D uint8.
        let floats = npz(|w| w.add_array("capture", &Array1::from_iter(JSON.iter().map(|&b| b as f32))).unwrap());
        let longs = npz(|w| w.add_array("capture", &Array1::from_iter(JSON.iter().map(|&b| b as i64))).unwrap());
        let two_d = npz(|w| w.add_array("capture", &Array2::from_shape_vec((1, JSON.len()), JSON.to_vec()).unwrap()).unwrap());
        for file in [floats, longs, two_d] {
            let e = read_arrays(&file, "c.npz", MAX_FILE_BYTES).unwrap_err().to_string();
            assert!(e.contains("'capture'") && e.contains("uint8"), "{e}");
        }
    }

    #[test]
    fn arrays_widened_to_float32_must_fit_the_budget() {
        // 1 MiB of uint8 is 4 MiB as float32: within a budget of 8 MiB, refused by name within 4 MiB.
        let mask = npz(|w| w.add_array("key_mask", &Array2::<u8>::ones((1, 1 << 20))).unwrap());
        assert!(read_arrays(&mask, "m.npz", 8 << 20).is_ok());
        let e = read_arrays(&mask, "m.npz", 4 << 20).unwrap_err().to_string();
        assert!(e.contains("'key_mask'") && e.contains("4.0 MiB"), "{e}");
        // Its decompressed bytes alone past the budget: refused before they are read.
        let e = read_arrays(&mask, "m.npz", 1 << 19).unwrap_err().to_string();
        assert!(e.contains("'key_mask'") && e.contains("512.0 KiB"), "{e}");
    }
}
