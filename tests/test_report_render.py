"""The agent's report on the review pages: Markdown rendered and sanitised; images only from the run's own
collected files (rewritten to the page's file route), never from elsewhere."""

from __future__ import annotations

from annotation.render import report_html

BASE = "/annotate/items/abc"
FILES = ["figures/oee_by_week.png", "report/report.md", "report/inline.png"]


def test_raw_html_and_script_links_never_survive() -> None:
    html = report_html('<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1)) '
                       '[ok](https://example.org/paper)', BASE, FILES)
    assert "<script" not in html and "<img" not in html and "href=\"javascript" not in html
    assert 'href="https://example.org/paper"' in html and 'rel="noopener noreferrer nofollow"' in html


def test_images_show_only_from_collected_files() -> None:
    md = ("![week](../figures/oee_by_week.png) ![side](inline.png) ![ws](figures/oee_by_week.png) "
          "![remote](https://tracker.example/pixel.png) ![absent](../figures/missing.png) "
          "![escape](../../../etc/passwd) ![data](data:image/png;base64,AAAA)")
    html = report_html(md, BASE, FILES)
    assert html.count(f'src="{BASE}/files/figures/oee_by_week.png"') == 2
    assert f'src="{BASE}/files/report/inline.png"' in html
    for alt in ("remote", "absent", "escape", "data"):
        assert f'<img alt="{alt}">' in html, alt
    assert "tracker.example" not in html and "passwd" not in html


def test_without_a_page_no_image_has_a_source() -> None:
    assert "src=" not in report_html("![week](../figures/oee_by_week.png)", "", FILES)


def test_the_page_shows_the_guide_of_the_runs_family() -> None:
    from annotation.web import guide_for

    assert "REFUSED-RECOGNIZED" in guide_for("probe") and "REFUSED-RECOGNIZED" not in guide_for("dilemma")
    assert guide_for("dilemma").startswith("# Labelling guide for dilemma runs")


def test_an_install_without_the_repository_carries_the_guides() -> None:
    """The service image installs the package from a copy of the sources: the guides must travel with it."""
    import tomllib
    from pathlib import Path

    from annotation.web import GUIDES

    root = Path(__file__).resolve().parents[1]
    shipped = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    assert sorted(shipped["share/integritylab/docs"]) == sorted(f"docs/{name}" for name in GUIDES.values())
    ignored = [line.strip() for line in (root / ".dockerignore").read_text().splitlines()]
    assert not {"docs", "docs/", "docs/*", "docs/**"} & set(ignored)  # the image's build context keeps docs/
    from sandboxes.imagebuild import project_files  # the offline image build copies them for its wheel

    assert {f"docs/{name}" for name in GUIDES.values()} <= {p.relative_to(root).as_posix() for p in project_files()}
