//! From a recogniser's per-step class probabilities to an MRZ line's text.
//!
//! A CTC text recogniser (PP-OCRv4's, for one) gives, for each step of about
//! 8 pixels along a line, a probability for every class it knows plus a
//! *blank*. Only the zone's 37 characters matter here, so the probabilities are
//! first reduced to [`CLASSES`] (the blank, then [`ALPHABET`]) by [`ClassMap`],
//! and the line decoded with its known length ([`decode_fixed`]): an MRZ line
//! has exactly 30, 36 or 44 characters, and the most probable path with that
//! many labels gets runs of fillers the right length where greedy decoding
//! ([`decode_greedy`]) drops or doubles one (5 points of check digits holding
//! in docs/identity.md, "Why this MRZ recogniser").

/// The zone's characters, in the order of the reduced classes 1 to 37.
pub const ALPHABET: &[u8; 37] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<";
/// The blank and the alphabet.
pub const CLASSES: usize = 1 + ALPHABET.len();
/// Most steps a line is decoded over (a line image at most 8 times this wide):
/// bounds the decoder's memory (steps x 45 x 38 back-pointers).
pub const MAX_STEPS: usize = 1024;

/// One line's probabilities over [`CLASSES`]: class 0 is the blank, class
/// `1 + i` is `ALPHABET[i]`; `steps` rows of [`CLASSES`] values.
#[derive(Clone, Debug, PartialEq)]
pub struct LineProbabilities {
    steps: usize,
    probs: Vec<f32>,
}

impl LineProbabilities {
    /// `None` unless `probs` holds `steps` rows of [`CLASSES`] values.
    pub fn new(steps: usize, probs: Vec<f32>) -> Option<LineProbabilities> {
        (steps.checked_mul(CLASSES) == Some(probs.len()))
            .then_some(LineProbabilities { steps, probs })
    }

    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The probabilities at `step` (empty past the end).
    pub fn step(&self, step: usize) -> &[f32] {
        self.probs
            .get(step * CLASSES..(step + 1) * CLASSES)
            .unwrap_or(&[])
    }

    /// The probabilities a recogniser sure of `text` would give (each
    /// character over two steps, a blank between): for tests of what
    /// follows recognition. Characters outside the alphabet are skipped.
    pub fn certain(text: &str) -> LineProbabilities {
        let mut probs = Vec::new();
        let mut push = |class: usize| {
            let mut row = [0.001f32; CLASSES];
            row[class] = 1.0 - 0.001 * (CLASSES - 1) as f32;
            probs.extend_from_slice(&row);
        };
        push(0);
        for c in text.bytes() {
            if let Some(i) = ALPHABET.iter().position(|&a| a == c) {
                push(i + 1);
                push(i + 1);
                push(0);
            }
        }
        let steps = probs.len() / CLASSES;
        LineProbabilities { steps, probs }
    }
}

/// A line decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// Characters of [`ALPHABET`].
    pub text: String,
    /// Natural log of the path's probability (comparable between lengths
    /// decoded from the same probabilities).
    pub log_prob: f32,
    /// Each character's highest probability over the steps it was read at.
    pub char_probs: Vec<f32>,
}

impl Decoded {
    /// The least sure character's probability (0 for no characters).
    pub fn min_prob(&self) -> f32 {
        self.char_probs
            .iter()
            .copied()
            .reduce(f32::min)
            .unwrap_or(0.0)
    }
}

fn ln(p: f32) -> f32 {
    p.max(1e-12).ln()
}

/// Greedy CTC: the likeliest class at each step, repeats merged, blanks dropped.
pub fn decode_greedy(line: &LineProbabilities) -> Decoded {
    let mut text = String::new();
    let mut char_probs: Vec<f32> = Vec::new();
    let mut log_prob = 0.0;
    let mut prev = 0;
    for t in 0..line.steps.min(MAX_STEPS) {
        let row = line.step(t);
        let (best, p) = row
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        log_prob += ln(p);
        if best != 0 && best != prev {
            text.push(char::from(ALPHABET[best - 1]));
            char_probs.push(p);
        } else if best != 0 {
            if let Some(last) = char_probs.last_mut() {
                *last = last.max(p);
            }
        }
        prev = best;
    }
    Decoded {
        text,
        log_prob,
        char_probs,
    }
}

/// The most probable single CTC path that emits exactly `length` characters:
/// Viterbi over (characters emitted, current class), where a character
/// follows a blank or a different character. O(steps x length x 38) time.
/// `None` when there are fewer steps than `length` (or over [`MAX_STEPS`]).
pub fn decode_fixed(line: &LineProbabilities, length: usize) -> Option<Decoded> {
    let t_n = line.steps;
    if length == 0 || t_n < length || t_n > MAX_STEPS {
        return None;
    }
    const C: usize = CLASSES;
    let width = (length + 1) * C;
    let idx = |k: usize, c: usize| k * C + c;
    let neg = f32::NEG_INFINITY;
    let mut score = vec![neg; width];
    // Back-pointers: the state at t - 1 each state at t came from.
    let mut back = vec![u16::MAX; t_n * width];
    let first = line.step(0);
    score[idx(0, 0)] = ln(first[0]);
    for c in 1..C {
        score[idx(1, c)] = ln(first[c]);
    }
    let mut next = vec![neg; width];
    for t in 1..t_n {
        let row = line.step(t);
        next.fill(neg);
        let bp = &mut back[t * width..(t + 1) * width];
        for k in 0..=length {
            // In a blank after k characters: from that blank or from the k-th character.
            let (mut best, mut from) = (score[idx(k, 0)], idx(k, 0));
            for c in 1..C {
                if score[idx(k, c)] > best {
                    best = score[idx(k, c)];
                    from = idx(k, c);
                }
            }
            next[idx(k, 0)] = best + ln(row[0]);
            bp[idx(k, 0)] = from as u16;
            if k == 0 {
                continue;
            }
            // The best and second-best characters at k - 1, so that a
            // character never follows itself without a blank between.
            let (mut b1, mut b1c, mut b2, mut b2c) = (neg, 0, neg, 0);
            for c in 1..C {
                let s = score[idx(k - 1, c)];
                if s > b1 {
                    (b2, b2c) = (b1, b1c);
                    (b1, b1c) = (s, c);
                } else if s > b2 {
                    (b2, b2c) = (s, c);
                }
            }
            let blank = score[idx(k - 1, 0)];
            for c in 1..C {
                let (mut s, mut f) = (score[idx(k, c)], idx(k, c));
                if blank > s {
                    (s, f) = (blank, idx(k - 1, 0));
                }
                let (other, other_c) = if b1c == c { (b2, b2c) } else { (b1, b1c) };
                if other_c != 0 && other > s {
                    (s, f) = (other, idx(k - 1, other_c));
                }
                next[idx(k, c)] = s + ln(row[c]);
                bp[idx(k, c)] = f as u16;
            }
        }
        std::mem::swap(&mut score, &mut next);
    }
    let end = (0..C)
        .map(|c| idx(length, c))
        .max_by(|&a, &b| score[a].total_cmp(&score[b]))?;
    let log_prob = score[end];
    if log_prob == neg {
        return None;
    }
    // The state at each step, from the last back.
    let mut path = vec![0usize; t_n];
    let mut s = end;
    for t in (0..t_n).rev() {
        path[t] = s;
        if t > 0 {
            s = usize::from(*back.get(t * width + s)?);
            if s >= width {
                return None;
            }
        }
    }
    let mut text = String::with_capacity(length);
    let mut char_probs: Vec<f32> = Vec::with_capacity(length);
    let mut prev = usize::MAX;
    for (t, &state) in path.iter().enumerate() {
        let c = state % C;
        if c != 0 {
            let p = line.step(t)[c];
            if state != prev {
                text.push(char::from(ALPHABET[c - 1]));
                char_probs.push(p);
            } else if let Some(last) = char_probs.last_mut() {
                *last = last.max(p);
            }
        }
        prev = state;
    }
    (text.len() == length).then_some(Decoded {
        text,
        log_prob,
        char_probs,
    })
}

/// Which of a recogniser's classes stand for each character of the zone.
///
/// PP-OCRv4's classes are the blank (0), its dictionary in order (the
/// model's metadata property `character`, one entry a line: 6,623 in
/// `ch_PP-OCRv4_rec_infer.onnx`), then a space. Each MRZ character takes its
/// own class and those of what it is mistaken for in a zone: lower case,
/// chevron-like signs for `<` (docs/identity.md, "Why this MRZ recogniser": harmless, and a
/// little better).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassMap {
    /// The model's class count: dictionary, blank and space.
    pub model_classes: usize,
    /// For each reduced class (the blank, then [`ALPHABET`]), the model's classes summed into it.
    sources: Vec<Vec<usize>>,
}

impl ClassMap {
    /// From the dictionary text (entries separated by newlines). An error
    /// names the MRZ character the dictionary lacks.
    pub fn from_dictionary(dictionary: &str) -> Result<ClassMap, String> {
        let entries: Vec<&str> = dictionary
            .split('\n')
            .map(|e| e.strip_suffix('\r').unwrap_or(e))
            .collect();
        let class_of = |s: &str| entries.iter().position(|e| *e == s).map(|i| i + 1);
        let mut sources = vec![vec![0]];
        for &c in ALPHABET {
            let own = char::from(c).to_string();
            let mut classes =
                vec![class_of(&own).ok_or_else(|| format!("the dictionary has no {own:?}"))?];
            let mut alikes: Vec<String> = Vec::new();
            if c.is_ascii_uppercase() {
                alikes.push(char::from(c.to_ascii_lowercase()).to_string());
            }
            let more: &[&str] = match c {
                b'<' => &["〈", "《", "‹", "«", "く", "＜"],
                b'I' => &["|", "丨"],
                b'O' => &["〇"],
                _ => &[],
            };
            alikes.extend(more.iter().map(|s| s.to_string()));
            classes.extend(alikes.iter().filter_map(|a| class_of(a)));
            sources.push(classes);
        }
        Ok(ClassMap {
            model_classes: entries.len() + 2,
            sources,
        })
    }

    /// One step's model probabilities reduced to [`CLASSES`] (zeros when
    /// `row` is not [`model_classes`](Self::model_classes) long).
    pub fn reduce(&self, row: &[f32], out: &mut [f32; CLASSES]) {
        for (slot, classes) in out.iter_mut().zip(&self.sources) {
            *slot = classes.iter().filter_map(|&i| row.get(i)).sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probabilities for a sequence of (class, probability) per step, the
    /// rest spread evenly.
    fn line(steps: &[(usize, f32)]) -> LineProbabilities {
        let mut probs = Vec::new();
        for &(class, p) in steps {
            let rest = (1.0 - p) / (CLASSES - 1) as f32;
            let mut row = [rest; CLASSES];
            row[class] = p;
            probs.extend_from_slice(&row);
        }
        LineProbabilities::new(steps.len(), probs).unwrap()
    }

    fn class(c: char) -> usize {
        1 + ALPHABET.iter().position(|&a| a == c as u8).unwrap()
    }

    #[test]
    fn certain_text_decodes_the_same_both_ways() {
        let text = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<";
        let probs = LineProbabilities::certain(text);
        assert_eq!(decode_greedy(&probs).text, text);
        let fixed = decode_fixed(&probs, 44).unwrap();
        assert_eq!(fixed.text, text);
        assert!(fixed.min_prob() > 0.9);
    }

    #[test]
    fn fixed_length_restores_a_filler_the_greedy_path_merges() {
        // "A<<B" where the blank between the two fillers is lost: greedy
        // reads one filler, the four-character path puts the second back.
        let b = 0;
        let f = class('<');
        let probs = line(&[
            (class('A'), 0.9),
            (b, 0.9),
            (f, 0.9),
            (f, 0.9),
            (f, 0.5),
            (f, 0.9),
            (b, 0.9),
            (class('B'), 0.9),
        ]);
        assert_eq!(decode_greedy(&probs).text, "A<B");
        let fixed = decode_fixed(&probs, 4).unwrap();
        assert_eq!(fixed.text, "A<<B");
        // The path of the greedy length is the likelier one.
        assert!(decode_fixed(&probs, 3).unwrap().log_prob > fixed.log_prob);
    }

    #[test]
    fn fixed_length_never_merges_a_character_with_itself() {
        // Two steps of 'A': "AA" needs a blank between, a third step.
        let probs = line(&[(class('A'), 0.9), (class('A'), 0.9)]);
        let two = decode_fixed(&probs, 2).unwrap();
        assert_eq!(two.text.len(), 2);
        assert_ne!(two.text, "AA");
        assert_eq!(decode_fixed(&probs, 1).unwrap().text, "A");
    }

    #[test]
    fn impossible_lengths_give_none_not_a_panic() {
        let probs = line(&[(class('A'), 0.9), (0, 0.9)]);
        assert!(decode_fixed(&probs, 3).is_none());
        assert!(decode_fixed(&probs, 0).is_none());
        let empty = LineProbabilities::new(0, Vec::new()).unwrap();
        assert!(decode_fixed(&empty, 1).is_none());
        assert_eq!(decode_greedy(&empty).text, "");
        assert!(LineProbabilities::new(2, vec![0.0; CLASSES]).is_none());
        assert!(LineProbabilities::new(usize::MAX, Vec::new()).is_none());
    }

    #[test]
    fn class_map_sums_look_alikes_and_names_a_missing_character() {
        // A dictionary like the model's: MRZ characters, lower case, a chevron.
        let mut entries: Vec<String> = vec!["x".into(), "«".into()];
        entries.extend(ALPHABET.iter().map(|&c| char::from(c).to_string()));
        entries.push("a".into());
        let map = ClassMap::from_dictionary(&entries.join("\n")).unwrap();
        assert_eq!(map.model_classes, entries.len() + 2);
        let mut row = vec![0.0f32; map.model_classes];
        let position = |s: &str| 1 + entries.iter().position(|e| e == s).unwrap();
        row[position("a")] = 0.25;
        row[position("A")] = 0.5;
        row[position("«")] = 0.125;
        row[0] = 0.125;
        let mut out = [0.0; CLASSES];
        map.reduce(&row, &mut out);
        assert_eq!(out[0], 0.125);
        assert_eq!(out[class('A')], 0.75);
        assert_eq!(out[class('<')], 0.125);
        // A short row reduces to what it has, never a panic.
        map.reduce(&row[..3], &mut out);
        assert_eq!(out[class('A')], 0.0);
        let err = ClassMap::from_dictionary("A\nB").unwrap_err();
        assert!(err.contains("\"C\""), "{err}");
    }
}
