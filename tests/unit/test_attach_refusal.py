"""The refusal to attach to workers started from another config: the keys, and the way out."""

from __future__ import annotations

from openclaw_dask.config import load_config
from openclaw_dask.runtime.cluster import attach_refusal, on_running_cluster, with_address

ADDRESS = "tcp://127.0.0.1:8786"


def test_a_cluster_up_cluster_names_each_key_and_how_to_run_either_way() -> None:
    mine = load_config(use_search_path=False, overrides=["distributed.sync_interval=7"])
    theirs = load_config(use_search_path=False, overrides=["parallel.deterministic_mode=true"])
    config = on_running_cluster(mine, {"address": ADDRESS, "pid": 42})
    problem = attach_refusal(config, theirs.fingerprint()[0], theirs.fingerprint()[1])
    assert str(problem) == (
        "cluster up (pid 42): cluster.scheduler_address: the running cluster's workers were "
        "started from another openclaw.config: distributed.sync_interval 5000 there, 7 here "
        "(--set), parallel.deterministic_mode true there, false here; `openclaw-dask cluster "
        "down`, then `openclaw-dask cluster up` with this config, or run with the cluster's "
        "values: --set distributed.sync_interval=5000 parallel.deterministic_mode=true"
    )


def test_past_three_keys_the_rest_are_counted_and_a_key_they_lack_is_unset() -> None:
    sets = ["storage.level=9", "distributed.batch_size=8", "distributed.sync_interval=7"]
    config = with_address(load_config(use_search_path=False, overrides=sets), ADDRESS)
    values = dict(load_config(use_search_path=False).fingerprint()[1])
    del values["storage.shuffle"]  # workers of an openclaw-dask without that key
    message = attach_refusal(config, "abc", values).message
    assert ": distributed.batch_size 64 there, 8 here (--set), distributed.sync_interval 5000 " in (
        message
    )
    assert "here (--set), storage.level 3 there, 9 here (--set) and 1 more; start the " in message
    assert message.endswith(
        "start the cluster's workers from this config, or run with the cluster's values: --set "
        "distributed.batch_size=64 distributed.sync_interval=5000 storage.level=3"
    )
    only_lacking = {k: v for k, v in config.fingerprint()[1].items() if k != "storage.shuffle"}
    message = attach_refusal(config, "abc", only_lacking).message
    assert message.endswith(
        "storage.shuffle unset there, byte here; start the cluster's workers from this config"
    )


def test_without_their_values_the_fingerprints_are_said() -> None:
    config = with_address(load_config(use_search_path=False), ADDRESS)
    mine = config.fingerprint()[0]
    assert str(attach_refusal(config, "abc")) == (
        "--address: cluster.scheduler_address: the running cluster's workers were started from "
        f"another openclaw.config (fingerprint abc, this config's {mine}); start the cluster's "
        "workers from this config, or run with the config they were started from"
    )
