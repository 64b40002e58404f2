"""The lab of stage 11's lesson: scripted runs of an agent that plans a quote with todos, of one whose first
answer a critic sends back, and of a team of agents called as tools; and the measure of how well retrieval finds
the lines that answer a question. Each run is a fixed list of replies (a ``ScriptedModel``, not a model), so the
lesson shows the same checklist, verdicts and call tree on every machine.

``planning_demo()`` plans, works through, fails and replans a 30-unit quote (``PLAN_GOAL``, ``PLAN_CALLS``,
``PLAN_ANSWER``); ``refine_demo()`` returns an agent whose first answer forgets the shipping and a critic that
rejects it, then accepts the second; ``script(calls, answer)`` turns a list of calls into a ScriptedModel's
replies. ``team_demo()`` is an orchestrator that asks a researcher and an accountant (made-up token counts, to
show how they add up). ``recall_at_k(index, questions, k)`` is the share of the labelled questions
(``load_questions()``, in English and Korean, each marked with the lines that answer it) for which the top ``k``
hits cite those lines. ``strict_schema(schema)`` rewrites a JSON Schema into the subset both providers' strict
modes take (exercise 11.5 asks for it; the stand-in's ``schemas`` module is what checks the result). The patterns
themselves are the stage modules (``planning``, ``orchestration``,
``retrieval``); this file is what the lesson runs and measures them with.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from .. import default_tools
from ..agent import Agent
from ..memory import ChatAgent
from ..models.scripted import ScriptedModel
from ..orchestration import Orchestrator, as_tool
from ..planning import TodoList
from ..retrieval import Index
from ..tools import calculator, lookup, search_docs


# ---------------------------------------------------------------- planning with todos, and a critic
PLAN_GOAL = "30개 주문 견적을 내 줘: 총액과 배송비 무료 여부. (Quote an order of 30 units: the total, and is shipping free?)"
PLAN_ANSWER = ("30개 견적: 개당 $24 × 30 = $720이고, $500 이상이라 배송비는 무료입니다. 대량 할인 정보는 없어 반영하지 "
               "않았습니다. (30 units cost $720 with free shipping; no bulk discount is listed.)")
PLAN_CALLS = [   # one call per model reply; the lookup of 할인 fails, so step 3 fails and is replanned
    ("create_todos", {"items": ["단가 확인 (unit price)", "총액 계산 (total)", "대량 할인율 확인 (bulk discount)",
                                "견적 정리 (write the quote)"]}),
    ("lookup", {"topic": "단가"}), ("mark_complete", {"index": 1, "note": "개당 $24"}),
    ("calculator", {"expression": "24*30"}), ("mark_complete", {"index": 2, "note": "$720"}),
    ("lookup", {"topic": "할인"}), ("mark_failed", {"index": 3, "reason": "할인 정보 없음 (no discount is listed)"}),
    ("replan", {"index": 3, "items": ["배송비 조건 확인 (shipping terms)"]}),
    ("lookup", {"topic": "배송"}), ("mark_complete", {"index": 4, "note": "$500 이상 무료"}),
    ("mark_complete", {"index": 5, "note": "할인 없이 정리"})]


def script(calls: list, answer: str, native: bool = False) -> list:
    """A ScriptedModel's replies: one tool call per reply, then the answer (text protocol, or native calls)."""
    if native:
        return [{"tool_calls": [{"id": f"call_{n}", "name": tool, "args": args}]}
                for n, (tool, args) in enumerate(calls, 1)] + [answer]
    return [json.dumps({"tool": tool, "args": args}, ensure_ascii=False)
            for tool, args in [*calls, ("finish", {"answer": answer})]]


def planning_demo(native: bool = False) -> tuple[Agent, TodoList]:
    """An agent that plans a quote with todos (ready to ``run(agent.goal)`` or ``step()``), and its TodoList."""
    todos = TodoList()
    model = ScriptedModel(script(PLAN_CALLS, PLAN_ANSWER, native), native_tools=native)
    agent = Agent({**default_tools(), **todos.tools()}, model, max_steps=len(PLAN_CALLS) + 3)
    agent.reset(PLAN_GOAL)
    return agent, todos


def refine_demo(native: bool = False) -> tuple[ChatAgent, ScriptedModel]:
    """An agent whose first answer forgets the shipping, and a critic that rejects it, then accepts the second:
    ``refine(agent, agent.goal, critic)``."""
    replies = (script([("calculator", {"expression": "24*30"})], "총액은 $720입니다. (The total is $720.)", native)
               + script([("lookup", {"topic": "배송"})], PLAN_ANSWER, native))
    agent = ChatAgent(default_tools(), ScriptedModel(replies, native_tools=native))   # refine chats with it
    agent.reset(PLAN_GOAL)
    critic = ScriptedModel(['{"ok": false, "feedback": "The goal also asks whether shipping is free; look up the '
                            'shipping terms and say so."}', 'Both parts are answered now.\n```json\n{"ok": true}\n```'])
    return agent, critic


# ---------------------------------------------------------------- a scripted team
def _said(text: str, *calls, usage: tuple[int, int]) -> dict:   # usage: MADE-UP counts, to show how they add up
    return {"text": text, "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},   # ids: unique per demo
            "tool_calls": [{"id": f"call_{usage[0]}_{i}", "name": t, "args": a} for i, (t, a) in enumerate(calls)]}


TEAM_GOAL = "부품 25개를 주문하면 총액은 얼마이고, 배송비가 드나요? (What do 25 units cost, and is shipping charged?)"
RESEARCH_TASK = "부품 단가와 배송비 조건을 찾아 주세요. (Find the unit price and the shipping terms.)"
TOTAL_TASK = "개당 $24인 부품 25개의 총액을 계산해 주세요. (Work out the total for 25 units at $24 each.)"


def team_demo() -> tuple[str, Orchestrator, dict]:
    """``(goal, orchestrator, agent_tools)``: the orchestrator asks a researcher (lookup, search_docs) for the unit
    price, an accountant (calculator) for the total, then answers. All scripted; the token counts are made up."""
    researcher = as_tool("researcher", lambda: Agent({"lookup": lookup, "search_docs": search_docs}, ScriptedModel([
        _said("", ("lookup", {"topic": "단가"}), usage=(305, 22)),
        _said("", ("lookup", {"topic": "배송"}), usage=(351, 20)),
        _said("단가는 개당 $24, $500 이상 주문은 배송비 무료입니다. (Unit price $24; orders of $500+ ship free.)",
              usage=(398, 31))], native_tools=True)),
        "Ask the researcher to find facts (prices, policies) in the company's knowledge base.")
    accountant = as_tool("accountant", lambda: Agent({"calculator": calculator}, ScriptedModel([
        _said("", ("calculator", {"expression": "25*24"}), usage=(280, 18)),
        _said("총액은 $600입니다 (25 × $24). (The total is $600.)", usage=(312, 25))], native_tools=True)),
        "Ask the accountant to work out a total, or any other arithmetic, step by step.")
    team = {"researcher": researcher, "accountant": accountant}
    model = ScriptedModel([
        _said("먼저 단가를 알아봅니다.", ("researcher", {"task": RESEARCH_TASK}), usage=(412, 41)),
        _said("이제 총액을 계산합니다.", ("accountant", {"task": TOTAL_TASK}), usage=(486, 37)),
        _said("총액은 $600입니다 (25 × $24). $500 이상이라 배송비는 무료입니다. (The total is $600; shipping is "
              "free on orders of $500 or more.)", usage=(548, 52))], native_tools=True)
    return TEAM_GOAL, Orchestrator(team, model, max_steps=4), team


# ---------------------------------------------------------------- measuring retrieval: recall@k
def load_questions() -> list[dict]:
    """The labelled questions about the course workspace (notebooks/workspace), in English and Korean."""
    return json.loads((Path(__file__).parent.parent / "data" / "retrieval_questions.json").read_bytes())["questions"]


def recall_at_k(index: Index, questions: list[dict], k: int = 3) -> dict:
    """The share of questions answered among the top ``k`` hits, overall and per language, and the misses. A
    hit answers a question when it cites lines of a file in the range a person marked as answering it (one
    place, or a few equally good ones): with one right place per question this is recall@k."""
    found = [(q, any(h.path == a["path"] and h.start_line <= a["lines"][1] and a["lines"][0] <= h.end_line
                     for h in index.search(q["question"], k) for a in q["answers"])) for q in questions]
    result: dict = {"k": k, "questions": len(found)}
    for lang in ["overall", *sorted({q["lang"] for q in questions})]:
        mine = [ok for q, ok in found if lang in ("overall", q["lang"])]
        result[lang] = round(sum(mine) / len(mine), 3) if mine else 0.0
    result["missed"] = [q["question"] for q, ok in found if not ok]
    return result


# ---------------------------------------------------------------- strict schemas (lesson 11b section 3, exercise 11.5)
STRICT_KEEP = {"type", "enum", "const", "anyOf", "description", "title", "items", "properties"}
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}


def strict_schema(schema: dict) -> dict:
    """The same arguments as a schema both providers' strict modes take, as a new schema: every object closed
    (``additionalProperties: false``) with every property required, an optional one made nullable (null means
    "left out"); keywords strict mode cannot enforce moved into the description as JSON, for the model to read."""
    if not isinstance(schema, dict) or not any(key in schema for key in ("type", "enum", "const", "anyOf")):
        raise ValueError(f"not a schema that says which values it allows (type, enum, const or anyOf): {schema!r:.60}")
    out, moved = {}, {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf"):
            out[key] = strict_schema(value) if key == "items" else [strict_schema(sub) for sub in value]
        elif key in STRICT_KEEP or (key == "minItems" and value in (0, 1)) or (
                key == "format" and value in STRICT_FORMATS):
            out[key] = copy.deepcopy(value)
        elif key not in ("required", "additionalProperties"):   # those two are set below, for an object
            moved[key] = value
    if moved:
        note = json.dumps(moved, ensure_ascii=False)
        out["description"] = f"{out['description']}\n\n{note}" if out.get("description") else note
    if "object" in (schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]) \
            or "properties" in schema:
        if not schema.get("properties"):
            raise ValueError("an object without properties cannot be strict: no other keys are allowed, so it "
                             "could only be {}; list its properties")
        required = schema.get("required") or []
        out["properties"] = {name: sub if name in required else _nullable(sub)
                             for name, sub in out["properties"].items()}
        out["required"], out["additionalProperties"] = list(out["properties"]), False
    return out


def _nullable(schema: dict) -> dict:
    if "anyOf" in schema:
        return {**schema, "anyOf": schema["anyOf"] + [{"type": "null"}] * ({"type": "null"} not in schema["anyOf"])}
    if "type" not in schema and "enum" not in schema:
        return {"anyOf": [schema, {"type": "null"}]}   # a const alone
    out = dict(schema)   # a type and an enum together (pydantic writes both for a Literal): null in each
    if "type" in out:
        kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = kinds + ["null"] * ("null" not in kinds)
    if "enum" in out:
        out["enum"] = out["enum"] + [None] * (None not in out["enum"])
    return out
