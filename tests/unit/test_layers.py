"""The package's layers import in one direction only (DESIGN.md, section 2)."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

#: cli -> bench -> workflows -> runtime -> translate -> config; a layer imports only lower ones
RANK = {"config": 0, "translate": 1, "runtime": 2, "workflows": 3, "bench": 4, "cli": 5}


def test_no_layer_imports_a_layer_above_it() -> None:
    package = ROOT / "openclaw_dask"
    upward = []
    for path in sorted(package.rglob("*.py")):
        layer = path.relative_to(package).parts[0]
        if layer not in RANK:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                top, _, rest = name.partition(".")
                if top == "openclaw_dask" and RANK.get(rest.split(".")[0], -1) > RANK[layer]:
                    upward.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert len(list(package.rglob("*.py"))) > 40  # the walk saw the package
    assert not upward, upward
