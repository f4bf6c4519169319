//! The pipeline SPEC grammar, shared by `codedb train --pipeline` and `codedb eval --pipelines`
//! (a `;`-separated list of SPECs).
//!
//! A SPEC is a comma-separated list of stage tokens ending in exactly one quantiser, or a
//! single preset named as in Gong et al. TPAMI 2013 (§4.2, §6.1):
//!
//! | token | meaning |
//! |---|---|
//! | `center` | subtract the training mean |
//! | `pca:C` | PCA to C dimensions (includes centering), eq. 1 |
//! | `proj:C` | C Gaussian random projections (LSH directions) |
//! | `rff` / `rff:D` | D random Fourier features (default 3,000), σ = mean 50-NN distance |
//! | `hom:chi2`, `hom:inter` | explicit χ² / intersection kernel map, 3 features per dimension (Vedaldi & Zisserman; format 1.6); first step only, non-negative input |
//! | `rr` | random orthogonal rotation |
//! | `itq` | ITQ rotation, eq. 2-3 (must come right before `bits`) |
//! | `ncmml:C` | NCMML metric W (C × D) learned from labels (Mensink et al. TPAMI 2013, eq. 3-7), as center + linear; needs `TrainOptions::labels` |
//! | `metric:R` | low-rank metric learning on label triplets (Gordo et al. CVPR 2012, eq. 1-4); needs labels |
//! | `attributes:R` | one-vs-rest class scores, then PCA to R ≤ classes (Gordo et al. eq. 5); needs labels |
//! | `cca:R` | CCA with the one-hot labels (R ≤ classes − 1) or `TrainOptions::view` (Gordo et al. eq. 6-8); before `itq` or `rr` its directions are scaled by their correlations (CCA-ITQ / CCA-RR, Gong et al. eq. 4) and R may exceed the view's rank (zero rows past it) |
//! | `jscl:R` | joint subspace and classifier learning (Gordo et al. eq. 9-13); needs labels |
//! | `ivf:K` | coarse quantiser, K k-means lists (≤ 65,536); must come right before `pq:Mx8`, which then encodes residuals (IVFADC, Jégou et al. TPAMI 2011 §IV) |
//! | `bits` | sign quantiser → binary codes (quantiser) |
//! | `sklsh:C` | C SKLSH bits (quantiser) |
//! | `picodes:C` | C PiCoDes bits learned from labels by block coordinate descent (Bergamo et al. NIPS 2011, eq. 1-6), stored as linear + binarize (quantiser); needs labels |
//! | `classemes:C` | C classeme bits: thresholded one-vs-rest and random-dichotomy SVMs, multi-class RFE to C (the PiCoDes paper's baseline), stored as linear + binarize (quantiser); needs labels |
//! | `pq:MxB` | PQ, M sub-quantisers of B = 8 or 4 bits (quantiser) |
//! | `pq4:M` | same as `pq:Mx4` (fast-scan layout) |
//! | `opq:MxB` | OPQ rotation + PQ (quantiser) |
//! | `float`, `float32`, `float16` | float storage (quantiser) |
//!
//! Presets: `lsh:C` = `center,proj:C,bits`; `pca-direct:C` = `pca:C,bits`; `pca-rr:C` =
//! `pca:C,rr,bits`; `pca-itq:C` = `pca:C,itq,bits`; `kpca-itq:C` = `rff:3000,pca:C,itq,bits`;
//! `sklsh:C`, `pq:MxB`, `pq4:M`, `opq:MxB`, `float`, `float16` alone are complete pipelines.
//! Examples: `pca:64,itq,bits`, `pca:128,pq:16x8` (Gordo et al.'s PCA → PQ with 8-dim
//! sub-vectors × 8 bits).
//!
//! Binary codes must have a multiple of 8 bits between 8 and 1024. Each error names the
//! offending token.

use std::fmt;
use std::str::FromStr;

use super::error::{ModelError, Result};
use super::hom::HomKernel;
use super::rff::DEFAULT_RFF_FEATURES;

/// Longest binary code, in bits.
pub const MAX_BINARY_BITS: usize = 1024;
/// Largest dimension or count a token may ask for.
pub const MAX_SPEC_DIM: usize = 1 << 16;

/// A float-to-float step of a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSpec {
    /// `center`: subtract the training mean.
    Center,
    /// `pca:C`: PCA to C dimensions (eq. 1).
    Pca(usize),
    /// `proj:C`: C Gaussian random projections.
    Projection(usize),
    /// `rff:D`: D random Fourier features.
    Rff(usize),
    /// `hom:chi2`, `hom:inter`: the explicit map of an additive homogeneous kernel (r = 1,
    /// 3× dimensions; format 1.6); first step only, non-negative input.
    Hom(HomKernel),
    /// `rr`: a random orthogonal rotation.
    RandomRotation,
    /// `itq`: the ITQ rotation (eq. 2-3).
    Itq,
    /// Supervised: an NCMML projection (needs labels at training time).
    Ncmml(usize),
    /// `metric:R`: low-rank metric learning on label triplets (needs labels).
    Metric(usize),
    /// `attributes:R`: class scores, then PCA to R (needs labels).
    Attributes(usize),
    /// `cca:R`: CCA with the one-hot labels or a given view; `scaled` (set when `itq` or `rr`
    /// follows) multiplies each direction by its canonical correlation (CCA-ITQ).
    Cca {
        /// Directions kept (R).
        dim: usize,
        /// Scale by the correlations (CCA-ITQ).
        scaled: bool,
    },
    /// `jscl:R`: joint subspace and classifier learning (needs labels).
    Jscl(usize),
    /// `ivf:K`: a k-means coarse quantiser of K lists; the `pq:Mx8` after it encodes residuals.
    Ivf(usize),
}

/// The final, code-producing stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantizerSpec {
    /// `bits`: sign bits.
    Bits,
    /// `sklsh:C`: C SKLSH bits.
    Sklsh(usize),
    /// `pq:MxB`, `pq4:M`: product quantisation.
    Pq {
        /// Sub-quantisers.
        m: usize,
        /// Bits per sub-quantiser, 8 or 4.
        nbits: u32,
    },
    /// `opq:MxB`: a learned rotation, then product quantisation.
    Opq {
        /// Sub-quantisers.
        m: usize,
        /// Bits per sub-quantiser, 8 or 4.
        nbits: u32,
    },
    /// `picodes:C`: C PiCoDes bits learned from class labels (Bergamo et al. NIPS 2011),
    /// stored as linear + binarize.
    Picodes(usize),
    /// `classemes:C`: C classeme bits (thresholded linear SVMs on the training classes and
    /// random dichotomies of them, multi-class RFE to C), stored as linear + binarize.
    Classemes(usize),
    /// `float`, `float32`, `float16`: the vectors themselves.
    Float {
        /// Store IEEE half precision instead of f32.
        half: bool,
    },
}

/// A parsed pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineSpec {
    /// The text it was parsed from (trimmed), e.g. `pca-itq:64`.
    pub text: String,
    /// The float-to-float steps, in order.
    pub steps: Vec<StepSpec>,
    /// The final, code-producing stage.
    pub quantizer: QuantizerSpec,
}

enum Token {
    Step(StepSpec),
    Quant(QuantizerSpec),
    Preset(Vec<StepSpec>, QuantizerSpec),
}

struct Parser<'a> {
    spec: &'a str,
}

impl Parser<'_> {
    fn err(&self, token: &str, detail: impl Into<String>) -> ModelError {
        ModelError::BadSpec {
            spec: self.spec.to_string(),
            token: token.to_string(),
            detail: detail.into(),
        }
    }

    fn number(&self, token: &str, s: &str, what: &str) -> Result<usize> {
        let v: usize = s
            .parse()
            .map_err(|_| self.err(token, format!("{what} {s:?} is not a positive integer")))?;
        if v == 0 || v > MAX_SPEC_DIM {
            return Err(self.err(
                token,
                format!("{what} must be between 1 and {MAX_SPEC_DIM}, got {v}"),
            ));
        }
        Ok(v)
    }

    fn m_by_bits(&self, token: &str, arg: &str) -> Result<(usize, u32)> {
        let Some((m, b)) = arg.split_once('x') else {
            return Err(self.err(token, "expected MxBITS, e.g. pq:16x8"));
        };
        let m = self.number(token, m, "sub-quantiser count M")?;
        let b = self.number(token, b, "bits per sub-quantiser")?;
        if b != 8 && b != 4 {
            return Err(self.err(
                token,
                format!("bits per sub-quantiser must be 8 or 4, got {b}"),
            ));
        }
        Ok((m, b as u32))
    }

    fn binary_bits(&self, token: &str, c: usize) -> Result<usize> {
        if !c.is_multiple_of(8) || c > MAX_BINARY_BITS {
            return Err(self.err(
                token,
                format!(
                    "binary codes need a multiple of 8 bits between 8 and {MAX_BINARY_BITS}, got {c}"
                ),
            ));
        }
        Ok(c)
    }

    fn token(&self, raw: &str) -> Result<Token> {
        let token = raw.trim();
        if token.is_empty() {
            return Err(self.err(
                raw,
                "empty stage (two commas in a row, or a trailing comma?)",
            ));
        }
        let lower = token.to_ascii_lowercase();
        let (name, arg) = match lower.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (lower.as_str(), None),
        };
        let need = |what: &str| -> Result<&str> {
            arg.ok_or_else(|| self.err(token, format!("{name} needs an argument: {name}:{what}")))
        };
        let none = || -> Result<()> {
            match arg {
                Some(_) => Err(self.err(token, format!("{name} takes no argument"))),
                None => Ok(()),
            }
        };
        Ok(match name {
            "center" => {
                none()?;
                Token::Step(StepSpec::Center)
            }
            "pca" => Token::Step(StepSpec::Pca(self.number(
                token,
                need("C")?,
                "dimension",
            )?)),
            "proj" => Token::Step(StepSpec::Projection(self.number(
                token,
                need("C")?,
                "dimension",
            )?)),
            "rff" => Token::Step(StepSpec::Rff(match arg {
                Some(a) => self.number(token, a, "feature count")?,
                None => DEFAULT_RFF_FEATURES,
            })),
            "ncmml" => Token::Step(StepSpec::Ncmml(self.number(
                token,
                need("C")?,
                "dimension",
            )?)),
            "metric" => Token::Step(StepSpec::Metric(self.number(
                token,
                need("R")?,
                "dimension",
            )?)),
            "attributes" => Token::Step(StepSpec::Attributes(self.number(
                token,
                need("R")?,
                "dimension",
            )?)),
            "cca" => Token::Step(StepSpec::Cca {
                dim: self.number(token, need("R")?, "dimension")?,
                scaled: false,
            }),
            "jscl" => Token::Step(StepSpec::Jscl(self.number(
                token,
                need("R")?,
                "dimension",
            )?)),
            "hom" => Token::Step(StepSpec::Hom(match need("chi2|inter")? {
                "chi2" => HomKernel::Chi2,
                "inter" => HomKernel::Intersection,
                k => {
                    return Err(self.err(
                        token,
                        format!("unknown kernel {k:?}: expected hom:chi2 or hom:inter"),
                    ));
                }
            })),
            "ivf" => Token::Step(StepSpec::Ivf(self.number(
                token,
                need("K")?,
                "list count K",
            )?)),
            "rr" => {
                none()?;
                Token::Step(StepSpec::RandomRotation)
            }
            "itq" => {
                none()?;
                Token::Step(StepSpec::Itq)
            }
            "bits" => {
                none()?;
                Token::Quant(QuantizerSpec::Bits)
            }
            "sklsh" => {
                let c = self.number(token, need("C")?, "bit count")?;
                Token::Quant(QuantizerSpec::Sklsh(self.binary_bits(token, c)?))
            }
            "picodes" => {
                let c = self.number(token, need("C")?, "bit count")?;
                Token::Quant(QuantizerSpec::Picodes(self.binary_bits(token, c)?))
            }
            "classemes" => {
                let c = self.number(token, need("C")?, "bit count")?;
                Token::Quant(QuantizerSpec::Classemes(self.binary_bits(token, c)?))
            }
            "pq" => {
                let (m, nbits) = self.m_by_bits(token, need("MxBITS")?)?;
                Token::Quant(QuantizerSpec::Pq { m, nbits })
            }
            "pq4" => {
                let m = self.number(token, need("M")?, "sub-quantiser count M")?;
                Token::Quant(QuantizerSpec::Pq { m, nbits: 4 })
            }
            "opq" => {
                let (m, nbits) = self.m_by_bits(token, need("MxBITS")?)?;
                Token::Quant(QuantizerSpec::Opq { m, nbits })
            }
            "float" | "float32" => {
                none()?;
                Token::Quant(QuantizerSpec::Float { half: false })
            }
            "float16" => {
                none()?;
                Token::Quant(QuantizerSpec::Float { half: true })
            }
            "lsh" | "pca-direct" | "pca-rr" | "pca-itq" | "kpca-itq" => {
                let c = self.number(token, need("C")?, "bit count")?;
                preset(name, self.binary_bits(token, c)?)
            }
            _ => {
                return Err(self.err(
                    token,
                    "unknown stage; expected one of center, pca:C, ncmml:C, metric:R, attributes:R, cca:R, \
                     jscl:R, proj:C, rff[:D], hom:chi2, hom:inter, rr, itq, ivf:K, \
                     bits, sklsh:C, picodes:C, classemes:C, pq:MxB, pq4:M, opq:MxB, float, float16, or a preset lsh:C, \
                     pca-direct:C, pca-rr:C, pca-itq:C, kpca-itq:C",
                ));
            }
        })
    }
}

/// The steps of a preset of `c` bits (`lsh`, `pca-direct`, `pca-rr`, `pca-itq`, `kpca-itq`:
/// the methods the ITQ paper of Gong & Lazebnik compares), quantised to bits.
fn preset(name: &str, c: usize) -> Token {
    let steps = match name {
        "lsh" => vec![StepSpec::Center, StepSpec::Projection(c)],
        "pca-direct" => vec![StepSpec::Pca(c)],
        "pca-rr" => vec![StepSpec::Pca(c), StepSpec::RandomRotation],
        "pca-itq" => vec![StepSpec::Pca(c), StepSpec::Itq],
        _ => vec![
            StepSpec::Rff(DEFAULT_RFF_FEATURES),
            StepSpec::Pca(c),
            StepSpec::Itq,
        ],
    };
    Token::Preset(steps, QuantizerSpec::Bits)
}

impl PipelineSpec {
    /// Parses one SPEC.
    pub fn parse(s: &str) -> Result<PipelineSpec> {
        let text = s.trim();
        let p = Parser { spec: text };
        if text.is_empty() {
            return Err(p.err("", "empty pipeline"));
        }
        let raw: Vec<&str> = text.split(',').collect();
        let mut steps = Vec::new();
        let mut quant: Option<(QuantizerSpec, &str)> = None;
        // The token that fixed the current output dimension (for bit-count errors).
        let mut dim_token: Option<(&str, usize)> = None;
        // Whether the data is zero-centred at this point (ITQ's premise, §3).
        let mut centred = false;
        for (i, &r) in raw.iter().enumerate() {
            let tok = r.trim();
            let t = p.token(r)?;
            if let Some((_, q)) = quant {
                return Err(p.err(
                    tok,
                    format!("comes after the quantiser {q:?}, which must be last"),
                ));
            }
            match t {
                Token::Preset(s, q) => {
                    if raw.len() != 1 {
                        return Err(p.err(tok, "a preset must be the whole pipeline"));
                    }
                    steps = s;
                    quant = Some((q, tok));
                }
                Token::Step(s) => {
                    if matches!(s, StepSpec::Hom(_)) && i > 0 {
                        return Err(p.err(
                            tok,
                            "hom maps non-negative descriptors (histograms): it must be the \
                             first step",
                        ));
                    }
                    if s == StepSpec::Itq && !centred {
                        return Err(p.err(
                            tok,
                            "itq needs zero-centred input (Gong et al. §3): put center or pca:C \
                             before it",
                        ));
                    }
                    if let StepSpec::Ivf(_) = s {
                        let next = raw.get(i + 1).map(|n| n.trim().to_ascii_lowercase());
                        let pq8 = next
                            .as_deref()
                            .and_then(|n| n.strip_prefix("pq:"))
                            .is_some_and(|a| a.ends_with("x8"));
                        if !pq8 {
                            return Err(p.err(
                                tok,
                                "ivf files rows under k-means lists and needs an 8-bit product \
                                 quantiser of the residuals right after it: ivf:K,pq:Mx8",
                            ));
                        }
                    }
                    if s == StepSpec::Itq {
                        let next = raw.get(i + 1).map(|n| n.trim().to_ascii_lowercase());
                        if next.as_deref() != Some("bits") {
                            return Err(p.err(
                                tok,
                                "itq learns a rotation for sign quantisation: it must come right \
                                 before bits",
                            ));
                        }
                    }
                    match s {
                        StepSpec::Pca(c)
                        | StepSpec::Ncmml(c)
                        | StepSpec::Metric(c)
                        | StepSpec::Attributes(c)
                        | StepSpec::Cca { dim: c, .. }
                        | StepSpec::Jscl(c)
                        | StepSpec::Projection(c)
                        | StepSpec::Rff(c) => {
                            dim_token = Some((tok, c));
                        }
                        _ => {}
                    }
                    match s {
                        // NCMML is stored as center + linear: zero-mean output.
                        StepSpec::Center | StepSpec::Pca(_) | StepSpec::Ncmml(_) => centred = true,
                        // The supervised projections are stored as center + linear too.
                        StepSpec::Metric(_)
                        | StepSpec::Attributes(_)
                        | StepSpec::Cca { .. }
                        | StepSpec::Jscl(_) => centred = true,
                        StepSpec::Rff(_) | StepSpec::Hom(_) | StepSpec::Ivf(_) => centred = false,
                        // Linear maps and rotations keep a zero mean.
                        StepSpec::Projection(_) | StepSpec::RandomRotation | StepSpec::Itq => {}
                    }
                    steps.push(s);
                }
                Token::Quant(q) => {
                    if q == QuantizerSpec::Bits
                        && let Some((dt, c)) = dim_token
                    {
                        p.binary_bits(dt, c)?;
                    }
                    quant = Some((q, tok));
                }
            }
        }
        // CCA-ITQ (Gong et al. eq. 4): CCA right before ITQ scales its directions; so does CCA
        // before a random rotation (CCA-RR, the paper's §6 baseline), which also makes
        // `cca:R,rr,float` the scaled embedding uncompressed.
        for i in 1..steps.len() {
            if matches!(steps[i], StepSpec::Itq | StepSpec::RandomRotation)
                && let StepSpec::Cca { scaled, .. } = &mut steps[i - 1]
            {
                *scaled = true;
            }
        }
        let Some((quantizer, _)) = quant else {
            let last = raw.last().map_or("", |r| r.trim());
            return Err(p.err(
                last,
                "the pipeline must end with a quantiser: bits, sklsh:C, pq:MxB, pq4:M, opq:MxB, \
                 float or float16",
            ));
        };
        Ok(PipelineSpec {
            text: text.to_string(),
            steps,
            quantizer,
        })
    }

    /// Parses a `;`-separated list of SPECs (as `codedb eval --pipelines`).
    pub fn parse_list(s: &str) -> Result<Vec<PipelineSpec>> {
        let items: Vec<&str> = s.split(';').map(str::trim).collect();
        if items.iter().all(|i| i.is_empty()) {
            return Err(ModelError::BadSpec {
                spec: s.to_string(),
                token: String::new(),
                detail: "empty pipeline list".into(),
            });
        }
        items
            .into_iter()
            .filter(|i| !i.is_empty())
            .map(PipelineSpec::parse)
            .collect()
    }

    /// Whether a step learns from class labels or a second view (`ncmml:C`, `metric:R`,
    /// `attributes:R`, `cca:R`, `jscl:R`).
    pub fn is_supervised(&self) -> bool {
        matches!(
            self.quantizer,
            QuantizerSpec::Picodes(_) | QuantizerSpec::Classemes(_)
        ) || self.steps.iter().any(|s| {
            matches!(
                s,
                StepSpec::Ncmml(_)
                    | StepSpec::Metric(_)
                    | StepSpec::Attributes(_)
                    | StepSpec::Cca { .. }
                    | StepSpec::Jscl(_)
            )
        })
    }

    /// Whether training needs `TrainOptions::labels`: every supervised step does, except
    /// `cca:R` when a second view is given (`has_view`).
    pub fn needs_labels(&self, has_view: bool) -> bool {
        matches!(
            self.quantizer,
            QuantizerSpec::Picodes(_) | QuantizerSpec::Classemes(_)
        ) || self.steps.iter().any(|s| match s {
            StepSpec::Cca { .. } => !has_view,
            StepSpec::Ncmml(_)
            | StepSpec::Metric(_)
            | StepSpec::Attributes(_)
            | StepSpec::Jscl(_) => true,
            _ => false,
        })
    }

    /// The explicit stage list, e.g. `pca:64,itq,bits` for `pca-itq:64`.
    pub fn canonical(&self) -> String {
        let mut parts: Vec<String> = self.steps.iter().map(StepSpec::token).collect();
        parts.push(self.quantizer.token());
        parts.join(",")
    }
}

impl StepSpec {
    /// The step as a SPEC token.
    pub fn token(&self) -> String {
        match self {
            StepSpec::Center => "center".to_string(),
            StepSpec::Pca(c) => format!("pca:{c}"),
            StepSpec::Projection(c) => format!("proj:{c}"),
            StepSpec::Rff(d) => format!("rff:{d}"),
            StepSpec::Hom(k) => format!("hom:{}", k.name()),
            StepSpec::RandomRotation => "rr".to_string(),
            StepSpec::Itq => "itq".to_string(),
            StepSpec::Ncmml(c) => format!("ncmml:{c}"),
            StepSpec::Metric(c) => format!("metric:{c}"),
            StepSpec::Attributes(c) => format!("attributes:{c}"),
            StepSpec::Cca { dim, .. } => format!("cca:{dim}"),
            StepSpec::Jscl(c) => format!("jscl:{c}"),
            StepSpec::Ivf(k) => format!("ivf:{k}"),
        }
    }
}

impl QuantizerSpec {
    /// The quantiser as a SPEC token.
    pub fn token(&self) -> String {
        match *self {
            QuantizerSpec::Bits => "bits".to_string(),
            QuantizerSpec::Sklsh(c) => format!("sklsh:{c}"),
            QuantizerSpec::Picodes(c) => format!("picodes:{c}"),
            QuantizerSpec::Classemes(c) => format!("classemes:{c}"),
            QuantizerSpec::Pq { m, nbits } => format!("pq:{m}x{nbits}"),
            QuantizerSpec::Opq { m, nbits } => format!("opq:{m}x{nbits}"),
            QuantizerSpec::Float { half: false } => "float".to_string(),
            QuantizerSpec::Float { half: true } => "float16".to_string(),
        }
    }
}

impl FromStr for PipelineSpec {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<PipelineSpec> {
        PipelineSpec::parse(s)
    }
}

impl fmt::Display for PipelineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
