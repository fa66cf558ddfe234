"""The pytest plugin (registered through the ``pytest11`` entry point): the ``local_scheduler`` fixture.

pytest loads this module in every run of every project that has the package installed, so it imports
nothing heavy and starts nothing: the engine and moto load when a test first asks for the fixture.

    def test_reminder(local_scheduler):
        local_scheduler.client.schedule(timedelta(minutes=5), {"order": 42})
        local_scheduler.advance(minutes=5)
        assert [d.payload for d in local_scheduler.deliveries()] == [{"order": 42}]

    @pytest.mark.local_scheduler(url_env="TIMERS_API", targets={"billing": None})
    def test_with_options(local_scheduler): ...

    @pytest.mark.local_scheduler(outcomes=True)     # record the outcome events
    def test_outcomes(local_scheduler): ...
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

MARKER = "local_scheduler"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(**options): options of the local_scheduler fixture "
                                       "(target=, targets=, url_env=, outcomes=, and EngineOptions fields)")


@pytest.fixture
def local_scheduler(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The scheduler running in-process for this test (``cdk_delayed_scheduler.testing.LocalScheduler``),
    with an empty account; options from the test's ``local_scheduler`` marker."""
    from .._local_required import require_local  # noqa: PLC0415 - the kit loads only when a test uses it

    try:
        require_local(f"the {MARKER} fixture")
    except ModuleNotFoundError as missing:
        pytest.fail(str(missing), pytrace=False)
    from . import local_scheduler as run  # noqa: PLC0415

    marker = request.node.get_closest_marker(MARKER)
    if marker is not None and marker.args:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword options only, got {marker.args!r}")
    with run(**(marker.kwargs if marker else {})) as scheduler:
        yield scheduler
