"""``StandInServer``: the script, and one request at a time checked as the real API would check it, then
answered with the next turn in that API's shape (``anthropic``, ``openai``, ``ollama``) or refused with its
status, error shape and words. The HTTP side (reading a body, routing by path) is in ``handler``.

``tool_choice`` is checked (a known kind, naming a tool that was sent; Anthropic refuses a forced one while
thinking is on) and honoured: a forced reply has no text before its call, and a scripted turn that
``tool_choice`` rules out is the script's error (500), since the real API would not have produced it; so is one
that a strict tool's schema or a requested JSON output rules out (``schemas``). A reply asked for with ``stream``
is the same reply, streamed (``stream``).
"""
from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

from . import anthropic, caching, ollama, openai, responses, schemas, stream
from .common import _error, _ID_HEADER, _Rejected, _turn
from .handler import _Handler, _Server

_CHECKS = {"anthropic": anthropic.check, "openai": openai.check, "ollama": ollama.check}
_FORMATS = {"anthropic": anthropic.reply, "openai": openai.reply, "ollama": ollama.reply,
            "responses": responses.reply}


class StandInServer:
    """Serve ``turns`` in order to whichever SDK calls; a context manager that starts and stops the server."""

    def __init__(self, turns):
        self.turns = [_turn(t, k) for k, t in enumerate(turns)]
        self._scripted = len(self.turns)
        self.requests: list[dict] = []   # {"api": ..., "body": {...}} per request, in order
        self.problems: list[str] = []
        self._issued = anthropic.Issued()   # signed thinking blocks and paused turns, to check when they return
        self._cache = caching.PromptCache()   # Anthropic's prompt cache: the prefixes marked cache_control
        self._responses = responses.Responses()   # stored responses and issued reasoning items (Responses API)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> "StandInServer":
        handler = type("Handler", (_Handler,), {"standin": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        # A short poll interval: stop() waits for the serving loop to notice, and checks start and stop a
        # server per request they send (a 5 ms wake-up costs nothing measurable; 0.5 s, the default, would).
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.005}, daemon=True).start()
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
            refused = self._refused(api, body, headers, rid)
            if refused:   # a refused request uses up no turn
                return refused
            if not self.turns:   # the script's fault, not the network's: say so, and tell the SDK not to retry
                status, body, extra = _error(api, 500, f"the stand-in's script ran out: it had {self._scripted} "
                                             f"turn(s) and request {number} asked for another; add turns to "
                                             "the script", rid)
                return status, body, {**extra, "x-should-retry": "false"}
            turn = self.turns.pop(0)
            contradiction = _against_choice(_choice(api, body), turn) or schemas.against(api, body, turn)
            if contradiction:   # the script's fault too: the real API would have honoured tool_choice and schemas
                status, body, extra = _error(api, 500, f"turn {number} of the stand-in's script {contradiction}", rid)
                return status, body, {**extra, "x-should-retry": "false"}
            if (_choice(api, body) or ("",))[0] == "forced":   # a forced call comes with no text before it
                turn = {k: v for k, v in turn.items() if k != "text"}
            if "status" in turn:
                return _error(api, turn["status"], turn.get("message", f"scripted error {turn['status']}"), rid,
                              kind=turn.get("type"), code=turn.get("code"), param=turn.get("param"),
                              retry_after=turn.get("retry_after"))
            sent = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}   # streamed or not: alike
            said = {k: v for k, v in turn.items() if not k.startswith("stream_")}   # how it streams is not output
            usage = turn.get("usage") or {"input_tokens": len(json.dumps(sent, ensure_ascii=False)) // 4,
                                          "output_tokens": max(1, len(json.dumps(said, ensure_ascii=False)) // 4)}
            if api == "anthropic" and "usage" not in turn:   # marked prefixes: read from or written to the cache
                usage = {**usage, **(self._cache.split(body, usage["input_tokens"]) or {})}
            if api in ("openai", "responses") and "usage" not in turn:   # automatic: a repeated prefix is read
                usage = {**usage, "cached_tokens": self._cache.automatic(body, usage["input_tokens"])}
            reply = _FORMATS[api](body, turn, usage, number)
            if api == "anthropic":
                self._issued.remember(body, reply)
            if api == "responses":
                self._responses.remember(body, reply)
        headers = {_ID_HEADER[api]: rid} if api in _ID_HEADER else {}
        if body.get("stream", api == "ollama") is True:   # the same reply, as the API streams it (Ollama: by default)
            return 200, stream.events(api, body, reply, turn), headers
        return 200, reply, headers

    def count(self, api: str, body: dict, headers) -> tuple[int, dict, dict]:
        """``POST /v1/messages/count_tokens`` (``api`` "anthropic") and ``/v1/responses/input_tokens``: the request
        checked as a reply's would be, no turn used and nothing kept, and the input tokens a reply to the same
        request would report (the same estimate; count_tokens takes no ``max_tokens``, so one is assumed)."""
        with self._lock:
            self.requests.append({"api": f"{api} token count", "body": body})
            rid = f"req_standin_{len(self.requests):02d}"
            probe = {"max_tokens": 1, **body} if api == "anthropic" else body
            refused = self._refused(api, body, headers, rid, checked=probe)
            if refused:
                return refused
        tokens = len(json.dumps(probe, ensure_ascii=False)) // 4
        return 200, {"input_tokens": tokens, **({"object": "response.input_tokens"} if api == "responses" else {})}, \
            {_ID_HEADER[api]: rid} if api in _ID_HEADER else {}

    def _refused(self, api: str, body: dict, headers, rid: str, checked: dict | None = None) -> tuple | None:
        """The API's error reply if it refuses the request (noted in ``problems``), else None; ``checked``: the
        body to check, where it differs from the one sent."""
        rejected = (_auth_problem(api, headers) or (anthropic.beta_problem(body, headers) if api == "anthropic"
                                                    else None) or self._check_safely(api, checked or body))
        if rejected is None:
            return None
        self.problems.append(rejected.problem)
        return _error(api, rejected.status, rejected.message, rid, code=rejected.code, param=rejected.param)

    def _check_safely(self, api: str, body: dict) -> _Rejected | None:
        try:
            if api == "responses":   # items, not messages: the conversation is checked (and kept) as a whole
                self._responses.check(body)
                _choice(api, body)
                schemas.check(api, body)
                return None
            problem = _check(api, body) or (self._issued.check(body) if api == "anthropic" else None)
        except _Rejected as rejected:
            return rejected
        except (AttributeError, KeyError, TypeError, IndexError) as e:   # a message or block of the wrong shape
            problem = f"malformed request ({type(e).__name__}): every message and content block must be an object"
        return _Rejected(problem) if problem else None


def _auth_problem(api: str, headers) -> _Rejected | None:
    bearer = headers.get("authorization", "").startswith("Bearer ")
    if api == "anthropic" and not (headers.get("x-api-key") or bearer):   # the SDK sends either
        return _Rejected("no API key was sent (x-api-key or Authorization: Bearer header)", status=401)
    if api in ("openai", "responses") and not bearer:
        return _Rejected("no API key was sent (Authorization: Bearer header)", status=401)
    return None


def _check(api: str, body: dict) -> str | None:
    """The checks a real API makes: a sentence, or None; a ``_Rejected`` raised carries the API's own words."""
    if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return "the request needs a model name and a non-empty messages list"
    _choice(api, body)   # tool_choice: a known kind, naming a tool that was sent; forced only without thinking
    return _CHECKS[api](body) or (schemas.check(api, body) if api != "ollama" else None)


def _choice(api: str, body: dict) -> tuple[str, str | None] | None:
    """``tool_choice`` as (``auto`` | ``none`` | ``forced``, the tool it names), after the API's checks.
    Ollama's /api/chat has no tool_choice. Only the thinking and OpenAI's no-tools sentences are the APIs'
    own words; the others are paraphrased in each API's style."""
    choice = body.get("tool_choice")
    if choice is None or api == "ollama":
        return None
    tools = body.get("tools") or []
    names = [(t.get("function") or {}).get("name") if api == "openai" else t.get("name") for t in tools]
    kind, name, forced = {"anthropic": anthropic, "openai": openai, "responses": responses}[api].choice(choice, body)
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
