//! Any bytes through what `vigil.assess_id` runs before its recogniser and
//! after it: the format sniff, the JPEG structure check, the decode within
//! its limits, quality, the document search, the face search, the MRZ zone's
//! location, line cutting, CTC decoding and parsing, and the verdict. A
//! panic, a run past libFuzzer's `-timeout` or an allocation past its
//! `-malloc_limit_mb` is a finding (scripts/fuzz.sh sets both).
//!
//! The recogniser is the one part replaced: the real one is a neural network
//! run by ONNX Runtime, a C++ library, whose probabilities are only ever read
//! through `LineProbabilities::new`. This one derives each line's
//! probabilities from the line's own pixels, so the input steers what the
//! CTC decoder and the zone's parser see.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use vigil_identity::mrz::ctc::{LineProbabilities, CLASSES};
use vigil_identity::mrz::{self, LineRecognizer, RecognizeError};
use vigil_identity::{analyse_with, judge, FaceDetector, MrzReader};

/// One step a 4-pixel column, its most probable class the column's sum.
struct FromPixels;

impl LineRecognizer for FromPixels {
    fn recognize(
        &self,
        lines: &[image::GrayImage],
    ) -> Result<Vec<LineProbabilities>, RecognizeError> {
        lines
            .iter()
            .map(|line| {
                let steps = (line.width() as usize / 4).clamp(1, 200);
                let mut probs = vec![0.0f32; steps * CLASSES];
                for step in 0..steps {
                    let x = (step * 4) as u32;
                    let sum: u32 = (0..line.height())
                        .map(|y| u32::from(line.get_pixel(x.min(line.width() - 1), y)[0]))
                        .sum();
                    probs[step * CLASSES + sum as usize % CLASSES] = 0.9;
                }
                LineProbabilities::new(steps, probs).ok_or_else(|| RecognizeError("shape".into()))
            })
            .collect()
    }
}

thread_local! {
    static FACES: RefCell<FaceDetector> = RefCell::new(FaceDetector::new());
}

fuzz_target!(|bytes: &[u8]| {
    FACES.with(|faces| {
        let reader = MrzReader::On {
            recognizer: &FromPixels,
            today: mrz::Date {
                year: 2026,
                month: 11,
                day: 29,
            },
        };
        if let Ok(analysis) = analyse_with(bytes, &mut faces.borrow_mut(), reader) {
            let _ = judge(&analysis, None).to_json("00000000-0000-4000-8000-000000000000");
        }
    });
});
