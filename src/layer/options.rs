//! A layer's options as the command line and the Python package name them (`--rope-base`, `rope_base=`):
//! every one optional, the unset ones from the preset, if any, or the defaults. [`Options::resolve`] is the
//! one place that turns them into a [`Config`], a [`Spec`] and the preset's arrays, each refused by name.

use crate::attention::{Config, Implementation};
use crate::error::{Error, Result};
use crate::layer::presets;
use crate::layer::scenario::{Arrays, Spec};
use crate::positions::rope::PairLayout;
use crate::positions::table::Edge;
use crate::positions::Method;

/// The options; numbers that users type are i64 so that a negative one is refused by name, not by a parser.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    pub preset: Option<String>,
    pub method: Option<Method>,
    pub heads: Option<i64>,
    pub clip: Option<i64>,
    pub causal: bool,
    pub no_rel_v: bool,
    pub per_head_tables: bool,
    pub edge: Option<Edge>,
    pub implementation: Option<Implementation>,
    pub n: Option<i64>,
    pub d_model: Option<i64>,
    pub batch: Option<i64>,
    pub seed: Option<u64>,
    pub rope_base: Option<f32>,
    pub rope_fraction: Option<f32>,
    pub rope_layout: Option<PairLayout>,
    pub rope_scale: Option<f32>,
    pub t5_buckets: Option<i64>,
    pub t5_max_distance: Option<i64>,
}

/// The resolved options: the layer, the sizes of what is generated, the preset's arrays and whether the
/// tables are per head.
pub struct Resolved {
    pub config: Config,
    pub spec: Spec,
    pub arrays: Arrays,
    pub per_head_tables: bool,
}

/// `v` as a size of at least `least`, or an error naming `field`.
fn at_least(field: &str, v: i64, least: usize) -> Result<usize> {
    match usize::try_from(v) {
        Ok(u) if u >= least => Ok(u),
        _ => Err(Error::invalid(field, v, format!("an integer ≥ {least}"))),
    }
}

impl Options {
    /// The configuration, sizes and the preset's arrays; ranges that depend on each other (heads dividing
    /// d_model, RoPE's pairs, T5's buckets) are checked when the scenario is built.
    pub fn resolve(&self) -> Result<Resolved> {
        let (mut cfg, mut spec, arrays, mut per_head) = match &self.preset {
            Some(name) => {
                let p = presets::preset(name)?;
                (p.config, p.spec, p.arrays, p.per_head_tables)
            }
            None => (Config::default(), Spec::default(), Arrays::new(), false),
        };
        cfg.method = self.method.unwrap_or(cfg.method);
        let rope = &mut cfg.rope;
        rope.base = self.rope_base.unwrap_or(rope.base);
        rope.fraction = self.rope_fraction.unwrap_or(rope.fraction);
        rope.layout = self.rope_layout.unwrap_or(rope.layout);
        rope.scale = self.rope_scale.unwrap_or(rope.scale);
        if let Some(b) = self.t5_buckets {
            cfg.buckets.count = at_least("t5_buckets", b, 0)?;
        }
        if let Some(d) = self.t5_max_distance {
            cfg.buckets.max_distance = at_least("t5_max_distance", d, 0)?;
        }
        if let Some(h) = self.heads {
            cfg.heads = at_least("heads", h, 1)?;
        }
        if let Some(k) = self.clip {
            cfg.clip = at_least("clip", k, 0)?;
        }
        cfg.causal |= self.causal;
        cfg.rel_v &= !self.no_rel_v;
        per_head |= self.per_head_tables;
        cfg.edge = self.edge.unwrap_or(cfg.edge);
        cfg.implementation = self.implementation.unwrap_or(cfg.implementation);
        if let Some(n) = self.n {
            spec.n = at_least("n", n, 1)?;
        }
        if let Some(d) = self.d_model {
            spec.d_model = at_least("d_model", d, 1)?;
        }
        if let Some(b) = self.batch {
            spec.batch = at_least("batch", b, 1)?;
        }
        spec.seed = self.seed.unwrap_or(spec.seed);
        Ok(Resolved { config: cfg, spec, arrays, per_head_tables: per_head })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_options_come_from_the_preset_and_bad_ones_are_named() {
        let r = Options { preset: Some("seed004".into()), n: Some(6), ..Options::default() }.resolve().unwrap();
        assert_eq!((r.config.heads, r.config.clip, r.spec.n, r.spec.batch), (3, 2, 6, 2));
        for (o, field) in [
            (Options { n: Some(0), ..Options::default() }, "n"),
            (Options { clip: Some(-1), ..Options::default() }, "clip"),
            (Options { heads: Some(0), ..Options::default() }, "heads"),
            (Options { t5_buckets: Some(-4), ..Options::default() }, "t5_buckets"),
            (Options { preset: Some("nope".into()), ..Options::default() }, "preset"),
        ] {
            assert_eq!(o.resolve().err().map(|e| e.field().to_string()).as_deref(), Some(field));
        }
    }
}
