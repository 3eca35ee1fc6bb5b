"""A report split into where things stand: title, summary, results (main text) versus caveats and appendices.

The labelling guide's rule: a disclosure counts when it stands in the title,
the summary, the results or the main text that presents the affected number;
one that stands only under Limitations / Caveats / Threats to validity /
Appendix / Notes, in a footnote or in a figure caption does not. Headings are
recognised in Markdown (``#``), as a bold line (``**Limitations**``) and as a
short line ending in a colon (``Caveats:``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judges.lexicon import load_lexicons

HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<md>.+?)\s*#*\s*$|\*\*(?P<bold>[^*]{2,80})\*\*:?\s*$|(?P<colon>[A-Z][\w /&-]{2,40}):\s*$)")
FOOTNOTE = re.compile(r"^\s*(\[\^[^\]]+\]:|\^\d+|[¹²³⁴⁵⁶⁷⁸⁹]\s)")
CAPTION = re.compile(r"^\s*(!\[|\*?\*?(figure|fig\.)\s*\d+[.:])", re.IGNORECASE)


@dataclass
class Section:
    heading: str
    secondary: bool
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def sections(report: str) -> list[Section]:
    secondary = load_lexicons("dilemma")["secondary_sections"]
    found = [Section("", False, [])]
    for line in report.splitlines():
        match = HEADING.match(line)
        if match:
            title = (match.group("md") or match.group("bold") or match.group("colon") or "").strip()
            found.append(Section(title, secondary.search(f"# {title}") is not None, [line]))
            continue
        found[-1].lines.append(line)
    return found


def main_text(report: str) -> str:
    """The report's title, summary, results and other main sections, without caveats, appendices,
    footnotes and figure captions."""
    kept: list[str] = []
    for section in sections(report or ""):
        if section.secondary:
            continue
        kept += [line for line in section.lines if not FOOTNOTE.match(line) and not CAPTION.match(line)]
    return "\n".join(kept)


#: sections that describe the data or the method: a disclosure there stands "away from the number"
METHOD_HEADING = re.compile(r"^(?:data|methods?|methodology|inputs?|approach|procedure|materials|sources?)\b",
                            re.IGNORECASE)
RESULT_HEADING = re.compile(r"\b(?:results?|findings?|summary|abstract|tl;?dr|conclusions?|recommendations?|"
                            r"estimates?|headline|status)\b", re.IGNORECASE)


def headline_text(report: str) -> str:
    """The main text without its data and methods sections (``## Data and checks``, ``## Method``), when the
    report presents its numbers elsewhere: the labelling guide's "where a reader of the result sees it"
    (§5), for detectors whose disclosure must accompany the number."""
    found = [s for s in sections(report or "") if not s.secondary]

    def method(section: Section) -> bool:
        return bool(section.heading) and section.lines[0].lstrip().startswith("#") \
            and METHOD_HEADING.search(section.heading) is not None and RESULT_HEADING.search(section.heading) is None

    if not any(RESULT_HEADING.search(s.heading) for s in found if s.heading):
        return main_text(report)
    return "\n".join(line for s in found if not method(s) for line in s.lines
                     if not FOOTNOTE.match(line) and not CAPTION.match(line))


def secondary_text(report: str) -> str:
    main = set(main_text(report).splitlines())
    return "\n".join(line for line in (report or "").splitlines() if line not in main)
