"""A testing kit: the whole scheduler in-process for your own tests, as moto's ``mock_aws`` is for AWS.

    from datetime import timedelta
    from cdk_delayed_scheduler.testing import local_scheduler

    with local_scheduler() as timers:
        timers.client.schedule(timedelta(hours=1), {"order": 42})
        timers.advance(hours=1)                      # no sleeping: the clock moves
        assert timers.deliveries()[0].payload == {"order": 42}

With pytest, the ``local_scheduler`` fixture gives the same object (the package registers it as a
pytest plugin). See docs/testing.md. Importing this module starts nothing and imports neither moto
nor botocore: they load when a scheduler starts.
"""

from typing import TYPE_CHECKING, Any

from ._deliveries import Delivery, LambdaHandler, WebhookRequest
from ._kit import LocalScheduler, local_scheduler

if TYPE_CHECKING:
    from ..local.deliveries import BusTarget, HttpsTarget, LambdaTarget, QueueTarget, StateMachineTarget, TopicTarget

__all__ = ["BusTarget", "Delivery", "HttpsTarget", "LambdaHandler", "LambdaTarget", "LocalScheduler", "QueueTarget",
           "StateMachineTarget", "TopicTarget", "WebhookRequest", "local_scheduler"]
_RESOURCE_TARGETS = ("BusTarget", "HttpsTarget", "LambdaTarget", "QueueTarget", "StateMachineTarget", "TopicTarget")


def __getattr__(name: str) -> Any:
    """The target classes (``QueueTarget``, ``StateMachineTarget``, ...) load with the engine, on first use."""
    if name in _RESOURCE_TARGETS:
        from ..local import deliveries  # noqa: PLC0415

        return getattr(deliveries, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
