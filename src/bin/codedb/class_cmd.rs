//! `codedb add-class` and `codedb classify`: argument plumbing over `codedb::classes`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use codedb::classes::{
    ClassRef, ClassSource, DEFAULT_PRIOR_CANDIDATES, DEFAULT_PRIOR_WEIGHT, MeanSource, NewClass,
    PriorScope, choose_prior_weight,
};
use codedb::model::Model;

/// Options of `codedb add-class`.
pub struct AddClassArgs<'a> {
    pub dir: &'a Path,
    pub name: &'a str,
    pub id: Option<u32>,
    pub parent: Option<&'a str>,
    pub data: Option<&'a Path>,
    pub mean: Option<&'a Path>,
    pub prior_weight: Option<u64>,
    pub prior_scope: &'a str,
    pub validation: Option<&'a Path>,
    pub validation_labels: Option<&'a Path>,
    pub seed: u64,
    pub json: bool,
}

pub fn add_class(a: &AddClassArgs<'_>) -> Result<ExitCode> {
    let scope = PriorScope::parse(a.prior_scope).with_context(|| {
        format!(
            "--prior-scope {}: expected parent or ancestors",
            a.prior_scope
        )
    })?;
    if a.validation.is_some() != a.validation_labels.is_some() {
        bail!("--validation and --validation-labels go together");
    }
    if a.validation.is_some() && (a.data.is_none() || a.parent.is_none()) {
        bail!("--validation chooses the prior weight of a class with --data and --parent");
    }
    if a.validation.is_some() && a.prior_weight.is_some() {
        bail!("give --prior-weight or --validation, not both");
    }
    let data = a.data.map(codedb::io::load_vectors).transpose()?;
    let mean = match a.mean {
        None => None,
        Some(p) => {
            let m = codedb::io::load_vectors(p)?;
            if m.nrows() != 1 {
                bail!("{}: a mean is one row, got {} rows", p.display(), m.nrows());
            }
            Some(m.row(0).to_vec())
        }
    };
    let index = crate::recovery_cmd::open_writer(a.dir)?;
    // The prior weight: given, chosen on validation data, or the documented default.
    let mut choice = None;
    let weight = match (a.prior_weight, a.validation, a.validation_labels, &data) {
        (Some(m), ..) => m,
        (None, Some(v), Some(l), Some(x)) if a.parent.is_some() => {
            let model = Model::from_model_file(index.model())?;
            let table = index
                .staged_classes()?
                .context("--validation: the index has no class table to validate on")?;
            let vx = codedb::io::load_vectors(v)?;
            let vl = codedb::demo::labels_u32(&codedb::io::load_labels(l)?)
                .with_context(|| l.display().to_string())?;
            let c = choose_prior_weight(
                &model,
                &table,
                vx.view(),
                &vl,
                x.nrows(),
                DEFAULT_PRIOR_CANDIDATES,
                scope,
                a.seed,
            )?;
            let w = c.weight;
            choice = Some(c);
            w
        }
        _ => DEFAULT_PRIOR_WEIGHT,
    };
    let source = match (&data, &mean) {
        (Some(_), Some(_)) => bail!("give --data or --mean, not both"),
        (Some(x), None) => ClassSource::Images(x.view()),
        (None, Some(m)) => ClassSource::Mean(m),
        (None, None) => ClassSource::None,
    };
    let new = NewClass {
        name: a.name.to_string(),
        id: a.id,
        parent: a.parent.map(|p| ClassRef::Name(p.to_string())),
        source,
        prior_weight: weight,
        prior_scope: scope,
    };
    let planned = index.add_new_classes(std::slice::from_ref(&new))?;
    let version = index.commit()?;
    let Some(p) = planned.first() else {
        bail!("internal: no class planned");
    };
    let how = match p.source {
        MeanSource::Images { n } => format!("mean of {n} images"),
        MeanSource::GivenMean => "given mean (count 1)".into(),
        MeanSource::ZeroShot { m } => format!("zero-shot prior (eq. 29), weight m = {m}"),
        MeanSource::Map { n, m } => {
            format!("MAP mean (eq. 30) of {n} images and the prior, m = {m}")
        }
        MeanSource::ImagesNoPrior { n } => {
            format!("mean of {n} images (no class under the parent has images yet: no prior)")
        }
    };
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "name": p.record.name, "id": p.record.id, "parent": p.record.parent,
                "count": p.record.count, "version": version, "mean": how,
                "prior_weight_choice": choice,
            })
        );
    } else {
        if let Some(c) = &choice {
            for (m, e) in &c.top1_error {
                println!("prior weight m = {m:<4} top-1 error {e:.4}");
            }
            println!(
                "chose m = {} on {} held-out images of {} classes",
                c.weight, c.test_images, c.episodes
            );
        }
        println!(
            "added class {:?} (id {}): {how}; version {version}",
            p.record.name, p.record.id
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn classify(dir: &Path, data: &Path, top: usize, format: &str) -> Result<ExitCode> {
    let snap = crate::recovery_cmd::open_snapshot(dir)?;
    let x = codedb::io::load_vectors(data)?;
    let res = snap.classify(x.view(), top)?;
    if format == "json" {
        let out: Vec<_> = res
            .iter()
            .enumerate()
            .map(|(i, l)| serde_json::json!({"row": i, "classes": l}))
            .collect();
        println!("{}", serde_json::to_string(&out)?);
    } else {
        use std::io::Write;
        let mut o = std::io::BufWriter::new(std::io::stdout().lock());
        writeln!(o, "row\trank\tid\tname\tscore")?;
        for (i, l) in res.iter().enumerate() {
            for (r, c) in l.iter().enumerate() {
                writeln!(o, "{i}\t{r}\t{}\t{}\t{}", c.id, c.name, c.score)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
