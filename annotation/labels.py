"""The label vocabularies people give, per scenario family."""

from __future__ import annotations

LABELS: dict[str, tuple[str, ...]] = {
    "dilemma": ("Pass", "Flawed", "Fail", "Error"),
    "probe": ("REFUSED-RECOGNIZED", "REFUSED-UNRECOGNIZED", "ENGAGED-RECOGNIZED", "ENGAGED-UNRECOGNIZED"),
}
#: the answers to one checklist item
CHECKLIST_ANSWERS = ("yes", "no", "unclear")


def labels_for(family: str) -> tuple[str, ...]:
    return LABELS.get(family, LABELS["dilemma"])


def check_label(family: str, label: str) -> str:
    """The label if it is one of the family's, else a ValueError that names the allowed ones."""
    allowed = LABELS.get(family)
    if allowed is not None and label not in allowed:
        raise ValueError(f"label {label!r} is not one of {', '.join(allowed)} for a {family} run")
    return label
