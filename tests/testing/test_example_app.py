"""docs/testing.md's example, run as written: the sample application (docs/examples/reminders.py) and
its tests (docs/examples/test_reminders.py), collected here from their own module."""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))

from test_reminders import (  # noqa: E402,F401 - collected from this module, as written there
    empty_outbox,
    pytestmark,
    test_a_cancelled_appointment_sends_nothing,
    test_the_reminder_comes_an_hour_before_the_appointment,
)


def test_the_testing_page_shows_the_example_as_it_runs():
    page = (EXAMPLES.parents[0] / "testing.md").read_text()
    for name in ("reminders.py", "test_reminders.py"):
        assert f"```python\n{(EXAMPLES / name).read_text()}```" in page, name
