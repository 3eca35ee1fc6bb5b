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
