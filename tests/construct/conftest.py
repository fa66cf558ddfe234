"""Shared helpers for the construct tests: one synthesized stack per module, loaded example app."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory):
    """The example app, synthesized once per session: (cloud assembly dir, stack name, template)."""
    app_module = load_example_app()
    outdir = tmp_path_factory.mktemp("example-cdk-out")
    app_module.build_app(str(outdir)).synth()
    template = json.loads((outdir / f"{app_module.STACK_NAME}.template.json").read_text())
    return outdir, app_module.STACK_NAME, template
