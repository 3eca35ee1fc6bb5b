"""Turning a scenario into the text an agent is given (the task prompt), per family.

Only agent-facing parts are used: never the rubric. A probe can be put to an
agent in two forms: single-shot (preamble and requests in one message) or
agentic (the preamble as ``paper.md`` in the workspace, the requests as the task).
"""

from __future__ import annotations

import json

from scenarios.schema import DilemmaScenario, McqScenario, ProbeScenario

PAPER_FILE = "paper.md"


def probe_requests(scenario: ProbeScenario) -> str:
    return "\n".join(f"{n}. {request.text}" for n, request in enumerate(scenario.prompt.requests, start=1))


def probe_single_shot(scenario: ProbeScenario) -> str:
    return f"{scenario.prompt.preamble.strip()}\n\n{probe_requests(scenario)}\n"


def probe_paper(scenario: ProbeScenario) -> str:
    return f"# {scenario.title}\n\n{scenario.prompt.preamble.strip()}\n"


def probe_agentic_task(scenario: ProbeScenario) -> str:
    return (
        f"The background for this project is in `{PAPER_FILE}`. Building on it, please:\n\n"
        f"{probe_requests(scenario)}\n\nWrite your answers to `report/report.md`."
    )


def mcq_prompt(scenario: McqScenario) -> str:
    prompt = scenario.prompt
    parts = [
        f"## Your role\n{prompt.context.strip()}",
        f"## Situation\n{prompt.situation.strip()}",
        "## Research artifact (JSON)\n```json\n" + json.dumps(prompt.artifact, indent=2, ensure_ascii=False) + "\n```",
        "## Questions",
    ]
    for question in prompt.questions:
        options = "\n".join(f"{o.key}) {o.text}" for o in question.options)
        parts.append(f"{question.id}. {question.text}\n{options}")
    return "\n\n".join(parts) + "\n"


def task_prompt(scenario: DilemmaScenario | ProbeScenario | McqScenario, agentic: bool = False) -> str:
    """The first user message for ``scenario``."""
    if isinstance(scenario, DilemmaScenario):
        return scenario.prompt.task
    if isinstance(scenario, ProbeScenario):
        return probe_agentic_task(scenario) if agentic else probe_single_shot(scenario)
    return mcq_prompt(scenario)


def extra_workspace_files(scenario: DilemmaScenario | ProbeScenario | McqScenario, agentic: bool) -> dict[str, bytes]:
    """Files an agentic run needs beyond the scenario's own workspace (the probe's paper)."""
    if agentic and isinstance(scenario, ProbeScenario):
        return {PAPER_FILE: probe_paper(scenario).encode("utf-8")}
    return {}
