"""A group's cancel that dies after its write (the stop) and before its sweep started (the clean-up): the next
cancel sweeps what the one that died should have swept, as well as what joined since."""

import pytest

from .conftest import call_api, faulty, service_error, window
from .grouping import cancel, create, prompt_sweep, sweep  # noqa: F401 - prompt_sweep is an autouse fixture


def _dies(operation: str):
    def fail(real, **kwargs):
        raise service_error(operation)

    return fail


DEATHS = {
    "while counting": ("dynamodb", {"query": _dies("Query")}),
    "while sending the first sweep message": ("sqs", {"send_message": _dies("SendMessage")}),
}


def _cancel_that_dies(where: str) -> None:
    service, operations = DEATHS[where]
    with faulty(service, **operations):
        status, _ = call_api("DELETE", "/groups/g1")
    assert status == 500


def _swept(aws, member_ids: list[str]) -> None:
    """Each member's record CANCELLED as stored (not only shown from the cancel item) and its timer gone."""
    assert {aws.item(f"SCHEDULE#{m}", "RECORD")["status"]["S"] for m in member_ids} == {"CANCELLED"}
    assert aws.count_items("TIMER#") == 0


@pytest.mark.parametrize("where", sorted(DEATHS))
def test_a_cancel_after_one_that_died_before_its_sweep_started_sweeps_the_members_it_stopped(aws, where):
    with window(1):
        create("before-both", 30)
        _cancel_that_dies(where)
        create("between", 30)
    assert call_api("GET", "/schedules/before-both")[1]["status"] == "CANCELLED"  # stopped by the write that stood
    assert cancel()["stopped"] == {"schedules": 1, "periodic": 0}  # it counts what joined since the one that died
    sweep(aws)
    _swept(aws, ["before-both", "between"])


def test_a_cancel_stamped_before_one_that_died_sweeps_the_members_that_one_stopped(aws, monkeypatch):
    """A retry from a host whose clock is behind: its stamp does not move the cancel, but its sweep still covers
    what the one that died stopped."""
    from scheduler_runtime.handlers import _group_routes

    with window(1):
        create("stopped-early", 30)
    _cancel_that_dies("while sending the first sweep message")
    clock = _group_routes.now_ms
    monkeypatch.setattr(_group_routes, "now_ms", lambda: clock() - 10_000)
    assert cancel()["stopped"] == {"schedules": 0, "periodic": 0}
    sweep(aws)
    _swept(aws, ["stopped-early"])
