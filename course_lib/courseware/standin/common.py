"""What the stand-in server and its three wire formats share: a request refused in an API's own words, an
error in each API's shape, and the script's turns (checked when the script is given, read when one is sent)."""
from __future__ import annotations

# The error ``type`` per status (Anthropic's "HTTP errors" page); other 4xx are invalid_request_error.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error"}
_OPENAI_TYPES = {401: ("invalid_request_error", "invalid_api_key"), 429: ("requests", "rate_limit_exceeded")}
_ID_HEADER = {"anthropic": "request-id", "openai": "x-request-id", "responses": "x-request-id"}


class _Rejected(Exception):
    """A request the real API refuses: ``message`` in that API's words, ``problem`` for ``server.problems``."""

    def __init__(self, message: str, *, problem: str | None = None, param: str | None = None, code=None, status=400):
        super().__init__(message)
        self.message, self.problem, self.param, self.code = message, problem or message, param, code
        self.status = status   # 401 without a key; 404, 411 or 413 for a request the stand-in cannot read


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


_TURN_KEYS = {"text", "tool_calls", "usage", "thinking", "redacted_thinking", "blocks", "stop_reason",
              "finish_reason", "done_reason", "incomplete", "refusal", "stream_cut", "stream_error"}
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


def _cut(turn: dict) -> bool:   # a tool call whose ``args`` are text was cut off by the token limit
    return any(isinstance(c.get("args"), str) for c in turn.get("tool_calls", []))


def _args(call: dict) -> dict:
    return {} if isinstance(call.get("args"), str) else call.get("args", {})


def _refusal(turn: dict) -> str | None:   # "refusal": "<text>", or True for a refusal without text
    return turn["refusal"] if isinstance(turn.get("refusal"), str) else None
