//! A record's opening: the first sentence of its content, found by Unicode's
//! sentence boundaries (UAX #29, so "A.D. (pronounced" or "e.g. ten" run on).
//!
//! Hybrid search reads a record by its whole text and by its opening (the
//! better of the two similarities counts): a document's first sentence
//! says what it is about, and a query restating it matched the whole
//! text's embedding, diluted by everything after it, less well than other
//! records (docs/vector-database.md, "Quality"). The opening's vector is
//! pooled from the token states of the same model call as the whole text's
//! (`vigil_embed::Embedder::embed_many_with_parts`), so it costs no inference.

use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

/// The byte range of `content`'s first sentence, without the space around
/// it; `None` for content without a word.
pub fn opening(content: &str) -> Option<Range<usize>> {
    let (start, sentence) = content
        .split_sentence_bound_indices()
        .find(|(_, s)| s.chars().any(char::is_alphanumeric))?;
    let leading = sentence.len() - sentence.trim_start().len();
    let start = start + leading;
    Some(start..start + sentence.trim().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(content: &str) -> Option<&str> {
        opening(content).map(|r| &content[r])
    }

    #[test]
    fn the_opening_is_the_first_sentence_trimmed() {
        assert_eq!(
            first("It inspects widgets. It has plugins."),
            Some("It inspects widgets.")
        );
        assert_eq!(first("  Is it? Yes.\n"), Some("Is it?"));
        assert_eq!(
            first("One sentence without a stop"),
            Some("One sentence without a stop")
        );
    }

    #[test]
    fn abbreviations_and_numbers_do_not_end_it() {
        assert_eq!(
            first("0 A.D. (pronounced \"zero ey-dee\") is a game. It is free."),
            Some("0 A.D. (pronounced \"zero ey-dee\") is a game.")
        );
        assert_eq!(
            first("Version 2.5 adds a mode. More."),
            Some("Version 2.5 adds a mode.")
        );
    }

    #[test]
    fn content_without_words_has_none() {
        assert_eq!(first(""), None);
        assert_eq!(first("  \n\t "), None);
        assert_eq!(first("... --- !!!"), None);
        // Punctuation before the first words is its own bound, skipped.
        assert_eq!(first("... Then words. More."), Some("Then words."));
    }

    #[test]
    fn ranges_are_char_boundaries_in_any_script() {
        for content in [
            "Grüße aus Köln. Zweiter Satz.",
            "日本語の文です。次の文。",
            "é",
            "\u{200b}x.",
        ] {
            if let Some(r) = opening(content) {
                assert!(content.is_char_boundary(r.start) && content.is_char_boundary(r.end));
            }
        }
    }
}
