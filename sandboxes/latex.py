"""Compile the LaTeX an agent wrote, inside its sandbox, and extract text for the judges.

``compile_and_extract(sandbox)`` finds every ``*.tex`` under /workspace, compiles
each main document (a file with ``\\documentclass``) with ``latexmk -pdf
-interaction=nonstopmode -halt-on-error`` inside the sandbox (so no network,
the sandbox's limits, and a per-file time limit), and returns one
:class:`LatexResult` per file:

* ``status``: ``ok`` (a PDF was produced), ``failed`` (``error`` holds the first
  error line of the TeX log, or latexmk's own message), ``timed_out``,
  ``skipped`` (not a main document, e.g. an ``\\input`` chapter; its text is still
  extracted) or ``unavailable`` (no latexmk in this sandbox: use the docker
  backend's sandbox image);
* ``pdf_path`` / ``log_path`` relative to /workspace;
* ``pdf_text`` (pypdf) and ``tex_text`` (pylatexenc).

The PDF and the .tex are untrusted input, so text extraction runs in a separate
host process with a time limit, an address-space limit and a size cap.
"""

from __future__ import annotations

import posixpath
import resource
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from sandboxes.base import WORKSPACE, Sandbox
from sandboxes.process import run_process

COMPILE_TIMEOUT_S = 60.0
MAX_TEX_FILES = 50
MAX_PDF_BYTES = 50 * 1024 * 1024
MAX_TEX_BYTES = 2 * 1024 * 1024
MAX_PDF_PAGES = 300
EXTRACT_TIMEOUT_S = 60.0
EXTRACT_MEMORY_BYTES = 2 * 1024 * 1024 * 1024
TEXT_CAP_BYTES = 4 * 1024 * 1024

LATEXMK = [
    "latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
    "-latexoption=-no-shell-escape", "-norc",
]  # fmt: skip


@dataclass
class LatexResult:
    tex_path: str  # relative to /workspace
    status: str  # ok | failed | timed_out | skipped | unavailable
    error: str | None = None
    pdf_path: str | None = None  # relative to /workspace
    log_path: str | None = None
    duration_s: float = 0.0
    pdf_text: str | None = None
    tex_text: str | None = None
    extraction_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_tex_files(sandbox: Sandbox, limit: int = MAX_TEX_FILES) -> list[str]:
    """Paths (relative to /workspace) of the regular ``*.tex`` files, sorted; hidden dirs skipped."""
    r = sandbox.exec(
        ["find", ".", "-mindepth", "1", "-name", ".*", "-prune", "-o", "-type", "f", "-name", "*.tex", "-print0"],
        cwd=WORKSPACE,
        timeout=30,
    )
    paths = [p[2:] if p.startswith("./") else p for p in r.stdout.split("\0") if p]
    return sorted(paths)[:limit]


def first_error_line(log: str) -> str | None:
    """The first error of a TeX log: a ``! ...`` line, or a ``file:line: ...`` line (-file-line-error)."""
    for line in log.splitlines():
        if line.startswith("! "):
            return line[2:].strip()
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[0].endswith((".tex", ".sty", ".cls", ".bbl")):
            return line.strip()
    return None


def compile_tex(sandbox: Sandbox, tex_path: str, timeout: float = COMPILE_TIMEOUT_S) -> LatexResult:
    """Compile one main document inside the sandbox (outputs land next to the source)."""
    directory, name = posixpath.split(tex_path)
    base = name[: -len(".tex")] if name.endswith(".tex") else name
    rel = lambda n: posixpath.join(directory, n) if directory else n  # noqa: E731
    cwd = posixpath.join(WORKSPACE, directory) if directory else WORKSPACE
    start = time.monotonic()
    r = sandbox.exec([*LATEXMK, name], cwd=cwd, timeout=timeout)
    result = LatexResult(tex_path=tex_path, status="ok", duration_s=round(time.monotonic() - start, 3))
    if r.exit_code == 127:
        result.status, result.error = "unavailable", "latexmk is not installed in this sandbox (use the sandbox image)"
        return result
    log = _read_text(sandbox, rel(base + ".log"))
    if log is not None:
        result.log_path = rel(base + ".log")
    if r.timed_out:
        result.status = "timed_out"
        result.error = f"latexmk did not finish within {timeout:g} s"
        return result
    pdf_exists = sandbox.exec(["test", "-f", base + ".pdf"], cwd=cwd, timeout=10).exit_code == 0
    if r.exit_code == 0 and pdf_exists:
        result.pdf_path = rel(base + ".pdf")
        return result
    result.status = "failed"
    result.error = (first_error_line(log) if log else None) or _last_line(r.stderr) or f"latexmk exit {r.exit_code}"
    return result


def _read_text(sandbox: Sandbox, path: str, max_bytes: int = 4 * 1024 * 1024) -> str | None:
    try:
        return sandbox.read_file(path, max_bytes=max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return None


def _last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else None


_EXTRACT = r"""
import sys
kind, max_pages = sys.argv[1], int(sys.argv[2])
data = sys.stdin.buffer.read()
if kind == "pdf":
    import io, logging
    logging.disable(logging.CRITICAL)
    from pypdf import PdfReader
    reader = PdfReader(io.BytesIO(data))
    parts = []
    for i, page in enumerate(reader.pages):
        if i >= max_pages:
            parts.append(f"[... {len(reader.pages) - max_pages} more pages not extracted ...]")
            break
        parts.append(page.extract_text() or "")
    text = "\n".join(parts)
else:
    from pylatexenc.latex2text import LatexNodes2Text
    text = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True).latex_to_text(
        data.decode("utf-8", errors="replace"))
sys.stdout.write(text)
"""


def _extract(kind: str, data: bytes, timeout: float = EXTRACT_TIMEOUT_S) -> tuple[str | None, str | None]:
    """(text, error): run the parser in a throwaway process with time and memory limits."""
    try:
        outcome = run_process(
            [sys.executable, "-I", "-c", _EXTRACT, kind, str(MAX_PDF_PAGES)],
            timeout=timeout,
            output_cap=TEXT_CAP_BYTES,
            stdin=data,
            rlimits={resource.RLIMIT_AS: EXTRACT_MEMORY_BYTES, resource.RLIMIT_CORE: 0},
        )
    except OSError as exc:
        return None, f"cannot start the {kind} text extractor: {exc}"
    if outcome.timed_out:
        return None, f"{kind} text extraction timed out after {timeout:g} s"
    if outcome.returncode != 0:
        return None, f"{kind} text extraction failed: {_last_line(outcome.stderr) or outcome.returncode}"
    return outcome.stdout, None


def extract_pdf_text(data: bytes) -> tuple[str | None, str | None]:
    """Text of a PDF (pypdf), or an error message; never raises for a malformed PDF."""
    if len(data) > MAX_PDF_BYTES:
        return None, f"PDF larger than {MAX_PDF_BYTES // (1024 * 1024)} MiB: not extracted"
    return _extract("pdf", data)


def extract_tex_text(source: str | bytes) -> tuple[str | None, str | None]:
    """Plain text of LaTeX source (pylatexenc), or an error message."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    if len(data) > MAX_TEX_BYTES:
        data = data[:MAX_TEX_BYTES]
    return _extract("tex", data)


def is_main_document(source: str) -> bool:
    """A document to compile (has \\documentclass outside comments), not an \\input-ed part."""
    for line in source.splitlines():
        code = line.split("%", 1)[0]
        if "\\documentclass" in code:
            return True
    return False


def compile_and_extract(sandbox: Sandbox, timeout: float = COMPILE_TIMEOUT_S) -> list[LatexResult]:
    """Compile every main ``*.tex`` of the workspace and extract text from the sources and PDFs."""
    results: list[LatexResult] = []
    for path in find_tex_files(sandbox):
        try:
            raw = sandbox.read_file(path, max_bytes=MAX_TEX_BYTES)
        except OSError as exc:  # a symlink, a hard link, gone: not ours to read
            results.append(LatexResult(tex_path=path, status="skipped", error=f"not read: {exc}"))
            continue
        source = raw.decode("utf-8", errors="replace")
        if is_main_document(source):
            result = compile_tex(sandbox, path, timeout)
        else:
            result = LatexResult(tex_path=path, status="skipped", error="no \\documentclass: not a main document")
        errors = []
        result.tex_text, e = extract_tex_text(raw)
        errors += [e] if e else []
        if result.pdf_path:
            try:
                pdf = sandbox.read_file(result.pdf_path, max_bytes=MAX_PDF_BYTES + 1)
            except OSError as exc:
                errors.append(f"PDF not read: {exc}")
            else:
                result.pdf_text, e = extract_pdf_text(pdf)
                errors += [e] if e else []
        result.extraction_error = "; ".join(errors) or None
        results.append(result)
    return results


__all__ = [
    "LatexResult",
    "compile_and_extract",
    "compile_tex",
    "extract_pdf_text",
    "extract_tex_text",
    "find_tex_files",
    "first_error_line",
]
