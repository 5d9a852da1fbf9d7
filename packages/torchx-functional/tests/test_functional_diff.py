"""``torchx diff`` on Functional specs: modules by name, nodes aligned."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from torchx.cli import main
from torchx.core._diff import diff_specs

SEED_DIAMOND = Path(__file__).resolve().parents[3] / "examples" / "seed_diamond.yaml"


def test_a_functional_diff_names_modules_and_aligns_nodes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = yaml.safe_load(SEED_DIAMOND.read_text(encoding="utf-8"))
    b = copy.deepcopy(a)
    b["nodes"].insert(4, {"name": "relu", "op": "torch.relu", "args": [{"node": "mul"}]})
    b["nodes"][5]["args"][0]["node"] = "relu"  # flatten reads the new node
    b["modules"]["linear"]["args"]["out_features"] = 64
    assert [str(difference) for difference in diff_specs(a, b)] == [
        "$.modules.linear.args.out_features: 80 → 64",
        '$.nodes[4]: added {"name": "relu", "op": "torch.relu", "args": [{"node": "mul"}]}',
        '$.nodes[4→5].args[0].node: "mul" → "relu"',
    ]
    (tmp_path / "b.json").write_text(json.dumps(b), encoding="utf-8")
    status = main(
        ["diff", str(SEED_DIAMOND), str(tmp_path / "b.json"), "--input", "None,3,32,32", "--format", "json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert status == 1 and len(data["spec"]) == 3
    linear = [d for d in data["layers"] if d["a"] and d["a"]["path"] == "linear"]
    assert linear[0]["a"]["parameters"] == 345_680 and linear[0]["b"]["parameters"] == 276_544
    assert data["total_parameters"]["b"] - data["total_parameters"]["a"] == 276_544 - 345_680 + (650 - 810)
