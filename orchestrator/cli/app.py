"""The ``integritylab`` command: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from orchestrator.cli import gateway_cmd, runs_cmd, scenarios_cmd

app = typer.Typer(
    name="integritylab",
    help="Run research agents in sandboxed integrity traps and score what they do.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(scenarios_cmd.app, name="scenarios")
app.add_typer(gateway_cmd.app, name="gateway")
app.command()(runs_cmd.demo)
app.command()(runs_cmd.run)
app.command()(runs_cmd.report)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
