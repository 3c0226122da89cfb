# The two commands a newcomer runs (see README): `make demo` and `make test`.
.PHONY: demo test lint env test-env

env:
	scripts/setup-env.sh

demo: env
	.venv/bin/openclaw-dask submit workflows/climate.yaml

# distributed-ucxx pins dask to its own release: the ucx tests get their own environment
# (.venv-ucx, ~950 MB); the demo does not need it.
test-env: env
	scripts/setup-ucx-env.sh

# Two pytest-xdist workers: most tests wait on processes they start (clusters, sshd, mpirun)
# and leave the second core idle; the suite took 24 min alone on 2 cores, 15 min so. A file's
# tests stay on one worker (loadfile): its module fixtures (the quick benchmark, 40 s) are
# built once. (`loadgroup` groups nothing with pytest 9.2: pytest-xdist#1386.)
test: test-env
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/pytest -q -n 2 --dist loadfile

lint: env
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
