//! BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework:
//! BM25 and Beyond"), with Lucene's non-negative IDF.
//!
//! A term's weight in a record saturates with its frequency (`k1`) and is
//! discounted in records longer than the database's average (`b`); the sum
//! over query terms is weighted by how rare each term is in the database
//! (IDF), so one rare word outweighs many common ones.
//!
//! [`crate::postings::top_k`] ranks a database's records by it from the
//! keyword index.

use crate::tsvector::{Malformed, TsVector};

/// Term-frequency saturation: the usual 1.2.
pub const K1: f32 = 1.2;
/// Length normalisation: the usual 0.75.
pub const B: f32 = 0.75;

/// Inverse document frequency of a term in `df` of `n` records; never negative.
pub fn idf(n: u64, df: u64) -> f32 {
    let (n, df) = (n as f64, df.min(n) as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
}

/// The contribution of a term occurring `tf` times in a record of
/// `length` tokens, in a database whose records average `average_length`.
pub fn term_score(idf: f32, tf: f32, length: f32, average_length: f32) -> f32 {
    if tf <= 0.0 {
        return 0.0;
    }
    let norm = 1.0 - B + B * length / average_length.max(1.0);
    idf * tf * (K1 + 1.0) / (tf + K1 * norm)
}

/// The BM25 score of `record` for query terms `lexemes` weighted by `idfs`.
///
/// A lexeme stored without positions (an exact token) counts as occurring once.
pub fn score(
    record: &TsVector<'_>,
    lexemes: &[&[u8]],
    idfs: &[f32],
    average_length: f32,
) -> Result<f32, Malformed> {
    let length = record.token_count()? as f32;
    let mut total = 0.0;
    for (lexeme, &idf) in lexemes.iter().zip(idfs) {
        if let Some(entry) = record.find(lexeme)? {
            let tf = f32::from(entry.positions.max(1));
            total += term_score(idf, tf, length, average_length);
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tsvector::encode;

    #[test]
    fn rare_terms_weigh_more_and_idf_is_never_negative() {
        assert!(idf(1000, 1) > idf(1000, 10));
        assert!(idf(1000, 10) > idf(1000, 900));
        assert!(idf(1000, 1000) > 0.0);
        assert!(idf(10, 50) > 0.0, "df above n is clamped");
    }

    #[test]
    fn frequency_saturates_and_length_discounts() {
        let one = term_score(1.0, 1.0, 10.0, 10.0);
        let two = term_score(1.0, 2.0, 10.0, 10.0);
        let hundred = term_score(1.0, 100.0, 10.0, 10.0);
        assert!(two > one && hundred > two);
        assert!(hundred < K1 + 1.0, "never more than idf * (k1 + 1)");
        assert!(term_score(1.0, 1.0, 100.0, 10.0) < one);
        assert_eq!(term_score(1.0, 0.0, 10.0, 10.0), 0.0);
    }

    #[test]
    fn one_rare_word_outranks_many_common_ones() {
        let n = 10_000;
        let common = idf(n, 5_000);
        let rare = idf(n, 3);
        let commons = encode(&[("good", 1), ("fast", 1), ("small", 1), ("tool", 1)]);
        let with_rare = encode(&[("good", 1), ("xk-42", 0), ("other", 2)]);
        let query: Vec<&[u8]> = vec![b"good", b"fast", b"small", b"tool", b"xk-42"];
        let idfs = [common, common, common, common, rare];
        let s = |d: &[u8]| score(&TsVector::parse(d).unwrap(), &query, &idfs, 4.0).unwrap();
        assert!(
            s(&with_rare) > s(&commons),
            "{} vs {}",
            s(&with_rare),
            s(&commons)
        );
    }
}
