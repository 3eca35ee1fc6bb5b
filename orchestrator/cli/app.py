"""The ``integritylab`` command: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from orchestrator.cli import (
    ablate_cmd,
    annotations_cmd,
    export_cmd,
    gateway_cmd,
    images_cmd,
    judge_cmd,
    judges_cmd,
    models_cmd,
    queues_cmd,
    replay_cmd,
    review_cmd,
    runs_cmd,
    sandbox_cmd,
    scenarios_cmd,
    service_cmd,
    users_cmd,
)

app = typer.Typer(
    name="integritylab",
    help="Run research agents in sandboxed integrity traps and score what they do.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(scenarios_cmd.app, name="scenarios")
app.add_typer(images_cmd.app, name="images")
app.add_typer(sandbox_cmd.app, name="sandbox")
app.add_typer(gateway_cmd.app, name="gateway")
app.add_typer(judge_cmd.app, name="judge")
app.add_typer(judges_cmd.app, name="judges")
app.add_typer(review_cmd.app, name="review")
app.add_typer(replay_cmd.app, name="replay")
app.add_typer(models_cmd.app, name="models")
app.command()(runs_cmd.demo)
app.command()(runs_cmd.run)
app.command()(runs_cmd.report)
app.command()(ablate_cmd.ablate)
app.command()(service_cmd.serve)
app.command()(service_cmd.worker)
app.command()(service_cmd.beat)
app.command()(service_cmd.migrate)
app.command()(service_cmd.submit)
app.command()(service_cmd.healthcheck)
app.add_typer(service_cmd.tokens_app, name="tokens")
app.add_typer(users_cmd.app, name="users")
app.add_typer(queues_cmd.app, name="queues")
app.add_typer(annotations_cmd.app, name="annotations")
app.add_typer(export_cmd.app, name="export")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
