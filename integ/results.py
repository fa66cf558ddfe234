"""The integration tests' assertion results, from the outputs of a deploy with the pinned CDK CLI.

For a run without integ-runner (docs/integ.md: while it cannot read the cloud assembly schema that
aws-cdk-lib writes): ``npx cdk deploy --all --outputs-file <file>`` deploys a test and its assertions;
each assertion leaves an ``AssertionResults...`` output, ``{"status": "success"}`` or ``{"status": "fail",
"message": ...}``. (A waiting assertion that never matches fails the deploy itself.)

    python integ/results.py /tmp/integ-outputs.json    # exit 1 and print each failed assertion
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping


def assertion_results(outputs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every assertion's result in ``outputs`` (stack name -> output name -> value), by ``stack/output``."""
    return {f"{stack}/{name}": json.loads(value) for stack, values in outputs.items()
            for name, value in values.items() if name.startswith("AssertionResults")}


def main(argv: list[str]) -> int:
    (path,) = argv
    results = assertion_results(json.loads(Path(path).read_text()))
    failed = {name: result for name, result in results.items() if result.get("status") != "success"}
    for name, result in failed.items():
        print(f"FAILED {name}: {result.get('message', result)}")
    print(f"{len(results) - len(failed)} of {len(results)} assertions passed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
