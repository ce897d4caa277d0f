"""A YAML reader that keeps the line of every key and value, for ``file:line`` errors.

The document is composed into nodes by PyYAML's safe loader and turned into plain dicts,
lists and scalars here, recording ``path -> (key line, value line)`` on the way. Mapping
keys are kept as the text the user typed (they are names), merge keys (``<<: *base``) work,
and duplicate keys are reported instead of silently overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

Loc = tuple[str | int, ...]


class YamlSyntaxError(Exception):
    """The text is not YAML; ``line`` is 1-based."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


@dataclass
class YamlDoc:
    """Plain data plus where each part of it was written.

    Attributes:
        data: dicts, lists and scalars (None for an empty document).
        lines: ``path -> (key line, value line)``, 1-based; ``()`` is the document.
        issues: ``(line, path, message)`` for problems that are not syntax errors
            (duplicate keys, keys that are not scalars, recursive aliases).
    """

    data: Any = None
    lines: dict[Loc, tuple[int, int]] = field(default_factory=lambda: {(): (1, 1)})
    issues: list[tuple[int, Loc, str]] = field(default_factory=list)


class _Loader(yaml.SafeLoader):
    pass


def parse_yaml(text: str) -> YamlDoc:
    """Parse one YAML document.

    Raises:
        YamlSyntaxError: the text is not valid YAML (or has more than one document).
    """
    doc = YamlDoc()
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:  # a character YAML forbids; it has no line mark
        line = text.count("\n", 0, exc.position) + 1
        raise YamlSyntaxError(line, f"invalid YAML: {exc.reason}; got character "
                                    f"#x{exc.character:04x}") from None
    try:
        node = loader.get_single_node()
        if node is not None:
            doc.lines[()] = (_line(node), _line(node))
            doc.data = _build(loader, node, (), doc, set())
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc) from None
    finally:
        loader.dispose()
    return doc


def _syntax_error(exc: yaml.MarkedYAMLError) -> YamlSyntaxError:
    mark = exc.problem_mark or exc.context_mark
    message = f"invalid YAML: {exc.problem or exc.context}"
    if exc.context and exc.problem and exc.context_mark is not None:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return YamlSyntaxError(mark.line + 1 if mark else 1, message)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _build(loader: _Loader, node: yaml.Node, path: Loc, doc: YamlDoc, active: set[int]) -> Any:
    if id(node) in active:
        doc.issues.append((_line(node), path, "must not contain itself; got a recursive alias"))
        return None
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_object(node, deep=True)
    active = active | {id(node)}
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            doc.lines[(*path, index)] = (_line(item), _line(item))
            items.append(_build(loader, item, (*path, index), doc, active))
        return items
    return _build_mapping(loader, node, path, doc, active)


def _build_mapping(loader: _Loader, node: yaml.MappingNode, path: Loc, doc: YamlDoc,
                   active: set[int]) -> dict[str, Any]:
    first_seen: dict[str, int] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            key, line = key_node.value, _line(key_node)
            if key in first_seen:
                message = f"duplicate key; first written at line {first_seen[key]}"
                doc.issues.append((line, (*path, key), message))
            first_seen.setdefault(key, line)
    loader.flatten_mapping(node)  # merged pairs first, so the node's own keys win
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            doc.issues.append((_line(key_node), path, f"keys must be names; got a {kind}"))
            continue
        key = key_node.value
        doc.lines[(*path, key)] = (_line(key_node), _line(value_node))
        result[key] = _build(loader, value_node, (*path, key), doc, active)
    return result
