"""The rules that check a parameter's value: a `Rule` says what it allows and normalises what it accepts.

The builders (`integer`, `number`, `option`, ...) make the rules of the tables of
`setfit_lite.training_args` (the training arguments) and `setfit_lite.config.params` (prediction, search,
CLI);
`check_rule` turns a rule's bare ``TypeError`` (wrong type) or ``ValueError`` (out of range) into one that
names the parameter, the value and what is allowed.

Torch- and numpy-free: this module imports only the standard library.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Rule", "check_rule", "check_writable_folder", "flag", "folder", "integer", "is_bool", "is_integer",
           "number", "optional", "option", "pair_of", "path", "rule_message", "text"]


def is_bool(value: Any) -> bool:
    """A bool, Python's or numpy's."""
    numpy = sys.modules.get("numpy")  # a numpy bool exists only once numpy is imported
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


def is_integer(value: Any) -> bool:
    """An int or numpy integer, not a bool (Python's or numpy's)."""
    return isinstance(value, numbers.Integral) and not is_bool(value)


@dataclass(frozen=True)
class Rule:
    """What a parameter allows (for messages) and ``check(value) -> normalised value``.

    ``check`` raises a bare ``TypeError`` (wrong type) or ``ValueError`` (out of range, with or without a reason);
    `check_rule` adds the parameter, the value and ``allowed`` to the message.
    """

    allowed: str
    check: Callable[[Any], Any]


def optional(rule: Rule, meaning: str = "") -> Rule:
    """None (which means ``meaning``) or what ``rule`` allows."""
    def check(value: Any) -> Any:
        return None if value is None else rule.check(value)

    return Rule(f"None{f' ({meaning})' if meaning else ''} or {rule.allowed}", check)


def _shown(bound: float) -> str:
    """A bound as the messages write it: ``2**63 - 1`` rather than its 19 digits."""
    if isinstance(bound, int) and bound > 2**32 and (bound + 1) & bound == 0:
        return f"2**{bound.bit_length()} - 1"
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


def _interval(kind: str, low: float, high: float, low_open: bool = False, high_open: bool = False) -> str:
    """What ``low``/``high`` allow, in words: "a positive integer", "an integer >= 2", "a number in [0, 1)"."""
    if high == math.inf:
        if kind == "integer" and low == 1:
            return "a positive integer"
        return f"{'an integer' if kind == 'integer' else 'a finite number'} {'>' if low_open else '>='} {_shown(low)}"
    if kind == "integer" and low == high:
        return str(low)
    what = "an integer" if kind == "integer" else "a number"
    return f"{what} in {'(' if low_open else '['}{_shown(low)}, {_shown(high)}{')' if high_open else ']'}"


def _with_note(allowed: str, note: str) -> str:
    return f"{allowed} ({note})" if note else allowed


def integer(low: int = 1, high: float = math.inf, also: tuple[int, ...] = (), note: str = "") -> Rule:
    """An integer (not a bool) in ``[low, high]`` or one of ``also``; what it allows is said from those bounds,
    ``note`` (what a value means) added in parentheses.

    Examples:
        >>> integer(low=0, note="0: never").allowed
        'an integer >= 0 (0: never)'
        >>> integer(also=(-1,), note="-1: no limit").allowed
        'a positive integer, or -1 (-1: no limit)'
    """
    def check(value: Any) -> int:
        if not is_integer(value):
            raise TypeError
        if value not in also and not low <= value <= high:
            raise ValueError
        return int(value)

    allowed = _interval("integer", low, high) + "".join(f", or {v}" for v in also)
    return Rule(_with_note(allowed, note), check)


def number(low: float = 0.0, high: float = math.inf, low_open: bool = False, high_open: bool = False,
           note: str = "") -> Rule:
    """A finite real (not a bool) in ``[low, high]`` (an end excluded with ``low_open``/``high_open``), as a
    float; what it allows is said from those bounds, ``note`` added in parentheses.

    Examples:
        >>> number(low_open=True).allowed
        'a finite number > 0'
        >>> number(high=1.0, high_open=True).allowed
        'a number in [0, 1)'
    """
    def check(value: Any) -> float:
        if is_bool(value) or not isinstance(value, numbers.Real):
            raise TypeError
        value = float(value)
        if not (math.isfinite(value) and low <= value <= high) or (low_open and value == low) \
                or (high_open and value == high):
            raise ValueError
        return value

    return Rule(_with_note(_interval("number", low, high, low_open, high_open), note), check)


def pair_of(rule: Rule) -> Rule:
    """One value for both phases, or a ``(body, head)`` pair (tuple or list) of them."""
    def check(value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise ValueError
            return tuple(rule.check(v) for v in value)
        return rule.check(value)

    return Rule(f"{rule.allowed}, or a (body, head) pair of them", check)


def option(options: tuple[str, ...], fold_case: bool = False) -> Rule:
    """One of ``options``; transformers' ``IntervalStrategy``-style enums give their ``value``."""
    def check(value: Any) -> str:
        value = getattr(value, "value", value)
        if not isinstance(value, str):
            raise TypeError
        if fold_case:
            value = value.strip().lower()
        if value not in options:
            raise ValueError
        return value

    return Rule(f"one of {', '.join(map(repr, options))}", check)


def flag() -> Rule:
    """True or False (Python's or numpy's), as a bool."""
    def check(value: Any) -> bool:
        if not is_bool(value):
            raise TypeError
        return bool(value)

    return Rule("True or False", check)


def text(allowed: str = "a string", empty: bool = True) -> Rule:
    """A string; non-empty unless ``empty``."""
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError
        if not empty and not value:
            raise ValueError
        return value

    return Rule(allowed, check)


def _path(value: Any) -> Any:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError
    if not os.fspath(value):
        raise ValueError
    return value


def _folder(value: Any) -> Any:
    value = _path(value)
    if os.path.exists(value) and not os.path.isdir(value):
        raise ValueError(f"{os.fspath(value)} exists and is not a folder")
    return value


def path() -> Rule:
    """A non-empty path (str or ``os.PathLike``)."""
    return Rule("a non-empty path (str or os.PathLike)", _path)


def folder() -> Rule:
    """A non-empty path that is a folder or does not exist yet."""
    return Rule("a non-empty path (str or os.PathLike) of a folder, existing or not", _folder)


def check_writable_folder(name: str, value: Any) -> None:
    """Before any work, what writing into the folder ``value`` (the argument ``name``) would meet: the `folder`
    rule's TypeError or ValueError; FileExistsError when the nearest existing path above it is not a folder;
    PermissionError when the folder, or the nearest existing one above it, cannot be written in (tried by creating
    and removing a temporary folder there, which also catches read-only file systems and writes the kernel
    refuses to root). Nothing is left behind.

    Args:
        name: The argument, as the caller shows it (``"output_dir"``, ``"--output-dir"``).
        value: The folder's path, existing or not.

    Raises:
        TypeError: Not a path.
        ValueError: An empty path, or an existing file.
        FileExistsError: A path above it that exists and is not a folder.
        PermissionError: A folder that cannot be written in.
    """
    check_rule(folder(), name, value)
    shown = os.fspath(value)
    target = Path(os.path.abspath(shown))
    existing = next(p for p in (target, *target.parents) if os.path.lexists(p))  # the root exists
    if not os.path.isdir(existing):  # a dangling link is not a folder either
        raise FileExistsError(f"{name} {shown}: cannot write there: {existing} above it exists and is not a folder "
                              "(nothing was written)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".setfit_lite-probe-", dir=existing))
    except OSError as error:
        raise PermissionError(f"{name} {shown}: cannot write there: the folder {existing} cannot be written in "
                              f"({error.strerror or error}; nothing was written)") from None


def rule_message(rule: Rule, shown: str, error: Exception) -> str:
    """"must be <allowed>, got <shown>", with the reason ``error`` gives when it gives one."""
    return f"must be {rule.allowed}, got {shown}" + (f": {error}" if str(error) else "")


def check_rule(rule: Rule, name: str, value: Any, owner: str = "") -> Any:
    """``rule.check(value)``; its ``TypeError``/``ValueError`` again, naming ``owner`` (a prefix), the parameter
    ``name``, the value and what is allowed."""
    try:
        return rule.check(value)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{owner}{name} {rule_message(rule, repr(value), error)}") from None
