//! Colours: the colormaps, the value range a stage is coloured over, and one RGBA pixel per cell.

use ndarray::ArrayView2;
use relattn_core::stage::Scale;

/// Grey for cells that are not finite (masked logits).
pub const MASKED: [u8; 3] = [150, 150, 150];

/// The value range a colormap spans: [min, max] of the finite values, symmetric [−m, m] when diverging.
pub fn value_range(m: ArrayView2<f32>, scale: Scale) -> (f32, f32) {
    let mut extent = Extent::default();
    extent.add(m.iter().copied());
    extent.range(scale)
}

/// The least and the greatest finite value seen, gathered piece by piece (a stage computed in blocks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Extent {
    lo: f32,
    hi: f32,
}

impl Default for Extent {
    fn default() -> Self {
        Extent { lo: f32::INFINITY, hi: f32::NEG_INFINITY }
    }
}

impl Extent {
    pub(super) fn add(&mut self, values: impl Iterator<Item = f32>) {
        for v in values.filter(|v| v.is_finite()) {
            self.lo = self.lo.min(v);
            self.hi = self.hi.max(v);
        }
    }

    /// [`Extent::add`] of a row of cells, eight columns at a time (the same bounds).
    pub(super) fn add_row(&mut self, row: &[f32]) {
        const LANES: usize = 8;
        let (mut lo, mut hi) = ([f32::INFINITY; LANES], [f32::NEG_INFINITY; LANES]);
        let lanes = row.chunks_exact(LANES);
        let rest = lanes.remainder();
        for cells in lanes {
            for i in 0..LANES {
                let (v, finite) = (cells[i], cells[i].is_finite());
                lo[i] = if finite && v < lo[i] { v } else { lo[i] };
                hi[i] = if finite && v > hi[i] { v } else { hi[i] };
            }
        }
        self.add(lo.into_iter().chain(hi).chain(rest.iter().copied()));
    }

    /// The least and the greatest finite value seen (∞, −∞ when none was).
    pub(super) fn bounds(&self) -> (f32, f32) {
        (self.lo, self.hi)
    }

    /// The colormap's range over the values seen ([`value_range`]): (0, 1) when none was finite, (−1, 1) for
    /// a diverging stage of zeros.
    pub(super) fn range(&self, scale: Scale) -> (f32, f32) {
        let (lo, hi) = (self.lo, self.hi);
        if lo > hi {
            return (0.0, 1.0);
        }
        match scale {
            Scale::Diverging => {
                // All zeros (the content term off): ±1, so the colorbar reads 0 in the middle, not ±1.18e-38.
                let m = lo.abs().max(hi.abs());
                if m < f32::MIN_POSITIVE {
                    (-1.0, 1.0)
                } else {
                    (-m, m)
                }
            }
            Scale::Sequential if lo == hi => (lo, lo + 1.0),
            Scale::Sequential => (lo, hi),
        }
    }
}

/// Entries of a colormap's lookup table.
const LUT_SIZE: usize = 256;

/// A colormap a [`Palette`] may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colormap {
    /// Perceptually uniform, dark blue to yellow (sequential).
    Viridis,
    /// Viridis made safe for red–green colour blindness (sequential).
    Cividis,
    /// Blue (low) – white – red (high), balanced around the middle (diverging).
    RedBlue,
    /// Purple (low) – white – green (high), balanced (diverging).
    PurpleGreen,
}

impl Colormap {
    /// The names the page and the URL use.
    pub const NAMES: [&'static str; 4] = ["viridis", "cividis", "red_blue", "purple_green"];

    pub fn name(self) -> &'static str {
        match self {
            Colormap::Viridis => "viridis",
            Colormap::Cividis => "cividis",
            Colormap::RedBlue => "red_blue",
            Colormap::PurpleGreen => "purple_green",
        }
    }

    pub fn from_name(s: &str) -> Option<Colormap> {
        [Colormap::Viridis, Colormap::Cividis, Colormap::RedBlue, Colormap::PurpleGreen].into_iter().find(|c| c.name() == s)
    }

    /// The colour at t in [0, 1] (low to high).
    fn eval(self, t: f64) -> colorous::Color {
        match self {
            Colormap::Viridis => colorous::VIRIDIS.eval_continuous(t),
            Colormap::Cividis => colorous::CIVIDIS.eval_continuous(t),
            Colormap::RedBlue => colorous::RED_BLUE.eval_continuous(1.0 - t),
            Colormap::PurpleGreen => colorous::PURPLE_GREEN.eval_continuous(t),
        }
    }
}

/// The colormaps of the two scales. The default (viridis, red–blue) is the CLI's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Palette {
    pub sequential: Colormap,
    pub diverging: Colormap,
}

impl Default for Palette {
    fn default() -> Self {
        Palette { sequential: Colormap::Viridis, diverging: Colormap::RedBlue }
    }
}

/// A colormap sampled at 256 points, so a cell costs one index instead of a spline.
pub struct Lut([[u8; 3]; LUT_SIZE]);

impl Lut {
    pub fn new(scale: Scale) -> Lut {
        Lut::with_palette(scale, Palette::default())
    }

    /// The palette's colormap for `scale`.
    pub fn with_palette(scale: Scale, palette: Palette) -> Lut {
        let map = match scale {
            Scale::Sequential => palette.sequential,
            Scale::Diverging => palette.diverging,
        };
        let mut lut = [[0u8; 3]; LUT_SIZE];
        for (k, c) in lut.iter_mut().enumerate() {
            let rgb = map.eval(k as f64 / (LUT_SIZE - 1) as f64);
            *c = [rgb.r, rgb.g, rgb.b];
        }
        Lut(lut)
    }

    /// The colour of `v` in [lo, hi]; grey when not finite.
    #[inline]
    pub fn color(&self, v: f32, (lo, hi): (f32, f32)) -> [u8; 3] {
        if !v.is_finite() {
            return MASKED;
        }
        let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        self.0[(t * (LUT_SIZE - 1) as f32 + 0.5) as usize]
    }
}

/// One RGBA pixel per cell, row-major, with the range used.
pub fn rgba(m: ArrayView2<f32>, scale: Scale) -> (Vec<u8>, (f32, f32)) {
    rgba_with(m, scale, Palette::default())
}

/// [`rgba`] with the palette's colormaps.
pub fn rgba_with(m: ArrayView2<f32>, scale: Scale, palette: Palette) -> (Vec<u8>, (f32, f32)) {
    let range = value_range(m, scale);
    (rgba_in_range(m, scale, palette, range), range)
}

/// One RGBA pixel per cell, coloured over `range` (a window of a larger matrix keeps the matrix's colours).
pub fn rgba_in_range(m: ArrayView2<f32>, scale: Scale, palette: Palette, range: (f32, f32)) -> Vec<u8> {
    let lut = Lut::with_palette(scale, palette);
    let mut out = Vec::with_capacity(m.len() * 4);
    for &v in m.iter() {
        let [r, g, b] = lut.color(v, range);
        out.extend_from_slice(&[r, g, b, 255]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr2;

    #[test]
    fn a_stage_of_zeros_gets_a_readable_range() {
        let zeros = ndarray::Array2::<f32>::zeros((3, 3));
        assert_eq!(value_range(zeros.view(), Scale::Diverging), (-1.0, 1.0));
        assert_eq!(value_range(zeros.view(), Scale::Sequential), (0.0, 1.0));
    }

    #[test]
    fn diverging_is_centred_and_masked_is_grey() {
        let m = arr2(&[[-1.0, 0.0], [3.0, f32::NEG_INFINITY]]);
        assert_eq!(value_range(m.view(), Scale::Diverging), (-3.0, 3.0));
        let (px, _) = rgba(m.view(), Scale::Diverging);
        assert_eq!(&px[12..15], &MASKED);
        assert_eq!(px.len(), 16);
    }

    #[test]
    fn palettes_change_colours_but_not_the_default() {
        let m = arr2(&[[0.0f32, 1.0]]);
        let (viridis, _) = rgba(m.view(), Scale::Sequential);
        assert_eq!(rgba_with(m.view(), Scale::Sequential, Palette::default()).0, viridis);
        let cividis = Palette { sequential: Colormap::Cividis, ..Palette::default() };
        assert_ne!(rgba_with(m.view(), Scale::Sequential, cividis).0, viridis);
        for name in Colormap::NAMES {
            assert_eq!(Colormap::from_name(name).map(Colormap::name), Some(name));
        }
    }
}
