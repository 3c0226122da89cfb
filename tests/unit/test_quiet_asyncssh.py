"""asyncssh's import says nothing of cryptography's DSA deprecation on the user's terminal."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def _stderr(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_ssh_cluster_s_import_of_asyncssh_is_quiet() -> None:
    """With cryptography 51 a plain ``import asyncssh`` wrote ten lines of warnings."""
    assert _stderr("import openclaw_dask.runtime.ssh_process; import asyncssh") == ""
    assert (
        _stderr(
            "from openclaw_dask.runtime import preflight, quiet_asyncssh as q\nq.import_asyncssh()"
        )
        == ""
    )


def test_the_same_warning_outside_the_import_is_still_said() -> None:
    """Only the import's own warnings are left out: a DSA key used later is still warned of."""
    code = (
        "import warnings\n"
        "from openclaw_dask.runtime.quiet_asyncssh import import_asyncssh\n"
        "import_asyncssh()\n"
        "warnings.warn_explicit('DSA is deprecated', UserWarning, 'x.py', 1, 'asyncssh.x')\n"
    )
    assert "UserWarning: DSA is deprecated" in _stderr(code)
