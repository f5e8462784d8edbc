//! Criterion benches of the core stages, one head at a time (the heatmap rasteriser: relattn's benches/render.rs).
//! Run: `cargo bench -p relattn-core --bench core` (figures in the book's benchmarks chapter).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use relattn_core::attention::{attend_head_fused, HeadInput};
use relattn_core::core::simd::Isa;
use relattn_core::core::softmax::softmax_rows;
use relattn_core::layer::forward;
use relattn_core::layer::scenario::Arrays;
use relattn_core::positions::shaw;
use relattn_core::positions::table::{QueryRows, RelTable};
use relattn_core::{Config, Implementation, Method, Scenario, Spec};
use std::hint::black_box;

/// Deterministic values in [−1, 1).
fn matrix(rows: usize, cols: usize, salt: usize) -> Array2<f32> {
    Array2::from_shape_fn((rows, cols), |(i, j)| (((i * 131 + j * 71 + salt * 17) % 997) as f32 / 498.5) - 1.0)
}

/// Relative logits of one head (n, d_head 64): the efficient gather for k 16 and 128 against the
/// materialized (n, n, d_head) tensor.
fn relative_logits(c: &mut Criterion) {
    let mut g = c.benchmark_group("relative_logits");
    g.sample_size(10);
    for n in [256, 1024] {
        let q = matrix(n, 64, 1);
        for k in [16, 128] {
            let t = matrix(2 * k + 1, 64, 2);
            g.bench_with_input(BenchmarkId::new(format!("efficient_k{k}"), n), &n, |b, &n| {
                b.iter(|| shaw::relative_logits(q.view(), t.view(), RelTable::shaw(k), black_box(n), QueryRows::all(n)))
            });
        }
        let t = matrix(33, 64, 2);
        g.bench_with_input(BenchmarkId::new("materialized_k16", n), &n, |b, &n| {
            b.iter(|| shaw::relative_logits_materialized(q.view(), t.view(), RelTable::shaw(16), black_box(n), QueryRows::all(n)))
        });
    }
    g.finish();
}

/// Row softmax of an (n, n) logit matrix.
fn softmax(c: &mut Criterion) {
    let mut g = c.benchmark_group("softmax");
    for n in [256, 1024, 2048] {
        let logits = matrix(n, n, 3);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| b.iter_batched_ref(|| logits.clone(), softmax_rows, criterion::BatchSize::LargeInput));
    }
    g.finish();
}

/// The a^V term: weights summed into 2k+1 buckets, then · w^V; against the materialized tensor.
fn value_term(c: &mut Criterion) {
    let mut g = c.benchmark_group("value_term");
    g.sample_size(10);
    for n in [256, 1024] {
        let w = matrix(n, n, 4).mapv(|v| v.abs() / n as f32);
        let t = matrix(33, 64, 5);
        g.bench_with_input(BenchmarkId::new("buckets_k16", n), &n, |b, _| {
            b.iter(|| shaw::relative_values(shaw::value_buckets(w.view(), RelTable::shaw(16), QueryRows::all(n)).view(), t.view()))
        });
        g.bench_with_input(BenchmarkId::new("materialized_k16", n), &n, |b, _| {
            b.iter(|| shaw::relative_values_materialized(w.view(), t.view(), RelTable::shaw(16), QueryRows::all(n)))
        });
    }
    g.finish();
}

/// The whole layer: d_model 512, 8 heads, k 16, batch 1.
fn forward(c: &mut Criterion) {
    let mut g = c.benchmark_group("forward");
    g.sample_size(10);
    for n in [256, 1024] {
        for implementation in [Implementation::Efficient, Implementation::Materialized] {
            let cfg = Config { heads: 8, clip: 16, implementation, ..Config::default() };
            let sc = Scenario::build(&cfg, &Spec { n, d_model: 512, batch: 1, seed: 0 }, Arrays::new(), false).unwrap();
            g.bench_with_input(BenchmarkId::new(format!("{implementation:?}").to_lowercase(), n), &n, |b, _| b.iter(|| forward::forward(&cfg, &sc).unwrap()));
        }
    }
    g.finish();
}

/// One head's fused forward (d_head 64; plain attention — absolute positions, whose head has no position term
/// — bidirectional and causal, and Shaw's keys-only term) with the kernels of each instruction set this CPU
/// has: the flash kernel's own speed, one thread. Throughput in useful multiply-adds and adds: 4·n²·d_head
/// (half when causal).
fn fused_head(c: &mut Criterion) {
    let mut g = c.benchmark_group("fused_head");
    g.sample_size(10);
    for n in [512, 2048] {
        let (q, k, v, rel_k) = (matrix(n, 64, 1), matrix(n, 64, 2), matrix(n, 64, 3), matrix(33, 64, 4));
        for (method, causal) in [(Method::Absolute, false), (Method::Absolute, true), (Method::Shaw, false)] {
            g.throughput(criterion::Throughput::Elements((4 * n * n * 64 / if causal { 2 } else { 1 }) as u64));
            let cfg = Config { method, clip: 16, causal, rel_v: false, ..Config::default() };
            let rel_k = if method == Method::Shaw { rel_k.view() } else { rel_k.slice(ndarray::s![..0, ..]) };
            let h = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k, rel_v: None, key_mask: None, rope: None, sink: None, segments: None };
            for isa in Isa::ALL.into_iter().filter(|isa| isa.available()) {
                let id = format!("{method}{}/{}", if causal { "_causal" } else { "" }, isa.name());
                g.bench_with_input(BenchmarkId::new(id, n), &n, |b, _| b.iter(|| attend_head_fused(isa, &cfg, &h).unwrap()));
            }
        }
    }
    g.finish();
}

criterion_group!(benches, relative_logits, softmax, value_term, forward, fused_head);
criterion_main!(benches);
