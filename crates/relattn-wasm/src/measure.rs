//! Text measured for the page's figures without laying out the page (#53 item 3). plotters' web fonts measure
//! each text by appending a span to the body and reading its size, which makes the browser lay out the page
//! each time: 0.1–0.3 ms a text on a 2-core VM, and a figure measures tens to hundreds (its title and subtitle
//! wrapped word by word, its tick labels fitted), most of a figure's drawing time. [`Measured`] wraps a backend
//! and answers plotters' `estimate_text_size` with a canvas's `measureText` (no layout): the width of the text
//! in the font a canvas draws it with (`"{style} {size}px {family}"`, plotters-canvas's), rounded, and the
//! height of a line of that font measured once by plotters' own span (the same height as before) and kept.
//! Everything else is the wrapped backend's.

use plotters::style::FontDesc;
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind, FontFamily, FontStyle};
use std::cell::RefCell;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// A canvas's 2-D context, seen only to measure text (web-sys's measureText needs its TextMetrics feature).
    type Context;
    #[wasm_bindgen(method, setter = font)]
    fn set_font(this: &Context, font: &str);
    #[wasm_bindgen(method, js_name = measureText)]
    fn measure_text(this: &Context, text: &str) -> Advance;
    /// The part of a `TextMetrics` read here.
    type Advance;
    #[wasm_bindgen(method, getter)]
    fn width(this: &Advance) -> f64;
}

thread_local! {
    /// A canvas's 2-D context that only measures (none where there is no document).
    static CONTEXT: Option<Context> = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("canvas").ok())
        .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        .and_then(|c| c.get_context("2d").ok().flatten())
        .map(JsCast::unchecked_into);
    /// The height of a line of each font measured (by its canvas font string).
    static HEIGHTS: RefCell<HashMap<String, u32>> = RefCell::new(HashMap::new());
}

/// A backend whose texts are measured by [`text_size`]; everything else goes to `B`.
pub struct Measured<B>(pub B);

/// The width and height in pixels of `text` in `style`'s font: measureText's width, rounded (None where there is no
/// document), and the line height of the font, measured once with plotters' span.
fn text_size<S: BackendTextStyle>(text: &str, style: &S) -> Option<(u32, u32)> {
    let (family, font_style, size) = (style.family(), style.style(), style.size());
    let font = format!("{} {}px {}", font_style.as_str(), size, family.as_str());
    let width = CONTEXT.with(|c| {
        c.as_ref().map(|c| {
            c.set_font(&font);
            c.measure_text(text).width().round().max(0.0) as u32
        })
    })?;
    let height = HEIGHTS.with(|h| h.borrow().get(&font).copied()).or_else(|| {
        let line = line_height(family, font_style, size)?;
        HEIGHTS.with(|h| h.borrow_mut().insert(font, line));
        Some(line)
    })?;
    Some((width, height))
}

/// The height of a line of the font, as plotters' web font measures it (a span on the page, laid out once).
fn line_height(family: FontFamily, style: FontStyle, size: f64) -> Option<u32> {
    FontDesc::new(family, size, style).layout_box("Hg").ok().map(|((_, top), (_, bottom))| (bottom - top).max(0) as u32)
}

impl<B: DrawingBackend> DrawingBackend for Measured<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, path: I, style: &S) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(&mut self, center: BackendCoord, radius: u32, style: &S, fill: bool) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, vert: I, style: &S) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }
    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_text(text, style, pos)
    }
    fn estimate_text_size<S: BackendTextStyle>(&self, text: &str, style: &S) -> Result<(u32, u32), DrawingErrorKind<B::ErrorType>> {
        match text_size(text, style) {
            Some(size) => Ok(size),
            None => self.0.estimate_text_size(text, style),
        }
    }
    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }
}
