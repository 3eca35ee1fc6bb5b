"""Settings read once from the environment (``INTEGRITYLAB_*``), in one typed object."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "integritylab"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = None
    sandbox_backend: str = "auto"
    workers: int = Field(default=2, ge=1, le=64)

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
        return cls.model_validate(values)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()
