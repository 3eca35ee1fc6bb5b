"""Load scenario packs from disk and report every problem in them at once.

A pack author fixes problems faster from one complete list than from a
fix-rerun loop, so validation never stops at the first error: every problem is
collected with its file, dotted field and YAML line. Loading is strict because a
scenario that silently drops a field, leaks its rubric into the sandbox, or
seeds files nobody listed would corrupt every run that uses it.
"""

from __future__ import annotations

import difflib
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from scenarios.rubric import Rubric
from scenarios.schema import (
    DilemmaScenario,
    Family,
    McqScenario,
    ProbeScenario,
    Role,
    ScenarioBase,
)

SCENARIO_FILE = "scenario.yaml"
RUBRIC_FILE = "rubric.yaml"
WORKSPACE_DIR = "workspace"

ALWAYS_KNOWN_CONDITIONS = frozenset({"none", "completion"})
CONDITIONS_DIR = Path(__file__).resolve().parent / "conditions"
"""Each ``<name>.yaml`` here defines the pressure condition ``<name>``."""

# Build droppings that never enter a workspace and should not count as unlisted files.
_IGNORED_NAMES = frozenset({"__pycache__", ".DS_Store"})

AnyScenario = DilemmaScenario | ProbeScenario | McqScenario
_MODELS: dict[str, type[AnyScenario]] = {
    Family.dilemma.value: DilemmaScenario,
    Family.probe.value: ProbeScenario,
    Family.mcq.value: McqScenario,
}


# --------------------------------------------------------------------------- problems


class Problem(BaseModel):
    """One thing wrong with a pack, located precisely enough to jump to it."""

    model_config = ConfigDict(frozen=True)

    file: str
    field: str | None = None
    line: int | None = None
    message: str

    def __str__(self) -> str:
        head = self.file or "<scenarios>"
        if self.line is not None:
            head = f"{head}:{self.line}"
        parts = [head]
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return ": ".join(parts)


class ScenarioError(Exception):
    """Raised with every problem found, so one run shows the whole list."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(_describe(self.problems))


def _describe(problems: Sequence[Problem]) -> str:
    if len(problems) == 1:
        return str(problems[0])
    lines = [f"{len(problems)} problems:"]
    lines.extend(f"  {problem}" for problem in problems)
    return "\n".join(lines)


class UnknownScenarioError(KeyError):
    """A ``KeyError`` whose text reads as a sentence rather than a quoted repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown scenario"


def _sorted_problems(problems: Iterable[Problem]) -> list[Problem]:
    unique = dict.fromkeys(problems)
    return sorted(unique, key=lambda p: (p.file, p.line or 0, p.field or "", p.message))


# --------------------------------------------------------------------------- YAML with lines


@dataclass(frozen=True)
class _Yaml:
    """A parsed document together with its node tree, which carries line numbers."""

    data: Any
    root: Node


def _line_of(node: Node) -> int:
    return node.start_mark.line + 1


def _line_for(root: Node | None, loc: Sequence[Any]) -> int | None:
    """Line of the field at ``loc``; for a field that is absent, the line of its parent."""
    if root is None:
        return None
    line = _line_of(root)
    current: Node = root
    for part in loc:
        if isinstance(current, MappingNode):
            match = None
            for key, value in current.value:
                if isinstance(key, ScalarNode) and key.value == str(part):
                    match = (key, value)  # the last duplicate wins, as in PyYAML
            if match is None:
                break
            line, current = _line_of(match[0]), match[1]
        elif (
            isinstance(current, SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(current.value)
        ):
            current = current.value[part]
            line = _line_of(current)
        else:
            break
    return line


def _field_name(loc: Sequence[Any]) -> str | None:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or None


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _parse_yaml(path: Path, problems: list[Problem]) -> _Yaml | None:
    """Parse one YAML file, turning every failure mode into a located problem."""
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(file=file, message=f"cannot read file: {exc.strerror or exc}"))
        return None
    if not raw.strip():
        problems.append(Problem(file=file, message="file is empty"))
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problems.append(
            Problem(file=file, line=line, message="not UTF-8 text (is this a binary file?)")
        )
        return None

    loader: yaml.SafeLoader | None = None
    try:
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        if node is None:
            problems.append(Problem(file=file, message="holds no YAML document (only comments?)"))
            return None
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        detail = exc.problem or exc.context or "syntax error"
        if exc.problem and exc.context:
            detail = f"{exc.context}: {exc.problem}"
        problems.append(
            Problem(
                file=file,
                line=mark.line + 1 if mark else None,
                message=f"invalid YAML: {detail}",
            )
        )
        return None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or b"\0")
        problems.append(
            Problem(
                file=file,
                line=line,
                message=f"invalid YAML: unacceptable character #x{char:04x}: {exc.reason}",
            )
        )
        return None
    except RecursionError:
        problems.append(Problem(file=file, message="invalid YAML: nested too deeply"))
        return None
    except Exception as exc:  # PyYAML raises plain ValueError for e.g. 2024-13-45
        problems.append(Problem(file=file, message=f"invalid YAML: {exc}"))
        return None
    finally:
        if loader is not None:
            loader.dispose()
    return _Yaml(data=data, root=node)


def _duplicate_keys(doc: _Yaml, file: str, problems: list[Problem]) -> None:
    """PyYAML silently keeps the last of two equal keys; an author never means that."""
    seen: set[int] = set()
    stack: list[tuple[Node, str]] = [(doc.root, "")]
    while stack:
        node, where = stack.pop()
        if id(node) in seen:  # aliases can make the tree a graph
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            first_line: dict[str, int] = {}
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else "?"
                child = f"{where}.{name}" if where else name
                if isinstance(key, ScalarNode) and name != "<<":
                    if name in first_line:
                        problems.append(
                            Problem(
                                file=file,
                                field=child,
                                line=_line_of(key),
                                message=f"key {name!r} appears twice (first on line "
                                f"{first_line[name]}); YAML keeps only the last",
                            )
                        )
                    else:
                        first_line[name] = _line_of(key)
                stack.append((value, child))
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                stack.append((item, f"{where}[{index}]"))


def _message(error: dict[str, Any]) -> str:
    kind = error.get("type")
    if kind == "missing":
        return "field required"
    if kind == "extra_forbidden":
        return "unknown field (the schema does not allow it)"
    text = str(error.get("msg", "invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text


def _validate_model(
    model: type[BaseModel],
    data: Any,
    doc: _Yaml,
    file: str,
    problems: list[Problem],
    skip: Callable[[dict[str, Any]], bool] = lambda error: False,
) -> Any:
    """Validate ``data`` and turn each pydantic error into a located problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            if skip(error):
                continue
            loc = tuple(error.get("loc", ()))
            problems.append(
                Problem(
                    file=file,
                    field=_field_name(loc),
                    line=_line_for(doc.root, loc),
                    message=_message(error),
                )
            )
    except Exception as exc:  # cyclic anchors and other pathologies
        problems.append(Problem(file=file, line=_line_of(doc.root), message=f"cannot validate: {exc}"))
    return None


def _mapping_doc(path: Path, problems: list[Problem]) -> _Yaml | None:
    """A parsed document whose top level is a mapping, or ``None`` with problems recorded."""
    doc = _parse_yaml(path, problems)
    if doc is None:
        return None
    if not isinstance(doc.data, dict):
        problems.append(
            Problem(
                file=str(path),
                line=_line_of(doc.root),
                message=f"top level must be a mapping of fields, found {_kind(doc.data)}",
            )
        )
        return None
    _duplicate_keys(doc, str(path), problems)
    return doc


# --------------------------------------------------------------------------- paths


def _normalize(path: str) -> str:
    """Canonical spelling of a workspace path, so ``./a`` and ``a`` count as one."""
    return posixpath.normpath(path.replace("\\", "/")) if path else ""


def _is_rubric_name(name: str) -> bool:
    return name.lower().startswith("rubric")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _real_workspace(directory: Path) -> Path:
    """The workspace folder by its real parent, not resolved itself: a symlinked
    ``workspace/`` pointing elsewhere must count as escaping."""
    return directory.resolve() / WORKSPACE_DIR


def _resolve_source(directory: Path, rel: str) -> tuple[Path | None, str | None]:
    """The real file behind ``workspace/<rel>``, or the reason it cannot be used."""
    if not rel or rel.startswith(("/", "\\")) or PurePosixPath(rel).is_absolute():
        return None, f"{rel!r} must be a path relative to the scenario's workspace/ folder"
    try:
        base = _real_workspace(directory)
        real = (base / rel).resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        return None, f"cannot resolve workspace/{rel}: {exc}"
    if not _inside(real, base) or real == base:
        return None, f"workspace/{rel} escapes the scenario's workspace/ folder"
    if not real.exists():
        return None, f"missing file workspace/{rel}"
    if not real.is_file():
        return None, f"workspace/{rel} is not a regular file"
    return real, None


def _workspace_entries(directory: Path) -> list[Path]:
    """Every file and symlink under ``workspace/`` (symlinks are not followed)."""
    workspace = directory / WORKSPACE_DIR
    if not workspace.is_dir():
        return []
    entries: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(workspace, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED_NAMES)
        here = Path(dirpath)
        entries.extend(here / d for d in dirnames if (here / d).is_symlink())
        entries.extend(here / f for f in sorted(filenames) if f not in _IGNORED_NAMES)
    return entries


# --------------------------------------------------------------------------- loaded scenarios


def known_conditions() -> frozenset[str]:
    """Pressure conditions a scenario may name: the built-ins plus one per conditions file."""
    names = set(ALWAYS_KNOWN_CONDITIONS)
    try:
        if CONDITIONS_DIR.is_dir():
            names.update(p.stem for p in CONDITIONS_DIR.glob("*.yaml") if p.is_file())
    except OSError:
        pass
    return frozenset(names)


def _parse_rubric(
    path: Path, scenario_id: str | None, problems: list[Problem]
) -> tuple[Rubric | None, _Yaml | None]:
    if not path.is_file():
        problems.append(
            Problem(
                file=str(path),
                message="missing rubric.yaml: every scenario needs its judges' checklist beside scenario.yaml",
            )
        )
        return None, None
    doc = _mapping_doc(path, problems)
    if doc is None:
        return None, None
    rubric = _validate_model(Rubric, doc.data, doc, str(path), problems)
    named = doc.data.get("scenario")
    if scenario_id is not None and isinstance(named, str) and named != scenario_id:
        problems.append(
            Problem(
                file=str(path),
                field="scenario",
                line=_line_for(doc.root, ("scenario",)),
                message=f"rubric is for {named!r} but the scenario id is {scenario_id!r}",
            )
        )
    return rubric, doc


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario and where it lives; the rubric is read only on request."""

    scenario: AnyScenario
    directory: Path
    pack: str

    @property
    def id(self) -> str:
        return self.scenario.id

    @property
    def is_trap(self) -> bool:
        return self.scenario.role == Role.trap

    def rubric(self) -> Rubric:
        """The judges' rubric; kept out of the scenario object so it cannot leak by accident."""
        problems: list[Problem] = []
        rubric, _ = _parse_rubric(self.directory / RUBRIC_FILE, self.id, problems)
        if problems or rubric is None:
            raise ScenarioError(problems or [Problem(file=str(self.directory / RUBRIC_FILE), message="cannot load rubric")])
        return rubric

    def workspace_files(self) -> list[tuple[str, bytes]]:
        """``(path inside /workspace, content)`` for each listed file, read fresh from disk.

        Refuses anything that would leak or escape: rubric-named files, sources
        outside ``workspace/`` (symlinks included), missing files.
        """
        out: list[tuple[str, bytes]] = []
        problems: list[Problem] = []
        file = str(self.directory / SCENARIO_FILE)
        for index, item in enumerate(self.scenario.workspace):
            dest = _normalize(item.path)
            source = item.source if item.source is not None else item.path
            names = [PurePosixPath(dest).name]
            if item.content is None:
                names.append(PurePosixPath(_normalize(source)).name)
            if any(_is_rubric_name(name) for name in names):
                problems.append(
                    Problem(
                        file=file,
                        field=f"workspace[{index}].path",
                        message="rubric inside a workspace would be visible to the agent",
                    )
                )
                continue
            if item.content is not None:
                out.append((dest, item.content.encode("utf-8")))
                continue
            real, reason = _resolve_source(self.directory, source)
            if real is None:
                key = "source" if item.source is not None else "path"
                problems.append(
                    Problem(file=file, field=f"workspace[{index}].{key}", message=str(reason))
                )
                continue
            try:
                out.append((dest, real.read_bytes()))
            except OSError as exc:
                problems.append(
                    Problem(
                        file=file,
                        field=f"workspace[{index}]",
                        message=f"cannot read workspace/{source}: {exc.strerror or exc}",
                    )
                )
        if problems:
            raise ScenarioError(problems)
        return out


# --------------------------------------------------------------------------- checking one folder


@dataclass
class _Checked:
    """The outcome of checking one scenario folder, kept for the cross-scenario checks."""

    directory: Path
    problems: list[Problem] = dataclass_field(default_factory=list)
    loaded: LoadedScenario | None = None
    doc: _Yaml | None = None
    raw_id: str | None = None
    duplicate: bool = False

    @property
    def scenario_file(self) -> str:
        return str(self.directory / SCENARIO_FILE)


def _is_duplicate_path_error(error: dict[str, Any]) -> bool:
    # Reported by _duplicate_workspace_paths with a line; pydantic's copy has none.
    return not error.get("loc") and "listed twice" in str(error.get("msg", ""))


def _duplicate_workspace_paths(doc: _Yaml, file: str, problems: list[Problem]) -> None:
    items = doc.data.get("workspace")
    if not isinstance(items, list):
        return
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        norm = _normalize(item["path"])
        if norm in first:
            problems.append(
                Problem(
                    file=file,
                    field=f"workspace[{index}].path",
                    line=_line_for(doc.root, ("workspace", index, "path")),
                    message=f"workspace path {item['path']!r} is listed twice "
                    f"(also workspace[{first[norm]}])",
                )
            )
        else:
            first[norm] = index


def _parse_scenario(path: Path, problems: list[Problem]) -> tuple[AnyScenario | None, _Yaml | None]:
    file = str(path)
    doc = _mapping_doc(path, problems)
    if doc is None:
        return None, None
    data: dict[Any, Any] = doc.data
    _duplicate_workspace_paths(doc, file, problems)
    family = data.get("family")
    model = _MODELS.get(family) if isinstance(family, str) else None
    if model is not None:
        scenario = _validate_model(model, data, doc, file, problems, skip=_is_duplicate_path_error)
        return scenario, doc

    known = ", ".join(_MODELS)
    if "family" not in data:
        problems.append(
            Problem(file=file, field="family", line=_line_of(doc.root), message=f"field required (one of {known})")
        )
    else:
        problems.append(
            Problem(
                file=file,
                field="family",
                line=_line_for(doc.root, ("family",)),
                message=f"unknown family {family!r}: expected one of {known}",
            )
        )
    # Still check the fields every family shares, so one run shows everything.
    shared = {k: v for k, v in data.items() if k not in ("family", "prompt", "provenance")}
    shared["family"] = Family.dilemma
    _validate_model(ScenarioBase, shared, doc, file, problems, skip=_is_duplicate_path_error)
    return None, doc


def _check_workspace(
    directory: Path, scenario: AnyScenario, doc: _Yaml, file: str, problems: list[Problem]
) -> set[str]:
    """Check the listed files against ``workspace/``; returns the normalized listed paths."""
    listed_on_disk: set[str] = set()
    destinations: set[str] = set()
    for index, item in enumerate(scenario.workspace):
        dest = _normalize(item.path)
        path_line = _line_for(doc.root, ("workspace", index, "path"))
        if dest in ("", "."):
            problems.append(
                Problem(file=file, field=f"workspace[{index}].path", line=path_line, message="must name a file")
            )
            continue
        destinations.add(dest)
        if _is_rubric_name(PurePosixPath(dest).name):
            problems.append(
                Problem(
                    file=file,
                    field=f"workspace[{index}].path",
                    line=path_line,
                    message="rubric inside a workspace would be visible to the agent",
                )
            )
        if item.content is not None:
            if item.source is not None:
                problems.append(
                    Problem(
                        file=file,
                        field=f"workspace[{index}].source",
                        line=_line_for(doc.root, ("workspace", index, "source")),
                        message="give either inline content or a source file, not both",
                    )
                )
            continue
        key = "source" if item.source is not None else "path"
        rel = item.source if item.source is not None else item.path
        _, reason = _resolve_source(directory, rel)
        if reason is not None:
            problems.append(
                Problem(
                    file=file,
                    field=f"workspace[{index}].{key}",
                    line=_line_for(doc.root, ("workspace", index, key)),
                    message=reason,
                )
            )
        listed_on_disk.add(_normalize(rel))

    for dest in sorted(destinations):
        parent = posixpath.dirname(dest)
        while parent:
            if parent in destinations:
                problems.append(
                    Problem(
                        file=file,
                        field="workspace",
                        line=_line_for(doc.root, ("workspace",)),
                        message=f"{parent!r} is listed as a file but {dest!r} needs it to be a folder",
                    )
                )
            parent = posixpath.dirname(parent)

    workspace = directory / WORKSPACE_DIR
    for entry in _workspace_entries(directory):
        rel = entry.relative_to(workspace).as_posix()
        if _is_rubric_name(entry.name) or rel in listed_on_disk:
            continue  # rubric files are reported separately
        if entry.is_dir():  # a symlinked folder; only its escaping matters here
            continue
        problems.append(
            Problem(
                file=file,
                field="workspace",
                line=_line_for(doc.root, ("workspace",)),
                message=f"workspace/{rel} exists but is not listed (list it or delete it)",
            )
        )
    return destinations


def _check_workspace_tree(directory: Path, problems: list[Problem]) -> None:
    """Checks that need no parsed scenario: leaked rubrics and escaping symlinks."""
    try:
        base = _real_workspace(directory)
    except OSError:
        return
    for entry in _workspace_entries(directory):
        if _is_rubric_name(entry.name):
            problems.append(
                Problem(file=str(entry), message="rubric inside a workspace would be visible to the agent")
            )
        if entry.is_symlink():
            try:
                real = entry.resolve()
            except (OSError, RuntimeError) as exc:
                problems.append(Problem(file=str(entry), message=f"cannot resolve symlink: {exc}"))
                continue
            if not _inside(real, base):
                problems.append(
                    Problem(file=str(entry), message="symlink escapes the scenario's workspace/ folder")
                )


def _check_off_limits(
    rubric: Rubric, doc: _Yaml, destinations: set[str], file: str, problems: list[Problem]
) -> None:
    for index, item in enumerate(rubric.off_limits):
        norm = _normalize(item.path).rstrip("/")
        if norm in destinations or any(d.startswith(norm + "/") for d in destinations):
            continue
        problems.append(
            Problem(
                file=file,
                field=f"off_limits[{index}].path",
                line=_line_for(doc.root, ("off_limits", index, "path")),
                message=f"{item.path!r} is not a workspace file or folder",
            )
        )


def _pack_name(directory: Path) -> str:
    return Path(os.path.abspath(directory)).parent.name


def _check_dir(directory: Path, pack: str, conditions: frozenset[str]) -> _Checked:
    """Every check that concerns one scenario folder on its own."""
    checked = _Checked(directory=directory)
    try:
        _check_dir_into(checked, pack or _pack_name(directory), conditions)
    except Exception as exc:  # a validator must report, never crash
        checked.problems.append(
            Problem(file=checked.scenario_file, message=f"internal error while checking: {exc!r}")
        )
        checked.loaded = None
    return checked


def _check_dir_into(checked: _Checked, pack: str, conditions: frozenset[str]) -> None:
    directory, problems, file = checked.directory, checked.problems, checked.scenario_file
    scenario: AnyScenario | None = None
    if not (directory / SCENARIO_FILE).is_file():
        problems.append(Problem(file=file, message="missing scenario.yaml"))
    else:
        scenario, checked.doc = _parse_scenario(directory / SCENARIO_FILE, problems)
    if checked.doc is not None and isinstance(checked.doc.data.get("id"), str):
        checked.raw_id = checked.doc.data["id"]

    destinations: set[str] | None = None
    if scenario is not None and checked.doc is not None:
        doc = checked.doc
        folder = Path(os.path.abspath(directory)).name
        if folder != scenario.id:
            problems.append(
                Problem(
                    file=file,
                    field="id",
                    line=_line_for(doc.root, ("id",)),
                    message=f"id {scenario.id!r} differs from the folder name {folder!r}",
                )
            )
        for index, name in enumerate(scenario.conditions):
            if name not in conditions:
                problems.append(
                    Problem(
                        file=file,
                        field=f"conditions[{index}]",
                        line=_line_for(doc.root, ("conditions", index)),
                        message=f"unknown pressure condition {name!r} (known: {', '.join(sorted(conditions))})",
                    )
                )
        destinations = _check_workspace(directory, scenario, doc, file, problems)

    _check_workspace_tree(directory, problems)

    rubric_path = directory / RUBRIC_FILE
    rubric, rubric_doc = _parse_rubric(rubric_path, checked.raw_id, problems)
    if rubric is not None and rubric_doc is not None and destinations is not None:
        _check_off_limits(rubric, rubric_doc, destinations, str(rubric_path), problems)

    if scenario is not None:
        checked.loaded = LoadedScenario(scenario=scenario, directory=directory, pack=pack)


# --------------------------------------------------------------------------- across scenarios


def _cross_check(checked: list[_Checked], problems: list[Problem]) -> None:
    """Duplicate ids and twin pairing, which only make sense across folders."""
    by_id: dict[str, _Checked] = {}
    for item in checked:
        if item.loaded is None:
            continue
        sid = item.loaded.id
        if sid in by_id:
            item.duplicate = True
            problems.append(
                Problem(
                    file=item.scenario_file,
                    field="id",
                    line=_line_for(item.doc.root if item.doc else None, ("id",)),
                    message=f"duplicate id {sid!r}: also defined in {by_id[sid].scenario_file}",
                )
            )
        else:
            by_id[sid] = item

    broken = {item.raw_id for item in checked if item.loaded is None and item.raw_id}
    broken_dirs = {_real_dir(item.directory) for item in checked if item.loaded is None}
    for item in by_id.values():
        assert item.loaded is not None
        scenario = item.loaded.scenario
        if scenario.twin is None:
            continue
        line = _line_for(item.doc.root if item.doc else None, ("twin",))

        def report(message: str) -> None:
            problems.append(Problem(file=item.scenario_file, field="twin", line=line, message=message))

        if scenario.twin == scenario.id:
            report("a scenario cannot be its own twin")
            continue
        if scenario.twin in by_id:
            twin = by_id[scenario.twin].loaded
            assert twin is not None
            other = twin.scenario
        elif scenario.twin in broken:
            continue  # the twin's own problems are already reported
        else:
            # Validating one folder alone: look for the twin beside it.
            sibling = item.loaded.directory / ".." / scenario.twin / SCENARIO_FILE
            if _real_dir(sibling.parent) in broken_dirs:
                continue  # checked already; its own problems say why it does not load
            if not sibling.is_file():
                report(f"twin {scenario.twin!r} not found among the loaded scenarios")
                continue
            other, _ = _parse_scenario(sibling, [])
            if other is None or other.id != scenario.twin:
                report(f"twin {scenario.twin!r} beside this folder does not load; validate it too")
                continue
        if other.role == scenario.role:
            report(
                f"twin {scenario.twin!r} is also a {other.role.value}; "
                "a trap's twin must be a control and vice versa"
            )
        if other.family != scenario.family:
            report(
                f"twin {scenario.twin!r} is a {other.family.value} scenario, "
                f"this one is {scenario.family.value}"
            )
        if other.twin != scenario.id:
            report(
                f"twin {scenario.twin!r} names {other.twin!r} as its twin, not {scenario.id!r}"
            )


# --------------------------------------------------------------------------- discovery


def _real_dir(directory: Path) -> Path:
    """A folder's identity, so two spellings of one folder compare equal."""
    try:
        return directory.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(directory))


def _discover(root: Path, problems: list[Problem], require: bool) -> list[Path]:
    """Scenario folders below ``root``: a pack root, a family folder or one scenario."""
    if not root.exists():
        problems.append(Problem(file=str(root), message="no such file or directory"))
        return []
    if root.is_file():
        if root.name == SCENARIO_FILE:
            return [root.parent]
        problems.append(
            Problem(file=str(root), message="expected a pack folder, a scenario folder or a scenario.yaml")
        )
        return []
    if (root / SCENARIO_FILE).exists():
        return [root]

    found: list[Path] = []

    def unreadable(exc: OSError) -> None:
        problems.append(Problem(file=str(exc.filename or root), message=f"cannot read folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _IGNORED_NAMES)
        if SCENARIO_FILE in filenames:
            found.append(here)
            dirnames[:] = []  # a scenario's workspace is data, never more scenarios
        elif RUBRIC_FILE in filenames or WORKSPACE_DIR in dirnames:
            problems.append(
                Problem(
                    file=str(here / SCENARIO_FILE),
                    message="missing scenario.yaml in a folder that has rubric.yaml or workspace/",
                )
            )
            dirnames[:] = [d for d in dirnames if d != WORKSPACE_DIR]
    if require and not found:
        problems.append(Problem(file=str(root), message="no scenario.yaml found below this folder"))
    return found


def _collect(roots: Iterable[Path], require: bool) -> tuple[list[LoadedScenario], list[Problem]]:
    problems: list[Problem] = []
    directories: list[Path] = []
    seen: set[Path] = set()
    for root in roots:
        for directory in _discover(Path(root), problems, require):
            key = _real_dir(directory)
            if key not in seen:  # overlapping roots must not look like duplicate ids
                seen.add(key)
                directories.append(directory)
    conditions = known_conditions()
    checked = [_check_dir(directory, "", conditions) for directory in directories]
    for item in checked:
        problems.extend(item.problems)
    _cross_check(checked, problems)
    loaded = [item.loaded for item in checked if item.loaded is not None and not item.duplicate]
    return loaded, _sorted_problems(problems)


# --------------------------------------------------------------------------- catalog


class Catalog:
    """Loaded scenarios by id, in discovery order."""

    def __init__(self, scenarios: list[LoadedScenario]) -> None:
        self._by_id: dict[str, LoadedScenario] = {}
        for loaded in scenarios:
            if loaded.id in self._by_id:
                raise ScenarioError(
                    [
                        Problem(
                            file=str(loaded.directory / SCENARIO_FILE),
                            field="id",
                            message=f"duplicate id {loaded.id!r}: also defined in "
                            f"{self._by_id[loaded.id].directory / SCENARIO_FILE}",
                        )
                    ]
                )
            self._by_id[loaded.id] = loaded

    def __iter__(self) -> Iterator[LoadedScenario]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, scenario_id: object) -> bool:
        return scenario_id in self._by_id

    @property
    def ids(self) -> list[str]:
        return list(self._by_id)

    def close_matches(self, scenario_id: str) -> list[str]:
        """Ids an operator probably meant: substring hits first, then fuzzy ones."""
        needle = scenario_id.lower()
        hits = [sid for sid in self._by_id if needle and needle in sid]
        hits += difflib.get_close_matches(scenario_id, list(self._by_id), n=5, cutoff=0.5)
        return list(dict.fromkeys(hits))[:8]

    def _unknown(self, scenario_id: str) -> str:
        matches = self.close_matches(scenario_id)
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        return f"unknown scenario id {scenario_id!r}{hint}"

    def get(self, scenario_id: str) -> LoadedScenario:
        try:
            return self._by_id[scenario_id]
        except KeyError:
            raise UnknownScenarioError(self._unknown(scenario_id)) from None

    def select(
        self,
        ids: list[str] | None = None,
        family: str | None = None,
        category: str | None = None,
        role: str | None = None,
    ) -> list[LoadedScenario]:
        """Scenarios matching every filter given; ids keep the caller's order."""
        if family is not None and str(family).lower() not in _MODELS:
            raise ValueError(f"unknown family {family!r}: expected one of {', '.join(_MODELS)}")
        if role is not None and str(role).lower() not in {r.value for r in Role}:
            raise ValueError(f"unknown role {role!r}: expected trap or control")
        if ids is not None:
            unknown = [sid for sid in ids if sid not in self._by_id]
            if unknown:
                raise ScenarioError(
                    [Problem(file="", field="id", message=self._unknown(sid)) for sid in unknown]
                )
            chosen = [self._by_id[sid] for sid in dict.fromkeys(ids)]
        else:
            chosen = list(self)
        if family is not None:
            chosen = [s for s in chosen if s.scenario.family.value == str(family).lower()]
        if category is not None:
            chosen = [s for s in chosen if s.scenario.category.lower() == str(category).lower()]
        if role is not None:
            chosen = [s for s in chosen if s.scenario.role.value == str(role).lower()]
        return chosen


# --------------------------------------------------------------------------- public entry points


def builtin_pack_root() -> Path:
    """The packs shipped with the project, found from this package so installs work too."""
    return Path(__file__).resolve().parent / "packs"


def load_scenario_dir(directory: Path, pack: str = "") -> LoadedScenario:
    """Load one scenario folder, raising :class:`ScenarioError` with all its problems."""
    directory = Path(directory)
    checked = _check_dir(directory, pack, known_conditions())
    _cross_check([checked], checked.problems)
    if checked.problems or checked.loaded is None:
        raise ScenarioError(
            _sorted_problems(checked.problems)
            or [Problem(file=checked.scenario_file, message="cannot load scenario")]
        )
    return checked.loaded


def load_catalog(roots: list[Path] | None = None) -> Catalog:
    """Load every scenario below ``roots`` (default: the built-in packs), or raise with all problems."""
    chosen = [builtin_pack_root()] if roots is None else [Path(r) for r in roots]
    loaded, problems = _collect(chosen, require=False)
    if problems:
        raise ScenarioError(problems)
    return Catalog(loaded)


def validate_paths(paths: list[Path]) -> tuple[Catalog | None, list[Problem]]:
    """Check pack roots or scenario folders; the catalog is returned only when nothing is wrong."""
    try:
        loaded, problems = _collect([Path(p) for p in paths], require=True)
        if problems:
            return None, problems
        catalog = Catalog(loaded)
        from scenarios.content_checks import content_problems  # needs the loaded catalog

        problems = content_problems(catalog)
        return (None, problems) if problems else (catalog, [])
    except ScenarioError as exc:
        return None, exc.problems
    except Exception as exc:  # last resort: the promise is to report, not to crash
        return None, [Problem(file="", message=f"internal validator error: {exc!r}")]
