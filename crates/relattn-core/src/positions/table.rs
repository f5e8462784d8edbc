//! Relative positions: which row of a relative table a (query, key) pair reads.
//!
//! For Lq queries and Lk keys the queries are aligned to the *last* Lq keys (incremental decoding),
//! so query `i` sits at absolute position `i + (Lk − Lq)` and the distance of pair (i, j) is
//!
//! ```text
//! d_ij = j − (i + Lk − Lq)            (key minus query, tensor2tensor's direction)
//! ```
//!
//! A [`RelTable`] names the distances its rows cover, `min..=max`, and what happens outside them:
//! Shaw et al. clip to the edge row (`clip(d, k) + k`), tensor2tensor's Music Transformer reads a zero vector.

use crate::error::{Error, Result};
use ndarray::Array2;
use std::ops::Range;
use std::str::FromStr;

/// What a distance outside a table's rows reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum Edge {
    /// Clamp to the nearest edge row (Shaw et al. 2018: `clip(d, k)`).
    Clip,
    /// Read a zero vector (tensor2tensor pads the Music Transformer's table with zeros).
    Zero,
}

/// The rows of a relative table: row `r` holds distance `min + r`, for `r` in `0..=max − min`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelTable {
    pub min: isize,
    pub max: isize,
    pub edge: Edge,
}

impl RelTable {
    /// Shaw et al.: 2k+1 rows for distances −k..=k, index `clip(d, k) + k`.
    pub fn shaw(k: usize) -> Self {
        RelTable { min: -(k as isize), max: k as isize, edge: Edge::Clip }
    }

    /// Music Transformer, causal: `rows` rows for distances −(rows−1)..=0.
    pub fn music_causal(rows: usize, edge: Edge) -> Self {
        RelTable { min: 1 - rows as isize, max: 0, edge }
    }

    /// Music Transformer, bidirectional: `rows` = 2m+1 rows for distances −m..=m.
    pub fn music_bidirectional(rows: usize, edge: Edge) -> Self {
        let m = (rows / 2) as isize;
        RelTable { min: -m, max: m, edge }
    }

    /// No rows: no distance reads anything (the schemes without a vector table).
    pub fn empty() -> Self {
        RelTable { min: 0, max: -1, edge: Edge::Zero }
    }

    /// Number of rows, `max − min + 1`.
    pub fn rows(&self) -> usize {
        (self.max - self.min + 1) as usize
    }

    /// The row that distance `d` reads, or `None` for a zero vector.
    #[inline]
    pub fn row(&self, d: isize) -> Option<usize> {
        if d >= self.min && d <= self.max {
            Some((d - self.min) as usize)
        } else {
            match self.edge {
                Edge::Clip => Some((d.clamp(self.min, self.max) - self.min) as usize),
                Edge::Zero => None,
            }
        }
    }
}

/// The keys of one query row split by the table row they read: keys in `left` read the row of distances
/// below `min`, keys in `mid` read consecutive rows from `mid_row`, keys in `right` the row beyond `max`.
/// With [`Edge::Clip`] `left` and `right` read the first and last rows, with [`Edge::Zero`] nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segments {
    pub left: std::ops::Range<usize>,
    pub mid: std::ops::Range<usize>,
    pub mid_row: usize,
    pub right: std::ops::Range<usize>,
}

impl RelTable {
    /// How the Lk keys of query `i` (of Lq) split into [`Segments`].
    pub fn segments(&self, i: usize, lq: usize, lk: usize) -> Segments {
        let off = i as isize + lk as isize - lq as isize;
        let clamp = |j: isize| j.clamp(0, lk as isize) as usize;
        let (lo, hi) = (clamp(off + self.min), clamp(off + self.max + 1));
        let mid_row = if lo < hi { (lo as isize - off - self.min) as usize } else { 0 };
        Segments { left: 0..lo, mid: lo..hi, mid_row, right: hi..lk }
    }
}

impl RelTable {
    /// The keys of query `i` (of Lq, against Lk keys) that read row `r`: one range, since the row a key reads
    /// never decreases as the key moves right. Row `r` holds distance `min + r`; with [`Edge::Clip`] the
    /// first row also holds every distance below `min` and the last every distance above `max`. Empty when
    /// no key of `i` reads `r`, or `r` is not a row. Reverse linking: the pairs that read a pinned table row.
    pub fn readers(&self, r: usize, i: usize, lq: usize, lk: usize) -> Range<usize> {
        if r >= self.rows() {
            return 0..0;
        }
        let clip = self.edge == Edge::Clip;
        let d = self.min + r as isize;
        let off = i as isize + lk as isize - lq as isize;
        let clamp = |j: isize| j.clamp(0, lk as isize) as usize;
        let lo = if clip && d == self.min { 0 } else { clamp(off + d) };
        let hi = if clip && d == self.max { lk } else { clamp(off + d + 1) };
        lo..hi.max(lo)
    }
}

/// A block of query rows of an (Lq, Lk) attention: row `r` of the block is query `first + r` of `lq`. Every
/// function here that takes a query index takes it in the whole (`first + r`), so a block's relative
/// positions are the whole's; [`QueryRows::all`] is the whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryRows {
    pub first: usize,
    pub lq: usize,
}

impl QueryRows {
    /// All `lq` queries.
    pub fn all(lq: usize) -> Self {
        QueryRows { first: 0, lq }
    }

    /// The query that row `r` of the block is.
    #[inline]
    pub fn query(&self, r: usize) -> usize {
        self.first + r
    }
}

/// Which keys a query may attend to, padding aside: under the causal mask those at distance d = j − i ≤ 0;
/// within a window of w those at |d| < w (Mistral's and Gemma's sliding window: with the causal mask, the query
/// and the w − 1 keys before it; ModernBERT's local attention: w − 1 on each side); in chunks of c those in the
/// query's own chunk, ⌊j / c⌋ = ⌊i / c⌋ (Llama 4's chunked attention); every one of them that is set.
/// Always one run of consecutive keys, [`Reach::keys`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Reach {
    pub causal: bool,
    pub window: Option<usize>,
    pub chunk: Option<usize>,
}

impl Reach {
    /// Query `i`'s keys, for Lq queries aligned to the last of Lk keys (query i at position i + Lk − Lq).
    #[inline]
    pub fn keys(self, i: usize, lq: usize, lk: usize) -> Range<usize> {
        let end = if self.causal { visible_keys(i, lq, lk) } else { lk };
        let at = i as isize + lk as isize - lq as isize;
        let within = |p: isize| p.clamp(0, end as isize) as usize;
        let keys = match self.window {
            Some(w) => within(at - w as isize + 1)..within(at + w as isize),
            None => 0..end,
        };
        match self.chunk {
            Some(c) => {
                let first = at.div_euclid(c as isize) * c as isize;
                let end = keys.end.min(within(first + c as isize));
                keys.start.max(within(first)).min(end)..end
            }
            None => keys,
        }
    }

    /// Whether query `i` may attend to key `j` of a square (n, n) attention: [`Reach::keys`] with Lq = Lk.
    #[inline]
    pub fn sees(self, i: usize, j: usize) -> bool {
        // The same rule as `keys`, read for one pair: any square attention holding both positions.
        let n = i.max(j) + 1;
        self.keys(i, n, n).contains(&j)
    }
}

/// The end of query `i`'s visible keys under the causal mask: keys j ≤ i + Lk − Lq (distance ≤ 0) are
/// visible, so they are `0..visible_keys(i, lq, lk)`.
#[inline]
pub fn visible_keys(i: usize, lq: usize, lk: usize) -> usize {
    (i + lk + 1).saturating_sub(lq).min(lk)
}

/// The queries of Lq = Lk = n that see no key: every key they may attend to (j ≤ i when causal) is padding
/// (`key_mask` false), as the first rows of a left-padded causal sequence. Their weights are 0 and their
/// output the output bias alone (relattn's choice: Hugging Face's softmax spreads such a row evenly over the
/// masked keys instead); the figures and the trace say which rows they are.
pub fn unattended_rows(causal: bool, key_mask: &[bool]) -> Vec<usize> {
    match causal {
        // Causal: the queries before the first key that is not padding.
        true => (0..key_mask.iter().position(|&k| k).unwrap_or(key_mask.len())).collect(),
        false if key_mask.iter().any(|&k| k) => Vec::new(),
        false => (0..key_mask.len()).collect(),
    }
}

/// What a figure whose rows are queries says of the rows [`unattended_rows`] found ("" when none):
/// "rows 0–2, 5 see no key (all padding): weight 0".
pub fn unattended_note(rows: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &i in rows {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => runs.push((i, i)),
        }
    }
    let list: Vec<String> = runs.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}–{b}") }).collect();
    match rows.len() {
        0 => String::new(),
        1 => format!("row {} sees no key (all padding): weight 0", list[0]),
        _ => format!("rows {} see no key (all padding): weight 0", list.join(", ")),
    }
}

/// Distance `j − (i + Lk − Lq)` of query `i` to key `j`.
#[inline]
pub fn distance(i: usize, j: usize, lq: usize, lk: usize) -> isize {
    j as isize - (i as isize + lk as isize - lq as isize)
}

/// The (queries, Lk) matrix of distances `j − i` of the query rows `queries` of Lq (queries aligned to the
/// last keys; `0..lq`: the whole matrix).
pub fn distances(queries: Range<usize>, lq: usize, lk: usize) -> Array2<i64> {
    by_distance(queries, lq, lk, |d| d as i64)
}

/// The (queries, Lk) matrix of `of(distance(i, j, lq, lk))` for the query rows `queries` of Lq, `of` taken once
/// a distance: the distances of a row run from −(i + Lk − Lq) up by one, so each row is a window of one run of
/// every distance the rows see, shifted by one a row (a Toeplitz matrix).
pub fn by_distance<T: Copy + Default>(queries: Range<usize>, lq: usize, lk: usize, of: impl Fn(isize) -> T) -> Array2<T> {
    let mut m = Array2::default((queries.len(), lk));
    let Some(last) = queries.end.checked_sub(1).filter(|_| lk > 0 && !queries.is_empty()) else {
        return m;
    };
    // Every distance the rows see, from the last row's first to the first row's last.
    let least = distance(last, 0, lq, lk);
    let run: Vec<T> = (0..queries.len() + lk - 1).map(|t| of(least + t as isize)).collect();
    for (r, mut row) in m.rows_mut().into_iter().enumerate() {
        // Row i starts at distance −(i + Lk − Lq): `last − i` after the run's start.
        let start = queries.len() - 1 - r;
        row.assign(&ndarray::ArrayView1::from(&run[start..start + lk]));
    }
    m
}

/// The (queries, Lk) matrix of table rows of the query rows `queries` of Lq, `-1` where the pair reads a
/// zero vector. For Shaw's table this is `clip(j − i, k) + k`, in `0..=2k`.
pub fn row_matrix(queries: Range<usize>, lq: usize, lk: usize, table: RelTable) -> Array2<i64> {
    by_distance(queries, lq, lk, |d| table.row(d).map_or(-1, |r| r as i64))
}

impl FromStr for Edge {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "zero" => Ok(Edge::Zero),
            "clip" => Ok(Edge::Clip),
            _ => Err(Error::invalid("edge", format!("'{s}'"), "zero, clip")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sees` (read off `keys`) against the rule written out per pair: causal j ≤ i, window |j − i| < w, chunk
    /// ⌊j / c⌋ = ⌊i / c⌋, every combination over 20 positions.
    #[test]
    fn sees_is_the_rule_per_pair() {
        for causal in [false, true] {
            for window in [None, Some(1), Some(3), Some(30)] {
                for chunk in [None, Some(1), Some(4), Some(7)] {
                    let reach = Reach { causal, window, chunk };
                    for (i, j) in (0..20usize).flat_map(|i| (0..20usize).map(move |j| (i, j))) {
                        let rule = (!causal || j <= i) && window.is_none_or(|w| i.abs_diff(j) < w) && chunk.is_none_or(|c| i / c == j / c);
                        assert_eq!(reach.sees(i, j), rule, "{reach:?} ({i}, {j})");
                    }
                }
            }
        }
    }

    #[test]
    fn seed_004_lookup_table() {
        // ../shared/seeds/004: n = 4, k = 2.
        let expected = ndarray::arr2(&[[2, 3, 4, 4], [1, 2, 3, 4], [0, 1, 2, 3], [0, 0, 1, 2]]);
        assert_eq!(row_matrix(0..4, 4, 4, RelTable::shaw(2)), expected);
    }

    #[test]
    fn large_clip_never_clips() {
        let m = row_matrix(0..5, 5, 5, RelTable::shaw(9));
        assert_eq!(m[[0, 4]], 13);
        assert_eq!(m[[4, 0]], 5);
    }

    /// Each row a window of one run of distances: every cell is `of` its own distance, for queries longer
    /// and shorter than the keys, any rows of them, one row, one key and none.
    #[test]
    fn by_distance_is_each_cells_distance() {
        for (lq, lk) in [(5, 5), (3, 7), (7, 3), (1, 4), (4, 1), (0, 3), (3, 0)] {
            for queries in [0..lq, lq / 2..lq, 0..lq.min(1), lq..lq] {
                let of = |d: isize| d * 10 + 3;
                let direct = Array2::from_shape_fn((queries.len(), lk), |(i, j)| of(distance(queries.start + i, j, lq, lk)));
                assert_eq!(by_distance(queries.clone(), lq, lk, of), direct, "lq {lq}, lk {lk}, rows {queries:?}");
            }
        }
    }

    #[test]
    fn queries_align_to_last_keys() {
        // One query against three keys: it is the last position, so distances are −2, −1, 0.
        assert_eq!(distances(0..1, 1, 3), ndarray::arr2(&[[-2, -1, 0]]));
        // Rows 1..3 of a (4, 4) problem.
        assert_eq!(distances(1..3, 4, 4), ndarray::arr2(&[[-1, 0, 1, 2], [-2, -1, 0, 1]]));
    }

    #[test]
    fn segments_agree_with_rows() {
        for (lq, lk) in [(1, 1), (4, 4), (3, 9), (9, 3), (7, 7)] {
            for table in [RelTable::shaw(0), RelTable::shaw(2), RelTable::shaw(20), RelTable::music_causal(3, Edge::Zero)] {
                for i in 0..lq {
                    let s = table.segments(i, lq, lk);
                    assert_eq!((s.left.start, s.left.end, s.mid.end, s.right.end), (0, s.mid.start, s.right.start, lk));
                    assert!(s.mid_row + s.mid.len() <= table.rows(), "{table:?} lq {lq} lk {lk} i {i}: {s:?}");
                    for j in 0..lk {
                        let row = table.row(distance(i, j, lq, lk));
                        let edge = |r: usize| if table.edge == Edge::Clip { Some(r) } else { None };
                        let want = if s.left.contains(&j) {
                            edge(0)
                        } else if s.mid.contains(&j) {
                            Some(s.mid_row + j - s.mid.start)
                        } else {
                            edge(table.rows() - 1)
                        };
                        assert_eq!(row, want, "{table:?} lq {lq} lk {lk} ({i},{j})");
                    }
                }
            }
        }
    }

    #[test]
    fn readers_are_the_keys_that_read_the_row() {
        let tables = [RelTable::shaw(0), RelTable::shaw(2), RelTable::shaw(20), RelTable::music_causal(3, Edge::Zero), RelTable::music_causal(4, Edge::Clip)];
        let tables = tables.into_iter().chain([RelTable::music_bidirectional(5, Edge::Zero), RelTable::music_bidirectional(5, Edge::Clip)]);
        for table in tables {
            for (lq, lk) in [(1, 1), (4, 4), (3, 9), (9, 3), (7, 7)] {
                let rows = row_matrix(0..lq, lq, lk, table);
                for r in 0..table.rows() + 2 {
                    for i in 0..lq {
                        let want: Vec<usize> = (0..lk).filter(|&j| rows[[i, j]] == r as i64).collect();
                        let got: Vec<usize> = table.readers(r, i, lq, lk).collect();
                        assert_eq!(got, want, "{table:?} lq {lq} lk {lk} row {r} query {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn zero_edge_reads_nothing_outside() {
        let t = RelTable::music_causal(3, Edge::Zero);
        assert_eq!((t.row(-3), t.row(-2), t.row(0), t.row(1)), (None, Some(0), Some(2), None));
        let c = RelTable::music_causal(3, Edge::Clip);
        assert_eq!((c.row(-7), c.row(4)), (Some(0), Some(2)));
    }

    /// A query sees no key when every key up to it (causal) or every key (bidirectional) is padding.
    #[test]
    fn unattended_rows_are_the_queries_with_no_visible_key() {
        let left_padded = [false, false, true, true, false];
        assert_eq!(unattended_rows(true, &left_padded), vec![0, 1]);
        assert_eq!(unattended_rows(false, &left_padded), Vec::<usize>::new());
        assert_eq!(unattended_rows(false, &[false, false]), vec![0, 1]);
        assert_eq!(unattended_rows(true, &[true, false, false]), Vec::<usize>::new());
        assert_eq!(unattended_note(&[0, 1, 2, 5]), "rows 0–2, 5 see no key (all padding): weight 0");
        assert_eq!(unattended_note(&[3]), "row 3 sees no key (all padding): weight 0");
        assert_eq!(unattended_note(&[]), "");
    }
}
