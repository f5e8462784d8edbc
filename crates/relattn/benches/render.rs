//! Benchmarks of the figures: `cargo bench -p relattn --bench render` (figures in the book's benchmarks chapter).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use relattn::render::rgba;
use relattn::stage::Scale;

/// One RGBA pixel per cell of an (n, n) matrix: the page's redraw of a heatmap.
fn raster(c: &mut Criterion) {
    let mut g = c.benchmark_group("rgba_raster");
    for n in [512, 1024] {
        let m = Array2::from_shape_fn((n, n), |(i, j)| (((i * 131 + j * 71 + 6 * 17) % 997) as f32 / 498.5) - 1.0);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| b.iter(|| rgba(m.view(), Scale::Diverging)));
    }
    g.finish();
}

criterion_group!(benches, raster);
criterion_main!(benches);
