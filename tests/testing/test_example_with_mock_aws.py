"""docs/testing.md's example of a suite on moto's mock_aws whose target writes to its own table, run as written:
the sample application (docs/examples/orders.py) and its tests (docs/examples/test_orders.py), collected here."""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

from test_orders import (  # noqa: E402,F401 - collected from this module, as written there
    aws,
    orders_table,
    pytestmark,
    test_a_paid_order_stays_paid,
    test_an_unpaid_order_expires_after_a_day,
)


def test_the_testing_page_shows_the_mock_aws_example_as_it_runs():
    page = (EXAMPLES.parents[0] / "testing.md").read_text()
    for name in ("orders.py", "test_orders.py"):
        assert f"```python\n{(EXAMPLES / name).read_text()}```" in page, name
