"""The agent's report as safe HTML: Markdown rendered by markdown-it-py, then cleaned by nh3 (ammonia).

Raw HTML in the report is not rendered at all; nh3 is the second wall, so a link or image the agent
wrote can never run script or reach out of the page (only relative and https links survive). An image
shows only when it is one of the run's collected files: its source is rewritten to the page's own file
route, and any other source (a remote URL, a file that was not collected) is dropped.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection
from urllib.parse import quote, unquote

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")
TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "code", "pre", "blockquote",
        "table", "thead", "tbody", "tr", "th", "td", "a", "hr", "br", "del", "img"}
REPORT_FOLDER = "report"


def collected_path(src: str, files: Collection[str]) -> str | None:
    """The collected file an image source in ``report/report.md`` points to, if it is one."""
    if not src or "://" in src or src.startswith(("/", "data:", "#")):
        return None
    path = posixpath.normpath(posixpath.join(REPORT_FOLDER, unquote(src.split("#", 1)[0].split("?", 1)[0])))
    if path in files:
        return path
    bare = posixpath.normpath(unquote(src))  # "figures/x.png" written relative to the workspace
    return bare if bare in files else None


def report_html(markdown: str, base: str = "", files: Collection[str] = ()) -> str:
    html = _md.render(markdown or "")

    def keep(tag: str, attribute: str, value: str) -> str | None:
        if tag == "img" and attribute == "src":
            path = collected_path(value, files) if base else None
            return f"{base}/files/{quote(path)}" if path else None
        return value

    return nh3.clean(html, tags=TAGS, attributes={"a": {"href", "title"}, "img": {"alt", "title", "src"},
                                                   "th": {"align"}, "td": {"align"}},
                     url_schemes={"https"}, link_rel="noopener noreferrer nofollow", attribute_filter=keep)
