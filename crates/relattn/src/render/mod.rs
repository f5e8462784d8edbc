//! Heatmaps: colormaps, rasters and labelled figures.
//!
//! - [`rgba`] turns an (rows, cols) matrix into one RGBA pixel per cell, the buffer the page blits as
//!   `ImageData` (one rect per cell is far too slow at 512² and up).
//! - [`draw`] draws a labelled figure (title, formula and shape, axes with tokens or indices, colorbar)
//!   on any plotters backend: the CLI's SVG/PNG, the page's canvas (which then blits the cells itself).
//!
//! Colours: viridis for sequential data (weights, indices), a red–blue diverging map centred on 0 for
//! signed scores (the default [`Palette`]; the page may pick cividis or purple–green); masked (−∞) cells
//! are grey.

//!
//! - [`draw_chart`] draws curves on axes with the same title and subtitle (the lecture pictures that are not
//!   heatmaps).
//!
//! [`atlas`]: a head atlas's grid of tiles, its HTML page and one head's chart.
//!
//! [`colormap`]: the colours; [`raster`]: pooled rasters of large stages; [`figure`]: labelled figures;
//! [`chart`]: curves.

pub mod atlas;
mod chart;
mod colormap;
mod figure;
mod raster;

pub use chart::*;
pub use colormap::*;
pub use figure::*;
pub use raster::*;
