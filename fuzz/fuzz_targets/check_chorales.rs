// Included by the fuzz target and by tests/fuzz_corpus.rs: the path a chorale data file (JSON) takes.

/// Any bytes parse as chorale data or give an error, never a panic; data that parses finds each of its
/// pieces by its BWV number and writes each as a MIDI file (at the slowest and fastest tempo) that parses
/// back with one track per voice and the tempo track, or refuses it naming "tokens" (a piece too long
/// for the MIDI format's 28-bit event times).
pub fn check_chorales_bytes(data: &[u8]) {
    use relattn::trained::chorales::{Chorales, BPM, VOICES};
    let Ok(chorales) = Chorales::parse(data, "input.json") else { return };
    for piece in chorales.pieces.iter().take(8) {
        assert!(chorales.piece(&piece.bwv).is_ok(), "a piece is found by its own number: {:?}", piece.bwv);
        for bpm in [*BPM.start(), *BPM.end()] {
            match chorales.midi(&piece.tokens, bpm) {
                Ok(bytes) => {
                    let smf = midly::Smf::parse(&bytes).expect("a MIDI file that parses");
                    assert_eq!(smf.tracks.len(), VOICES.len() + 1);
                }
                Err(relattn::Error::Invalid { field, .. }) if field == "tokens" => {}
                Err(e) => panic!("a parsed piece writes as MIDI or names its tokens: {e}"),
            }
        }
    }
}
