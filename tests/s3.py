"""An S3 client for the tests against moto's server: one per environment (credentials,
region, endpoint, profile as they are now), made once. A new boto3 session per call
reads the service's model files again (~0.2 s a client); the default session would keep
the credentials it first found."""

from __future__ import annotations

import os
from typing import Any

import pytest

ENVIRONMENT = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_PROFILE",
)
_CLIENTS: dict[tuple[str | None, ...], Any] = {}


def client() -> Any:
    """The S3 client of the environment as it is now."""
    key = tuple(os.environ.get(name) for name in ENVIRONMENT)
    if key not in _CLIENTS:
        boto3 = pytest.importorskip("boto3")
        _CLIENTS[key] = boto3.session.Session().client("s3")
    return _CLIENTS[key]
