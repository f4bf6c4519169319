//! The classifier SPEC grammar of `codedb eval --task classify --pipelines` (a `;`-separated
//! list): an optional `pca:C` prefix (unsupervised PCA to C dimensions first), then exactly
//! one classifier token.
//!
//! | token | classifier |
//! |---|---|
//! | `ncm` | nearest class mean, ℓ2 (eq. 1-2) |
//! | `ncmml:d` | NCM with a rank-d metric learned by NCMML (eq. 3-7) |
//! | `ncmml-dot:d` | W learned with the dot-product + bias objective (eq. 21), b_c at test |
//! | `ncmml-dot-sc:d` | the same, with the learned s_c at test |
//! | `ncmc:dxk` | NCMC: k centroids per class, rank-d metric (eq. 16-20) |
//! | `fda:d` | NCM after FDA to d ≤ C − 1 dimensions (eq. 8) |
//! | `mahal:d` | NCM with the PCA-d inverse covariance metric (§3.2) |
//! | `knn` | ℓ2 k-NN, k validated |
//! | `knn:d` | k-NN with a rank-d LMNN-style metric, 10 dynamic targets (eq. 25-28) |
//! | `knn-all:d` | the same with all same-class targets |
//! | `ridge` | one-vs-rest ridge regression (eq. 13-14) |
//! | `svm` | one-vs-rest linear SVMs (hinge, C validated; PiCoDes Fig. 3) |
//!
//! Examples: `ncm`, `pca:128,ncm` (PCA + ℓ2), `ncmml:128`, `ncmc:128x10`, `fda:9`, `knn:128`.

use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::knn_metric::Targets;
use super::ncmml::{NcmmlObjective, TestBias};

/// Largest dimension, k or centroid count a token may ask for.
const MAX_ARG: usize = 1 << 16;

/// The classifier of a SPEC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `ncm`: nearest class mean, ℓ2 (eq. 1-2).
    Ncm,
    /// `ncmml:d`, `ncmml-dot:d`, `ncmml-dot-sc:d`: NCM with a learned rank-d metric (eq. 3-7, 21).
    Ncmml {
        /// Rank of the metric.
        dim: usize,
        /// The loss the metric is learned with.
        objective: NcmmlObjective,
    },
    /// `ncmc:dxk`: k centroids per class and a learned rank-d metric (eq. 16-20).
    Ncmc {
        /// Rank of the metric.
        dim: usize,
        /// Centroids per class.
        k: usize,
    },
    /// `fda:d`: NCM after FDA to d dimensions (eq. 8).
    Fda(usize),
    /// `mahal:d`: NCM with the PCA-d inverse covariance metric (§3.2).
    Mahalanobis(usize),
    /// `knn`, `knn:d`, `knn-all:d`: k-NN, optionally with a learned rank-d metric (eq. 25-28).
    Knn {
        /// Rank of the learned metric; `None` for plain ℓ2.
        dim: Option<usize>,
        /// Which same-class images are target neighbours.
        targets: Targets,
    },
    /// `ridge`: one-vs-rest ridge regression (eq. 13-14).
    Ridge,
    /// `svm`: one-vs-rest linear SVMs, C chosen on the validation split.
    Svm,
}

/// A parsed classifier SPEC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifierSpec {
    /// The text it was parsed from (trimmed).
    pub text: String,
    /// `pca:C` prefix.
    pub pca: Option<usize>,
    /// The classifier token.
    pub method: Method,
}

fn bad(spec: &str, token: &str, detail: impl Into<String>) -> ClassifyError {
    ClassifyError::BadSpec {
        spec: spec.to_string(),
        token: token.to_string(),
        detail: detail.into(),
    }
}

fn number(spec: &str, token: &str, s: &str, what: &str) -> Result<usize> {
    let v: usize = s.parse().map_err(|_| {
        bad(
            spec,
            token,
            format!("{what} {s:?} is not a positive integer"),
        )
    })?;
    if v == 0 || v > MAX_ARG {
        return Err(bad(
            spec,
            token,
            format!("{what} must be between 1 and {MAX_ARG}, got {v}"),
        ));
    }
    Ok(v)
}

const EXPECTED: &str = "expected one of ncm, ncmml:d, ncmml-dot:d, ncmml-dot-sc:d, ncmc:dxk, \
                        fda:d, mahal:d, knn, knn:d, knn-all:d, ridge, svm (optionally after pca:C)";

impl ClassifierSpec {
    /// Parses one SPEC.
    pub fn parse(s: &str) -> Result<ClassifierSpec> {
        let text = s.trim();
        if text.is_empty() {
            return Err(bad(text, "", "empty classifier"));
        }
        let tokens: Vec<&str> = text.split(',').map(str::trim).collect();
        let mut pca = None;
        let mut method = None;
        for (i, &tok) in tokens.iter().enumerate() {
            if tok.is_empty() {
                return Err(bad(
                    text,
                    tok,
                    "empty token (two commas in a row, or a trailing comma?)",
                ));
            }
            if method.is_some() {
                return Err(bad(
                    text,
                    tok,
                    "comes after the classifier, which must be last",
                ));
            }
            let lower = tok.to_ascii_lowercase();
            let (name, arg) = match lower.split_once(':') {
                Some((n, a)) => (n, Some(a)),
                None => (lower.as_str(), None),
            };
            let need = |what: &str| -> Result<&str> {
                arg.ok_or_else(|| {
                    bad(
                        text,
                        tok,
                        format!("{name} needs an argument: {name}:{what}"),
                    )
                })
            };
            let none = || -> Result<()> {
                match arg {
                    Some(_) => Err(bad(text, tok, format!("{name} takes no argument"))),
                    None => Ok(()),
                }
            };
            match name {
                "pca" => {
                    if i != 0 {
                        return Err(bad(text, tok, "pca:C may only be the first token"));
                    }
                    pca = Some(number(text, tok, need("C")?, "dimension")?);
                }
                "ncm" => {
                    none()?;
                    method = Some(Method::Ncm);
                }
                "ncmml" | "ncmml-dot" | "ncmml-dot-sc" => {
                    let dim = number(text, tok, need("d")?, "dimension")?;
                    let objective = match name {
                        "ncmml" => NcmmlObjective::Distance,
                        "ncmml-dot" => NcmmlObjective::DotBias(TestBias::Norm),
                        _ => NcmmlObjective::DotBias(TestBias::Learned),
                    };
                    method = Some(Method::Ncmml { dim, objective });
                }
                "ncmc" => {
                    let a = need("dxk")?;
                    let Some((d, k)) = a.split_once('x') else {
                        return Err(bad(text, tok, "expected ncmc:dxk, e.g. ncmc:128x10"));
                    };
                    method = Some(Method::Ncmc {
                        dim: number(text, tok, d, "dimension")?,
                        k: number(text, tok, k, "centroids per class")?,
                    });
                }
                "fda" => method = Some(Method::Fda(number(text, tok, need("d")?, "dimension")?)),
                "mahal" => {
                    method = Some(Method::Mahalanobis(number(
                        text,
                        tok,
                        need("d")?,
                        "dimension",
                    )?))
                }
                "knn" | "knn-all" => {
                    let dim = match arg {
                        Some(a) => Some(number(text, tok, a, "dimension")?),
                        None if name == "knn-all" => {
                            return Err(bad(text, tok, "knn-all needs an argument: knn-all:d"));
                        }
                        None => None,
                    };
                    let targets = if name == "knn" {
                        Targets::Dynamic(10)
                    } else {
                        Targets::All
                    };
                    method = Some(Method::Knn { dim, targets });
                }
                "ridge" => {
                    none()?;
                    method = Some(Method::Ridge);
                }
                "svm" => {
                    none()?;
                    method = Some(Method::Svm);
                }
                _ => return Err(bad(text, tok, format!("unknown token; {EXPECTED}"))),
            }
        }
        let Some(method) = method else {
            return Err(bad(
                text,
                tokens.last().copied().unwrap_or(""),
                format!("no classifier; {EXPECTED}"),
            ));
        };
        Ok(ClassifierSpec {
            text: text.to_string(),
            pca,
            method,
        })
    }

    /// Parses a `;`-separated list of SPECs.
    pub fn parse_list(s: &str) -> Result<Vec<ClassifierSpec>> {
        let items: Vec<&str> = s
            .split(';')
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .collect();
        if items.is_empty() {
            return Err(bad(s, "", "empty classifier list"));
        }
        items.into_iter().map(ClassifierSpec::parse).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_examples() {
        let l =
            ClassifierSpec::parse_list("ncm; pca:128,ncm; ncmml:128; ncmc:128x10; fda:9; knn:128")
                .unwrap();
        assert_eq!(l.len(), 6);
        assert_eq!(l[1].pca, Some(128));
        assert_eq!(l[1].method, Method::Ncm);
        assert_eq!(l[3].method, Method::Ncmc { dim: 128, k: 10 });
        assert_eq!(l[4].method, Method::Fda(9));
        assert_eq!(
            l[5].method,
            Method::Knn {
                dim: Some(128),
                targets: Targets::Dynamic(10)
            }
        );
    }

    #[test]
    fn errors_name_the_bad_token() {
        for (s, tok) in [
            ("ncm; pca:12,ncmx", "ncmx"),
            ("ncmc:128", "ncmc:128"),
            ("ncm,pca:3", "pca:3"),
            ("fda:0", "fda:0"),
            ("pca:64", "pca:64"),
            ("ncm:4", "ncm:4"),
        ] {
            let e = ClassifierSpec::parse_list(s).unwrap_err().to_string();
            assert!(e.contains(&format!("bad token {tok:?}")), "{s}: {e}");
        }
    }
}
