"""The GIL is released while the engine searches, so Python threads run searches in parallel.

Two measures. (1) While one thread is inside `search`, another thread's Python loop keeps
running (with the GIL held it would be stopped for the whole call; a C call that holds the GIL,
`sorted` of a big list, is the control). This holds however loaded the machine is. (2) Two
threads searching take about the time of one: on a shared, loaded machine the wall-clock ratio
depends on the free cores, so it is compared with the ratio of a numpy matrix product, which
releases the GIL, measured the same way at the same time (best of a few rounds).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

import numpy as np
import pytest

import codedb


def _progress_during(call: Callable[[], object]) -> float:
    """Iterations per second another Python thread makes while `call` runs, relative to its
    rate while this thread sleeps (1.0: unhindered, 0.0: stopped)."""
    count = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)
        rates = []
        for work in (lambda: time.sleep(0.1), call):
            c, s = count[0], time.perf_counter()
            work()
            rates.append((count[0] - c) / (time.perf_counter() - s))
    finally:
        stop.set()
        t.join()
    return rates[1] / rates[0]


def _ratio(one: Callable[[], object], rounds: int = 5) -> float:
    """Best-of-`rounds` wall time of two concurrent calls over one call."""
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        one()
        serial = time.perf_counter() - t
        threads = [threading.Thread(target=one) for _ in range(2)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        best = min(best, (time.perf_counter() - t) / serial)
    return best


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(100_000, 64)).astype(np.float32)
    model = codedb.train(x[:5000], "pca-itq:64", seed=1)
    with codedb.Index.build(tmp_path_factory.mktemp("gil") / "idx", model, x) as idx:
        q = rng.normal(size=(1000, 64)).astype(np.float32)
        idx.search(q, k=10, mode="asym")  # warm: pages, kernels
        yield idx, q


def test_other_python_threads_run_during_a_search(big):
    idx, q = big
    # Best of three rounds each (most progress during a search, least during the control): a
    # loaded machine can stall the spinning thread for a while in any single round.
    searching = max(_progress_during(lambda: idx.search(q, k=10, mode="asym")) for _ in range(3))
    held = min(_progress_during(lambda: sorted(range(3_000_000, 0, -1))) for _ in range(3))
    assert held < 0.2, f"control: a GIL-holding call let the other thread run ({held:.2f})"
    assert searching > max(0.25, 3 * held), (searching, held)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores")
def test_two_threads_search_in_about_the_time_of_one(big):
    idx, q = big
    a = np.random.default_rng(1).random((700, 700), dtype=np.float32)

    def matmul() -> None:
        for _ in range(6):
            a @ a

    codedb_ratio = _ratio(lambda: idx.search(q, k=10, mode="asym", threads=1))
    numpy_ratio = _ratio(matmul)
    # Idle 2 cores: both ≈ 1. A search holding the GIL would be ≥ 2 there.
    assert codedb_ratio < max(1.6, 1.3 * numpy_ratio), (codedb_ratio, numpy_ratio)
