"""Fixtures shared by the construct tests."""

from __future__ import annotations

import json

import pytest
from construct_helpers import load_example_app

@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory):
    """The example app, synthesized once per session: (cloud assembly dir, stack name, template)."""
    app_module = load_example_app()
    outdir = tmp_path_factory.mktemp("example-cdk-out")
    app_module.build_app(str(outdir)).synth()
    template = json.loads((outdir / f"{app_module.STACK_NAME}.template.json").read_text())
    return outdir, app_module.STACK_NAME, template
