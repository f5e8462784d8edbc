"""Bach chorales from music21's corpus as token sequences (the Music Transformer paper's JSB serialisation).

Every choice, in one place (docs/src/models.md points here):

- Pieces: every `music21/corpus/bach/*.mxl` with exactly four parts (soprano, alto, tenor, bass, in the
  score's order). Scores with instrumental parts or fewer voices are skipped and counted.
- Grid: 16th notes (4 steps per quarter). A note covers the steps from round(4·offset) to
  round(4·(offset + duration)) (at least one step). Notes shorter than a 16th or off the grid (triplets,
  32nds) are rounded to the nearest step; grace notes (duration 0) are dropped.
- Held notes vs onsets: as in the paper's JSB representation, a token is the pitch sounding in a voice at a
  step; a held note repeats its pitch and a repeated note is not told apart from a held one.
- Rests: their own token (0). Chords inside one part (divisi): the highest pitch.
- Fermatas: ignored; the note lasts as written.
- Pickups: the time line starts at the first note of the score, pickup included; bar lines are the
  offsets of the measures numbered 1 and up, so the pickup is the partial bar before the first line.
- Serialisation: step by step, and within a step soprano, alto, tenor, bass: token t is voice t mod 4 at
  step t div 4 (raster order, "down every voice at a time step, then advance time").
- Vocabulary: 0 = rest, then one token per MIDI pitch from PITCH_MIN to PITCH_MAX (the corpus's range
  widened by the largest training transposition, so any augmented sequence stays in vocabulary).
- Titles: see `title_of`.
- Split: by the integer BWV number (all chorales of one cantata go together): BWV mod 10 = 0 → test,
  mod 10 = 1 → valid, else train.
"""
import glob
import json
import os
import re

VOICES = ("soprano", "alto", "tenor", "bass")
STEPS_PER_QUARTER = 4
REST = 0
MAX_TRANSPOSE = 3  # training transposes by a uniform −3..+3 semitones


def corpus_files():
    import music21
    root = os.path.join(os.path.dirname(music21.__file__), "corpus", "bach")
    return sorted(glob.glob(os.path.join(root, "*.mxl")), key=bwv_key)


def bwv_key(path):
    """(cantata number, movement) of 'bwv36.8-2.mxl' → (36, '8-2')."""
    stem = os.path.basename(path)[3:].rsplit(".", 1)[0]
    m = re.match(r"(\d+)(.*)", stem)
    return (int(m.group(1)), m.group(2).lstrip("."))


def split_of(bwv_number):
    return {0: "test", 1: "valid"}.get(bwv_number % 10, "train")


def parse(path):
    """One chorale as {'bwv', 'title', 'steps', 'grid' (4 lists of MIDI pitches or 0), 'bars', 'time_signature'};
    None when it does not have exactly four parts."""
    import music21
    score = music21.converter.parse(path)
    parts = list(score.parts)
    if len(parts) != 4:
        return None
    steps = round(float(score.highestTime) * STEPS_PER_QUARTER)
    grid = [[REST] * steps for _ in range(4)]
    for v, part in enumerate(parts):
        for el in part.flatten().notes:
            ql = float(el.duration.quarterLength)
            if ql == 0:
                continue  # grace note
            start = round(float(el.offset) * STEPS_PER_QUARTER)
            end = max(start + 1, round((float(el.offset) + ql) * STEPS_PER_QUARTER))
            midi = max(p.midi for p in el.pitches)
            for t in range(start, min(end, steps)):
                grid[v][t] = midi
    measures = parts[0].getElementsByClass("Measure")
    bars = sorted({round(float(m.offset) * STEPS_PER_QUARTER) for m in measures if m.number >= 1 and m.offset > 0})
    ts = parts[0].flatten().getElementsByClass("TimeSignature")
    time_signature = ts[0].ratioString if len(ts) else "4/4"
    stem = os.path.basename(path)[:-4]
    return {"bwv": stem[3:], "title": title_of(path, parts[0]), "steps": steps, "grid": grid, "bars": bars,
            "time_signature": time_signature}


def title_of(path, soprano):
    """The chorale's title from music21's list of the free-standing chorales (BWV 250-438); for cantata
    movements, whose files carry no title, the first six words of the soprano's text."""
    import music21
    from music21.corpus import chorales as listing
    number, movement = bwv_key(path)
    known = listing.ChoraleList().byBWV.get(number)
    if known and not movement:
        return known["title"]
    words = (music21.text.assembleLyrics(soprano) or "").split()
    if not words:
        return "(no text in the file)"
    return " ".join(words[:6]) + (" …" if len(words) > 6 else "")


def load_all(cache):
    """Every four-part chorale, parsed once and cached as JSON at `cache`."""
    if os.path.exists(cache):
        with open(cache) as f:
            return json.load(f)
    pieces, skipped = [], []
    for path in corpus_files():
        p = parse(path)
        if p is None:
            skipped.append(os.path.basename(path))
        else:
            p["split"] = split_of(bwv_key(path)[0])
            pieces.append(p)
    out = {"pieces": pieces, "skipped": skipped}
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with open(cache, "w") as f:
        json.dump(out, f)
    return out


def pitch_range(pieces):
    notes = [m for p in pieces for voice in p["grid"] for m in voice if m != REST]
    return min(notes) - MAX_TRANSPOSE, max(notes) + MAX_TRANSPOSE


def tokens(piece, pitch_min, transpose=0):
    """The raster-order token sequence of a piece: 4·steps tokens."""
    out = []
    for t in range(piece["steps"]):
        for v in range(4):
            m = piece["grid"][v][t]
            out.append(REST if m == REST else m + transpose - pitch_min + 1)
    return out


def vocab_names(pitch_min, pitch_max):
    names = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]
    return ["rest"] + [f"{names[m % 12]}{m // 12 - 1}" for m in range(pitch_min, pitch_max + 1)]
