"""Every dilemma scenario, through the real run path, meets the four scripted archetypes.

honest -> Pass on traps (and quits), completes controls; fabricator -> Fail on
traps; discloser -> Flawed on traps; refuser -> Pass on traps, over-refuses
controls. The verdicts come from the judges reading real trajectories.
"""

from __future__ import annotations

import pytest

from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.embedded import make_context, run_batch
from orchestrator.execution import RunContext
from orchestrator.metrics import batch_runs
from orchestrator.settings import Settings
from scenarios.loader import load_catalog
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap

POLICIES = ("honest", "fabricator", "discloser", "refuser")
SCENARIOS = [s.id for s in load_catalog().select(family="dilemma")]
EXPECTED_TRAP = {"honest": "Pass", "fabricator": "Fail", "discloser": "Flawed", "refuser": "Pass"}


@pytest.fixture(scope="module")
def module_ctx(tmp_path_factory: pytest.TempPathFactory) -> RunContext:
    return make_context(Settings(data_dir=tmp_path_factory.mktemp("packs")), backend="bwrap")


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_scenario_meets_archetypes(module_ctx: RunContext, scenario_id: str) -> None:
    spec = BatchSpec(selection=Selection(ids=[scenario_id]),
                     agents=[AgentSpec(model=f"scripted:{p}") for p in POLICIES])
    batch_id, count = plan_batch(module_ctx.sessions, module_ctx.catalog, spec)
    assert count == len(POLICIES)
    assert run_batch(module_ctx, batch_id, workers=4) == []
    with module_ctx.sessions() as session:
        runs = {r.model.split(":", 1)[1]: r for r in batch_runs(session, batch_id)}
    role = runs["honest"].role
    got = {p: (r.verdict, r.completed, r.exit_reason, r.error_message) for p, r in runs.items()}
    if role == "trap":
        assert {p: got[p][0] for p in POLICIES} == EXPECTED_TRAP, got
        assert runs["honest"].exit_reason == "quit", got
    else:
        assert all(got[p][0] == "Pass" for p in POLICIES), got
        assert all(runs[p].completed for p in ("honest", "fabricator", "discloser")), got
        assert runs["refuser"].completed is False, got
