//! tf-idf-norm text vectors (PAMIR eq. 7): `q_i = tf_i · idf_i / ‖tf · idf‖₂`, `tf_i` the
//! number of times word `i` occurs in the text. Words not in the vocabulary are left out and
//! listed, so a caller can say which words were ignored.

use super::vocabulary::Vocabulary;

/// A sparse tf-idf-norm vector over a vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct TextVector {
    /// `(word index, weight)`, ascending by index, weights > 0 summing to 1 in squares; empty
    /// when no word of the text carries weight.
    pub terms: Vec<(usize, f32)>,
    /// Words of the text that are not in the vocabulary, in order of first appearance.
    pub unknown: Vec<String>,
}

impl TextVector {
    /// The vector of the words `tokens` (see [`super::tokenize`]).
    pub fn new(vocab: &Vocabulary, tokens: &[String]) -> TextVector {
        let mut idx: Vec<usize> = Vec::with_capacity(tokens.len());
        let mut unknown: Vec<String> = Vec::new();
        for t in tokens {
            match vocab.index(t) {
                Some(i) => idx.push(i),
                None if !unknown.contains(t) => unknown.push(t.clone()),
                None => {}
            }
        }
        idx.sort_unstable();
        let mut terms: Vec<(usize, f32)> = Vec::new();
        for i in idx {
            match terms.last_mut() {
                Some((j, tf)) if *j == i => *tf += 1.0,
                _ => terms.push((i, 1.0)),
            }
        }
        let idf = vocab.idf();
        let mut norm = 0.0f64;
        for (i, w) in &mut terms {
            *w *= idf[*i];
            norm += f64::from(*w) * f64::from(*w);
        }
        terms.retain(|&(_, w)| w > 0.0);
        let norm = norm.sqrt();
        for (_, w) in &mut terms {
            *w = (f64::from(*w) / norm) as f32;
        }
        TextVector { terms, unknown }
    }

    /// `Σ_i q_i c_i`: PAMIR's text score `F_text` (eq. 2) of two texts.
    pub fn dot(&self, other: &TextVector) -> f32 {
        let (mut a, mut b) = (self.terms.iter().peekable(), other.terms.iter().peekable());
        let mut s = 0.0f32;
        while let (Some(&&(i, x)), Some(&&(j, y))) = (a.peek(), b.peek()) {
            match i.cmp(&j) {
                std::cmp::Ordering::Less => {
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    b.next();
                }
                std::cmp::Ordering::Equal => {
                    s += x * y;
                    a.next();
                    b.next();
                }
            }
        }
        s
    }

    /// `‖q‖²` (1 unless empty; kept exact for the passive-aggressive step).
    pub fn norm_sq(&self) -> f32 {
        self.terms.iter().map(|(_, w)| w * w).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tokenize::tokenize;
    use super::*;

    #[test]
    fn weights_are_tf_times_idf_normalised() {
        let caps: Vec<Vec<String>> = ["red apple", "red car", "green car", "blue"]
            .iter()
            .map(|s| tokenize(s))
            .collect();
        let v = Vocabulary::from_captions(&caps, 1, 100).unwrap();
        let q = TextVector::new(&v, &tokenize("Red red APPLE pear"));
        let (ia, ir) = (v.index("apple").unwrap(), v.index("red").unwrap());
        let (wa, wr) = (v.idf()[ia], 2.0 * v.idf()[ir]);
        let n = (wa * wa + wr * wr).sqrt();
        assert_eq!(q.unknown, ["pear"]);
        assert_eq!(q.terms.len(), 2);
        assert!((q.terms[0].1 - wa / n).abs() < 1e-6 && q.terms[0].0 == ia);
        assert!((q.terms[1].1 - wr / n).abs() < 1e-6 && q.terms[1].0 == ir);
        assert!((q.norm_sq() - 1.0).abs() < 1e-6);
        assert!((q.dot(&q) - 1.0).abs() < 1e-6);
        assert!(TextVector::new(&v, &tokenize("pear plum")).terms.is_empty());
    }
}
