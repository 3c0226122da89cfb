"""Array-namespace lookup: numpy on the host, cupy on a GPU, chosen from the array itself.

The kernels never import cupy at module level (it is an optional extra and fails at the first
device call on machines without a GPU); they ask the input array which library made it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np


def get_namespace(*arrays: Any) -> ModuleType:
    """Return the array module (``numpy`` or ``cupy``) that owns the given arrays.

    Parameters
    ----------
    *arrays
        Arrays (or scalars, which are ignored). The first array that comes from cupy selects
        cupy; otherwise numpy is returned.

    Returns
    -------
    module
        ``numpy`` or ``cupy``.

    Examples
    --------
    >>> get_namespace(np.zeros(3)).__name__
    'numpy'
    """
    for a in arrays:
        module = type(a).__module__
        if module.startswith("cupy"):
            return importlib.import_module("cupy")
    return np


def to_numpy(a: Any) -> np.ndarray:
    """Copy a device array to the host (no-op for numpy); for tests and I/O, not time steps."""
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)
