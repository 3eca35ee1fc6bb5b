"""The REST API (``/v1``): see ``orchestrator/api/app.py``; one router module per resource."""

from orchestrator.api.app import create_app

__all__ = ["create_app"]
