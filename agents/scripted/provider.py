"""``scripted:<policy>``: a deterministic model stand-in served through the provider interface."""

from __future__ import annotations

from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse, Usage, estimate_tokens
from agents.models.registry import register_provider
from agents.scripted.policies import POLICIES, Policy
from agents.scripted.replies import text_reply


class ScriptedProvider(ModelProvider):
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.spec = f"scripted:{policy.name}"

    def complete(self, request: ModelRequest) -> ModelResponse:
        if not request.tools:  # a single-shot prompt: answer in text
            prompt = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
            text = text_reply(self.policy.name, prompt)
            return ModelResponse(content=text, usage=Usage(input_tokens=estimate_tokens(prompt),
                                 output_tokens=estimate_tokens(text)), model=self.spec)
        thought, call = self.policy.decide(request)
        prompt_chars = sum(len(m.content or "") for m in request.messages)
        return ModelResponse(
            content=thought,
            tool_calls=[call],
            usage=Usage(input_tokens=estimate_tokens("x" * prompt_chars),
                        output_tokens=estimate_tokens(thought + call.arguments_json())),
            finish_reason="tool_calls",
            model=self.spec,
        )


@register_provider("scripted")
def make_scripted(name: str) -> ScriptedProvider:
    if name not in POLICIES:
        raise ModelError(
            f"unknown scripted policy {name!r}; known: {', '.join(sorted(POLICIES))}", layer="orchestrator"
        )
    return ScriptedProvider(POLICIES[name]())
