"""A cheaper ``__init__`` for the frozen dataclasses that loading makes by the thousand.

A frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__``
(its ``__setattr__`` refuses), a call per field.  Storing into the instance's
``__dict__`` instead does the same in about half the time; the class stays a frozen
dataclass in every other way (equality, hashing, ``replace``, refused assignment).
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import TypeVar

T = TypeVar("T", bound=type)


def fast_init(cls: T) -> T:
    """Give the frozen dataclass ``cls`` an ``__init__`` that fills its ``__dict__``.

    >>> from dataclasses import dataclass, field
    >>> @fast_init
    ... @dataclass(frozen=True)
    ... class P:
    ...     x: int
    ...     y: int = 2
    ...     z: list = field(default_factory=list)
    >>> P(1), P(1, y=3) == P(1, 3, [])
    (P(x=1, y=2, z=[]), True)
    """
    assert not hasattr(cls, "__post_init__"), f"{cls.__name__} has a __post_init__ to call"
    namespace: dict[str, object] = {"MISSING": MISSING}
    params, body = [], ["fields = self.__dict__"]
    for f in fields(cls):
        assert f.init, f"{cls.__name__}.{f.name} is not an __init__ field"
        if f.default is not MISSING:
            namespace[f"default_{f.name}"] = f.default
            params.append(f"{f.name}=default_{f.name}")
        elif f.default_factory is not MISSING:
            namespace[f"factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            body.append(f"if {f.name} is MISSING: {f.name} = factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"fields[{f.name!r}] = {f.name}")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body)
    exec(source, namespace)  # the source holds only the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    cls.__init__ = init  # type: ignore[misc]
    return cls
