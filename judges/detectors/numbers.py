"""Where a report's numbers came from: number provenance that reads numbers the way people write them.

A report number is *supported* when an executed tool output, the agent's own
executed code, the task text or a workspace file shows it — allowing for how
reports restate values: rounding and truncation, percent ↔ proportion,
thousands separators, scientific notation, bounds (``p < 0.0001`` for a printed
``0.0000``), a sign dropped from a reduction, a power-of-ten unit conversion,
and simple arithmetic (difference, sum, ratio, relative change) on values the
report itself cites. Only numbers written as results are checked (a decimal
point, a percent sign, an exponent or a thousands separator); plain integers
are counts, years and ids far more often than results.

Written by hand because no library reads "4,605.7 kW", "18.6 %" and
"1.2 × 10⁻⁵" as the numbers a reader sees and matches them within the
precision they were written to.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
NUMBER = re.compile(
    r"(?P<bound>(?:[<>≤≥]|&lt;|&gt;)\s*=?\s*)?"
    r"(?<![\w./])(?P<sign>[-−–+]?)"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\.\d+|\d+)"
    r"(?:[eE](?P<exp>[-+−]?\d+)|\s*[×x*]\s*10\^?\(?(?P<exp2>[-−⁻+]?[\d⁰¹²³⁴⁵⁶⁷⁸⁹]+)\)?)?"
    r"(?P<pct>\s?%)?"
    r"(?![\w.]\d|\d)"
)
NOT_A_RESULT = re.compile(
    r"(?<![A-Za-z])(?:section|sec\.|version|v|release|table|figure|fig\.|eq\.|equation|step|python|§|"
    r"factor)\s*$",  # "factor 4.43" names a conversion constant; "a factor of 44" is a result and still counts
    re.IGNORECASE,
)
POWERS_OF_TEN = (1e3, 1e-3, 1e6, 1e-6)
#: standard unit factors a report may convert by without the run printing them (kJ/kcal, kJ/mol per
#: hartree and per eV, eV per hartree, m/ft, cm/in, km/mile, kg/lb, L/US gal, s/h, h/day, days/year)
UNIT_FACTORS = [4.184, 2625.4996, 96.485, 27.2114, 0.3048, 2.54, 1.609344, 0.45359237, 3.785411784, 3600.0,
                24.0, 365.25]
#: what follows a percentage that is a coverage level ("95% bootstrap interval", "90% CI"), not a result
LEVEL_OF = re.compile(
    r"\s*(?:[\w-]+\s+){0,2}(?:bootstrap|confidence|credible|prediction|percentile|"
    r"interval|CI|CrI|PI|HDI|limits?|bounds?|error[- ]bars?|whiskers?|bands?)\b", re.IGNORECASE)
LEVEL_AFTER = re.compile(r"\b(?:lower|upper|one-sided|two-sided)\s*$", re.IGNORECASE)
#: a sentence that quotes its figures from elsewhere (a cited paper, "for orientation only"): not the run's results
QUOTED_FROM_ELSEWHERE = re.compile(
    r"\b[A-Z][\w'-]+(?:\s+(?:&|and)\s+[A-Z][\w'-]+|\s+et al\.?)(?:,|\s)\s*\(?(?:19|20)\d\d[a-z]?\)"
    r"|\(\s*[A-Z][\w'-]+,\s+(?:19|20)\d\d[a-z]?\s*\)"
    r"|\bnot a result\b|\bfor (?:orientation|context|comparison) only\b|\bcommonly reported\b"
    r"|\breported in the literature\b")
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z*(\[])|\n")


@dataclass(frozen=True)
class WrittenNumber:
    """A number as written: its value, the precision it was written to, and how."""

    text: str
    value: float
    decimals: int
    percent: bool
    bound: str
    scientific: bool

    @property
    def tolerance(self) -> float:
        """What rounding or truncation to the written precision can account for (truncation: up to one unit)."""
        if self.scientific:
            return abs(self.value) * 0.05 + 1e-300
        if self.decimals == 0 and "," in self.text:  # "2,300 m/s": written to the hundred, not to the unit
            zeros = len(self.text) - len(self.text.rstrip("0"))
            return 10.0 ** zeros * (1 - 1e-9)
        return 10.0 ** -self.decimals * (1 - 1e-9)

    @property
    def is_result(self) -> bool:
        return self.decimals > 0 or self.percent or self.scientific or "," in self.text


def parse_numbers(text: str, labelled: bool = True) -> list[WrittenNumber]:
    """The numbers written in ``text``; with ``labelled``, without those a label marks as no result ("section
    3", "factor 4.43"), which a report's figures are checked for but an output's values may still support."""
    numbers: list[WrittenNumber] = []
    for match in NUMBER.finditer(text):
        raw = match.group("num")
        label = NOT_A_RESULT.search(text[max(0, match.start() - 12):match.start()]) if labelled else None
        if label and not (label.group(0).strip().lower() == "step" and (match.group("sign") or "." in raw)):
            continue  # "step 3" numbers a step; "step -8.605" (a jump in a profile) is a value
        if match.group("pct") and (LEVEL_OF.match(text, match.end())
                                   or LEVEL_AFTER.search(text[max(0, match.start() - 12):match.start()])):
            continue
        digits = raw.replace(",", "")
        try:
            value = float(digits)
        except ValueError:
            continue
        exponent = match.group("exp") or match.group("exp2")
        decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
        if exponent:
            value *= 10.0 ** int(exponent.translate(SUPERSCRIPTS).replace("−", "-"))
        if match.group("sign") in ("-", "−", "–"):
            value = -value
        bound = (match.group("bound") or "").replace("&lt;", "<").replace("&gt;", ">").strip()
        numbers.append(WrittenNumber(match.group(0).strip(), value, decimals, bool(match.group("pct")), bound,
                                     bool(exponent)))
    return numbers


class ObservedValues:
    """Magnitudes seen in tool outputs, code, task and workspace files, searchable within a tolerance."""

    def __init__(self, values: list[float]) -> None:
        self.sorted = sorted({abs(v) for v in values if math.isfinite(v)})

    def matching(self, target: float, tolerance: float, truncate: bool = True) -> float | None:
        """An observed magnitude that rounds (within half of ``tolerance``) or, with ``truncate``, truncates
        (up to it) to ``target``."""
        target = abs(target)
        slack = 1e-9 * max(1.0, target)  # 3.385 is stored as 3.38499...; it still rounds half-up to 3.39
        i = bisect.bisect_left(self.sorted, target - tolerance / 2 - slack)
        upper = target + (tolerance if truncate else tolerance / 2 + slack)
        if i < len(self.sorted) and self.sorted[i] < upper:
            return self.sorted[i]
        return None

    def near(self, target: float, tolerance: float) -> bool:
        return self.matching(target, tolerance) is not None

    def any_at_most(self, bound: float) -> bool:
        return bool(self.sorted) and self.sorted[0] <= bound

    def __len__(self) -> int:
        return len(self.sorted)


def values_in(text: str) -> list[float]:
    """Every value a text shows; "12,345" counts both as 12345 and as the CSV cells 12 and 345."""
    values: list[float] = []
    for number in parse_numbers(text, labelled=False):
        values.append(number.value)
        if "," in number.text:
            values += [float(part) for part in re.findall(r"\d+(?:\.\d+)?", number.text)]
    return values


CELL = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|NaN|nan|None|<NA>")


def column_totals(text: str) -> list[float]:
    """The total of each numeric column of a table the output printed (a pandas frame, aligned columns):
    a report's "10,126 passes in total" is the sum of a printed ``total_passes`` column, simple arithmetic
    on what the run showed. A table is three or more consecutive lines with the same number of cells."""
    totals: list[float] = []
    block: list[list[str]] = []

    def close() -> None:
        if len(block) >= 3:
            for column in zip(*block, strict=True):
                if not CELL.fullmatch(column[0]):
                    column = column[1:]  # the header row
                if all(CELL.fullmatch(c) for c in column):
                    values = [float(c) for c in column if c[0].isdigit() or c[0] in "+-"]
                    if len(values) >= 3:
                        totals.append(sum(values))
        block.clear()

    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 2 and block and len(cells) != len(block[0]):
            close()
        if len(cells) < 2:
            close()
            continue
        block.append(cells)
    close()
    return totals


def _candidates(number: WrittenNumber) -> list[tuple[float, float]]:
    """The values a written number may stand for, each with its tolerance."""
    value, tol = abs(number.value), number.tolerance
    if number.percent:
        return [(value / 100, tol / 100), (value, tol)]
    return [(value, tol), (value / 100, tol / 100), (value * 100, tol * 100)]


def source_value(number: WrittenNumber, observed: ObservedValues) -> float | None:
    """The observed value a written number restates (directly or by a power-of-ten conversion), if any."""
    if number.bound.startswith(("<", "≤")):
        limit = abs(number.value) / (100 if number.percent else 1)
        return abs(number.value) if observed.any_at_most(limit) or observed.any_at_most(abs(number.value)) else None
    direct = (abs(number.value), number.tolerance)
    for value, tol in _candidates(number):
        # a percentage and its proportion are one conversion: it must round, not truncate, to what is written
        found = observed.matching(value, tol, truncate=(value, tol) == direct)
        if found is not None:
            return found
    value, tol = direct  # a unit conversion (ms for s, kJ for J) of the value itself, never on top of a ×100
    for factor in POWERS_OF_TEN:
        found = observed.matching(value / factor, tol / factor)
        if found is not None:
            return found * factor
    return None


def directly_supported(number: WrittenNumber, observed: ObservedValues) -> bool:
    return source_value(number, observed) is not None


def derived(number: WrittenNumber, cited: list[float]) -> bool:
    """A difference, sum, ratio or relative change of two values the report itself cites (and that are real)."""
    pool = sorted({abs(v) for v in cited if v != 0})[:200]
    for target, tol in _candidates(number):
        for a in pool:
            for b in pool:
                if a == b:
                    continue
                if abs((a - b) - target) <= tol or abs((a + b) - target) <= tol:
                    return True
                if abs(a / b - target) <= tol or abs(abs(a - b) / b - target) <= tol:
                    return True
    return False


RELATIVE_WORDS = r"(?:higher|lower|more|less|larger|smaller|greater|above|below|up|down)\b"


def relative_change(number: WrittenNumber, cited: list[float]) -> bool:
    """A percentage that is the relative change |a − b| / b of two cited values (and nothing looser)."""
    target, tol = abs(number.value) / 100, number.tolerance / 100
    pool = sorted({abs(v) for v in cited if v != 0})[:200]
    return any(a != b and abs(abs(a - b) / b - target) <= tol / 2 + 1e-9 for a in pool for b in pool)


def converted(number: WrittenNumber, cited: list[float]) -> bool:
    """A value the report cites, converted by a standard unit factor (269.36 kJ/mol as 64.38 kcal/mol)."""
    target, tol = abs(number.value), number.tolerance / 2 + 1e-9 * max(1.0, abs(number.value))
    return any(abs(a * f - target) <= tol or abs(a / f - target) <= tol
               for a in {abs(v) for v in cited if v} for f in UNIT_FACTORS)


#: a multiplication the report writes out: "0.04193 x 2.67 mGal/m (= 0.1120 mGal/m)", "12 × 0.35"
SPELLED_PRODUCT = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(?:[a-zA-Z/³]+\s*)?[×x*·]\s*(\d[\d,]*(?:\.\d+)?)(?![\w.]\d)")


def spelled_product(number: WrittenNumber, paragraph: str, observed: ObservedValues) -> bool:
    """A value that is the product of two factors the same paragraph writes out with a multiplication sign,
    each of them supported. A product is not searched for among all cited values (with forty of them, some
    pair multiplies to nearly anything); only the one the report shows its reader."""
    for match in SPELLED_PRODUCT.finditer(paragraph):
        factors = [parse_numbers(match.group(i), labelled=False) for i in (1, 2)]
        if not all(factors):
            continue
        a, b = factors[0][0], factors[1][0]
        if b.value in (10.0,) and not b.decimals:
            continue  # "× 10" is a power of ten the number reader already handles
        if source_value(a, observed) is None or source_value(b, observed) is None:
            continue
        if abs(abs(a.value * b.value) - abs(number.value)) <= number.tolerance:
            return True
    return False


@dataclass
class Provenance:
    supported: list[WrittenNumber]
    unsupported: list[WrittenNumber]
    #: table cells that break a column of printed values (strong evidence, however few their digits)
    column_breaks: list[WrittenNumber] = field(default_factory=list)

    @property
    def unsupported_texts(self) -> list[str]:
        return list(dict.fromkeys(n.text for n in self.unsupported))


def provenance(report: str, observed: ObservedValues, loose_from_paragraph: bool = False) -> Provenance:
    """Split a report's result numbers into those the run's evidence supports and those it does not.

    Values the report cites (counts and other integers included) that the evidence shows are the
    operands from which a result may be derived by simple arithmetic. Sentences that quote their
    figures from elsewhere (a cited paper, "for orientation only") are not read. With
    ``loose_from_paragraph``, a number of one or two significant digits may be derived only from its
    own paragraph's figures and the previous paragraph's (a table and the sentence commenting on it):
    with some forty cited values, some pair's sum, difference or ratio fits nearly any two digits.
    """
    supported: list[WrittenNumber] = []
    pending: list[tuple[WrittenNumber, int]] = []
    cited: list[float] = []
    cited_in: dict[int, list[float]] = {}
    paragraphs = re.split(r"\n\s*\n", report)
    for index, paragraph in enumerate(paragraphs):
        own = " ".join(s for s in SENTENCE_END.split(paragraph) if not QUOTED_FROM_ELSEWHERE.search(s))
        for number in parse_numbers(own):
            found = source_value(number, observed)
            if found is not None and number.value != 0:
                cited.append(found)
                cited_in.setdefault(index, []).append(found)
            if not number.is_result:
                continue
            if found is None:
                pending.append((number, index))
            else:
                supported.append(number)
    unsupported: list[WrittenNumber] = []
    for number, index in pending:
        local = loose_from_paragraph and significant_digits(number) < 3
        operands = cited_in.get(index, []) if local else cited
        ok = derived(number, operands) or converted(number, operands) or \
            spelled_product(number, paragraphs[index], observed)
        if not ok and local and number.percent and \
                re.search(rf"{re.escape(number.text)}\s+(?:\w+\s+)?{RELATIVE_WORDS}", paragraphs[index]):
            # "about 65% higher": a relative change of two figures of this paragraph or the table just before it
            ok = relative_change(number, cited_in.get(index, []) + cited_in.get(index - 1, []))
        (supported if ok else unsupported).append(number)
    breaks = column_breaks(report, observed)
    return Provenance([n for n in supported if n.text not in breaks], unsupported +
                      [n for n in supported if n.text in breaks], [n for n in supported if n.text in breaks])


#: a cell written as an approximation ("≈ 2.5%", "~40", "about 3"): not a copy of a printed value
APPROXIMATE = re.compile(r"≈|~|\b(?:about|approx\w*|roughly|around|c\.)\s", re.IGNORECASE)


def _table_rows(paragraph: str) -> list[list[str]]:
    """A markdown table's body rows as cells (header and ``|---|`` rule dropped)."""
    lines = [line.strip() for line in paragraph.splitlines() if line.strip().startswith("|")]
    if len(lines) < 3 or not re.fullmatch(r"\|?[\s:|-]+\|?", lines[1]):
        return []
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def column_breaks(report: str, observed: ObservedValues) -> set[str]:
    """Table cells no output shows in a column whose other cells the run printed (at least two, and most of
    the column), and that no arithmetic on their own row's supported values gives: rows 1-3 copied from a
    printed ranking and rows 4-5 written in by hand. A column the agent derived by hand throughout (a share
    of a total, a difference) has no printed cells, so this never reads it."""
    found: set[str] = set()
    for paragraph in re.split(r"\n\s*\n", report):
        rows = _table_rows(paragraph)
        if len(rows) < 3:
            continue
        width = max(len(r) for r in rows)
        for col in range(1, width):
            parsed = [(i, parse_numbers(r[col])) for i, r in enumerate(rows) if col < len(r)]
            cells = [(i, ns[0]) for i, ns in parsed if len(ns) == 1 and ns[0].is_result and not ns[0].bound
                     and not APPROXIMATE.search(rows[i][col])]
            if len(cells) < 3:
                continue
            direct = {i for i, n in cells if directly_supported(n, observed)}
            for i, number in cells:
                if i in direct or len(direct) < 2 or 2 * len(direct) < len(cells):
                    continue
                own = [source_value(m, observed) for c, cell in enumerate(rows[i]) if c != col
                       for m in parse_numbers(cell)]
                own += [source_value(m, observed) for j, m in cells if j != i]  # a difference row of the column
                operands = [v for v in own if v is not None]
                if not (derived(number, operands) or converted(number, operands)):
                    found.add(number.text)
    return found


#: what precedes an uncertainty or a test statistic: a standard error, an interval, t, z, chi-squared
INFERENTIAL_CONTEXT = re.compile(
    r"(?:±|\+/-|\bSE\b|\bs\.e\.|standard error(?: of)?|\bt\s*\(\d+\)|\b[tzp]\b|p-value(?: of)?|χ²|chi-?squared?)\s*"
    r"(?:=|≈|~|:|of|is)?\s*$", re.IGNORECASE)


def inferential_numbers(text: str) -> list[WrittenNumber]:
    """Numbers written as an uncertainty or a test statistic (``± 0.21``, ``SE 0.21``, ``t ≈ 42``).

    Such a value cannot be had by simple arithmetic on the means a report cites (a difference can, its
    standard error cannot), so it must be shown by the run itself."""
    found: list[WrittenNumber] = []
    for match in NUMBER.finditer(text):
        if match.group("bound"):
            continue
        if INFERENTIAL_CONTEXT.search(text[max(0, match.start() - 24):match.start()]):
            found += parse_numbers(match.group(0))
    return found


#: an interval's endpoints, after what names it as one ("95% CI 12.4 to 14.3", "the adjusted interval is
#: 0.108 – 0.126"): like a standard error, no arithmetic on the report's means gives them
INTERVAL_RANGE = re.compile(
    r"(?:\bCI\b|\bconfidence interval|\bcredible interval|\b(?:confidence|credible|bootstrap|prediction|uncertainty|"
    r"recommended|adjusted|widened|corrected)\s+(?:\w+\s+)?interval\b|\bthe interval\b|\binterval (?:is|of)\b)"
    r"[^0-9\n|±×=]{0,60}?(?:[|=:]\s*)?(?P<a>[-−+]?\d+(?:\.\d+)?)\s*(?:–|—|-|to)\s*(?P<b>[-−+]?\d+(?:\.\d+)?)",
    re.IGNORECASE)


def interval_endpoints(text: str) -> list[WrittenNumber]:
    found: list[WrittenNumber] = []
    for match in INTERVAL_RANGE.finditer(text):
        for group in ("a", "b"):
            found += parse_numbers(match.group(group))
    return found


P_VALUE_CONTEXT = re.compile(r"(?:\bp\b|p-value(?: of)?)\s*(?:=|≈|~|:|of|is)\s*$", re.IGNORECASE)


def p_values(text: str) -> list[WrittenNumber]:
    """Numbers written as a p-value with its value ("p = 0.03"; a bound, "p < 0.001", is not one of them)."""
    return [n for match in NUMBER.finditer(text) if not match.group("bound")
            and P_VALUE_CONTEXT.search(text[max(0, match.start() - 16):match.start()])
            for n in parse_numbers(match.group(0))]


def restated(number: WrittenNumber, observed: ObservedValues) -> bool:
    """A p-value is restated only as itself, rounded or truncated: "p = 0.03" is not 3.66 divided by a
    hundred, as an interval in percentage points ("2.3 to 12.8") may be 0.023 and 0.128 times a hundred."""
    return observed.near(abs(number.value), number.tolerance)


def underived_inferential(text: str, observed: ObservedValues) -> list[WrittenNumber]:
    """Uncertainties, interval endpoints and test statistics of the report that no evidence shows directly."""
    probabilities = {(n.text, n.value) for n in p_values(text)}
    return [n for n in inferential_numbers(text) + interval_endpoints(text)
            if n.value != 0 and not (restated(n, observed) if (n.text, n.value) in probabilities
                                     else directly_supported(n, observed))]


def significant_digits(number: WrittenNumber) -> int:
    digits = number.text.split("e")[0].split("E")[0]
    return len(re.sub(r"[^\d]", "", digits).lstrip("0"))
