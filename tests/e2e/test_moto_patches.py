"""The engine's corrections to moto: each removes a cost or a difference from AWS, and answers stay right.

``moto_patch_checks.py`` runs in a process of its own (the corrections change moto for a whole
process), once as the engine's child serves moto and once with moto as it comes, so every
check is shown to fail without its correction.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
CHECKS = Path(__file__).with_name("moto_patch_checks.py")


@pytest.fixture(scope="module")
def runs() -> dict:
    """Both runs at once: ``corrected`` (as the engine serves moto) and ``as_it_comes``."""
    started = {
        name: subprocess.Popen([sys.executable, str(CHECKS), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, args in (("corrected", []), ("as_it_comes", ["--unpatched"]))
    }
    out = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr[-2000:]
        out[name] = json.loads(stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("name", [
    "query_reads_only_its_partition",
    "send_reads_no_counts",
    "delete_finds_its_message_by_handle",
    "routing_lists_no_directory",
    "stream_iterators_are_bounded",
    "stream_records_are_answered_as_stored",
    "cancelled_transaction_changes_nothing_and_the_stream_flows",
    "connections_are_kept_alive",
    "fifo_receive_reads_busy_groups_from_a_snapshot",
    "index_query_is_not_torn_by_a_write",
    "a_read_never_sees_half_a_write",
    "an_api_invocations_write_after_its_timeout_is_not_applied",
])
def test_each_correction_holds_and_fails_without_it(name, runs):
    assert runs["corrected"][name] == "ok"
    assert runs["as_it_comes"][name] != "ok"


def test_a_long_poll_sleeps_until_its_message_is_ready_and_never_returns_it_early(runs):
    result = runs["corrected"]["long_poll_waits_without_spinning"]
    assert isinstance(result, dict), result
    assert result["waited_s"] >= 1.0  # DelaySeconds=1: never before
    assert result["scans"] <= 4  # one scan, one sleep until the message is ready, one scan
    assert runs["as_it_comes"]["long_poll_waits_without_spinning"]["scans"] > result["scans"]
