"""Stage 02 — the registry: a name → function map the agent may call.

Adds: ``ToolRegistry``, an allowlist: the one place that turns the name a model gives into a function, so a tool
that is not registered cannot run (looking names up in ``globals()`` would offer ``os.system`` too). It refuses
duplicate names, names the APIs would reject, the reserved name ``finish``, and things that are not callable.

Leaves out: describing tools (stage 03) and checking arguments (05). Wherever "tools" are taken, a ``dict`` works too.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")   # tool names both Anthropic and OpenAI accept
RESERVED = {"finish"}   # the reply protocol's word for "I am done" (stage 04)
_DECORATOR = object()   # marks "no function given": register(None) is a mistake, not the decorator form


class ToolRegistry(Mapping):
    """An allowlist of tools, name → function. Use ``register`` directly or as a decorator."""

    def __init__(self, tools: Mapping[str, Callable] | list[Callable] | None = None):
        self._tools: dict[str, Callable] = {}
        for name, func in tools.items() if isinstance(tools, Mapping) else ((None, f) for f in tools or []):
            self.register(func, name=name)

    def register(self, func: Callable = _DECORATOR, *, name: str | None = None):
        """Add ``func`` under ``name`` (default: its ``__name__``); works as ``@reg.register`` too."""
        if func is _DECORATOR:   # called as @registry.register(name="..."): return the real decorator
            return lambda f: self.register(f, name=name)
        if not callable(func):
            raise TypeError(f"a tool must be callable, got {type(func).__name__}")
        name = name if name is not None else getattr(func, "__name__", "")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid tool name: use letters, digits, _ or -, "
                             "starting with a letter or _, at most 64 characters")
        if name in RESERVED:
            raise ValueError(f"'{name}' is reserved: the model uses it to end the run")
        if name in self._tools:
            raise ValueError(f"a tool named '{name}' is already registered; pick another name")
        self._tools[name] = func
        return func

    def __getitem__(self, name: str) -> Callable:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({', '.join(self._tools) or 'empty'})"
