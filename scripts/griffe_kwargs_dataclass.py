"""Griffe extension for the API reference: a dataclass whose ``__init__`` takes only ``**kwargs`` (to refuse unknown
names with a clear error, as ``TrainingArguments`` does) is documented with the signature its fields give.

The accepted keyword arguments are exactly the fields with ``init=True``; without this extension the reference would
show ``TrainingArguments(**kwargs)`` and could not check the names of its ``Args`` section against a signature.
Registered in ``mkdocs.yml`` (the mkdocstrings handler's ``extensions``); the code itself is unchanged.
"""

from __future__ import annotations

from typing import Any

import griffe


def _is_dataclass(cls: griffe.Class) -> bool:
    return any(str(d.value).split("(")[0].endswith("dataclass") for d in cls.decorators)


def _init_field(attribute: griffe.Attribute) -> bool:
    """Whether a class attribute is a field ``__init__`` takes (``field(init=False)`` is not)."""
    value = str(attribute.value or "")
    if attribute.annotation is None or "property" in attribute.labels or "ClassVar" in str(attribute.annotation):
        return False
    return not (value.startswith("field(") and "init=False" in value.replace(" ", ""))


class KwargsDataclassInit(griffe.Extension):
    """Replace ``__init__(self, **kwargs)`` of a dataclass by ``__init__(self, *, field=default, ...)``."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        init = cls.members.get("__init__")
        if not _is_dataclass(cls) or not isinstance(init, griffe.Function):
            return
        names = [p.name for p in init.parameters]
        # ``(self, *args, **kwargs)``: the first field may also come positionally (TrainingArguments' output_dir)
        kind = griffe.ParameterKind
        positional = names[1:] == ["args", "kwargs"] and init.parameters["args"].kind is kind.var_positional
        if not (positional or names[1:] == ["kwargs"]) or init.parameters["kwargs"].kind is not kind.var_keyword:
            return
        fields = [member for member in cls.members.values()
                  if isinstance(member, griffe.Attribute) and not member.name.startswith("_") and _init_field(member)]
        init.parameters = griffe.Parameters(
            init.parameters["self"],
            *(griffe.Parameter(f.name, annotation=f.annotation, default=f.value,
                               kind=griffe.ParameterKind.positional_or_keyword if positional and i == 0
                               else griffe.ParameterKind.keyword_only) for i, f in enumerate(fields)))
