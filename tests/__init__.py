"""The suite's bytecode: compiled once, kept outside the repository.

A run starts many interpreters (two pytest workers, each engine's moto zygote, the children of the tests
that need a fresh interpreter), and each imports aws-cdk-lib's generated modules, botocore and moto. Where
``PYTHONDONTWRITEBYTECODE`` is set, each would compile those sources again: a worker's collection of the
suite takes 15 CPU-seconds so, 5 with the cache. This package is imported before the suite's conftest, so before
pytest-xdist starts its workers: from here on the suite writes bytecode, under ``PYTHONPYCACHEPREFIX`` (a
directory of the system's temp directory unless it is already set), never beside the sources, and so never
into ``lambda/``, which the functions' asset ships. Python checks each cached module against its source, so
the cache changes how long a run takes, never what it runs.
"""

import os
import sys
import tempfile
from pathlib import Path

PYCACHE_PREFIX = (os.environ.get("PYTHONPYCACHEPREFIX")
                  or str(Path(tempfile.gettempdir()) / "cdk-delayed-scheduler-pycache"))
os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = PYCACHE_PREFIX
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
