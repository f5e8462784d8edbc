//! The seven kernels (matmul, logits, softmax, buckets, attend, rope, norm): their WGSL (the files beside this one), their parameters as the `Params` uniform
//! each file declares (mirrored field by field, checked by this file's tests), the flags they test (one
//! set, [`flag`], written into every kernel's source ahead of it), and the encoding of one dispatch of each.

use super::context::GpuContext;
use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

/// Side of the square blocks of C that one workgroup of matmul.wgsl and logits.wgsl computes.
pub(super) const BLOCK: usize = 64;
/// Side of the square workgroup of buckets.wgsl.
pub(super) const TILE: usize = 16;

/// Widest head attend.wgsl takes, d_head and d_v (the width of its K and V tiles and of q_i in registers);
/// wider heads take the unfused kernels.
pub(super) const ATTEND_MAX_DH: usize = 64;
/// Query rows of one workgroup of attend.wgsl (its `ROWS`: 256 invocations, 8 per row).
pub(super) const ATTEND_ROWS: usize = 32;

/// The bits of a `Params` uniform's `flags`: one set for every kernel, so a name means the same bit
/// everywhere. The WGSL sees them as constants of the same names ([`flag::wgsl`], prepended to each kernel).
pub(super) mod flag {
    /// logits.wgsl keeps the content logits C (a trace).
    pub const WRITE_CONTENT: u32 = 1;
    /// logits.wgsl keeps the relative logits S (a trace).
    pub const WRITE_RELATIVE: u32 = 2;
    /// Distances beyond the table read zero, else the edge row (logits.wgsl, attend.wgsl); buckets.wgsl:
    /// keys beyond the table give nothing, else the edge rows collect them.
    pub const ZERO_EDGE: u32 = 4;
    /// logits.wgsl: S = 0 where j > i (causal Music Transformer).
    pub const ZERO_ABOVE: u32 = 8;
    /// Masks keys after the query (logits.wgsl, softmax.wgsl, attend.wgsl).
    pub const CAUSAL: u32 = 16;
    /// C = 0: the logits are the relative term alone ([`crate::attention::Config::content`] off).
    pub const NO_CONTENT: u32 = 32;
    /// attend.wgsl adds Shaw's value term a^V.
    pub const REL_V: u32 = 64;
    /// matmul.wgsl adds `bias[bias_off + col]` to every row.
    pub const ADD_BIAS: u32 = 128;
    /// matmul.wgsl adds the product into C instead of overwriting it.
    pub const ACCUMULATE: u32 = 256;
    /// logits.wgsl, attend.wgsl: add the head's bias by distance after the scale (ALiBi, T5) instead of a table's.
    pub const DISTANCE_BIAS: u32 = 512;
    /// rope.wgsl: pairs (p, p + d_rot/2) instead of (2p, 2p + 1).
    pub const HALF_SPLIT: u32 = 1024;
    /// A sliding window: keys at |j − i| ≥ `window` are masked as the causal mask masks (logits.wgsl,
    /// softmax.wgsl, attend.wgsl; [`crate::positions::table::Reach`]).
    pub const WINDOW: u32 = 2048;
    /// Soft-capping (Gemma 2): `e ← c·tanh(e / c)` after the scale and any bias, before the masks
    /// (logits.wgsl, attend.wgsl; [`crate::attention::soft_cap`]).
    pub const SOFTCAP: u32 = 4096;
    /// A sink logit per head (gpt-oss) joins each row's softmax with no value (softmax.wgsl, attend.wgsl;
    /// [`crate::core::softmax::softmax_rows_with_sink`]).
    pub const SINK: u32 = 8192;
    /// DeBERTa's c2p: add `P[i, r(i, j)]`, P = Q·K_rᵀ (rows, R), r(i, j) the row of j − i read from the head-terms
    /// buffer (logits.wgsl, attend.wgsl; [`crate::positions::deberta`]).
    pub const C2P: u32 = 16384;
    /// DeBERTa's p2c: add `P2[j, r(i, j)]`, P2 = K·Q_rᵀ (n, R) kept in P's buffer from `p2_at` (logits.wgsl,
    /// attend.wgsl).
    pub const P2C: u32 = 32768;

    /// Every flag by name.
    pub const ALL: [(&str, u32); 16] = [
        ("WRITE_CONTENT", WRITE_CONTENT),
        ("WRITE_RELATIVE", WRITE_RELATIVE),
        ("ZERO_EDGE", ZERO_EDGE),
        ("ZERO_ABOVE", ZERO_ABOVE),
        ("CAUSAL", CAUSAL),
        ("NO_CONTENT", NO_CONTENT),
        ("REL_V", REL_V),
        ("ADD_BIAS", ADD_BIAS),
        ("ACCUMULATE", ACCUMULATE),
        ("DISTANCE_BIAS", DISTANCE_BIAS),
        ("HALF_SPLIT", HALF_SPLIT),
        ("WINDOW", WINDOW),
        ("SOFTCAP", SOFTCAP),
        ("SINK", SINK),
        ("C2P", C2P),
        ("P2C", P2C),
    ];

    /// The flags as WGSL constants (`const CAUSAL: u32 = 16u;` …), written ahead of every kernel.
    pub fn wgsl() -> String {
        ALL.iter().map(|(name, bit)| format!("const {name}: u32 = {bit}u;\n")).collect()
    }
}

/// Every kernel's name and WGSL source (without the [`flag`] constants written ahead of it), in the order
/// of [`Kernels`].
pub(super) const SOURCES: [(&str, &str); 7] = [
    ("matmul", include_str!("matmul.wgsl")),
    ("logits", include_str!("logits.wgsl")),
    ("softmax", include_str!("softmax.wgsl")),
    ("buckets", include_str!("buckets.wgsl")),
    ("attend", include_str!("attend.wgsl")),
    ("rope", include_str!("rope.wgsl")),
    ("norm", include_str!("norm.wgsl")),
];

/// The compiled compute pipelines, one per kernel of [`SOURCES`].
pub(super) struct Kernels {
    pub matmul: wgpu::ComputePipeline,
    pub logits: wgpu::ComputePipeline,
    pub softmax: wgpu::ComputePipeline,
    pub buckets: wgpu::ComputePipeline,
    pub attend: wgpu::ComputePipeline,
    pub rope: wgpu::ComputePipeline,
    pub norm: wgpu::ComputePipeline,
}

/// Declares a kernel's `Params` uniform as a `#[repr(C)]` Pod struct of 4-byte scalars (u32, i32, f32), and
/// its `LAYOUT`: each field's name, WGSL type and byte offset, which the tests compare with the WGSL struct.
macro_rules! params {
    ($(#[$meta:meta])* struct $name:ident { $($(#[$field_meta:meta])* $field:ident: $ty:ident,)* }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Pod, Zeroable)]
        pub(super) struct $name { $($(#[$field_meta])* pub $field: $ty,)* }

        #[cfg(test)]
        impl $name {
            /// Each field's name, WGSL type and byte offset, in order.
            const LAYOUT: &'static [(&'static str, &'static str, usize)] = &[$((stringify!($field), stringify!($ty), std::mem::offset_of!($name, $field)),)*];
        }
    };
}

params! {
/// matmul.wgsl's `Params`: `C[z] (+)= A[z]·B[z] (+ bias)` for `z` (m, k)·(k, n) matrices, each operand's
/// element (z, row, col) at `off + z·zs + row·rs + col·cs` (f32 elements).
struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    /// [`flag::ADD_BIAS`] | [`flag::ACCUMULATE`].
    flags: u32,
    a_off: u32,
    a_rs: u32,
    a_cs: u32,
    a_zs: u32,
    b_off: u32,
    b_rs: u32,
    b_cs: u32,
    b_zs: u32,
    c_off: u32,
    c_rs: u32,
    c_cs: u32,
    c_zs: u32,
    /// First element of the bias in its buffer.
    bias_off: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
}

params! {
/// The `Params` of logits.wgsl and attend.wgsl, the two kernels that take a chunk of query rows of a range
/// of heads: queries `i0 .. i0 + rows` of heads `h0 ..` (the grid's z in logits.wgsl, y in attend.wgsl).
/// logits.wgsl writes `E = (QKᵀ + P[i, row(j − i)]) · scale` (soft-capped with [`flag::SOFTCAP`]; DeBERTa's
/// `(QKᵀ + P[i, r(i, j)] + P2[j, r(i, j)]) · scale` with [`flag::C2P`] and [`flag::P2C`]);
/// attend.wgsl the heads' output `z_i = Σ_j α_ij (v_j + a^V_ij)` (d_v wide) with no (rows, n) array.
struct RowsParams {
    /// Query rows in the chunk.
    rows: u32,
    /// Keys.
    n: u32,
    /// Head width d_head (attend.wgsl: at most [`ATTEND_MAX_DH`]).
    dh: u32,
    /// h·d_head: the row length of Q, K, V and the concatenated heads (d_model unless the model's heads have
    /// a width of their own).
    inner: u32,
    /// First query of the chunk.
    i0: u32,
    /// First head of the chunk.
    h0: u32,
    /// Table rows R.
    r: u32,
    /// [`flag::WRITE_CONTENT`] | [`flag::WRITE_RELATIVE`] | [`flag::ZERO_EDGE`] | [`flag::ZERO_ABOVE`] |
    /// [`flag::CAUSAL`] | [`flag::NO_CONTENT`] | [`flag::REL_V`] | [`flag::DISTANCE_BIAS`] | [`flag::WINDOW`] |
    /// [`flag::SOFTCAP`] | [`flag::SINK`] | [`flag::C2P`] | [`flag::P2C`].
    flags: u32,
    /// The table's smallest distance: row = (j − i) − tmin.
    tmin: i32,
    /// The logits' scale: 1/sqrt(d_head), 1, or the model's own ([`crate::attention::LogitScale`]).
    scale: f32,
    /// attend.wgsl: elements between two heads' w^V tables (0: one table shared by every head).
    v_stride: u32,
    /// With [`flag::WINDOW`]: keys at |j − i| ≥ window are masked.
    window: u32,
    /// With [`flag::SOFTCAP`]: the cap c of `c·tanh(e / c)`.
    softcap: f32,
    /// attend.wgsl, with [`flag::SINK`]: where the heads' sink logits (h) start in the head-terms buffer
    /// (after the bias by distance, (h, 2n − 1), when there is one).
    sink_at: u32,
    /// attend.wgsl: the values' width d_v (d_head unless the model's values have their own; at most
    /// [`ATTEND_MAX_DH`]).
    dv: u32,
    /// attend.wgsl: h·d_v, the row length of V and the concatenated heads.
    inner_v: u32,
    /// With [`flag::P2C`]: where DeBERTa's P2 = K·Q_rᵀ (heads in the chunk, n, R) starts in P's buffer.
    p2_at: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
}

params! {
/// softmax.wgsl's `Params`: row softmax of a chunk's (z, rows, n) logits over the visible keys, with each
/// head's sink logit in the denominator ([`flag::SINK`]).
struct SoftmaxParams {
    rows: u32,
    n: u32,
    /// First query of the chunk.
    i0: u32,
    /// [`flag::CAUSAL`] | [`flag::WINDOW`] | [`flag::SINK`].
    flags: u32,
    /// With [`flag::WINDOW`]: keys at |j − i| ≥ window are masked.
    window: u32,
    /// First head of the chunk (the grid's y is the head within it).
    h0: u32,
    /// With [`flag::SINK`]: where the heads' sink logits (h) start in the head-terms buffer.
    sink_at: u32,
    _pad0: u32,
}
}

params! {
/// rope.wgsl's `Params`: every head's rows of an (n, h·d_head) projection rotated, d_rot components of each head.
struct RopeParams {
    n: u32,
    /// h·d_head: the projection's row length.
    inner: u32,
    dh: u32,
    d_rot: u32,
    /// [`flag::HALF_SPLIT`].
    flags: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
}

params! {
/// norm.wgsl's `Params`: an RMS norm of every group of `group` components of an (n, h·d_head) projection, in
/// place: `a ← a / sqrt(mean(a²) + eps) ⊙ γ` ([`crate::layer::scenario::Scenario::q_norm`]).
struct NormParams {
    /// Rows n.
    n: u32,
    /// h·d_head: the projection's row length.
    inner: u32,
    /// γ's length: d_head (each head's own) or h·d_head (the whole projection).
    group: u32,
    /// ε ([`crate::attention::Config::norm_eps`]).
    eps: f32,
}
}

params! {
/// buckets.wgsl's `Params`: Shaw's value buckets `B[i, r] = Σ_{j: row(j−i) = r} α_ij` of a chunk.
struct BucketsParams {
    rows: u32,
    n: u32,
    /// First query of the chunk.
    i0: u32,
    /// Table rows R.
    r: u32,
    /// The table's smallest distance.
    tmin: i32,
    /// [`flag::ZERO_EDGE`].
    flags: u32,
    _pad0: u32,
    _pad1: u32,
}
}

/// One operand of matmul.wgsl: element (z, row, col) is at `off + z·zs + row·rs + col·cs`.
#[derive(Clone, Copy)]
pub(super) struct Operand<'a> {
    pub buf: &'a wgpu::Buffer,
    pub off: usize,
    pub rs: usize,
    pub cs: usize,
    pub zs: usize,
}

/// A row-major operand: element (z, row, col) at `off + z·zs + row·rs + col`.
pub(super) fn rows_of(buf: &wgpu::Buffer, off: usize, rs: usize, zs: usize) -> Operand<'_> {
    Operand { buf, off, rs, cs: 1, zs }
}

/// A size or offset as the kernels' u32 (the plan keeps every one within the device's limits).
pub(super) fn u(v: usize) -> u32 {
    v as u32
}

impl GpuContext {
    /// Records one dispatch of `pipe` with `params` (uniform, binding 0) and `bufs` (bindings 1..).
    fn dispatch<P: Pod>(&self, enc: &mut wgpu::CommandEncoder, pipe: &wgpu::ComputePipeline, params: &P, bufs: &[&wgpu::Buffer], groups: [usize; 3]) {
        const { assert!(std::mem::size_of::<P>().is_multiple_of(16), "a uniform's size is a multiple of 16 bytes") };
        if groups.contains(&0) {
            return;
        }
        let uniform = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::bytes_of(params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        entries.extend(bufs.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() }));
        let layout = pipe.get_bind_group_layout(0);
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries });
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(u(groups[0]), u(groups[1]), u(groups[2]));
    }

    /// `c (+)= a·b (+ bias)` for `z` matrices of (m, k)·(k, n).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn matmul(
        &self,
        enc: &mut wgpu::CommandEncoder,
        (m, n, k, z): (usize, usize, usize, usize),
        a: Operand,
        b: Operand,
        c: Operand,
        bias: Option<(&wgpu::Buffer, usize)>,
        accumulate: bool,
    ) {
        let flags = if bias.is_some() { flag::ADD_BIAS } else { 0 } | if accumulate { flag::ACCUMULATE } else { 0 };
        let (bias_buf, bias_off) = bias.unwrap_or((a.buf, 0));
        #[rustfmt::skip]
        let params = MatmulParams {
            m: u(m), n: u(n), k: u(k), flags,
            a_off: u(a.off), a_rs: u(a.rs), a_cs: u(a.cs), a_zs: u(a.zs),
            b_off: u(b.off), b_rs: u(b.rs), b_cs: u(b.cs), b_zs: u(b.zs),
            c_off: u(c.off), c_rs: u(c.rs), c_cs: u(c.cs), c_zs: u(c.zs),
            bias_off: u(bias_off), ..Zeroable::zeroed()
        };
        self.dispatch(enc, &self.kernels.matmul, &params, &[a.buf, b.buf, bias_buf, c.buf], [n.div_ceil(BLOCK), m.div_ceil(BLOCK), z]);
    }

    /// The fused logits of `heads` heads: reads q, k (n, h·d_head), P (heads, rows, R; DeBERTa's P2 (heads, n, R)
    /// after it from `p2_at`) and the key mask (n); writes content, relative (when asked in `params.flags`) and
    /// logits, each (heads, rows, n); reads the head-terms buffer: the bias by distance (h, 2n − 1) with
    /// [`flag::DISTANCE_BIAS`], DeBERTa's row by distance (2n − 1) with [`flag::C2P`] or [`flag::P2C`] (any buffer
    /// with neither).
    pub(super) fn logits(&self, enc: &mut wgpu::CommandEncoder, params: &RowsParams, heads: usize, bufs: [&wgpu::Buffer; 8]) {
        let groups = [(params.n as usize).div_ceil(BLOCK), (params.rows as usize).div_ceil(BLOCK), heads];
        self.dispatch(enc, &self.kernels.logits, params, &bufs, groups);
    }

    /// The weights (heads, rows, n) from the logits, the key mask (n) and, with [`flag::SINK`], the sink
    /// logits in the head-terms buffer (any buffer without).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn softmax(
        &self,
        enc: &mut wgpu::CommandEncoder,
        params: &SoftmaxParams,
        heads: usize,
        logits: &wgpu::Buffer,
        mask: &wgpu::Buffer,
        terms: &wgpu::Buffer,
        weights: &wgpu::Buffer,
    ) {
        self.dispatch(enc, &self.kernels.softmax, params, &[logits, mask, terms, weights], [params.rows as usize, heads, 1]);
    }

    /// The output of `heads` heads' chunk rows, written into their columns of `bufs[6]` (n, h·d_head): reads
    /// q, k, v (n, h·d_head), P (heads, rows, R), the key mask (n), w^V (any buffer when `params.flags` has no
    /// [`flag::REL_V`]) and the head-terms buffer: the bias by distance (h, 2n − 1) with
    /// [`flag::DISTANCE_BIAS`], the sink logits (h) from `sink_at` with [`flag::SINK`] (any buffer with neither).
    pub(super) fn attend(&self, enc: &mut wgpu::CommandEncoder, params: &RowsParams, heads: usize, bufs: [&wgpu::Buffer; 8]) {
        self.dispatch(enc, &self.kernels.attend, params, &bufs, [(params.rows as usize).div_ceil(ATTEND_ROWS), heads, 1]);
    }

    /// RoPE: `dst` (n, h·d_head) = every head's rows of `src` rotated by the angles whose cos and sin
    /// (n, d_rot/2) are given.
    pub(super) fn rope(
        &self,
        enc: &mut wgpu::CommandEncoder,
        params: &RopeParams,
        src: &wgpu::Buffer,
        cos: &wgpu::Buffer,
        sin: &wgpu::Buffer,
        dst: &wgpu::Buffer,
    ) {
        self.dispatch(enc, &self.kernels.rope, params, &[src, cos, sin, dst], [(params.inner as usize).div_ceil(64), params.n as usize, 1]);
    }

    /// q/k norms: every group of `params.group` components of `a` (n, h·d_head) RMS-normed in place and
    /// multiplied by `gamma` (`group` long).
    pub(super) fn norm(&self, enc: &mut wgpu::CommandEncoder, params: &NormParams, a: &wgpu::Buffer, gamma: &wgpu::Buffer) {
        let groups = (params.inner / params.group) as usize;
        self.dispatch(enc, &self.kernels.norm, params, &[a, gamma], [groups, params.n as usize, 1]);
    }

    /// Shaw's value buckets (heads, rows, R) from the weights (heads, rows, n).
    pub(super) fn buckets(&self, enc: &mut wgpu::CommandEncoder, params: &BucketsParams, heads: usize, weights: &wgpu::Buffer, buckets: &wgpu::Buffer) {
        let groups = [(params.r as usize).div_ceil(TILE), (params.rows as usize).div_ceil(TILE), heads];
        self.dispatch(enc, &self.kernels.buckets, params, &[weights, buckets], groups);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of a WGSL source's `struct Params { … }`, (name, type) in order, comments dropped.
    fn wgsl_params(source: &str) -> Vec<(String, String)> {
        let code: String = source.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let body = code.split("struct Params {").nth(1).and_then(|rest| rest.split('}').next()).expect("a struct Params");
        body.split(',')
            .filter(|f| !f.trim().is_empty())
            .map(|f| {
                let (name, ty) = f.split_once(':').expect("name: type");
                (name.trim().to_string(), ty.trim().to_string())
            })
            .collect()
    }

    /// Each kernel's WGSL `Params` and the Rust struct written into its uniform agree: the same field names in
    /// the same order, the same scalar types, the same byte offsets (WGSL packs 4-byte scalars one after the
    /// other) and the same size (a uniform's is a multiple of 16 bytes).
    #[test]
    fn rust_params_match_every_wgsl_struct() {
        type Layout = &'static [(&'static str, &'static str, usize)];
        let rust: [(&str, Layout, usize); 7] = [
            ("matmul", MatmulParams::LAYOUT, size_of::<MatmulParams>()),
            ("logits", RowsParams::LAYOUT, size_of::<RowsParams>()),
            ("softmax", SoftmaxParams::LAYOUT, size_of::<SoftmaxParams>()),
            ("buckets", BucketsParams::LAYOUT, size_of::<BucketsParams>()),
            ("attend", RowsParams::LAYOUT, size_of::<RowsParams>()),
            ("rope", RopeParams::LAYOUT, size_of::<RopeParams>()),
            ("norm", NormParams::LAYOUT, size_of::<NormParams>()),
        ];
        for (kernel, layout, size) in rust {
            let (_, source) = SOURCES.iter().find(|(name, _)| *name == kernel).expect("a kernel of that name");
            let wgsl = wgsl_params(source);
            let offsets: Vec<(&str, &str, usize)> = wgsl.iter().enumerate().map(|(i, (name, ty))| (name.as_str(), ty.as_str(), 4 * i)).collect();
            assert_eq!(layout, &offsets[..], "{kernel}.wgsl's Params against kernels.rs");
            assert!(wgsl.iter().all(|(_, ty)| ["u32", "i32", "f32"].contains(&ty.as_str())), "{kernel}: 4-byte scalars only");
            assert_eq!(size, (4 * wgsl.len()).next_multiple_of(16), "{kernel}: size");
        }
    }

    /// attend.wgsl's tile sizes are the ones the Rust side dispatches and plans with.
    #[test]
    fn attend_constants_match() {
        let (_, source) = SOURCES.iter().find(|(name, _)| *name == "attend").expect("attend");
        assert!(source.contains(&format!("const ROWS: u32 = {ATTEND_ROWS}u;")), "ROWS");
        assert!(source.contains(&format!("const MAX_DH: u32 = {ATTEND_MAX_DH}u;")), "MAX_DH");
    }

    /// The flags are distinct bits, declared once (in Rust, written ahead of each kernel), and every flag a
    /// kernel tests is one of them: no kernel declares its own, so a name is the same bit in every kernel.
    #[test]
    fn flags_are_one_set_of_distinct_bits() {
        let bits: u32 = flag::ALL.iter().map(|(_, bit)| bit).fold(0, |acc, bit| {
            assert!(bit.is_power_of_two() && acc & bit == 0, "bit {bit} is one bit, used once");
            acc | bit
        });
        assert_eq!(bits.count_ones() as usize, flag::ALL.len());
        for (kernel, source) in SOURCES {
            assert!(!flag::ALL.iter().any(|(name, _)| source.contains(&format!("const {name}:"))), "{kernel} declares a flag of its own");
            for (at, _) in source.match_indices("p.flags & ") {
                let name: String = source[at + 10..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                assert!(flag::ALL.iter().any(|(n, _)| *n == name), "{kernel} tests '{name}', not a flag of kernels.rs");
            }
        }
        assert!(flag::wgsl().contains("const CAUSAL: u32 = 16u;"));
    }
}
