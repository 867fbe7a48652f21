//! Exact tokens: identifiers that PostgreSQL's text parser splits apart.
//!
//! `to_tsvector('english', 'XK-42')` yields `xk` and `-42`, so a search for
//! the part number also matches every record with "xk" or a "-42" in it, and
//! nothing rewards the record holding the whole identifier. Every
//! whitespace-separated word with a joiner (`-`, `_`, `.`, `/`, `@`, `:`,
//! `#`, `+`) between letters or digits is also kept whole, lower-cased, as
//! one more lexeme; being rare, it weighs much in BM25.

/// Characters that join the parts of an identifier.
const JOINERS: &[char] = &['-', '_', '.', '/', '@', ':', '#', '+'];

/// Longest exact token kept, in bytes (a lexeme may hold 2,047).
pub const MAX_TOKEN_BYTES: usize = 100;

/// The exact tokens of `text`, lower-cased, each once, in order of first appearance.
pub fn exact_tokens(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        // Sentence punctuation and brackets around a word are not part of it.
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        if word.len() > MAX_TOKEN_BYTES || !joined(word) {
            continue;
        }
        let token = word.to_lowercase();
        if !found.contains(&token) {
            found.push(token);
        }
    }
    found
}

/// Whether `word` has a joiner with a letter or digit on each side.
fn joined(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    chars
        .windows(3)
        .any(|w| w[0].is_alphanumeric() && JOINERS.contains(&w[1]) && w[2].is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_kept_whole_and_lowercased() {
        assert_eq!(
            exact_tokens("Order XK-42 (shipped to John.Doe@example.com), see foo_bar."),
            ["xk-42", "john.doe@example.com", "foo_bar"]
        );
    }

    #[test]
    fn plain_words_and_lone_punctuation_are_not_tokens() {
        assert!(exact_tokens("the quick brown fox - jumps -- over. 42").is_empty());
        assert!(exact_tokens("-x x- --").is_empty());
    }

    #[test]
    fn repeats_are_listed_once_and_unicode_is_fine() {
        assert_eq!(exact_tokens("ÄB-1 äb-1 東京-2"), ["äb-1", "東京-2"]);
    }

    #[test]
    fn overlong_words_are_skipped() {
        let long = format!("a-{}", "b".repeat(MAX_TOKEN_BYTES));
        assert!(exact_tokens(&long).is_empty());
    }
}
