//! How a layer is cut into chunks of (heads, query rows) that fit [`WORK_BYTES`] and the device's limits,
//! or why it cannot run on this device. After the projections everything is row-local, so a chunk needs only
//! its rows of the (rows, n) logits and weights (the fused forward, attend.wgsl, not even those: its rows of
//! P, (rows, R)): small layers run every head in one chunk; larger ones go one head at a time and, beyond
//! [`WORK_BYTES`] or the device's `max_storage_buffer_binding_size` / `max_compute_workgroups_per_dimension`,
//! a few rows at a time. A layer whose single (n, d_model) projection does not fit one binding is refused
//! with [`GpuError::TooLarge`].

use super::kernels::{BLOCK, TILE};
use crate::error::gpu::GpuError;

/// Largest work buffer of one chunk ((heads, rows, n) logits or weights), in bytes.
pub const WORK_BYTES: u64 = 128 << 20;

/// Rows `i0 .. i0 + rows` of heads `h0 .. h0 + hc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Chunk {
    pub h0: usize,
    pub hc: usize,
    pub i0: usize,
    pub rows: usize,
}

/// The chunks of a layer of n positions, d = the widest of its (n, ·) arrays (d_model, h·d_head, the output's
/// width), h heads, r = R table rows and dh = d_head: every
/// head in one chunk when its (h, n, max(n, R, d_head)) work fits (`fused`, attend.wgsl's forward, which
/// keeps no (rows, n) array: (h, n, max(R, d_head))), else one head and as many rows as fit at a time.
/// With `p2` (DeBERTa's p2c) P's buffer also holds P2 = K·Q_rᵀ, (heads, n, R): it is O(n·R) a head as P is, so
/// it is kept within a binding but not counted in `work_bytes`.
/// Refused ([`GpuError::TooLarge`]) when one (n, d) projection exceeds a binding, the grid exceeds
/// the workgroups per dimension, or not even one row fits.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    limits: &wgpu::Limits,
    work_bytes: u64,
    n: usize,
    d: usize,
    h: usize,
    r: usize,
    dh: usize,
    fused: bool,
    p2: bool,
) -> Result<Vec<Chunk>, GpuError> {
    let max_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let max_workgroups = limits.max_compute_workgroups_per_dimension;
    let max_groups = max_workgroups as usize;
    let too_large = |what: String| Err(GpuError::TooLarge { what, max_binding, max_workgroups });
    if (n * d * 4) as u64 > max_binding {
        return too_large(format!("one (n, d_model) = ({n}, {d}) projection needs {} bytes", n * d * 4));
    }
    if n.div_ceil(BLOCK).max(d.div_ceil(BLOCK)).max(r.div_ceil(TILE)) > max_groups || h > max_groups {
        return too_large(format!("n = {n}, d_model = {d}, R = {r}, heads = {h} need too many workgroups"));
    }
    // A row's widest work array: its logits or weights (n), P and the buckets (R), its output (d_head).
    let per_row = (if fused { 0 } else { n }.max(r).max(dh) * 4) as u64;
    let budget = max_binding.min(work_bytes);
    // P and P2 of `hc` heads' `rows` rows in one buffer, in bytes.
    let p_bytes = |hc: usize, rows: usize| if p2 { (hc * (rows + n) * r * 4) as u64 } else { 0 };
    if (h * n) as u64 * per_row <= budget && p_bytes(h, n) <= max_binding && n <= max_groups {
        return Ok(vec![Chunk { h0: 0, hc: h, i0: 0, rows: n }]);
    }
    // With P2, the rows whose P fits a binding beside it.
    let p_rows = if p2 { (max_binding / (r * 4) as u64).saturating_sub(n as u64) } else { u64::MAX };
    let rows = ((budget / per_row).min(p_rows) as usize).min(n).min(max_groups);
    if p_rows == 0 {
        return too_large(format!("DeBERTa's K·Q_rᵀ ({n}, {r}) and a row of P need {} bytes", p_bytes(1, 1)));
    }
    if rows == 0 {
        let what = if fused { format!("one row of P or of the output ({} values)", r.max(dh)) } else { format!("one row of {} keys", n.max(r)) };
        return too_large(format!("{what} needs {per_row} bytes"));
    }
    let mut chunks = Vec::new();
    for h0 in 0..h {
        for i0 in (0..n).step_by(rows) {
            chunks.push(Chunk { h0, hc: 1, i0, rows: rows.min(n - i0) });
        }
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(binding: u64, groups: u32) -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffer_binding_size: binding,
            max_buffer_size: binding,
            max_compute_workgroups_per_dimension: groups,
            ..wgpu::Limits::default()
        }
    }

    #[test]
    fn small_layers_are_one_chunk() {
        assert_eq!(plan(&limits(1 << 30, 65535), WORK_BYTES, 64, 32, 4, 5, 8, false, false).unwrap(), [Chunk { h0: 0, hc: 4, i0: 0, rows: 64 }]);
    }

    #[test]
    fn larger_layers_go_a_head_and_some_rows_at_a_time() {
        // 10 rows of 100 keys fit 4000 bytes: 10 chunks per head, the last one 1 row.
        let chunks = plan(&limits(1 << 30, 65535), 4000, 91, 16, 2, 5, 8, false, false).unwrap();
        assert_eq!(chunks.len(), 2 * 10);
        assert!(chunks.iter().all(|c| c.hc == 1 && c.rows <= 10));
        assert_eq!(chunks[9], Chunk { h0: 0, hc: 1, i0: 90, rows: 1 });
        assert_eq!(chunks[10], Chunk { h0: 1, hc: 1, i0: 0, rows: 10 });
        // Every (head, row) exactly once.
        assert_eq!(chunks.iter().map(|c| c.rows).sum::<usize>(), 2 * 91);
    }

    #[test]
    fn the_fused_forward_needs_no_row_of_keys() {
        // n 4096, d 512, 8 heads, R 33, d_head 64: (8, 4096, 4096) logits exceed 128 MiB (one head at a time
        // for the staged kernels); attend.wgsl's (8, 4096, 64) outputs and P do not: every head at once.
        let l = limits(1 << 30, 65535);
        assert_eq!(plan(&l, WORK_BYTES, 4096, 512, 8, 33, 64, false, false).unwrap().len(), 8);
        assert_eq!(plan(&l, WORK_BYTES, 4096, 512, 8, 33, 64, true, false).unwrap(), [Chunk { h0: 0, hc: 8, i0: 0, rows: 4096 }]);
        // A cap still cuts it, by rows of max(R, d_head).
        let chunks = plan(&l, 10 * 64 * 4, 91, 16, 2, 5, 64, true, false).unwrap();
        assert!(chunks.iter().all(|c| c.hc == 1 && c.rows <= 10));
    }

    #[test]
    fn debertas_p2_stays_within_a_binding() {
        // n 100, R 10, one head: P2 (100, 10) and P (rows, 10) share a binding of 4400 bytes: 10 rows a chunk.
        let chunks = plan(&limits(4400, 65535), WORK_BYTES, 100, 8, 1, 10, 8, true, true).unwrap();
        assert!(chunks.iter().all(|c| c.hc == 1 && c.rows == 10), "{chunks:?}");
        // Without p2c the same layer is one chunk; a binding below P2 itself refuses it.
        assert_eq!(plan(&limits(4400, 65535), WORK_BYTES, 100, 8, 1, 10, 8, true, false).unwrap().len(), 1);
        assert!(matches!(plan(&limits(4000, 65535), WORK_BYTES, 100, 8, 1, 10, 8, true, true), Err(GpuError::TooLarge { .. })));
    }

    #[test]
    fn beyond_the_limits_is_refused_with_the_numbers() {
        let e = plan(&limits(64, 65535), WORK_BYTES, 8, 4, 1, 5, 4, false, false).unwrap_err();
        assert_eq!(e, GpuError::TooLarge { what: "one (n, d_model) = (8, 4) projection needs 128 bytes".into(), max_binding: 64, max_workgroups: 65535 });
        assert!(e.to_string().contains("allows 64 bytes per buffer"), "{e}");
        assert!(matches!(plan(&limits(1 << 30, 2), WORK_BYTES, 1000, 16, 1, 5, 16, false, false), Err(GpuError::TooLarge { .. })));
        assert!(matches!(plan(&limits(1 << 30, 65535), 4, 8, 4, 1, 5, 4, true, false), Err(GpuError::TooLarge { .. })));
    }
}
