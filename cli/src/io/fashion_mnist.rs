//! Loader for a Fashion-MNIST directory as installed by Debian's `dataset-fashion-mnist`
//! (`/usr/share/datasets/fashion-mnist`: `train-images-idx3-ubyte.gz`,
//! `train-labels-idx1-ubyte.gz`, `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz`;
//! the uncompressed names are accepted too). Returns the official split: the 60,000 training
//! images first (split 0), then the 10,000 test images (split 1).

use std::path::{Path, PathBuf};

use ndarray::{Array2, concatenate};

use super::idx::{read_idx_images, read_idx_labels};
use crate::error::{IoError, IoResult as Result};

/// Where Debian's `dataset-fashion-mnist` package installs the files.
pub const FASHION_MNIST_DEBIAN_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// Vectors with one class label and one split flag per row (0 = train/database, 1 = test/query,
/// the convention of the `split.npy` files of `shared/datasets`).
#[derive(Debug, Clone, PartialEq)]
pub struct LabeledVectors {
    pub vectors: Array2<f32>,
    pub labels: Vec<i64>,
    pub split: Vec<i32>,
}

const PARTS: [(&str, &str); 2] = [
    ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
];

/// Finds `base.gz` or `base` in `dir`; the error names the `.gz` path that was expected.
fn locate(dir: &Path, base: &str) -> Result<PathBuf> {
    let gz = dir.join(format!("{base}.gz"));
    if gz.is_file() {
        return Ok(gz);
    }
    let plain = dir.join(base);
    if plain.is_file() {
        return Ok(plain);
    }
    Err(IoError::Io {
        path: gz,
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "Fashion-MNIST file not found (Debian: apt-get install dataset-fashion-mnist)",
        ),
    })
}

/// True when `dir` holds the four Fashion-MNIST files (compressed or not).
pub fn is_fashion_mnist_dir(dir: impl AsRef<Path>) -> bool {
    let dir = dir.as_ref();
    dir.is_dir()
        && PARTS
            .iter()
            .all(|(i, l)| locate(dir, i).is_ok() && locate(dir, l).is_ok())
}

/// Loads the full data set: pixel values as `f32` in 0..=255 (784 per image), labels 0-9, and
/// the split vector. Image and label counts must agree per part, and both parts must have the
/// same image size.
pub fn load_fashion_mnist(dir: impl AsRef<Path>) -> Result<LabeledVectors> {
    let dir = dir.as_ref();
    let mut images = Vec::with_capacity(2);
    let mut labels = Vec::new();
    let mut split = Vec::new();
    for (part, (img_name, lab_name)) in PARTS.iter().enumerate() {
        let img_path = locate(dir, img_name)?;
        let lab_path = locate(dir, lab_name)?;
        let img = read_idx_images(&img_path)?;
        let lab = read_idx_labels(&lab_path)?;
        if img.nrows() != lab.len() {
            return Err(IoError::WrongShape {
                path: lab_path,
                shape: vec![lab.len()],
                detail: format!(
                    "{} labels for the {} images of {}",
                    lab.len(),
                    img.nrows(),
                    img_path.display()
                ),
            });
        }
        if let Some(first) = images.first().map(|m: &Array2<f32>| m.ncols())
            && first != img.ncols()
        {
            return Err(IoError::WrongShape {
                path: img_path,
                shape: vec![img.nrows(), img.ncols()],
                detail: format!(
                    "images have {} pixels, the training images {first}",
                    img.ncols()
                ),
            });
        }
        split.extend(std::iter::repeat_n(part as i32, img.nrows()));
        labels.extend(lab);
        images.push(img);
    }
    let views: Vec<_> = images.iter().map(|m| m.view()).collect();
    let vectors = concatenate(ndarray::Axis(0), &views).map_err(|e| IoError::WrongShape {
        path: dir.to_path_buf(),
        shape: vec![],
        detail: e.to_string(),
    })?;
    Ok(LabeledVectors {
        vectors,
        labels,
        split,
    })
}
