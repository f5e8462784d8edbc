//! Figures that say whether four-part music holds together, for sampled continuations and for Bach's own chorales alike (issue #28's table), computed on the
//! chorale serialisation (4 tokens per 16th-note step: soprano, alto, tenor, bass; 0 a rest, else MIDI pitch `pitch_min + token − 1`). Each figure's
//! definition is on its field of [`MusicFigures`].

use crate::trained::chorales::VOICES;
use serde::Serialize;

/// Krumhansl & Kessler's (1982) probe-tone profiles, tonic first.
const MAJOR_PROFILE: [f64; 12] = [6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88];
const MINOR_PROFILE: [f64; 12] = [6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17];
/// Pitch classes of a key from its tonic: major; natural minor with the raised 7th.
const MAJOR_SCALE: [usize; 7] = [0, 2, 4, 5, 7, 9, 11];
const MINOR_SCALE: [usize; 8] = [0, 2, 3, 5, 7, 8, 10, 11];

/// One voice's pitches.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VoiceFigures {
    pub voice: &'static str,
    /// Lowest and highest sounding MIDI pitch, and the mean (`None` when the voice never sounds).
    pub lowest: Option<u8>,
    pub highest: Option<u8>,
    pub mean: Option<f64>,
}

/// The figures of one or more sequences, pooled (counts summed before dividing).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MusicFigures {
    pub sequences: usize,
    pub steps: usize,
    /// Adjacent voices out of order (S < A, A < T or T < B, both sounding), per step.
    pub crossings_per_step: f64,
    /// Steps where a voice's pitch differs from the step before.
    pub chord_changes: usize,
    /// Chord changes / (steps − 1).
    pub chord_changes_per_step: f64,
    /// Per 100 chord changes: pairs of voices, both sounding in both steps, both moving the same way, a perfect fifth (7 mod 12) apart
    /// before and after.
    pub parallel_fifths_per_100_changes: f64,
    /// The same for an octave or unison (0 mod 12).
    pub parallel_octaves_per_100_changes: f64,
    /// The share of sounding voice-steps whose pitch class is in the key that the Krumhansl–Kessler profiles find for the whole sequence
    /// (major: its 7 pitch classes; minor: the natural minor and its raised 7th, 8).
    pub key_fraction: f64,
    /// Per voice: lowest, highest and mean sounding pitch.
    pub voices: Vec<VoiceFigures>,
    /// 16th-note steps a note lasts (a note: a run of one pitch in one voice).
    pub mean_note_length: f64,
    /// The longest run of steps that repeats an earlier run exactly, without overlap, of any one sequence, in steps.
    pub longest_repeat: usize,
}

/// Counts of one sequence, summed over sequences.
#[derive(Default)]
struct Counts {
    steps: usize,
    crossings: usize,
    changes: usize,
    transitions: usize,
    fifths: usize,
    octaves: usize,
    in_key: usize,
    sounding: usize,
    notes: usize,
    note_steps: usize,
    longest_repeat: usize,
    pitch: [(u64, u64, u8, u8); 4],
}

/// The steps of `tokens` (whole steps only) as pitches per voice, `None` for a rest.
fn steps(tokens: &[u32], pitch_min: u8) -> Vec<[Option<u8>; 4]> {
    let pitch = |t: u32| (t != 0).then(|| pitch_min.saturating_add((t - 1).min(255) as u8));
    tokens.chunks_exact(VOICES.len()).map(|c| [pitch(c[0]), pitch(c[1]), pitch(c[2]), pitch(c[3])]).collect()
}

/// The key (tonic pitch class, minor?) whose Krumhansl–Kessler profile correlates best with `histogram`.
fn key_of(histogram: &[f64; 12]) -> (usize, bool) {
    let corr = |profile: &[f64; 12], tonic: usize| {
        let (mx, my) = (histogram.iter().sum::<f64>() / 12.0, profile.iter().sum::<f64>() / 12.0);
        let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
        for pc in 0..12 {
            let (x, y) = (histogram[pc] - mx, profile[(pc + 12 - tonic) % 12] - my);
            sxy += x * y;
            sxx += x * x;
            syy += y * y;
        }
        if sxx == 0.0 {
            0.0
        } else {
            sxy / (sxx * syy).sqrt()
        }
    };
    let mut best = (0, false, f64::NEG_INFINITY);
    for tonic in 0..12 {
        for (minor, profile) in [(false, &MAJOR_PROFILE), (true, &MINOR_PROFILE)] {
            let r = corr(profile, tonic);
            if r > best.2 {
                best = (tonic, minor, r);
            }
        }
    }
    (best.0, best.1)
}

/// The longest run of steps that occurs twice without overlapping (dynamic programming over step pairs).
fn longest_repeat(s: &[[Option<u8>; 4]]) -> usize {
    let n = s.len();
    let mut prev = vec![0usize; n + 1];
    let mut best = 0;
    for i in 1..=n {
        let mut row = vec![0usize; n + 1];
        for j in i + 1..=n {
            if s[i - 1] == s[j - 1] && prev[j - 1] < j - i {
                row[j] = prev[j - 1] + 1;
                best = best.max(row[j]);
            }
        }
        prev = row;
    }
    best
}

impl Counts {
    fn add(&mut self, tokens: &[u32], pitch_min: u8) {
        let s = steps(tokens, pitch_min);
        self.steps += s.len();
        let mut histogram = [0.0; 12];
        for step in &s {
            self.crossings += step.windows(2).filter(|p| matches!((p[0], p[1]), (Some(a), Some(b)) if a < b)).count();
            for (v, p) in step.iter().enumerate() {
                if let Some(p) = *p {
                    histogram[p as usize % 12] += 1.0;
                    let e = &mut self.pitch[v];
                    if e.1 == 0 {
                        (e.2, e.3) = (p, p);
                    }
                    (e.0, e.1, e.2, e.3) = (e.0 + p as u64, e.1 + 1, e.2.min(p), e.3.max(p));
                }
            }
        }
        for pair in s.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            self.transitions += 1;
            if a == b {
                continue;
            }
            self.changes += 1;
            for i in 0..4 {
                for j in i + 1..4 {
                    let (Some(ai), Some(aj), Some(bi), Some(bj)) = (a[i], a[j], b[i], b[j]) else { continue };
                    let (mi, mj) = (bi as i32 - ai as i32, bj as i32 - aj as i32);
                    if mi == 0 || mj == 0 || mi.signum() != mj.signum() {
                        continue;
                    }
                    let (before, after) = ((ai as i32 - aj as i32).rem_euclid(12), (bi as i32 - bj as i32).rem_euclid(12));
                    match (before, after) {
                        (7, 7) => self.fifths += 1,
                        (0, 0) => self.octaves += 1,
                        _ => {}
                    }
                }
            }
        }
        let (tonic, minor) = key_of(&histogram);
        let scale: &[usize] = if minor { &MINOR_SCALE } else { &MAJOR_SCALE };
        for (pc, &count) in histogram.iter().enumerate() {
            self.sounding += count as usize;
            if scale.contains(&((pc + 12 - tonic) % 12)) {
                self.in_key += count as usize;
            }
        }
        for v in 0..4 {
            let mut run: Option<(u8, usize)> = None;
            for step in s.iter().map(|st| st[v]).chain(std::iter::once(None)) {
                match (run, step) {
                    (Some((p, len)), Some(q)) if p == q => run = Some((p, len + 1)),
                    (r, q) => {
                        if let Some((_, len)) = r {
                            self.notes += 1;
                            self.note_steps += len;
                        }
                        run = q.map(|q| (q, 1));
                    }
                }
            }
        }
        self.longest_repeat = self.longest_repeat.max(longest_repeat(&s));
    }
}

/// The figures of `sequences` (each a token sequence of whole steps), pooled; `pitch_min` is the data's.
pub fn figures<'a>(sequences: impl IntoIterator<Item = &'a [u32]>, pitch_min: u8) -> MusicFigures {
    let mut c = Counts::default();
    let mut count = 0;
    for seq in sequences {
        c.add(seq, pitch_min);
        count += 1;
    }
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    MusicFigures {
        sequences: count,
        steps: c.steps,
        crossings_per_step: ratio(c.crossings, c.steps),
        chord_changes: c.changes,
        chord_changes_per_step: ratio(c.changes, c.transitions),
        parallel_fifths_per_100_changes: 100.0 * ratio(c.fifths, c.changes),
        parallel_octaves_per_100_changes: 100.0 * ratio(c.octaves, c.changes),
        key_fraction: ratio(c.in_key, c.sounding),
        voices: VOICES
            .iter()
            .zip(c.pitch)
            .map(|(&voice, (sum, n, lo, hi))| VoiceFigures {
                voice,
                lowest: (n > 0).then_some(lo),
                highest: (n > 0).then_some(hi),
                mean: (n > 0).then(|| sum as f64 / n as f64),
            })
            .collect(),
        mean_note_length: ratio(c.note_steps, c.notes),
        longest_repeat: c.longest_repeat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens of steps given as MIDI pitches (0: rest), with pitch_min 30.
    fn tokens(steps: &[[u8; 4]]) -> Vec<u32> {
        steps.iter().flatten().map(|&p| if p == 0 { 0 } else { (p - 30 + 1) as u32 }).collect()
    }

    #[test]
    fn parallels_crossings_changes_and_notes_by_definition() {
        // S 72→74 and B 53→55: a fifth (19 = 7 mod 12) apart before and after, both up: one parallel fifth;
        // A and T held. Then two steps with A above S: one crossing each.
        let t = tokens(&[[72, 67, 64, 53], [74, 67, 64, 55], [74, 76, 64, 55], [74, 76, 64, 55]]);
        let f = figures([t.as_slice()], 30);
        assert_eq!((f.steps, f.chord_changes), (4, 2));
        assert_eq!(f.parallel_fifths_per_100_changes, 50.0);
        assert_eq!(f.parallel_octaves_per_100_changes, 0.0);
        assert_eq!(f.crossings_per_step, 2.0 / 4.0);
        assert!((f.chord_changes_per_step - 2.0 / 3.0).abs() < 1e-12);
        // Notes: S 72, 74×3; A 67×2, 76×2; T 64×4; B 53, 55×3 → 7 notes over 16 steps.
        assert!((f.mean_note_length - 16.0 / 7.0).abs() < 1e-12, "{}", f.mean_note_length);
        assert_eq!((f.voices[0].lowest, f.voices[0].highest), (Some(72), Some(74)));
        // Octaves moving together (S and T an octave apart, both up a step).
        let t = tokens(&[[72, 67, 60, 48], [74, 67, 62, 48]]);
        assert_eq!(figures([t.as_slice()], 30).parallel_octaves_per_100_changes, 100.0);
        // Contrary motion into a fifth is no parallel.
        let t = tokens(&[[72, 67, 64, 48], [74, 67, 64, 46]]);
        assert_eq!(figures([t.as_slice()], 30).parallel_fifths_per_100_changes, 0.0);
    }

    #[test]
    fn key_and_repeats() {
        // A C major scale in the soprano over a held C major chord: all in the key.
        let scale: Vec<[u8; 4]> = [60u8, 62, 64, 65, 67, 69, 71, 72].iter().map(|&s| [s + 12, 64, 55, 48]).collect();
        let f = figures([tokens(&scale).as_slice()], 30);
        assert_eq!(f.key_fraction, 1.0);
        assert_eq!(
            key_of(&{
                let mut h = [0.0; 12];
                for pc in [0, 4, 7, 0, 2, 4, 5, 7, 9, 11, 0, 7] {
                    h[pc] += 1.0;
                }
                h
            }),
            (0, false)
        );
        // A sharp-four chromatic note lowers the fraction.
        let mut off = scale.clone();
        off[3][0] = 78; // F#5
        assert!(figures([tokens(&off).as_slice()], 30).key_fraction < 1.0);
        // Longest repeat: steps A B C A B C D → "A B C" twice, 3 steps.
        let (a, b, c, d) = ([72, 67, 64, 48], [74, 67, 64, 48], [76, 67, 64, 48], [77, 67, 64, 48]);
        assert_eq!(figures([tokens(&[a, b, c, a, b, c, d]).as_slice()], 30).longest_repeat, 3);
        // Overlap is not a repeat: A A A → 1 (A, then A again), not 2.
        assert_eq!(figures([tokens(&[a, a, a]).as_slice()], 30).longest_repeat, 1);
    }
}
