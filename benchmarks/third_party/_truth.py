"""The one line each third-party workload prints with its own timings (read by benchmarks/script_fidelity.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

PREFIX = "GRAPHMODE_TRUTH "


def report(**values: Any) -> None:
    print(PREFIX + json.dumps(values), flush=True)
    sys.stdout.flush()
