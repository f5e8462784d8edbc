//! The five kernels: their WGSL (the files beside this one), their parameters as the `Params` uniform
//! each file declares (mirrored field by field, flags as the named constants the WGSL tests), and the
//! encoding of one dispatch of each.

use super::context::GpuContext;
use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

/// Side of the square blocks of C that one workgroup of matmul.wgsl and logits.wgsl computes.
pub(super) const BLOCK: usize = 64;
/// Side of the square workgroup of buckets.wgsl.
pub(super) const TILE: usize = 16;

/// Widest head attend.wgsl takes (its private accumulators' size); wider heads take the unfused kernels.
pub(super) const ATTEND_MAX_DH: usize = 64;

/// Every kernel's name and WGSL source, in the order of [`Kernels`].
pub(super) const SOURCES: [(&str, &str); 5] = [
    ("matmul", include_str!("matmul.wgsl")),
    ("logits", include_str!("logits.wgsl")),
    ("softmax", include_str!("softmax.wgsl")),
    ("buckets", include_str!("buckets.wgsl")),
    ("attend", include_str!("attend.wgsl")),
];

/// The compiled compute pipelines, one per kernel of [`SOURCES`].
pub(super) struct Kernels {
    pub matmul: wgpu::ComputePipeline,
    pub logits: wgpu::ComputePipeline,
    pub softmax: wgpu::ComputePipeline,
    pub buckets: wgpu::ComputePipeline,
    pub attend: wgpu::ComputePipeline,
}

/// matmul.wgsl's `Params`: `C[z] (+)= A[z]·B[z] (+ bias)` for `z` (m, k)·(k, n) matrices, each operand's
/// element (z, row, col) at `off + z·zs + row·rs + col·cs` (f32 elements).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct MatmulParams {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// [`MatmulParams::ADD_BIAS`] | [`MatmulParams::ACCUMULATE`].
    pub flags: u32,
    pub a_off: u32,
    pub a_rs: u32,
    pub a_cs: u32,
    pub a_zs: u32,
    pub b_off: u32,
    pub b_rs: u32,
    pub b_cs: u32,
    pub b_zs: u32,
    pub c_off: u32,
    pub c_rs: u32,
    pub c_cs: u32,
    pub c_zs: u32,
    /// First element of the bias in its buffer.
    pub bias_off: u32,
    pub _pad: [u32; 3],
}

impl MatmulParams {
    /// Adds `bias[bias_off + col]` to every row.
    pub const ADD_BIAS: u32 = 1;
    /// Adds the product into C instead of overwriting it.
    pub const ACCUMULATE: u32 = 2;
}

/// The `Params` of logits.wgsl and attend.wgsl, the two kernels that take a chunk of query rows of a range
/// of heads: queries `i0 .. i0 + rows` of heads `h0 ..` (the grid's z in logits.wgsl, y in attend.wgsl).
/// logits.wgsl writes `E = (QKᵀ + P[i, row(j − i)]) / sqrt(d_head)`; attend.wgsl the heads' output
/// `z_i = Σ_j α_ij (v_j + a^V_ij)` with no (rows, n) array.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct RowsParams {
    /// Query rows in the chunk.
    pub rows: u32,
    /// Keys.
    pub n: u32,
    /// Head width d_head (attend.wgsl: at most [`ATTEND_MAX_DH`]).
    pub dh: u32,
    /// Model width d_model.
    pub d: u32,
    /// First query of the chunk.
    pub i0: u32,
    /// First head of the chunk.
    pub h0: u32,
    /// Table rows R.
    pub r: u32,
    /// [`RowsParams::WRITE_CONTENT`] | [`RowsParams::WRITE_RELATIVE`] | [`RowsParams::ZERO_EDGE`] |
    /// [`RowsParams::ZERO_ABOVE`] | [`RowsParams::CAUSAL`] | [`RowsParams::NO_CONTENT`] | [`RowsParams::REL_V`].
    pub flags: u32,
    /// The table's smallest distance: row = (j − i) − tmin.
    pub tmin: i32,
    /// 1/sqrt(d_head).
    pub scale: f32,
    /// attend.wgsl: elements between two heads' w^V tables (0: one table shared by every head).
    pub v_stride: u32,
    pub _pad: u32,
}

impl RowsParams {
    /// logits.wgsl keeps the content logits C (a trace).
    pub const WRITE_CONTENT: u32 = 1;
    /// logits.wgsl keeps the relative logits S (a trace).
    pub const WRITE_RELATIVE: u32 = 2;
    /// Distances beyond the table read zero (else the edge row).
    pub const ZERO_EDGE: u32 = 4;
    /// logits.wgsl: S = 0 where j > i (causal Music Transformer).
    pub const ZERO_ABOVE: u32 = 8;
    /// Masks keys after the query.
    pub const CAUSAL: u32 = 16;
    /// C = 0: the logits are the relative term alone ([`crate::attention::Config::content`] off).
    pub const NO_CONTENT: u32 = 32;
    /// attend.wgsl adds Shaw's value term a^V.
    pub const REL_V: u32 = 64;
}

/// softmax.wgsl's `Params`: row softmax of a chunk's (z, rows, n) logits over the visible keys.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct SoftmaxParams {
    pub rows: u32,
    pub n: u32,
    /// First query of the chunk.
    pub i0: u32,
    /// [`SoftmaxParams::CAUSAL`].
    pub flags: u32,
}

impl SoftmaxParams {
    /// Masks keys after the query.
    pub const CAUSAL: u32 = 1;
}

/// buckets.wgsl's `Params`: Shaw's value buckets `B[i, r] = Σ_{j: row(j−i) = r} α_ij` of a chunk.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct BucketsParams {
    pub rows: u32,
    pub n: u32,
    /// First query of the chunk.
    pub i0: u32,
    /// Table rows R.
    pub r: u32,
    /// The table's smallest distance.
    pub tmin: i32,
    /// [`BucketsParams::ZERO_EDGE`].
    pub flags: u32,
    pub _pad: [u32; 2],
}

impl BucketsParams {
    /// Keys beyond the table give nothing (else the edge rows collect them).
    pub const ZERO_EDGE: u32 = 1;
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
        let flags = if bias.is_some() { MatmulParams::ADD_BIAS } else { 0 } | if accumulate { MatmulParams::ACCUMULATE } else { 0 };
        let (bias_buf, bias_off) = bias.unwrap_or((a.buf, 0));
        #[rustfmt::skip]
        let params = MatmulParams {
            m: u(m), n: u(n), k: u(k), flags,
            a_off: u(a.off), a_rs: u(a.rs), a_cs: u(a.cs), a_zs: u(a.zs),
            b_off: u(b.off), b_rs: u(b.rs), b_cs: u(b.cs), b_zs: u(b.zs),
            c_off: u(c.off), c_rs: u(c.rs), c_cs: u(c.cs), c_zs: u(c.zs),
            bias_off: u(bias_off), _pad: [0; 3],
        };
        self.dispatch(enc, &self.kernels.matmul, &params, &[a.buf, b.buf, bias_buf, c.buf], [n.div_ceil(BLOCK), m.div_ceil(BLOCK), z]);
    }

    /// The fused logits of `heads` heads: reads q, k (n, d), P (heads, rows, R) and the key mask (n); writes
    /// content, relative (when asked in `params.flags`) and logits, each (heads, rows, n).
    pub(super) fn logits(&self, enc: &mut wgpu::CommandEncoder, params: &RowsParams, heads: usize, bufs: [&wgpu::Buffer; 7]) {
        let groups = [(params.n as usize).div_ceil(BLOCK), (params.rows as usize).div_ceil(BLOCK), heads];
        self.dispatch(enc, &self.kernels.logits, params, &bufs, groups);
    }

    /// The weights (heads, rows, n) from the logits and the key mask (n).
    pub(super) fn softmax(
        &self,
        enc: &mut wgpu::CommandEncoder,
        params: &SoftmaxParams,
        heads: usize,
        logits: &wgpu::Buffer,
        mask: &wgpu::Buffer,
        weights: &wgpu::Buffer,
    ) {
        self.dispatch(enc, &self.kernels.softmax, params, &[logits, mask, weights], [params.rows as usize, heads, 1]);
    }

    /// The output of `heads` heads' chunk rows, written into their columns of `bufs[6]` (n, d): reads q, k,
    /// v (n, d), P (heads, rows, R), the key mask (n) and w^V (any buffer when `params.flags` has no
    /// [`RowsParams::REL_V`]).
    pub(super) fn attend(&self, enc: &mut wgpu::CommandEncoder, params: &RowsParams, heads: usize, bufs: [&wgpu::Buffer; 7]) {
        const ROWS: usize = 64;
        self.dispatch(enc, &self.kernels.attend, params, &bufs, [(params.rows as usize).div_ceil(ROWS), heads, 1]);
    }

    /// Shaw's value buckets (heads, rows, R) from the weights (heads, rows, n).
    pub(super) fn buckets(&self, enc: &mut wgpu::CommandEncoder, params: &BucketsParams, heads: usize, weights: &wgpu::Buffer, buckets: &wgpu::Buffer) {
        let groups = [(params.r as usize).div_ceil(TILE), (params.rows as usize).div_ceil(TILE), heads];
        self.dispatch(enc, &self.kernels.buckets, params, &[weights, buckets], groups);
    }
}
