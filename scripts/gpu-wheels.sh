#!/usr/bin/env bash
# Fetch, here (where PyPI is reachable), the wheels that the GPU device machine lacks, into .whl/.
#
# The device machine (one NVIDIA H200, lent to some sessions for at most 15 minutes; see
# docs/design-notes.md, "GPU check on the device machine") has no network. Its python3 is the
# image's Python 3.12 with numpy, cupy-cuda13x, xarray, pyyaml, click, rich, psutil, msgpack,
# cloudpickle, toolz, jinja2, matplotlib, pandas, pytest, nvidia-ml-py, cuda-core ... but no dask,
# distributed, zarr or dask-cuda. The missing ones travel as wheels in .whl/ (ignored by git,
# named in the run's `carry`), and scripts/gpu-check.sh installs them there with --target.
#
# Versions are those installed in .venv (so timings compare with this machine's), except
# dask-cuda, which .venv cannot hold (no GPU here): it is pinned below to the release whose
# LocalCUDACluster signature openclaw_dask/translate/cuda.py lists.
#
# After the download every wheel's Requires-Dist is checked: each requirement must be carried
# (at a version that satisfies it), present in the device image, or skipped on purpose below.
# The project's own dependency closure (pyproject.toml + the gpu extra, walked through .venv's
# metadata) is checked the same way, so a new dependency cannot be forgotten silently.
#
# Usage: scripts/gpu-wheels.sh            (PYTHON=... to use another interpreter with pip)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
DEST=.whl
# 64 MiB travel in all (tracked tree + carried paths): leave the rest for the repository.
MAX_MIB=${GPU_WHEELS_MAX_MIB:-45}
DASK_CUDA_VERSION=26.10.0

# What the project needs at import and run time that the image lacks (see the check below).
CARRY=(
    dask distributed zarr numcodecs donfig google-crc32c  # the engine and its storage
    cftime                                                # the climate outputs' calendar
    partd locket tblib zict tornado                       # dask / distributed's own needs
    bokeh xyzservices                                     # dashboard and performance report
    zstandard lz4                                         # distributed.comm compression
    cryptography cffi pycparser                           # config TLS checks (imported early)
)

export PIP_DISABLE_PIP_VERSION_CHECK=1
mapfile -t SPECS < <("$PY" - "${CARRY[@]}" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version

missing = []
for name in sys.argv[1:]:
    try:
        print(f"{name}=={version(name)}")
    except PackageNotFoundError:
        missing.append(name)
if missing:
    sys.exit(f"gpu-wheels: not installed in this environment: {' '.join(missing)}")
EOF
)
SPECS+=("dask-cuda==$DASK_CUDA_VERSION")

mkdir -p "$DEST"
rm -f "$DEST"/*.whl  # one version of each package: two stop the install on the device
echo "gpu-wheels: downloading ${#SPECS[@]} wheels into $DEST/"
printf '  %s\n' "${SPECS[@]}"
# manylinux tags are matched exactly: name every glibc level the wheels above are built for
PLATFORMS=()
for tag in manylinux_2_39 manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 \
    manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
    PLATFORMS+=(--platform "${tag}_x86_64")
done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${PLATFORMS[@]}" -d "$DEST" "${SPECS[@]}" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
# grep hides the warnings of this machine's pip config; the download itself must succeed:
if [ "$(ls "$DEST"/*.whl 2>/dev/null | wc -l)" -ne "${#SPECS[@]}" ]; then
    echo "gpu-wheels: expected ${#SPECS[@]} wheels, got:" >&2
    ls "$DEST" >&2
    exit 1
fi

# Requirements of every wheel, and of the project, against what travels and what the image has.
"$PY" - "$DEST" <<'EOF'
import re
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


# Python packages of the device image 'cuda', as KINDS.md listed them (read 2026-11-17).
IMAGE = set(map(norm, """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch
build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage
cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops
equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch
grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig
interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13
nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir
onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker
prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers
setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch
torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton
typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray
xxhash yarl zipp
""".split()))
# Needed by a requirement, yet deliberately not carried (and why).
SKIP = {
    "rapids-dask-dependency": "a meta-package pinning dask to RAPIDS' release plus a .pth import "
    "hook; dask-cuda never imports it, and a --target install would not run the .pth anyway",
    "cupy-cuda12x": "the gpu extra names it; the image has cupy-cuda13x, matching its CUDA 13",
    "tzdata": "python-dateutil 4 (here) needs it; the image keeps its own python-dateutil",
}
ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}

carried = {}
for wheel in sorted(Path(sys.argv[1]).glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        [meta] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        msg = Parser().parsestr(z.read(meta).decode())
    name = norm(msg["Name"])
    if name in carried:
        sys.exit(f"gpu-wheels: two wheels of {name}: keep one version")
    carried[name] = (Version(msg["Version"]), msg.get_all("Requires-Dist") or [])

problems, notes, from_image = [], [], {}


def check(req, needed_by, extras=("",)):
    if req.marker and not any(req.marker.evaluate({**ENV, "extra": e}) for e in extras):
        return None
    name = norm(req.name)
    if name in carried:
        if req.specifier and not req.specifier.contains(carried[name][0], prereleases=True):
            problems.append(f"{needed_by} needs {req}, carried {name} {carried[name][0]}")
    elif name in IMAGE:
        from_image.setdefault(name, set()).update(str(s) for s in req.specifier)
    elif name in SKIP:
        notes.append(f"{needed_by} needs {req}: not carried: {SKIP[name]}")
    else:
        problems.append(f"{needed_by} needs {req}: neither carried nor in the image")
    return name


for name, (_, requires) in sorted(carried.items()):
    for r in requires:
        check(Requirement(r), name)

# the project's closure, walked through the metadata installed here; a requirement's markers
# are read with the extras its parent was asked for (dask[array,diagnostics] -> bokeh, ...)
project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
todo = [(Requirement(r), "openclaw-dask", ()) for r in project["dependencies"]]
todo += [(Requirement(r), "openclaw-dask[gpu]", ()) for r in project["optional-dependencies"]["gpu"]]
walked = set()
while todo:
    req, parent, parent_extras = todo.pop()
    name = check(req, parent, ("", *parent_extras))
    key = (name, tuple(sorted(req.extras)))
    if name not in carried or key in walked:
        continue  # the image's packages bring their own needs
    walked.add(key)
    try:
        dist = distribution(req.name)
    except PackageNotFoundError:
        continue  # dask-cuda: not installable here; its wheel's requirements were checked above
    todo += [(Requirement(r), name, tuple(req.extras)) for r in dist.requires or []]

for line in sorted(set(notes)):
    print(f"  note: {line}")
# their versions there are unknown here; gpu_check.py checks them on the device
needs = [f"{n}{','.join(sorted(v))}" for n, v in sorted(from_image.items())]
print("  from the image:", " ".join(needs))
if problems:
    print("gpu-wheels: the wheel set is incomplete:", *sorted(set(problems)), sep="\n  ")
    sys.exit(1)
print(f"gpu-wheels: requirements checked: {len(carried)} carried wheels + the image")
EOF

total=$(du -cb "$DEST"/*.whl | tail -1 | cut -f1)
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
ls -l "$DEST" | awk 'NR > 1 { printf "  %9d  %s\n", $5, $9 }'
echo "gpu-wheels: $(ls "$DEST"/*.whl | wc -l) wheels, $(mib "$total") (limit $MAX_MIB MiB);" \
    "tracked tree $(mib "$tree"); 64 MiB travel in all"
if [ "$total" -gt $((MAX_MIB * 1048576)) ]; then
    echo "gpu-wheels: $DEST is over $MAX_MIB MiB" >&2
    exit 1
fi
