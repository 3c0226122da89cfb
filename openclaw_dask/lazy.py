"""Names a package imports on first use (PEP 562): its ``__getattr__`` and ``__dir__``.

Every CLI command and every spawned worker imports the package, and ``--help`` needs none of
Dask, distributed or xarray (importing them cost each command ~0.3-1 s on a 2 GHz core).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def attach(
    module: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``module`` that import each name from its home.

    Parameters
    ----------
    module
        The package's ``__name__``.
    homes
        ``{public name: the module that defines it}``.

    Returns
    -------
    (callable, callable)
        Assign them to the package's ``__getattr__`` and ``__dir__``. A name, once imported,
        is kept in the package's namespace, so later lookups do not come back here.
    """
    namespace = sys.modules[module].__dict__

    def lookup(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *homes})

    return lookup, names
