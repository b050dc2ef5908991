"""The local clusters the engine tests run on: a Dask LocalCluster of 2 worker processes
(one thread each) and a new local Ray instance with 2 CPUs (never one a `ray start` left
on the machine). Each yields its client (Dask) or module (Ray) and stops it after."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

RAY_SLOW = pytest.param("ray", marks=pytest.mark.slow)
"""Ray as a test parameter where the default run has Dask already: each local Ray start
costs 5-15 s, so the default run (CI) starts Ray for one module's tests only
(``tests/test_distributed.py``) and the connect checks; ``-m slow`` runs the rest."""


def dask_client() -> Iterator[Any]:
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
