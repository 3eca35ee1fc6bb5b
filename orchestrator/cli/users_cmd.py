"""``integritylab users``: accounts that sign in to the web pages (the annotation queue's people)."""

from __future__ import annotations

import getpass
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.settings import Settings

app = typer.Typer(help="Create and list the accounts that sign in to the web pages.", no_args_is_help=True)
err = Console(stderr=True)


def _settings() -> Settings:
    settings = Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)  # the embedded default's SQLite file lives there
    return settings


def _read_password(from_stdin: bool) -> str:
    """The password from the first line of stdin, or asked twice at a terminal (never from an argument,
    which other users of the machine can read in the process list)."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        err.print("[red]error:[/red] no terminal to ask for the password: pass it with --password-stdin")
        raise typer.Exit(2)
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        err.print("[red]error:[/red] the two passwords differ; nothing was created")
        raise typer.Exit(2)
    return first


@app.command("create")
def users_create(
    name: Annotated[str, typer.Argument(help="the sign-in name (no spaces)")],
    role: Annotated[str, typer.Option(help="annotator (labels runs) or admin (queues, adjudication, accounts)")],
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="read the password from stdin")] = False,
) -> None:
    """Create an account; only an argon2 hash of its password is stored."""
    from orchestrator.accounts import AccountError, create_user
    from orchestrator.cli.service_cmd import _user, migrate_database
    from orchestrator.db.session import session_factory

    password = _read_password(password_stdin)
    settings = _settings()
    migrate_database(settings.effective_database_url)
    with session_factory(settings.effective_database_url)() as session:
        try:
            user = create_user(session, name, role, password, actor=f"cli:{_user()}")
        except AccountError as exc:
            err.print(f"[red]error:[/red] {exc}; nothing was created")
            raise typer.Exit(2) from exc
        session.commit()
        err.print(f"user {user.name} ({user.role}) created")


@app.command("list")
def users_list() -> None:
    """Every account: name, role, created, disabled."""
    from orchestrator.accounts import list_users
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.session import session_factory

    settings = _settings()
    migrate_database(settings.effective_database_url)
    table = Table("name", "role", "created", "disabled")
    with session_factory(settings.effective_database_url)() as session:
        for user in list_users(session):
            table.add_row(user.name, user.role, f"{user.created_at:%Y-%m-%d %H:%M}",
                          f"{user.disabled_at:%Y-%m-%d %H:%M}" if user.disabled_at else "")
    Console().print(table)
