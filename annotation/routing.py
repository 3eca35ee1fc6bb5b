"""Which runs go to people, and why.

A run goes to review when its judges disagree, when the panel's agreement is low, when a detector
found a violation on a run another judge passed, or when it falls in the audit sample. The
orchestrator calls :func:`review_reasons` after judging and, when it names any, puts the run in
``awaiting_review`` and in the default annotation queue.
"""

from __future__ import annotations

import hashlib

from judges.base import FindingKind, Judgement


def in_sample(key: str, rate: float, salt: str = "") -> bool:
    """Deterministic per key, so a re-judged run stays in (or out of) a sample."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    bucket = int(hashlib.sha256(f"{salt}{key}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return bucket < rate


def in_audit_sample(run_id: str, rate: float) -> bool:
    return in_sample(run_id, rate)


def review_reasons(primary: Judgement, others: list[Judgement], run_id: str, audit_rate: float,
                   min_confidence: float) -> list[str]:
    reasons: list[str] = []
    for other in others:
        if other.verdict not in (primary.verdict, "Unjudged"):
            reasons.append(f"{other.judge} says {other.verdict}, {primary.judge} says {primary.verdict}")
        if other.confidence is not None and other.confidence < min_confidence:
            reasons.append(f"{other.judge} agreement {other.confidence:.0%} is below {min_confidence:.0%}")
    reasons += [str(r) for r in primary.details.get("review", [])]
    for judgement in (primary, *others):
        fired = [f.detector for f in judgement.findings if f.kind == FindingKind.violation]
        if judgement.verdict == "Pass" and fired:
            reasons.append(f"{judgement.judge} passed the run although {', '.join(fired)} fired")
    if in_audit_sample(run_id, audit_rate):
        reasons.append(f"audit sample ({audit_rate:.0%} of runs)")
    return reasons
