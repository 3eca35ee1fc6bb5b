"""``integritylab sandbox exec|selftest|prepare``: run one command hardened, prove the isolation holds,
or prepare the image's root filesystem for bubblewrap."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from orchestrator.settings import Settings
from sandboxes.base import Sandbox, SandboxError, SandboxLimits, SandboxSpec, SandboxUnavailable
from sandboxes.containment import CheckResult, check_names, run_suite
from sandboxes.fingerprint import EnvironmentFingerprint, measure
from sandboxes.registry import AUTO_ORDER, get_backend, pick_backend
from sandboxes.rootfs import RootfsError, bwrap_root, prepare_rootfs

app = typer.Typer(
    help="Run a command in a fresh hardened sandbox, or run the containment self-test.", no_args_is_help=True
)
err = Console(stderr=True, highlight=False)

TIMEOUT_EXIT = 124  # like timeout(1)
UNAVAILABLE_EXIT = 2


def parse_size_mb(value: str) -> int:
    """``"1g"`` -> 1024, ``"512m"`` / ``"512"`` -> 512 (MiB)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", value.lower())
    if not m:
        raise typer.BadParameter(f"expected a size like 512m or 1g, got {value!r}")
    number, unit = float(m.group(1)), m.group(2) or "m"
    mib = number * {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[unit]
    if mib < 1:
        raise typer.BadParameter(f"{value!r} is less than 1 MiB")
    return int(mib)


def seed_workspace(box: Sandbox, source: Path) -> int:
    """Copy the regular files under ``source`` into /workspace (symlinks and special files are skipped)."""
    count = 0
    for root, dirs, files in os.walk(source, followlinks=False):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = Path(root) / name
            if path.is_symlink() or not path.is_file():
                continue
            box.write_file(path.relative_to(source).as_posix(), path.read_bytes())
            count += 1
    return count


@app.command("exec", context_settings={"allow_extra_args": False})
def exec_cmd(
    cmd: Annotated[list[str], typer.Argument(help="The command and its arguments (put them after --).")],
    backend: Annotated[str, typer.Option("--backend", help="docker, bwrap, local or auto.")] = "auto",
    image: Annotated[Optional[str], typer.Option("--image", help="Image for the docker backend.")] = None,
    memory: Annotated[str, typer.Option("--memory", help="Memory limit, e.g. 512m or 1g.")] = "1g",
    timeout: Annotated[float, typer.Option("--timeout", help="Wall-clock limit in seconds.")] = 30.0,
    workspace: Annotated[
        Optional[Path],
        typer.Option(
            "--workspace", help="Seed /workspace with the files of this directory.", exists=True, file_okay=False
        ),
    ] = None,
    collect: Annotated[
        Optional[Path],
        typer.Option("--collect", help="Afterwards, copy /workspace's regular files into this directory."),
    ] = None,
    with_stdin: Annotated[bool, typer.Option("--stdin", help="Pass this process's stdin to the command.")] = False,
) -> None:
    """Run CMD in a fresh hardened sandbox; print its stdout/stderr and exit with its exit code.

    Output is printed when the command ends (capped like any sandbox output).
    A timeout exits 124; a sandbox failure exits 2.
    """
    try:
        b, why = pick_backend(backend)
    except SandboxUnavailable as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(UNAVAILABLE_EXIT) from exc
    if image and b.name != "docker":
        err.print(f"[yellow]note:[/yellow] --image is ignored by the {b.name} backend")
    stdin = sys.stdin.buffer.read() if with_stdin else None
    limits = SandboxLimits(memory_mb=parse_size_mb(memory), command_timeout_s=timeout)
    spec = SandboxSpec(run_id=f"cli-exec-{os.getpid()}", image=image, limits=limits)
    try:
        with b.create(spec) as box:
            if workspace is not None:
                seed_workspace(box, workspace)
            result = box.exec(list(cmd), stdin=stdin)
            if collect is not None:
                collected = box.collect(collect)
                for path, reason in sorted(collected.skipped.items()):
                    err.print(f"[dim]not collected: {escape(path)} ({escape(reason)})[/dim]")
    except (SandboxError, OSError) as exc:
        err.print(f"[red]sandbox error:[/red] {escape(str(exc))}")
        raise typer.Exit(UNAVAILABLE_EXIT) from exc
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.write(result.stderr)
    sys.stderr.flush()
    if result.timed_out:
        err.print(f"[red]timed out[/red] after {timeout:g} s ({why})")
        raise typer.Exit(TIMEOUT_EXIT)
    raise typer.Exit(result.exit_code if result.exit_code is not None else 1)


def _table(backend_name: str, results: list[CheckResult]) -> Table:
    table = Table(title=f"containment self-test: {backend_name}", show_lines=False)
    for column in ("check", "category", "contained", "host", "time", "evidence"):
        table.add_column(
            column, justify="right" if column == "time" else "left", no_wrap=column in ("check", "category")
        )
    for r in results:
        if r.contained:
            verdict = "[green]yes[/green]"
        elif r.known_gap:
            verdict = "[yellow]NO (known gap)[/yellow]"
        else:
            verdict = "[red]NO[/red]"
        host = "[green]healthy[/green]" if r.host_healthy else f"[red]{escape(r.host_evidence)}[/red]"
        evidence = escape(r.evidence if not r.known_gap else f"{r.evidence} — {r.known_gap}")
        table.add_row(r.name, r.category, verdict, host, f"{r.duration_s:.1f}s", evidence)
    return table


@app.command()
def selftest(
    backend: Annotated[
        Optional[list[str]],
        typer.Option("--backend", help="Backend(s) to test (repeatable); default: every available isolating one."),
    ] = None,
    check: Annotated[
        Optional[list[str]], typer.Option("--check", help=f"Only these checks: {', '.join(check_names())}.")
    ] = None,
    image: Annotated[Optional[str], typer.Option("--image", help="Image for the docker backend.")] = None,
    allow_known_gaps: Annotated[
        bool, typer.Option("--allow-known-gaps", help="Do not fail on a backend's documented gaps.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Run every containment check in fresh sandboxes; exit 1 if anything is not contained."""
    names = list(backend or AUTO_ORDER)
    data_dir = Settings.from_env().data_dir
    report: dict[str, object] = {}
    fingerprints: dict[str, EnvironmentFingerprint] = {}
    failed = False
    out = Console(width=max(shutil.get_terminal_size((160, 24)).columns, 160), highlight=False)
    for name in names:
        try:
            b = get_backend(name)
            ok, why = b.available()
        except SandboxUnavailable as exc:
            ok, why = False, str(exc)
        if not ok:
            if backend:  # asked for by name: that is an error
                err.print(f"[red]error:[/red] {name}: {escape(why)}")
                raise typer.Exit(UNAVAILABLE_EXIT)
            err.print(f"[yellow]skipped {name}:[/yellow] {escape(why)}")
            report[name] = {"skipped": why}
            continue
        if not b.isolated:
            err.print(f"[yellow]note:[/yellow] {name} gives no isolation; expect failures")
        if not as_json:
            err.print(f"running {len(check or check_names())} checks on {name} …")
        try:
            results = run_suite(b, names=check, data_dir=data_dir, image=image if name == "docker" else None)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(UNAVAILABLE_EXIT) from exc
        for r in results:
            if not r.host_healthy or (not r.contained and not (allow_known_gaps and r.known_gap)):
                failed = True
        report[name] = [r.to_dict() for r in results]
        if not as_json:
            out.print(_table(name, results))
        try:
            fingerprints[name] = _fingerprint(b, image if name == "docker" else None)
        except (SandboxError, OSError) as exc:
            err.print(f"[red]error:[/red] {name}: cannot measure the environment: {escape(str(exc))}")
            failed = True
    if not report or all(isinstance(v, dict) for v in report.values()):
        err.print("[red]error:[/red] no backend could be tested")
        raise typer.Exit(UNAVAILABLE_EXIT)
    differences = _fingerprint_differences(fingerprints)
    if as_json:
        out.print_json(json.dumps({**report, "environments": {n: f.model_dump() for n, f in fingerprints.items()},
                                   "environment_differences": differences}))
    elif fingerprints:
        out.print(_fingerprint_table(fingerprints))
        for line in differences[:12]:
            err.print(f"[yellow]environments differ:[/yellow] {escape(line)}")
        if len(differences) > 12:
            err.print(f"[yellow]… and {len(differences) - 12} more differences (--json lists them all)[/yellow]")
    raise typer.Exit(1 if failed else 0)


def _fingerprint(backend: object, image: str | None) -> EnvironmentFingerprint:
    with backend.create(SandboxSpec(run_id=f"fingerprint-{os.getpid()}", image=image)) as box:  # type: ignore[attr-defined]
        return measure(box)


def _fingerprint_differences(fingerprints: dict[str, EnvironmentFingerprint]) -> list[str]:
    """What the isolating backends' environments differ in ("bwrap vs docker: scipy: missing vs 1.16.3")."""
    names = [n for n in fingerprints if n != "local"]
    out: list[str] = []
    for other in names[1:]:
        first = names[0]
        out += [f"{first} vs {other}: {d}" for d in fingerprints[first].differences(fingerprints[other])]
    return out


def _fingerprint_table(fingerprints: dict[str, EnvironmentFingerprint]) -> Table:
    table = Table(title="environment fingerprint (measured inside a sandbox)")
    for column in ("backend", "digest", "python", "os", "packages", "tools"):
        table.add_column(column)
    for name, fp in fingerprints.items():
        key = ("numpy", "pandas", "scipy", "matplotlib", "scikit-learn")
        main = ", ".join(f"{k} {fp.packages[k]}" for k in key if k in fp.packages)
        table.add_row(name, fp.digest, fp.python, fp.os, f"{len(fp.packages)} ({main})", " ".join(fp.tools))
    return table


@app.command()
def prepare(
    source: Annotated[
        str, typer.Option("--from", help="auto (export the Docker image when current, else mmdebstrap), "
                                         "docker or mmdebstrap.")
    ] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Prepare it again even if it is current.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print only the result line.")] = False,
) -> None:
    """Prepare the sandbox image's root filesystem, so bubblewrap runs the Docker sandbox's environment.

    Reused while the image definition is unchanged; see docs/sandbox-environment.md.
    """
    def log(message: str) -> None:
        if not quiet:
            err.print(f"[dim]{escape(message)}[/dim]")

    try:
        info, status = prepare_rootfs(source=source, force=force, log=log)
    except RootfsError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    print(f"sandbox root filesystem {status}: {info.path} ({info.source}, {info.size_bytes / 1e6:.0f} MB, "
          f"inputs {info.inputs_hash[:12]}); bubblewrap now runs over {bwrap_root().note}")
