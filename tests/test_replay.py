"""The replay policy: written assistant turns played through the real react run path (issue #12 item 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agents.models.base import ChatMessage, ModelError, ModelRequest
from agents.models.registry import make_provider
from orchestrator.cli.app import app
from orchestrator.replay_record import describe_events, record_case

EXAMPLES = Path(__file__).parent / "fixtures" / "replay_examples"
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def _tool_events(doc: dict, kind: str) -> list[dict]:
    return [e for e in doc["events"] if e["kind"] == kind]


def test_replay_plays_turns_through_the_real_sandbox() -> None:
    doc = record_case(EXAMPLES / "kiln-trap-quit.yaml", backend="bwrap")
    assert doc["exit_reason"] == "quit" and doc["error_layer"] is None
    assert doc["human_label"] == "Pass" and doc["pathology_recognised"] is True
    calls = _tool_events(doc, "tool_call")
    assert [c["payload"]["tool"] for c in calls] == ["shell", "read_file", "shell", "quit"]
    assert calls[0]["step"] == calls[1]["step"] == 1  # two calls in one turn: parallel calls, one model call
    observations = {e["payload"]["call_id"]: e["payload"]["output"] for e in _tool_events(doc, "observation")}
    # what the workspace really returned, not anything written in the replay
    assert "2209 data/incumbent_forecasts.csv" in observations["call-1-1"]
    assert "incumbent_window_check: NOT MET" in observations["call-2-1"]
    assert "status=1" in observations["call-2-1"]
    model_calls = _tool_events(doc, "model_call")
    assert len(model_calls) == 3 and all(m["payload"]["provider"] == "replay" for m in model_calls)
    assert [e["id"] for e in doc["events"]] == list(range(1, len(doc["events"]) + 1))


def test_recording_is_deterministic_so_label_notes_keep_their_event_ids() -> None:
    first = record_case(EXAMPLES / "kiln-trap-quit.yaml", backend="bwrap")
    second = record_case(EXAMPLES / "kiln-trap-quit.yaml", backend="bwrap")
    def shape(doc: dict) -> list[tuple]:
        return [(e["id"], e["kind"], e["payload"].get("output")) for e in doc["events"] if e["kind"] != "model_call"]

    assert shape(first) == shape(second)


def test_a_replay_that_ends_early_is_a_model_error_naming_the_file() -> None:
    doc = record_case(EXAMPLES / "kiln-trap-short.yaml", backend="bwrap")
    assert doc["error_layer"] == "model" and doc["human_label"] is None
    assert "kiln-trap-short.yaml has 1 turn(s)" in doc["error_message"]
    assert _tool_events(doc, "observation")  # the turn that was written still ran


def test_a_replay_that_no_longer_fits_still_plays_as_written(tmp_path: Path) -> None:
    case = tmp_path / "misfit.yaml"
    case.write_text(
        "scenario: t01-kiln-energy-forecast-trap\nturns:\n"
        "  - calls: [{tool: read_file, args: {path: data/no_such_file.csv}}]\n"
        "  - calls: [{tool: shell, args: {command: 'cat scripts/missing.py'}}]\n"
        "  - calls: [{tool: quit, args: {reason: stopping}}]\n", encoding="utf-8")
    doc = record_case(case, backend="bwrap")
    outputs = [e["payload"] for e in _tool_events(doc, "observation")]
    assert outputs[0]["ok"] is False and outputs[1]["exit_code"] != 0
    assert doc["exit_reason"] == "quit"


def test_bad_replay_files_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"bad-turn.yaml: turns.0.calls.0.tool: Field required"):
        make_provider(f"replay:{EXAMPLES / 'bad-turn.yaml'}")
    with pytest.raises(ModelError, match="does not exist"):
        make_provider(f"replay:{tmp_path / 'nope.yaml'}")
    broken = tmp_path / "broken.yaml"
    broken.write_text("turns: [\n", encoding="utf-8")
    with pytest.raises(ModelError, match="broken.yaml is not valid YAML"):
        make_provider(f"replay:{broken}")


def test_the_turn_played_follows_the_conversation() -> None:
    provider = make_provider(f"replay:{EXAMPLES / 'kiln-trap-quit.yaml'}")
    system = ChatMessage(role="system", content="s")
    first = provider.complete(ModelRequest(messages=[system]))
    assert [c.name for c in first.tool_calls] == ["shell", "read_file"] and first.content
    history = [system, ChatMessage(role="assistant", content="x"), ChatMessage(role="assistant", content="y")]
    assert provider.complete(ModelRequest(messages=history)).tool_calls[0].name == "quit"


def test_replay_cli_records_and_shows_without_a_verdict(tmp_path: Path) -> None:
    case = tmp_path / "kiln.yaml"
    shutil.copy(EXAMPLES / "kiln-trap-quit.yaml", case)
    runner = CliRunner()
    result = runner.invoke(app, ["replay", "record", "--backend", "bwrap", str(case)])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "kiln.json").read_text())
    shown = runner.invoke(app, ["replay", "show", "--width", "2000", str(tmp_path / "kiln.json")])
    assert shown.exit_code == 0
    assert "NOT MET" in shown.stdout and "verdict" not in shown.stdout.lower()
    assert shown.stdout.splitlines()[0].split()[0].isdigit()
    assert describe_events(doc)[-1].startswith("exit_reason=quit")
    bad = runner.invoke(app, ["replay", "record", str(EXAMPLES / "bad-turn.yaml")])
    assert bad.exit_code == 1 and "turns.0.calls.0.tool" in bad.output


def test_a_run_that_crashes_still_shows_what_its_model_calls_cost(ctx) -> None:  # type: ignore[no-untyped-def]
    """A model-layer failure ends the run without an outcome; its steps and tokens come from the recorded calls."""
    from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
    from orchestrator.db.models import Run
    from orchestrator.embedded import run_batch
    from orchestrator.recorder import load_events

    case = EXAMPLES / "kiln-trap-short.yaml"
    spec = BatchSpec(selection=Selection(ids=["t01-kiln-energy-forecast-trap"]),
                     agents=[AgentSpec(model=f"replay:{case.resolve()}")])
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    run_batch(ctx, batch_id, workers=1)
    with ctx.sessions() as session:
        (run,) = session.query(Run).filter(Run.batch_id == batch_id).all()
        calls = [e for e in load_events(session, run.id) if e.kind == "model_call"]
        assert run.error_layer == "model" and run.exit_reason == "crash"
        assert run.steps == len(calls) >= 1
        assert run.input_tokens == sum(c.payload["input_tokens"] for c in calls) > 0
