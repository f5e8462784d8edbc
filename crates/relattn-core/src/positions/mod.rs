//! Position schemes: which row of a relative table each (query, key) pair reads, one module per scheme.
//!
//! - [`absolute`]: sinusoids added to x before the projections (the baseline: no relative term);
//! - [`table`]: distances j − i, the rows a table covers ([`RelTable`]) and what lies beyond them ([`Edge`]);
//! - [`shaw`]: Shaw et al. 2018's gather of `Q Tᵀ`, value buckets and the materialized (Lq, Lk, d_head) tensors;
//! - [`music`]: the Music Transformer's skew (Huang et al. 2018), masked and unmasked;
//! - [`rope`]: rotary embeddings (Su et al. 2021), which rotate q and k and add no term of their own;
//! - [`alibi`]: ALiBi's per-head linear penalty on the distance (Press et al. 2022);
//! - [`t5`]: T5's learned scalar per bucket of distances (Raffel et al. 2020);
//! - [`deberta`]: DeBERTa's disentangled attention (He et al. 2021): content-to-position and position-to-content terms;
//! - [`bert_relative`]: BERT's relative_key and relative_key_query (Shaw's a^K unclipped, and Huang et al. 2020's key term);
//! - [`transformer_xl`]: Transformer-XL / XLNet (Dai et al. 2019): biases u and v, projected sinusoids, `rel_shift`, XLNet's segment term.
//!
//! [`Method`] names the schemes and [`Scheme`] is one with its options: their methods are the one place that says what each scheme is made of, and
//! [`relative_logits`] and [`Scheme::distance_bias`] compute each scheme's term, so the rest of the crate asks rather than matches.

pub mod absolute;
pub mod alibi;
pub mod bert_relative;
pub mod deberta;
pub mod music;
pub mod rope;
pub mod shaw;
pub mod t5;
pub mod table;
pub mod transformer_xl;

use crate::core::matmul::matmul;
use crate::error::{Error, Result};
use crate::stage::{PairLabels, Stage, StageText, LOGITS_TITLE};
use bert_relative::BertRelative;
use deberta::Deberta;
use music::SkewSteps;
use ndarray::{s, Array1, Array2, ArrayView2, Zip};
use rope::Rope;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use t5::Buckets;
use table::{distance, Edge, QueryRows, RelTable};
use transformer_xl::TransformerXl;

/// Which relative attention (in files and messages by its lowercase name: "shaw", "music", "rope", …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum Method {
    /// Shaw, Uszkoreit & Vaswani 2018: tables w^K, w^V of 2k+1 rows indexed by clip(j − i, k) + k.
    Shaw,
    /// Huang et al. 2018: a table E_r of relative embeddings, turned into absolute positions by the skew.
    Music,
    /// Su et al. 2021: q and k rotated by angles proportional to their positions; no table, no added term.
    Rope,
    /// Press et al. 2022: −m_h·|j − i| (or m_h·(j − i) causal) added to the scaled logits; one slope per head.
    Alibi,
    /// Raffel et al. 2020: a learned scalar per head and bucket of j − i, added to the scaled logits.
    T5,
    /// Vaswani et al. 2017: sinusoids added to x before the projections; no position term in attention.
    Absolute,
    /// He et al. 2021 (DeBERTa): c2p q_i·K_r[r(i − j)] and p2c k_j·Q_r[r(i − j)] added, scaled by 1/√(3·d_head).
    Deberta,
    /// BERT's relative_key (Shaw's a^K, q_i·A[i − j + P − 1], unclipped) and relative_key_query (Huang et al. 2020:
    /// k_j·A[i − j + P − 1] added), one table A of 2P − 1 rows for every head, scaled by 1/√d_head.
    #[cfg_attr(feature = "serde", serde(rename = "bert_relative"))]
    BertRelative,
    /// Dai et al. 2019 (Transformer-XL, as XLNet): (q_i + u)·k_j + (q_i + v)·R[i − j]W_R (+ XLNet's segment term),
    /// the position term moved into place by `rel_shift`, scaled by 1/√d_head.
    #[cfg_attr(feature = "serde", serde(rename = "transformer_xl"))]
    TransformerXl,
}

impl Method {
    /// Every scheme, in the order the page and the tables show them: the baseline, then by year.
    pub const ALL: [Method; 9] =
        [Method::Absolute, Method::Shaw, Method::Music, Method::Rope, Method::Alibi, Method::T5, Method::Deberta, Method::BertRelative, Method::TransformerXl];

    /// The scheme's name in files, messages and on the command line (serde's lowercase of the variant: tested).
    pub fn name(self) -> &'static str {
        match self {
            Method::Shaw => "shaw",
            Method::Music => "music",
            Method::Rope => "rope",
            Method::Alibi => "alibi",
            Method::T5 => "t5",
            Method::Absolute => "absolute",
            Method::Deberta => "deberta",
            Method::BertRelative => "bert_relative",
            Method::TransformerXl => "transformer_xl",
        }
    }

    /// The scheme's tables under the names a scenario file gives them: the logits' table (Shaw's w^K as
    /// `rel_k`, the Music Transformer's `e_r`, ALiBi's slopes, T5's bias per bucket) and the values' table, if
    /// the scheme has one (Shaw's `rel_v`); DeBERTa's K_r (its Q_r is [`Method::array_names`]'s own). RoPE and
    /// absolute positions have none (the name is never read).
    pub fn table_names(self) -> (&'static str, Option<&'static str>) {
        match self {
            Method::Shaw => ("rel_k", Some("rel_v")),
            Method::Music => ("e_r", None),
            Method::Rope => ("", None),
            Method::Alibi => ("alibi_slopes", None),
            Method::T5 => ("t5_bias", None),
            Method::Absolute => ("", None),
            Method::Deberta => ("deberta_k_r", None),
            Method::BertRelative => ("distance_embedding", None),
            Method::TransformerXl => ("xl_w_r", None),
        }
    }

    /// Every array of a scenario file the scheme reads beside the layer's (x, the projections, the key mask):
    /// its tables ([`Method::table_names`]), RoPE's given cos and sin, absolute positions' given vectors.
    pub fn array_names(self) -> Vec<&'static str> {
        let (logits, values) = self.table_names();
        let own: &[&'static str] = match self {
            Method::Rope => &["rope_cos", "rope_sin"],
            Method::Absolute => &["positions"],
            Method::Deberta => &["deberta_q_r"],
            Method::TransformerXl => &["xl_u", "xl_v", "xl_s", "xl_seg_embed", "segment_ids"],
            _ => &[],
        };
        [logits].into_iter().chain(values).filter(|t| !t.is_empty()).chain(own.iter().copied()).collect()
    }

    /// Whether the scheme reads the layer option `name` (every option but the scheme-specific ones: `clip`,
    /// `relative_values`, `per_head_tables`, `edge`, RoPE's, T5's, `positions_in_x`), from its own predicates.
    pub fn reads_option(self, name: &str) -> bool {
        match name {
            "clip" => self.has_vector_table() || self.shifts(),
            "relative_values" => self.has_value_term(),
            // Transformer-XL's tables are each head's (its W_R columns and biases): no choice to make.
            "per_head_tables" => self.has_index() && !self.shifts(),
            "edge" => self.skews(),
            "rope_base" | "rope_fraction" | "rope_layout" | "rope_scale" => self.rotates(),
            "t5_buckets" | "t5_max_distance" => self.buckets(),
            "position_buckets" | "max_relative_positions" | "deberta_terms" => self.disentangles(),
            "max_position" | "bert_terms" => self == Method::BertRelative,
            "segments" => self.shifts(),
            "positions_in_x" => self.adds_to_input(),
            _ => true,
        }
    }

    /// Whether the scheme's table holds vectors q is multiplied with (Shaw's w^K, E_r): its rows have d_head
    /// columns and its term is added before the scale. Otherwise its rows are scalars (a slope, a bias per
    /// bucket; RoPE has no rows).
    pub fn has_vector_table(self) -> bool {
        matches!(self, Method::Shaw | Method::Music)
    }

    /// Whether the scheme's table is one fixed slope per head (ALiBi), shown whole as the `slopes` stage.
    pub fn has_slopes(self) -> bool {
        self == Method::Alibi
    }

    /// Whether the scheme adds a bias that depends on j − i alone, after the scale (ALiBi, T5).
    pub fn adds_distance_bias(self) -> bool {
        matches!(self, Method::Alibi | Method::T5)
    }

    /// Whether the scheme sorts j − i into buckets, exact near and log-spaced far (T5).
    pub fn buckets(self) -> bool {
        self == Method::T5
    }

    /// Whether the scheme adds DeBERTa's disentangled terms (c2p, p2c), each its own stage, from a table of
    /// [K_r | Q_r] rows that the query's and the key's content both read.
    pub fn disentangles(self) -> bool {
        self == Method::Deberta
    }

    /// Whether the scheme's relative logits are a sum of terms, each its own stage (`c2p`, `p2c`), read at the row of
    /// i − j from the small products of Q and of K with its table: DeBERTa's c2p and p2c, BERT's query term
    /// q_i·a_ij and key term k_j·a_ij. The fused forward reads them by row; the GPU has no kernel for them.
    pub fn has_term_stages(self) -> bool {
        matches!(self, Method::Deberta | Method::BertRelative)
    }

    /// Whether the scheme is Transformer-XL's: biases u and v on the query, a position term moved into place by
    /// `rel_shift` (its own stages before and after), XLNet's segment term.
    pub fn shifts(self) -> bool {
        self == Method::TransformerXl
    }

    /// Whether the scheme rotates q and k (RoPE) instead of adding a term.
    pub fn rotates(self) -> bool {
        self == Method::Rope
    }

    /// Whether the scheme has a relative-logits stage (a term added to the logits): all but RoPE and absolute
    /// positions.
    pub fn has_relative_term(self) -> bool {
        !matches!(self, Method::Rope | Method::Absolute)
    }

    /// The stage that holds the scheme's own term for a pair, a function of j − i: its relative logits (Shaw's
    /// a^K term, the Music Transformer's, ALiBi's and T5's bias) or RoPE's kernel; none for absolute positions,
    /// which have no term in attention.
    pub fn term_stage(self) -> Option<Stage> {
        if self.has_relative_term() {
            Some(Stage::RelativeLogits)
        } else if self.rotates() {
            Some(Stage::RopeKernel)
        } else {
            None
        }
    }

    /// Whether positions enter as vectors added to x before the projections (absolute sinusoids).
    pub fn adds_to_input(self) -> bool {
        self == Method::Absolute
    }

    /// Whether the scheme reads a row of a learned table per pair, shown as the index matrix: Shaw's and E_r's
    /// rows, T5's buckets, DeBERTa's bucketed rows, BERT's distance rows, Transformer-XL's rows of r (the table is the
    /// `rel_k` stage, and parameters of a trained model).
    pub fn has_index(self) -> bool {
        matches!(self, Method::Shaw | Method::Music | Method::T5 | Method::Deberta | Method::BertRelative | Method::TransformerXl)
    }

    /// Whether the scheme can add a value term (Shaw's a^V: w^V at clip(j − i), weighted into the output).
    pub fn has_value_term(self) -> bool {
        self.table_names().1.is_some()
    }

    /// What the scheme says in a stage it shapes (its title, formulas, what to notice, its axes), masked or
    /// not; `None` for a stage it leaves as every layer has it (layer/stage_meta.rs says those). Each scheme's
    /// module writes its own ([`shaw::describe`], [`music::describe`], …).
    pub fn describe(self, stage: Stage, causal: bool) -> Option<StageText> {
        match self {
            Method::Shaw => shaw::describe(stage),
            Method::Music => music::describe(stage, causal),
            Method::Rope => rope::describe(stage),
            Method::Alibi => alibi::describe(stage, causal),
            Method::T5 => t5::describe(stage),
            Method::Absolute => absolute::describe(stage),
            Method::Deberta => deberta::describe(stage),
            Method::BertRelative => bert_relative::describe(stage),
            Method::TransformerXl => transformer_xl::describe(stage, causal),
        }
    }

    /// Whether its relative logits come from the skew (Q·E_rᵀ padded, reshaped and sliced: the Music
    /// Transformer), whose steps a trace keeps.
    pub fn skews(self) -> bool {
        self == Method::Music
    }

    /// How the tooltip of a (query i, key j) cell names the pair's parts (k: Shaw's clip). Each scheme's
    /// module writes its own ([`shaw::pair_labels`], …).
    pub fn pair_labels(self, k: usize) -> PairLabels {
        match self {
            Method::Shaw => shaw::pair_labels(k),
            Method::Music => music::pair_labels(),
            Method::Rope => rope::pair_labels(),
            Method::Alibi => alibi::pair_labels(),
            Method::T5 => t5::pair_labels(),
            Method::Absolute => absolute::pair_labels(),
            Method::Deberta => deberta::pair_labels(),
            Method::BertRelative => bert_relative::pair_labels(),
            Method::TransformerXl => transformer_xl::pair_labels(),
        }
    }

    /// The short name people use (the page's method select and the figures' titles).
    pub fn label(self) -> &'static str {
        match self {
            Method::Shaw => "Shaw et al. 2018",
            Method::Music => "Music Transformer",
            Method::Rope => "RoPE",
            Method::Alibi => "ALiBi",
            Method::T5 => "T5 buckets",
            Method::Absolute => "absolute (sinusoidal)",
            Method::Deberta => "DeBERTa",
            Method::BertRelative => "BERT relative",
            Method::TransformerXl => "Transformer-XL",
        }
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Method::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| Error::invalid("method", format!("'{s}'"), Method::ALL.map(Method::name).join(", ")))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The logits of a scheme that adds its vector term before the scale (Shaw's a^K, the Music Transformer's
/// S^rel), in the scheme's own TeX.
fn logits_with_relative_term(tex: &'static str) -> StageText {
    StageText::new(
        LOGITS_TITLE,
        "(q_i·k_j + relative_ij) / √d_head, −∞ where masked",
        tex,
        "Content and relative terms added and scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
    )
}

/// The logits of a scheme that adds a bias of the distance after the scale (ALiBi, T5).
const LOGITS_WITH_BIAS: StageText = StageText::new(
    LOGITS_TITLE,
    "q_i·k_j / √d_head + bias_ij, −∞ where masked",
    r"e_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_h}} + b_{ij} \quad (-\infty \text{ where masked})",
    "The content logits scaled by 1/√d_head plus the bias, which is not scaled; masked cells are −∞ and get weight 0.",
);

/// A scheme with its options: everything the positions of a pair decide. Its methods and [`Method`]'s are the one
/// place that says what each scheme is made of: the distances its table covers, the tables a scenario gives it,
/// whether it has a value term, whether its relative logits come from the skew, whether it adds a bias of the
/// distance after the scale or rotates q and k.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scheme {
    pub method: Method,
    /// k: Shaw's tables cover −k..=k; E_r covers −k..=0 (causal) or −k..=k.
    pub clip: usize,
    pub causal: bool,
    /// What a distance beyond E_r reads.
    pub edge: Edge,
    pub rope: Rope,
    pub buckets: Buckets,
    pub deberta: Deberta,
    pub bert: BertRelative,
    pub xl: TransformerXl,
}

impl Scheme {
    /// The vector table the relative logits gather from: Shaw's 2k+1 rows for −k..=k (clipped beyond); the
    /// Music Transformer's k+1 rows for −k..=0 (causal) or 2k+1 for −k..=k, `edge` beyond; for the other
    /// schemes an empty table, which no pair reads.
    pub fn layout(&self) -> RelTable {
        match (self.method, self.causal) {
            (Method::Shaw, _) => RelTable::shaw(self.clip),
            (Method::Music, true) => RelTable::music_causal(self.clip + 1, self.edge),
            (Method::Music, false) => RelTable::music_bidirectional(2 * self.clip + 1, self.edge),
            _ => RelTable::empty(),
        }
    }

    /// Rows of the scheme's table: [`Scheme::layout`]'s for Shaw and Music, one slope for ALiBi, the buckets
    /// for T5, none for RoPE.
    pub fn table_rows(&self) -> usize {
        match self.method {
            Method::Shaw | Method::Music => self.layout().rows(),
            Method::Rope | Method::Absolute => 0,
            Method::Alibi => 1,
            Method::T5 => self.buckets.count,
            Method::Deberta => self.deberta.rows(),
            Method::BertRelative => self.bert.rows(),
            Method::TransformerXl => transformer_xl::positions(self.clip, self.causal) + transformer_xl::BIAS_ROWS,
        }
    }

    /// [`Scheme::table_rows`] in checked 64-bit arithmetic (`None` past u64): what memory estimates count.
    pub fn table_rows_u64(&self) -> Option<u64> {
        let k = self.clip as u64;
        match (self.method, self.causal) {
            (Method::Music, true) => k.checked_add(1),
            (Method::Shaw | Method::Music, _) => k.checked_mul(2)?.checked_add(1),
            _ => Some(self.table_rows() as u64),
        }
    }

    /// [`Scheme::table_rows`] as a formula: "2k+1", "k+1" for the causal Music Transformer, "1", "buckets".
    pub fn rows_formula(&self) -> &'static str {
        match (self.method, self.causal) {
            (Method::Music, true) => "k+1",
            (Method::Shaw | Method::Music, _) => "2k+1",
            (Method::Rope | Method::Absolute, _) => "0",
            (Method::Alibi, _) => "1",
            (Method::T5, _) => "buckets",
            (Method::Deberta, _) => "2S",
            (Method::BertRelative, _) => "2P−1",
            (Method::TransformerXl, true) => "k+1+5",
            (Method::TransformerXl, false) => "2k+1+5",
        }
    }

    /// Columns of each table row: d_head for a vector table, 1 for a scalar one, 2·d_head for DeBERTa's [K_r | Q_r].
    pub fn table_width(&self, d_head: usize) -> usize {
        if self.method.disentangles() {
            2 * d_head
        } else if !matches!(self.method, Method::Alibi | Method::T5) {
            d_head
        } else {
            1
        }
    }

    /// Refuses options outside their ranges, naming them (RoPE's with d_head, T5's buckets).
    pub fn check(&self, d_head: usize) -> Result<()> {
        match self.method {
            Method::Rope => self.rope.check(d_head),
            Method::T5 => self.buckets.check(self.causal),
            Method::Deberta => self.deberta.check(),
            Method::BertRelative => self.bert.check(),
            Method::TransformerXl => self.xl.check(),
            _ => Ok(()),
        }
    }

    /// Refuses a sequence of `n` positions the scheme has no rows for, naming the option (BERT's `max_position`:
    /// its table holds |i − j| < P only).
    pub fn check_length(&self, n: usize) -> Result<()> {
        match self.method {
            Method::BertRelative => self.bert.check_length(n),
            _ => Ok(()),
        }
    }

    /// The table row a pair at distance d reads (its bucket for T5), `None` for none (a zero vector, or no
    /// table).
    pub fn row(&self, d: isize) -> Option<usize> {
        match self.method {
            Method::T5 => Some(self.buckets.bucket(d, self.causal)),
            Method::Deberta => Some(self.deberta.row(-d)),
            Method::BertRelative => self.bert.row(-d),
            Method::TransformerXl => Some(transformer_xl::row(self.clip, self.causal, -d)),
            Method::Alibi | Method::Rope | Method::Absolute => None,
            _ => self.layout().row(d),
        }
    }

    /// The (queries, Lk) matrix of table rows (T5: buckets) of the query rows `queries` of Lq, −1 where the
    /// pair reads nothing: the index stage.
    pub fn row_matrix(&self, queries: Range<usize>, lq: usize, lk: usize) -> Array2<i64> {
        table::by_distance(queries, lq, lk, |d| self.row(d).map_or(-1, |r| r as i64))
    }

    /// The keys of query i (of Lq, against Lk) that read table row r: one range (reverse linking).
    pub fn readers(&self, r: usize, i: usize, lq: usize, lk: usize) -> Range<usize> {
        match self.method {
            Method::T5 => {
                let off = i as isize + lk as isize - lq as isize;
                let clamp = |j: isize| j.clamp(0, lk as isize) as usize;
                match self.buckets.distances_of(r, self.causal, lq.max(lk)) {
                    Some((lo, hi)) => clamp(off + lo)..clamp(off + hi + 1),
                    None => 0..0,
                }
            }
            Method::Deberta => deberta::readers(&self.deberta, r, i, lq, lk),
            Method::BertRelative => bert_relative::readers(&self.bert, r, i, lq, lk),
            Method::TransformerXl => transformer_xl::readers(self.clip, self.causal, r, i, lq, lk),
            _ => self.layout().readers(r, i, lq, lk),
        }
    }

    /// Every query's [`Scheme::readers`] of table row r in a self-attention layer of n positions, as the page
    /// and the notebook widget take them: `[lo_0, hi_0, lo_1, hi_1, …]`, 2n numbers.
    pub fn reader_runs(&self, r: usize, n: usize) -> Vec<u32> {
        (0..n).map(|i| self.readers(r, i, n, n)).flat_map(|keys| [keys.start as u32, keys.end as u32]).collect()
    }

    /// The bias by distance of a scheme that adds one after the scale (ALiBi, T5), from the head's table
    /// (ALiBi: its slope (1, 1); T5: its bias per bucket (B, 1)): element d + Lk − 1 holds the bias at
    /// distance d, for d in −(Lk − 1)..=Lq − 1 (every distance of Lq queries aligned to the last of Lk
    /// keys). `None` for the other schemes.
    pub fn distance_bias(&self, table: ArrayView2<f32>, lq: usize, lk: usize) -> Option<Array1<f32>> {
        let at = |idx: usize| idx as isize - (lk as isize - 1);
        match self.method {
            Method::Alibi => Some(Array1::from_shape_fn(lq + lk - 1, |x| alibi::bias(table[[0, 0]], at(x), self.causal))),
            Method::T5 => Some(Array1::from_shape_fn(lq + lk - 1, |x| table[[self.buckets.bucket(at(x), self.causal), 0]])),
            _ => None,
        }
    }

    /// The d of the logits' usual scale 1/√d: d_head, or d_head · (1 + the position terms) for DeBERTa (Hugging
    /// Face's `scale_factor`: 3·d_head with c2p and p2c), whose position terms are added before the scale.
    pub fn scale_width(&self, d_head: usize) -> usize {
        if self.method.disentangles() {
            d_head * (1 + self.deberta.terms.count())
        } else {
            d_head
        }
    }

    /// Whether its relative logits come from the skew ([`Method::skews`]).
    pub fn skews(&self) -> bool {
        self.method.skews()
    }

    /// Columns of the product Q·E_rᵀ the skew starts from for n queries (E_r cut or padded to the sequence: n
    /// causal, 2n − 1 bidirectional), `None` past u64; 0 for a scheme without the skew.
    pub fn skew_columns(&self, n: u64) -> Option<u64> {
        match (self.skews(), self.causal) {
            (false, _) => Some(0),
            (true, true) => Some(n),
            (true, false) => Some(n.checked_mul(2)?.saturating_sub(1)),
        }
    }

    /// Whether its relative logits are 0 above the diagonal: the masked skew leaves the next row's values
    /// there, masked anyway, and shown as 0 (the causal Music Transformer).
    pub fn zeroes_above_diagonal(&self) -> bool {
        self.skews() && self.causal
    }
}

/// The relative logits S (rows, Lk) of the query rows `rows` of `q` (Lq, d_head) against Lk keys, with the
/// scheme's vector table (R, d_head) ([`Scheme::layout`]), each scheme its own way: Shaw's gather of
/// `q · T[row]`; the Music Transformer's skew (its steps into `skew`), or the gather for a cached decoding
/// step (Lq < Lk: the skew needs a square (L, L) product); with `materialized`, the seeds' (rows, Lk, d_head)
/// tensor of table rows. Every way gives the same numbers. For ALiBi and T5 it is the bias matrix
/// ([`Scheme::distance_bias`] placed at (i, j)), added after the scale; RoPE has none (zeros).
pub fn relative_logits(
    scheme: &Scheme,
    materialized: bool,
    q: ArrayView2<f32>,
    table: ArrayView2<f32>,
    lk: usize,
    rows: Range<usize>,
    skew: Option<&mut Option<SkewSteps>>,
) -> Array2<f32> {
    let lq = q.nrows();
    let block = QueryRows { first: rows.start, lq };
    let layout = scheme.layout();
    if let Some(bias) = scheme.distance_bias(table, lq, lk) {
        return Array2::from_shape_fn((rows.len(), lk), |(i, j)| bias[(distance(block.query(i), j, lq, lk) + lk as isize - 1) as usize]);
    }
    if !scheme.method.has_vector_table() {
        return Array2::zeros((rows.len(), lk));
    }
    let q_rows = q.slice(s![rows.clone(), ..]);
    let mut rel = if materialized {
        shaw::relative_logits_materialized(q_rows, table, layout, lk, block)
    } else if !scheme.skews() || lq != lk {
        shaw::relative_logits(q_rows, table, layout, lk, block)
    } else {
        let padded = music::table_for_length(table, layout, lq, scheme.causal);
        let read = music::qer_rows(lq, scheme.causal, rows.clone());
        let qer = matmul(q.slice(s![read.clone(), ..]), padded.t());
        let steps = music::skew_rows(qer.view(), read.start, scheme.causal, rows);
        let sliced = steps.sliced.clone();
        if let Some(kept) = skew {
            *kept = Some(steps);
        }
        sliced
    };
    if scheme.zeroes_above_diagonal() {
        Zip::indexed(&mut rel).for_each(|(i, j), s| {
            if distance(block.query(i), j, lq, lk) > 0 {
                *s = 0.0;
            }
        });
    }
    rel
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each scheme's tooltip labels name just the parts it has, each with one place for its value.
    #[test]
    fn pair_labels_name_the_parts_each_scheme_has() {
        for m in Method::ALL {
            let said = m.pair_labels(3);
            assert_eq!(said.relative.is_some(), m.has_relative_term(), "{m}");
            assert_eq!(said.row.is_some(), m.has_index(), "{m}");
            for label in [Some(said.content), said.relative, said.row.as_deref()].into_iter().flatten() {
                assert_eq!(label.matches("{}").count(), 1, "{m}: {label}");
            }
        }
        assert_eq!(Method::Shaw.pair_labels(3).row.unwrap(), "table row clip(j − i, 3) + 3 = {}");
    }

    /// A scheme's name is serde's (files and messages) and parses back.
    #[test]
    #[cfg(feature = "serde")]
    fn names_are_serdes_and_parse_back() {
        for m in Method::ALL {
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{}\"", m.name()));
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
        }
        assert!("relative".parse::<Method>().unwrap_err().to_string().contains("absolute, shaw, music, rope, alibi, t5"));
    }
}
