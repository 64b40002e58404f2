"""The stand-in's prompt cache for the Messages API (``cache_control``), so that usage shows what caching does.

As platform.claude.com/docs/en/build-with-claude/prompt-caching describes it: a cache entry is the whole prefix,
tools then system then messages, up to and including a block marked ``cache_control``; a top-level
``cache_control`` (automatic caching) marks the last block and takes one of the four marks a request may have;
a prefix shorter than the model's minimum is sent uncached, with no error (here 1,024 tokens, Sonnet 4.5's and
4.6's figure; some models need 4,096); a marked block finds an earlier entry at most 20 positions back, itself
the first. Usage then splits the input as the SDK's ``types/usage.py`` names it: ``cache_read_input_tokens``
(the longest prefix found), ``cache_creation_input_tokens`` (written now, up to the last marked block) and
``input_tokens`` (the rest).

Tokens are the stand-in's estimate (four characters each). Left out: expiry (5 minutes, or ``ttl: "1h"``), the
per-TTL breakdown ``usage.cache_creation``, settings that invalidate part of the cache (``tool_choice``,
thinking, effort) and a run of ``tool_use`` or ``tool_result`` blocks counted as one look-back position.

OpenAI's cache (both APIs) is automatic, as developers.openai.com/api/docs/guides/prompt-caching describes it: a
prompt of 1,024 tokens or more is cached whole; a later one that starts the same way (tools, instructions, then
messages or input items, the same model) reads the longest such prefix, counted in steps of 128 tokens from
1,024, as ``cached_tokens`` *inside* the input count. Writes are free before the GPT-5.6 models (the default,
gpt-5.4-mini, is one): the stand-in reports ``cache_write_tokens`` as 0 and leaves out ``prompt_cache_key``,
retention and explicit breakpoints.
"""
from __future__ import annotations

import hashlib
import json

from .common import _Rejected

MINIMUM = 1024     # tokens: a shorter prefix is not cached
LOOKBACK = 20      # positions where an earlier entry is still found, the marked block itself the first
MAX_MARKS = 4
STEP = 128         # OpenAI: cache hits come in steps of 128 tokens, from MINIMUM


def _marked_ok(mark, where: str) -> None:
    if not (isinstance(mark, dict) and mark.get("type") == "ephemeral" and set(mark) <= {"type", "ttl"}
            and mark.get("ttl", "5m") in ("5m", "1h")):
        raise _Rejected(f"{where}.cache_control: expected {{\"type\": \"ephemeral\"}}, with an optional "
                        f"\"ttl\" of \"5m\" or \"1h\", not {json.dumps(mark)[:80]}")


def _blocks(body: dict) -> list[tuple[str, dict | None]]:
    """The prompt in the order it is cached, one entry per block: its text without the mark (the key, and its
    size), and its mark (None if it has none)."""
    found = []

    def add(block, where, kind):
        mark = block.get("cache_control") if isinstance(block, dict) else None
        if mark is not None:
            _marked_ok(mark, where)
        plain = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else \
            {"type": "text", "text": block}   # a string is read as one text block
        found.append((f"{kind}:{json.dumps(plain, ensure_ascii=False, sort_keys=True)}", mark))
    for i, tool in enumerate(body.get("tools") or []):
        add(tool, f"tools.{i}", "tool")
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else [system] if system else []):
        add(block, f"system.{i}", "system")
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for i, block in enumerate(content if isinstance(content, list) else [content]):   # the role's framing:
            add(block, f"messages.{m}.content.{i}", f'{{"role": "{message.get("role")}", "content": [' if i == 0
                else ",")   # counted with the message's first block, so the blocks' sizes add up to the prompt
    return found


def _marks(blocks: list, auto) -> list[int]:
    """The positions of the marked blocks, in order; automatic caching (a top-level mark) marks the last."""
    return sorted({i for i, (_, mark) in enumerate(blocks) if mark is not None}
                  | ({len(blocks) - 1} if auto is not None and blocks else set()))


def problem(body: dict) -> None:
    """A ``_Rejected`` for a malformed mark or more than four (the API's 400, in its words). Automatic caching
    takes one of the four, unless the last block already has the same mark; a different one is refused."""
    blocks, auto = _blocks(body), body.get("cache_control")
    if auto is not None:
        _marked_ok(auto, "body")
        last = blocks[-1][1] if blocks else None
        if last is not None and last.get("ttl", "5m") != auto.get("ttl", "5m"):   # paraphrased: words not found
            raise _Rejected("cache_control: the top-level cache_control and the last block's differ in ttl")
    marks = len(_marks(blocks, auto))
    if marks > MAX_MARKS:
        raise _Rejected(f"A maximum of {MAX_MARKS} blocks with cache_control may be provided. Found {marks}.")


def _prefixes(seed: str, texts: list[str]) -> tuple[list[str], list[int]]:
    """For each position, the key of the prefix up to and including it and that prefix's size in tokens (four
    characters each, a separator with each); ``seed`` keeps apart prompts that never share entries (models)."""
    digest, size, keys, sizes = hashlib.sha256(seed.encode("utf-8", "surrogatepass")), 0, [], []
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")   # half an emoji is text like any other
        size += len(text) + 2
        keys.append(digest.hexdigest())
        sizes.append(size // 4)
    return keys, sizes


class PromptCache:
    """The entries written so far (one server's, for every model apart), and each request's usage split."""

    def __init__(self):
        self.entries: set[str] = set()

    def split(self, body: dict, input_tokens: int) -> dict | None:
        """``input_tokens`` (the whole prompt's estimate) as the three counts the API reports; None if nothing
        is marked (the real API then reports the cache counts as 0: the stand-in leaves them out)."""
        blocks = _blocks(body)
        marks = _marks(blocks, body.get("cache_control"))
        if not marks:
            return None
        keys, sizes = _prefixes(str(body.get("model")), [text for text, _ in blocks])
        read = max((sizes[q] for m in marks for q in range(m, max(-1, m - LOOKBACK), -1)
                    if keys[q] in self.entries), default=0)
        kept = [m for m in marks if sizes[m] >= MINIMUM]
        self.entries.update(keys[m] for m in kept)
        created = max(0, sizes[kept[-1]] - read) if kept else 0
        return {"input_tokens": max(0, input_tokens - read - created), "cache_creation_input_tokens": created,
                "cache_read_input_tokens": read}

    def automatic(self, body: dict, input_tokens: int) -> int:
        """OpenAI's ``cached_tokens`` for this request (Chat Completions or Responses), its prompt then cached."""
        head = {k: body.get(k) for k in ("model", "tools", "instructions", "previous_response_id")}   # stored: apart
        items = body.get("messages") or body.get("input") or []
        items = [head] + (items if isinstance(items, list) else [items])   # input: a list, or one string
        keys, sizes = _prefixes("openai", [json.dumps(i, ensure_ascii=False, sort_keys=True) for i in items])
        read = min(max((n for key, n in zip(keys, sizes) if key in self.entries), default=0), input_tokens)
        if input_tokens >= MINIMUM:
            self.entries.update(keys)
        return 0 if read < MINIMUM else MINIMUM + (read - MINIMUM) // STEP * STEP
