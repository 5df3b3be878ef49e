"""Estimator parameters <-> JSON in ``head_config.json``, and the scikit-learn version check on load."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import sklearn
from packaging.version import InvalidVersion, Version

from ..serialization import jsonable
from .common import corrupt_head_error


def params_to_json(estimator: Any, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """JSON-serialisable ``get_params(deep=False)``; a parameter with no JSON form is dropped with a warning."""
    out = {}
    for key, value in estimator.get_params(deep=False).items():
        if key in exclude:
            continue
        try:
            out[key] = jsonable.encode(value)
        except TypeError:
            warnings.warn(
                f"{type(estimator).__name__} parameter {key}={value!r} is not JSON-serialisable and is not saved "
                "(it does not affect predictions; the default is used after loading)",
                stacklevel=4,
            )
    return out


def params_from_json(template: Any, saved: Any, path: Path) -> tuple[dict[str, Any], list[str]]:
    """``(params, ignored)``: the saved parameters ``template``'s class accepts in the installed scikit-learn
    (decoded), and the names of those it does not know."""
    if not isinstance(saved, dict):
        raise corrupt_head_error(path, "has invalid estimator params")
    known = template.get_params(deep=False)
    try:
        params = {k: jsonable.decode(v) for k, v in saved.items() if k in known and k != "estimator"}
    except (KeyError, TypeError, ValueError) as exc:
        raise corrupt_head_error(path, f"has an undecodable estimator parameter ({exc})") from exc
    # a parameter scikit-learn had already deprecated (value "deprecated") is no loss when it is gone
    ignored = [f"{type(template).__name__}.{k}={v!r}" for k, v in saved.items()
               if k not in known and k != "estimator" and v != "deprecated"]
    return params, ignored


def check_sklearn_version(config: Mapping[str, Any], path: Path, ignored: Sequence[str] = ()) -> None:
    """Warn when a head was saved with a newer scikit-learn (major.minor) than the installed one, or when saved
    parameters (``ignored``) do not exist in the installed version; predictions may then differ."""
    saved = config.get("sklearn_version")
    if saved is None:
        return
    try:
        saved_version = Version(saved)
    except (InvalidVersion, TypeError) as exc:
        raise ValueError(f"head config file {path} has an invalid sklearn_version {saved!r}") from exc
    installed = sklearn.__version__
    newer = saved_version.release[:2] > Version(installed).release[:2]
    if not newer and not ignored:
        return
    problems = []
    if newer:
        problems.append("a newer release than the installed one, whose parameters and behaviour may differ")
    if ignored:
        problems.append(f"its parameters {', '.join(ignored)} do not exist in the installed release and are ignored")
    warnings.warn(
        f"the head in {path.parent} was saved with scikit-learn {saved} and is loaded with scikit-learn "
        f"{installed}: {'; '.join(problems)}. Its predictions may differ from the saved model's; install "
        f"scikit-learn {saved_version.major}.{saved_version.minor} to load it as saved.",
        stacklevel=3,
    )
