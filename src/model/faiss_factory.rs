//! FAISS index factory strings → pipeline SPECs, for users who know FAISS's vocabulary.
//!
//! FAISS names an index by a comma-separated factory string (`index_factory(d, "OPQ16,IVF256,
//! PQ16")`): optional pre-transforms (`PCA64`, `OPQ16`, `ITQ64`, …), one index type (`Flat`,
//! `PQ16`, `IVF256,PQ16`, `LSH`, …) and an optional refinement (`RFlat`). Most of codedb's
//! pipelines have a FAISS twin because both implement the same papers: PQ and IVFADC (Jégou,
//! Douze & Schmid, TPAMI 2011), OPQ (Ge et al., CVPR 2013), ITQ (Gong et al., TPAMI 2013),
//! 4-bit fast-scan PQ (André et al.). The translation says what it changed in `notes`, and
//! refuses what codedb does not implement (HNSW, scalar quantisers, whitening, …) with a typed
//! error naming the component, rather than handing back a pipeline that means something else.
//! The book's "Coming from FAISS" page lists every row this function is tested on.

use super::error::{ModelError, Result};
use super::spec::PipelineSpec;

/// What [`PipelineSpec::from_faiss_factory`] made of a FAISS factory string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaissTranslation {
    /// The codedb pipeline SPEC (it parses with [`PipelineSpec::parse`]), e.g. `ivf:256,pq:16x8`.
    pub spec: String,
    /// What differs from FAISS, or what to do at build or search time instead (one sentence
    /// each; empty when the pipeline is the same method).
    pub notes: Vec<String>,
}

/// The translator's state: the factory string (for errors) and what has been built so far.
struct Translator<'a> {
    factory: &'a str,
    steps: Vec<String>,
    notes: Vec<String>,
}

impl Translator<'_> {
    fn refuse(&self, part: &str, detail: impl Into<String>) -> ModelError {
        ModelError::FaissFactory {
            factory: self.factory.to_string(),
            part: part.to_string(),
            detail: detail.into(),
        }
    }

    /// A positive count written in the part (`256` of `IVF256`).
    fn count(&self, part: &str, digits: &str, what: &str) -> Result<usize> {
        match digits.parse::<usize>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(self.refuse(part, format!("{what} {digits:?} is not a positive integer"))),
        }
    }

    fn note(&mut self, s: impl Into<String>) {
        self.notes.push(s.into());
    }
}

/// `s` split after `prefix` into its leading digits and the rest, if `s` starts with `prefix`
/// followed by at least one digit (or by nothing when `digits_optional`).
fn prefix_digits<'s>(s: &'s str, prefix: &str) -> Option<(&'s str, &'s str)> {
    let rest = s.strip_prefix(prefix)?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    Some((&rest[..end], &rest[end..]))
}

/// A parsed `PQ…` component: `PQ16`, `PQ16x8`, `PQ32x4fs`, `PQ16np`.
struct PqPart {
    m: usize,
    nbits: u32,
    fast_scan: bool,
}

impl PipelineSpec {
    /// Translates a FAISS index factory string (`"IVF256,PQ16"`) into a codedb pipeline SPEC
    /// (`"ivf:256,pq:16x8"`) with notes on what differs; `dim` is the descriptors' dimension,
    /// FAISS's `d`, needed only where FAISS derives a count from it (`LSH` without a bit count).
    ///
    /// Refuses, with [`ModelError::FaissFactory`] naming the component, every part codedb has no
    /// counterpart for (graph indexes, scalar quantisers, whitening, `IVF…,Flat`, …) and every
    /// string that does not parse as a factory string. The returned SPEC always parses.
    pub fn from_faiss_factory(factory: &str, dim: Option<usize>) -> Result<FaissTranslation> {
        let text = factory.trim();
        let mut t = Translator {
            factory: text,
            steps: Vec::new(),
            notes: Vec::new(),
        };
        if text.is_empty() {
            return Err(t.refuse("", "empty factory string"));
        }
        let mut parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if let Some(empty) = parts.iter().find(|p| p.is_empty()) {
            return Err(t.refuse(empty, "empty component (two commas in a row?)"));
        }
        t.strip_wrappers(&mut parts)?;
        if parts.is_empty() {
            return Err(t.refuse(text, "no index type (Flat, PQ…, IVF…,PQ…, LSH, …)"));
        }

        let mut opq: Option<(&str, usize)> = None;
        let mut quantizer: Option<String> = None;
        let mut i = 0;
        while i < parts.len() {
            let part = parts[i];
            if quantizer.is_some() {
                return Err(t.refuse(part, "comes after the index type, which must be last"));
            }
            if opq.is_some() && !part.starts_with("PQ") {
                let (o, _) = opq.unwrap_or_default();
                return Err(t.refuse(
                    o,
                    format!(
                        "OPQ is followed by {part:?}: codedb's opq:MxB is a quantiser (rotation \
                         and PQ learned together), so OPQ must come right before PQ (no IVF)"
                    ),
                ));
            }
            let next = parts.get(i + 1).copied();
            if let Some(after) = part.strip_prefix("PCA") {
                t.pca(part, after)?;
            } else if let Some((m, rest)) = prefix_digits(part, "OPQ") {
                opq = Some((part, t.opq(part, m, rest)?));
            } else if let Some((d, rest)) = prefix_digits(part, "ITQ") {
                quantizer = Some(t.itq(part, d, rest, next)?);
                i += 1; // the LSH that takes the signs
            } else if part == "Flat" {
                quantizer = Some("float".to_string());
                t.note(
                    "Flat: search with --mode float (squared L2, the default) or float-ip (inner \
                     product); FAISS's metric is a search option in codedb, not part of the index",
                );
            } else if part == "SQfp16" {
                quantizer = Some("float16".to_string());
            } else if part.starts_with("SQ") {
                return Err(t.refuse(
                    part,
                    "scalar quantisers have no counterpart; float16 halves the bytes (SQfp16), \
                     pq:MxB or pq4:M compress further",
                ));
            } else if part.starts_with("PQ") {
                let pq = parse_pq(&t, part)?;
                quantizer = Some(pq_token(&mut t, part, &pq, opq.take())?);
            } else if let Some((n, flags)) = prefix_digits(part, "LSH") {
                quantizer = Some(t.lsh(part, n, flags, dim, i > 0)?);
            } else if let Some((k, rest)) = prefix_digits(part, "IVF") {
                quantizer = Some(t.ivf(part, k, rest, next)?);
                i += 1; // the PQ that encodes the residuals
            } else {
                return Err(refuse_unknown(&t, part));
            }
            i += 1;
        }
        t.finish(&parts, opq, quantizer)
    }
}

/// The steps of a factory string, one component at a time. Each method reads one FAISS token
/// (its letters and counts) and pushes the codedb steps it stands for, or refuses it.
impl<'a> Translator<'a> {
    /// Drops what wraps an index in FAISS but is built in or a search option in codedb: a
    /// leading `IDMap`/`IDMap2` (codedb rows always have ids) and a trailing exact refinement
    /// `RFlat` (stored vectors and `--rerank`), each with a note; refuses any other `Refine(…)`.
    fn strip_wrappers(&mut self, parts: &mut Vec<&'a str>) -> Result<()> {
        // IDMap / IDMap2 wrap any index in FAISS to give it ids; codedb rows always have them.
        while let Some(&first) = parts.first()
            && (first == "IDMap" || first == "IDMap2")
        {
            self.note(format!(
                "{first}: not needed, every codedb row carries a u64 id (automatic, or given \
                 with `add --ids` / `add(x, ids=…)`)"
            ));
            parts.remove(0);
        }
        // A trailing refinement: FAISS keeps the raw vectors and re-scores the candidates.
        if let Some(&last) = parts.last() {
            if last == "RFlat" || last == "Refine(Flat)" {
                self.note(format!(
                    "{last}: store the vectors at build (`--store-vectors f32`) and re-rank at \
                     search (`--rerank R`, R = k_factor × k)"
                ));
                parts.pop();
            } else if last.starts_with("Refine(") {
                return Err(self.refuse(
                    last,
                    "only an exact refinement has a counterpart: `RFlat` (stored vectors and \
                     `--rerank R`)",
                ));
            }
        }
        Ok(())
    }

    /// `PCA{d}` → `pca:d`, `PCAR{d}` → `pca:d,rr` (`after` is the part after `PCA`); whitening
    /// (`PCAW…`) is refused.
    fn pca(&mut self, part: &str, after: &str) -> Result<()> {
        // PCA{d}, PCAR{d}, PCAW{d}, PCAWR{d}: FAISS writes the letters before the digits.
        let end = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let (letters, digits) = after.split_at(end);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.refuse(part, "expected PCA{d}, PCAR{d}, PCAW{d} or PCAWR{d}"));
        }
        let d = self.count(part, digits, "output dimension")?;
        match letters {
            "" => self.steps.push(format!("pca:{d}")),
            "R" => {
                self.steps.push(format!("pca:{d}"));
                self.steps.push("rr".to_string());
            }
            "W" | "WR" => {
                return Err(self.refuse(
                    part,
                    "whitening has no counterpart: codedb's pca:C keeps the components' \
                     variances (ITQ and PQ rely on them); use PCA{d}",
                ));
            }
            _ => {
                return Err(self.refuse(part, "expected PCA{d}, PCAR{d}, PCAW{d} or PCAWR{d}"));
            }
        }
        Ok(())
    }

    /// `OPQ{M}` or `OPQ{M}_{d}`: returns M, which the PQ after it must match (codedb's opq:MxB
    /// learns rotation and PQ together, Ge et al.); the reduction to d becomes `pca:d` first.
    fn opq(&mut self, part: &str, m: &str, rest: &str) -> Result<usize> {
        let m = self.count(part, m, "sub-quantiser count")?;
        if let Some(d) = rest.strip_prefix('_') {
            let d = self.count(part, d, "output dimension")?;
            self.steps.push(format!("pca:{d}"));
            self.note(format!(
                "{part}: FAISS learns the reduction to {d} dimensions inside OPQ; codedb \
                 reduces with PCA first, then learns OPQ's rotation on the {d} \
                 dimensions"
            ));
        } else if !rest.is_empty() {
            return Err(self.refuse(part, "expected OPQ{M} or OPQ{M}_{d}"));
        }
        Ok(m)
    }

    /// `ITQ{d},LSH` (Gong et al.): ITQ learns a rotation for sign bits, so it must be followed
    /// by the `LSH` that takes the signs (`next`). Returns the quantiser token.
    fn itq(&mut self, part: &str, d: &str, rest: &str, next: Option<&str>) -> Result<String> {
        if !rest.is_empty() {
            return Err(self.refuse(part, "expected ITQ or ITQ{d}"));
        }
        if next != Some("LSH") {
            return Err(self.refuse(
                part,
                format!(
                    "ITQ learns a rotation for sign bits and must be followed by \
                     LSH (ITQ{{d}},LSH), not {:?}",
                    next.unwrap_or("nothing")
                ),
            ));
        }
        if d.is_empty() {
            // PCA to the full dimension is only a rotation, which ITQ learns anyway.
            self.steps.push("center".to_string());
            self.steps.push("itq".to_string());
            self.note(format!(
                "{part}: without a dimension FAISS runs PCA to the full dimension, a \
                 rotation ITQ learns anyway: center,itq,bits gives one bit per input \
                 dimension"
            ));
            return Ok("bits".to_string());
        }
        let d = self.count(part, d, "bit count")?;
        if self.steps.is_empty() {
            Ok(format!("pca-itq:{d}"))
        } else {
            self.steps.push(format!("pca:{d}"));
            self.steps.push("itq".to_string());
            Ok("bits".to_string())
        }
    }

    /// `LSH`, `LSH{n}` with `r`/`t` flags → `lsh:n` (Charikar's random hyperplanes), with a
    /// note on how FAISS's bits differ; the bit count defaults to `dim` as in FAISS. Only as
    /// the whole pipeline (`after_transform` refuses it after a pre-transform).
    fn lsh(
        &mut self,
        part: &str,
        n: &str,
        flags: &str,
        dim: Option<usize>,
        after_transform: bool,
    ) -> Result<String> {
        if !matches!(flags, "" | "r" | "t" | "rt") {
            return Err(self.refuse(part, "expected LSH, LSH{n}, with r and/or t after it"));
        }
        let n = if n.is_empty() {
            dim.ok_or_else(|| {
                self.refuse(
                    part,
                    "FAISS takes the bit count from the input dimension d: give the \
                     dimension (`codedb spec --dim D`) or write the bits (LSH256r)",
                )
            })?
        } else {
            self.count(part, n, "bit count")?
        };
        self.note(format!(
            "{part}: codedb's lsh:{n} is Charikar's random hyperplanes: the centred data \
             projected on {n} Gaussian directions, then signs. FAISS's LSH thresholds \
             {} at {}: the same family of codes, not the same bits",
            if flags.contains('r') {
                "a random rotation of the data"
            } else {
                "the first n input coordinates themselves"
            },
            if flags.contains('t') {
                "trained medians"
            } else {
                "0"
            }
        ));
        if after_transform {
            return Err(self.refuse(
                part,
                "LSH after a pre-transform has no counterpart: lsh:C is a whole \
                 pipeline; to take signs after PCA use ITQ{d},LSH or PCA{d},PQ…",
            ));
        }
        Ok(format!("lsh:{n}"))
    }

    /// `IVF{K},PQ{M}` → `ivf:K,pq:Mx8`: IVFADC (Jégou et al. §IV) with a flat k-means coarse
    /// quantiser and 8-bit PQ codes of the residuals, the only inverted file codedb has; `next`
    /// is the PQ component, consumed here. Returns the quantiser token.
    fn ivf(&mut self, part: &str, k: &str, rest: &str, next: Option<&str>) -> Result<String> {
        if k.is_empty() {
            return Err(self.refuse(part, "expected IVF{K}"));
        }
        if !rest.is_empty() {
            return Err(self.refuse(
                part,
                "only a flat k-means coarse quantiser (IVF{K}) has a counterpart; \
                 codedb's ivf:K assigns rows by exhaustive search over the K centroids",
            ));
        }
        let k = self.count(part, k, "list count")?;
        let Some(next) = next else {
            return Err(self.refuse(part, "IVF{K} needs an encoding after it (IVF256,PQ16)"));
        };
        if !next.starts_with("PQ") {
            return Err(self.refuse(
                next,
                format!(
                    "IVF{k},{next} has no counterpart: codedb's ivf:K stores 8-bit PQ \
                     codes of the residuals (ivf:{k},pq:Mx8); for inverted lists over \
                     other codes build with class lists (`--lists nearest`) and \
                     search with `--nprobe n`"
                ),
            ));
        }
        let pq = parse_pq(self, next)?;
        if pq.nbits != 8 || pq.fast_scan {
            return Err(self.refuse(
                next,
                "codedb's ivf:K encodes residuals with 8-bit PQ only (ivf:K,pq:Mx8)",
            ));
        }
        self.steps.push(format!("ivf:{k}"));
        self.note(format!(
            "IVF{k}: FAISS's nprobe is `search --nprobe n` (Python: nprobe=n); without \
             it every list is scanned"
        ));
        Ok(format!("pq:{}x8", pq.m))
    }

    /// The SPEC once every component is read: refuses an OPQ left without its PQ and a string
    /// with no index type, and checks the translation parses as a pipeline codedb trains (bit
    /// counts, ranges), naming the FAISS string, rather than failing at training.
    fn finish(
        mut self,
        parts: &[&str],
        opq: Option<(&str, usize)>,
        quantizer: Option<String>,
    ) -> Result<FaissTranslation> {
        let text = self.factory;
        if let Some((o, _)) = opq {
            return Err(self.refuse(o, "OPQ needs a PQ after it (OPQ16,PQ16)"));
        }
        let Some(q) = quantizer else {
            return Err(self.refuse(
                parts.last().copied().unwrap_or(text),
                "the string ends without an index type (Flat, PQ…, IVF…,PQ…, LSH, ITQ…,LSH)",
            ));
        };
        self.steps.push(q);
        let spec = self.steps.join(",");
        if let Err(source) = PipelineSpec::parse(&spec) {
            return Err(ModelError::FaissFactorySpec {
                factory: text.to_string(),
                spec,
                source: Box::new(source),
            });
        }
        Ok(FaissTranslation {
            spec,
            notes: self.notes,
        })
    }
}

/// `PQ{M}`, `PQ{M}x{B}`, `PQ{M}x4fs`, `PQ{M}np`.
fn parse_pq(t: &Translator<'_>, part: &str) -> Result<PqPart> {
    let Some((m, rest)) = prefix_digits(part, "PQ") else {
        return Err(refuse_unknown(t, part));
    };
    if m.is_empty() {
        return Err(t.refuse(part, "expected PQ{M}, PQ{M}x{B} or PQ{M}x4fs"));
    }
    let m = t.count(part, m, "sub-quantiser count")?;
    let (nbits, rest) = match rest.strip_prefix('x') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let b = t.count(part, &r[..end], "bits per sub-quantiser")?;
            (b, &r[end..])
        }
        None => (8, rest),
    };
    let fast_scan = match rest {
        "" | "np" => false,
        "fs" => true,
        _ => {
            return Err(t.refuse(
                part,
                format!("suffix {rest:?} has no counterpart (PQ{{M}}, PQ{{M}}x4fs and np are)"),
            ));
        }
    };
    if nbits != 8 && nbits != 4 {
        return Err(t.refuse(
            part,
            format!("{nbits}-bit sub-quantisers have no counterpart: codedb's PQ has 8 or 4 bits"),
        ));
    }
    if fast_scan && nbits != 4 {
        return Err(t.refuse(part, "fast-scan (fs) needs 4-bit sub-quantisers: PQ{M}x4fs"));
    }
    Ok(PqPart {
        m,
        nbits: nbits as u32,
        fast_scan,
    })
}

/// The quantiser token of a PQ component, with the OPQ before it, if any.
fn pq_token(
    t: &mut Translator<'_>,
    part: &str,
    pq: &PqPart,
    opq: Option<(&str, usize)>,
) -> Result<String> {
    if part.ends_with("np") {
        t.note(format!(
            "{part}: np only skips FAISS's polysemous training, which codedb does not do"
        ));
    }
    if let Some((o, om)) = opq {
        if om != pq.m {
            return Err(t.refuse(
                o,
                format!(
                    "OPQ{om} is trained for {om} sub-quantisers but {part} has {}: codedb \
                     learns them together (opq:MxB), so the counts must match",
                    pq.m
                ),
            ));
        }
        return Ok(format!("opq:{}x{}", pq.m, pq.nbits));
    }
    if pq.fast_scan {
        t.note(format!(
            "{part}: codedb stores 4-bit PQ codes in FAISS's fast-scan layout (blocks of 32 rows) \
             and scans them with the fast-scan kernel (--mode adc)"
        ));
        return Ok(format!("pq4:{}", pq.m));
    }
    Ok(format!("pq:{}x{}", pq.m, pq.nbits))
}

/// The error for a component that is no factory component codedb knows: the FAISS index types
/// without a counterpart are named as such.
fn refuse_unknown(t: &Translator<'_>, part: &str) -> ModelError {
    let no_counterpart = [
        (
            "HNSW",
            "graph indexes (HNSW) have no counterpart: codedb scans codes, exactly or \
                  through inverted lists (ivf:K,pq:Mx8) and multi-index hashing on binary codes",
        ),
        ("NSG", "graph indexes (NSG) have no counterpart"),
        (
            "IMI",
            "the inverted multi-index has no counterpart; ivf:K,pq:Mx8 is the inverted file",
        ),
        (
            "RR",
            "a random rotation to a chosen dimension has no counterpart: `rr` rotates without \
                changing the dimension (write PCAR{d} for pca:d,rr)",
        ),
        (
            "L2norm",
            "no normalisation stage: normalise the rows before adding, or search by inner \
                    product (--mode float-ip / adc-ip)",
        ),
        (
            "Pad",
            "no padding stage: PQ's sub-quantiser count must divide the dimension",
        ),
        ("RaBitQ", "RaBitQ has no counterpart"),
        ("Residual", "residual quantisers have no counterpart"),
        ("RQ", "residual quantisers have no counterpart"),
        ("LSQ", "additive quantisers have no counterpart"),
        ("PRQ", "product residual quantisers have no counterpart"),
        ("PLSQ", "additive quantisers have no counterpart"),
        ("ZnLattice", "lattice quantisers have no counterpart"),
    ];
    for (prefix, detail) in no_counterpart {
        if part.starts_with(prefix) {
            return t.refuse(part, detail);
        }
    }
    t.refuse(
        part,
        "not a FAISS factory component codedb translates (Flat, SQfp16, PQ{M}[x{B}|x4fs], \
         IVF{K},PQ{M}, LSH[{n}][r][t], ITQ[{d}],LSH, PCA{d}, PCAR{d}, OPQ{M}[_{d}], IDMap, RFlat)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(f: &str) -> String {
        PipelineSpec::from_faiss_factory(f, None).unwrap().spec
    }

    fn refused_part(f: &str) -> String {
        match PipelineSpec::from_faiss_factory(f, None) {
            Err(ModelError::FaissFactory { part, .. }) => part,
            // A translation the pipeline parser refuses: the whole string is at fault.
            Err(ModelError::FaissFactorySpec { factory, .. }) => factory,
            other => panic!("{f}: {other:?}"),
        }
    }

    #[test]
    fn the_issue_examples_translate() {
        assert_eq!(spec("IVF256,PQ16"), "ivf:256,pq:16x8");
        assert_eq!(spec("ITQ128,LSH"), "pca-itq:128");
        assert_eq!(spec("ITQ,LSH"), "center,itq,bits");
        assert_eq!(spec("PQ32x4fs"), "pq4:32");
        assert_eq!(spec("OPQ16,PQ16"), "opq:16x8");
        assert_eq!(spec("PCA64,PQ8"), "pca:64,pq:8x8");
        assert_eq!(spec("Flat"), "float");
        assert_eq!(spec("LSH256r"), "lsh:256");
        assert_eq!(spec("IDMap,PQ16,RFlat"), "pq:16x8");
    }

    #[test]
    fn lsh_without_bits_takes_the_dimension() {
        assert_eq!(refused_part("LSH"), "LSH");
        let t = PipelineSpec::from_faiss_factory("LSH", Some(64)).unwrap();
        assert_eq!(t.spec, "lsh:64");
        assert!(!t.notes.is_empty());
    }

    #[test]
    fn refusals_name_the_component() {
        assert_eq!(refused_part("IVF256,Flat"), "Flat");
        assert_eq!(refused_part("HNSW32"), "HNSW32");
        assert_eq!(refused_part("PCA64,HNSW32,Flat"), "HNSW32");
        assert_eq!(refused_part("OPQ16,PQ32"), "OPQ16");
        assert_eq!(refused_part("PQ16x6"), "PQ16x6");
        assert_eq!(refused_part("PCAW64,PQ8"), "PCAW64");
        assert_eq!(refused_part("PQ16,,Flat"), "");
        assert_eq!(refused_part("Flat,PQ8"), "PQ8");
        assert_eq!(refused_part("LSH12r"), "LSH12r");
        assert_eq!(refused_part("Foo"), "Foo");
    }
}
