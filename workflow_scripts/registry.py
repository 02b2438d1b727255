"""What the registries share (``tasks/``, ``corpora/``, ``mt_sources/``): a table of specs by name, kept in their
``order``, which the modules of a package fill as the package imports them."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any, TypeVar

Spec = TypeVar("Spec")


def add(table: dict[str, Any], spec: Spec, what: str) -> Spec:
    """Add ``spec`` to ``table`` (kept in its specs' ``order``); a name registered twice is an error naming ``what``
    it is."""
    name = spec.name  # type: ignore[attr-defined]
    if name in table:
        raise ValueError(f"{what} {name!r} is registered twice")
    table[name] = spec
    ordered = sorted(table.values(), key=lambda s: s.order)
    table.clear()
    table.update((s.name, s) for s in ordered)
    return spec


def lookup(table: dict[str, Any], name: str, what: str, folder: str) -> Any:
    """The spec registered as ``name``; an unknown name is an error naming ``what`` it is, the registered names and
    where the kinds live (a config that planning validated never gets here with one)."""
    try:
        return table[name]
    except KeyError:
        known = ", ".join(table) or "none"
        raise KeyError(
            f"unknown {what} {name!r} (registered: {known}; the kinds are the modules of workflow_scripts/{folder}/)"
        ) from None


def import_all(package: str, path: Iterable[str], skip: tuple[str, ...] = ("__main__",)) -> None:
    """Import every module of a package (but those in ``skip``): each registers what it declares."""
    for module in pkgutil.iter_modules(path):
        if module.name not in skip:
            importlib.import_module(f"{package}.{module.name}")


def kind_description(table: dict[str, Any], folder: str) -> str:
    """The config reference's words for a kind key: each registered kind's ``doc``, and where the kinds live."""
    kinds = "; ".join(f"{name} - {spec.doc}" for name, spec in table.items())
    return f"{kinds}. The kinds are the modules of workflow_scripts/{folder}/; planning refuses any other."


def merged(table: dict[str, Any], field: str) -> dict[str, Any]:
    """One mapping of every registered spec's mapping ``field`` (e.g. each kind's rule costs)."""
    return {key: value for spec in table.values() for key, value in getattr(spec, field).items()}
