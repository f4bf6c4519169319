"""Shared fixtures: small generated data (seeded), a trained model, a built index."""

from __future__ import annotations

import os
import pathlib

# One BLAS thread, so test_gil's numpy reference measures threads, not BLAS's own pool.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pytest

import codedb

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data() -> tuple[np.ndarray, np.ndarray]:
    """600 descriptors of 32 dimensions in three classes, and their labels."""
    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(3), 200)
    x = (rng.normal(size=(600, 32)) + 4 * y[:, None]).astype(np.float32)
    return x, y


@pytest.fixture(scope="session")
def model(data: tuple[np.ndarray, np.ndarray]) -> codedb.Model:
    return codedb.train(data[0], "pca-itq:16", seed=3)


@pytest.fixture
def index(tmp_path: pathlib.Path, data: tuple[np.ndarray, np.ndarray], model: codedb.Model):
    idx = codedb.Index.create(tmp_path / "idx", model)
    idx.add(data[0])
    idx.commit()
    yield idx
    idx.close()


@pytest.fixture(scope="session")
def codedb_bin() -> pathlib.Path:
    """The CLI binary (`cargo build --release -p codedb-cli`; ./test.sh builds it first)."""
    path = pathlib.Path(os.environ.get("CODEDB_BIN", REPO / "target" / "release" / "codedb"))
    assert path.is_file(), f"{path} missing: run `cargo build --release -p codedb-cli` first"
    return path


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the whole run (codedb.distributed's Ray tests). Without Ray
    installed the tests skip, unless CODEDB_REQUIRE_RAY=1 (./test.sh sets it) makes that a
    failure."""
    if os.environ.get("CODEDB_REQUIRE_RAY") == "1":
        import ray
    else:
        ray = pytest.importorskip("ray")
    # ignore_reinit_error: the root README's doctest may have started this same cluster.
    # The one node advertises every shard's placement resource (codedb.distributed's
    # on_shard_nodes: shard s's actors ask for "codedb-shard-<s>"), as the node holding shard s
    # would on a cluster.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             resources={f"codedb-shard-{s}": 1 for s in range(4)})
    yield ray
    ray.shutdown()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that start or use the Ray cluster run last, so its background processes do not
    load the machine under the timing tests (test_gil)."""
    uses_ray = [
        i for i in items
        if "ray_cluster" in getattr(i, "fixturenames", ())
        or i.name in ("test_root_readme_python_section",
                      "test_each_shard_runs_on_the_node_that_advertises_it")
    ]
    items[:] = [i for i in items if i not in uses_ray] + uses_ray
