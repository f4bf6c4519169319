//! The engine's class means (`ClassMeans`) and the research classifier (`model::Ncm`) are one
//! NCM (Mensink et al., TPAMI 2013, eq. 9-11): the class means hold an `Ncm` over the projected
//! means and classify with its centred f32 scan table. This test pins that arithmetic to the
//! formulas the class means were defined by (ARCHITECTURE.md, "classes/"), bit for bit: the
//! projected means are `Model::project` of `sum / n`, `b_c = −½‖Wμ_c‖²` summed in f64, the
//! centring point is the f64 mean of the projected means, and the scores are the dense dot
//! kernel over rows `[Wμ_c − r, −½‖Wμ_c − r‖²]` against `[Wx − r, 1]`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use codedb::format::{ClassRecord, ClassTable, FileId};
use codedb::kernels::{DenseRows, DenseValues, Metric, ScanOptions, dense_topk};
use codedb::model::Ncm;
use codedb::{ClassMeans, Model, PipelineSpec, TrainOptions};
use ndarray::{Array2, s};

/// Descriptors far from the origin (where centring matters), in `classes` classes.
fn data(rows: usize, dim: usize, classes: usize) -> (Array2<f32>, Vec<u32>) {
    let x = Array2::from_shape_fn((rows, dim), |(i, j)| {
        100.0 + (7 * (i % classes)) as f32 + ((i * 31 + j * 17) % 11) as f32 * 0.37
    });
    let labels = (0..rows).map(|i| (i % classes) as u32).collect();
    (x, labels)
}

fn table(x: &Array2<f32>, labels: &[u32], classes: usize) -> ClassTable {
    let dim = x.ncols();
    let mut records: Vec<ClassRecord> = (0..classes as u32)
        .map(|id| ClassRecord {
            // Ids out of order and with gaps: the class means sort them.
            id: 3 * (classes as u32 - id),
            name: format!("c{id}"),
            parent: None,
            count: 0,
            sum: vec![0.0; dim],
            centroids: Vec::new(),
            removed: 0,
        })
        .collect();
    for (row, &l) in x.rows().into_iter().zip(labels) {
        let r = &mut records[l as usize];
        r.count += 1;
        for (s, v) in r.sum.iter_mut().zip(row) {
            *s += *v as f64;
        }
    }
    // A class with no images has no mean and is left out.
    records.push(ClassRecord {
        id: 1,
        name: "empty".into(),
        parent: None,
        count: 0,
        sum: vec![0.0; dim],
        centroids: Vec::new(),
        removed: 0,
    });
    ClassTable {
        file_id: FileId::generate(),
        dim: dim as u32,
        delta_of: None,
        classes: records,
    }
}

#[test]
fn class_means_are_the_one_ncm_bit_for_bit() {
    for spec in ["pca-itq:8", "pq:4x4", "pca:8,float"] {
        let (x, labels) = data(300, 16, 5);
        let (model, _) = Model::train(
            &PipelineSpec::parse(spec).unwrap(),
            x.view(),
            &TrainOptions::default(),
        )
        .unwrap();
        let t = table(&x, &labels, 5);
        let means = ClassMeans::build(&t, &model).unwrap();

        // The definition, written out.
        let mut recs: Vec<&ClassRecord> = t.classes.iter().filter(|c| c.count > 0).collect();
        recs.sort_by_key(|c| c.id);
        assert_eq!(means.ids(), recs.iter().map(|c| c.id).collect::<Vec<_>>());
        let raw = Array2::from_shape_fn((recs.len(), x.ncols()), |(c, j)| {
            (recs[c].sum[j] / recs[c].count as f64) as f32
        });
        let projected = model.project(raw.view()).unwrap();
        let p = projected.ncols();
        let mut reference = vec![0f64; p];
        for row in projected.rows() {
            for (r, v) in reference.iter_mut().zip(row) {
                *r += *v as f64;
            }
        }
        let reference: Vec<f32> = reference
            .iter()
            .map(|r| (r / recs.len() as f64) as f32)
            .collect();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(means.reference()), bits(&reference), "{spec}");
        let mut augmented = Vec::new();
        for (row, c) in projected.rows().into_iter().zip(&recs) {
            let m = means.projected_mean(c.id).unwrap();
            assert_eq!(
                bits(m),
                bits(row.as_slice().unwrap()),
                "{spec} class {}",
                c.id
            );
            let norm: f64 = row.iter().map(|v| *v as f64 * *v as f64).sum();
            let b = means.bias(c.id).unwrap();
            assert_eq!(b.to_bits(), ((-0.5 * norm) as f32).to_bits(), "{spec}");
            let mut centred = 0f64;
            for (v, r) in row.iter().zip(&reference) {
                augmented.push(v - r);
                centred += ((v - r) as f64).powi(2);
            }
            augmented.push((-0.5 * centred) as f32);
        }

        // The research classifier over the same projected means has the same linear form.
        let ncm = Ncm::from_means(
            Vec::new(),
            recs.iter().map(|c| c.id as i64).collect(),
            projected.view(),
        )
        .unwrap();
        let (pm, bias) = ncm.linear_form();
        for (i, c) in recs.iter().enumerate() {
            assert_eq!(means.bias(c.id).unwrap(), bias[i] as f32, "{spec}");
            let m = means.projected_mean(c.id).unwrap();
            assert!(pm.row(i).iter().zip(m).all(|(a, b)| *a == *b as f64));
        }

        // Classification: the dense dot kernel over the centred rows.
        let queries = x.slice(s![0..40, ..]);
        let z = model.project(queries).unwrap();
        let got = means.classify_projected(z.view(), 3).unwrap();
        let mut q = Vec::new();
        for row in z.rows() {
            q.extend(row.iter().zip(&reference).map(|(v, r)| v - r));
            q.push(1.0);
        }
        let ids: Vec<u64> = recs.iter().map(|c| c.id as u64).collect();
        let rows = DenseRows::new(DenseValues::F32(&augmented), p + 1, &ids, None).unwrap();
        let want = dense_topk(&rows, &q, Metric::Dot, 3, ScanOptions::default()).unwrap();
        for (g, w) in got.iter().zip(&want) {
            let g: Vec<(u32, u64)> = g.iter().map(|c| (c.score.to_bits(), c.id as u64)).collect();
            let w: Vec<(u32, u64)> = w.iter().map(|(s, id)| (s.to_bits(), *id)).collect();
            assert_eq!(g, w, "{spec}");
        }
        // And the nearest class is the research classifier's nearest class.
        let top = ncm.top_k(z.view(), 1).unwrap();
        for (g, t) in got.iter().zip(&top) {
            assert_eq!(g[0].id as i64, t[0], "{spec}");
        }
    }
}
