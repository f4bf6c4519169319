//! NCM classification over a snapshot (Mensink et al., TPAMI 2013, eq. 1 in the bias form of
//! eq. 9-11): the query rows are projected with the snapshot's model and scored against its
//! class means ([`ClassMeans::classify`]).

use ndarray::ArrayView2;

use crate::classes::{ClassError, ClassMeans, ClassScore};
use crate::storage::Snapshot;

impl Snapshot {
    /// The `top` best classes of each row of `x` (raw descriptors of the index's model input
    /// dimension) by NCM over this version's class table, best first, ties by smaller class
    /// id. The projected class means are built on the first call and kept
    /// ([`Snapshot::class_means`]).
    pub fn classify(
        &self,
        x: ArrayView2<f32>,
        top: usize,
    ) -> Result<Vec<Vec<ClassScore>>, ClassError> {
        let means: &ClassMeans = self.class_means()?;
        means.classify(self.model()?, x, top)
    }
}
