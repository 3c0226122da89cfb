"""A CUDA cluster gives the built-in ops (which compute on the host) only its worker threads:
said with the settings not applied, which ``submit`` prints when the run starts."""

from __future__ import annotations

from pathlib import Path

from openclaw_dask.config import load_config
from openclaw_dask.translate import plan_cluster
from openclaw_dask.workflows.runner import host_ops_note
from openclaw_dask.workflows.spec import load_workflow
from tests.conftest import ROOT, make_hardware
from tests.integration.user_ops import FAILING_WORKFLOW


def test_a_cuda_cluster_says_the_built_in_ops_get_its_threads_not_every_core() -> None:
    climate = load_workflow(ROOT / "workflows/climate.yaml")
    gpus = make_hardware(gpus=2)
    config = load_config(use_search_path=False, overrides=["gpu.devices=[0,1]"])
    plan = plan_cluster(config, gpus)
    assert plan.backend == "cuda"
    assert host_ops_note(climate, plan) == [
        "step(s) forcing, simulate, analyse compute on the CPU: this CUDA cluster runs them on "
        "its 4 worker thread(s) (gpu.stream_count per GPU), not on every core; leave "
        "gpu.devices empty (or --backend local) to give them all cores"
    ]
    # the same workflow on CPU workers: nothing to say
    local = plan_cluster(load_config(use_search_path=False), gpus)
    assert local.backend == "local" and host_ops_note(climate, local) == []


def test_a_user_op_s_device_is_its_own(tmp_path: Path) -> None:
    wf = tmp_path / "user.yaml"
    wf.write_text(FAILING_WORKFLOW)  # example.field, then a user op
    config = load_config(use_search_path=False, overrides=["gpu.devices=[0]"])
    plan = plan_cluster(config, make_hardware(gpus=1))
    [note] = host_ops_note(load_workflow(wf), plan)
    assert note.startswith(
        "step(s) field compute on the CPU: this CUDA cluster runs them on its 2 "
    )
