"""The stand-in's Anthropic Messages API (``POST /v1/messages``): the checks the real API makes, in its words
where we found them, ``tool_choice`` as it reads it, signed thinking blocks, and a reply in its shape.

Thinking blocks are signed for the request that produced them: ``Issued`` remembers each block it issued
with the system prompt, tools and messages before it, and refuses one that comes back altered, or in a
conversation that did not only grow since. One check is stricter than Anthropic's: user and assistant turns
must alternate (the API may merge neighbours), so an adapter that forgets to merge them is caught.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re

from . import caching
from .common import _args, _cut, _refusal, _Rejected

_THINKING = ("thinking", "redacted_thinking")
_ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_EXPECTED_THINKING = (
    "Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final "
    "`assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and "
    "`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this "
    "requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
_BOUND = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
          "block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\". That setting "
          "requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.")


def check(body: dict) -> str | None:
    """The Messages API's own checks, after the ones every API makes: a sentence, or a ``_Rejected`` raised."""
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens is required"
    if "temperature" in body and body.get("thinking"):
        return "temperature cannot be combined with thinking"
    return _check_anthropic(body["messages"]) or _anthropic_rules(body) or caching.problem(body)


BINDING_BETA = "thinking-binding-controls-2026-08-01"


def beta_problem(body: dict, headers) -> _Rejected | None:
    """``thinking.block_binding`` is a beta field: without its ``anthropic-beta`` value the API does not know it
    (the message is paraphrased, in the style of the API's unknown-field errors)."""
    thinking = body.get("thinking") if isinstance(body.get("thinking"), dict) else {}
    if "block_binding" in thinking and BINDING_BETA not in headers.get("anthropic-beta", ""):
        return _Rejected(f"thinking.{thinking.get('type')}.block_binding: Extra inputs are not permitted (this field "
                         f"needs `anthropic-beta: {BINDING_BETA}`)")
    return None


def choice(choice, body: dict) -> tuple[str | None, str | None, bool]:
    """``tool_choice`` as (its type, the tool it names, whether it forces a call), or a ``_Rejected``."""
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise _Rejected(f"tool_choice: Input tag {kind!r} found using 'type' does not match any of the "
                        "expected tags: 'auto', 'any', 'tool', 'none'")
    name = choice.get("name") if kind == "tool" else None
    if kind == "tool" and not isinstance(name, str):
        raise _Rejected("tool_choice.tool.name: Field required")
    if kind in ("any", "tool") and (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
        raise _Rejected("Thinking may not be enabled when tool_choice forces tool use.")
    return kind, name, kind in ("any", "tool")


def _check_anthropic(messages: list[dict]) -> str | None:
    asked: list[str] = []   # tool_use ids of the previous assistant turn
    for i, m in enumerate(messages):
        if m.get("role") != ("user" if i % 2 == 0 else "assistant"):
            return f"messages[{i}]: roles must alternate user/assistant, starting with user"
        blocks = m["content"] if isinstance(m.get("content"), list) else []
        if m["role"] == "assistant":
            asked = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            continue
        answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if set(answered) != set(asked) or len(answered) != len(asked):
            ours = (f"messages[{i}]: the tool_use ids {sorted(set(asked))} need exactly one tool_result each "
                    f"in the next user message, got {answered}" if asked else
                    f"messages[{i}]: tool_result {answered} answers no tool_use: "
                    f"{'no message comes before it' if i == 0 else 'the assistant message before it has none'}")
            raise _Rejected(_unanswered(i, asked, answered, blocks) or ours, problem=ours)
    return None   # (a user message is always followed by an assistant one, which sets ``asked`` afresh)


def _unanswered(i: int, asked: list[str], answered: list, blocks: list[dict]) -> str | None:
    """The real API's words for a tool_use without its tool_result, or a tool_result without its tool_use."""
    missing = [a for a in asked if a not in answered]
    if missing:
        return (f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in "
                "the next message.")
    for k, b in enumerate(blocks):
        if b.get("type") == "tool_result" and b.get("tool_use_id") not in asked:
            return (f"messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message.")
    return None   # a result given twice: we found no real wording for that, so the sentence stays ours


def _anthropic_rules(body: dict) -> None:
    for k, tool in enumerate(body.get("tools") or []):
        if tool.get("type", "custom") != "custom":   # a server tool, such as web search
            continue
        if not (isinstance(tool.get("name"), str) and _ANTHROPIC_NAME.fullmatch(tool["name"])):
            raise _Rejected(f"tools.{k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        schema = tool.get("input_schema")   # the two messages below are paraphrased, in the API's style
        if not isinstance(schema, dict):
            raise _Rejected(f"tools.{k}.custom.input_schema: Input should be a valid dictionary")
        if schema.get("type") != "object":
            said = "Input should be 'object'" if "type" in schema else "Field required"
            raise _Rejected(f"tools.{k}.custom.input_schema.type: {said}")
    messages = body["messages"]
    for i, m in enumerate(messages):
        if not m.get("content"):
            raise _Rejected(f"messages.{i}: all messages must have non-empty content except for the optional "
                            "final assistant message")
        blocks = m["content"] if isinstance(m["content"], list) else []
        if any(b.get("type") == "text" and not b.get("text") for b in blocks):
            raise _Rejected("messages: text content blocks must be non-empty")
        before = messages[i - 1]["content"] if i and isinstance(messages[i - 1]["content"], list) else []
        uses = sum(b.get("type") == "tool_use" for b in before)
        first = next((j for j, b in enumerate(blocks) if b.get("type") != "tool_result"), len(blocks))
        if m["role"] == "user" and first < uses:
            raise _Rejected(f"messages.{i}: Did not find {uses - first} `tool_result` block(s) at the beginning "
                            "of this message. Messages following `tool_use` blocks must begin with a matching "
                            "number of `tool_result` blocks.")


class Issued:
    """What one server issued, checked when it comes back: thinking blocks, each with what it was signed for; and
    paused turns (``pause_turn``), the only assistant message a conversation may end with: one is sent back,
    whole, to be continued (platform.claude.com/docs/en/build-with-claude/handling-stop-reasons)."""

    def __init__(self):
        self.issued: dict[str, tuple] = {}   # signature (or data) -> (block, its prefix, blocks before it)
        self.tool_ids: set[str] = set()      # tool_use ids issued together with thinking blocks
        self.paused: set[str] = set()        # digests of the paused turns, each as its continuation must send it

    def remember(self, body: dict, reply: dict) -> None:
        content, last = reply["content"], body["messages"][-1]
        if reply["stop_reason"] == "pause_turn":   # a continued turn grows: the blocks so far, then these
            self.paused.add(_digest((_blocks(last["content"]) if last.get("role") == "assistant" else []) + content))
        thoughts = [b for b in content if b.get("type") in _THINKING]
        for k, block in enumerate(thoughts):
            self.issued[_key(block)] = (dict(block), _prefix(body), _digest([_key(b) for b in thoughts[:k]]))
        if thoughts:
            self.tool_ids.update(b["id"] for b in content if b.get("type") == "tool_use")

    def check(self, body: dict) -> str | None:
        messages, now = body["messages"], _prefix(body)
        if messages[-1].get("role") == "assistant" and _digest(_blocks(messages[-1]["content"])) not in self.paused:
            raise _Rejected("This model does not support assistant message prefill. The conversation must end "
                            "with a user message.")
        binding = (body.get("thinking") or {}).get("block_binding") or {}
        final = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        for i, m in enumerate(messages):
            blocks = m["content"] if m.get("role") == "assistant" and isinstance(m.get("content"), list) else []
            thought = any(b.get("type") == "tool_use" and b.get("id") in self.tool_ids for b in blocks)
            if i == final and thought and blocks[0].get("type") not in _THINKING:
                return f"messages.{i}.content.0.type: " + _EXPECTED_THINKING.format(blocks[0].get("type"))
            seen: list[str] = []   # the thinking blocks before this one in the message
            for j, b in enumerate(blocks):
                if b.get("type") not in _THINKING:
                    continue
                issued = self.issued.get(_key(b))
                if issued is None or any(b.get(k) != v for k, v in issued[0].items()):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                changed = _what_changed(issued, now, i, _digest(seen))
                if changed and binding.get("prefix_mismatch_behavior") != "drop_block":
                    return f"messages.{i}.content.{j}: {_BOUND} {changed}"
                seen.append(_key(b))
        return None


def _blocks(content) -> list:   # the stand-in's own, not the adapter's: a shared mistake would go unseen
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _key(block: dict) -> str:
    return block.get("signature") if block.get("type") == "thinking" else block.get("data")


def _digest(value) -> str:
    """A fingerprint of ``value``, without the ``cache_control`` markers the real prefix check leaves out."""
    plain = json.loads(json.dumps(value), object_hook=lambda d: {k: v for k, v in d.items() if k != "cache_control"})
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()


def _prefix(body: dict) -> tuple:
    """What a thinking block is bound to: the system prompt, the tools and each message before it."""
    return _digest(body.get("system")), _digest(body.get("tools")), [_digest(m) for m in body["messages"]]


def _what_changed(issued: tuple, now: tuple, index: int, before: str) -> str | None:
    (system, tools, messages), blocks_before = issued[1], issued[2]
    if now[0] != system:   # this sentence is the real API's; the three below are paraphrased
        return "The `system` prompt differs from the one this block was created with."
    if now[1] != tools:
        return "The `tools` differ from the ones this block was created with."
    for k in range(max(index, len(messages))):
        if k >= min(index, len(messages)) or now[2][k] != messages[k]:
            return f"`messages.{k}` differs from the one this block was created with."
    return None if before == blocks_before else "A thinking block before this one was left out or moved."


def _signature(body: dict, number: int, kind: str, text: str) -> str:
    """Deterministic, so a notebook that prints one stays reproducible: the block, the request, its prefix."""
    seed = f"{_digest(_prefix(body))}|{number}|{kind}|{text}".encode("utf-8", "surrogatepass")   # half an emoji too
    return base64.b64encode(hashlib.sha256(seed).digest() + hashlib.sha256(seed[::-1]).digest()).decode()


def reply(body, turn, usage, n) -> dict:
    """The turn as a Messages API response: thinking blocks first, then text, then the tool calls."""
    content = []
    if turn.get("thinking") is not None:
        content.append({"type": "thinking", "thinking": turn["thinking"],
                        "signature": _signature(body, n, "thinking", turn["thinking"])})
    if turn.get("redacted_thinking"):
        content.append({"type": "redacted_thinking", "data": _signature(body, n, "redacted_thinking", "")})
    content += [dict(b) for b in turn.get("blocks", [])]
    content += [{"type": "text", "text": turn["text"]}] if turn.get("text") else []
    # A call cut off by max_tokens ends the content as an incomplete tool_use block (its input: empty here).
    content += [{"type": "tool_use", "id": f"toolu_standin_{n:02d}_{k}", "name": c["name"], "input": _args(c)}
                for k, c in enumerate(turn.get("tool_calls", []), 1)]
    stop = turn.get("stop_reason") or ("refusal" if turn.get("refusal") else "max_tokens" if _cut(turn)
                                       else "tool_use" if turn.get("tool_calls") else "end_turn")
    refusal = {"type": "refusal", "category": None, "explanation": _refusal(turn)}
    return {"id": f"msg_standin_{n:02d}", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": stop, "stop_sequence": None,
            **({"stop_details": refusal} if turn.get("refusal") else {}), "usage": usage}
