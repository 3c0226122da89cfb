"""asyncssh, imported without cryptography's deprecation of DSA said on the user's terminal.

asyncssh 2.24 names ``dsa.DSAPrivateKey`` and its kin in its module-level type aliases, and
cryptography 51 warns at each such access (``CryptographyDeprecationWarning``, a
``UserWarning``: shown by default): every SSH ``submit``, ``cluster up`` and node probe printed
ten lines about a key type neither this project nor the user chose. The warnings are raised
only while asyncssh's modules import, so they are silenced for that import alone; a DSA key
that a user does give is still warned about where asyncssh uses it. Delete once asyncssh stops
naming them (or drops DSA).
"""

from __future__ import annotations

import warnings
from types import ModuleType


def import_asyncssh() -> ModuleType:
    """``import asyncssh``, with the DSA deprecation warnings of its import left out.

    Returns
    -------
    ModuleType
        The ``asyncssh`` module (imported once; later calls return it at once).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "DSA is deprecated", UserWarning, r"asyncssh(\.|$)")
        import asyncssh

    return asyncssh
