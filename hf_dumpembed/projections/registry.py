"""Every projection method: the `ProjectionMethod` subclasses defined in the modules of ``methods/``, by name.

Adding a method is adding a module there (one subclass with its options and its ``fit``); ``fit``'s flags and help,
`FitOptions`' rules, the record and the card follow from the class.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from . import methods as methods_package
from .maths.spectrum import Spectrum
from .methods.base import FitContext, FitOptions, FittedProjection, ProjectionMethod, PseudoSet


def _discover() -> dict[str, type[ProjectionMethod]]:
    """The method classes of ``methods/``, in their ``order``."""
    found: list[type[ProjectionMethod]] = []
    for info in pkgutil.iter_modules(methods_package.__path__):
        module = importlib.import_module(f"{methods_package.__name__}.{info.name}")
        found += [value for value in vars(module).values() if inspect.isclass(value)
                  and issubclass(value, ProjectionMethod) and value.__module__ == module.__name__
                  and "name" in vars(value)]
    return {method.name: method for method in sorted(found, key=lambda method: method.order)}


METHODS: dict[str, type[ProjectionMethod]] = _discover()


def projection_method(name: object) -> type[ProjectionMethod]:
    """The method called ``name``; ValueError listing the methods when there is none."""
    if not isinstance(name, str) or name not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)}; got {name!r}.")
    return METHODS[name]


def option_owners() -> dict[str, list[str]]:
    """Each method-specific option's name -> the methods that take it."""
    owners: dict[str, list[str]] = {}
    for method in METHODS.values():
        for option in method.option_names():
            owners.setdefault(option, []).append(method.name)
    return owners


def fit_spectral(spectrum: Spectrum, options: FitOptions, pseudo: PseudoSet | None = None) -> FittedProjection:
    """A corpus-fitted method from a spectrum already computed (auto mode also needs the pseudo-query vectors)."""
    return options.method_class.fit(FitContext.from_spectrum(spectrum, pseudo), options)
