"""Stage 08 — a local stand-in server for the model APIs, so stage 08 runs with no key and no network.

Adds: ``StandInServer``, a stdlib HTTP server on 127.0.0.1 (a random free port) that speaks three wire
formats: the Anthropic Messages API (``POST /v1/messages``), OpenAI Chat Completions
(``POST /v1/chat/completions``) and Ollama's own ``POST /api/chat``. It is not a model: it answers with a
script of turns given in advance, one turn per request, and checks each request the way the real API
would (a key is sent; every tool call of the previous turn is answered by its id). In one way it is
stricter than Anthropic's API: user and assistant turns must alternate, where the real API may merge
neighbours, so an adapter that forgets to merge them is caught here. Point the real SDKs
at it with ``base_url``:

    with StandInServer([{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]},
                        {"text": "Seven units cost $168."}]) as server:
        model = AnthropicModel(base_url=server.url, api_key="stand-in")

A turn is ``{"text": ..., "tool_calls": [{"name", "args"}], "usage": {...}}`` (a plain string is a text
turn) or an error ``{"status": 429, "message": ...}``. Token usage, unless scripted, is an estimate: one
token per four characters of the request (real APIs count differently). ``requests`` keeps every request
body and ``problems`` every shape error found, for tests to assert on.

Leaves out: streaming, and any intelligence: the replies are whatever the script says.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


class StandInServer:
    """Serve ``turns`` in order to whichever SDK calls; a context manager that starts and stops the server."""

    def __init__(self, turns):
        self.turns = [{"text": t} if isinstance(t, str) else dict(t) for t in turns]
        self.requests: list[dict] = []   # {"api": ..., "body": {...}} per request, in order
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> "StandInServer":
        handler = type("Handler", (_Handler,), {"standin": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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
            for status, problem in ((401, _auth_problem(api, headers)), (400, _check_safely(api, body))):
                if problem:
                    self.problems.append(problem)
                    return _error(api, status, problem)
            if not self.turns:
                return _error(api, 500, "the stand-in's script has no more turns")
            turn = self.turns.pop(0)
            number = len(self.requests)
        if "status" in turn:
            return _error(api, turn["status"], turn.get("message", f"scripted error {turn['status']}"))
        usage = turn.get("usage") or {"input_tokens": len(json.dumps(body, ensure_ascii=False)) // 4,
                                      "output_tokens": max(1, len(json.dumps(turn, ensure_ascii=False)) // 4)}
        return 200, _FORMATS[api](body, turn, usage, number), {}


def _auth_problem(api: str, headers) -> str | None:
    bearer = headers.get("authorization", "").startswith("Bearer ")
    if api == "anthropic" and not (headers.get("x-api-key") or bearer):   # the SDK sends either
        return "no API key was sent (x-api-key or Authorization: Bearer header)"
    if api == "openai" and not bearer:
        return "no API key was sent (Authorization: Bearer header)"
    return None


def _check(api: str, body: dict) -> str | None:
    """The shape checks a real API would make, in a sentence, or None."""
    if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return "the request needs a model name and a non-empty messages list"
    if api == "anthropic":
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens is required"
        if "temperature" in body and body.get("thinking"):
            return "temperature cannot be combined with thinking"
        return _check_anthropic(body["messages"])
    return _check_openai(body["messages"]) if api == "openai" else None


def _check_safely(api: str, body: dict) -> str | None:
    try:
        return _check(api, body)
    except (AttributeError, KeyError, TypeError) as e:   # a message or block that is not the right shape
        return f"malformed request ({type(e).__name__}): every message and content block must be an object"


def _check_anthropic(messages: list[dict]) -> str | None:
    asked: set[str] = set()   # tool_use ids of the previous assistant turn
    for i, m in enumerate(messages):
        if m.get("role") != ("user" if i % 2 == 0 else "assistant"):
            return f"messages[{i}]: roles must alternate user/assistant, starting with user"
        blocks = m["content"] if isinstance(m.get("content"), list) else []
        if m["role"] == "assistant":
            asked = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            continue
        answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if set(answered) != asked or len(answered) != len(asked):
            return (f"messages[{i}]: the tool_use ids {sorted(asked)} need exactly one tool_result each "
                    f"in the next user message, got {answered}")
        asked = set()
    return None


def _check_openai(messages: list[dict]) -> str | None:
    waiting: list[str] = []   # tool_call ids still to be answered
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                return f"messages[{i}]: tool message for unknown tool_call_id {m.get('tool_call_id')!r}"
            waiting.remove(m["tool_call_id"])
            continue
        if waiting:
            return f"messages[{i}]: tool calls {waiting} were not answered by role 'tool' messages"
        if m.get("role") == "assistant":
            waiting = [c["id"] for c in m.get("tool_calls") or []]
    if waiting:
        return f"the last tool calls {waiting} were not answered by role 'tool' messages"
    return None


def _error(api: str, status: int, message: str) -> tuple[int, dict, dict]:
    kind = _ERROR_TYPES.get(status, "api_error")
    body = ({"type": "error", "error": {"type": kind, "message": message}} if api == "anthropic"
            else {"error": {"message": message, "type": kind, "param": None, "code": None}})
    return status, body, ({"retry-after-ms": "10"} if status in (429, 500, 529) else {})


def _anthropic(body, turn, usage, n) -> dict:
    content = [{"type": "text", "text": turn["text"]}] if turn.get("text") else []
    content += [{"type": "tool_use", "id": f"toolu_standin_{n:02d}_{k}", "name": c["name"], "input": c.get("args", {})}
                for k, c in enumerate(turn.get("tool_calls", []), 1)]
    return {"id": f"msg_standin_{n:02d}", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": "tool_use" if turn.get("tool_calls") else "end_turn",
            "stop_sequence": None, "usage": usage}


def _openai(body, turn, usage, n) -> dict:
    calls = [{"id": f"call_standin_{n:02d}_{k}", "type": "function",
              "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}), ensure_ascii=False)}}
             for k, c in enumerate(turn.get("tool_calls", []), 1)]
    message = {"role": "assistant", "content": turn.get("text") or None, **({"tool_calls": calls} if calls else {})}
    return {"id": f"chatcmpl-standin-{n:02d}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                      "total_tokens": usage["input_tokens"] + usage["output_tokens"]}}


def _ollama(body, turn, usage, n) -> dict:
    calls = [{"function": {"name": c["name"], "arguments": c.get("args", {})}} for c in turn.get("tool_calls", [])]
    message = {"role": "assistant", "content": turn.get("text", ""), **({"tool_calls": calls} if calls else {})}
    return {"model": body["model"], "created_at": "1970-01-01T00:00:00Z", "message": message, "done": True,
            "done_reason": "stop", "prompt_eval_count": usage["input_tokens"], "eval_count": usage["output_tokens"]}


_FORMATS = {"anthropic": _anthropic, "openai": _openai, "ollama": _ollama}
_ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai", "/chat/completions": "openai",
           "/api/chat": "ollama"}


class _Handler(BaseHTTPRequestHandler):
    standin: StandInServer

    def do_POST(self) -> None:
        api = _ROUTES.get(self.path.split("?")[0])
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        except ValueError:
            api, body = api or "openai", None
        if api is None:
            status, payload, extra = _error("openai", 404, f"the stand-in does not serve {self.path}")
        elif not isinstance(body, dict):
            status, payload, extra = _error(api, 400, "the request body is not a JSON object")
        else:
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload, extra = self.standin.answer(api, body, headers)
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        for key, value in {"content-type": "application/json", "content-length": str(len(data)), **extra}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args) -> None:   # keep notebooks and test output free of access logs
        pass
