//! What a head of a trained chorale model reads, named as music, and a one-line description of it computed
//! from its attention-by-distance profile (so a retrained model describes itself).
//!
//! In the chorale serialisation (4 tokens per 16th-note step: soprano, alto, tenor, bass) the query at token
//! i predicts token i + 1, so the key at distance d = j − i lies `1 − d` tokens before the *predicted* token:
//!
//! ```text
//! back = 1 − d        d = −3  → back 4:  the predicted voice, one 16th back
//!                     d = −15 → back 16: the predicted voice, one beat back (a quarter: 4 steps)
//!                     d = 1 − 4·(steps per bar) → the predicted voice, one bar back
//!                     back not a multiple of 4 → another voice; d = 0 → the query token itself
//! ```

use crate::trained::chorales::VOICES;
use ndarray::ArrayView2;
use relattn_core::attention::by_distance;

/// The meter of a piece in 16th-note steps: steps per beat and per bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Meter {
    #[cfg_attr(test, ts(type = "number"))]
    pub beat: i64,
    #[cfg_attr(test, ts(type = "number"))]
    pub bar: i64,
}

impl Meter {
    /// The meter of time signature "num/den" with `steps_per_quarter` steps per quarter note: a beat is one
    /// 1/den note (4·steps_per_quarter/den steps), a bar num beats; 4/4 when the signature does not parse.
    pub fn of(time_signature: &str, steps_per_quarter: usize) -> Meter {
        let parsed = time_signature.split_once('/').and_then(|(n, d)| Some((n.trim().parse::<i64>().ok()?, d.trim().parse::<i64>().ok()?)));
        let (num, den) = parsed.filter(|&(n, d)| (1..=64).contains(&n) && [1, 2, 4, 8, 16].contains(&d)).unwrap_or((4, 4));
        let beat = (4 * steps_per_quarter as i64 / den).max(1);
        Meter { beat, bar: beat * num }
    }
}

/// Tokens per step.
const V: i64 = VOICES.len() as i64;

/// "one 16th back", "3 16ths back", "one beat back", "2 bars back": `steps` steps, in the largest unit that
/// divides them.
fn steps_back(steps: i64, meter: Meter) -> String {
    let (count, unit) = if steps % meter.bar == 0 {
        (steps / meter.bar, "bar")
    } else if steps % meter.beat == 0 {
        (steps / meter.beat, "beat")
    } else {
        (steps, "16th")
    };
    if count == 1 {
        format!("one {unit} back")
    } else {
        format!("{count} {unit}s back")
    }
}

/// What the key at distance `d` = j − i reaches, relative to the token being predicted (see the module's
/// table): "the predicted voice, one 16th back" (d = −3), "the query token itself" (d = 0), "another voice,
/// 6 tokens before the predicted one"; keys after the query (d > 0) are masked.
pub fn name_distance(d: i64, meter: Meter) -> String {
    let back = 1 - d;
    match back {
        ..=0 => "a key after the query (masked)".into(),
        1 => "the query token itself".into(),
        _ if back % V == 0 => format!("the predicted voice, {}", steps_back(back / V, meter)),
        _ => format!("another voice, {back} tokens before the predicted one"),
    }
}

/// [`name_distance`] for one query whose predicted token (i + 1) is in voice `predicted_voice`
/// (0..4: soprano, alto, tenor, bass): names the key's voice and how far before the predicted token's step
/// it lies: "the predicted voice (alto), one 16th back", "the soprano of the predicted token's step", "the
/// bass, 2 16ths back", "the query token itself (the tenor)".
pub fn name_key(d: i64, predicted_voice: usize, meter: Meter) -> String {
    let back = 1 - d;
    // The key's voice and step, counted from the predicted token's step.
    let at = predicted_voice as i64 - back;
    let (voice, steps) = (VOICES[at.rem_euclid(V) as usize], -at.div_euclid(V));
    match back {
        ..=0 => "a key after the query (masked)".into(),
        1 => format!("the query token itself (the {voice})"),
        _ if back % V == 0 => format!("the predicted voice ({voice}), {}", steps_back(steps, meter)),
        _ if steps == 0 => format!("the {voice} of the predicted token's step"),
        _ => format!("the {voice}, {}", steps_back(steps, meter)),
    }
}

/// A landmark of the distance charts: its distance, its name ([`name_distance`]) and a short label.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Landmark {
    #[cfg_attr(test, ts(type = "number"))]
    pub distance: i64,
    pub name: String,
    /// "16th", "beat", "bar".
    pub label: String,
}

/// The landmarks of a distance chart: the predicted voice one 16th, one beat and one bar back (d = −3,
/// 1 − 4·beat, 1 − 4·bar; −3, −15 and −63 in 4/4 with 16th-note steps).
pub fn landmarks(meter: Meter) -> Vec<Landmark> {
    let mut marks: Vec<Landmark> = [(1, "16th"), (meter.beat, "beat"), (meter.bar, "bar")]
        .into_iter()
        .map(|(steps, label)| {
            let distance = 1 - V * steps;
            Landmark { distance, name: name_distance(distance, meter), label: label.into() }
        })
        .collect();
    marks.dedup_by_key(|m| m.distance);
    marks
}

/// A head's attention by distance over a window of T tokens, from its causal weights α (T, T):
/// `distribution[k] = (1/T) Σ_{i} α[i, i + d]` at distance d = k − (T − 1), d = −(T−1)..=0: each query's
/// softmax row as a distribution over distances, averaged over the T queries (sums to 1).
pub fn distance_distribution(weights: ArrayView2<f32>) -> Vec<f64> {
    let mut profile = by_distance(weights);
    profile.truncate(weights.nrows());
    profile
}

/// "99 %" of a share, with a no-break space (a caption wraps before the number, not inside it).
fn percent(share: f64) -> String {
    format!("{:.0}\u{a0}%", 100.0 * share)
}

/// A head's one-line description from its [`distance_distribution`] (index k: distance k − (T − 1)):
/// - one distance with half the weight or more: "99 % on the predicted voice, one 16th back";
/// - two with 60 % together: "48 % on …, 31 % on …";
/// - 60 % on the predicted voice at any distance: "70 % on the predicted voice, spread over 2 beats back";
/// - one with 30 %: "38 % on …, the rest spread over the window" (or the last bar, with 80 % in it);
/// - 80 % within the last bar: "spread over the last bar (93 %)";
/// - otherwise: "spread over the window; most on … (12 %)".
pub fn describe(distribution: &[f64], meter: Meter) -> String {
    let n = distribution.len() as i64;
    if n == 0 {
        return "no weights".into();
    }
    let at = |k: usize| (k as i64 - (n - 1), distribution[k]);
    let mut ranked: Vec<(i64, f64)> = (0..distribution.len()).map(at).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let (d1, m1) = ranked[0];
    if m1 >= 0.5 {
        return format!("{} on {}", percent(m1), name_distance(d1, meter));
    }
    if let Some(&(d2, m2)) = ranked.get(1) {
        if m1 + m2 >= 0.6 {
            return format!("{} on {}, {} on {}", percent(m1), name_distance(d1, meter), percent(m2), name_distance(d2, meter));
        }
    }
    let bar_mass: f64 = ranked.iter().filter(|&&(d, _)| 1 - d <= V * meter.bar).map(|&(_, m)| m).sum();
    let rest = if bar_mass >= 0.8 { "the last bar" } else { "the window" };
    let same_voice: Vec<(i64, f64)> = ranked.iter().copied().filter(|&(d, _)| d < 0 && (1 - d) % V == 0).collect();
    let voice_mass: f64 = same_voice.iter().map(|&(_, m)| m).sum();
    if voice_mass >= 0.6 {
        // The farthest step that, with the nearer ones, holds 90 % of the predicted voice's weight.
        let mut by_distance = same_voice.clone();
        by_distance.sort_by_key(|&(d, _)| -d);
        let (mut held, mut farthest) = (0.0, -3);
        for (d, m) in by_distance {
            held += m;
            farthest = d;
            if held >= 0.9 * voice_mass {
                break;
            }
        }
        return format!("{} on the predicted voice, spread over {}", percent(voice_mass), steps_back((1 - farthest) / V, meter));
    }
    if m1 >= 0.3 {
        return format!("{} on {}, the rest spread over {rest}", percent(m1), name_distance(d1, meter));
    }
    if bar_mass >= 0.8 {
        return format!("spread over the last bar ({})", percent(bar_mass));
    }
    format!("spread over the window; most on {} ({})", name_distance(d1, meter), percent(m1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOUR_FOUR: Meter = Meter { beat: 4, bar: 16 };

    #[test]
    fn meters_of_common_time_signatures() {
        assert_eq!(Meter::of("4/4", 4), FOUR_FOUR);
        assert_eq!(Meter::of("3/4", 4), Meter { beat: 4, bar: 12 });
        assert_eq!(Meter::of("3/2", 4), Meter { beat: 8, bar: 24 });
        assert_eq!(Meter::of("6/8", 4), Meter { beat: 2, bar: 12 });
        assert_eq!(Meter::of("junk", 4), FOUR_FOUR);
    }

    #[test]
    fn distances_are_named_from_the_predicted_token() {
        let name = |d| name_distance(d, FOUR_FOUR);
        assert_eq!(name(-3), "the predicted voice, one 16th back");
        assert_eq!(name(-7), "the predicted voice, 2 16ths back");
        assert_eq!(name(-15), "the predicted voice, one beat back");
        assert_eq!(name(-31), "the predicted voice, 2 beats back");
        assert_eq!(name(-63), "the predicted voice, one bar back");
        assert_eq!(name(0), "the query token itself");
        assert_eq!(name(-4), "another voice, 5 tokens before the predicted one");
        assert_eq!(name(2), "a key after the query (masked)");
        // Predicting the alto (voice 1) of a step: d = −3 is the alto a step back, d = −1 the soprano two
        // tokens back... of the same step; predicting the soprano, the token before is the bass a step back.
        assert_eq!(name_key(-3, 1, FOUR_FOUR), "the predicted voice (alto), one 16th back");
        assert_eq!(name_key(0, 1, FOUR_FOUR), "the query token itself (the soprano)");
        assert_eq!(name_key(0, 0, FOUR_FOUR), "the query token itself (the bass)");
        assert_eq!(name_key(-1, 3, FOUR_FOUR), "the alto of the predicted token's step");
        assert_eq!(name_key(-1, 0, FOUR_FOUR), "the tenor, one 16th back");
        assert_eq!(name_key(-15, 2, FOUR_FOUR), "the predicted voice (tenor), one beat back");
        assert_eq!(name_key(-16, 2, FOUR_FOUR), "the alto, one beat back");
        let marks: Vec<(i64, String)> = landmarks(Meter::of("3/4", 4)).into_iter().map(|m| (m.distance, m.label)).collect();
        assert_eq!(marks, [(-3, "16th".into()), (-15, "beat".into()), (-47, "bar".into())]);
    }

    /// A distribution over distances −(n−1)..=0 with the given masses.
    fn profile(n: usize, masses: &[(i64, f64)]) -> Vec<f64> {
        let mut p = vec![0.0; n];
        for &(d, m) in masses {
            p[(d + n as i64 - 1) as usize] += m;
        }
        p
    }

    #[test]
    fn descriptions_follow_the_profile() {
        let say = |masses: &[(i64, f64)]| describe(&profile(128, masses), FOUR_FOUR);
        assert_eq!(say(&[(-3, 0.99), (0, 0.01)]), "99\u{a0}% on the predicted voice, one 16th back");
        assert_eq!(say(&[(-3, 0.4), (-15, 0.3), (0, 0.3)]), "40\u{a0}% on the predicted voice, one 16th back, 30\u{a0}% on the query token itself");
        let voice: Vec<(i64, f64)> = (1..=8).map(|s| (1 - 4 * s, 0.09)).chain([(0, 0.28)]).collect();
        assert_eq!(say(&voice), "72\u{a0}% on the predicted voice, spread over 2 beats back");
        let bar: Vec<(i64, f64)> = (0..60).map(|k| (-k, 0.9 / 60.0)).chain([(-100, 0.1)]).collect();
        assert_eq!(say(&bar), "spread over the last bar (90\u{a0}%)");
        assert_eq!(
            say(&[(-3, 0.38), (-50, 0.2), (-100, 0.21), (-120, 0.21)]),
            "38\u{a0}% on the predicted voice, one 16th back, the rest spread over the window"
        );
        let flat: Vec<(i64, f64)> = (0..128).map(|k| (-k, 1.0 / 128.0)).collect();
        assert!(say(&flat).starts_with("spread over the window; most on"), "{}", say(&flat));
    }

    #[test]
    fn the_distribution_sums_to_one_per_query() {
        let w = ndarray::arr2(&[[1.0f32, 0.0, 0.0], [0.25, 0.75, 0.0], [0.0, 0.5, 0.5]]);
        let p = distance_distribution(w.view());
        // distances −2, −1, 0: (0, 0.25 + 0.5, 1 + 0.75 + 0.5) / 3
        assert_eq!(p, [0.0, 0.25, 0.75]);
    }
}
