"""``python -m openclaw_dask``: the ``openclaw-dask`` command, run by this interpreter.

Batch scripts and ``srun``/``mpirun`` lines often name the interpreter rather than rely on the
``PATH`` (a login node's ``openclaw-dask`` may belong to another environment).
"""

from openclaw_dask.cli import main

if __name__ == "__main__":
    main()
