"""What the API's routers share: settings, database sessions, the scenario catalog, the artifact store, the queue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.artifacts import ArtifactStore
from orchestrator.settings import Settings
from scenarios.loader import Catalog


@dataclass
class ServiceState:
    settings: Settings
    sessions: sessionmaker[Session]
    catalog: Catalog
    store: ArtifactStore
    enqueue_runs: Callable[[list[str]], int]
    enqueue_judges: Callable[[list[str]], int]


def service(request: Request) -> ServiceState:
    return request.app.state.service
