"""Stage 13, MCP as it is now (issue 26): the stateless 2026-07-28 revision and the handshake revisions, over stdio
and streamable HTTP; structured tool output; annotations as stage 09 rules; resources and prompts; JSON Schema
checked by jsonschema. Every server here is a real process started by the test (the official SDK's client and
servers, and three of the MCP project's reference servers); nothing reaches beyond 127.0.0.1."""
from __future__ import annotations

import http.server
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from course_lib.courseware.mcp_serve import READ_ONLY, course_tools
from course_lib.dispatch import dispatch
from course_lib.mcp_bridge import schema_problems, tool_to_mcp
from course_lib.mcp_client import MAX_PAGES, connect_mcp
from course_lib.safety import ToolPolicy
from course_lib.tools import ToolError
from support import lesson_cell

COURSE = Path(sys.executable).parent / "course"   # the console script a user runs
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}   # connect mode → the revision it ends up speaking


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("The unit price is $24.\nOrders of $500 ship free.\n", encoding="utf-8")
    (tmp_path / "trip").mkdir()
    (tmp_path / "trip" / "부산.txt").write_text("두 밤\n", encoding="utf-8")
    (tmp_path / ".secret").write_text("hidden\n", encoding="utf-8")
    return tmp_path


@contextmanager
def http_server(*args, cwd):
    """`course mcp serve --http --port 0 ...` as a user starts it; yields its URL (read from its stderr)."""
    server = subprocess.Popen([str(COURSE), "mcp", "serve", "--http", "--port", "0", *args], cwd=cwd,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = ""
        while "listening on" not in said:   # a hang guard: it prints the line within a second or two
            ready, _, _ = select.select([server.stderr], [], [], 60)
            assert ready, f"course mcp serve --http said nothing for 60 s: {said!r}"
            line = server.stderr.readline()
            assert line, f"course mcp serve --http stopped: {said!r}"
            said += line
        yield said.split("listening on ")[1].split()[0]
    finally:
        server.send_signal(signal.SIGINT)   # Ctrl-C, as the line it printed says: a clean stop, no traceback
        assert server.wait(timeout=30) == 0
        leftover = server.stderr.read()
        assert "Traceback" not in leftover, leftover
        server.stdout.close()
        server.stderr.close()


@pytest.fixture(params=["stdio", "http"])
def course_server(request, workspace):
    """`course mcp serve` over stdio (a command) or over HTTP (a URL), serving ``workspace``."""
    if request.param == "stdio":
        yield [str(COURSE), "mcp", "serve", "--workspace", str(workspace)]
    else:
        with http_server("--workspace", str(workspace), cwd=workspace) as url:
            yield url


# ---- both eras × both transports, with the official SDK's own client
@pytest.mark.parametrize("mode", ["legacy", "auto", "2026-07-28"])
def test_the_official_client_uses_every_feature_of_course_mcp_serve_in_both_eras(course_server, mode):
    from mcp import Client, StdioServerParameters
    target = course_server if isinstance(course_server, str) else StdioServerParameters(
        command=course_server[0], args=course_server[1:])

    async def main():
        async with Client(target, mode=mode, read_timeout_seconds=30) as client:
            listed = (await client.list_tools()).tools
            product = await client.call_tool("calculator", {"expression": "24*7"})
            stats = await client.call_tool("file_stats", {"path": "notes.txt"})
            resources = (await client.list_resources()).resources
            read = await client.read_resource("workspace:///notes.txt")
            prompt = await client.get_prompt("summarise_file", {"path": "notes.txt"})
            return client.protocol_version, listed, product, stats, resources, read, prompt
    version, listed, product, stats, resources, read, prompt = anyio.run(main)
    assert version == ERAS.get(mode, mode)
    assert [t.name for t in listed] == list(course_tools())
    assert all(t.annotations.read_only_hint is True and t.annotations.open_world_hint is False for t in listed)
    assert [t.name for t in listed if t.output_schema] == ["file_stats"]
    assert [(c.type, c.text) for c in product.content] == [("text", "168")] and product.structured_content is None
    counted = {"path": "notes.txt", "lines": 2, "words": 10, "characters": 49}
    assert stats.structured_content == counted and json.loads(stats.content[0].text) == counted   # both, as asked
    assert [(r.uri, r.name) for r in resources] == [("workspace:///notes.txt", "notes.txt"),
                                                    ("workspace:///trip/부산.txt", "trip/부산.txt")]   # no .secret
    assert read.contents[0].text == (Path(course_server[-1]) / "notes.txt").read_text() if not isinstance(
        course_server, str) else read.contents[0].text.startswith("The unit price is $24.")
    assert prompt.messages[0].role == "user" and "notes.txt" in prompt.messages[0].content.text


@pytest.mark.parametrize("era", ["auto", "legacy", "2026-07-28"])
def test_connect_mcp_reaches_course_mcp_serve_in_either_era_over_either_transport(course_server, era):
    with connect_mcp(course_server, era=era) as tools:
        assert tools.protocol == ERAS.get(era, era) and list(tools) == list(course_tools())
        assert tools.rules == {name: "always" for name in course_tools()}   # all read-only, by their annotations
        assert dispatch(tools, "calculator", {"expression": "24*7"}).content == "168"
        assert json.loads(tools["file_stats"](path="notes.txt")) == {"path": "notes.txt", "lines": 2, "words": 10,
                                                                     "characters": 49}
        assert tools["file_stats"].__annotations__["return"] is str   # the model reads the JSON as text
        assert [r["uri"] for r in tools.resources()] == ["workspace:///notes.txt", "workspace:///trip/부산.txt"]
        assert tools.read("workspace:///trip/부산.txt") == "두 밤\n"
        assert [p["name"] for p in tools.prompts()] == ["summarise_file"]
        [message] = tools.prompt("summarise_file", path="notes.txt")
        assert message["role"] == "user" and message["content"].startswith("Read notes.txt with read_file")
        for uri in ("workspace:///../etc/passwd", "workspace:///.secret/..//../x", "file:///etc/passwd"):
            with pytest.raises(ToolError, match=r"^the server refused the call: Resource not found: "):
                tools.read(uri)
        with pytest.raises(ToolError, match="-32602"):
            tools.prompt("summarise_file")   # its argument is required


def test_by_hand_the_2026_session_needs_no_handshake_and_each_request_carries_its_envelope(workspace):
    """Lesson 13a, section 2: the stateless revision as JSON lines; ping and an envelope-less request refused."""
    server = subprocess.Popen([str(COURSE), "mcp", "serve"], cwd=workspace, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    try:
        def rpc(n, method, params=None):
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
            server.stdin.flush()
            return json.loads(server.stdout.readline())
        listed = rpc(1, "tools/list", {"_meta": META})   # no server/discover first: every request stands alone
        assert [t["name"] for t in listed["result"]["tools"]] == list(course_tools())
        found = rpc(2, "server/discover", {"_meta": META})["result"]
        assert found["supportedVersions"] == ["2026-07-28"] and "tools" in found["capabilities"]
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "course-lib"
        called = rpc(3, "tools/call", {"_meta": META, "name": "calculator", "arguments": {"expression": "24*7"}})
        assert called["result"]["content"] == [{"type": "text", "text": "168"}]
        assert rpc(4, "tools/list", {})["error"]["code"] == -32602   # no envelope: refused
        old = rpc(5, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}})
        assert old["error"]["code"] == -32022 and old["error"]["data"]["supported"] == ["2026-07-28"]
        assert rpc(6, "ping", {"_meta": META})["error"]["code"] == -32601   # ping is gone in 2026-07-28
        refused = rpc(7, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "late", "version": "0"}})
        assert refused["error"]["code"] == -32022   # the connection is in the 2026 era now: no handshake later
    finally:
        server.stdin.close()
        assert server.wait(timeout=30) == 0
        server.stdout.close()


HIDDEN = ".secret", ".env", ".git/config", "trip/.draft.txt", "trip/../.secret", "./.env", "key"   # key: a link


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_course_mcp_serve_lists_and_reads_no_hidden_file_through_a_tool_or_a_resource(course_server, workspace, era):
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[remote] token = ghp_x\n", encoding="utf-8")
    (workspace / ".env").write_text("API_KEY=sk-x\n", encoding="utf-8")
    (workspace / "trip" / ".draft.txt").write_text("draft\n", encoding="utf-8")
    (workspace / "key").symlink_to(workspace / ".secret")   # a visible name that leads to a hidden file
    why = 'which course mcp serve does not serve: a name in its path (or where a link in it leads) starts with "."'
    with connect_mcp(course_server, era=era) as tools:
        assert tools["list_files"]() == "key\nnotes.txt\ntrip/"   # as before: no .secret, .env or .git/
        assert tools["list_files"](directory="trip") == "부산.txt"
        assert [r["uri"] for r in tools.resources()] == ["workspace:///notes.txt", "workspace:///trip/부산.txt"]
        for path in HIDDEN:
            for tool in ("read_file", "file_stats"):
                seen = dispatch(tools, tool, {"path": path})
                assert seen.is_error and seen.content == f"Error: {tool}: '{path}' is a hidden file, {why}", path
            with pytest.raises(ToolError) as caught:
                tools.read(f"workspace:///{path}")
            assert str(caught.value) == (f"the server refused the call: Resource not found: workspace:///{path} "
                                         f"('{path}' is a hidden file, {why}) (JSON-RPC error -32602)")
        for folder in (".git", "trip/../.git", ".git/.."):
            seen = dispatch(tools, "list_files", {"directory": folder})
            assert seen.is_error and seen.content == f"Error: list_files: '{folder}' is a hidden folder, {why}"
        assert tools["read_file"](path="./trip/부산.txt") == "두 밤\n"   # what is not hidden is served as before
        assert tools.read("workspace:///notes.txt").startswith("The unit price is $24.")


def test_the_lessons_own_read_file_still_reads_a_hidden_file_only_course_mcp_serve_refuses(workspace, monkeypatch):
    from course_lib.tools import read_file
    monkeypatch.chdir(workspace)
    assert read_file(".secret") == "hidden\n"   # stage 01 is unchanged: the workspace is the learner's own
    assert dispatch(course_tools(), "read_file", {"path": ".secret"}).content.startswith(
        "Error: read_file: '.secret' is a hidden file, which course mcp serve does not serve")


# ---- streamable HTTP: loopback only unless asked, the SDK's DNS-rebinding check, clear refusals
@pytest.mark.parametrize("args, said", [
    (["--http", "--host", "0.0.0.0"], "will not listen on 0.0.0.0: the server has no authentication"),
    (["--http", "--host", "192.168.1.20"], "will not listen on 192.168.1.20"),
    (["--port", "9000"], "--host, --port and --allow-remote are for --http"),
    (["--allow-remote"], "--host, --port and --allow-remote are for --http"),
])
def test_course_mcp_serve_http_refuses_another_host_unless_asked_and_http_options_without_http(tmp_path, args, said):
    run = subprocess.run([str(COURSE), "mcp", "serve", *args], cwd=tmp_path, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == 2 and run.stdout == "" and said in run.stderr and "Traceback" not in run.stderr


def test_allow_remote_listens_where_asked_and_a_taken_port_is_one_sentence(workspace):
    with http_server("--host", "0.0.0.0", "--allow-remote", cwd=workspace) as url:
        assert url.startswith("http://0.0.0.0:")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with connect_mcp(f"http://127.0.0.1:{port}/mcp") as tools:
            assert tools["calculator"](expression="2+2") == "4"
        taken = subprocess.run([str(COURSE), "mcp", "serve", "--http", "--port", str(port), "--host", "0.0.0.0",
                                "--allow-remote"], cwd=workspace, capture_output=True, text=True, timeout=60)
    assert taken.returncode == 2 and taken.stderr.splitlines()[-1].startswith(
        f"course mcp serve: cannot listen on 0.0.0.0 port {port}: ") and "Traceback" not in taken.stderr


def test_a_port_outside_0_to_65535_is_a_usage_error_and_a_failed_listen_names_the_port_asked_for(workspace):
    for port in ("70000", "65536", "-1"):
        run = subprocess.run([str(COURSE), "mcp", "serve", "--http", "--port", port], cwd=workspace,
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert (run.returncode, run.stdout, run.stderr) == (2, "", f"course mcp serve: --port {port}: a port is a "
                                                            "number from 0 to 65535 (0 takes a free one)\n")
    with socket.socket() as taken:   # the default port, 8000, taken (by us, or by something else already)
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the server sets it: both bind, or neither
        try:
            taken.bind(("127.0.0.1", 8000))
            taken.listen(1)
        except OSError:
            pass
        run = subprocess.run([str(COURSE), "mcp", "serve", "--http"], cwd=workspace, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == 2 and run.stderr.splitlines()[-1].startswith(
        "course mcp serve: cannot listen on 127.0.0.1 port 8000: ") and "Traceback" not in run.stderr


def test_the_http_server_refuses_a_page_of_another_site_dns_rebinding_as_the_sdk_does(workspace):
    import httpx2
    with http_server(cwd=workspace) as url:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28"}
        evil = httpx2.post(url, json=body, headers={**headers, "Host": "evil.example:80"}, timeout=30)
        assert evil.status_code in (403, 421)   # a browser page on evil.example that resolves to 127.0.0.1
        origin = httpx2.post(url, json=body, headers={**headers, "Origin": "http://evil.example"}, timeout=30)
        assert origin.status_code == 403


def test_a_url_with_nothing_listening_is_a_connection_error_and_urls_take_no_cwd_or_env():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]   # free, and closed before the call: nothing listens there
    with pytest.raises(ConnectionError, match=rf"^could not reach the MCP server `http://127.0.0.1:{port}/mcp`: "):
        with connect_mcp(f"http://127.0.0.1:{port}/mcp", timeout=10):
            pass
    with pytest.raises(ValueError, match="cwd and env are for a server connect_mcp starts"):
        with connect_mcp("http://127.0.0.1:1/mcp", cwd="."):
            pass
    with pytest.raises(ValueError, match=r"^era must be 'auto', 'legacy' or '2026-07-28', not '2025-11-25'$"):
        with connect_mcp(["x"], era="2025-11-25"):
            pass
    with pytest.raises(ValueError, match="^server must be a URL"):
        with connect_mcp("course mcp serve"):   # a command written as one string
            pass


def test_a_url_s_password_appears_in_no_error_and_no_repr(workspace):
    secret = "s3cr3t-Pa55"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]   # closed again: nothing listens there
    with pytest.raises(ConnectionError) as refused:
        with connect_mcp(f"http://learner:{secret}@127.0.0.1:{port}/mcp", timeout=10):
            pass
    assert str(refused.value).startswith(f"could not reach the MCP server `http://***@127.0.0.1:{port}/mcp`: ")
    with pytest.raises(ValueError) as wrong:   # not http(s): refused, the URL named without its password
        with connect_mcp(f"ftp://learner:{secret}@127.0.0.1/mcp"):
            pass
    assert str(wrong.value).endswith(", not 'ftp://***@127.0.0.1/mcp'")
    with http_server(cwd=workspace) as url:
        with connect_mcp(url.replace("http://", f"http://learner:{secret}@")) as tools:
            assert tools["calculator"](expression="2+2") == "4"
            shown = [repr(tools), repr(vars(tools)), repr(vars(tools._reached)), *map(repr, tools.values()),
                     *(f.__doc__ or "" for f in tools.values())]
        with pytest.raises(ToolError) as closed:   # used after the block: the server is named
            tools["calculator"](expression="2+2")
    assert str(closed.value).startswith(f"the MCP server `{url.replace('http://', 'http://***@')}` did not answer: ")
    for text in [str(refused.value), repr(refused.value), str(wrong.value), str(closed.value), *shown]:
        assert secret not in text and "learner" not in text, text


# ---- a server of our own making: structured output that breaks its schema, annotations, endless pages
ODD = '''
import sys
import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OUT = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
TOOLS = [types.Tool(name="good_sum", input_schema={"type": "object"}, output_schema=OUT,
                    annotations=types.ToolAnnotations(read_only_hint=True)),
         types.Tool(name="bad_sum", input_schema={"type": "object"}, output_schema=OUT),
         types.Tool(name="no_sum", input_schema={"type": "object"}, output_schema=OUT),
         types.Tool(name="delete_all", input_schema={"type": "object"},
                    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True)),
         types.Tool(name="plain", input_schema={"type": "object"})]
ENDLESS = "--endless" in sys.argv

async def list_tools(ctx, params):
    if ENDLESS:   # a next page, for ever
        return types.ListToolsResult(tools=TOOLS[:1], next_cursor=str(int((params and params.cursor) or 0) + 1))
    return types.ListToolsResult(tools=TOOLS)

async def call_tool(ctx, params):
    said = {"good_sum": {"total": 3}, "bad_sum": {"total": "three"}, "no_sum": None}.get(params.name)
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ran")], structured_content=said)

async def main(server=Server("odd", version="1", on_list_tools=list_tools, on_call_tool=call_tool)):
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(main)
'''


@pytest.fixture
def odd(tmp_path):
    script = tmp_path / "odd_server.py"
    script.write_text(ODD, encoding="utf-8")
    return [sys.executable, str(script)]


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_structured_content_is_json_for_the_model_and_a_result_that_breaks_its_own_schema_is_named(odd, era):
    with connect_mcp(odd, era=era) as tools:
        assert tools["good_sum"]() == '{"total": 3}'   # the structured content, not the text beside it
        bad = dispatch(tools, "bad_sum", {})
        assert bad.is_error and "gave a result that does not fit the tool's own output schema" in bad.content
        assert "'three' is not of type 'integer'" in bad.content
        missing = dispatch(tools, "no_sum", {})
        assert missing.is_error and "has an output schema but did not return structured content" in missing.content
        assert tools["plain"]() == "plain ran"


def test_annotations_become_stage_09_rules_a_destructive_tool_asks_a_person_and_none_means_ask(odd):
    asked = []
    with connect_mcp(odd) as tools:
        assert tools.rules == {"good_sum": "always", "bad_sum": "ask", "no_sum": "ask", "delete_all": "ask",
                               "plain": "ask"}   # the spec's defaults: not read-only, destructive
        assert tools["delete_all"].annotations == {"readOnlyHint": False, "destructiveHint": True}
        policy = ToolPolicy(tools.rules, approver=lambda request: asked.append(request.tool) or "no")
        guarded = policy.guard(tools)
        assert dispatch(guarded, "good_sum", {}).content == '{"total": 3}'
        denied = dispatch(guarded, "delete_all", {})
    assert asked == ["delete_all"] and denied.is_error and "the person said no" in denied.content


def test_a_server_that_always_has_another_page_is_stopped_after_max_pages(odd):
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp([*odd, "--endless"], timeout=30):
            pass
    assert str(caught.value).endswith(f": it sent {MAX_PAGES} pages of tools and still had more (a nextCursor on "
                                      "every page), so connect_mcp stopped there")


def test_a_server_without_resources_or_prompts_lists_none(odd):
    with connect_mcp(odd) as tools:
        assert tools.resources() == [] and tools.prompts() == []
        assert tools.server == "odd 1" and tools.left_out == {}


# ---- the server's side: outputSchema from a return annotation, annotations from hints
def test_tool_to_mcp_declares_an_output_schema_for_an_object_and_refuses_other_structures():
    listed = tool_to_mcp("file_stats", course_tools()["file_stats"], READ_ONLY)
    assert listed["outputSchema"]["type"] == "object" and listed["outputSchema"]["required"] == [
        "path", "lines", "words", "characters"] and listed["annotations"] == READ_ONLY
    assert "outputSchema" not in tool_to_mcp("calculator", course_tools()["calculator"])

    def names() -> list[str]:
        """Some names."""
        return ["a"]
    with pytest.raises(ValueError, match="an MCP tool returns text or an object"):
        tool_to_mcp("names", names)


def test_file_stats_counts_inside_the_workspace_only(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    stats = course_tools()["file_stats"]
    assert stats("trip/부산.txt") == {"path": "trip/부산.txt", "lines": 1, "words": 2, "characters": 4}
    assert dispatch(course_tools(), "file_stats", {"path": "../x"}).is_error


# ---- JSON Schema from a server, checked by jsonschema (Draft 2020-12), in the course's sentences
def test_schema_problems_reads_all_of_json_schema_refs_anyof_const_pattern_and_nested_enums():
    ref = {"$defs": {"nights": {"type": "integer", "minimum": 1}}, "type": "object",
           "properties": {"n": {"$ref": "#/$defs/nights"}}}
    assert schema_problems(ref, {"n": 0}) == ["arguments.n must be at least 1"]
    either = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert schema_problems(either, 2) == [] and schema_problems(either, [2]) == [
        "arguments fits none of the 2 schemas of its anyOf"]
    assert schema_problems({"const": "Busan"}, "Seoul") == ['arguments must be "Busan"']
    assert schema_problems({"type": "string", "pattern": "^[A-Z]{3}$"}, "icn") == [
        "arguments: 'icn' does not match '^[A-Z]{3}$'"]
    assert schema_problems({"enum": [[1]]}, [True]) == ["arguments must be one of [1]"]   # true is not 1, nested too
    assert schema_problems({"enum": [[1]]}, [1.0]) == []
    assert schema_problems({"type": "object", "additionalProperties": False, "patternProperties": {"^x-": {}}},
                           {"x-a": 1, "b": 2}) == ["arguments has no 'b' (it takes: nothing)"]


def test_a_schema_pointing_at_the_network_is_refused_without_fetching_anything():
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"type": "integer"}')

        def log_message(self, *args):
            pass
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as page:
        threading.Thread(target=page.serve_forever, daemon=True).start()
        with pytest.raises(ValueError, match="^it is not a JSON Schema that can be checked: "):
            schema_problems({"$ref": f"http://127.0.0.1:{page.server_address[1]}/schema.json"}, 1)
        page.shutdown()
    assert hits == []


# ---- interop beyond the course: the MCP project's reference servers
@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_the_reference_git_server_s_tools_and_annotations_in_either_era(tmp_path, era):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    dated = {**os.environ, "GIT_AUTHOR_DATE": "2026-07-28T09:00:00Z", "GIT_COMMITTER_DATE": "2026-07-28T09:00:00Z",
             "GIT_AUTHOR_NAME": "A Learner", "GIT_AUTHOR_EMAIL": "l@example.com", "GIT_COMMITTER_NAME": "A Learner",
             "GIT_COMMITTER_EMAIL": "l@example.com"}
    (repo / "notes.txt").write_text("Busan, two nights\n", encoding="utf-8")
    subprocess.run(["git", "add", "notes.txt"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "First notes"], cwd=repo, check=True, env=dated)
    with connect_mcp([sys.executable, "-m", "mcp_server_git", "--repository", str(repo)], era=era) as tools:
        assert tools.protocol == ERAS[era] and tools.server.startswith("mcp-git ")
        assert tools.rules["git_status"] == tools.rules["git_log"] == "always"   # read-only, it says
        assert tools.rules["git_commit"] == tools.rules["git_reset"] == "ask"    # it changes the repository
        assert "nothing to commit, working tree clean" in tools["git_status"](repo_path=str(repo))
        assert "Message: First notes" in tools["git_log"](repo_path=str(repo), max_count=1)
        assert dispatch(tools, "git_log", {"repo_path": str(repo), "max_count": "one"}).content == (
            "Error: argument 'max_count' of git_log must be int, got string \"one\".")   # stage 05, from its schema


@pytest.fixture
def page():
    """A web page this machine serves on 127.0.0.1, for the fetch server."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write("<html><body><h1>Trip</h1><p>Busan for two nights, 부산.</p></body></html>".encode())

        def log_message(self, *args):
            pass
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as served:
        threading.Thread(target=served.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{served.server_address[1]}/trip.html"
        served.shutdown()


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_the_reference_fetch_server_s_prompt_and_its_open_world_tool(page, era):
    with connect_mcp([sys.executable, "-m", "mcp_server_fetch", "--allow-private-ips", "--ignore-robots-txt"],
                     era=era) as tools:
        assert tools.protocol == ERAS[era] and list(tools) == ["fetch"]
        assert tools["fetch"].annotations.get("openWorldHint") is True   # its output comes from anywhere: tainted
        assert [p["name"] for p in tools.prompts()] == ["fetch"]
        [message] = tools.prompt("fetch", url=page)
        assert message["role"] == "user" and "Busan for two nights, 부산." in message["content"]
        assert "Busan for two nights" in tools["fetch"](url=page)


def test_the_time_server_in_the_2026_era_without_discover_names_no_server():
    """A pinned revision skips server/discover, so nothing said the server's name (mcp/client/client.py)."""
    with connect_mcp([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"], era="2026-07-28") as t:
        assert t.protocol == "2026-07-28" and t.server == "(a server with no name)"
        assert json.loads(t["convert_time"](source_timezone="Asia/Seoul", time="15:00",
                                            target_timezone="UTC"))["target"]["datetime"].endswith("06:00:00+00:00")


# ---- lesson 13b's your-turn: the annotations-to-rules line, run as a learner writes it (no server needed)
RIGHT_RULE = '    return "always" if hints.get("readOnlyHint") is True else "ask"\n'
FAKE_GIT_TOOLS = """
import types
from course_lib.courseware.printing import say
from course_lib.courseware.your_turn import answered
class Listed(dict):   # what connect_mcp returns, as far as the cell reads it: tools with .annotations, and .rules
    rules = {}
hints = {"git_status": {"readOnlyHint": True, "destructiveHint": False},
         "git_log": {"readOnlyHint": True, "destructiveHint": False},
         "git_add": {"readOnlyHint": False, "destructiveHint": False},
         "git_commit": {"readOnlyHint": False, "destructiveHint": False},
         "git_reset": {"readOnlyHint": False, "destructiveHint": True}}
git_tools = Listed({name: types.SimpleNamespace(annotations=h) for name, h in hints.items()})
git_tools.rules = {name: "always" if h["readOnlyHint"] else "ask" for name, h in hints.items()}
"""


def _rule_cell(body: str) -> str:
    return lesson_cell("13b_mcp_http_and_frameworks.ipynb", "", "def my_rule(hints):", {RIGHT_RULE: body},
                       extra=FAKE_GIT_TOOLS)


def test_the_rule_cell_takes_the_course_s_answer_and_names_what_a_wrong_rule_gets_wrong():
    assert "✓ the library's rules for every git tool, and for the odd hints too" in _rule_cell(RIGHT_RULE)
    truthy = _rule_cell('    return "always" if hints.get("readOnlyHint") else "ask"\n')
    assert "✗ right for the git server, but my_rule({'readOnlyHint': 'true'}) gives 'always', not 'ask'" in truthy
    destructive = _rule_cell('    return "ask" if hints.get("destructiveHint") or not hints.get("readOnlyHint") '
                             'else "always"\n')
    assert "my_rule({'readOnlyHint': True, 'destructiveHint': True}) gives 'ask', not 'always'" in destructive
    inverted = _rule_cell('    return "ask" if hints["readOnlyHint"] else "always"\n')
    assert "✗ not the library's rules for the git server: {'git_status': 'ask'" in inverted
    crashed = _rule_cell('    return "always" if hints["readOnlyHint"] is True else "ask"\n')   # {} has no key
    assert "✗ right for the git server, but my_rule({}) gives \"KeyError: 'readOnlyHint'\", not 'ask'" in crashed
