"""Start (or attach to) the cluster a config plans, and check that it is what was asked for.

:func:`start_cluster` is the one way the rest of openclaw-dask gets a ``distributed.Client``.
After the workers are up it registers the plan's worker plugins (config fingerprint, allocator
check, in deterministic mode the numerics check) and reads the truth back from every worker:
a refused worker, pinning that did not take, or a clock offset beyond
``distributed.clock_skew_tolerance`` is an error that names the key, and the cluster is shut
down again. Nothing is left running after an error.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import shlex
import socket
import time
import urllib.parse
import urllib.request
import warnings
import weakref
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import replace
from typing import Any

import dask
from distributed import Client
from distributed.utils import import_term

from openclaw_dask.config import Config, ConfigError, Hardware, detect_hardware, load_config
from openclaw_dask.config.arguments import (
    check_backend,
    check_flag,
    check_hardware_arg,
    check_overrides,
    check_path,
)
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.layout import resolve_backend
from openclaw_dask.config.render import yaml_value
from openclaw_dask.config.validate import locate
from openclaw_dask.runtime.build import cluster_class, materialise_kwargs
from openclaw_dask.runtime.inspect import inspect_workers, refusals
from openclaw_dask.runtime.mpi_launch import mpi_job_scheduler
from openclaw_dask.runtime.openclaw_there import check_openclaw_there
from openclaw_dask.runtime.plugins import OWN_FINGERPRINT
from openclaw_dask.runtime.state import address_problem, read_state_or_warn
from openclaw_dask.runtime.terminal import (
    interrupts_held,
    lost_scheduler_quieted,
    quiet_interrupted_sync,
)
from openclaw_dask.translate import ClusterPlan, plan_cluster

logger = logging.getLogger("openclaw_dask.runtime")

CONNECT_TIMEOUT = "10s"
#: Seconds the client rank of an mpi launch waits for every worker rank to register.
MPI_WORKER_TIMEOUT = 60
#: Seconds to wait for an attached scheduler's dashboard page (it answers in milliseconds).
DASHBOARD_PROBE_TIMEOUT = 5


@contextmanager
def preserved_environ(names: Any) -> Iterator[None]:
    """Restore ``os.environ[name]`` for ``names`` when the block ends.

    distributed's Nanny applies ``pre-spawn-environ`` with ``os.environ.update`` in *this*
    process before spawning each worker and never undoes it, so ``LD_PRELOAD=libjemalloc``
    would otherwise stay in the client and leak into every program it starts later.
    """
    saved = spawn_environ(names)
    try:
        yield
    finally:
        restore_environ(saved)


#: What a Nanny sets in this process besides the worker environment it was given: its own
#: ``PYTHONHASHSEED`` default (distributed 2026.8 ``Nanny.__init__``) and the variable that
#: lets children set their process title (``WorkerProcess.start``).
NANNY_ENVIRON = ("LD_PRELOAD", "PYTHONHASHSEED", "__DASK_PARENT_PID")
#: The dask setting whose variables a Nanny sets in this process before it spawns a worker.
PRE_SPAWN = "distributed.nanny.pre-spawn-environ"


def spawn_environ(names: Any) -> dict[str, str | None]:
    """The values of ``os.environ`` that starting workers of environment ``names`` changes
    (:data:`NANNY_ENVIRON` too), to put back with :func:`restore_environ`."""
    return {name: os.environ.get(name) for name in {*names, *NANNY_ENVIRON}}


def restore_environ(saved: Mapping[str, str | None]) -> None:
    """Put ``os.environ`` back to ``saved`` (``None``: unset)."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _resolve(
    config: Config | str | os.PathLike[str] | None, overrides: Any, address: str | None
) -> Config:
    check_overrides("start_cluster", overrides)
    if not isinstance(config, Config):
        config = check_path("start_cluster", "config (a Config or its file)", config)
        config = load_config(config, overrides)
    else:
        config = config.with_overrides(overrides)
    return with_address(config, address) if address else config


def with_address(config: Config, address: str, source: str = "--address") -> Config:
    """``config`` attached to the scheduler at ``address``, said as given by ``source``.

    Raises
    ------
    ConfigError
        ``address`` is not a scheduler address (the schema's check, placed on ``--address``
        rather than on the Python API that carries it).
    """
    problem = address_problem(address)
    if problem:
        raise ConfigError([Problem(problem, "cluster.scheduler_address", origin=source)])
    return config.with_values(source=source, cluster__scheduler_address=address)


#: The clients :func:`start_cluster` has yielded and whose block still runs.
_YIELDED: weakref.WeakSet[Client] = weakref.WeakSet()
#: How a run attached to the cluster of an enclosing ``start_cluster`` block says so.
ENCLOSING_SOURCE = "the enclosing start_cluster block"


def enclosing_cluster() -> str | None:
    """The scheduler address of the ``with start_cluster() as client:`` block this call runs
    in (its client is the current one), or ``None``.

    ``run_workflow`` in such a block runs on that cluster, as the block's ``compute()`` does:
    it had started a second cluster beside it, twice the workers on the machine. A client the
    user made (``with Client(...)``) is not taken: its cluster may not be what the config
    plans, and a run beside it keeps to its own (see ``run_workflow``).
    """
    try:
        client = Client.current(allow_global=False)
    except ValueError:  # no current client
        return None
    if client in _YIELDED and client.status == "running":
        return str(client.scheduler.address)
    return None


def _cluster_up(
    config: Config, hardware: Hardware | None, backend: str | None
) -> tuple[dict[str, Any], str, str] | None:
    """The running ``cluster up`` cluster's state, its kind and the kind ``config`` plans (the
    forced ``backend``, where given), or ``None`` when none runs or ``config`` names a
    scheduler (``cluster.scheduler_address``, rank 1 of an mpi launch)."""
    if config["cluster.scheduler_address"] or mpi_job_scheduler():
        return None
    # a damaged state file is warned about: the config runs on a cluster of its own then
    state = read_state_or_warn()
    if not state or not state.get("address"):
        return None
    # a state file written before the backend was recorded: cluster up was local then
    theirs = state.get("backend", "local")
    return state, theirs, backend or resolve_backend(config.values, hardware or detect_hardware())


def running_cluster(
    config: Config, hardware: Hardware | None = None, backend: str | None = None
) -> dict[str, Any] | None:
    """The state of the ``cluster up`` cluster that ``config`` runs on, or ``None``.

    A config runs on it when it asks for nothing else (no ``cluster.scheduler_address``, no
    forced ``backend``, not rank 1 of an mpi launch) and plans the same kind of cluster
    (``local``, ``cuda`` or ``ssh``): a config that lists ssh nodes does not run on a local
    ``cluster up`` cluster. A state file that cannot be used is ignored with a
    :class:`~openclaw_dask.runtime.state.StateFileWarning`.
    """
    found = None if backend is not None else _cluster_up(config, hardware, backend)
    return found[0] if found and found[1] == found[2] else None


def cluster_up_beside(config: Config, backend: str | None = None) -> str | None:
    """A note when a ``cluster up`` cluster runs that ``config`` does not run on, else
    ``None``: because it plans another kind of cluster (see :func:`running_cluster`), or
    because ``backend`` was forced. A local submit beside an ssh ``cluster up``, and a
    ``--backend local`` one beside a local ``cluster up``, had started a cluster of their
    own without a word."""
    found = _cluster_up(config, None, backend)
    if not found or (found[1] == found[2] and backend is None):
        return None
    state, theirs, kind = found

    def a(kind: str) -> str:  # said aloud: "an ssh", "an mpi", "a local"
        return f"{'an' if kind in ('ssh', 'mpi') else 'a'} {kind}"

    if backend is not None:  # --backend never attaches, whatever the kinds
        why = f"--backend {backend} starts {a(kind)} cluster of its own beside it"
        then = "without --backend a config that plans" if kind == theirs else "a config that plans"
        return (
            f"the `cluster up` cluster at {state['address']} is {a(theirs)} cluster and "
            f"{why} ({then} {a(theirs)} cluster runs on it; `openclaw-dask cluster down` "
            "stops it)"
        )
    return (
        f"the `cluster up` cluster at {state['address']} is {a(theirs)} cluster and this "
        f"config plans {a(kind)} one, so a cluster of its own starts beside it ({a(theirs)} "
        "config runs on it; `openclaw-dask cluster down` stops it)"
    )


def on_running_cluster(config: Config, state: Mapping[str, Any]) -> Config:
    """``config`` attached to the ``cluster up`` cluster of ``state`` (see
    :func:`running_cluster`); the address's source names that cluster."""
    origin = f"{CLUSTER_UP_SOURCE} (pid {state.get('pid')})"
    return config.with_values(source=origin, cluster__scheduler_address=state["address"])


#: How :func:`on_running_cluster` names the source of the address it sets.
CLUSTER_UP_SOURCE = "cluster up"


class ClusterLostError(RuntimeError):
    """The cluster went away while it ran a step (the step itself did not fail)."""


def cluster_gone(client: Client) -> str | None:
    """Why the cluster of ``client`` can run nothing more, or ``None`` while it can.

    Asked after a step failed: a scheduler that stopped (``cluster down``, its process killed,
    a lost network) cancels every task with reasons that name futures, not the cluster.

    A cluster whose workers all died at once (an op that ends its process, the kernel's OOM
    killer) is given :data:`WORKERS_RETURN` seconds to get them back: their nannies restart
    them in a few seconds, and it was said to have "no workers left" (with advice to resume
    once a cluster runs) in 2 of 5 runs of an op that called ``os._exit``, where the step's
    own failure (Dask's ``KilledWorker``) is the one to report.
    """
    address = getattr(client.scheduler, "address", None) or "?"
    gone = f"the scheduler at {address} stopped answering"
    deadline = time.monotonic() + WORKERS_RETURN
    while True:
        if client.status != "running":  # closed, or trying to reconnect
            return gone
        try:
            workers = client.nthreads()
        except OSError:
            return gone
        if workers:
            return None
        if time.monotonic() > deadline:
            return f"the cluster at {address} has no workers left"
        time.sleep(0.2)


#: Seconds a cluster without workers has to get some back before it is called lost.
WORKERS_RETURN = 10.0


#: The dask settings a client needs to reach a scheduler: its transport's security (TLS) and
#: switches (UCX); see :func:`client_settings`.
CLIENT_SETTINGS = (
    "distributed.comm.require-encryption",
    "distributed.comm.tls.",
    "distributed-ucxx.",
)


def client_settings(dask_config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a plan's dask config that a client needs to reach the plan's scheduler.

    ``cluster up`` records it, so that ``cluster status`` and ``memory compact`` reach a TLS
    cluster from any directory (the loader made the certificate paths absolute).
    """
    return {k: v for k, v in dask_config.items() if k.startswith(CLIENT_SETTINGS)}


def _unreachable_scheme(address: str) -> str | None:
    """Why this process cannot speak ``address``'s transport at all, or ``None``."""
    scheme = address.partition("://")[0]
    if scheme in ("ucx", "ucxx") and importlib.util.find_spec("distributed_ucxx") is None:
        # distributed's own ucx backend is an abstract stub since distributed-ucxx took it over
        return (
            f"{address} is a ucx scheduler, and ucx needs distributed-ucxx: "
            "scripts/setup-ucx-env.sh makes .venv-ucx with it"
        )
    if scheme == "tls" and not dask.config.get("distributed.comm.tls.ca-file", None):
        return (
            f"{address} is a tls scheduler: it asks for this client's certificate, and none is "
            "set (the config's distributed.tls files; cluster status and memory compact: "
            "--config FILE)"
        )
    if scheme == "tls":
        return _client_tls_problem(address)
    return None


def _client_tls_problem(address: str) -> str | None:
    """Why this client's TLS files (in the dask config in effect) cannot be used, or ``None``.

    `cluster status` of a TLS `cluster up` cluster whose certificate files were moved or
    damaged since said "no scheduler answers at tls://...: [Errno 2] No such file or
    directory" (or "[SSL] PEM lib"): the scheduler was fine, the client's files were not.
    A config's files were checked when it was read: this catches those `cluster up` recorded.
    """
    from openclaw_dask.config.tls import tls_problems

    def get(key: str) -> Any:
        return dask.config.get(f"distributed.comm.tls.{key}", None)

    values = {
        "distributed.communication_backend": "tls",
        "distributed.tls.ca_file": get("ca-file"),
        "distributed.tls.cert": get("client.cert"),
        "distributed.tls.key": get("client.key"),
    }
    found: list[str] = []
    tls_problems(values, lambda key, message: found.append(f"{key}: {message}"))
    if not found:
        return None
    return (
        f"{address} is a tls scheduler, and this client's TLS files cannot be used: "
        f"{'; '.join(found)} (put them back, or give --config FILE with working ones)"
    )


def connect(address: str, where: Problem | None = None) -> Client:
    """A client for a running scheduler; an unreachable address is bad input (exit 2).

    ``where`` says where the address came from (a config key's location, ``--address``). The
    transport's settings (:func:`client_settings`) are read from the dask config in effect.
    """
    where = where or Problem("", origin="--address")
    problem = _unreachable_scheme(address)
    if problem:
        raise ConfigError([replace(where, message=problem)])
    try:
        silent = _silent(address)
        if silent:
            raise TimeoutError(silent)
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            [replace(where, message=f"no scheduler answers at {address}: {reason}")]
        ) from None


def _silent(address: str) -> str | None:
    """Why a scheduler does not answer at ``address``, or ``None`` when it does (or when the
    client would say why better: a TLS mismatch).

    distributed's ``connect`` bounds the TCP connect by its timeout but not the handshake
    read after it (distributed 2026.8 ``comm.core.connect``): a port that accepts and never
    speaks (a stopped scheduler, another program) hung ``cluster status`` and ``submit``
    for ever. This asks for the scheduler's identity once, with a deadline over all of it, in
    a thread of its own (a caller's event loop may run here). Other transports (ucx) are
    left to the client.

    A port nothing listens on is retried for the whole deadline (a scheduler a batch script
    started a moment ago comes up meanwhile) and then said as such. It had been said to take
    connections and not answer (``cluster status``), or, when the connect gave up first, handed
    to the client, which retried for as long again: 22 s for ``submit --address`` of a port
    with nothing behind it.
    """
    if urllib.parse.urlsplit(address).scheme not in ("tcp", "tls"):
        return None
    from distributed.comm import connect as comm_connect
    from distributed.security import Security

    seconds = dask.utils.parse_timedelta(CONNECT_TIMEOUT)
    connected = False

    async def identity() -> None:
        nonlocal connected
        args = Security().get_connection_args("client")
        comm = await comm_connect(address, timeout=seconds, **args)
        connected = True
        try:
            await comm.write({"op": "identity", "reply": True})
            await comm.read()
        finally:
            await comm.close()

    async def bounded() -> None:
        await asyncio.wait_for(identity(), seconds)

    with ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, bounded()).result()
        except TimeoutError:
            # (distributed's connect also reads a handshake: "connected" is not set then)
            silent = f"it takes connections but did not answer within {seconds:g} s"
            return silent if connected else _not_connecting(address, seconds) or silent
        except OSError:
            if connected:
                return None
            return _not_connecting(address, seconds) or _speaks_tls(address)
        except Exception as exc:
            if urllib.parse.urlsplit(address).scheme == "tcp":
                # what answered is not a Dask scheduler: an HTTP server's "HTTP/1.1 400" read
                # as a frame length had Dask allocate 3 EiB (MemoryError, exit 1, a traceback)
                return (
                    "something answers there, but not in Dask's protocol (its reply read as "
                    f"{type(exc).__name__}): is it the scheduler's port, not its dashboard's "
                    "or another program's?"
                )
            return None  # a tls mismatch: the client says it better
    return None


def _speaks_tls(address: str) -> str | None:
    """Why a ``tcp://`` address that dropped Dask's handshake is to be reached over TLS, or
    ``None`` (the client will say what it finds). A TLS scheduler resets a plain handshake,
    which the client reported as "Connection reset by peer", not naming TLS."""
    parts = urllib.parse.urlsplit(address)
    if parts.scheme != "tcp":
        return None
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only: does it speak TLS at all
    try:
        address_pair = (parts.hostname or "", parts.port or 0)
        with (
            socket.create_connection(address_pair, timeout=2) as raw,
            context.wrap_socket(raw) as tls,
        ):
            tls.getpeercert(binary_form=True)
    except ssl.SSLError as exc:
        if "alert" not in str(exc).lower():  # a server that does not speak TLS at all
            return None
    except OSError:
        return None
    secure = address.replace("tcp://", "tls://", 1)
    return (
        f"it speaks TLS: use {secure} and the cluster's certificates (the config's "
        "distributed.tls files; cluster status and memory compact: --config FILE)"
    )


def _not_connecting(address: str, seconds: float) -> str | None:
    """Why nothing took a connection at ``address`` for ``seconds``, by one more plain try
    (``None`` when it now does: the client will say what is wrong there)."""
    parts = urllib.parse.urlsplit(address)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=2):
            return None
    except ConnectionRefusedError:
        return f"connection refused for {seconds:g} s (nothing listens on port {parts.port})"
    except TimeoutError:
        return f"no connection within {seconds:g} s (a firewall, or a host that is down?)"
    except OSError as exc:
        return f"cannot connect for {seconds:g} s: {exc.strerror or exc}"


#: Hosts a dashboard bound to every interface shows as: its link keeps the scheduler's host.
EVERY_INTERFACE = ("", "0.0.0.0", "::")


def dashboard_link(client: Client) -> str:
    """``client.dashboard_link`` with the host the scheduler's HTTP server listens on.

    Dask's link takes the scheduler's host: a dashboard bound to another address of the
    machine (``cluster.dashboard_address: 192.0.2.2:8894``, or ``127.0.0.2:8892``) was printed
    as ``http://127.0.0.1:8894/status``, where nothing listens, and ``cluster status`` then
    found no dashboard there at all.
    """
    link = client.dashboard_link
    try:
        host = client.run_on_scheduler(_http_host)
    except Exception:  # a scheduler that cannot say (not ours): Dask's own link
        return link
    if not isinstance(host, str) or host in EVERY_INTERFACE:
        return link
    parts = urllib.parse.urlsplit(link)
    where = f"[{host}]" if ":" in host else host
    netloc = f"{where}:{parts.port}" if parts.port else where
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _http_host(dask_scheduler: Any = None) -> str | None:
    """On the scheduler: the host its HTTP server (the dashboard's) is bound to."""
    server = getattr(dask_scheduler, "http_server", None)
    return getattr(server, "address", None)


def dashboard_note(link: str, config: Config) -> str:
    """The dashboard ``link`` (:func:`dashboard_link`), saying so when the configured port was
    taken (Dask used another)."""
    port = str(config["cluster.dashboard_address"] or "").rpartition(":")[2]
    if port.isdigit() and int(port) and f":{port}/" not in link:
        return f"{link} (port {port} was taken: another cluster running?)"
    return link


def attached_dashboard(client: Client) -> str | None:
    """The dashboard link of a scheduler this client attached to, or ``None`` if it has none.

    Dask formats ``dashboard_link`` from the scheduler's HTTP port whatever its dashboard
    setting; a scheduler started with ``cluster.dashboard_address: null`` serves only
    ``/health`` and ``/metrics`` there, so the link would answer 404. Asked over HTTP (a
    scheduler not started by us has no config to read it from), for the plot index beside the
    page, which dask-labextension reads: it lists the plots where the dashboard is served and
    is ``{}`` where it is not. Not the page itself: bokeh renders it on the scheduler's event
    loop, 0.47 s each time on the development VM, which every run attached to a cluster paid.
    """
    link = dashboard_link(client)
    index = urllib.parse.urljoin(link, "individual-plots.json")  # beside /status, any prefix
    try:
        with urllib.request.urlopen(index, timeout=DASHBOARD_PROBE_TIMEOUT) as reply:
            plots = json.loads(reply.read())
    except (OSError, ValueError):  # HTTPError is an OSError; a link without a host; not JSON
        return None
    return link if plots else None


def register_plugins(client: Client, plan: ClusterPlan) -> None:
    """Register the plan's worker plugins (on current and future workers).

    A plugin class with ``kwargs_from_cluster`` (:class:`~.plugins.NumericsCheck`) takes the
    rest of its arguments from the running workers.
    """
    for spec in plan.worker_plugins:
        cls = import_term(spec["class"])
        try:
            from_cluster = getattr(cls, "kwargs_from_cluster", None)
            kwargs = {**spec["kwargs"], **(from_cluster(client) if from_cluster else {})}
            client.register_plugin(cls(**kwargs))
        except OSError:
            # a worker a plugin refused closes as this one reaches it (over SSH: "error:
            # CommClosedError ... register_worker_plugin", exit 1, 4 submits in 5); the
            # refusal, recorded before the close, is what verify_cluster then says
            if not refusals(client):
                raise
            logger.debug("a refused worker closed as plugin %s registered", cls.name)
            return


#: Seconds to take the plan's plugins off a user's cluster at the end (the scheduler asks every
#: worker): a worker that does not answer must not hold up the end of a completed run.
UNREGISTER_TIMEOUT = 10.0


def plugin_names(plan: ClusterPlan) -> list[str]:
    """The names the plan's worker plugins register under."""
    return [import_term(spec["class"]).name for spec in plan.worker_plugins]


def plugins_there(client: Client) -> set[str] | None:
    """The names of the worker plugins the scheduler holds (``None``: it would not say)."""
    try:
        # a lambda travels by value: the scheduler need not import this module
        return set(client.run_on_scheduler(lambda dask_scheduler: [*dask_scheduler.worker_plugins]))
    except Exception:
        logger.debug("could not list the scheduler's worker plugins", exc_info=True)
        return None


def unregister_plugins(client: Client, names: list[str]) -> None:
    """Take worker plugins off the cluster (their ``teardown`` runs on each worker).

    A scheduler gone or slow is left as it is (logged): the run's end does not wait on it.
    """
    if client.status != "running":
        return
    for name in names:
        try:
            client.sync(client._unregister_worker_plugin, name, callback_timeout=UNREGISTER_TIMEOUT)
        except Exception:
            logger.debug("could not unregister worker plugin %s", name, exc_info=True)


def _worker_index(name: str) -> int | None:
    try:
        return int(name.rsplit("-", 1)[-1])
    except ValueError:
        return None


def verify_cluster(
    client: Client,
    plan: ClusterPlan,
    config: Config,
    facts: dict[str, dict[str, Any]] | None = None,
) -> list[str]:
    """Check what the workers really run against the plan.

    Returns
    -------
    list of str
        Warnings (clock skew with ``clock_skew_action: warn``).

    Raises
    ------
    ConfigError
        Refused workers, pinning that did not take, clock skew beyond the tolerance.
    """
    problems: list[Problem] = []
    warnings: list[str] = []
    for address, (key, reason) in refusals(client).items():
        problems.append(locate(key, config.sources, f"worker {address} refused: {reason}"))
    if problems:  # refused workers are closing: asking them anything more would race
        raise ConfigError(problems)
    facts = inspect_workers(client) if facts is None else facts
    affinity = plan.layout.get("affinity")
    for address, f in facts.items():
        index = _worker_index(f["name"])
        if index is not None and plan.backend == "mpi":
            index -= 2  # dask-mpi names workers by rank; ranks 0 and 1 are scheduler and client
        if affinity and index is not None:
            want = sorted(affinity[index % len(affinity)])
            if f["affinity"] != want or not f["threads_pinned_alike"]:
                problems.append(
                    locate(
                        "parallel.thread_affinity",
                        config.sources,
                        f"worker {address} runs on cores {f['affinity']}, planned {want}",
                    )
                )
    tolerance = config["distributed.clock_skew_tolerance"]
    for address, f in facts.items():
        skew = abs(f["clock_offset"])
        if skew > tolerance:
            message = (
                f"worker {address} clock is {skew * 1000:.3g} ms off the scheduler's "
                f"(tolerance {tolerance * 1000:g} ms)"
            )
            if config["distributed.clock_skew_action"] == "warn":
                warnings.append(message)
                logger.warning(message)
            else:
                problems.append(
                    locate(
                        "distributed.clock_skew_tolerance",
                        config.sources,
                        message + "; fix the node's clock (NTP) or set "
                        "distributed.clock_skew_action: warn",
                    )
                )
    if problems:
        raise ConfigError(problems)
    return warnings


def _check_has_workers(client: Client, config: Config) -> None:
    """Refuse a `cluster up` cluster whose workers are all gone (retired, or exited for good).

    A run on it said "0 workers, 0 threads" and then waited for ever. Workers that are being
    restarted by their nannies get :data:`WORKERS_RETURN` seconds to come back.
    """
    try:
        client.wait_for_workers(1, timeout=WORKERS_RETURN)
    except TimeoutError:
        message = (
            f"the running cluster at {client.scheduler.address} has no workers (none came "
            f"within {WORKERS_RETURN:g} s); `openclaw-dask cluster down`, then "
            "`openclaw-dask cluster up` starts new ones"
        )
        where = locate("cluster.scheduler_address", config.sources, message, config.line_of)
        raise ConfigError([where]) from None


def _check_attached(client: Client, plan: ClusterPlan, config: Config) -> None:
    """Refuse to attach to workers started from a different config (and leave them alone).

    An allocator the workers lack is refused here too: left to the plan's allocator plugin,
    it closed each of them (and its nanny) as it refused it, a notebook's own cluster
    included, and the attach went on with no worker.
    """
    fingerprint = next(p for p in plan.worker_plugins if p["class"].endswith("Fingerprint"))
    want = fingerprint["kwargs"]["fingerprint"]
    facts = inspect_workers(client)
    # a label a plain cluster's worker took from an earlier client is no config of its own
    other = {
        a: f["config_hash"]
        for a, f in facts.items()
        if f["config_hash"] not in (None, want) and not f.get("config_adopted")
    }
    if other:
        theirs = ", ".join(sorted(set(other.values())))
        raise ConfigError([attach_refusal(config, theirs, _fingerprint_values(client, other))])
    allocator = config["memory.allocator"]
    lacking = sorted(a for a, f in facts.items() if f["allocator"] != allocator)
    if allocator != "system" and lacking:
        found = sorted({facts[a]["allocator"] for a in lacking})
        message = (
            f"{allocator} here, but {len(lacking)} of the running cluster's {len(facts)} "
            f"workers run with {', '.join(found)} ({', '.join(lacking[:2])}"
            f"{', ...' if len(lacking) > 2 else ''}); start its workers with {allocator} "
            "(LD_PRELOAD), or run with --set memory.allocator=system"
        )
        raise ConfigError([locate("memory.allocator", config.sources, message, config.line_of)])


def _fingerprint_values(client: Client, hashes: Mapping[str, str]) -> dict[str, Any] | None:
    """The values behind the first of the workers' config ``hashes`` (``{address: hash}``), to
    name the keys that differ; ``None`` when that worker cannot say."""
    first = min(hashes, key=lambda a: (hashes[a], a))
    name = OWN_FINGERPRINT

    # a closure, so that it travels by value: a running cluster may have been started by
    # another openclaw-dask, whose workers lack a function added here since
    def own(dask_worker: Any) -> Any:
        return getattr(dask_worker, name, None)

    try:
        found = client.run(own, workers=[first]).get(first)
    except Exception:  # a worker that went away meanwhile: the refusal stands without them
        logger.debug("could not read the fingerprint of worker %s", first, exc_info=True)
        return None
    if not found or found[0] != hashes[first]:
        return None
    return dict(found[1])


#: The most differing keys an attach refusal names with their values (the --set names all).
SHOWN_KEYS = 3


def attach_refusal(config: Config, theirs: str, values: Mapping[str, Any] | None = None) -> Problem:
    """The problem of attaching ``config`` to workers started from another config.

    It names each key that differs (dotted), the value on either side and where this run's
    came from, and says what to do: start a cluster with this config, or run with the
    cluster's values (as ``--set``). The problem stays on ``cluster.scheduler_address``, whose
    source says which cluster it is (``--address``, ``cluster up (pid N)``).

    Parameters
    ----------
    config : Config
        The config attaching (``cluster.scheduler_address`` set, by the user or by
        :func:`on_running_cluster`).
    theirs : str
        The workers' config fingerprint(s).
    values : Mapping, optional
        The values behind their fingerprint (``cluster up`` records them, and the workers
        hold them), to name the keys that differ; ``None`` when unknown.

    Returns
    -------
    Problem
    """
    mine, mine_values = config.fingerprint()
    values = values or {}  # unknown: no key can be named
    keys = sorted(k for k in {*values, *mine_values} if values.get(k) != mine_values.get(k))
    from_cluster_up = config.sources.get("cluster.scheduler_address", "").startswith("cluster up")
    start = (
        "`openclaw-dask cluster down`, then `openclaw-dask cluster up` with this config"
        if from_cluster_up
        else "start the cluster's workers from this config"
    )
    if not values or not keys:  # which keys is not known (an older openclaw-dask's workers)
        return locate(
            "cluster.scheduler_address",
            config.sources,
            f"the running cluster's workers were started from another openclaw.config "
            f"(fingerprint {theirs}, this config's {mine}); {start}, or run with the config "
            "they were started from",
        )
    shown = ", ".join(
        _side_by_side(k, values, mine_values, config.sources) for k in keys[:SHOWN_KEYS]
    )
    more = f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
    theirs_set = " ".join(shlex.quote(f"{k}={yaml_value(values[k])}") for k in keys if k in values)
    fix = f"{start}, or run with the cluster's values: --set {theirs_set}"
    if not theirs_set:  # keys this config has and theirs lacks: an older openclaw-dask
        fix = start
    return locate(
        "cluster.scheduler_address",
        config.sources,
        f"the running cluster's workers were started from another openclaw.config: "
        f"{shown}{more}; {fix}",
    )


def _side_by_side(
    key: str, theirs: Mapping[str, Any], mine: Mapping[str, Any], sources: Mapping[str, str]
) -> str:
    """``distributed.sync_interval 5000 there, 7 here (--set)``: a default goes unsaid."""
    there = yaml_value(theirs[key]) if key in theirs else "unset"
    here = yaml_value(mine[key]) if key in mine else "unset"
    source = sources.get(key, "default")
    return f"{key} {there} there, {here} here" + (f" ({source})" if source != "default" else "")


@contextmanager
def start_cluster(
    config: Config | str | os.PathLike[str] | None = None,
    *,
    overrides: Any = None,
    hardware: Hardware | None = None,
    backend: str | None = None,
    address: str | None = None,
    verify: bool = True,
    attach_running: bool = True,
) -> Iterator[Client]:
    """Start the planned cluster (or attach to a running one) and yield a client.

    Parameters
    ----------
    config
        A loaded :class:`~openclaw_dask.config.Config`, a config path, or ``None`` for the
        search order.
    overrides
        ``["key=value", ...]`` (or a mapping) applied to the config, loaded or read.
    hardware
        The machine (default: detected).
    backend
        Force a backend instead of ``cluster.backend``.
        An ``mpi`` plan is attached to only on rank 1 of an ``mpirun`` launch (which
        ``submit``/``run_workflow`` start, see :mod:`openclaw_dask.runtime.mpi_launch`).
    address
        Attach to this scheduler (same as ``cluster.scheduler_address``). Without one, a
        cluster started by ``openclaw-dask cluster up`` is attached to when it is running
        and is the kind of cluster the config plans (:func:`running_cluster`).
    verify
        Read every worker's settings back and refuse what does not match the plan.
    attach_running
        ``False``: start the planned cluster even when a ``cluster up`` cluster runs (the
        benchmark and the tuner measure the cluster a config plans, not the running one).

    Yields
    ------
    distributed.Client
        A client of its own, current within the block (``client.as_current()``): a dask
        collection's ``compute()`` there runs on this cluster. It is not made the global
        default: after the block, a notebook's own client is the current one again.

    Raises
    ------
    ConfigError
        Bad config, a machine that cannot run it, an unreachable scheduler, or workers that do
        not honour the config. Whatever was started is shut down first.
    """
    check_hardware_arg("start_cluster", hardware)
    check_backend(backend)
    check_flag("start_cluster", "verify", verify)
    check_flag("start_cluster", "attach_running", attach_running)
    config = _resolve(config, overrides, address)
    quiet_interrupted_sync()  # a Dask bug's log on Ctrl-C (see runtime/terminal.py)
    mpi_scheduler = mpi_job_scheduler()
    running = running_cluster(config, hardware, backend) if attach_running else None
    if running:
        logger.info("attaching to the cluster started by `cluster up` at %s", running["address"])
        config = on_running_cluster(config, running)
    plan = plan_cluster(config, hardware, backend=backend)
    if plan.backend == "mpi" and not mpi_scheduler:
        raise ConfigError(
            [
                locate(
                    "cluster.backend",
                    config.sources,
                    "mpi clusters start under mpirun, not inside a running program: "
                    "`openclaw-dask submit` (or run_workflow) launches it; "
                    "`openclaw-dask config plan` prints the mpirun line",
                )
            ]
        )
    if plan.backend == "ssh" and verify:
        from openclaw_dask.runtime.preflight import check_nodes

        check_nodes(config)  # every node reachable, logged in and compatible, or nothing starts
    with ExitStack() as stack:
        # (entered first: left last, once the client has closed)
        stack.enter_context(lost_scheduler_quieted())
        stack.enter_context(dask.config.set(plan.dask_config))
        if plan.backend == "attach":
            where = locate("cluster.scheduler_address", config.sources, "", config.line_of)
            client = stack.enter_context(connect(plan.address or "", where))
            # (a `cluster up` cluster: the runner attaches the config to it before this call)
            source = config.sources.get("cluster.scheduler_address", "")
            if source.startswith(f"{CLUSTER_UP_SOURCE} ("):
                _check_has_workers(client, config)
            check_openclaw_there(client, where)  # a cluster wired by hand may lack us
            if verify:
                _check_attached(client, plan, config)
            found = plugins_there(client)
            register_plugins(client, plan)
            # the cluster's plugins are left as found: ours leave a user's own cluster with the
            # run (left, they went on refusing the workers it added later, for a config no
            # longer in use); a `cluster up` daemon's, or another run's, stay
            added = [n for n in plugin_names(plan) if found is not None and n not in found]
            if added and not source.startswith(f"{CLUSTER_UP_SOURCE} ("):
                stack.callback(unregister_plugins, client, added)
        elif plan.backend == "mpi":  # rank 1 of our mpirun launch: attach to dask-mpi's ranks
            where = Problem("", "cluster.backend", origin="mpirun")
            client = stack.enter_context(connect(mpi_scheduler or "", where))
            client.wait_for_workers(plan.layout["processes"], timeout=MPI_WORKER_TIMEOUT)
            register_plugins(client, plan)
            if verify:
                verify_cluster(client, plan, config)
        else:
            # local workers are children in the client's terminal: a Ctrl-C while they start
            # waits for them (runtime/terminal.py); ssh workers are not, and may take long
            held = interrupts_held() if plan.backend in ("local", "cuda") else nullcontext()
            # the nannies set their workers' environment in this process at every spawn: it is
            # put back after the start, and again once the cluster has closed, because a worker
            # restarted meanwhile (client.restart(), one that died) sets it again: LD_PRELOAD
            # and the BLAS limits had stayed in the caller; a raw dask: section may add to it
            spawned = {*plan.worker_env, *(dask.config.get(PRE_SPAWN, None) or {})}
            stack.callback(restore_environ, spawn_environ(spawned))
            with preserved_environ(spawned), warnings.catch_warnings(), held:
                # a taken dashboard port: Dask serves on another and warns with a source line;
                # the link we print shows the port really used (dashboard_note says why)
                warnings.filterwarnings("ignore", r"Port \d+ is already in use", UserWarning)
                cluster = stack.enter_context(cluster_class(plan)(**materialise_kwargs(plan)))
            client = stack.enter_context(Client(cluster, set_as_default=False))
            if plan.backend == "ssh":
                from openclaw_dask.runtime.preflight import wait_for_ssh_workers

                wait_for_ssh_workers(client, plan)
            register_plugins(client, plan)
            if verify:
                verify_cluster(client, plan, config)
        # (a scheduler call: only where the line is logged)
        if config["cluster.dashboard_address"] and logger.isEnabledFor(logging.INFO):
            logger.info("dashboard: %s", dashboard_link(client))
        # the block's compute() runs on this cluster (it had run on dask's local threads, or
        # on a notebook's own client); that client is the current one again after the block
        stack.enter_context(client.as_current())
        _YIELDED.add(client)
        stack.callback(_YIELDED.discard, client)
        yield client
