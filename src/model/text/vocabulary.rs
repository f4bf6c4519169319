//! The vocabulary of a text head: the words of the training captions, sorted, each with its
//! inverse document frequency `idf_i = −log r_i`, `r_i` the fraction of training captions that
//! contain word `i` (PAMIR eq. 7).

use std::collections::BTreeMap;

use super::super::error::{ModelError, Result};

/// Most words a vocabulary may hold. With `D` projected dimensions the head stores `T × D`
/// f32 weights, so the product is bounded too ([`MAX_TEXT_WEIGHTS`]).
pub const MAX_VOCABULARY: usize = 1 << 20;

/// Most weights (`T × D`) a text head may hold: 2^28 f32, 1 GiB.
pub const MAX_TEXT_WEIGHTS: usize = 1 << 28;

/// Longest word kept, in bytes (longer tokens are not words a user types).
pub const MAX_WORD_BYTES: usize = 255;

/// Sorted, unique words with their idf.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocabulary {
    words: Vec<String>,
    idf: Vec<f32>,
}

impl Vocabulary {
    /// A vocabulary from its parts, checked: 1..=[`MAX_VOCABULARY`] words, strictly ascending,
    /// each 1..=[`MAX_WORD_BYTES`] bytes and equal to its own tokenisation; idf finite, ≥ 0.
    pub fn new(words: Vec<String>, idf: Vec<f32>) -> Result<Vocabulary> {
        let bad = |detail: String| ModelError::invalid("vocabulary", detail);
        if words.is_empty() {
            return Err(bad("no words".into()));
        }
        if words.len() > MAX_VOCABULARY {
            return Err(bad(format!(
                "{} words, more than the limit of {MAX_VOCABULARY}",
                words.len()
            )));
        }
        if idf.len() != words.len() {
            return Err(bad(format!(
                "{} idf values for {} words",
                idf.len(),
                words.len()
            )));
        }
        for (i, w) in words.iter().enumerate() {
            if w.is_empty()
                || w.len() > MAX_WORD_BYTES
                || super::tokenize::tokenize(w) != [w.as_str()]
            {
                return Err(bad(format!(
                    "word {i} {w:?} is not a single lower-case word of 1..={MAX_WORD_BYTES} bytes"
                )));
            }
            if i > 0 && words[i - 1] >= *w {
                return Err(bad(format!("word {i} {w:?} is out of order or repeated")));
            }
        }
        if let Some(i) = idf.iter().position(|v| !v.is_finite() || *v < 0.0) {
            return Err(bad(format!(
                "idf of word {i} is {} (must be finite, ≥ 0)",
                idf[i]
            )));
        }
        Ok(Vocabulary { words, idf })
    }

    /// The vocabulary of `captions` (each a list of words, as [`super::tokenize`] gives):
    /// every word of at least `min_count` captions, at most `max_words` of them (the most
    /// frequent; ties by word), with idf over all captions, empty ones included.
    pub fn from_captions(
        captions: &[Vec<String>],
        min_count: usize,
        max_words: usize,
    ) -> Result<Vocabulary> {
        let mut df: BTreeMap<&str, usize> = BTreeMap::new();
        for c in captions {
            let mut seen: Vec<&str> = c
                .iter()
                .map(String::as_str)
                .filter(|w| w.len() <= MAX_WORD_BYTES)
                .collect();
            seen.sort_unstable();
            seen.dedup();
            for w in seen {
                *df.entry(w).or_default() += 1;
            }
        }
        let mut kept: Vec<(&str, usize)> = df
            .into_iter()
            .filter(|&(_, n)| n >= min_count.max(1))
            .collect();
        if kept.len() > max_words.min(MAX_VOCABULARY) {
            kept.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            kept.truncate(max_words.min(MAX_VOCABULARY));
            kept.sort_by(|a, b| a.0.cmp(b.0));
        }
        if kept.is_empty() {
            return Err(ModelError::invalid(
                "captions",
                format!(
                    "no word occurs in at least {} of the {} captions",
                    min_count.max(1),
                    captions.len()
                ),
            ));
        }
        let n = captions.len() as f64;
        let idf = kept
            .iter()
            .map(|&(_, c)| (-(c as f64 / n).ln()) as f32)
            .collect();
        Vocabulary::new(kept.into_iter().map(|(w, _)| w.to_string()).collect(), idf)
    }

    /// Number of words, `T`.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Never true for a checked vocabulary (kept for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The words, ascending.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The idf of each word.
    pub fn idf(&self) -> &[f32] {
        &self.idf
    }

    /// The index of `word`, if it is in the vocabulary.
    pub fn index(&self, word: &str) -> Option<usize> {
        self.words.binary_search_by(|w| w.as_str().cmp(word)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(c: &[&str]) -> Vec<Vec<String>> {
        c.iter()
            .map(|s| super::super::tokenize::tokenize(s))
            .collect()
    }

    #[test]
    fn idf_is_minus_log_of_the_caption_fraction() {
        let v = Vocabulary::from_captions(&caps(&["red apple", "red car", "", "blue"]), 1, 100)
            .unwrap();
        assert_eq!(v.words(), ["apple", "blue", "car", "red"]);
        let want = |k: f64| (-(k / 4.0f64).ln()) as f32;
        assert_eq!(v.idf(), [want(1.0), want(1.0), want(1.0), want(2.0)]);
        assert_eq!(v.index("car"), Some(2));
        assert_eq!(v.index("cat"), None);
        let top = Vocabulary::from_captions(&caps(&["red apple", "red car"]), 1, 1).unwrap();
        assert_eq!(top.words(), ["red"]);
        assert!(Vocabulary::from_captions(&caps(&["a", "b"]), 2, 100).is_err());
    }

    #[test]
    fn bad_parts_are_refused() {
        let s = |v: &[&str]| v.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(Vocabulary::new(s(&["b", "a"]), vec![0.0; 2]).is_err());
        assert!(Vocabulary::new(s(&["a", "a"]), vec![0.0; 2]).is_err());
        assert!(Vocabulary::new(s(&["Red"]), vec![0.0]).is_err());
        assert!(Vocabulary::new(s(&["red car"]), vec![0.0]).is_err());
        assert!(Vocabulary::new(s(&["a"]), vec![f32::NAN]).is_err());
        assert!(Vocabulary::new(vec![], vec![]).is_err());
        assert!(Vocabulary::new(s(&["a"]), vec![0.5]).is_ok());
    }
}
