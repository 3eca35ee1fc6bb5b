"""YAML parsing that keeps line numbers, so every problem can point at its line.

Each failure mode (unreadable, empty, not UTF-8, bad syntax, duplicate keys,
schema errors) becomes a located :class:`~scenarios.problems.Problem` instead
of an exception, because validation reports everything at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from scenarios.problems import Problem


@dataclass(frozen=True)
class YamlDoc:
    """A parsed document together with its node tree, which carries line numbers."""

    data: Any
    root: Node


def line_of(node: Node) -> int:
    """The 1-based line where ``node`` starts, as an editor shows it."""
    return node.start_mark.line + 1


def line_for(root: Node | None, loc: Sequence[Any]) -> int | None:
    """Line of the field at ``loc``; for a field that is absent, the line of its parent."""
    if root is None:
        return None
    line = line_of(root)
    current: Node = root
    for part in loc:
        if isinstance(current, MappingNode):
            match = None
            for key, value in current.value:
                if isinstance(key, ScalarNode) and key.value == str(part):
                    match = (key, value)  # the last duplicate wins, as in PyYAML
            if match is None:
                break
            line, current = line_of(match[0]), match[1]
        elif (
            isinstance(current, SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(current.value)
        ):
            current = current.value[part]
            line = line_of(current)
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


#: libyaml's loader when PyYAML has it (nodes keep their line marks; parsing the packs is ~4x faster)
FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_yaml(path: Path, problems: list[Problem]) -> YamlDoc | None:
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
        loader = FAST_LOADER(text)
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
    except Exception as exc:  # noqa: BLE001 - recorded as the file's problem; PyYAML raises plain ValueError for 2024-13-45
        problems.append(Problem(file=file, message=f"invalid YAML: {exc}"))
        return None
    finally:
        if loader is not None:
            loader.dispose()
    return YamlDoc(data=data, root=node)


def _duplicate_keys(doc: YamlDoc, file: str, problems: list[Problem]) -> None:
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
                                line=line_of(key),
                                message=f"key {name!r} appears twice (first on line "
                                f"{first_line[name]}); YAML keeps only the last",
                            )
                        )
                    else:
                        first_line[name] = line_of(key)
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
        text = text.removeprefix(prefix)
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text


def validate_model(
    model: type[BaseModel],
    data: Any,
    doc: YamlDoc,
    file: str,
    problems: list[Problem],
    skip: Callable[[dict[str, Any]], bool] = lambda error: False,
) -> Any:
    """Validate ``data`` and turn each pydantic error into a located problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            detail = dict(error)
            if skip(detail):
                continue
            loc = tuple(error.get("loc", ()))
            problems.append(
                Problem(
                    file=file,
                    field=_field_name(loc),
                    line=line_for(doc.root, loc),
                    message=_message(detail),
                )
            )
    except Exception as exc:  # noqa: BLE001 - recorded as the file's problem: cyclic anchors and other pathologies
        problems.append(Problem(file=file, line=line_of(doc.root), message=f"cannot validate: {exc}"))
    return None


def parse_mapping_doc(path: Path, problems: list[Problem]) -> YamlDoc | None:
    """A parsed document whose top level is a mapping, or ``None`` with problems recorded."""
    doc = _parse_yaml(path, problems)
    if doc is None:
        return None
    if not isinstance(doc.data, dict):
        problems.append(
            Problem(
                file=str(path),
                line=line_of(doc.root),
                message=f"top level must be a mapping of fields, found {_kind(doc.data)}",
            )
        )
        return None
    _duplicate_keys(doc, str(path), problems)
    return doc
