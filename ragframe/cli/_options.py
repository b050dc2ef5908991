"""Command-line options generated from a frozen config dataclass, one per field.

Each field ``name`` becomes ``--name`` (underscores as hyphens, plus any older spellings
kept for compatibility) with ``dest=name``. Its type and choices come from the field's
type hint (``int``: digits only, see :func:`._common.integer`; ``float``; ``str``; a
``Literal`` of strings; or a union that takes a string, given as that string, such as a
tokenizer spec), its help from the ``Args:`` section of the docstring of the class that
defines the field, and the help always ends with the default. Values are only parsed
here; the config checks their range.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from ragframe.cli._common import integer, number

Config = TypeVar("Config")

_ENTRY = re.compile(r"(?P<names>\w+(?:\s*,\s*\w+)*)\s*:\s*(?P<text>.*)", re.DOTALL)
_ROLE = re.compile(r":\w+:`~?(?:[\w.]*\.)?(?P<name>[^`]+)`")
_LITERAL = re.compile(r"``(?P<code>[^`]*)``")
_METAVARS: dict[type, str] = {int: "N", float: "X", str: "TEXT"}
_PARSERS: dict[type, Any] = {int: integer, float: number, str: str}


def _plain(text: str) -> str:
    """Docstring markup as plain text: ``code`` and :class:`~a.Name` lose their marks."""
    return _LITERAL.sub(r"\g<code>", _ROLE.sub(r"\g<name>", " ".join(text.split())))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _args_section(doc: str) -> list[str]:
    """The lines of the ``Args:`` section of ``doc`` (indented under it), or none."""
    lines = inspect.cleandoc(doc).splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "Args:"]
    if not starts:
        return []
    level, section = _indent(lines[starts[0]]), []
    for line in lines[starts[0] + 1 :]:
        if line.strip() and _indent(line) <= level:
            break
        section.append(line)
    return section


def docstring_args(cls: type) -> dict[str, str]:
    """``name -> help`` from ``cls``'s own Google-style ``Args:`` section.

    An entry is a ``name: text`` line plus its more indented continuation lines; an
    entry naming several fields (``a, b: text``) gives each the same text.
    """
    section = _args_section(cls.__dict__.get("__doc__") or "")
    entries: list[list[str]] = []
    level = min((_indent(line) for line in section if line.strip()), default=0)
    for line in section:
        if line.strip() and _indent(line) == level:
            entries.append([])
        if entries:
            entries[-1].append(line.strip())
    found: dict[str, str] = {}
    for entry in entries:
        match = _ENTRY.fullmatch(" ".join(entry))
        if match:
            for name in re.split(r"\s*,\s*", match["names"]):
                found[name] = _plain(match["text"])
    return found


def _owners(cls: type, name: str) -> list[type]:
    """The classes of ``cls``'s MRO that declare the field ``name``, nearest first."""
    return [k for k in cls.__mro__ if name in inspect.get_annotations(k)]


def field_help(cls: type) -> dict[str, str]:
    """Help for each field of ``cls``: the docstring entry of the class that defines
    the field wins over entries of subclasses (which may only say "see ...")."""
    helps: dict[str, str] = {}
    entries: dict[type, dict[str, str]] = {}  # each class's docstring parsed once
    for field in dataclasses.fields(cls):
        owners = _owners(cls, field.name)
        rest = [k for k in cls.__mro__ if k not in owners]
        for klass in [*owners, *rest]:
            if klass not in entries:
                entries[klass] = docstring_args(klass)
            text = entries[klass].get(field.name)
            if text:
                helps[field.name] = text
                break
    return helps


def _default(field: dataclasses.Field[Any]) -> object:
    """The field's default (from its factory too), or ``MISSING`` for a required one."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def _default_text(default: object) -> str:
    return repr(default) if isinstance(default, str) else str(default)


def _value_options(hint: Any) -> dict[str, Any]:
    """``type``, ``choices`` and ``metavar`` for a field's type hint."""
    if typing.get_origin(hint) is Literal:
        choices = list(typing.get_args(hint))
        return {"type": type(choices[0]), "choices": choices}
    if hint in (int, float, str):
        return {"type": _PARSERS[hint], "metavar": _METAVARS.get(hint)}
    if str in typing.get_args(hint):  # a union that takes a spec string (a tokenizer)
        return {"type": str, "metavar": "SPEC"}
    raise TypeError(f"no command-line option for a field of type {hint!r}")


def add_config_options(
    parser: argparse.ArgumentParser,
    config: type,
    *,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Add one option per field of the dataclass ``config`` to ``parser``, the fields
    ``config`` declares itself first, then those it inherits.

    Args:
        parser: the (sub)command's parser; the options go in their own group.
        config: a dataclass whose fields are ``int``, ``float``, ``str`` or ``Literal``.
        aliases: extra spellings per field name, e.g. ``{"number_of_fragments":
            ["--fragments"]}``, kept for backwards compatibility.

    Raises:
        ValueError: an alias names no field of ``config``.
        TypeError: a field's type has no command-line form.
    """
    aliases = aliases or {}
    fields = [f for f in dataclasses.fields(config) if f.init]
    fields.sort(key=lambda f: config.__mro__.index(_owners(config, f.name)[0]))  # own first
    unknown = sorted(set(aliases) - {f.name for f in fields})
    if unknown:
        raise ValueError(f"aliases for unknown {config.__name__} fields: {unknown}")
    hints, helps = typing.get_type_hints(config), field_help(config)
    group = parser.add_argument_group(f"options ({config.__name__})")
    for field in fields:
        flags = ["--" + field.name.replace("_", "-"), *aliases.get(field.name, ())]
        text = helps.get(field.name, "").removesuffix(".")
        default = _default(field)
        if default is not dataclasses.MISSING:
            text = f"{text} (default: {_default_text(default)})".strip()
        group.add_argument(
            *flags,
            dest=field.name,
            required=default is dataclasses.MISSING,
            default=None if default is dataclasses.MISSING else default,
            help=text.replace("%", "%%"),
            **_value_options(hints[field.name]),
        )


def config_from_args(config: type[Config], args: argparse.Namespace) -> Config:
    """Build ``config`` from the options :func:`add_config_options` declared."""
    fields = dataclasses.fields(config)  # type: ignore[arg-type]
    return config(**{f.name: getattr(args, f.name) for f in fields if f.init})
