"""LaTeX compilation in the docker sandbox image and text extraction (pypdf, pylatexenc).

Real engine, real latexmk: skipped only when no Docker engine can run here
(never on CI, ``CI=true``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from sandboxes.base import SandboxSpec
from sandboxes.docker import DockerBackend, DockerSandbox
from sandboxes.latex import (
    compile_and_extract,
    compile_tex,
    extract_pdf_text,
    extract_tex_text,
    first_error_line,
    is_main_document,
)
from tests.conftest import usable_backend

PAPER = rb"""\documentclass{article}
\usepackage{lmodern}
\usepackage[T1]{fontenc}
\usepackage{amsmath,booktabs,graphicx,hyperref,xcolor}
\title{Soil respiration under warming}
\begin{document}
\maketitle
\section{Results}
Respiration rose by \textcolor{blue}{12 percent} (Table~\ref{tab:flux}).
\input{discussion}
\begin{equation} F = k \cdot T^{2} \end{equation}
\begin{table}[h]\centering
\begin{tabular}{lr}\toprule plot & flux \\ \midrule warmed & 4.2 \\ control & 3.7 \\ \bottomrule\end{tabular}
\caption{Mean flux per plot}\label{tab:flux}
\end{table}
\end{document}
"""
DISCUSSION = rb"We could not verify the sensor calibration."
BROKEN = rb"""\documentclass{article}
\begin{document}
Before the error.
\undefinedmacro{x}
\end{document}
"""


@pytest.fixture(scope="module")
def backend() -> DockerBackend:
    backend = usable_backend("docker")
    assert isinstance(backend, DockerBackend)
    return backend


@pytest.fixture
def box(backend: DockerBackend) -> Iterator[DockerSandbox]:
    with backend.create(SandboxSpec(run_id=f"latex-{uuid.uuid4().hex[:8]}")) as sb:
        yield sb


def test_compile_and_extract_a_paper(box: DockerSandbox) -> None:
    box.write_file("paper/main.tex", PAPER)
    box.write_file("paper/discussion.tex", DISCUSSION)
    box.write_file("broken.tex", BROKEN)
    results = {r.tex_path: r for r in compile_and_extract(box)}
    assert sorted(results) == ["broken.tex", "paper/discussion.tex", "paper/main.tex"]

    main = results["paper/main.tex"]
    assert main.status == "ok", main
    assert main.pdf_path == "paper/main.pdf" and main.log_path == "paper/main.log"
    assert box.read_file("paper/main.pdf")[:5] == b"%PDF-"
    assert main.pdf_text is not None and main.extraction_error is None
    for words in [
        "Soil respiration under warming",
        "Respiration rose by 12 percent",
        "Mean flux per plot",
        "could not verify the sensor",
        "warmed",
    ]:
        assert words in main.pdf_text, (words, main.pdf_text)
    assert main.tex_text is not None and "Respiration rose by 12 percent" in main.tex_text

    part = results["paper/discussion.tex"]
    assert part.status == "skipped" and part.pdf_path is None
    assert part.tex_text == "We could not verify the sensor calibration."

    broken = results["broken.tex"]
    assert broken.status == "failed" and broken.pdf_path is None
    assert broken.error == "./broken.tex:4: Undefined control sequence."
    assert broken.log_path == "broken.log"
    assert broken.tex_text is not None and "Before the error." in broken.tex_text


def test_missing_package_is_reported(box: DockerSandbox) -> None:
    box.write_file("p.tex", b"\\documentclass{article}\\usepackage{nosuchpackage}\\begin{document}x\\end{document}\n")
    r = compile_tex(box, "p.tex")
    assert r.status == "failed" and "nosuchpackage.sty' not found" in (r.error or ""), r


def test_compile_is_time_limited(box: DockerSandbox) -> None:
    box.write_file("loop.tex", b"\\documentclass{article}\\begin{document}\\def\\a{\\a}\\a\\end{document}\n")
    start = time.monotonic()
    r = compile_tex(box, "loop.tex", timeout=3)
    assert r.status == "timed_out" and time.monotonic() - start < 10, r


def test_shell_escape_and_network_are_off(box: DockerSandbox) -> None:
    box.write_file(
        "esc.tex",
        b"\\documentclass{article}\\begin{document}\\immediate\\write18{touch /workspace/pwned}x\\end{document}\n",
    )
    r = compile_tex(box, "esc.tex")
    assert r.status == "ok", r
    assert box.exec(["test", "-e", "/workspace/pwned"]).exit_code == 1


def test_extraction_of_untrusted_input_never_raises() -> None:
    text, error = extract_pdf_text(b"%PDF-1.4 this is not really a pdf")
    assert text is None and error and "failed" in error
    text, error = extract_tex_text(b"\\section{A} \\textbf{bold} $x^2$ \\unknown{kept}")
    assert error is None and text is not None and "bold" in text and "x^2" in text


def test_helpers() -> None:
    assert first_error_line("This is pdfTeX\n! Emergency stop.\n! Later") == "Emergency stop."
    assert first_error_line("(./a.tex\n./a.tex:7: LaTeX Error: File `x.sty' not found.\n") == (
        "./a.tex:7: LaTeX Error: File `x.sty' not found."
    )
    assert first_error_line("all good\n") is None
    assert is_main_document("% comment\n\\documentclass{article}")
    assert not is_main_document("% \\documentclass{article}\nJust a chapter.")
