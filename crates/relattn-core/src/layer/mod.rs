//! One attention layer: its tensors ([`scenario`], [`presets`]), its forward pass and memory budget
//! ([`forward`]), every intermediate ([`trace`]), which views a trace has and their titles, formulas and
//! axes ([`stage_meta`]: a scheme's own from its module in `positions/`, the rest spelled there), and a layer
//! whose stages are computed for one (batch, head) when looked at ([`on_demand`]).

pub mod forward;
pub mod on_demand;
pub mod presets;
pub mod scenario;
pub mod stage_meta;
pub mod trace;
