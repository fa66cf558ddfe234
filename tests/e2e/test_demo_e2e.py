"""``cdk-delayed-scheduler demo`` as a user runs it (the console script). It spends most of its time
waiting for its timers, so the session starts it early (see ``tests/conftest.py``); run alone, this
module starts it itself."""

from __future__ import annotations

import re

import pytest

from ..conftest import DEMO

pytestmark = pytest.mark.e2e


def test_demo_reports_figures_and_succeeds():
    # Eight timers still take every path of the demo (its plan keeps at least one of each); the last is due in 12 s.
    code, stdout = DEMO.output(timeout=180)
    assert code == 0, stdout[-4000:]
    assert re.search(r"delivered (\d+)/\1, lost 0, early 0", stdout)
    assert "delivered despite cancel 0" in stdout and "p99" in stdout
    # The periodic timer (rich may wrap its line): it fired, on its grid, never early, never after DELETE.
    periodic = re.search(r"periodic timer every 2s: (\d+) occurrences,\s+on its grid,\s+early 0,.*?delivered\s+after\s+DELETE\s+0",
                         stdout, re.S)
    assert periodic and int(periodic.group(1)) >= 2, stdout[-2000:]
