"""Helpers for the construct tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INTEG = REPO / "integ"

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")


def load_example_app():
    """``integ/app.py`` as a module (it is not a package)."""
    spec = importlib.util.spec_from_file_location("delayed_scheduler_example_app", INTEG / "app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def resources_of(template: dict, cfn_type: str) -> dict:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


def only(template: dict, cfn_type: str, contains: str = "") -> tuple[str, dict]:
    found = {k: v for k, v in resources_of(template, cfn_type).items() if contains in k}
    assert len(found) == 1, f"expected one {cfn_type} with {contains!r} in its id, got {sorted(found)}"
    return next(iter(found.items()))


def acknowledged(construct) -> dict[str, set[str]]:
    """{construct path: cdk-nag 3 rule ids acknowledged on it} under ``construct`` (CDK's native
    validation acknowledgements)."""
    import aws_cdk as cdk

    found: dict[str, set[str]] = {}
    for node in construct.node.find_all():
        for entry in node.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found.setdefault(node.node.path, set()).update(r.removeprefix("Annotation::") for r in entry.data)
    return found
