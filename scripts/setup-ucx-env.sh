#!/usr/bin/env bash
# Create .venv-ucx: openclaw-dask (editable, this working tree) with distributed-ucxx, for the
# `ucx` transport and its tests. Idempotent; 1-2 minutes and ~950 MB the first time.
#
# Why a second environment: distributed-ucxx-cu12 (via rapids-dask-dependency) pins dask and
# distributed to one release, usually older than the newest one .venv has. pip resolves the pin
# here, so both environments test the same code against the dask each one can have.
# No GPU needed: the wheels bring libucx, and openclaw-dask's ucx plan runs UCX over TCP
# (UCX_TLS=tcp through distributed-ucxx.tcp); nothing CUDA is initialised.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv-ucx/bin/python ]; then
  "$PY" -m venv .venv-ucx
  .venv-ucx/bin/python -m pip install -q --upgrade pip
fi
# editable: pip runs again only when pyproject.toml changed since the last install (as setup-env.sh)
stamp=.venv-ucx/.openclaw-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv-ucx/bin/python -m pip install -q --no-compile -e ".[ucx]"
  # byte-compiled on every core, not in pip's one process (as setup-env.sh)
  .venv-ucx/bin/python -m compileall -qq -j 0 "$(.venv-ucx/bin/python -c \
    'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
  echo "$want" > "$stamp"
fi
.venv-ucx/bin/python -c "import distributed_ucxx, ucxx" \
  || { echo "setup-ucx-env: distributed-ucxx does not import in .venv-ucx" >&2; exit 1; }
