"""The ``openclaw.config`` layer: schema, loader, validation and hardware detection.

Pure: imports nothing from the layers above (translate, runtime, workflows, cli).
"""

from openclaw_dask.config.errors import ConfigError, Problem
from openclaw_dask.config.hardware import Hardware, detect_hardware
from openclaw_dask.config.loader import Config, find_config_file, load_config
from openclaw_dask.config.schema import KEYS, KEYS_BY_PATH

__all__ = [
    "KEYS",
    "KEYS_BY_PATH",
    "Config",
    "ConfigError",
    "Hardware",
    "Problem",
    "detect_hardware",
    "find_config_file",
    "load_config",
]
