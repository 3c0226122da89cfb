"""The ``openclaw-dask`` command line: thin click commands over the library."""
