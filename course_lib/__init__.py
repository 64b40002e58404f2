"""course_lib — the helper library of "Build an LLM Agent from Scratch".

One module per stage, in teaching order (``course_lib/README.md`` lists them): ``tools`` and ``workspace`` (01),
``registry`` (02), ``describe`` (03), ``parsing`` (04), ``dispatch`` (05), ``agent`` (06), ``models`` (07, 08),
``safety`` and ``control`` (09), ``memory`` and ``memory_store`` (10),
``retrieval``, ``planning``, ``orchestration`` and ``structured`` (11), ``eval_tasks`` and ``evaluation`` (12),
``mcp_bridge`` and ``mcp_client`` (13).
Importing this package does nothing visible and loads none of them; the names below are fetched from their
module on first use.
"""
from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "ToolError": "tools", "calculator": "tools", "read_file": "tools", "list_files": "tools",
    "lookup": "tools", "search_docs": "tools",
    "ToolRegistry": "registry",
    "tool_description": "describe", "build_system_prompt": "describe", "tool_schema": "describe",
    "tool_spec": "describe",
    "parse_reply": "parsing", "ParsedReply": "parsing",
    "Observation": "dispatch",   # dispatch() itself: `from course_lib.dispatch import dispatch`
                                 # (a package attribute named like its submodule would turn into the module)
    "Agent": "agent", "Step": "agent",
    "ScriptedModel": "models", "Reply": "models", "ToolCall": "models", "ModelError": "models",
    "ToolPolicy": "safety", "mark_untrusted": "safety", "only": "safety",
    "Budget": "control", "handoff": "control", "with_time_limit": "control", "estimate_tokens": "control",
    "trim_window": "memory", "summarise": "memory", "ChatAgent": "memory", "MemoryStore": "memory_store",
    "connect_mcp": "mcp_client",   # stage 13; the mcp SDK itself loads only when a server is started
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'course_lib' has no attribute {name!r}")


def default_tools() -> dict:
    """The course's standard tools, name → function: calculator, read_file, list_files, lookup, search_docs."""
    from . import tools
    return {f.__name__: f for f in (tools.calculator, tools.read_file, tools.list_files,
                                    tools.lookup, tools.search_docs)}
