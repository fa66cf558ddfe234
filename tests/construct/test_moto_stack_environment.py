"""The deploy tests' moto server environment routes every service to that server, whatever endpoint a test
before them left in the process environment."""

from __future__ import annotations

import os

import boto3
from moto_stack import moto_server_environment


def test_a_leftover_service_endpoint_does_not_divert_the_deployed_stacks_calls(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", "http://127.0.0.1:9")  # a stopped engine's, say
    with moto_server_environment() as endpoint:
        assert "AWS_ENDPOINT_URL_LAMBDA" not in os.environ
        assert boto3.client("lambda").list_event_source_mappings()["EventSourceMappings"] == []
        assert os.environ["AWS_ENDPOINT_URL"] == endpoint
    assert os.environ["AWS_ENDPOINT_URL_LAMBDA"] == "http://127.0.0.1:9"  # put back as it was
