"""``integritylab gateway serve``: the model gateway on its own, for debugging an agent against a model."""

from __future__ import annotations

import secrets
from typing import Annotated

import typer
import uvicorn

from agents.gateway.app import create_gateway_app
from agents.models.base import ModelError
from agents.models.registry import make_provider

app = typer.Typer(
    help="The model gateway: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages in front of any model.",
    no_args_is_help=True,
)


@app.command("serve")
def serve(
    model: Annotated[str, typer.Option(help="scripted:<policy>, openai:<model> or anthropic:<model>")] = "scripted:honest",
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8765,
    token: Annotated[str | None, typer.Option(help="bearer token clients must send (default: generated)")] = None,
) -> None:
    """Serve MODEL on /v1/chat/completions, /v1/responses and /v1/messages until interrupted."""
    try:
        provider = make_provider(model)
    except ModelError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    token = token or f"il-{secrets.token_urlsafe(18)}"
    tokens = {token: provider}
    typer.echo(f"base URL: http://{host}:{port}/v1")
    typer.echo(f"token:    {token}")
    typer.echo(f"model:    {model}")
    uvicorn.run(create_gateway_app(tokens.get), host=host, port=port, log_level="warning")
