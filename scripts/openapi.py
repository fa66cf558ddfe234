"""Write docs/openapi.json, the HTTP API's OpenAPI 3.1 document, from the runtime's generator.

    .venv/bin/python scripts/openapi.py           # rewrite docs/openapi.json
    .venv/bin/python scripts/openapi.py --check   # exit 1 when it is stale (the test suite checks this too)

The document is built by ``scheduler_runtime.core.openapi`` from the constants the validators use;
the local engine serves the same document at ``GET /openapi.json`` (with its own URL as the server).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OPENAPI_JSON = REPO / "docs" / "openapi.json"
sys.path.insert(0, str(REPO / "lambda"))

from scheduler_runtime.core.openapi import document_json  # noqa: E402 - once the runtime is on the path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/openapi.json is stale")
    args = parser.parse_args(argv)
    text = document_json()
    if args.check:
        current = OPENAPI_JSON.read_text(encoding="utf-8") if OPENAPI_JSON.exists() else ""
        if current != text:
            print(f"{OPENAPI_JSON.relative_to(REPO)} is stale: run scripts/openapi.py", file=sys.stderr)
            return 1
        return 0
    OPENAPI_JSON.write_text(text, encoding="utf-8")
    print(f"wrote {OPENAPI_JSON.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
