//! Rasters of large stages: pooled to a side the screen can show, each pixel its block's most extreme value
//! (a one-cell band stays visible), whole or a block of rows at a time.

use super::colormap::{rgba_in_range, Extent, Lut, Palette};
use ndarray::{s, Array2, ArrayView2};
use relattn_core::stage::Scale;
use std::ops::Range;

/// [`rgba_with`] with at most `max_side` pixels a side: a larger matrix is pooled (`pool`), so a band one cell wide
/// (the clip band, a diagonal) stays visible where sampling one cell per pixel would drop it. Returns the
/// pixels, their (rows, cols) and the colour range, which is the whole matrix's.
pub fn rgba_pooled(m: ArrayView2<f32>, scale: Scale, palette: Palette, max_side: usize) -> (Vec<u8>, (usize, usize), (f32, f32)) {
    let mut pooler = Pooler::new(m.dim(), scale, max_side);
    pooler.add(m, 0);
    pooler.rgba(palette)
}

/// The matrix cut into blocks of cells, at most `max_rows` × `max_cols` of them, each replaced by its most
/// extreme value (`more_extreme`: the largest; on a diverging scale the largest in magnitude; −∞, a masked cell,
/// only when the whole block is masked): what one pixel of a heatmap smaller than the matrix shows.
fn pool(m: ArrayView2<f32>, scale: Scale, max_rows: usize, max_cols: usize) -> Array2<f32> {
    let mut pooler = Pooler::with_blocks(m.dim(), scale, max_rows, max_cols);
    pooler.add(m, 0);
    pooler.pooled
}

/// A matrix pooled (`pool`) and its `Extent` measured from its rows given in any number of pieces (one
/// (rows, cols) stage computed a block of query rows at a time): the same blocks, the same picks and the same
/// range as from the whole matrix at once.
pub struct Pooler {
    scale: Scale,
    /// Cells a block spans: rows, columns.
    block: (usize, usize),
    pooled: Array2<f32>,
    extent: Extent,
    /// The pooled rows the added rows fall in (empty before any): what [`Pooler::part`] gives.
    touched: Range<usize>,
}

impl Pooler {
    /// For a (rows, cols) matrix shown in at most `max_side` × `max_side` pixels (one per cell when it fits).
    pub fn new(dim: (usize, usize), scale: Scale, max_side: usize) -> Pooler {
        Pooler::with_blocks(dim, scale, max_side, max_side)
    }

    fn with_blocks((rows, cols): (usize, usize), scale: Scale, max_rows: usize, max_cols: usize) -> Pooler {
        let block = (rows.div_ceil(max_rows.max(1)).max(1), cols.div_ceil(max_cols.max(1)).max(1));
        let pooled = Array2::from_elem((rows.div_ceil(block.0), cols.div_ceil(block.1)), f32::NEG_INFINITY);
        Pooler { scale, block, pooled, extent: Extent::default(), touched: 0..0 }
    }

    /// Adds the matrix's rows `first..first + part.nrows()`. Each column's pick over the rows of a block row comes
    /// first (column by column, which vectorizes), then each block's pick over its columns.
    pub fn add(&mut self, part: ArrayView2<f32>, first: usize) {
        let (br, bc) = self.block;
        let (scale, cols) = (self.scale, part.ncols());
        self.touch(first / br..(first + part.nrows()).div_ceil(br));
        let mut columns = vec![f32::NEG_INFINITY; cols];
        let mut copied = Vec::new();
        for (r, row) in part.outer_iter().enumerate() {
            // The row as a slice (copied when the view strides).
            let row = match row.to_slice() {
                Some(cells) => cells,
                None => {
                    copied.clear();
                    copied.extend(row.iter().copied());
                    &copied[..]
                }
            };
            for (pick, &v) in columns.iter_mut().zip(row) {
                *pick = more_extreme(scale, *pick, v);
            }
            self.extent.add_row(row);
            // The block row ends (or the part does): its columns' picks go into its blocks.
            let i = first + r;
            if (i + 1).is_multiple_of(br) || r + 1 == part.nrows() {
                for (cell, picks) in self.pooled.row_mut(i / br).iter_mut().zip(columns.chunks(bc)) {
                    *cell = picks.iter().fold(*cell, |a, &v| more_extreme(scale, a, v));
                }
                columns.fill(f32::NEG_INFINITY);
            }
        }
    }

    /// What this pooler has taken so far, to be merged into another's ([`Pooler::merge`]): the pooled rows its
    /// rows fall in (none before any) and the first of them — a pool's share sends its own rows, not the whole
    /// raster — and the least and greatest finite value added.
    pub fn part(&self) -> (ArrayView2<'_, f32>, usize, (f32, f32)) {
        (self.pooled.slice(s![self.touched.clone(), ..]), self.touched.start, self.extent.bounds())
    }

    /// Adds another pooler's [`Pooler::part`] of the same matrix (`pooled`, from pooled row `first`): each cell as
    /// [`Pooler::add`] would have taken that pooler's rows, so the result is the one pooler's that took every row
    /// (a pool's workers' shares, merged in any order: the pick is order-free). Panics past the raster's rows or
    /// columns (the caller checks a part's shape: [`crate::app::session::Cutting::merge`]).
    pub fn merge(&mut self, pooled: ArrayView2<f32>, first: usize, (lo, hi): (f32, f32)) {
        let rows = first..first + pooled.nrows();
        for (cell, &v) in self.pooled.slice_mut(s![rows.clone(), ..]).iter_mut().zip(pooled.iter()) {
            *cell = more_extreme(self.scale, *cell, v);
        }
        self.touch(rows);
        self.extent.add([lo, hi].into_iter());
    }

    /// Pooled rows `rows` have taken cells (none when empty): [`Pooler::part`]'s rows grow to cover them.
    fn touch(&mut self, rows: Range<usize>) {
        if !rows.is_empty() {
            self.touched = if self.touched.is_empty() { rows } else { self.touched.start.min(rows.start)..self.touched.end.max(rows.end) };
        }
    }

    /// The raster's (rows, cols): what a part's cells must fit in.
    pub fn dim(&self) -> (usize, usize) {
        self.pooled.dim()
    }

    /// The pooled cells coloured over the range of every value added: pixels, their (rows, cols), the range.
    pub fn rgba(&self, palette: Palette) -> (Vec<u8>, (usize, usize), (f32, f32)) {
        self.rgba_over(palette, self.extent.range(self.scale))
    }

    /// The pooled cells coloured over `range` (one shared by several matrices): pixels, their (rows, cols), the range.
    pub fn rgba_over(&self, palette: Palette, range: (f32, f32)) -> (Vec<u8>, (usize, usize), (f32, f32)) {
        (rgba_in_range(self.pooled.view(), self.scale, palette, range), self.pooled.dim(), range)
    }
}

/// The more extreme of a block's pick so far `a` (−∞: none yet) and a cell `v`: the larger; on a diverging scale
/// the larger in magnitude, the positive one of two of the same magnitude; −∞ (a masked cell) only when both are,
/// and never NaN. An order-free choice: a block's pick is the same whatever order its cells come in (its rows
/// in blocks of any size, a pool's shares merged, its columns first).
#[inline]
fn more_extreme(scale: Scale, a: f32, v: f32) -> f32 {
    let take = match scale {
        Scale::Sequential => v > a,
        Scale::Diverging => {
            let (ma, mv) = (a.abs(), v.abs());
            // `&` and `|`, not `&&` and `||`: a select without branches, which vectorizes.
            (a == f32::NEG_INFINITY) & !v.is_nan() | (v != f32::NEG_INFINITY) & ((mv > ma) | (mv == ma) & (v > a))
        }
    };
    if take {
        v
    } else {
        a
    }
}

/// RGB pixels of the matrix drawn w × h, for plotters' bitmap element: [`pool`]ed to at most one block per
/// pixel (as the page's rasters are), then each pixel takes its block (nearest).
pub(super) fn rgb_pooled(m: ArrayView2<f32>, scale: Scale, range: (f32, f32), lut: &Lut, w: usize, h: usize) -> Vec<u8> {
    let pooled = pool(m, scale, h, w);
    let (rows, cols) = pooled.dim();
    let mut out = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        let i = y * rows / h;
        for x in 0..w {
            out.extend_from_slice(&lut.color(pooled[[i, x * cols / w]], range));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-cell diagonal of a 1000 × 1000 matrix survives pooling to 100 × 100 (nearest sampling keeps
    /// about a third of it); small matrices are not pooled.
    #[test]
    fn pooling_keeps_a_one_cell_band() {
        let m = ndarray::Array2::from_shape_fn((1000, 1000), |(i, j)| if i == j { 1.0 } else { 0.0 });
        let (px, dims, _) = rgba_pooled(m.view(), Scale::Sequential, Palette::default(), 100);
        assert_eq!(dims, (100, 100));
        let top = Lut::new(Scale::Sequential).color(1.0, (0.0, 1.0));
        for d in 0..100 {
            assert_eq!(&px[(d * 100 + d) * 4..(d * 100 + d) * 4 + 3], &top, "block ({d}, {d})");
        }
        assert_eq!(&px[4..7], &Lut::new(Scale::Sequential).color(0.0, (0.0, 1.0)), "an off-diagonal block");
        let small = ndarray::Array2::<f32>::zeros((30, 40));
        assert_eq!(rgba_pooled(small.view(), Scale::Diverging, Palette::default(), 100).1, (30, 40));
    }

    /// A matrix pooled from its rows in pieces of any size (a stage computed a block of queries at a time)
    /// gives the pixels and the range of the whole matrix pooled at once; masked cells, ties, both scales.
    #[test]
    fn pooling_in_pieces_equals_pooling_whole() {
        let m = ndarray::Array2::from_shape_fn((301, 77), |(i, j)| match (i * 31 + j * 7) % 13 {
            0 => f32::NEG_INFINITY,
            r => (r as f32 - 6.0) * if i > 150 { 0.5 } else { 1.0 },
        });
        for scale in [Scale::Sequential, Scale::Diverging] {
            for side in [8, 50, 100, 400] {
                let whole = rgba_pooled(m.view(), scale, Palette::default(), side);
                for piece in [1, 3, 64, 300] {
                    let mut pooler = Pooler::new(m.dim(), scale, side);
                    for first in (0..m.nrows()).step_by(piece) {
                        pooler.add(m.slice(ndarray::s![first..(first + piece).min(m.nrows()), ..]), first);
                    }
                    assert_eq!(pooler.rgba(Palette::default()), whole, "{scale:?} side {side} pieces of {piece}");
                }
            }
        }
    }

    /// A block's pick whatever order its cells come in: on a diverging scale the larger magnitude, the positive
    /// of a tie (−3 before 3 or after it); a masked cell only when the whole block is; NaN never.
    #[test]
    fn a_blocks_pick_is_order_free() {
        let inf = f32::NEG_INFINITY;
        let pick = |cells: [[f32; 2]; 2], scale: Scale| pool(ndarray::arr2(&cells).view(), scale, 1, 1)[[0, 0]];
        assert_eq!(pick([[-3.0, 3.0], [1.0, inf]], Scale::Diverging), 3.0);
        assert_eq!(pick([[3.0, inf], [1.0, -3.0]], Scale::Diverging), 3.0);
        assert_eq!(pick([[-4.0, 3.0], [f32::NAN, inf]], Scale::Diverging), -4.0);
        assert_eq!(pick([[f32::NAN, -4.0], [3.0, inf]], Scale::Sequential), 3.0);
        assert_eq!(pick([[inf, inf], [inf, inf]], Scale::Diverging), inf);
        assert_eq!(pick([[inf, inf], [inf, inf]], Scale::Sequential), inf);
    }

    /// A pool's shares of a matrix's rows (the rows in two, three or four runs, a run's edge inside a pooled row
    /// or on one), each pooler's part its own pooled rows alone, merged: the one pooler's raster and range.
    #[test]
    fn parts_of_the_rows_merge_into_the_whole() {
        let m = Array2::from_shape_fn((37, 23), |(i, j)| ((i * 7 + j * 13) % 11) as f32 - 5.0 + if (i + j) % 9 == 0 { f32::NEG_INFINITY } else { 0.0 });
        for scale in [Scale::Sequential, Scale::Diverging] {
            let mut whole = Pooler::new(m.dim(), scale, 8);
            whole.add(m.view(), 0);
            for edges in [vec![0, 20, 37], vec![0, 5, 10, 37], vec![0, 15, 30, 31, 37]] {
                let mut merged = Pooler::new(m.dim(), scale, 8);
                let mut sent = 0;
                for w in edges.windows(2) {
                    let mut share = Pooler::new(m.dim(), scale, 8);
                    share.add(m.slice(ndarray::s![w[0]..w[1], ..]), w[0]);
                    let (pooled, first, bounds) = share.part();
                    assert_eq!((first, first + pooled.nrows()), (w[0] / 5, w[1].div_ceil(5)), "a share's own pooled rows (blocks of 5 rows)");
                    sent += pooled.len();
                    merged.merge(pooled, first, bounds);
                }
                assert!(sent < whole.pooled.len() * (edges.len() - 1), "parts are smaller than whole rasters");
                assert_eq!((merged.pooled.clone(), merged.extent.bounds()), (whole.pooled.clone(), whole.extent.bounds()), "{scale:?} {edges:?}");
            }
        }
    }

    /// A one-cell diagonal in a 2048 × 2048 matrix drawn 300 × 300 (the CLI's bitmap): pooled, every pixel
    /// row shows it; the nearest cell per pixel (before) missed it in most rows.
    #[test]
    fn bitmaps_pool_like_the_page() {
        let m = Array2::from_shape_fn((2048, 2048), |(i, j)| if i == j { 1.0 } else { 0.0 });
        let lut = Lut::new(Scale::Sequential);
        let (w, h) = (300, 300);
        let px = rgb_pooled(m.view(), Scale::Sequential, (0.0, 1.0), &lut, w, h);
        let top = lut.color(1.0, (0.0, 1.0));
        for y in 0..h {
            assert!(px[y * w * 3..(y + 1) * w * 3].chunks(3).any(|c| c == top), "row {y} lost the diagonal");
        }
        let (pooled, dims, range) = rgba_pooled(m.view(), Scale::Sequential, Palette::default(), 512);
        assert_eq!((dims, range, pooled.len()), ((512, 512), (0.0, 1.0), 512 * 512 * 4));
        let masked = Array2::from_elem((4, 4), f32::NEG_INFINITY);
        assert_eq!(pool(masked.view(), Scale::Diverging, 2, 2), Array2::from_elem((2, 2), f32::NEG_INFINITY));
    }
}
