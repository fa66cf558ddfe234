"""The engine's moto child: the zygote that forks a corrected moto server on 127.0.0.1 for each engine.

    python -m cdk_delayed_scheduler.local._moto_child --zygote
"""

from __future__ import annotations

import sys

from cdk_delayed_scheduler.local.moto_zygote import ZYGOTE_FLAG, serve_forks

if __name__ == "__main__":
    if sys.argv[1:] != [ZYGOTE_FLAG]:
        sys.exit(f"usage: python -m cdk_delayed_scheduler.local._moto_child {ZYGOTE_FLAG}")
    serve_forks()
