"""The HTTP side of the stand-in server: a request read off the socket as the APIs' front ends read it, routed
by its path to one API, and the answer written back.

A body it cannot read gets a 411 without a length, a 413 over 32 MB, a 400 unless it is UTF-8 JSON nested at
most 128 deep (for Anthropic, also no half emoji escaped); a bug in the stand-in gets a 500: always in the
API's shape, never a dropped connection.
"""
from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .common import _error, _Rejected
from .stream import Streamed

_ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai", "/v1/responses": "responses",
           "/api/chat": "ollama"}
_COUNTS = {"/v1/messages/count_tokens": "anthropic", "/v1/responses/input_tokens": "responses"}   # token counting
_MAX_BODY, _MAX_DEPTH = 32 * 2**20, 128   # Anthropic's 32 MB per request; serde_json's default nesting limit
_NOT_JSON = {"anthropic": "The request body is not valid JSON: {}",   # Anthropic's words; the detail is Python's
             "openai": "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
                       "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
                       "valid JSON. If you have trouble figuring out how to fix this, please contact us through our "
                       "help center at help.openai.com.)", "ollama": "the request body is not valid JSON: {}"}   # ours
_NOT_JSON["responses"] = _NOT_JSON["openai"]
_CHUNK = re.compile(rb"([0-9a-fA-F]{1,16})[ \t]*(;[^\r\n]*)?\r?\n")   # a chunk's size line
_ESCAPE = re.compile(r"\\\\|\\u(?:d[89ab][0-9a-f]{2}(?:\\ud[c-f][0-9a-f]{2})?|d[c-f][0-9a-f]{2})", re.I)


class _Server(ThreadingHTTPServer):
    request_queue_size = 64   # the listen backlog: the default of 5 drops connections when 20 clients call

    def handle_error(self, request, client_address) -> None:   # the handler answers every error it can: what
        pass   # reaches here is a client that hung up mid-reply, not worth a traceback in a notebook


class _Handler(BaseHTTPRequestHandler):
    standin = None   # the StandInServer this handler answers for: set on the subclass its start() makes

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        api = _ROUTES.get(path) or _COUNTS.get(path)
        try:
            raw = self._read()
            if api is None:   # what api.openai.com answers, e.g. for /chat/completions without the /v1
                raise _Rejected(f"Invalid URL (POST {path})", status=404)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload, extra = (self.standin.count if path in _COUNTS else self.standin.answer)(
                api, _parse(api, raw), headers)
        except _Rejected as e:
            status, payload, extra = _error(api or "openai", e.status, e.message)
        except Exception as e:   # a stand-in bug: an answer in the API's shape, not a dropped connection
            status, payload, extra = _error(api or "openai", 500, f"the stand-in server failed: {e!r}")
            extra["x-should-retry"] = "false"   # a retry meets the same bug
        if isinstance(payload, Streamed):   # no length: a stream comes in chunks
            self._stream(status, payload, extra)
            return
        data = json.dumps(payload).encode()   # \u escapes: half an emoji (a lone surrogate) cannot break the reply
        self.send_response(status)
        for key, value in {"content-type": "application/json", "content-length": str(len(data)), **extra}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, status: int, streamed: Streamed, extra: dict) -> None:
        """In HTTP/1.1 chunks, as the APIs send a stream; one that breaks off stops without its last, empty chunk,
        so the client's HTTP library reads an incomplete body, as it would when a real connection drops."""
        self.protocol_version = "HTTP/1.1"
        self.send_response(status)
        headers = {"content-type": streamed.content_type, "cache-control": "no-cache", "transfer-encoding": "chunked",
                   "connection": "close", **extra}
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        for piece in streamed.pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        if not streamed.broken:
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

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
