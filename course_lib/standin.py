"""Stage 08 — a local stand-in server for the model APIs, so stage 08 runs with no key and no network.

Adds: ``StandInServer``, a stdlib HTTP server on 127.0.0.1 (a random free port) speaking the Anthropic
Messages API (``POST /v1/messages``), OpenAI Chat Completions (``POST /v1/chat/completions``) and Ollama's
``POST /api/chat``. It is not a model: it answers from a script of turns, one per request, and checks each
request as the real API would, refusing a broken one with that API's status, error shape and (where we
found them) words: a key is sent; each tool call is answered by its id, results first; no empty message,
no assistant prefill; valid tool names and schemas; thinking blocks come back unchanged, in a conversation
that has only grown since (it remembers each block it issued and the request it was for). One check is
stricter than Anthropic's: user and assistant turns must alternate (the API may merge neighbours), so an
adapter that forgets to merge them is caught. A body it cannot read gets a 411 without a length, a 413 over
32 MB, a 400 unless it is UTF-8 JSON nested at most 128 deep (for Anthropic, also no half emoji escaped);
a bug in the stand-in gets a 500: always in the API's shape. Point the real SDKs at it with ``base_url``:

    with StandInServer([{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]},
                        {"text": "Seven units cost $168."}]) as server:
        model = AnthropicModel(base_url=server.url, api_key="stand-in")

A turn is a dict (a plain string is a text turn): ``text``; ``tool_calls`` ``[{"name", "args"}]`` (``args``
as a string: a call cut off mid-way, sent as OpenAI's ``arguments`` text, as empty input elsewhere);
``usage``; ``thinking`` (text, ``""`` if omitted) and ``redacted_thinking: True``: signed Anthropic blocks
that open the reply; ``blocks``: more Anthropic blocks, sent as they are; ``stop_reason``,
``finish_reason``, ``done_reason`` (Anthropic, OpenAI, Ollama), verbatim; ``refusal`` (text, or ``True``;
OpenAI's ``message.refusal``, Anthropic's ``stop_reason: "refusal"`` with ``stop_details``). An error turn:
``{"status": 429, "message", "type", "code", "param", "retry_after": seconds}``. Unscripted usage is an
estimate, a token per four characters. ``requests`` keeps every request body, ``problems`` a sentence per
rule broken (for the tool-result checks the stand-in's own plainer one; the reply has the API's words).

``tool_choice`` is checked (a known kind, naming a tool that was sent; Anthropic refuses a forced one while
thinking is on) and honoured: a forced reply has no text before its call, and a scripted turn that
``tool_choice`` rules out is the script's error (500), since the real API would not have produced it.

Leaves out: streaming (``"stream": true`` gets a 400 saying so), and any intelligence: the replies are
whatever the script says. Error texts we could not find are paraphrased, and a comment says so.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The error ``type`` per status (Anthropic's "HTTP errors" page); other 4xx are invalid_request_error.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error"}
_OPENAI_TYPES = {401: ("invalid_request_error", "invalid_api_key"), 429: ("requests", "rate_limit_exceeded")}
_ID_HEADER = {"anthropic": "request-id", "openai": "x-request-id"}
_THINKING = ("thinking", "redacted_thinking")
_SORRY = "I'm sorry, but I can't help with that."   # OpenAI's refusal text when the script gives none
_ANTHROPIC_NAME, _OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}"), re.compile(r"[a-zA-Z0-9_-]+")
_EXPECTED_THINKING = (
    "Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final "
    "`assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and "
    "`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this "
    "requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
_BOUND = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
          "block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\". That setting "
          "requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.")
_NO_STREAM = {   # our own words, in each API's shape (OpenAI's after its "this model cannot stream" error)
    "anthropic": ("stream: the local stand-in server does not stream; send the request without `stream` "
                  "(messages.create, not messages.stream)", {}),
    "openai": ("Unsupported value: 'stream' does not support true on the local stand-in server, which does not "
               "stream. Supported values are: false.", {"param": "stream", "code": "unsupported_value"}),
    "ollama": ("the local stand-in server does not stream: send \"stream\": false (Ollama streams unless told "
               "not to)", {})}


class _Rejected(Exception):
    """A request the real API refuses: ``message`` in that API's words, ``problem`` for ``server.problems``."""

    def __init__(self, message: str, *, problem: str | None = None, param: str | None = None, code=None, status=400):
        super().__init__(message)
        self.message, self.problem, self.param, self.code = message, problem or message, param, code
        self.status = status   # 401 without a key; 404, 411 or 413 for a request the stand-in cannot read


class _Server(ThreadingHTTPServer):
    request_queue_size = 64   # the listen backlog: the default of 5 drops connections when 20 clients call

    def handle_error(self, request, client_address) -> None:   # the handler answers every error it can: what
        pass   # reaches here is a client that hung up mid-reply, not worth a traceback in a notebook


class StandInServer:
    """Serve ``turns`` in order to whichever SDK calls; a context manager that starts and stops the server."""

    def __init__(self, turns):
        self.turns = [_turn(t, k) for k, t in enumerate(turns)]
        self._scripted = len(self.turns)
        self.requests: list[dict] = []   # {"api": ..., "body": {...}} per request, in order
        self.problems: list[str] = []
        self._issued: dict[str, tuple] = {}   # signature (or data) -> (block, its prefix, blocks before it)
        self._thought_ids: set[str] = set()   # tool_use ids issued together with thinking blocks
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> "StandInServer":
        handler = type("Handler", (_Handler,), {"standin": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        # A short poll interval: stop() waits for the serving loop to notice, and notebooks stop it often.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    __enter__ = start

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL for Anthropic and Ollama; OpenAI's SDK wants ``url + "/v1"``."""
        if not self._server:
            raise RuntimeError("the stand-in server is not running: use it in a `with` block")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def remaining(self) -> int:
        return len(self.turns)

    # -- one request ----------------------------------------------------------------------------------
    def answer(self, api: str, body: dict, headers) -> tuple[int, dict, dict]:
        with self._lock:
            self.requests.append({"api": api, "body": body})
            number = len(self.requests)
            rid = f"req_standin_{number:02d}"
            rejected = _auth_problem(api, headers) or self._check_safely(api, body)
            if rejected:   # a refused request uses up no turn
                self.problems.append(rejected.problem)
                return _error(api, rejected.status, rejected.message, rid, code=rejected.code, param=rejected.param)
            if not self.turns:   # the script's fault, not the network's: say so, and tell the SDK not to retry
                status, body, extra = _error(api, 500, f"the stand-in's script ran out: it had {self._scripted} "
                                             f"turn(s) and request {number} asked for another; add turns to "
                                             "the script", rid)
                return status, body, {**extra, "x-should-retry": "false"}
            turn = self.turns.pop(0)
            contradiction = _against_choice(_choice(api, body), turn)
            if contradiction:   # the script's fault too: the real API would have honoured tool_choice
                status, body, extra = _error(api, 500, f"turn {number} of the stand-in's script {contradiction}", rid)
                return status, body, {**extra, "x-should-retry": "false"}
            if (_choice(api, body) or ("",))[0] == "forced":   # a forced call comes with no text before it
                turn = {k: v for k, v in turn.items() if k != "text"}
            if "status" in turn:
                return _error(api, turn["status"], turn.get("message", f"scripted error {turn['status']}"), rid,
                              kind=turn.get("type"), code=turn.get("code"), param=turn.get("param"),
                              retry_after=turn.get("retry_after"))
            usage = turn.get("usage") or {"input_tokens": len(json.dumps(body, ensure_ascii=False)) // 4,
                                          "output_tokens": max(1, len(json.dumps(turn, ensure_ascii=False)) // 4)}
            reply = _FORMATS[api](body, turn, usage, number)
            if api == "anthropic":
                self._remember(body, reply["content"])
        return 200, reply, {_ID_HEADER[api]: rid} if api in _ID_HEADER else {}

    def _check_safely(self, api: str, body: dict) -> _Rejected | None:
        try:
            problem = _check(api, body) or (self._check_thinking(body) if api == "anthropic" else None)
        except _Rejected as rejected:
            return rejected
        except (AttributeError, KeyError, TypeError, IndexError) as e:   # a message or block of the wrong shape
            problem = f"malformed request ({type(e).__name__}): every message and content block must be an object"
        return _Rejected(problem) if problem else None

    # -- thinking blocks: signed for the request that produced them, checked when they come back ----------
    def _remember(self, body: dict, content: list[dict]) -> None:
        thoughts = [b for b in content if b.get("type") in _THINKING]
        for k, block in enumerate(thoughts):
            self._issued[_key(block)] = (dict(block), _prefix(body), _digest([_key(b) for b in thoughts[:k]]))
        if thoughts:
            self._thought_ids.update(b["id"] for b in content if b.get("type") == "tool_use")

    def _check_thinking(self, body: dict) -> str | None:
        messages, now = body["messages"], _prefix(body)
        binding = (body.get("thinking") or {}).get("block_binding") or {}
        final = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        for i, m in enumerate(messages):
            blocks = m["content"] if m.get("role") == "assistant" and isinstance(m.get("content"), list) else []
            thought = any(b.get("type") == "tool_use" and b.get("id") in self._thought_ids for b in blocks)
            if i == final and thought and blocks[0].get("type") not in _THINKING:
                return f"messages.{i}.content.0.type: " + _EXPECTED_THINKING.format(blocks[0].get("type"))
            seen: list[str] = []   # the thinking blocks before this one in the message
            for j, b in enumerate(blocks):
                if b.get("type") not in _THINKING:
                    continue
                issued = self._issued.get(_key(b))
                if issued is None or any(b.get(k) != v for k, v in issued[0].items()):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                changed = _what_changed(issued, now, i, _digest(seen))
                if changed and binding.get("prefix_mismatch_behavior") != "drop_block":
                    return f"messages.{i}.content.{j}: {_BOUND} {changed}"
                seen.append(_key(b))
        return None


_TURN_KEYS = {"text", "tool_calls", "usage", "thinking", "redacted_thinking", "blocks", "stop_reason",
              "finish_reason", "done_reason", "refusal"}
_ERROR_KEYS = {"status", "message", "type", "code", "param", "retry_after"}


def _turn(turn, k: int) -> dict:
    """A scripted turn, checked now: a misspelt key would otherwise pass silently as an empty reply."""
    if isinstance(turn, str):
        return {"text": turn}
    if not isinstance(turn, dict):
        raise ValueError(f"turn {k} must be text or a dict, not {type(turn).__name__}")
    allowed = _ERROR_KEYS if "status" in turn else _TURN_KEYS
    unknown = sorted(set(turn) - allowed)
    if unknown:
        raise ValueError(f"turn {k} has unknown key(s) {', '.join(map(repr, unknown))}; a turn may have "
                         f"{', '.join(sorted(allowed))}")
    for call in turn.get("tool_calls", []):
        if not isinstance(call, dict) or set(call) - {"name", "args"} or "name" not in call:
            raise ValueError(f"turn {k}: each tool call is {{\"name\": ..., \"args\": {{...}}}}, not {call!r}")
    return dict(turn)


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
    seed = f"{_digest(_prefix(body))}|{number}|{kind}|{text}".encode()
    return base64.b64encode(hashlib.sha256(seed).digest() + hashlib.sha256(seed[::-1]).digest()).decode()


def _auth_problem(api: str, headers) -> _Rejected | None:
    bearer = headers.get("authorization", "").startswith("Bearer ")
    if api == "anthropic" and not (headers.get("x-api-key") or bearer):   # the SDK sends either
        return _Rejected("no API key was sent (x-api-key or Authorization: Bearer header)", status=401)
    if api == "openai" and not bearer:
        return _Rejected("no API key was sent (Authorization: Bearer header)", status=401)
    return None


def _check(api: str, body: dict) -> str | None:
    """The checks a real API makes: a sentence, or None; a ``_Rejected`` raised carries the API's own words."""
    if body.get("stream", api == "ollama"):   # Ollama streams unless told not to
        message, details = _NO_STREAM[api]
        raise _Rejected(message, **details)
    if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return "the request needs a model name and a non-empty messages list"
    _choice(api, body)   # tool_choice: a known kind, naming a tool that was sent; forced only without thinking
    if api == "anthropic":
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens is required"
        if "temperature" in body and body.get("thinking"):
            return "temperature cannot be combined with thinking"
        return _check_anthropic(body["messages"]) or _anthropic_rules(body)
    if api == "openai":
        return _check_openai(body["messages"]) or _openai_tools(body.get("tools") or [])
    if any(isinstance((c.get("function") or {}).get("arguments"), str)
           for m in body["messages"] for c in m.get("tool_calls") or []):
        return ("json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function."
                "arguments of type api.ToolCallFunctionArguments")
    return None


def _choice(api: str, body: dict) -> tuple[str, str | None] | None:
    """``tool_choice`` as (``auto`` | ``none`` | ``forced``, the tool it names), after the API's checks.
    Ollama's /api/chat has no tool_choice. Only the thinking and OpenAI's no-tools sentences are the APIs'
    own words; the others are paraphrased in each API's style."""
    choice = body.get("tool_choice")
    if choice is None or api == "ollama":
        return None
    tools = body.get("tools") or []
    names = [t.get("name") if api == "anthropic" else (t.get("function") or {}).get("name") for t in tools]
    if api == "anthropic":
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none"):
            raise _Rejected(f"tool_choice: Input tag {kind!r} found using 'type' does not match any of the "
                            "expected tags: 'auto', 'any', 'tool', 'none'")
        name = choice.get("name") if kind == "tool" else None
        if kind == "tool" and not isinstance(name, str):
            raise _Rejected("tool_choice.tool.name: Field required")
        if kind in ("any", "tool") and (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
            raise _Rejected("Thinking may not be enabled when tool_choice forces tool use.")
        forced = kind in ("any", "tool")
    else:
        kind = choice if isinstance(choice, str) else "function" if isinstance(choice, dict) else None
        if not tools:
            raise _Rejected("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                            "specified.", param="tool_choice")
        if kind not in ("none", "auto", "required", "function"):
            raise _Rejected(f"Invalid value: {choice!r}. Supported values are: 'none', 'auto', and 'required'.",
                            param="tool_choice", code="invalid_value")
        name = (choice.get("function") or {}).get("name") if kind == "function" else None
        forced = kind in ("required", "function")
    if forced and (name is not None and name not in names or not names):
        raise _Rejected(f"tool_choice names the tool {name!r}, which is not among the tools sent" if name
                        else "tool_choice forces a tool call, but no tools were sent", param="tool_choice")
    return ("forced" if forced else kind, name)


def _against_choice(choice, turn: dict) -> str | None:   # what in a scripted turn tool_choice rules out
    calls = [c.get("name") for c in turn.get("tool_calls") or []]
    if not choice or "status" in turn:
        return None
    if choice[0] == "none" and calls:
        return f"calls {calls[0]!r}, but tool_choice is none: script a text reply"
    if choice[0] == "forced" and not calls:
        return "calls no tool, but tool_choice forces a tool call: script one"
    if choice[0] == "forced" and choice[1] and any(c != choice[1] for c in calls):
        return f"calls {calls[0]!r}, but tool_choice forces {choice[1]!r}: script that call"
    return None


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
                    f"in the next user message, got {answered}")
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
    if messages[-1].get("role") == "assistant":
        raise _Rejected("This model does not support assistant message prefill. The conversation must end "
                        "with a user message.")
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


def _check_openai(messages: list[dict]) -> str | None:
    waiting: list[str] = []   # tool_call ids still to be answered
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                ours = f"messages[{i}]: tool message for unknown tool_call_id {m.get('tool_call_id')!r}"
                raise _Rejected("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                                "message with 'tool_calls'.", param=f"messages.[{i}].role", problem=ours)
            waiting.remove(m["tool_call_id"])
            continue
        if waiting:
            break
        if m.get("role") == "assistant":
            waiting = [c["id"] for c in m.get("tool_calls") or []]
    else:
        i = None   # every message was read: unanswered calls, if any, are the last ones
    if waiting:
        ours = (f"messages[{i}]: tool calls {waiting} were not answered by role 'tool' messages" if i is not None
                else f"the last tool calls {waiting} were not answered by role 'tool' messages")
        raise _Rejected("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                        + ", ".join(waiting), problem=ours)
    return None


def _openai_tools(tools: list[dict]) -> None:
    for k, tool in enumerate(tools):
        name, where = (tool.get("function") or {}).get("name"), f"tools[{k}].function"
        if not (isinstance(name, str) and _OPENAI_NAME.fullmatch(name)):
            raise _Rejected(f"Invalid '{where}.name': string does not match pattern. Expected a string that "
                            "matches the pattern '^[a-zA-Z0-9_-]+$'.", param=f"{where}.name", code="invalid_value")
        context = _array_without_items(tool["function"].get("parameters"))
        if context is not None:
            raise _Rejected(f"Invalid schema for function '{name}': In context={context!r}, array schema "
                            "missing items.", param=f"{where}.parameters", code="invalid_function_parameters")


def _array_without_items(schema, path: tuple = ()) -> tuple | None:
    """Where in a JSON schema an array has no ``items`` (OpenAI refuses those), or None."""
    if not isinstance(schema, dict):
        return None
    kinds = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if "array" in kinds and "items" not in schema:
        return path
    inner = [(("properties", k), v) for k, v in (schema.get("properties") or {}).items()]
    inner.append((("items",), schema.get("items")))
    inner += [((key, n), v) for key in ("anyOf", "oneOf", "allOf") for n, v in enumerate(schema.get(key) or [])]
    return next((w for step, sub in inner if (w := _array_without_items(sub, path + step)) is not None), None)


def _error(api: str, status: int, message: str, rid: str | None = None, *, kind: str | None = None,
           code: str | None = None, param: str | None = None, retry_after=None) -> tuple[int, dict, dict]:
    """An error as each API sends it: its body, its request-id header and a retry hint."""
    if api == "ollama":
        body = {"error": message}
    elif api == "anthropic":
        kind = kind or _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
        body = {"type": "error", "error": {"type": kind, "message": message}, **({"request_id": rid} if rid else {})}
    else:
        fallback = ("server_error" if status >= 500 else "invalid_request_error", None)
        default, default_code = _OPENAI_TYPES.get(status, fallback)
        code = code if code or kind else default_code
        body = {"error": {"message": message, "type": kind or default, "param": param, "code": code}}
    headers = {_ID_HEADER[api]: rid} if rid and api in _ID_HEADER else {}
    if retry_after is not None:   # as the real APIs send it, in seconds (the SDKs also take a fraction)
        headers["retry-after"] = str(retry_after)
    elif status in (429, 500, 529):   # a stand-in shortcut both SDKs honour: retry after 10 ms, not seconds
        headers["retry-after-ms"] = "10"
    return status, body, headers


def _cut(turn: dict) -> bool:   # a tool call whose ``args`` are text was cut off by the token limit
    return any(isinstance(c.get("args"), str) for c in turn.get("tool_calls", []))


def _args(call: dict) -> dict:
    return {} if isinstance(call.get("args"), str) else call.get("args", {})


def _refusal(turn: dict) -> str | None:   # "refusal": "<text>", or True for a refusal without text
    return turn["refusal"] if isinstance(turn.get("refusal"), str) else None


def _anthropic(body, turn, usage, n) -> dict:
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


def _openai(body, turn, usage, n) -> dict:
    calls = [{"id": f"call_standin_{n:02d}_{k}", "type": "function", "function": {"name": c["name"], "arguments": (
        c["args"] if isinstance(c.get("args"), str) else json.dumps(c.get("args", {}), ensure_ascii=False))}}
        for k, c in enumerate(turn.get("tool_calls", []), 1)]
    message = {"role": "assistant", "content": turn.get("text") or None,
               **({"refusal": _refusal(turn) or _SORRY} if turn.get("refusal") else {}),
               **({"tool_calls": calls} if calls else {})}
    finish = turn.get("finish_reason") or ("length" if _cut(turn) else "tool_calls" if calls else "stop")
    return {"id": f"chatcmpl-standin-{n:02d}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                      "total_tokens": usage["input_tokens"] + usage["output_tokens"]}}


def _ollama(body, turn, usage, n) -> dict:
    calls = [{"function": {"name": c["name"], "arguments": _args(c)}} for c in turn.get("tool_calls", [])]
    message = {"role": "assistant", "content": turn.get("text") or _refusal(turn) or "",
               **({"thinking": turn["thinking"]} if turn.get("thinking") else {}),
               **({"tool_calls": calls} if calls else {})}
    return {"model": body["model"], "created_at": "1970-01-01T00:00:00Z", "message": message, "done": True,
            "done_reason": turn.get("done_reason") or ("length" if _cut(turn) else "stop"),
            "prompt_eval_count": usage["input_tokens"], "eval_count": usage["output_tokens"]}


_FORMATS = {"anthropic": _anthropic, "openai": _openai, "ollama": _ollama}
_ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai", "/api/chat": "ollama"}
_MAX_BODY, _MAX_DEPTH = 32 * 2**20, 128   # Anthropic's 32 MB per request; serde_json's default nesting limit
_NOT_JSON = {"anthropic": "The request body is not valid JSON: {}",   # Anthropic's words; the detail is Python's
             "openai": "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
                       "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
                       "valid JSON. If you have trouble figuring out how to fix this, please contact us through our "
                       "help center at help.openai.com.)", "ollama": "the request body is not valid JSON: {}"}   # ours
_CHUNK = re.compile(rb"([0-9a-fA-F]{1,16})[ \t]*(;[^\r\n]*)?\r?\n")   # a chunk's size line
_ESCAPE = re.compile(r"\\\\|\\u(?:d[89ab][0-9a-f]{2}(?:\\ud[c-f][0-9a-f]{2})?|d[c-f][0-9a-f]{2})", re.I)


class _Handler(BaseHTTPRequestHandler):
    standin: StandInServer

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        api = _ROUTES.get(path)
        try:
            raw = self._read()
            if api is None:   # what api.openai.com answers, e.g. for /chat/completions without the /v1
                raise _Rejected(f"Invalid URL (POST {path})", status=404)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload, extra = self.standin.answer(api, _parse(api, raw), headers)
        except _Rejected as e:
            status, payload, extra = _error(api or "openai", e.status, e.message)
        except Exception as e:   # a stand-in bug: an answer in the API's shape, not a dropped connection
            status, payload, extra = _error(api or "openai", 500, f"the stand-in server failed: {e!r}")
            extra["x-should-retry"] = "false"   # a retry meets the same bug
        data = json.dumps(payload).encode()   # \u escapes: half an emoji (a lone surrogate) cannot break the reply
        self.send_response(status)
        for key, value in {"content-type": "application/json", "content-length": str(len(data)), **extra}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _read(self) -> bytes:
        """The body, by its Content-Length (as the SDKs send it) or in chunks; past _MAX_BODY a 413, unread."""
        if self.headers.get("transfer-encoding", "").lower() != "chunked":
            length = self.headers.get("content-length")
            if length is None:   # 411 Length Required (RFC 9110): a length, or chunks, says where the body ends
                raise _Rejected("a request body needs a Content-Length header", status=411)
            if not re.fullmatch("[0-9]+", length.strip()):
                raise _Rejected(f"the Content-Length header must be a number of bytes, not {length!r}")
            return self._take(int(length), 0)
        body = bytearray()
        while (line := _CHUNK.fullmatch(self.rfile.readline(100))) and (size := int(line[1], 16)):
            body += self._take(size, len(body))
            if self.rfile.readline(3).strip():
                break
        if not line or size:   # no size line where one belongs (the body cut short), or a chunk ran on
            raise _Rejected("malformed chunked body: a chunk-size line or the end of a chunk is wrong")
        while self.rfile.readline(8192).strip():   # trailer fields, up to the blank line: ignored
            pass
        return bytes(body)

    def _take(self, size: int, before: int) -> bytes:
        if before + size > _MAX_BODY:   # refused unread, as Cloudflare does for Anthropic (words: its errors page)
            raise _Rejected("Request exceeds the maximum allowed number of bytes.", status=413)
        return self.rfile.read(size)

    def log_message(self, format, *args) -> None:   # keep notebooks and test output free of access logs
        pass


def _parse(api: str, raw: bytes) -> dict:
    """The body as a JSON object, or a ``_Rejected`` in the API's words."""
    try:   # strictly UTF-8: json.loads(bytes) lets surrogates coded in UTF-8 through
        body = json.loads(text := raw.decode("utf-8") or "{}")
        if _too_deep(body):
            raise RecursionError   # as json.loads raises it when deeper still
        problem = _lone_surrogate(text) if api == "anthropic" else None
    except RecursionError:
        problem = f"nested more than {_MAX_DEPTH} levels deep"
    except ValueError as e:   # not UTF-8, or not JSON
        problem = str(e)
    if problem:
        raise _Rejected(_NOT_JSON[api].format(problem))
    if not isinstance(body, dict):
        raise _Rejected("the request body is not a JSON object")
    return body


def _too_deep(value) -> bool:
    """Whether containers nest more than _MAX_DEPTH deep, found level by level (checks and fingerprints recurse)."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(_MAX_DEPTH):
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c) if isinstance(v, (dict, list))]
    return bool(level)


def _lone_surrogate(text: str) -> str | None:
    """Half an emoji escaped in ``text`` (``"\\ud83d"``), in the words of the parser behind Anthropic's API."""
    for m in _ESCAPE.finditer(text):
        if len(m[0]) == 6:   # one \uXXXX on its own (a pair is 12 characters long, an escaped backslash 2)
            high = m[0][3] in "89abAB"
            said = "invalid high" if not high else "invalid low" if text.startswith("\\u", m.end()) else "no low"
            return str(json.JSONDecodeError(f"{said} surrogate in string", text, m.end() if high else m.start()))
    return None
