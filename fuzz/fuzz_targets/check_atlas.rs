// Included by the fuzz target and by tests/fuzz_corpus.rs: the path an atlas file takes on the page and the
// command line.

/// Any bytes as a head atlas give an atlas or an error, never a panic or an abort; an atlas read gives its
/// picture's data, draws its grid (every metric, every order, as SVG) and its self-contained HTML, a chart of
/// its first and last head, and each captured row resolves as the page's request does (a layer or an error).
pub fn check_atlas_bytes(data: &[u8]) {
    use relattn::files::atlas::Atlas;
    use relattn::render::atlas::{grid_svg, head_chart, html, AtlasView, GridSpec, Order};
    use relattn::render::{Ink, Palette};
    let Ok(atlas) = Atlas::read(data, "input.atlas.npz", 64 << 20) else { return };
    let view = AtlasView::of(&atlas);
    let (l, h, _) = atlas.dims();
    assert_eq!((view.rows.len(), view.heads, view.tips.len()), (l, h, l * h), "a tile per head");
    for metric in &view.metrics {
        for order in [Order::Head, Order::Metric, Order::KvHead] {
            let spec = GridSpec { metric: metric.name.clone(), order, width: 600, height: None, text_scale: 1.0 };
            let (_, tiles) = grid_svg(&view, &spec, Ink::LIGHT, Palette::default()).expect("a grid of an atlas read draws");
            assert_eq!(tiles.len(), l * h, "every tile drawn");
        }
    }
    let spec = GridSpec { metric: view.metrics[0].name.clone(), order: Order::Head, width: 600, height: Some(400), text_scale: 1.25 };
    html(&view, &spec).expect("an atlas read has its HTML");
    for (c, head) in [(0, 0), (l - 1, h - 1)] {
        head_chart(&atlas, c, head).expect("a head of the atlas has its chart");
    }
    for c in (0..l).filter(|&c| atlas.is_captured(c)) {
        let request: relattn::protocol::Request =
            serde_json::from_value(serde_json::json!({ "file_name": "input.atlas.npz", "options": {}, "new_file": true, "atlas_row": c })).unwrap();
        let _ = relattn::app::request::Inputs::resolve(&request, Some(data));
    }
}
