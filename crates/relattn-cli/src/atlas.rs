//! `relattn atlas render`: a head atlas (Python's `relattn.atlas(...).save`) as its grid of layer × head tiles,
//! coloured by a metric: .svg, .png, or the page's self-contained .html (the same picture: src/render/atlas.rs).

use crate::args::AtlasRender;
use crate::files::{read_bytes, write_atomic};
use crate::Stop;
use relattn::files::atlas::Atlas;
use relattn::layer::forward::DEFAULT_MEMORY_LIMIT;
use relattn::render::atlas::{save_grid, AtlasView, GridSpec};

/// Draws the atlas `args.file` into `args.out`.
pub fn render(args: &AtlasRender) -> Result<(), Stop> {
    let budget = args.max_memory_mb.map_or(DEFAULT_MEMORY_LIMIT, |mb| mb << 20);
    let bytes = read_bytes(&args.file, "an atlas", "an .atlas.npz written by relattn.atlas(...).save")?;
    let atlas = Atlas::read(&bytes, &args.file.display().to_string(), budget)?;
    let view = AtlasView::of(&atlas);
    view.metric(&args.metric)?;
    let width = relattn::error::in_range("width", args.width, 400..=8000, "pixels")? as u32;
    let spec = GridSpec { metric: args.metric.clone(), order: args.order, width, height: None, text_scale: 1.0 };
    write_atomic(&args.out, |tmp| save_grid(&view, &spec, tmp))?;
    Ok(())
}
