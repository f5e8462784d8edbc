//! The head atlas's messages: an atlas file sent with a compute request is answered by [`AtlasOpened`] (its
//! picture's data, [`AtlasView`]) instead of a result; one head's full-size profile is asked with
//! [`AtlasHeadRequest`]; a captured row's stages are computed by a compute request whose
//! [`super::Request::atlas_row`] names the row (the worker reads it with `Atlas::capture`).

use super::WorkerError;
use crate::render::atlas::{AtlasView, HeadChart};
use serde::{Deserialize, Serialize};

/// worker → page: the file of compute request `id` is an atlas (it has a member `atlas`): its picture's data.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct AtlasOpened {
    pub id: u32,
    pub view: AtlasView,
}

/// page → worker: row `row`, head `head`'s profile at full size, of the atlas the worker opened last (the
/// page's file pick `file`; refused as stale when the worker holds another).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct AtlasHeadRequest {
    pub id: u32,
    pub file: u32,
    pub row: usize,
    pub head: usize,
}

/// worker → page: the answer to an [`AtlasHeadRequest`].
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct AtlasHeadReply {
    pub id: u32,
    pub ok: bool,
    #[cfg_attr(test, ts(optional))]
    pub chart: Option<HeadChart>,
    #[cfg_attr(test, ts(optional))]
    pub error: Option<WorkerError>,
}
