#!/usr/bin/env bash
# Create .venv and install openclaw-dask with what the tests need. Idempotent.
# As root (or with passwordless sudo) it also installs the Debian packages the tests use
# when they are missing: OpenMPI, openssh-server, jemalloc, tcmalloc, chromium + chromedriver,
# and python3-venv where Debian's python3 lacks it.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(openmpi-bin libopenmpi-dev openssh-server openssh-client libjemalloc2
      libgoogle-perftools4 chromium chromium-driver iproute2 procps)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${DEBS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Debian's own python3 makes no venv without python3-venv (ensurepip); a python3 of
  # another origin (pyenv, conda) brings its own and needs nothing here
  if [ ! -x .venv/bin/python ] && ! "${PYTHON:-python3}" -c "import ensurepip, venv" 2>/dev/null
  then
    missing+=(python3-venv)
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
  fi
  if [ "$SUDO" = none ]; then
    echo "note: not root; missing Debian packages (tests that need them will fail): ${missing[*]}" >&2
  else
    echo "installing Debian packages: ${missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# the install is editable, so code changes need no reinstall: pip runs again only when
# pyproject.toml (dependencies, entry points) changed since the last install into this .venv
stamp=.venv/.openclaw-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  # pip byte-compiles every installed file in one process (~36 CPU-s here); compileall does
  # the same on every core (the same .pyc files; a file neither can compile is left, as pip
  # leaves it)
  .venv/bin/python -m pip install -q --no-compile -e ".[test,dev]"
  .venv/bin/python -m compileall -qq -j 0 "$(.venv/bin/python -c \
    'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
  echo "$want" > "$stamp"
fi
