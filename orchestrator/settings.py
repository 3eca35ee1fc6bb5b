"""Settings read once from the environment (``INTEGRITYLAB_*``), in one typed object."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agents.gateway.budget import ModelPrice, parse_model_prices


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "integritylab"


def _split(value: str, sep: str) -> list[str]:
    return [part.strip() for part in value.split(sep) if part.strip()]


def parse_model_limits(value: str) -> dict[str, int]:
    """``"openai:*=8,openai:gpt-4o=2"`` -> ``{"openai:*": 8, "openai:gpt-4o": 2}``."""
    limits: dict[str, int] = {}
    for item in _split(value, ","):
        pattern, sep, number = item.rpartition("=")
        if not sep or not pattern.strip() or not number.strip().isdigit() or int(number) < 1:
            raise ValueError(f"INTEGRITYLAB_MODEL_LIMITS: expected PATTERN=N (N >= 1), got {item!r}")
        limits[pattern.strip()] = int(number)
    return limits


# INTEGRITYLAB_<NAME> -> field, for the plain scalar settings of the service
_SERVICE_ENV = {
    "BROKER_URL": "broker_url",
    "REDIS_URL": "redis_url",
    "API_URL": "api_url",
    "VISIBILITY_TIMEOUT_S": "visibility_timeout_s",
    "HEARTBEAT_S": "heartbeat_s",
    "STALE_AFTER_S": "stale_after_s",
    "RECONCILE_INTERVAL_S": "reconcile_interval_s",
    "REQUEUE_GRACE_S": "requeue_grace_s",
    "MAX_ATTEMPTS": "max_attempts",
    "RETRY_BACKOFF_S": "retry_backoff_s",
    "DB_WAIT_S": "db_wait_s",
    "MAX_BODY_BYTES": "max_body_bytes",
}


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = None
    sandbox_backend: str = "auto"
    workers: int = Field(default=2, ge=1, le=64)

    # scenario packs to load instead of the built-in ones; modules to import at start (providers, agents)
    packs: list[Path] = Field(default_factory=list)
    plugins: list[str] = Field(default_factory=list)

    # service (DESIGN.md section 6): Redis carries work, the database is the source of truth
    broker_url: str = "redis://127.0.0.1:6379/0"
    redis_url: str | None = None
    api_url: str = "http://127.0.0.1:8000"
    visibility_timeout_s: int = Field(default=7200, ge=10)
    heartbeat_s: float = Field(default=15.0, gt=0)
    stale_after_s: float = Field(default=90.0, gt=0)
    reconcile_interval_s: float = Field(default=30.0, gt=0)
    requeue_grace_s: float = Field(default=120.0, ge=0)
    max_attempts: int = Field(default=3, ge=1, le=20)
    retry_backoff_s: float = Field(default=10.0, ge=0)
    # a worker that loses its database waits this long (taking no work) before handing a message back
    db_wait_s: float = Field(default=30.0, gt=0)
    model_limits: dict[str, int] = Field(default_factory=dict)
    # USD per million tokens by model spec or pattern, for the gateway's cost budgets (scripted models are free)
    model_prices: dict[str, ModelPrice] = Field(default_factory=dict)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    # judging and review
    judge_panel: list[str] = Field(default_factory=list, description="model specs of the LLM rubric panel")
    audit_rate: float = Field(default=0.0, ge=0.0, le=1.0, description="share of runs sent to humans at random")
    review_confidence: float = Field(default=0.67, ge=0.0, le=1.0, description="panel agreement below this -> review")

    @property
    def effective_redis_url(self) -> str:
        return self.redis_url or self.broker_url

    def import_plugins(self) -> None:
        """Import the ``plugins`` modules, which register extra model providers, agents or sandbox backends."""
        for name in self.plugins:
            importlib.import_module(name)

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'integritylab.db'}"

    @property
    def artifact_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @classmethod
    def from_env(cls) -> "Settings":
        env = os.environ
        values: dict[str, object] = {}
        if env.get("INTEGRITYLAB_DATA_DIR"):
            values["data_dir"] = Path(env["INTEGRITYLAB_DATA_DIR"]).expanduser()
        if env.get("INTEGRITYLAB_DATABASE_URL"):
            values["database_url"] = env["INTEGRITYLAB_DATABASE_URL"]
        if env.get("INTEGRITYLAB_SANDBOX_BACKEND"):
            values["sandbox_backend"] = env["INTEGRITYLAB_SANDBOX_BACKEND"]
        if env.get("INTEGRITYLAB_WORKERS"):
            values["workers"] = int(env["INTEGRITYLAB_WORKERS"])
        if env.get("INTEGRITYLAB_PACKS"):
            values["packs"] = [Path(p).expanduser() for p in _split(env["INTEGRITYLAB_PACKS"], os.pathsep)]
        if env.get("INTEGRITYLAB_PLUGINS"):
            values["plugins"] = _split(env["INTEGRITYLAB_PLUGINS"], ",")
        if env.get("INTEGRITYLAB_JUDGE_PANEL"):
            values["judge_panel"] = _split(env["INTEGRITYLAB_JUDGE_PANEL"], ",")
        if env.get("INTEGRITYLAB_AUDIT_RATE"):
            values["audit_rate"] = float(env["INTEGRITYLAB_AUDIT_RATE"])
        if env.get("INTEGRITYLAB_REVIEW_CONFIDENCE"):
            values["review_confidence"] = float(env["INTEGRITYLAB_REVIEW_CONFIDENCE"])
        if env.get("INTEGRITYLAB_MODEL_LIMITS"):
            values["model_limits"] = parse_model_limits(env["INTEGRITYLAB_MODEL_LIMITS"])
        if env.get("INTEGRITYLAB_MODEL_PRICES"):
            values["model_prices"] = parse_model_prices(env["INTEGRITYLAB_MODEL_PRICES"])
        for name, field in _SERVICE_ENV.items():
            if env.get(f"INTEGRITYLAB_{name}"):
                values[field] = env[f"INTEGRITYLAB_{name}"]
        return cls.model_validate(values)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()
