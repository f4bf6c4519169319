//! The real Fashion-MNIST files of Debian's `dataset-fashion-mnist`, when installed
//! (`apt-get install dataset-fashion-mnist`); skipped with a message otherwise. The parser is
//! exercised on hand-made IDX fixtures in `io_vecs_idx.rs` in any case.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

use codedb_cli::io::{
    FASHION_MNIST_DEBIAN_DIR, is_fashion_mnist_dir, load_fashion_mnist, open_rows,
};

#[test]
fn loads_the_debian_fashion_mnist() {
    let dir = Path::new(FASHION_MNIST_DEBIAN_DIR);
    if !is_fashion_mnist_dir(dir) {
        println!(
            "skipped: {FASHION_MNIST_DEBIAN_DIR} not installed (Debian dataset-fashion-mnist)"
        );
        return;
    }
    let data = load_fashion_mnist(dir).unwrap();
    assert_eq!(data.vectors.dim(), (70_000, 784));
    assert_eq!(data.labels.len(), 70_000);
    assert_eq!(data.split.iter().filter(|&&s| s == 0).count(), 60_000);
    assert_eq!(data.split.iter().filter(|&&s| s == 1).count(), 10_000);
    assert!(data.split[..60_000].iter().all(|&s| s == 0));
    // Balanced classes: 6,000 per class in train, 1,000 in test.
    for class in 0..10 {
        let train = (0..60_000).filter(|&i| data.labels[i] == class).count();
        let test = (60_000..70_000)
            .filter(|&i| data.labels[i] == class)
            .count();
        assert_eq!((train, test), (6_000, 1_000), "class {class}");
    }
    // Raw pixel values: integers in 0..=255, both extremes present.
    let (mut min, mut max) = (f32::MAX, f32::MIN);
    for &v in data.vectors.iter() {
        assert_eq!(v.fract(), 0.0);
        min = min.min(v);
        max = max.max(v);
    }
    assert_eq!((min, max), (0.0, 255.0));
    // The first training label of Fashion-MNIST is 9 (ankle boot), the first test label 9 too.
    assert_eq!((data.labels[0], data.labels[60_000]), (9, 9));

    // Streaming the test images gives the same rows as the bulk load.
    let mut r = open_rows(dir.join("t10k-images-idx3-ubyte.gz")).unwrap();
    assert_eq!((r.rows(), r.dim()), (10_000, 784));
    let mut at = 60_000;
    while let Some(chunk) = r.next_chunk(3_000).unwrap() {
        assert_eq!(
            chunk,
            data.vectors.slice(ndarray::s![at..at + chunk.nrows(), ..])
        );
        at += chunk.nrows();
    }
    assert_eq!(at, 70_000);
}
