"""``Kept``: the last values computed, by key (an LRU for keys ``functools.lru_cache`` cannot take as arguments);
``KeptFor``: values derived from objects that cannot be hashed (request models, tasks), while the objects live."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Generic, TypeVar

K = TypeVar("K")
T = TypeVar("T")
V = TypeVar("V")


class Kept(OrderedDict[K, V], Generic[K, V]):
    """The last ``size`` values put, by key; the least recently used is dropped first."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get(self, key: K, default: None = None) -> V | None:  # type: ignore[override]
        found = super().get(key)
        if found is not None:
            self.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> None:
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)


class KeptFor(Generic[T, V]):
    """The last ``size`` values derived from objects and a context (the objects they were derived with, compared by
    identity), each forgotten when its object is freed (a weak reference): an identity never names another object."""

    def __init__(self, size: int) -> None:
        self.kept: Kept[int, tuple[weakref.ref[T], tuple[object, ...], V]] = Kept(size)

    def get(self, obj: T, context: tuple[object, ...]) -> V | None:
        found = self.kept.get(id(obj))
        if found is None or found[0]() is not obj or len(found[1]) != len(context):
            return None
        return found[2] if all(a is b for a, b in zip(found[1], context, strict=True)) else None

    def put(self, obj: T, context: tuple[object, ...], value: V) -> None:
        self.kept.put(id(obj), (weakref.ref(obj, partial(self._forget, id(obj))), context, value))

    def derive(self, obj: T, context: tuple[object, ...], make: Callable[[], V]) -> V:
        """The value kept for ``obj`` and ``context``, or ``make()``'s, kept."""
        found = self.get(obj, context)
        if found is None:
            found = make()
            self.put(obj, context, found)
        return found

    def _forget(self, key: int, ref: weakref.ref[T]) -> None:
        found = self.kept.get(key)
        if found is not None and found[0] is ref:
            del self.kept[key]
