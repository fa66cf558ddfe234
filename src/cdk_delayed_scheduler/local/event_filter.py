"""Lambda event filtering (the subset of the EventBridge pattern syntax the construct uses)."""

from __future__ import annotations

from typing import Any

_ABSENT = object()


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """True when ``event`` satisfies every field of ``pattern``."""
    for name, rule in pattern.items():
        value = event.get(name, _ABSENT) if isinstance(event, dict) else _ABSENT
        if isinstance(rule, dict):
            if value is _ABSENT:
                # Only an all-"exists": false sub-pattern matches a missing object.
                if not _only_absence_rules(rule):
                    return False
                continue
            if not matches(rule, value):
                return False
        elif not any(_leaf_matches(cond, value) for cond in rule):
            return False
    return True


def _leaf_matches(cond: Any, value: Any) -> bool:
    if isinstance(cond, dict):
        if "exists" in cond:
            return (value is not _ABSENT) == bool(cond["exists"])
        if value is _ABSENT:
            return False
        if "prefix" in cond:
            return isinstance(value, str) and value.startswith(cond["prefix"])
        if "anything-but" in cond:
            excluded = cond["anything-but"]
            return value not in (excluded if isinstance(excluded, list) else [excluded])
        raise ValueError(f"unsupported filter operator: {cond}")
    return value is not _ABSENT and value == cond


def _only_absence_rules(pattern: dict[str, Any]) -> bool:
    for rule in pattern.values():
        if isinstance(rule, dict):
            if not _only_absence_rules(rule):
                return False
        elif not all(isinstance(c, dict) and c.get("exists") is False for c in rule):
            return False
    return True
