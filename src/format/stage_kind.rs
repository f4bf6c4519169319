//! Model stage kind numbers (FORMAT.md §4.2). A number, once published, keeps its meaning
//! forever; new stages take new numbers. The tensors each kind holds are listed in FORMAT.md.

/// Subtract a mean vector: `x - mean`.
pub const CENTER: u16 = 1;
/// Linear map `W x (+ b)`: PCA, CCA, NCMML, LSH random projections, any learned projection.
pub const LINEAR: u16 = 2;
/// Orthogonal rotation `R^T x` (random rotation, ITQ).
pub const ROTATION: u16 = 3;
/// Sign quantiser: bit j = 1 iff `x_j > threshold_j` (thresholds default to 0).
pub const BINARIZE: u16 = 4;
/// Product quantiser: M sub-quantisers of K centroids (8- or 4-bit codes).
pub const PQ: u16 = 5;
/// Float storage (f32 or f16) for exact search and re-ranking.
pub const FLOAT: u16 = 6;
/// Random Fourier features `sqrt(2/D) cos(W x + b)` (KPCA-ITQ, Gong et al. §6.1).
pub const RFF: u16 = 7;
/// Shift-invariant kernel LSH (SKLSH): bit = sign(cos(w x + b) + t).
pub const SKLSH: u16 = 8;
/// Text head (format 1.5, written OPTIONAL): a vocabulary with idf and the PAMIR matrix that
/// scores text queries against the projected vectors (Grangier et al. 2006). Not needed to
/// encode, so older readers skip it.
pub const TEXT: u16 = 9;
/// Origin (format 1.6, written OPTIONAL): the pipeline spec a model was trained with, its seed,
/// and which spec step learned each stage (`inspect` names the method behind a `linear`).
pub const ORIGIN: u16 = 10;
/// Explicit feature map of an additive homogeneous kernel, χ² or intersection (format 1.6;
/// Vedaldi & Zisserman, as PiCoDes uses it): `2r + 1` features per input dimension.
pub const HOM: u16 = 11;

/// Name of a stage kind known to this build, or `None`.
pub fn name(kind: u16) -> Option<&'static str> {
    Some(match kind {
        CENTER => "center",
        LINEAR => "linear",
        ROTATION => "rotation",
        BINARIZE => "binarize",
        PQ => "pq",
        FLOAT => "float",
        RFF => "rff",
        SKLSH => "sklsh",
        TEXT => "text",
        ORIGIN => "origin",
        HOM => "hom",
        _ => return None,
    })
}

/// The format version that defined `kind` (1.0 for the first eight); in a file of an older
/// version the kind is unknown, as it was to the readers of that version.
pub fn since(kind: u16) -> (u16, u16) {
    match kind {
        TEXT => (1, 5),
        ORIGIN => (1, 6),
        HOM => (1, 6),
        _ => (1, 0),
    }
}
