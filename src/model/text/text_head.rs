//! The text head of a model: a vocabulary with idf and the PAMIR matrix `W` (T × D) that
//! scores a text query `q` against a projected image vector `p` as `F(q, p) = qᵀ W p`
//! (Grangier, Monay & Bengio 2006, eq. 1-3). Per query, `u = Wᵀ q` is computed once; rows are
//! then ranked by `uᵀ p` with the inner-product kernels of the codes.
//!
//! Stored as an OPTIONAL stage of kind 9 (`text`) after the quantiser (FORMAT.md §4.3):
//! `words` u8 `[bytes]` (the words, UTF-8, concatenated in ascending order), `word_ends` u64
//! `[T]` (end offset of each word in `words`, strictly increasing, last = bytes), `idf` f32
//! `[T]` (finite, ≥ 0), `weight` f32 `[T, D]` (finite; D = the model's projected dimension).

use crate::format::{StageRecord, Tensor, TensorData, stage_kind};

use super::super::error::{ModelError, Result};
use super::super::record::{RecordReader, f32_tensor};
use super::tfidf::TextVector;
use super::tokenize::tokenize;
use super::vocabulary::{MAX_TEXT_WEIGHTS, Vocabulary};

const STAGE: &str = "text";

/// A trained text head.
#[derive(Debug, Clone, PartialEq)]
pub struct TextHead {
    vocab: Vocabulary,
    dim: usize,
    /// Row-major `T × dim`.
    weight: Vec<f32>,
}

/// A text query made ready for a scan: its tf-idf-norm vector and `u = Wᵀ q`.
#[derive(Debug, Clone, PartialEq)]
pub struct TextQuery {
    /// The query as given.
    pub text: String,
    /// Its tf-idf-norm vector (and the words it ignored).
    pub vector: TextVector,
    /// `Wᵀ q`, of the model's projected dimension.
    pub u: Vec<f32>,
}

impl TextHead {
    /// A head from its parts, checked: `weight` is `vocab.len() × dim`, finite, at most
    /// [`MAX_TEXT_WEIGHTS`] values.
    pub fn new(vocab: Vocabulary, dim: usize, weight: Vec<f32>) -> Result<TextHead> {
        check_size(vocab.len(), dim)?;
        if weight.len() != vocab.len() * dim {
            return Err(ModelError::invalid(
                "text head weight",
                format!(
                    "{} values for {} words × {dim} dimensions",
                    weight.len(),
                    vocab.len()
                ),
            ));
        }
        if let Some(i) = weight.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::invalid(
                "text head weight",
                format!(
                    "non-finite value {} at word {} dimension {}",
                    weight[i],
                    i / dim,
                    i % dim
                ),
            ));
        }
        Ok(TextHead { vocab, dim, weight })
    }

    /// The vocabulary.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocab
    }

    /// `D`: the projected dimension the head scores.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `W`, row-major `T × D`.
    pub fn weight(&self) -> &[f32] {
        &self.weight
    }

    /// `F(q, p) = qᵀ W p` for a text vector and a projected vector.
    pub fn score(&self, q: &TextVector, p: &[f32]) -> f32 {
        q.terms.iter().map(|&(i, w)| w * dot(self.row(i), p)).sum()
    }

    fn row(&self, i: usize) -> &[f32] {
        &self.weight[i * self.dim..(i + 1) * self.dim]
    }

    /// `u = Wᵀ q`.
    pub fn project(&self, q: &TextVector) -> Vec<f32> {
        let mut u = vec![0.0f32; self.dim];
        for &(i, w) in &q.terms {
            for (o, &x) in u.iter_mut().zip(self.row(i)) {
                *o += w * x;
            }
        }
        u
    }

    /// Tokenises, vectorises and projects one query. Errors, naming the query: no word at all;
    /// no word in the vocabulary (listing the unknown ones); only words of idf 0.
    pub fn query(&self, text: &str) -> Result<TextQuery> {
        let err = |detail: String| ModelError::TextQuery {
            query: text.to_string(),
            detail,
        };
        let tokens = tokenize(text);
        if tokens.is_empty() {
            return Err(err("has no word (words are runs of letters)".into()));
        }
        let vector = TextVector::new(&self.vocab, &tokens);
        if vector.terms.is_empty() {
            if vector.unknown.len() == tokens.len() {
                return Err(err(format!(
                    "no word of the query is in the model's vocabulary of {} words (unknown: {})",
                    self.vocab.len(),
                    vector.unknown.join(", ")
                )));
            }
            return Err(err(
                "its known words occur in every training caption, so they carry no weight \
                 (idf 0)"
                    .into(),
            ));
        }
        let u = self.project(&vector);
        Ok(TextQuery {
            text: text.to_string(),
            vector,
            u,
        })
    }

    /// The head as an OPTIONAL model-file stage (kind 9).
    pub fn to_record(&self) -> StageRecord {
        let words = self.vocab.words();
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(words.len());
        for w in words {
            bytes.extend_from_slice(w.as_bytes());
            ends.push(bytes.len() as u64);
        }
        StageRecord {
            kind: stage_kind::TEXT,
            required: false,
            tensors: vec![
                Tensor::new("words", &[bytes.len() as u64], TensorData::U8(bytes)),
                Tensor::new("word_ends", &[words.len() as u64], TensorData::U64(ends)),
                f32_tensor("idf", &[words.len()], self.vocab.idf().to_vec()),
                f32_tensor("weight", &[words.len(), self.dim], self.weight.clone()),
            ],
        }
    }

    /// Reads a head from its stage record, checking every tensor (errors name the tensor).
    pub fn from_record(rec: &StageRecord) -> Result<TextHead> {
        let mut r = RecordReader::new(STAGE, stage_kind::TEXT, rec)?;
        let (bytes, _) = r.u8s("words", &[None])?;
        let ends = r.u64s("word_ends", &[None])?;
        let t = ends.len();
        let (idf, _) = r.f32("idf", &[Some(t)])?;
        let (weight, shape) = r.f32("weight", &[Some(t), None])?;
        r.finish()?;
        let bad = |tensor: &str, detail: String| ModelError::bad_tensor(STAGE, tensor, detail);
        let mut words = Vec::with_capacity(t);
        let mut start = 0usize;
        for (i, &e) in ends.iter().enumerate() {
            let e = usize::try_from(e).unwrap_or(usize::MAX);
            if e <= start || e > bytes.len() {
                return Err(bad(
                    "word_ends",
                    format!(
                        "entry {i} ({e}) is not after the previous end ({start}) within the words"
                    ),
                ));
            }
            let w = std::str::from_utf8(&bytes[start..e])
                .map_err(|_| bad("words", format!("word {i} is not UTF-8")))?;
            words.push(w.to_string());
            start = e;
        }
        if start != bytes.len() {
            return Err(bad(
                "word_ends",
                format!(
                    "the last end is {start}, the words hold {} bytes",
                    bytes.len()
                ),
            ));
        }
        check_size(t, shape[1])?;
        let vocab = Vocabulary::new(words, idf.to_vec())?;
        TextHead::new(vocab, shape[1], weight.to_vec())
    }
}

/// Refuses a head of more than [`MAX_TEXT_WEIGHTS`] weights.
pub(crate) fn check_size(words: usize, dim: usize) -> Result<()> {
    match words.checked_mul(dim) {
        Some(n) if n <= MAX_TEXT_WEIGHTS && dim > 0 => Ok(()),
        _ => Err(ModelError::invalid(
            "text head",
            format!(
                "{words} words × {dim} dimensions: a head holds 1 to {MAX_TEXT_WEIGHTS} weights \
                 (1 GiB of f32); keep fewer words (--max-words) or project to fewer dimensions"
            ),
        )),
    }
}

pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
