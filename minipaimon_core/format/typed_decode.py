"""Typed msgspec decoding that is safe in threads: every typed decode of the codecs goes
through here.

msgspec (0.22) builds what it needs to decode into a ``Struct`` type lazily, on the first
decode into it, and stores it on the class before it is complete: a second thread decoding
into the same type (or a type holding it) meanwhile reads the half-built info and the
process dies with SIGSEGV (a writer of ``test_four_processes_commit_concurrently`` did, its
read pool decoding its first manifests on several threads; four threads decoding a fresh
nested struct at once crash 19 runs in 100 here). Building a decoder builds that info, so
decoders are built once per type under one lock, and a decode never starts before its
type's info is complete. ``convert`` builds the same info: it warms its type first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import msgspec

_LOCK = threading.Lock()
_JSON: dict[Any, msgspec.json.Decoder[Any]] = {}
_MSGPACK: dict[tuple[Any, Any], msgspec.msgpack.Decoder[Any]] = {}


def json_decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    """The JSON decoder into ``type_`` (built once, under the lock)."""
    found = _JSON.get(type_)
    if found is None:
        with _LOCK:
            found = _JSON.get(type_)
            if found is None:
                found = _JSON[type_] = msgspec.json.Decoder(type_)
    return found


def msgpack_decoder(type_: Any, ext_hook: Callable[[int, memoryview], Any] | None = None
                    ) -> msgspec.msgpack.Decoder[Any]:
    """The MessagePack decoder into ``type_`` with ``ext_hook`` (built once, under the lock)."""
    key = (type_, ext_hook)
    found = _MSGPACK.get(key)
    if found is None:
        with _LOCK:
            found = _MSGPACK.get(key)
            if found is None:
                found = _MSGPACK[key] = msgspec.msgpack.Decoder(type_, ext_hook=ext_hook)
    return found


def convert(obj: Any, type_: Any) -> Any:
    """``msgspec.convert(obj, type_)`` once ``type_``'s info is complete.
    Raises msgspec.ValidationError."""
    json_decoder(type_)
    return msgspec.convert(obj, type_)


__all__ = ["convert", "json_decoder", "msgpack_decoder"]
