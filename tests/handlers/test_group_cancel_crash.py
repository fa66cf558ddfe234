"""A group's cancel that dies after its write (the stop) and before its sweep started (the clean-up): the next
cancel sweeps what the one that died should have swept, as well as what joined since."""

from contextlib import contextmanager

import pytest

from scheduler_runtime import clock

from .conftest import call_api, faulty, service_error, window
from .grouping import cancel, cancel_call, create, prompt_sweep, sweep  # noqa: F401 - prompt_sweep: autouse

pytestmark = pytest.mark.usefixtures("virtual_clock")


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
        status, _ = cancel_call()
    assert status == 500


def _swept(aws, member_ids: list[str]) -> None:
    """Each member's record CANCELLED as stored (not only shown from the cancel item) and its timer gone."""
    assert {aws.item(f"SCHEDULE#{m}", "RECORD")["status"]["S"] for m in member_ids} == {"CANCELLED"}
    assert aws.count_items("TIMER#") == 0


class _Behind:
    """``base``, ``ms`` behind: a host whose clock is late."""

    def __init__(self, base: clock.Clock, ms: int) -> None:
        self.base, self.ms = base, ms

    def now_ms(self) -> int:
        return self.base.now_ms() - self.ms

    def sleep(self, seconds: float) -> None:
        self.base.sleep(seconds)


@contextmanager
def _clock_behind(ms: int):
    """The runtime of this process on a clock ``ms`` behind the one it reads, for the block."""
    base = clock.in_use()
    clock.use(_Behind(base, ms))
    try:
        yield
    finally:
        clock.use(base)


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


def test_a_cancel_stamped_before_one_that_died_sweeps_the_members_that_one_stopped(aws):
    """A retry from a host whose clock is behind: its stamp does not move the cancel, but its sweep still covers
    what the one that died stopped."""
    with window(1):
        create("stopped-early", 30)
    _cancel_that_dies("while sending the first sweep message")
    stop = aws.item("GROUP#g1", "CANCEL")["cancelledBeforeMs"]
    with _clock_behind(10_000):
        status, answer = call_api("DELETE", "/groups/g1")
    assert (status, answer["stopped"]) == (200, {"schedules": 0, "periodic": 0})
    assert aws.item("GROUP#g1", "CANCEL")["cancelledBeforeMs"] == stop  # the retry's earlier stamp left it
    sweep(aws)
    _swept(aws, ["stopped-early"])
