"""Stage 11 — agents as tools: an orchestrator hands a sub-task to another agent as it would call any tool.

Adds: ``as_tool`` (a tool ``name(task: str) -> str`` running a sub-agent, fresh or reused, on each task, at most
``max_depth`` deep, each call a ``SubRun``), ``agent_tools``, ``Orchestrator`` (nests their transcripts),
``call_tree``, ``call_edges``, ``total_usage`` (the whole team's tokens).

Leaves out: sub-agents in parallel, sharing memory or talking to each other, one budget for the team, retries.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from itertools import count

from .agent import Agent
from .control import handoff
from .registry import NAME_PATTERN   # what both APIs accept as a tool name
from .tools import ToolError

MAX_DEPTH = 3            # orchestrator → agent → agent → agent, and no deeper
MAX_TASK_CHARS = 4000    # a task is a brief, not a document to pass along
_RUNNING: ContextVar[SubRun | None] = ContextVar("course_lib_subrun", default=None)   # the sub-run under way
_ORDER = count(1)        # one counter for every tool: the order the calls were made in


@dataclass
class SubRun:
    """One call of an agent tool: which agent ran, on what, and how it ended."""
    order: int = field(repr=False)   # when it was called, counted across every agent tool
    agent: str                  # the tool's name, which is the sub-agent's name
    task: str
    depth: int                  # 1: called by the top orchestrator
    caller: str | None          # the calling sub-agent's name; None: the top orchestrator
    answer: str | None = None
    stop_reason: str | None = None
    steps: int = 0
    usage: dict = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    transcript: dict = field(default_factory=dict, repr=False)
    children: list[SubRun] = field(default_factory=list, repr=False)   # the runs this sub-agent started
    sub_agent: Agent | None = field(default=None, repr=False)


def as_tool(name: str, make_agent, description: str, *, max_steps: int = 4, max_depth: int = MAX_DEPTH,
            max_task_chars: int = MAX_TASK_CHARS):
    """A tool ``name(task: str) -> str`` running ``make_agent()`` (a fresh Agent), or one Agent reused, on ``task``."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"name must be a tool name of letters, digits, _ or - (at most 64), not {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("description must say in one line what this agent does: it is all the model reads")
    if not (callable(make_agent) or isinstance(make_agent, Agent)):
        raise TypeError(f"make_agent must be an Agent or a function that builds one, not {type(make_agent).__name__}")
    for key, value in (("max_steps", max_steps), ("max_depth", max_depth), ("max_task_chars", max_task_chars)):
        if type(value) is not int or value < 1:
            raise ValueError(f"{key} must be a positive whole number, not {value!r}")

    def tool(task: str) -> str:
        if not isinstance(task, str) or not task.strip():   # dispatch checks the type; a direct call may not
            raise ToolError(f"the task is empty: write what the {name} should do in a sentence or two")
        if len(task) > tool.max_task_chars:
            raise ToolError(f"the task is {len(task):,} characters, over the limit of {tool.max_task_chars:,}: say "
                            f"briefly what you need; the {name} can look the details up itself")
        parent = _RUNNING.get()
        depth = parent.depth + 1 if parent else 1
        if depth > tool.max_depth:
            raise ToolError(f"not run: agents are already nested {depth - 1} deep and the limit is "
                            f"{tool.max_depth}. Do this part yourself with your tools, or answer with what you have.")
        agent = tool.make_agent if isinstance(tool.make_agent, Agent) else tool.make_agent()
        if not isinstance(agent, Agent):
            raise TypeError(f"make_agent for {name} must return an Agent, not {type(agent).__name__}")
        if agent.goal is not None and not agent.done:   # one reused Agent, already busy further up this chain
            raise ToolError(f"not run: the {name} is busy with another task; answer this part yourself")
        cap, agent.max_steps = agent.max_steps, min(agent.max_steps, tool.max_steps)   # this task's cap
        run = SubRun(next(_ORDER), name, task, depth, parent.agent if parent else None, sub_agent=agent)
        tool.runs.append(run)
        if parent:
            parent.children.append(run)
        running = _RUNNING.set(run)
        try:
            run.answer, run.stop_reason = agent.run(task), agent.stop_reason
        except Exception as e:   # a model or hook that raised past the loop: the orchestrator still gets a sentence
            run.answer, run.stop_reason = f"The {name} failed: {type(e).__name__}: {e}", "error"
        finally:
            _RUNNING.reset(running)
            if agent is tool.make_agent:   # a reused Agent is the caller's: it gets its own cap back
                agent.max_steps = cap
        note = {"handoff": asdict(note)} if (note := handoff(agent)) else {}   # what a person needs if it gave up
        run.steps, run.usage, run.transcript = agent.steps, agent.total_usage, Agent.transcript(agent, **note)
        if run.stop_reason != "finish":   # an error observation: "Stopped after 4 steps" is not the answer
            raise ToolError(f"the {name} stopped without an answer ({run.stop_reason}): {run.answer} "
                            "Try a smaller or clearer task, or go on without it.")
        return run.answer
    tool.__name__, tool.__qualname__, tool.__annotations__ = name, name, {"task": str, "return": str}   # real types
    tool.__doc__ = (f"{' '.join(description.split())}\n\nArgs:\n    task: what the {name} should do, in a few "
                    f"sentences; it sees only this text, not your conversation.\n")
    tool.is_agent_tool, tool.runs, tool.make_agent = True, [], make_agent
    tool.max_steps, tool.max_depth, tool.max_task_chars = max_steps, max_depth, max_task_chars
    return tool


def agent_tools(tools) -> list:   # the agent tools among a mapping of name → function, in order
    return [f for f in tools.values() if getattr(f, "is_agent_tool", False) is True]


def _top_runs(orchestrator: Agent, tools=None) -> list[SubRun]:   # deeper runs hang from their ``children``
    tools = tools or agent_tools(orchestrator.tools)
    return sorted((r for t in tools for r in t.runs if r.caller is None), key=lambda r: r.order)


class Orchestrator(Agent):
    """An ``Agent`` whose transcript and ``save`` nest its sub-agents' runs; each ``run`` forgets the last one's."""
    def __init__(self, tools, model, max_steps: int | None = None, *, name: str = "orchestrator", **options):
        self.name = name
        super().__init__(tools, model, max_steps, **options)

    def reset(self, goal: str | None = None) -> None:
        for tool in agent_tools(self.tools) if hasattr(self, "goal") and _RUNNING.get() is None else ():
            tool.runs.clear()   # not when nested, nor in __init__: built mid-run, it may share its caller's tools
        super().reset(goal)

    def transcript(self, **extra) -> dict:
        return orchestration_transcript(self, self.name, **extra)


def orchestration_transcript(orchestrator: Agent, name: str = "orchestrator", tools=None, **extra) -> dict:
    """The orchestrator's transcript (``extra`` fields as ``Agent.transcript`` takes them) with a ``subagents`` list:
    each sub-run's own transcript (its ``Agent`` one, whatever its class), nested the same way."""
    def nested(run: SubRun) -> dict:
        return {"agent": run.agent, "depth": run.depth, **run.transcript, "subagents": list(map(nested, run.children))}
    return {"agent": name, **Agent.transcript(orchestrator, **extra),
            "subagents": list(map(nested, _top_runs(orchestrator, tools)))}


def call_tree(orchestrator: Agent, name: str | None = None, tools=None) -> dict:
    """Who called whom, as a nested dict: each agent with its task, stop reason, steps, usage and ``calls``."""
    def node(run: SubRun) -> dict:
        return {"agent": run.agent, "task": run.task, "stop_reason": run.stop_reason, "steps": run.steps,
                "usage": dict(run.usage), "calls": list(map(node, run.children))}
    return {"agent": name or getattr(orchestrator, "name", "orchestrator"), "task": orchestrator.goal,
            "stop_reason": orchestrator.stop_reason, "steps": orchestrator.steps,
            "usage": orchestrator.total_usage, "calls": list(map(node, _top_runs(orchestrator, tools)))}


def call_edges(tree: dict) -> list[tuple[str, str, str]]:
    """``(caller, callee, task)`` for every call in a ``call_tree``, depth first, in call order."""
    return [e for call in tree["calls"] for e in [(tree["agent"], call["agent"], call["task"]), *call_edges(call)]]


def total_usage(orchestrator: Agent, *tools) -> dict:
    """The whole team's tokens: the orchestrator's own and every sub-run's, at every depth."""
    nodes = [call_tree(orchestrator, tools=tools)]
    for node in nodes:   # the list grows as it is read: every agent at every depth
        nodes += node["calls"]
    return {key: sum(node["usage"].get(key) or 0 for node in nodes) for key in ("input_tokens", "output_tokens")}
