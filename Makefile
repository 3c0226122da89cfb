# The two commands a newcomer runs (see README): `make demo` and `make test`.
.PHONY: demo test lint env

env:
	scripts/setup-env.sh

demo: env
	.venv/bin/openclaw-dask submit workflows/climate.yaml

test: env
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/pytest -q

lint: env
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
