"""One module per initialization method; importing this package imports every module in it, which registers the
methods in ``INIT_METHODS`` (with what the package needs to know about each: ``registry.MethodSpec``).

To add a method, add a module here whose function is decorated with ``@register_method("Name", ...)``; it is found by
``discover`` (no import line to add), its name is admitted by the config check, and ``init: Name`` in a methods entry
runs it. Without ``order=`` it is listed after the named methods (which declare 10-80), in discovery order; the
tests read the registry, so a new method needs no test edit.
"""

from __future__ import annotations

import importlib
import pkgutil


def discover() -> list[str]:
    """Import every module of this package (in name order; the registry orders the methods by their ``order``)."""
    names = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    for name in names:
        importlib.import_module(f"{__name__}.{name}")
    return names


MODULES = discover()
