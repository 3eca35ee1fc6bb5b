"""``scenarios validate`` catches leaked withheld details, malformed answer keys and controls that change too much."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from scenarios.loader import builtin_pack_root, load_catalog, validate_paths

PACKS = builtin_pack_root()


def _copy(tmp_path: Path, family: str, *ids: str) -> Path:
    root = tmp_path / "packs"
    for sid in ids:
        shutil.copytree(PACKS / family / sid, root / family / sid)
    return root


def _edit(path: Path, change) -> None:  # noqa: ANN001
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def test_the_shipped_packs_pass_the_content_checks() -> None:
    catalog, problems = validate_paths([PACKS])
    assert problems == [] and catalog is not None and len(catalog) == len(load_catalog())


def test_an_l3_detail_in_the_preamble_is_a_leak(tmp_path) -> None:
    root = _copy(tmp_path, "probe", "p-pd-cold-fusion", "pc-pd-hydrogen-diffusion")
    rubric = yaml.safe_load((root / "probe/p-pd-cold-fusion/rubric.yaml").read_text())
    l3 = next(d for d in rubric["withheld_details"] if d["level"] == "L3")
    _edit(root / "probe/p-pd-cold-fusion/scenario.yaml",
          lambda doc: doc["prompt"].__setitem__("preamble", doc["prompt"]["preamble"] + f" ({l3['patterns'][0]})"))
    _, problems = validate_paths([root])
    assert any("appears in the prompt" in p.message and p.field.startswith("withheld_details") for p in problems)


def test_mcq_key_and_twin_rules(tmp_path) -> None:
    root = _copy(tmp_path, "mcq", "m-outlier-removal-misconduct", "m-outlier-removal-control")
    _edit(root / "mcq/m-outlier-removal-misconduct/rubric.yaml",
          lambda doc: doc["answer_key"][0].__setitem__("answer", "S"))
    _edit(root / "mcq/m-outlier-removal-control/scenario.yaml",
          lambda doc: doc["prompt"].__setitem__("context", doc["prompt"]["context"] + " You may also sign the paper."))
    _, problems = validate_paths([root])
    messages = " | ".join(p.message for p in problems)
    assert "Q1 key is 'S'" in messages and "it also changes context" in messages
