"""``scripted:<policy>``: a deterministic model stand-in served through the provider interface."""

from __future__ import annotations

from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse, Usage, estimate_tokens
from agents.models.registry import register_provider
from agents.scripted import dialects
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
        dialect = dialects.detect(request)  # a CLI agent's own shell tool, or None for ours
        if dialect is None:
            thought, call = self.policy.decide(request)
            content, calls = thought, [call]
        else:
            content, calls = dialects.from_policy(dialect, *self.policy.decide(dialects.to_policy_view(request)))
        prompt_chars = sum(len(m.content or "") for m in request.messages)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=Usage(input_tokens=estimate_tokens("x" * prompt_chars),
                        output_tokens=estimate_tokens(content + "".join(c.arguments_json() for c in calls))),
            finish_reason="tool_calls" if calls else "stop",
            model=self.spec,
        )


@register_provider("scripted")
def make_scripted(name: str) -> ScriptedProvider:
    if name not in POLICIES:
        raise ModelError(
            f"unknown scripted policy {name!r}; known: {', '.join(sorted(POLICIES))}", layer="orchestrator"
        )
    return ScriptedProvider(POLICIES[name]())
