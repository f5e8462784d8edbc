//! Scenario files: the tensors of one attention layer, as a user exports them with `np.savez`.
//!
//! Every array is optional, float32 or float64; what is absent is generated from the seed:
//!
//! | name | shape | generated as |
//! |---|---|---|
//! | `x` | (n, d_model) or (b, n, d_model) | N(0, 1) |
//! | `w_q`, `w_k`, `w_v`, `w_o` | (d_model, d_model) | Xavier-uniform, U(±sqrt(6 / (fan_in + fan_out))) |
//! | `b_q`, `b_k`, `b_v`, `b_o` | (d_model) | zeros |
//! | `rel_k`, `rel_v` (Shaw) | (2k+1, d_head) or (h, 2k+1, d_head) | Xavier-uniform per head table |
//! | `e_r` (Music) | (R, d_head) or (h, R, d_head); R = k+1 causal, 2k+1 bidirectional | Xavier-uniform |
//! | `key_mask` | (b, n) of 0/1, 0 = padding | none |
//!
//! The RNG is ChaCha8 seeded with the seed; each array draws from its own stream, so giving one array in a
//! file never changes the values generated for another.

use crate::attention::{Config, Method};
use crate::error::{Bytes, Error, Result};
use ndarray::{Array1, Array2, Array3, ArrayD, Axis, Dimension, Ix1, Ix2, Ix3};
use ndarray_npy::npy::header::Header;
use ndarray_npy::ReadNpyExt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::collections::BTreeMap;
use std::io::{Cursor, Read};

/// Sizes used for whatever the file does not give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub n: usize,
    pub d_model: usize,
    pub batch: usize,
    pub seed: u64,
}

impl Default for Spec {
    fn default() -> Self {
        Spec { n: 8, d_model: 16, batch: 1, seed: 0 }
    }
}

/// The tensors of one layer, checked against a [`Config`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// (b, n, d_model)
    pub x: Array3<f32>,
    /// (d_model, d_model) each
    pub w_q: Array2<f32>,
    pub w_k: Array2<f32>,
    pub w_v: Array2<f32>,
    pub w_o: Array2<f32>,
    /// (d_model) each
    pub b_q: Array1<f32>,
    pub b_k: Array1<f32>,
    pub b_v: Array1<f32>,
    pub b_o: Array1<f32>,
    /// (1 or h, R, d_head): Shaw's w^K or the Music Transformer's E_r.
    pub rel_k: Array3<f32>,
    /// (1 or h, R, d_head): Shaw's w^V, when a^V is on.
    pub rel_v: Option<Array3<f32>>,
    /// (b, n): false where a key is padding.
    pub key_mask: Option<Array2<bool>>,
}

/// Arrays read from a file, by name, as f32.
pub type Arrays = BTreeMap<String, ArrayD<f32>>;

/// The array names a scenario file may hold.
pub const NAMES: [&str; 13] = ["x", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "rel_k", "rel_v", "e_r", "key_mask"];

/// Most bytes of arrays a scenario file may hold once decompressed.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Reads the arrays of an .npz (or, for a single array `x`, an .npy) from bytes.
/// Nothing is allocated for more elements than the file's bytes can hold.
pub fn read_arrays(bytes: &[u8], file_name: &str) -> Result<Arrays> {
    let file_err = |reason: String| Error::File { path: file_name.into(), reason };
    if bytes.starts_with(b"\x93NUMPY") {
        let x = read_npy(bytes).map_err(|e| file_err(format!("not a numeric .npy: {e}")))?;
        return Ok(BTreeMap::from([("x".to_string(), x)]));
    }
    if !bytes.starts_with(b"PK") {
        return Err(file_err("neither an .npz (zip) nor an .npy file".into()));
    }
    let corrupt = |e: &dyn std::fmt::Display| file_err(format!("corrupt .npz: {e}"));
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| corrupt(&e))?;
    let (mut out, mut total) = (BTreeMap::new(), 0u64);
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| corrupt(&e))?;
        let name = entry.name().trim_end_matches(".npy").to_string();
        if !NAMES.contains(&name.as_str()) {
            return Err(Error::invalid("array name", format!("'{name}' in {file_name}"), NAMES.join(", ")));
        }
        let mut data = Vec::new();
        (&mut entry).take(MAX_FILE_BYTES - total + 1).read_to_end(&mut data).map_err(|e| corrupt(&e))?;
        total += data.len() as u64;
        if total > MAX_FILE_BYTES {
            return Err(file_err(format!("its arrays exceed {} once decompressed", Bytes(MAX_FILE_BYTES))));
        }
        let a = read_npy(&data).map_err(|e| file_err(format!("array '{name}': {e}")))?;
        out.insert(name, a);
    }
    Ok(out)
}

/// One .npy as f32, from float32, float64, int64, int32, bool or uint8 data (key masks are often
/// integers or booleans). The header's shape is checked against the bytes before anything is allocated.
fn read_npy(bytes: &[u8]) -> std::result::Result<ArrayD<f32>, String> {
    let header = Header::from_reader(&mut Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let claimed = header.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or("the shape's size overflows")?;
    if claimed > bytes.len() {
        return Err(format!("the header claims shape {:?} but the data holds only {} bytes", header.shape, bytes.len()));
    }
    let read = |bytes| Cursor::new(bytes);
    if let Ok(a) = ArrayD::<f32>::read_npy(read(bytes)) {
        return Ok(a);
    }
    if let Ok(a) = ArrayD::<f64>::read_npy(read(bytes)) {
        return Ok(a.mapv(|v| v as f32));
    }
    if let Ok(a) = ArrayD::<i64>::read_npy(read(bytes)) {
        return Ok(a.mapv(|v| v as f32));
    }
    if let Ok(a) = ArrayD::<i32>::read_npy(read(bytes)) {
        return Ok(a.mapv(|v| v as f32));
    }
    if let Ok(a) = ArrayD::<bool>::read_npy(read(bytes)) {
        return Ok(a.mapv(|v| v as u8 as f32));
    }
    ArrayD::<u8>::read_npy(read(bytes))
        .map(|a| a.mapv(|v| v as f32))
        .map_err(|e| format!("{e} (allowed dtypes: float32, float64; key_mask may also be bool or integer)"))
}

/// A generator with one stream per array name.
fn rng(seed: u64, name: &str) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(NAMES.iter().position(|n| *n == name).unwrap_or(NAMES.len()) as u64 + 1);
    r
}

fn normal(seed: u64, name: &str, shape: (usize, usize, usize)) -> Array3<f32> {
    let mut r = rng(seed, name);
    Array3::from_shape_simple_fn(shape, || r.sample(StandardNormal))
}

/// Xavier-uniform (a, rows, cols): U(±sqrt(6 / (rows + cols))) per (rows, cols) matrix.
fn xavier(seed: u64, name: &str, shape: (usize, usize, usize)) -> Array3<f32> {
    let mut r = rng(seed, name);
    let bound = (6.0 / (shape.1 + shape.2) as f32).sqrt();
    Array3::from_shape_simple_fn(shape, || (r.random::<f32>() * 2.0 - 1.0) * bound)
}

fn dims(a: &ArrayD<f32>) -> String {
    format!("{:?}", a.shape())
}

/// Checks every value is finite, naming the first bad one.
fn check_finite(name: &str, a: &ArrayD<f32>) -> Result<()> {
    match a.indexed_iter().find(|(_, v)| !v.is_finite()) {
        Some((idx, v)) => Err(Error::NonFinite { array: name.into(), index: idx.slice().to_vec(), value: *v as f64 }),
        None => Ok(()),
    }
}

/// Checks the sizes of a request before anything is generated.
pub fn check_config(cfg: &Config, spec: &Spec) -> Result<()> {
    if cfg.heads == 0 {
        return Err(Error::invalid("heads", 0, "1 or more, dividing d_model"));
    }
    if spec.n == 0 {
        return Err(Error::invalid("n", 0, "1 or more"));
    }
    if spec.batch == 0 {
        return Err(Error::invalid("batch", 0, "1 or more"));
    }
    if spec.d_model == 0 || !spec.d_model.is_multiple_of(cfg.heads) {
        return Err(Error::invalid("heads", cfg.heads, format!("a divisor of d_model = {}", spec.d_model)));
    }
    Ok(())
}

impl Scenario {
    /// Builds a scenario from the given arrays (possibly none), generating the rest from `spec`.
    /// When `x` is given it fixes n, d_model and the batch, and `spec`'s sizes are not used.
    pub fn build(cfg: &Config, spec: &Spec, mut given: Arrays, per_head_tables: bool) -> Result<Scenario> {
        for (name, a) in &given {
            check_finite(name, a)?;
        }
        let x = match given.remove("x") {
            Some(a) if a.ndim() == 2 => a.insert_axis(Axis(0)).into_dimensionality::<Ix3>().expect("3-D"),
            Some(a) if a.ndim() == 3 => a.into_dimensionality::<Ix3>().expect("3-D"),
            Some(a) => return Err(Error::shape("x", a.shape(), "(n, d_model) or (b, n, d_model)")),
            None => {
                check_config(cfg, spec)?;
                normal(spec.seed, "x", (spec.batch, spec.n, spec.d_model))
            }
        };
        let (b, n, d) = x.dim();
        check_config(cfg, &Spec { n, d_model: d, batch: b, seed: spec.seed })?;
        let dh = d / cfg.heads;
        let seed = spec.seed;

        let mut matrix = |name: &str| -> Result<Array2<f32>> {
            match given.remove(name) {
                Some(a) if a.shape() == [d, d] => Ok(a.into_dimensionality::<Ix2>().expect("2-D")),
                Some(a) => Err(Error::shape(name, a.shape(), format!("[{d}, {d}] = (d_model, d_model)"))),
                None => Ok(xavier(seed, name, (1, d, d)).index_axis_move(Axis(0), 0)),
            }
        };
        let (w_q, w_k, w_v, w_o) = (matrix("w_q")?, matrix("w_k")?, matrix("w_v")?, matrix("w_o")?);
        let mut bias = |name: &str| -> Result<Array1<f32>> {
            match given.remove(name) {
                Some(a) if a.shape() == [d] => Ok(a.into_dimensionality::<Ix1>().expect("1-D")),
                Some(a) => Err(Error::shape(name, a.shape(), format!("[{d}] = (d_model)"))),
                None => Ok(Array1::zeros(d)),
            }
        };
        let (b_q, b_k, b_v, b_o) = (bias("b_q")?, bias("b_k")?, bias("b_v")?, bias("b_o")?);

        let rows = cfg.table_rows();
        let table_heads = if per_head_tables { cfg.heads } else { 1 };
        let mut table = |name: &str| -> Result<Array3<f32>> {
            let expected = || format!("[{rows}, {dh}] or [{}, {rows}, {dh}] = ({}, d_head) or (heads, {0}, d_head)", cfg.heads, table_rows_formula(cfg));
            match given.remove(name) {
                Some(a) if a.shape() == [rows, dh] => Ok(a.into_dimensionality::<Ix2>().expect("2-D").insert_axis(Axis(0))),
                Some(a) if a.shape() == [cfg.heads, rows, dh] => Ok(a.into_dimensionality::<Ix3>().expect("3-D")),
                Some(a) => Err(Error::Shape { array: name.into(), given: dims(&a), expected: expected() }),
                None => Ok(xavier(seed, name, (table_heads, rows, dh))),
            }
        };
        let (rel_k, rel_v) = match cfg.method {
            Method::Shaw => (table("rel_k")?, if cfg.rel_v { Some(table("rel_v")?) } else { None }),
            Method::Music => (table("e_r")?, None),
        };
        let key_mask = match given.remove("key_mask") {
            Some(a) if a.shape() == [b, n] => {
                if let Some((idx, v)) = a.indexed_iter().find(|(_, v)| **v != 0.0 && **v != 1.0) {
                    return Err(Error::invalid("key_mask", format!("{v} at {:?}", idx.slice()), "0 (padding) or 1 (keep)"));
                }
                Some(a.into_dimensionality::<Ix2>().expect("2-D").mapv(|v| v == 1.0))
            }
            Some(a) => return Err(Error::shape("key_mask", a.shape(), format!("[{b}, {n}] = (b, n)"))),
            None => None,
        };
        if let Some(name) = given.keys().next() {
            let wanted = match cfg.method {
                Method::Shaw => "rel_k and rel_v are Shaw's tables; e_r belongs to --method music",
                Method::Music => "e_r is the Music Transformer's table; rel_k and rel_v belong to --method shaw",
            };
            let hint = if name == "rel_v" && cfg.method == Method::Shaw { "a^V is switched off (--no-rel-v)" } else { wanted };
            return Err(Error::invalid("array", format!("'{name}' not used by this configuration"), hint));
        }
        Ok(Scenario { x, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, rel_k, rel_v, key_mask })
    }

    /// (b, n, d_model).
    pub fn dims(&self) -> (usize, usize, usize) {
        self.x.dim()
    }
}

fn table_rows_formula(cfg: &Config) -> &'static str {
    match (cfg.method, cfg.causal) {
        (Method::Music, true) => "k+1",
        _ => "2k+1",
    }
}
