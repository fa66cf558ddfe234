"""The client imports only the standard library and botocore, and works where the construct's
dependencies are not installed (a Lambda bundle made with ``pip install --no-deps``)."""

from __future__ import annotations

import textwrap

import pytest

from .subprocess_python import HEAVY, imports_none_of, run_python


@pytest.mark.slow  # a child process: only a fresh interpreter shows what an import loads
def test_importing_the_client_imports_no_cdk_jsii_or_boto3_nor_the_runtime():
    done = imports_none_of("cdk_delayed_scheduler.client", (*HEAVY, "scheduler_runtime"))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # a child process: only a fresh interpreter shows what an import loads
def test_importing_the_envelope_imports_nothing_beyond_the_standard_library():
    done = imports_none_of("cdk_delayed_scheduler.envelope", (*HEAVY, "botocore", "scheduler_runtime"))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # a child process: an interpreter where they cannot be imported
def test_the_client_works_where_the_constructs_dependencies_cannot_be_imported(scripted):
    answer = {"id": "x", "dueAt": "2030-01-01T00:00:00.000Z", "status": "QUEUED", "target": "default"}
    server = scripted([(201, answer)])
    code = textwrap.dedent(f"""
        import importlib.abc, sys
        from datetime import timedelta

        class Absent(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {HEAVY!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None

        sys.meta_path.insert(0, Absent())
        from cdk_delayed_scheduler.client import Envelope, SchedulerClient
        print(SchedulerClient({server.url!r}, region="us-east-1").schedule(timedelta(seconds=5), {{"a": 1}}).status)
        print(Envelope.from_event({{"detail": {{"id": "x", "dueAt": "2030-01-01T00:00:00.000Z", "attempt": 1,
              "firedAt": "2030-01-01T00:00:00.500Z", "dedupeKey": "x@1893456000000", "payload": 1,
              "target": "default"}}}}).lateness.total_seconds())
    """)
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["QUEUED", "0.5"]
    assert server.seen[0].body["payload"] == {"a": 1} and "authorization" in server.seen[0].headers
