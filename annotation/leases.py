"""Lease rules: who holds a slot on an item, and when a lease has lapsed.

An item needs ``needed`` distinct annotators. A slot is held by a submitted label, or by a lease
(leased or committed) that has not lapsed; a lapsed lease frees its slot, and its holder's later
commit or submission is refused. The store (``orchestrator/annotation_store.py``) applies these
rules under a row lock so that concurrent requests never over-assign.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

LEASED, COMMITTED, SUBMITTED, SKIPPED = "leased", "committed", "submitted", "skipped"
OPEN_STATES = (LEASED, COMMITTED)
DEFAULT_LEASE = timedelta(minutes=15)


class NotYours(LookupError):
    """The assignment does not exist or is not the asking annotator's: answered as 'not found', naming nothing."""


class LeaseError(Exception):
    """A request the lease rules refuse; the message is shown to the annotator as is."""


@dataclass(frozen=True)
class LeaseView:
    state: str
    expires_at: datetime


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def lapsed(lease: LeaseView, now: datetime) -> bool:
    return lease.state in OPEN_STATES and _utc(lease.expires_at) <= now


def holds_slot(lease: LeaseView, now: datetime) -> bool:
    return lease.state == SUBMITTED or (lease.state in OPEN_STATES and not lapsed(lease, now))


def must_be_open(lease: LeaseView, now: datetime, action: str) -> None:
    """Refuse ``action`` on a lease that is not open (submitted, skipped) or has lapsed."""
    if lease.state == SUBMITTED:
        raise LeaseError(f"This item is already submitted; it cannot be {action} again.")
    if lease.state == SKIPPED:
        raise LeaseError(f"You skipped this item; it cannot be {action}.")
    if lapsed(lease, now):
        raise LeaseError(
            f"Your lease on this item lapsed at {_utc(lease.expires_at):%H:%M} UTC, so it may have gone to "
            f"someone else; nothing was {action}. Take the next item from the queue.")
