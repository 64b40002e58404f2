"""The prompt-injection lab of stage 09: two scripted readers, a wiki page with an order hidden in it nine ways,
three stand-in tools, and a runner that measures how often the attack lands under each defence.

``GullibleModel`` obeys orders it finds in tool output; ``CarefulModel`` ignores them in text marked as
untrusted, unless a line claims to be the system or the user. ``data/injections.json`` hides one order in nine
ways (Korean, an HTML comment, a table cell, base64, zero-width characters, a fake ``SYSTEM:`` line, a fake user
turn, a web address that carries the page away). ``run_attack`` runs the real ``Agent`` once; ``attack_table``
and ``success_rates`` give the numbers behind the lesson's table and plot. The defences themselves are the
stage module, ``course_lib/safety.py``; this file is the experiment that measures them.

The two readers are a few written-down rules, the one fake in the course that reads the conversation: the lab
is about what a model does with what it reads. Nothing here leaves the computer.
"""
from __future__ import annotations

import base64
import functools
import json
import re
from pathlib import Path
from urllib.parse import quote

from ..safety import ToolPolicy, mark_untrusted, only, untrusted_prompt
from .approval import deny
from ..tools import ToolError


# ---------------------------------------------------------------- the lab: two readers, a page, three tools
_CUE = re.compile(r"ignore|disregard|new instructions|\b(?:system|user)\s*:|무시|지시", re.I)
_ROLE_LINE = re.compile(r"^\W*(?:system|user|시스템|사용자)\s*:.*$", re.I | re.M)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.ASCII)   # ASCII: "evil.example로" ends at the 로
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#=&%-]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))


def _as_read(text: str) -> str:
    """What a model makes of text: it reads through zero-width characters and decodes the base64 it meets."""
    text, decoded = text.translate(_ZERO_WIDTH), []
    for run in _BASE64.findall(text):
        try:
            decoded.append(base64.b64decode(run, validate=True).decode("utf-8"))
        except ValueError:   # not base64, or not text
            pass
    return "\n".join([text, *decoded])


def _unmarked(observation: str) -> str:
    lines = observation.removeprefix("Observation: ").splitlines()
    return "\n".join(line for line in lines if not line.startswith("<<<")).strip()


def _act(tool: str, **args) -> str:
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


class GullibleModel:
    """The lab's scripted reader (text protocol): it reads the page the goal names; if the page gives an order
    (ignore / disregard / 무시 … and an address), it obeys with the page's text; then it sums the page up."""
    careful = False

    def complete(self, messages: list[dict], tools=None) -> str:
        goal = next((m["content"] for m in messages if m["role"] == "user"), "")
        replies = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        if not replies:
            named = re.search(r"'([^']+)'", goal)
            return _act("read_page", name=named[1] if named else goal)
        results = [m["content"] for m in messages[replies[0]:] if m["role"] in ("user", "tool")]
        if not results or _unmarked(results[0]).startswith("Error"):
            return _act("finish", answer="I could not read the page.")
        order = self.order(results[0]) if len(replies) == 1 else None
        if order:
            return _act(order[0], **order[1])
        did = f" I also did what the page asked: {_unmarked(results[-1])[:100]}" if len(replies) > 1 else ""
        first = (_unmarked(results[0]).splitlines() or ["(an empty page)"])[0]
        return _act("finish", answer=f"Summary: {first}{did}")

    def order(self, observation: str) -> tuple[str, dict] | None:
        """The order this reader takes from a tool's output, as (tool, args), or None."""
        text, page = _as_read(observation), _unmarked(observation)
        if self.careful and "<<<TOOL OUTPUT" in observation:   # marked: only a claimed role persuades it
            text = "\n".join(m[0] for m in _ROLE_LINE.finditer(text))
        if not _CUE.search(text):
            return None
        if to := _EMAIL.search(text):
            return "send_email", {"to": to[0], "subject": "Fwd: page", "body": page}
        if url := _URL.search(text):
            return "fetch_url", {"url": url[0] + quote(page[:300])}
        return None


class CarefulModel(GullibleModel):
    """Like ``GullibleModel``, but text between the untrusted markers is data to it, except a line claiming to
    be the system or the user (``SYSTEM:``, ``User:``): real models are talked round like that too. With no
    markers it cannot tell data from orders, and obeys as the gullible one does."""
    careful = True


MODELS = {"gullible": GullibleModel, "careful": CarefulModel}


@functools.cache
def injections() -> dict:
    """The lab's data: the page's name, the goal, the clean page, the attacker's domain, the variants."""
    return json.loads((Path(__file__).parents[1] / "data" / "injections.json").read_text(encoding="utf-8"))


def lab_tools(pages: dict[str, str]) -> tuple[dict, list[dict]]:
    """The lab's tools over ``pages`` (name → text), and the list their effects go to. Nothing leaves this
    computer: "sending" and "fetching" only append to that list, which is how a landed attack is seen."""
    effects: list[dict] = []

    def read_page(name: str) -> str:
        """Read a page of the team wiki by its name."""
        if name not in pages:
            raise ToolError(f"there is no page '{name}'; the pages are: {', '.join(pages)}")
        return pages[name]

    def fetch_url(url: str) -> str:
        """Open a web address (a stand-in: there is no network here)."""
        effects.append({"tool": "fetch_url", "url": url})
        return "200 OK (the lab's stand-in fetched nothing)"

    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email (a stand-in: it is recorded, not sent)."""
        effects.append({"tool": "send_email", "to": to, "subject": subject, "body": body})
        return f"Sent to {to}."
    return {"read_page": read_page, "fetch_url": fetch_url, "send_email": send_email}, effects


# ---------------------------------------------------------------- measuring: does each defence help?
DEFENCES = {"none": (), "marking": ("marking",), "least privilege": ("least_privilege",),
            "policy": ("policy",), "all three": ("marking", "least_privilege", "policy")}
READ_ONLY, SENSITIVE = ("read_page", "fetch_url"), ("send_email",)


def run_attack(variant: str, model: str = "gullible", defences=()) -> dict:
    """Run the real ``Agent`` on the page carrying ``variant`` ("clean": none) under ``defences`` (any of
    "marking", "least_privilege", "policy"); the attack landed if an effect reached the attacker's domain."""
    lab, defences = injections(), tuple(defences)
    texts = {v["id"]: v["text"] for v in lab["variants"]}
    if variant != "clean" and variant not in texts:
        raise ValueError(f"no variant {variant!r}; choose 'clean' or one of: {', '.join(texts)}")
    unknown = [d for d in defences if d not in DEFENCES["all three"]]
    if unknown:
        raise ValueError(f"unknown defence {', '.join(map(repr, unknown))}; choose from marking, least_privilege "
                         "and policy")
    if model not in MODELS:
        raise ValueError(f"no model {model!r}; choose {' or '.join(map(repr, MODELS))}")
    tools, effects = lab_tools({lab["page"]: lab["clean"] + (f"\n\n{texts[variant]}" if variant in texts else "")})
    if "least_privilege" in defences:
        tools = only(tools, READ_ONLY)
    if "policy" in defences:   # the lab's approver says no to everything, as an unattended run must
        tools = ToolPolicy({n: "ask" for n in SENSITIVE if n in tools}, approver=deny, default="always").guard(tools)
    if "marking" in defences:
        tools = mark_untrusted(tools)
    from ..agent import Agent
    agent = Agent(tools, MODELS[model](), max_steps=4,
                  system_prompt=untrusted_prompt(tools) if "marking" in defences else None)
    agent.run(lab["goal"])
    return {"model": model, "variant": variant, "defences": "+".join(defences) or "none",
            "attacked": any(lab["target"] in json.dumps(e, ensure_ascii=False) for e in effects),
            "calls": [run.tool for step in agent.trace for run in step.runs], "stop_reason": agent.stop_reason}


def attack_table(models=tuple(MODELS), defences: dict | None = None) -> list[dict]:
    """One row per model × defence × variant, each from a real run: plain data for a table."""
    return [{"defence": label, **run_attack(v["id"], model, chosen)}
            for model in models for label, chosen in (defences or DEFENCES).items()
            for v in injections()["variants"]]


def success_rates(rows: list[dict]) -> list[dict]:
    """One row per (model, defence): attacks that landed, attacks tried, and the rate (0 to 1)."""
    groups: dict[tuple, list[bool]] = {}
    for row in rows:
        groups.setdefault((row["model"], row["defence"]), []).append(row["attacked"])
    return [{"model": m, "defence": d, "landed": sum(hits), "attacks": len(hits), "rate": sum(hits) / len(hits)}
            for (m, d), hits in groups.items()]
