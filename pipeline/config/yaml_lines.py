"""A YAML reader that keeps the line of every key and value, for ``file:line`` errors.

The document is composed into nodes by PyYAML's safe loader and turned into plain dicts,
lists and scalars here, recording ``path -> (key line, value line)`` on the way. Mapping
keys are kept as the text the user typed (they are names), merge keys (``<<: *base``) work,
and duplicate keys are reported instead of silently overwritten.

Two limits keep a hostile or broken file from exhausting the stack or the memory:
``MAX_DEPTH`` levels of nested lists and mappings (PyYAML composes recursively), and
``MAX_ALIAS_VALUES`` values added by aliases and merge keys in all (ten aliases of ten
aliases, six levels deep, expand to a million values: the "billion laughs").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

Loc = tuple[str | int, ...]

MAX_DEPTH = 100
MAX_ALIAS_VALUES = 10_000
_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"


class YamlSyntaxError(Exception):
    """The text cannot be read: it is not YAML, or it passes a limit above.

    Attributes:
        line: 1-based line of the problem.
        message: ``must be ...; got ...`` text (``invalid YAML: ...`` for syntax errors).
        where: path of the value at fault, ``()`` when there is none.
    """

    def __init__(self, line: int, message: str, where: Loc = ()):
        super().__init__(message)
        self.line, self.message, self.where = line, message, where


@dataclass
class YamlDoc:
    """Plain data plus where each part of it was written.

    Attributes:
        data: dicts, lists and scalars (None for an empty document).
        lines: ``path -> (key line, value line)``, 1-based; ``()`` is the document.
        issues: ``(line, path, message)`` for problems that are not syntax errors
            (duplicate keys, keys that are not scalars, recursive aliases, scalars Python
            cannot hold such as an integer of more than 4300 digits).
    """

    data: Any = None
    lines: dict[Loc, tuple[int, int]] = field(default_factory=lambda: {(): (1, 1)})
    issues: list[tuple[int, Loc, str]] = field(default_factory=list)


class _Loader(yaml.SafeLoader):
    """The safe loader, with nesting bounded and the line of each alias kept (an alias node
    is the anchored node itself, which only knows the anchor's line)."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.depth = 0
        self.alias_lines: dict[tuple[int, int], int] = {}  # (parent, item or key) -> line

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) and parent is not None and index is not None:
            slot = index if isinstance(index, int) else id(index)
            self.alias_lines[id(parent), slot] = event.start_mark.line + 1
        if not isinstance(event, yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        if self.depth == MAX_DEPTH:
            raise YamlSyntaxError(event.start_mark.line + 1, _too_deep())
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _too_deep() -> str:
    return (f"lists and mappings must be nested at most {MAX_DEPTH} levels deep; "
            f"got level {MAX_DEPTH + 1} here")


def parse_yaml(text: str) -> YamlDoc:
    """Parse one YAML document.

    Raises:
        YamlSyntaxError: the text is not valid YAML (or has more than one document), nests
            deeper than ``MAX_DEPTH`` or expands aliases past ``MAX_ALIAS_VALUES``.
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
            doc.data = _Builder(loader, doc).build(node, (), frozenset(), None)
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


class _Builder:
    """Turns nodes into plain data, counting what aliases add (``MAX_ALIAS_VALUES``)."""

    def __init__(self, loader: _Loader, doc: YamlDoc):
        self.loader, self.doc = loader, doc
        self.built: set[int] = set()  # collection nodes built once: seen again = an alias
        self.sizes: dict[int, int] = {}
        self.added = 0

    def build(self, node: yaml.Node, path: Loc, active: frozenset[int], via: Loc | None) -> Any:
        """``node`` as plain data; ``via``: where the alias (or merge key) being expanded was
        written, which counted ``node`` already; None outside aliases."""
        if id(node) in active:
            self.doc.issues.append((self._line(path), path,
                                    "must not contain itself; got a recursive alias"))
            return None
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self.built and via is None:
            self._count(self._size(node), path)
            via = path
        if len(path) >= MAX_DEPTH:  # the text nests less deep: an alias took it further
            where = path if via is None else via
            raise YamlSyntaxError(self._line(where), _too_deep() + ", through aliases", where)
        self.built.add(id(node))
        active = active | {id(node)}
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                line = self.loader.alias_lines.get((id(node), index), _line(item))
                self.doc.lines[(*path, index)] = (line, line)
                items.append(self.build(item, (*path, index), active, via))
            return items
        return self._mapping(node, path, active, via)

    def _mapping(self, node: yaml.MappingNode, path: Loc, active: frozenset[int],
                 via: Loc | None) -> dict[str, Any]:
        first_seen: dict[str, int] = {}
        own = 0
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:  # as PyYAML's flatten_mapping tells a merge key
                if via is None:  # counted before PyYAML copies the merged pairs in
                    self._count(sum(self._size(m) for m in _merged(value_node)
                                    if id(m) in self.built), path)
                continue
            own += 1
            if isinstance(key_node, yaml.ScalarNode):
                key, line = key_node.value, _line(key_node)
                if key in first_seen:
                    message = f"duplicate key; first written at line {first_seen[key]}"
                    self.doc.issues.append((line, (*path, key), message))
                first_seen.setdefault(key, line)
        self.loader.flatten_mapping(node)  # merged pairs first, so the node's own keys win
        merged_count = len(node.value) - own
        result: dict[str, Any] = {}
        for position, (key_node, value_node) in enumerate(node.value):
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                self.doc.issues.append((_line(key_node), path, f"keys must be names; got a {kind}"))
                continue
            key = key_node.value
            value_line = self.loader.alias_lines.get((id(node), id(key_node)), _line(value_node))
            self.doc.lines[(*path, key)] = (_line(key_node), value_line)
            merged = via is None and position < merged_count
            result[key] = self.build(value_node, (*path, key), active, path if merged else via)
        return result

    def _scalar(self, node: yaml.ScalarNode, path: Loc) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except (ValueError, OverflowError) as exc:  # int() past the digit limit, 2001-02-30
            if node.tag == _INT:
                digits = sum(c.isdigit() for c in node.value)
                message = (f"must be an integer of at most {sys.get_int_max_str_digits()} "
                           f"digits; got one of {digits} digits")
            else:
                kind = node.tag.rsplit(":", 1)[-1]
                message = f"must be a valid {kind}; got {node.value[:100]!r} ({exc})"
            self.doc.issues.append((_line(node), path, message))
            return None

    def _count(self, values: int, path: Loc) -> None:
        self.added += values
        if self.added > MAX_ALIAS_VALUES:
            raise YamlSyntaxError(
                self._line(path), f"aliases and merge keys must add at most {MAX_ALIAS_VALUES} "
                f"values in all; got {self.added} with the {values} this one adds. Share "
                "settings with defaults: and extends: instead", path)

    def _size(self, root: yaml.Node) -> int:
        """Values in ``root`` with every alias in it expanded (memoised; no recursion, as
        aliases may nest deeper than the text)."""
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            children = _children(node)
            if done:
                self.sizes[id(node)] = 1 + sum(self.sizes[id(c)] for c in children)
            elif id(node) not in self.sizes:
                self.sizes[id(node)] = 1  # until done; a recursive alias counts once
                stack.append((node, True))
                stack.extend((c, False) for c in children if id(c) not in self.sizes)
        return self.sizes[id(root)]

    def _line(self, path: Loc) -> int:
        key_line, value_line = self.doc.lines.get(path, (1, 1))
        return value_line if path and isinstance(path[-1], int) else key_line


def _merged(value: yaml.Node) -> list[yaml.Node]:
    """The mappings a merge key (``<<: *a`` or ``<<: [*a, *b]``) names."""
    return value.value if isinstance(value, yaml.SequenceNode) else [value]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
