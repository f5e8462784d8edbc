//! The math crate alone: one Shaw layer's trace, every stage by name (`cargo run -p relattn-core --example trace`).

use relattn_core::layer::forward;
use relattn_core::{Config, Method, Scenario, Spec, Stage};

fn main() -> relattn_core::Result<()> {
    let cfg = Config { method: Method::Shaw, heads: 2, clip: 3, causal: true, ..Config::default() };
    let sc = Scenario::build(&cfg, &Spec { n: 6, d_model: 8, ..Spec::default() }, Default::default(), false)?;
    let trace = forward::trace(&cfg, &sc)?;
    println!("{:?}", trace.stages().iter().map(|s| s.name()).collect::<Vec<_>>());
    println!("weights of head 1:\n{:.3}", trace.stage(Stage::Weights, 0, 1)?);
    Ok(())
}
