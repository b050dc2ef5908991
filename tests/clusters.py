"""The local clusters the engine tests run on: a Dask LocalCluster of 2 worker processes
(one thread each) and a new local Ray instance with 2 CPUs (never one a `ray start` left
on the machine). Each yields its client (Dask) or module (Ray) and stops it after.

One Dask cluster is shared by the modules that leave its workers alone (those that set
``SHARES_DASK_CLUSTER = True``, through the ``dask_cluster`` fixture): started at the
first test that asks, closed after the last test of those modules (``tests/conftest.py``;
an idle cluster's heartbeats cost ~8% of a core). Each module gets a client of its own,
closed after the module, so no client outlives it (a later test's ``get_client()``
finds none). A test that kills workers starts a cluster of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

RAY_SLOW = pytest.param("ray", marks=pytest.mark.slow)
"""Ray as a test parameter where the default run has Dask already: each local Ray start
costs 5-15 s, so the default run (CI) starts Ray for one module's tests only
(``tests/test_distributed.py``) and the connect checks; ``-m slow`` runs the rest."""


def dask_cluster() -> Iterator[Any]:
    """A Dask LocalCluster of 2 worker processes, one thread each; closed after."""
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    yield cluster
    cluster.close()


_SHARED: list[Any] = []


def shared_dask_cluster() -> Any:
    """The shared Dask cluster, started at the first call."""
    if not _SHARED:
        started = dask_cluster()
        _SHARED.append((next(started), started))
    return _SHARED[0][0]


def close_shared_dask_cluster() -> None:
    """Close the shared Dask cluster if it was started (a later call starts a new one)."""
    if _SHARED:
        next(_SHARED.pop()[1], None)


def dask_client(cluster: Any = None) -> Iterator[Any]:
    """A client of ``cluster`` (left running after), or of a new cluster of its own
    (:func:`dask_cluster`, closed after); the client is closed after either way."""
    distributed = pytest.importorskip("distributed")
    own = dask_cluster() if cluster is None else None
    client = distributed.Client(next(own) if own is not None else cluster)
    yield client
    client.close()
    if own is not None:
        next(own, None)  # closed


def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
