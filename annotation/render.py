"""The agent's report as safe HTML: Markdown rendered by markdown-it-py, then cleaned by nh3 (ammonia).

Raw HTML in the report is not rendered at all; nh3 is the second wall, so a link or image the agent
wrote can never run script or reach out of the page (only relative and https links survive).
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")
TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "code", "pre", "blockquote",
        "table", "thead", "tbody", "tr", "th", "td", "a", "hr", "br", "del", "img"}


def report_html(markdown: str) -> str:
    html = _md.render(markdown or "")
    return nh3.clean(html, tags=TAGS, attributes={"a": {"href", "title"}, "img": {"alt", "title"},
                                                   "th": {"align"}, "td": {"align"}},
                     url_schemes={"https"}, link_rel="noopener noreferrer nofollow")
