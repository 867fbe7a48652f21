//! Reading the zone off an image: locate, recognise, decode, parse.
//!
//! [`read_mrz`] joins the steps: [`locate`](super::locate::locate) cuts the
//! lines out, a [`LineRecognizer`] gives each line's class probabilities,
//! [`decode_fixed`] reads each with its format's length, and
//! [`parse`](super::parse) checks the result. The recogniser is a trait so the
//! pipeline runs (and is tested) without a model; [`super::onnx`] (feature
//! `ocr-ort`) is the one that reads, PP-OCRv4 through ONNX Runtime.
//!
//! A zone found in the top half of the region is read upside down first; a
//! reading whose check digits do not all hold is tried the other way up
//! too (so at most two recognitions), and the better kept.

use image::{GrayImage, RgbImage};

use super::ctc::{decode_fixed, decode_greedy, Decoded, LineProbabilities};
use super::locate::{locate, Zone};
use super::{parse, Date, Mrz, MrzError};
use crate::document::Quad;

/// Recognises text lines: one [`LineProbabilities`] per line, in order.
/// Lines are grey, [`LINE_HEIGHT`](super::locate::LINE_HEIGHT) high.
pub trait LineRecognizer {
    fn recognize(&self, lines: &[GrayImage]) -> Result<Vec<LineProbabilities>, RecognizeError>;
}

/// A recogniser that failed (a model that does not run, an output of the wrong shape).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecognizeError(pub String);

impl std::fmt::Display for RecognizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "recognising the zone's lines failed: {}", self.0)
    }
}

impl std::error::Error for RecognizeError {}

/// Where and how the zone was found.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneFound {
    pub lines: usize,
    /// Read with the region turned 180 degrees.
    pub upside_down: bool,
    pub skew_degrees: f64,
    /// Mean character height in the upload's pixels (under about 14 the
    /// recogniser errs often: docs/identity.md, "Why this MRZ recogniser").
    pub char_height: f64,
    /// Searched in the whole frame (no outline given, or none found in it).
    pub whole_frame: bool,
    /// Where its lines are in the upload: x0, y0, x1, y1.
    pub bounds: (f64, f64, f64, f64),
}

/// Why no zone was read.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadFailure {
    /// No 2 or 3 lines of an MRZ's proportions were found.
    NoZone,
    Recognizer(RecognizeError),
    /// The text read is not a zone (see [`MrzError`]).
    Mrz(MrzError),
}

/// What [`read_mrz`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct MrzReading {
    pub zone: Option<ZoneFound>,
    /// The lines as recognised (before the parser's fixes), joined by newlines.
    pub text: String,
    /// The least sure character's probability over the lines read (0 when none).
    pub confidence: f32,
    /// Each line's characters' probabilities, as recognised.
    pub char_probs: Vec<Vec<f32>>,
    /// The zone parsed, with each check digit's outcome and any corrections.
    pub mrz: Result<Mrz, ReadFailure>,
}

impl MrzReading {
    /// Read, parsed, and every check digit holds.
    pub fn is_valid(&self) -> bool {
        self.mrz.as_ref().is_ok_and(Mrz::all_checks_valid)
    }

    fn rank(&self) -> (u8, f32) {
        let parsed = match &self.mrz {
            Ok(m) if m.all_checks_valid() => 3,
            Ok(_) => 2,
            Err(ReadFailure::Mrz(_)) => 1,
            Err(_) => 0,
        };
        (parsed, self.confidence)
    }
}

/// Finds, recognises and checks the zone in `image` (the upload, oriented)
/// within `outline` (the document found there, in the upload's
/// coordinates), else in the whole frame; `today` resolves two-digit years.
pub fn read_mrz(
    image: &RgbImage,
    outline: Option<&Quad>,
    recognizer: &dyn LineRecognizer,
    today: Date,
) -> MrzReading {
    let mut whole_frame = outline.is_none();
    let mut zone = locate(image, outline);
    // No zone found, or asked to stop (`crate::interrupt`: what is read
    // then is not used).
    let no_zone = || MrzReading {
        zone: None,
        text: String::new(),
        confidence: 0.0,
        char_probs: Vec::new(),
        mrz: Err(ReadFailure::NoZone),
    };
    if crate::interrupt::pending() {
        return no_zone();
    }
    if zone.is_none() && outline.is_some() {
        // An outline that missed the zone (or is not the document's).
        zone = locate(image, None);
        whole_frame = true;
    }
    let Some(zone) = zone else {
        return no_zone();
    };
    if crate::interrupt::pending() {
        return no_zone();
    }
    let first = read_zone(&zone, whole_frame, recognizer, today);
    if first.is_valid()
        || matches!(first.mrz, Err(ReadFailure::Recognizer(_)))
        || crate::interrupt::pending()
    {
        return first;
    }
    let second = read_zone(&zone.turned(), whole_frame, recognizer, today);
    if second.rank() > first.rank() {
        second
    } else {
        first
    }
}

/// Recognises and parses one zone as it stands.
pub fn read_zone(
    zone: &Zone,
    whole_frame: bool,
    recognizer: &dyn LineRecognizer,
    today: Date,
) -> MrzReading {
    let found = ZoneFound {
        lines: zone.lines.len(),
        upside_down: zone.upside_down,
        skew_degrees: zone.skew_degrees,
        char_height: zone.char_height,
        whole_frame,
        bounds: zone.bounds,
    };
    let failed = |failure: ReadFailure| MrzReading {
        zone: Some(found.clone()),
        text: String::new(),
        confidence: 0.0,
        char_probs: Vec::new(),
        mrz: Err(failure),
    };
    let probabilities = match recognizer.recognize(&zone.lines) {
        Ok(p) if p.len() == zone.lines.len() => p,
        Ok(p) => {
            return failed(ReadFailure::Recognizer(RecognizeError(format!(
                "{} results for {} lines",
                p.len(),
                zone.lines.len()
            ))))
        }
        Err(e) => return failed(ReadFailure::Recognizer(e)),
    };
    let decoded = decode_lines(&probabilities);
    let text = decoded
        .iter()
        .map(|d| d.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let confidence = decoded
        .iter()
        .map(Decoded::min_prob)
        .reduce(f32::min)
        .unwrap_or(0.0);
    let mrz = parse(&text, today).map_err(ReadFailure::Mrz);
    MrzReading {
        zone: Some(found),
        text,
        confidence,
        char_probs: decoded.into_iter().map(|d| d.char_probs).collect(),
        mrz,
    }
}

/// Each line decoded with its format's length: 30 for three lines; for two,
/// 44 or 36, whichever the lines' paths together make likelier. Greedy
/// where no path of that length fits (too few steps).
pub fn decode_lines(lines: &[LineProbabilities]) -> Vec<Decoded> {
    let lengths: &[usize] = match lines.len() {
        3 => &[30],
        2 => &[44, 36],
        _ => &[],
    };
    let mut best: Option<(f32, Vec<Decoded>)> = None;
    for &length in lengths {
        let decoded: Option<Vec<Decoded>> = lines.iter().map(|l| decode_fixed(l, length)).collect();
        if let Some(decoded) = decoded {
            let score: f32 = decoded.iter().map(|d| d.log_prob).sum();
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, decoded));
            }
        }
    }
    best.map_or_else(|| lines.iter().map(decode_greedy).collect(), |(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "Recognises" its own lines, whatever it is shown: enough to test what
    /// follows recognition.
    struct Scripted {
        lines: Vec<&'static str>,
    }

    impl LineRecognizer for Scripted {
        fn recognize(&self, lines: &[GrayImage]) -> Result<Vec<LineProbabilities>, RecognizeError> {
            Ok(self
                .lines
                .iter()
                .take(lines.len())
                .map(|t| LineProbabilities::certain(t))
                .collect())
        }
    }

    const TODAY: Date = Date {
        year: 2026,
        month: 11,
        day: 27,
    };

    #[test]
    fn two_lines_take_the_likelier_length_and_parse() {
        let lines = [
            "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
            "L898902C36UTO7408122F1204159ZE184226B<<<<<10",
        ];
        let decoded = decode_lines(&lines.map(LineProbabilities::certain));
        assert_eq!(decoded[0].text, lines[0]);
        assert_eq!(decoded[1].text, lines[1]);
        let td2 = [
            "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<",
            "D231458907UTO7408122F1204159<<<<<<<6",
        ];
        let decoded = decode_lines(&td2.map(LineProbabilities::certain));
        assert_eq!(decoded[1].text, td2[1]);
    }

    #[test]
    fn a_recogniser_error_or_wrong_count_is_reported_not_a_panic() {
        struct Failing;
        impl LineRecognizer for Failing {
            fn recognize(&self, _: &[GrayImage]) -> Result<Vec<LineProbabilities>, RecognizeError> {
                Err(RecognizeError("no model".into()))
            }
        }
        let zone = Zone {
            lines: vec![GrayImage::new(100, 32), GrayImage::new(100, 32)],
            upside_down: false,
            skew_degrees: 0.0,
            char_height: 20.0,
            bounds: (0.0, 0.0, 100.0, 64.0),
        };
        let r = read_zone(&zone, false, &Failing, TODAY);
        assert!(matches!(r.mrz, Err(ReadFailure::Recognizer(_))));
        let r = read_zone(&zone, false, &Scripted { lines: vec!["ABC"] }, TODAY);
        assert!(matches!(r.mrz, Err(ReadFailure::Recognizer(_))), "{r:?}");
    }

    /// Reads a names line (dark letters, then light fillers) only the right
    /// way up: the upright TD3 specimen, else fillers.
    struct UprightOnly;

    impl LineRecognizer for UprightOnly {
        fn recognize(&self, lines: &[GrayImage]) -> Result<Vec<LineProbabilities>, RecognizeError> {
            let first = lines.first().ok_or(RecognizeError("no lines".into()))?;
            let darkness = |from: u32, to: u32| {
                (from..to)
                    .flat_map(|x| (0..first.height()).map(move |y| (x, y)))
                    .map(|(x, y)| 255 - u32::from(first.get_pixel(x, y).0[0]))
                    .sum::<u32>()
            };
            let w = first.width();
            let upright = darkness(0, w / 3) > darkness(2 * w / 3, w);
            let specimen: Vec<&str> = crate::mrz::render::TD3_SPECIMEN.lines().collect();
            Ok(lines
                .iter()
                .enumerate()
                .map(|(i, _)| match (upright, specimen.get(i)) {
                    (true, Some(line)) => LineProbabilities::certain(line),
                    _ => LineProbabilities::certain(&"<".repeat(44)),
                })
                .collect())
        }
    }

    #[test]
    fn a_zone_in_the_frames_top_half_is_read_the_other_way_up_when_its_checks_fail() {
        // An upright page high in the frame, no outline: the zone's place
        // says upside down, the check digits say otherwise.
        use crate::mrz::render;
        let font = render::font();
        let page = render::document(&font, render::Kind::Td3, render::TD3_SPECIMEN, 700, 4);
        let mut scene = RgbImage::from_pixel(1000, 1400, image::Rgb([120, 120, 125]));
        render::place(&mut scene, &page, (500.0, 300.0), 700.0, 0.0);
        let reading = read_mrz(&scene, None, &UprightOnly, TODAY);
        assert!(reading.is_valid(), "{reading:?}");
        let zone = reading.zone.expect("zone");
        assert!(!zone.upside_down && zone.whole_frame);
        assert_eq!(reading.text, render::TD3_SPECIMEN);
        // A page upside down in the same place reads as it is found.
        let mut scene = RgbImage::from_pixel(1000, 1400, image::Rgb([120, 120, 125]));
        render::place(&mut scene, &page, (500.0, 300.0), 700.0, 180.0);
        let reading = read_mrz(&scene, None, &UprightOnly, TODAY);
        assert!(reading.is_valid(), "{reading:?}");
        assert!(reading.zone.is_some_and(|z| z.upside_down));
    }

    #[test]
    fn nothing_to_read_is_no_zone() {
        let blank = RgbImage::from_pixel(640, 480, image::Rgb([200, 200, 200]));
        let r = read_mrz(&blank, None, &Scripted { lines: vec![] }, TODAY);
        assert_eq!(r.mrz, Err(ReadFailure::NoZone));
        assert!(r.zone.is_none());
        let tiny = RgbImage::new(3, 2);
        assert_eq!(
            read_mrz(&tiny, None, &Scripted { lines: vec![] }, TODAY).mrz,
            Err(ReadFailure::NoZone)
        );
    }
}
