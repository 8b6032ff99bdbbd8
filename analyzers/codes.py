"""Strings (kernel names, source lines) as integer codes, for the analyzers that compare sequences of them.

`np.unique(names.astype(str), return_inverse=True)` gives the same answer, but first copies the names into a
fixed-width array as wide as the longest one (mangled C++ kernel names run to 1,700 characters: 6.7 kB a row), then
sorts it: 0.64 s for a 13,000-kernel step where this takes 3 ms (session 20: it was most of what `graphmode run`
decides between its runs, benchmarks/notes/s20). Below every analyzer; numpy only."""

from __future__ import annotations

from typing import Any

import numpy as np


def factorize(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(vocab, codes), as np.unique(values as str, return_inverse=True) gives them: the distinct values as str, sorted
    (an object array), and each value's index in it (int64)."""
    vals = [v if isinstance(v, str) else str(v) for v in np.asarray(values, dtype=object).ravel().tolist()]
    vocab = sorted(set(vals))
    index = {v: i for i, v in enumerate(vocab)}
    codes = np.fromiter((index[v] for v in vals), dtype=np.int64, count=len(vals))
    return np.array(vocab, dtype=object), codes
