//! The Bach chorales the shipped models were trained on (`models/chorales-test.json`, written by
//! `train/export.py`; every choice of the encoding is documented in `train/chorales.py`):
//!
//! ```text
//! token t = voice (t mod 4) ∈ soprano, alto, tenor, bass at 16th-note step (t div 4)
//! token 0 = rest, token p − pitch_min + 1 = MIDI pitch p (held notes repeat their pitch)
//! ```
//!
//! and the way back to music: a standard MIDI file with one track per voice.

use midly::num::{u15, u24, u28, u4, u7};
use midly::{Format, Header, MetaMessage, MidiMessage, Smf, Timing, TrackEvent, TrackEventKind};
use relattn_core::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Voices per step, in serialisation order.
pub const VOICES: [&str; 4] = ["soprano", "alto", "tenor", "bass"];
/// Ticks per quarter note of the MIDI files written: each step lasts 480 / steps_per_quarter ticks.
pub const TICKS_PER_QUARTER: u16 = 480;
/// Tempi a MIDI file may have, quarter notes per minute.
pub const BPM: std::ops::RangeInclusive<u32> = 20..=400;

/// One chorale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Piece {
    /// Catalogue number as in music21's file name: "10.7" for bwv10.7.mxl.
    pub bwv: String,
    pub title: String,
    /// The first time signature, e.g. "4/4".
    pub time_signature: String,
    /// Steps (16ths) where a bar line falls; a pickup is the partial bar before the first.
    pub bars: Vec<usize>,
    /// 4 tokens per step.
    pub tokens: Vec<u32>,
}

/// A tokenised split of the corpus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chorales {
    /// "train", "valid" or "test", and the rule that made it.
    pub split: String,
    pub split_rule: String,
    /// MIDI pitch of token 1.
    pub pitch_min: u8,
    /// Display name of each token ("rest", "C4", …); its length is the vocabulary size.
    pub vocab: Vec<String>,
    pub steps_per_quarter: usize,
    pub pieces: Vec<Piece>,
}

impl Chorales {
    /// Parses and checks a data file: every token in the vocabulary, whole steps, bars within the piece,
    /// steps that last a whole number of MIDI ticks (steps_per_quarter divides [`TICKS_PER_QUARTER`]).
    pub fn parse(bytes: &[u8], file_name: &str) -> Result<Chorales> {
        let data: Chorales =
            serde_json::from_slice(bytes).map_err(|e| Error::File { path: file_name.into(), reason: format!("not a chorale data file: {e}") })?;
        if data.pitch_min > 127 {
            return Err(Error::invalid("pitch_min", data.pitch_min, "0..=127 (a MIDI pitch)"));
        }
        let highest = data.pitch_min as usize + data.vocab.len().saturating_sub(2);
        if data.vocab.len() < 2 || highest > 127 {
            return Err(Error::invalid(
                "vocab",
                data.vocab.len(),
                format!("2..={} names (MIDI pitches from pitch_min = {} to 127, and rest)", 129 - data.pitch_min as usize, data.pitch_min),
            ));
        }
        let spq = data.steps_per_quarter;
        if spq == 0 || !(TICKS_PER_QUARTER as usize).is_multiple_of(spq) {
            return Err(Error::invalid(
                "steps_per_quarter",
                spq,
                format!("a divisor of {TICKS_PER_QUARTER} (the MIDI ticks per quarter note) in 1..={TICKS_PER_QUARTER}: 1, 2, 3, 4, 5, 6, 8, …"),
            ));
        }
        for p in &data.pieces {
            if p.tokens.len() % VOICES.len() != 0 || p.tokens.is_empty() {
                return Err(Error::invalid(&format!("tokens of BWV {}", p.bwv), p.tokens.len(), "a positive multiple of 4 (one per voice per step)"));
            }
            if let Some((i, t)) = p.tokens.iter().enumerate().find(|(_, &t)| t as usize >= data.vocab.len()) {
                return Err(Error::invalid(&format!("tokens of BWV {}", p.bwv), format!("{t} at {i}"), format!("0..{}", data.vocab.len())));
            }
            if let Some(b) = p.bars.iter().find(|&&b| b > p.tokens.len() / VOICES.len()) {
                return Err(Error::invalid(&format!("bars of BWV {}", p.bwv), b, format!("0..={} (the piece's steps)", p.tokens.len() / VOICES.len())));
            }
        }
        Ok(data)
    }

    /// The piece with catalogue number `bwv` ("10.7" or "bwv10.7").
    /// A number given with its prefix or spaces ("BWV 10.7") in the file is found the same way.
    pub fn piece(&self, bwv: &str) -> Result<&Piece> {
        let number = |s: &str| s.trim().trim_start_matches("BWV").trim_start_matches("bwv").trim().to_string();
        let want = number(bwv);
        self.pieces.iter().find(|p| number(&p.bwv) == want).ok_or_else(|| {
            let some: Vec<&str> = self.pieces.iter().take(8).map(|p| p.bwv.as_str()).collect();
            Error::invalid(
                "piece",
                format!("'{bwv}'"),
                format!("a BWV number of the {} split: {}, … ({} pieces)", self.split, some.join(", "), self.pieces.len()),
            )
        })
    }

    /// The tokens of a chord given as four names of the vocabulary, soprano to bass ("C5 G4 E4 C3"; "rest"
    /// for a silent voice): an opening to sample from. Errors name "opening" and the vocabulary's range.
    pub fn chord(&self, names: &str) -> Result<[u32; 4]> {
        let allowed = || {
            format!(
                "four names, soprano to bass, each \"rest\" or a pitch {}..={} of the vocabulary (e.g. \"C5 G4 E4 C3\")",
                self.vocab[1.min(self.vocab.len() - 1)],
                self.vocab[self.vocab.len() - 1]
            )
        };
        let words: Vec<&str> = names.split_whitespace().collect();
        if words.len() != VOICES.len() {
            return Err(Error::invalid("opening", format!("'{names}'"), allowed()));
        }
        let mut chord = [0u32; 4];
        for (t, w) in chord.iter_mut().zip(&words) {
            *t = self.vocab.iter().position(|v| v.eq_ignore_ascii_case(w)).ok_or_else(|| Error::invalid("opening", format!("'{w}' in '{names}'"), allowed()))?
                as u32;
        }
        Ok(chord)
    }

    /// The MIDI pitch of a token, `None` for a rest.
    pub fn pitch(&self, token: u32) -> Option<u8> {
        (token != 0).then(|| self.pitch_min + (token - 1) as u8)
    }

    /// A standard MIDI file (format 1, [`TICKS_PER_QUARTER`] ticks per quarter, ♩ = `bpm` in [`BPM`]) with
    /// one track per voice: a note starts where a voice's pitch changes and lasts while it repeats. A
    /// trailing partial step is dropped. Errors: "bpm" out of its range; "tokens" past the vocabulary or so
    /// many that the file's ticks would pass the 28-bit delta of a MIDI event.
    pub fn midi(&self, tokens: &[u32], bpm: u32) -> Result<Vec<u8>> {
        if !BPM.contains(&bpm) {
            return Err(Error::invalid("bpm", bpm, format!("{}..={} quarter notes per minute", BPM.start(), BPM.end())));
        }
        if let Some((i, t)) = tokens.iter().enumerate().find(|(_, &t)| t as usize >= self.vocab.len()) {
            return Err(Error::invalid("tokens", format!("{t} at {i}"), format!("0..{}", self.vocab.len())));
        }
        let tick = (TICKS_PER_QUARTER as usize / self.steps_per_quarter) as u32;
        let steps = tokens.len() / VOICES.len();
        let max_steps = (u28::max_value().as_int() / tick) as usize;
        if steps > max_steps {
            return Err(Error::invalid("tokens", tokens.len(), format!("at most {} (4 per step; a MIDI event's delta is 28 bits)", max_steps * VOICES.len())));
        }
        let event = |delta: u32, kind| TrackEvent { delta: u28::new(delta), kind };
        let end = event(0, TrackEventKind::Meta(MetaMessage::EndOfTrack));
        let tempo = 60_000_000 / bpm;
        let mut tracks = vec![vec![event(0, TrackEventKind::Meta(MetaMessage::Tempo(u24::new(tempo)))), end]];
        for (v, name) in VOICES.iter().enumerate() {
            let channel = u4::new(v as u8);
            let message = |delta: u32, message| event(delta, TrackEventKind::Midi { channel, message });
            // General MIDI program 20 (0-based 19): church organ.
            let mut track =
                vec![event(0, TrackEventKind::Meta(MetaMessage::TrackName(name.as_bytes()))), message(0, MidiMessage::ProgramChange { program: u7::new(19) })];
            let (mut last_tick, mut sounding): (u32, Option<u8>) = (0, None);
            for step in 0..=steps {
                let pitch = if step < steps { self.pitch(tokens[step * VOICES.len() + v]) } else { None };
                if pitch == sounding {
                    continue;
                }
                let now = step as u32 * tick;
                if let Some(p) = sounding {
                    track.push(message(now - last_tick, MidiMessage::NoteOff { key: u7::new(p), vel: u7::new(0) }));
                    last_tick = now;
                }
                if let Some(p) = pitch {
                    track.push(message(now - last_tick, MidiMessage::NoteOn { key: u7::new(p), vel: u7::new(80) }));
                    last_tick = now;
                }
                sounding = pitch;
            }
            track.push(end);
            tracks.push(track);
        }
        let mut smf = Smf::new(Header::new(Format::Parallel, Timing::Metrical(u15::new(TICKS_PER_QUARTER))));
        smf.tracks = tracks;
        let mut out = Vec::new();
        smf.write(&mut out).expect("writing to a Vec cannot fail");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Chorales {
        Chorales {
            split: "test".into(),
            split_rule: "".into(),
            pitch_min: 60,
            vocab: vec!["rest".into(), "C4".into(), "C#4".into(), "D4".into()],
            steps_per_quarter: 4,
            pieces: vec![Piece { bwv: "10.7".into(), title: "t".into(), time_signature: "4/4".into(), bars: vec![1], tokens: vec![1, 2, 3, 0, 1, 2, 3, 0] }],
        }
    }

    #[test]
    fn pieces_are_found_with_or_without_the_prefix() {
        let d = data();
        assert_eq!(d.piece("bwv10.7").unwrap().bwv, "10.7");
        assert_eq!(d.piece("BWV 10.7").unwrap().bwv, "10.7");
        let prefixed = Chorales { pieces: vec![Piece { bwv: " BWV 1".into(), ..d.pieces[0].clone() }], ..d.clone() };
        assert_eq!(prefixed.piece("1").unwrap().bwv, " BWV 1", "a prefixed number in the file (found by the chorales fuzz target)");
        let err = d.piece("11").unwrap_err();
        assert!(matches!(&err, Error::Invalid { field, .. } if field == "piece"), "{err}");
    }

    #[test]
    fn held_notes_become_one_midi_note_per_voice() {
        let d = data();
        let smf = d.midi(&d.pieces[0].tokens, 120).unwrap();
        let parsed = Smf::parse(&smf).unwrap();
        assert_eq!(parsed.tracks.len(), 5);
        let ons = |t: usize| parsed.tracks[t].iter().filter(|e| matches!(e.kind, TrackEventKind::Midi { message: MidiMessage::NoteOn { .. }, .. })).count();
        // Soprano holds C4 for two steps: one note; the bass rests throughout: none.
        assert_eq!((ons(1), ons(2), ons(3), ons(4)), (1, 1, 1, 0));
        let off_delta: Vec<u32> = parsed.tracks[1]
            .iter()
            .filter(|e| matches!(e.kind, TrackEventKind::Midi { message: MidiMessage::NoteOff { .. }, .. }))
            .map(|e| e.delta.as_int())
            .collect();
        assert_eq!(off_delta, [240]); // two 16ths at 480 ticks per quarter
    }

    #[test]
    fn midi_refuses_a_tempo_out_of_range_naming_bpm() {
        let d = data();
        for bpm in [0, 19, 401, u32::MAX] {
            assert_eq!(d.midi(&d.pieces[0].tokens, bpm).unwrap_err().field(), "bpm", "{bpm}");
        }
        for bpm in [20, 400] {
            assert!(d.midi(&d.pieces[0].tokens, bpm).is_ok());
        }
        assert_eq!(d.midi(&[9, 0, 0, 0], 80).unwrap_err().field(), "tokens");
    }

    #[test]
    fn an_opening_chord_is_four_names_of_the_vocabulary() {
        let d = data();
        assert_eq!(d.chord("D4 C#4 c4 rest").unwrap(), [3, 2, 1, 0]);
        for bad in ["C4 C4 C4", "C4 C4 C4 C4 C4", "C4 C4 C4 H9"] {
            assert_eq!(d.chord(bad).unwrap_err().field(), "opening", "{bad}");
        }
    }

    #[test]
    fn bad_files_name_the_field() {
        let mut d = data();
        d.pieces[0].tokens[3] = 9;
        let bytes = serde_json::to_vec(&d).unwrap();
        let err = Chorales::parse(&bytes, "x.json").unwrap_err();
        assert!(matches!(&err, Error::Invalid { field, .. } if field == "tokens of BWV 10.7"), "{err}");
        for (spq, ok) in [(0, false), (7, false), (100000, false), (1, true), (4, true), (480, true), (960, false)] {
            let bytes = serde_json::to_vec(&Chorales { steps_per_quarter: spq, ..data() }).unwrap();
            let got = Chorales::parse(&bytes, "x.json");
            assert!(got.is_ok() == ok && got.as_ref().err().is_none_or(|e| e.field() == "steps_per_quarter"), "{spq}: {got:?}");
        }
        let bytes = serde_json::to_vec(&Chorales { pitch_min: 200, ..data() }).unwrap();
        assert_eq!(Chorales::parse(&bytes, "x.json").unwrap_err().field(), "pitch_min");
        let err = Chorales::parse(b"{", "x.json").unwrap_err();
        assert!(matches!(err, Error::File { .. }));
    }
}
