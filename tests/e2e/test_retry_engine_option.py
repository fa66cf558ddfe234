"""The local engine's ``retry_max_age`` option and the CLI's ``--retry-max-age``: the construct's
``retry_max_age``, set on the functions as ``RETRY_MAX_AGE_SECONDS``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.cli import build_parser

from .conftest import wait_until

pytestmark = pytest.mark.e2e
SCRIPT = str(Path(sys.executable).with_name("cdk-delayed-scheduler"))


def refuse(envelope) -> None:
    raise RuntimeError("the target is down")


def _failed(read: dict) -> dict | None:
    return read if read["status"] == "FAILED" else None


def test_the_engines_retry_max_age_parks_a_schedule_that_gave_no_retry():
    # A visibility timeout of 66 s (6 x 11) puts the second attempt past a 60-second age: parked after the first.
    options = EngineOptions(target=refuse, shard_count=1, dispatcher_timeout=11, retry_max_age=60)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        assert api.raw("createSchedule", {"id": "aged", "delaySeconds": 0, "payload": {"keep": "me"}})[0] == 201
        read = wait_until(lambda: _failed(api.raw("getSchedule", id="aged")[1]), 20, "the schedule parked as FAILED",
                          interval=0.2)
        assert read["attempts"] == 1, read
        assert "maxAgeSeconds 60 exceeded" in read["lastError"]


def test_retry_max_age_option_is_checked_against_the_contract():
    with pytest.raises(ValueError, match="retry_max_age must be 60-86400 seconds, got 59"):
        EngineOptions(retry_max_age=59)
    assert EngineOptions().retry_max_age == 3600


def test_the_cli_flag_sets_the_option_and_a_bad_one_exits_2():
    assert build_parser().parse_args(["local", "--retry-max-age", "600"]).retry_max_age == 600
    assert build_parser().parse_args(["local"]).retry_max_age == 3600
    result = subprocess.run([SCRIPT, "local", "--retry-max-age", "59"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "must be 60-86400 seconds, got 59" in result.stderr
