"""The engine leaves the process environment as it found it."""

import os

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.client import Recorder

pytestmark = pytest.mark.e2e


def test_stop_restores_the_environment(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("TABLE_NAME", "mine")
    before = dict(os.environ)
    with Engine(EngineOptions(target=Recorder(), shard_count=1)) as engine:
        assert os.environ["AWS_ENDPOINT_URL"] == engine.endpoint_url
        assert os.environ["TABLE_NAME"] == engine.table_name
    assert dict(os.environ) == before
