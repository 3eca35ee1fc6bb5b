"""Commands a newcomer runs first work on a data folder that does not exist yet (the embedded default)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli.app import app


@pytest.mark.parametrize("args, stdin", [(["tokens", "create", "--role", "admin"], None),
                                         (["users", "create", "ada", "--role", "annotator", "--password-stdin"],
                                          "correct horse battery\n")])
def test_first_command_on_a_missing_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                args: list[str], stdin: str | None) -> None:
    data = tmp_path / "not" / "there"
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(data))
    monkeypatch.delenv("INTEGRITYLAB_DATABASE_URL", raising=False)
    result = CliRunner().invoke(app, args, input=stdin)
    assert result.exit_code == 0, result.output
    assert any(data.glob("*.sqlite*")) or any(data.rglob("*.db"))


def test_queues_create_and_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("INTEGRITYLAB_DATABASE_URL", raising=False)
    made = CliRunner().invoke(app, ["queues", "create", "t05-only", "-n", "3", "--category", "T05"])
    assert made.exit_code == 0 and "queue t05-only: 0 runs, 0 gold items, 3 annotators" in made.output
    again = CliRunner().invoke(app, ["queues", "create", "t05-only"])
    assert again.exit_code == 2 and "exists already" in again.output
    bad = CliRunner().invoke(app, ["queues", "create", "x", "--overlap", "1.5"])
    assert bad.exit_code == 2 and "overlap" in bad.output
    listed = CliRunner().invoke(app, ["queues", "list"], terminal_width=200)
    assert listed.exit_code == 0 and "review (default)" in listed.output and "t05-only" in listed.output
