"""The local engine: the whole scheduler offline, with moto standing in for AWS.

The runtime's handlers run unchanged and in-process. Pollers stand in for the
Lambda event source mappings and the EventBridge rule, and a small local
endpoint stands in for Lambda's Invoke API so that deliveries go through the
runtime's real Lambda target.
"""

from .deliveries import BusTarget, QueueTarget, TopicTarget
from .engine import Engine, EngineOptions

__all__ = ["BusTarget", "Engine", "EngineOptions", "QueueTarget", "TopicTarget"]
