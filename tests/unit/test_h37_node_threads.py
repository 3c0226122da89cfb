"""A node's resources.cpus must split over parallel.processes, as thread_pool_size must."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask import load_config, plan_cluster
from openclaw_dask.config.errors import ConfigError

CONFIG = """\
cluster:
  backend: ssh
parallel:
  processes: {procs}
distributed:
  nodes:
    - {{host: 10.0.0.2, scheduler: true}}
    - {{host: 10.0.0.3, resources: {{cpus: {cpus}}}}}
"""


def configured(tmp_path: Path, cpus: int, procs: int) -> Path:
    path = tmp_path / "ssh.config"
    path.write_text(CONFIG.format(cpus=cpus, procs=procs))
    return path


@pytest.mark.parametrize(
    ("cpus", "procs", "said"),
    [
        (1, 2, "1 worker thread(s) cannot be split over the node's 2 worker processes "
         "(parallel.processes): each process needs at least one thread"),
        (3, 2, "3 worker threads do not split evenly over the node's 2 worker processes "
         "(parallel.processes); use a multiple of 2, such as 2 or 4"),
    ],
)  # fmt: skip
def test_a_node_whose_threads_do_not_split_is_refused_at_its_line(
    tmp_path: Path, cpus: int, procs: int, said: str
) -> None:
    """Each process got max(1, cpus // processes) threads: cpus 1 over 2 processes ran 2
    threads, cpus 3 over 2 ran 2, while the plan's layout said 1 and 3."""
    path = configured(tmp_path, cpus, procs)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}:8: distributed.nodes[1].resources.cpus: {said}"


def test_threads_that_split_run_as_the_layout_says(tmp_path: Path) -> None:
    plan = plan_cluster(load_config(configured(tmp_path, 4, 2)))
    node = plan.layout["nodes"][1]
    threads = [plan.cluster_kwargs["workers"][w]["options"]["kwargs"]["nthreads"]
               for w in node["workers"]]  # fmt: skip
    assert (node["threads"], threads) == (4, [2, 2])
