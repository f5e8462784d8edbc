//! Benchmarks of the figures: `cargo bench -p relattn --bench render` (figures in the book's benchmarks chapter).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use relattn::app::session::RASTER_SIDE;
use relattn::render::{rgba, Pooler};
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

/// A (2048, 2048) stage pooled to the page's raster side from blocks of 128 query rows, as a layer held on demand
/// is cut: six such stages make a head's cut at n 2048 for Shaw.
fn pooled(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool_2048");
    let m = Array2::from_shape_fn((2048, 2048), |(i, j)| (((i * 131 + j * 71 + 6 * 17) % 997) as f32 / 498.5) - 1.0);
    for scale in [Scale::Sequential, Scale::Diverging] {
        g.bench_with_input(BenchmarkId::from_parameter(format!("{scale:?}")), &scale, |b, &scale| {
            b.iter(|| {
                let mut pooler = Pooler::new(m.dim(), scale, RASTER_SIDE);
                for first in (0..m.nrows()).step_by(128) {
                    pooler.add(m.slice(ndarray::s![first..first + 128, ..]), first);
                }
                pooler
            })
        });
    }
    g.finish();
}

criterion_group!(benches, raster, pooled);
criterion_main!(benches);
