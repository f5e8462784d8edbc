//! One attention layer: its tensors ([`scenario`], [`presets`]), its forward pass and memory budget
//! ([`forward`]), every intermediate ([`trace`]), each view of a trace with its title, formula and axes
//! ([`stage`]: the one place they are spelled), and a layer whose stages are computed for one (batch, head)
//! when looked at ([`on_demand`]).

pub mod forward;
pub mod on_demand;
pub mod options;
pub mod presets;
pub mod scenario;
pub mod stage;
pub mod trace;
