"""Stage 13, MCP: `course mcp serve` answers the official MCP client; `connect_mcp` turns a server nobody here
wrote (mcp-server-time, the MCP project's reference server) into tools the unchanged Agent uses; every failure
(a tool error, a refused call, a server that dies, hangs or prints junk) is an error observation or a clear
error, never a crash or a hang. Servers here are real subprocesses; nothing reaches the network."""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
import threading
import typing
from pathlib import Path

import anyio
import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.describe import tool_description, tool_spec
from course_lib.dispatch import dispatch
from course_lib.courseware.mcp_serve import READ_ONLY, course_tools
from course_lib.mcp_bridge import as_function, from_mcp_result, schema_problems, tool_to_mcp
from course_lib.mcp_client import connect_mcp
from course_lib.models import ScriptedModel
from course_lib.tools import ToolError

COURSE = Path(sys.executable).parent / "course"   # the console script `pip install` made: what a user runs
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
SEOUL_TO_MUMBAI = {"source_timezone": "Asia/Seoul", "time": "15:00", "target_timezone": "Asia/Kolkata"}


# ---- the official MCP client drives `course mcp serve`, started exactly as a user's MCP client would start it
def official_client(*steps, cwd=None):
    """Run ``steps`` (async functions of a session) against `course mcp serve`; return what each gave."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def main():
        params = StdioServerParameters(command=str(COURSE), args=["mcp", "serve"], cwd=cwd)
        with open(Path(cwd or ".") / ".mcp-test-stderr.txt", "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=30) as session:
                hello = await session.initialize()
                return [hello] + [await step(session) for step in steps]

    try:
        return anyio.run(main)
    finally:
        (Path(cwd or ".") / ".mcp-test-stderr.txt").unlink(missing_ok=True)


def test_the_course_command_is_installed():
    assert COURSE.exists(), "the `course` console script is missing: pip install -e '.[course]'"


def test_the_official_client_lists_the_course_tools_with_stage_03_descriptions_and_schemas(tmp_path):
    hello, listed = official_client(lambda s: s.list_tools(), cwd=tmp_path)
    assert hello.server_info.name == "course-lib" and hello.capabilities.tools is not None
    tools = course_tools()   # the default tools and file_stats
    assert [t.name for t in listed.tools] == list(tools)
    for tool in listed.tools:
        spec = tool_spec(tool.name, tools[tool.name])
        assert tool.description == spec["description"] and tool.input_schema == spec["parameters"]


def test_the_official_client_calls_calculator_24x7_and_gets_168(tmp_path):
    _, result = official_client(lambda s: s.call_tool("calculator", {"expression": "24*7"}), cwd=tmp_path)
    assert result.is_error is False and [(c.type, c.text) for c in result.content] == [("text", "168")]


def test_a_tool_error_is_an_is_error_result_with_the_text_of_stage_05_s_observation(tmp_path):
    """Lesson 13 (cell 10) and exercise 13.2: the result's text is the observation's, "Error: calculator: ..."."""
    _, zero, missing, korean = official_client(
        lambda s: s.call_tool("calculator", {"expression": "1/0"}),
        lambda s: s.call_tool("calculator", {}),
        lambda s: s.call_tool("lookup", {"topic": "단가"}), cwd=tmp_path)
    tools = default_tools()
    assert zero.is_error is True and zero.content[0].text == dispatch(tools, "calculator", {"expression": "1/0"}).content
    assert zero.content[0].text == "Error: calculator: division by zero is undefined; check the divisor"
    assert missing.is_error is True and missing.content[0].text == dispatch(tools, "calculator", {}).content
    assert korean.is_error is False and korean.content[0].text == "개당 $24"   # Korean round-trips


def test_an_unknown_tool_is_a_json_rpc_error_minus_32602_naming_the_tools(tmp_path):
    from mcp import MCPError

    async def unknown(session):
        try:
            await session.call_tool("calculater", {"expression": "1"})
        except MCPError as e:
            return e
    _, error = official_client(unknown, cwd=tmp_path)
    assert error.code == -32602 and "Unknown tool: calculater" in error.message and "calculator" in error.message


def test_the_server_reads_files_in_the_folder_it_was_started_in_and_nowhere_else(tmp_path):
    (tmp_path / "notes.txt").write_text("부산 출장: 2박", encoding="utf-8")
    _, inside, outside = official_client(lambda s: s.call_tool("read_file", {"path": "notes.txt"}),
                                         lambda s: s.call_tool("read_file", {"path": "../x.txt"}), cwd=tmp_path)
    assert inside.is_error is False and inside.content[0].text == "부산 출장: 2박"
    assert outside.is_error is True and str(tmp_path) not in outside.content[0].text


# ---- the same session by hand: one JSON-RPC message per line, as notebook 13 shows it
def test_by_hand_a_session_is_json_lines_and_each_kind_of_error_has_its_code(tmp_path):
    server = subprocess.Popen([str(COURSE), "mcp", "serve"], cwd=tmp_path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        def send(message):
            server.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
            server.stdin.flush()

        def rpc(n, method, params=None):
            send({"jsonrpc": "2.0", "id": n, "method": method, **({"params": params} if params else {})})
            return json.loads(server.stdout.readline())

        hello = rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "by-hand", "version": "0"}})
        assert hello["result"]["protocolVersion"] == "2025-11-25" and hello["result"]["serverInfo"]["name"] == "course-lib"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})   # a notification: no answer
        listed = rpc(2, "tools/list")
        assert listed["id"] == 2 and [t["name"] for t in listed["result"]["tools"]] == list(course_tools())
        assert rpc(3, "tools/call", {"name": "calculator", "arguments": {"expression": "24*7"}})["result"] == \
            {"content": [{"type": "text", "text": "168"}], "isError": False}
        assert rpc(4, "tools/call", {"name": "calculator", "arguments": {"expression": "1/0"}})["result"]["isError"]
        assert rpc(5, "tools/call", {"name": "calculater", "arguments": {}})["error"]["code"] == -32602
        assert rpc(6, "weather/today")["error"]["code"] == -32601   # a method this server does not have
        assert rpc(7, "ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    finally:
        server.stdin.close()
        assert server.wait(timeout=30) == 0   # closing stdin ends the server
        server.stdout.close()
        assert server.stderr.read() == (f"course mcp serve: the workspace is {tmp_path} (read_file and list_files "
                                        "reach only the files in it)\n")   # no logs for a clean session
        server.stderr.close()


@pytest.mark.parametrize("offered, agreed", [("2024-11-05", "2024-11-05"), ("2025-11-25", "2025-11-25"),
                                             ("1999-01-01", "2025-11-25")])
def test_the_handshake_agrees_on_a_version_or_offers_the_server_s_own(tmp_path, offered, agreed):
    """Lesson 13: a server that cannot speak the offered version answers with one it can."""
    server = subprocess.Popen([str(COURSE), "mcp", "serve"], cwd=tmp_path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    try:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": offered, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["result"]["protocolVersion"] == agreed
    finally:
        server.stdin.close()
        assert server.wait(timeout=30) == 0
        server.stdout.close()


# ---- connect_mcp against software nobody here wrote: the reference time server
@pytest.fixture(scope="module")
def time_tools():
    with connect_mcp(TIME_SERVER) as tools:
        yield tools


def test_the_time_server_s_tools_become_functions_stage_03_and_05_understand(time_tools):
    assert sorted(time_tools) == ["convert_time", "get_current_time"] and time_tools.left_out == {}
    assert time_tools.server.startswith("mcp-time ")
    convert = time_tools["convert_time"]
    assert str(inspect.signature(convert)) == "(*, source_timezone: str, time: str, target_timezone: str) -> str"
    assert "- convert_time(source_timezone: str, time: str, target_timezone: str): Convert time between timezones" \
        in tool_description(time_tools)
    spec = tool_spec("convert_time", convert)   # stage 03's schema from the function equals the server's own
    assert spec["parameters"]["required"] == ["source_timezone", "time", "target_timezone"]
    assert {k: v["description"] for k, v in spec["parameters"]["properties"].items()} == \
        {k: v["description"] for k, v in convert.input_schema["properties"].items()}


def test_a_call_through_dispatch_gives_the_server_s_answer(time_tools):
    seen = dispatch(time_tools, "convert_time", SEOUL_TO_MUMBAI)
    assert seen.is_error is False
    answer = json.loads(seen.content)   # the date is today's: only the clock time and the difference are fixed
    assert answer["target"]["datetime"].endswith("T11:30:00+05:30") and answer["time_difference"] == "-3.5h"


def test_the_server_s_is_error_result_is_an_error_observation(time_tools):
    seen = dispatch(time_tools, "get_current_time", {"timezone": "Mars/Olympus"})
    assert seen.is_error and seen.content.startswith("Error: get_current_time: ") and "Mars/Olympus" in seen.content


def test_a_wrong_argument_is_caught_before_anything_is_sent(time_tools):
    seen = dispatch(time_tools, "convert_time", {**SEOUL_TO_MUMBAI, "time": 1500})
    assert seen.is_error and "argument 'time' of convert_time must be str" in seen.content
    with pytest.raises(ToolError, match="arguments.time must be string, not integer"):   # the function's own check
        time_tools["convert_time"](**{**SEOUL_TO_MUMBAI, "time": 1500})


def test_the_unchanged_agent_answers_a_time_zone_question_through_mcp_and_recovers_from_a_tool_error(time_tools):
    model = ScriptedModel([
        {"tool_calls": [{"id": "c1", "name": "convert_time", "args": {**SEOUL_TO_MUMBAI, "source_timezone": "Seoul"}}]},
        {"tool_calls": [{"id": "c2", "name": "convert_time", "args": SEOUL_TO_MUMBAI}]},
        "서울이 오후 3시이면 뭄바이는 오전 11시 30분입니다 (3시간 30분 늦음).",
    ], native_tools=True)
    agent = Agent(time_tools, model)
    assert agent.run("서울이 오후 3시일 때 뭄바이는 몇 시예요?").startswith("서울이 오후 3시이면")
    assert agent.stop_reason == "finish" and agent.steps == 3
    first, second = agent.trace[0].runs[0].observation, agent.trace[1].runs[0].observation
    assert first.is_error and "Seoul" in first.content
    assert not second.is_error and '"time_difference": "-3.5h"' in second.content
    tool_messages = [m for m in agent.history if m["role"] == "tool"]
    assert [m["is_error"] for m in tool_messages] == [True, False]   # the model was told which call failed


def test_the_course_s_own_tools_make_the_round_trip_registry_to_mcp_to_agent(tmp_path):
    with connect_mcp([str(COURSE), "mcp", "serve"], cwd=tmp_path) as tools:
        assert list(tools) == list(course_tools()) and tools.server == "course-lib 0.1.0"
        assert tool_description(tools) == tool_description(course_tools())   # stage 03 sees the same tools
        model = ScriptedModel(['{"tool": "lookup", "args": {"topic": "단가"}}',
                               '{"tool": "calculator", "args": {"expression": "24*7"}}',
                               '{"tool": "calculator", "args": {"expression": "24/0"}}',
                               '{"tool": "finish", "args": {"answer": "Seven units cost $168."}}'])
        agent = Agent(tools, model)
        assert agent.run("How much do seven units cost?") == "Seven units cost $168."
    seen = [run.observation for step in agent.trace for run in step.runs]
    assert [o.content for o in seen[:2]] == ["개당 $24", "168"]
    assert seen[2].is_error and seen[2].content == "Error: calculator: division by zero is undefined; check the divisor"


def test_api_keys_do_not_reach_the_server_and_env_does(tmp_path, monkeypatch):
    script = tmp_path / "env_server.py"
    script.write_text(textwrap.dedent('''
        import os
        from course_lib.courseware.mcp_serve import serve

        def getenv(name: str) -> str:
            """Read one environment variable of the server process.

            Args:
                name: the variable
            """
            return os.environ.get(name, "(not set)")

        serve({"getenv": getenv})
    '''), encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-for-servers")
    with connect_mcp([sys.executable, str(script)], env={"COURSE_MCP_TEST": "given"}, cwd=Path.cwd()) as tools:
        assert tools["getenv"](name="ANTHROPIC_API_KEY") == "(not set)"
        assert tools["getenv"](name="COURSE_MCP_TEST") == "given"


# ---- failures: clear errors, never a crash or a hang
MISBEHAVING = '''
import os, sys, time
from course_lib.courseware.mcp_serve import serve

def crash() -> str:
    """Stop the whole server process at once."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)

def hang() -> str:
    """Never return."""
    time.sleep(600)
    return "late"

def echo(text: str) -> str:
    """Give the text back.

    Args:
        text: what to give back
    """
    return text

serve({"crash": crash, "hang": hang, "echo": echo})
'''


@pytest.fixture
def misbehaving(tmp_path):
    script = tmp_path / "misbehaving_server.py"
    script.write_text(MISBEHAVING, encoding="utf-8")
    return [sys.executable, str(script)]


# A server without the SDK, so that it starts at once: the 2-second timeout also bounds its start, which a busy
# machine can stretch past 2 seconds for a server that imports the SDK. It never answers a call of "hang" (the
# course's own server keeps answering while a tool is busy: test_serve_keeps_a_tool_away_from_the_client_s_pipes...).
HANGING = '''
import json, sys

def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}

TOOLS = [{"name": name, "description": name, "inputSchema": {"type": "object", "properties": properties}}
         for name, properties in (("noisy", {}), ("hang", {}), ("crash", {}), ("echo", {"text": {"type": "string"}}))]
for line in sys.stdin:
    message = json.loads(line)
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:
        continue   # a notification (initialized, cancelled): no answer
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "hanging", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method != "tools/call":   # server/discover too: a handshake-era server does not know it
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}}),
              flush=True)
        continue
    elif params.get("name") == "hang":
        continue   # as a tool that never returns
    elif params.get("name") == "noisy":
        print("Traceback: an earlier call went wrong", file=sys.stderr, flush=True)
        result = text("said it")
    elif params.get("name") == "crash":
        print("about to crash", file=sys.stderr, flush=True)
        sys.exit(3)
    else:
        result = text(params["arguments"]["text"])
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
'''


@pytest.fixture
def hanging(tmp_path):
    script = tmp_path / "hanging_server.py"
    script.write_text(HANGING, encoding="utf-8")
    return [sys.executable, str(script)]


def test_a_tool_that_hangs_is_an_error_observation_after_the_timeout_and_the_server_goes_on(hanging):
    with connect_mcp(hanging, timeout=2) as tools:
        hung = dispatch(tools, "hang", {})
        assert hung.is_error and "did not answer: no answer within 2 seconds" in hung.content
        assert dispatch(tools, "echo", {"text": "still here"}).content == "still here"


def test_a_server_that_dies_mid_run_is_an_error_observation_with_its_last_words(misbehaving):
    with connect_mcp(misbehaving) as tools:
        died = dispatch(tools, "crash", {})
        assert died.is_error and "it stopped" in died.content and "about to crash" in died.content
        after = dispatch(tools, "echo", {"text": "anyone?"})
        assert after.is_error and "it stopped" in after.content
        assert "misbehaving_server.py" in died.content and str(Path(sys.executable).parent) not in died.content


def test_a_tool_used_after_the_block_says_the_connection_is_closed(misbehaving):
    with connect_mcp(misbehaving) as tools:
        echo = tools["echo"]
    seen = dispatch({"echo": echo}, "echo", {"text": "late"})
    assert seen.is_error and "the connection is closed" in seen.content


@pytest.mark.parametrize("command, said", [
    (["no-such-mcp-server-xyz"], "cannot run it"),
    ([sys.executable, "-c", "import sys; print('no config file found', file=sys.stderr); sys.exit(2)"],
     "it stopped (the connection closed). Its last words on stderr: no config file found"),
    ([sys.executable, "-c", "print('Server starting...')"], "it printed 'Server starting...' on stdout, which is not"),
    ([sys.executable, "-c", "import time; time.sleep(120)"], "no answer within 2 seconds (the request was "
     "cancelled; before it, the SDK's server/discover probe waits up to 10 seconds, its own limit, in era \"auto\")"),
])
def test_a_server_that_cannot_start_is_a_connection_error_that_says_why(command, said):
    with pytest.raises(ConnectionError, match="could not start the MCP server") as caught:
        with connect_mcp(command, timeout=2):
            pass
    assert said in str(caught.value)


def test_in_the_legacy_era_a_silent_server_is_given_up_after_the_timeout_alone():
    """Lesson 13a's hang guard: the handshake goes first, so `timeout` is all the waiting (no discover probe)."""
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp([sys.executable, "-c", "import time; time.sleep(120)"], timeout=2, era="legacy"):
            pass
    assert str(caught.value).endswith(": no answer within 2 seconds (the request was cancelled)")


@pytest.mark.parametrize("command", [[], "python -m server", [sys.executable, 3], None])
def test_a_command_is_a_list_of_strings(command):
    with pytest.raises(ValueError, match="non-empty list of strings"):
        with connect_mcp(command):
            pass


# ---- the plain-data pieces
def test_tool_to_mcp_is_stage_03_s_spec_under_mcp_s_names():
    for name, func in default_tools().items():
        spec = tool_spec(name, func)
        assert tool_to_mcp(name, func) == {"name": name, "description": spec["description"],
                                           "inputSchema": spec["parameters"]}
    calc = default_tools()["calculator"]
    assert tool_to_mcp("admin.tools-v2", calc)["name"] == "admin.tools-v2"
    for bad in ["", "two words", "계산기", "x" * 129, 42]:
        with pytest.raises(ValueError, match="not a good MCP tool name"):
            tool_to_mcp(bad, calc)


@pytest.mark.parametrize("result, expected", [
    ({"content": [{"type": "text", "text": "168"}], "isError": False}, ("168", False)),
    ({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, ("a\nb", False)),
    ({"content": [{"type": "text", "text": "no"}], "isError": True}, ("no", True)),
    ({"content": [{"type": "text", "text": "no"}], "isError": "true"}, ("no", False)),   # only JSON true
    ({"content": [{"type": "image", "data": "iVBO", "mimeType": "image/png"}]}, ("[image: image/png]", False)),
    ({"content": [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}}]}, ("inside", False)),
    ({"content": [{"type": "resource", "resource": {"uri": "file:///a.png", "blob": "AA=="}}]},
     ("[resource: file:///a.png]", False)),
    ({"content": [{"type": "resource_link", "uri": "file:///b.rs", "name": "b.rs"}]},
     ("[resource_link: file:///b.rs]", False)),
    ({"content": [], "structuredContent": {"시간": "11:30"}}, ('{"시간": "11:30"}', False)),
    ({"content": []}, ("(the tool returned nothing)", False)),
    ({}, ("(the tool returned nothing)", False)),
])
def test_from_mcp_result(result, expected):
    assert from_mcp_result(result) == expected


def test_a_block_without_text_uri_or_mime_type_is_named_not_shown_and_tool_names_may_be_upper_case():
    assert from_mcp_result({"content": [{"type": "audio"}]}) == ("[audio: not shown]", False)
    calc = default_tools()["calculator"]
    assert tool_to_mcp("Calc_V2", calc)["name"] == "Calc_V2" and tool_to_mcp("x" * 128, calc)["name"] == "x" * 128
    with pytest.raises(ValueError) as refused:
        tool_to_mcp("two words", calc)
    assert str(refused.value) == "'two words' is not a good MCP tool name: use 1 to 128 letters, digits, _, - or ."


def test_a_schema_python_has_no_annotation_for_is_any_and_one_that_is_not_json_schema_is_refused():
    func = as_function({"name": "t", "inputSchema": {"type": "object", "properties": {"x": {"anyOf": [
        {"type": "string"}, {"type": "integer"}]}}}}, lambda n, a: {})
    assert typing.get_type_hints(func)["x"] is typing.Any
    with pytest.raises(ValueError, match=r"^its input schema is not a JSON Schema that can be checked: 'decimal' "):
        as_function({"name": "t", "inputSchema": {"type": "object", "properties": {"x": {"type": "decimal"}}}},
                    lambda n, a: {})


def test_a_tool_listed_without_a_schema_takes_no_arguments_and_every_problem_is_named():
    bare = as_function({"name": "now"}, lambda n, a: {"content": [{"type": "text", "text": f"{n} {a}"}]})
    assert bare.input_schema == {"type": "object"} and bare() == "now {}"
    assert bare.__name__ == "now" and bare.__doc__ == "The MCP tool now (its server gave no description)."
    assert schema_problems({"type": "number"}, 3) == [] and schema_problems({"type": "number"}, 2.5) == []
    book = as_function({"name": "book", "inputSchema": SCHEMA}, lambda n, a: {})
    with pytest.raises(ToolError) as refused:
        book(city="Tokyo", nights=0)
    assert str(refused.value) == ('the arguments do not fit the tool\'s input schema: arguments.city must be one of '
                                  '"Busan", "Seoul"; arguments.nights must be at least 1')


def test_schema_problems_at_the_edges_lists_every_problem_and_writes_korean_as_korean():
    assert schema_problems(SCHEMA, {"city": "Busan", "nights": 1}) == [] == schema_problems(SCHEMA, {
        "city": "Busan", "nights": 30})   # minimum and maximum are inclusive
    assert schema_problems({"type": "number"}, True) == ["arguments must be number, not boolean"]
    with pytest.raises(ValueError, match="^it is not a JSON Schema that can be checked"):
        schema_problems({"type": "decimal"}, 1)   # no JSON type: the schema is at fault, not the value
    assert schema_problems({"enum": ["서울", "부산"]}, "x") == ['arguments must be one of "서울", "부산"']
    other = {"type": "object", "required": ["a"], "additionalProperties": {"type": "integer"}}
    assert schema_problems(other, {"b": "x", "c": "y"}) == [
        "arguments is missing 'a'", "arguments.b must be integer, not string", "arguments.c must be integer, not string"]
    assert schema_problems({"type": "array", "items": {"type": "integer"}}, [1, "a", "b"]) == [
        "arguments[1] must be integer, not string", "arguments[2] must be integer, not string"]
    assert schema_problems({"type": "string", "items": {"type": "integer"}}, "ab") == []   # items: lists only


def test_from_mcp_result_refuses_what_is_not_a_result():
    with pytest.raises(ValueError, match="a tools/call result is a JSON object, not array"):
        from_mcp_result(["168"])
    for block in ["168", {"type": "text"}, {"type": "text", "text": None}, 7]:   # AttributeError, KeyError before
        with pytest.raises(ValueError, match=r"^the MCP server's result has a malformed content block: "):
            from_mcp_result({"content": [{"type": "text", "text": "fine"}, block]})


SCHEMA = {"type": "object", "additionalProperties": False, "required": ["city", "nights"],
          "properties": {"city": {"type": "string", "enum": ["Busan", "Seoul"]},
                         "nights": {"type": "integer", "minimum": 1, "maximum": 30},
                         "tags": {"type": "array", "items": {"type": "string"}},
                         "note": {"type": ["string", "null"]}}}


@pytest.mark.parametrize("args, problems", [
    ({"city": "Busan", "nights": 2}, []),
    ({"city": "Busan", "nights": 2.0, "tags": ["a"], "note": None}, []),   # 2.0 is an integer in JSON Schema
    ({"city": "Busan"}, ["arguments is missing 'nights'"]),
    ({"city": "Tokyo", "nights": 2}, ['arguments.city must be one of "Busan", "Seoul"']),
    ({"city": "Busan", "nights": True}, ["arguments.nights must be integer, not boolean"]),
    ({"city": "Busan", "nights": 0}, ["arguments.nights must be at least 1"]),
    ({"city": "Busan", "nights": 31}, ["arguments.nights must be at most 30"]),
    ({"city": "Busan", "nights": 2, "tags": ["a", 3]}, ["arguments.tags[1] must be string, not integer"]),
    ({"city": "Busan", "nights": 2, "note": 5}, ["arguments.note must be string or null, not integer"]),
    ({"city": "Busan", "nights": 2, "days": 3}, ["arguments has no 'days' (it takes: city, nights, tags, note)"]),
    ([], ["arguments must be object, not array"]),
])
def test_schema_problems(args, problems):
    assert schema_problems(SCHEMA, args) == problems


def test_as_function_builds_a_signature_docstring_and_checks_from_the_schema_alone():
    sent = []

    def call(name, args):
        sent.append((name, args))
        return {"content": [{"type": "text", "text": f"booked {args['city']}"}], "isError": args.get("nights") == 9}

    tool = {"name": "book-trip", "description": "Book a trip.\n  Pays nothing yet.", "inputSchema": SCHEMA}
    book = as_function(tool, call)
    assert book.__name__ == "mcp_tool" and book.__doc__.splitlines()[0] == "Book a trip. Pays nothing yet."
    hints = typing.get_type_hints(book)
    assert hints["city"] == typing.Literal["Busan", "Seoul"] and hints["nights"] is int
    assert hints["tags"] == list[str] and hints["note"] == typing.Optional[str]
    assert [p.default for p in inspect.signature(book).parameters.values()] == \
        [inspect.Parameter.empty, inspect.Parameter.empty, None, None]
    spec = tool_spec("book-trip", book)["parameters"]   # stage 03 can describe it: every parameter is documented
    assert spec["required"] == ["city", "nights"] and spec["properties"]["tags"]["description"] == \
        "(the server did not describe it)"
    assert dispatch({"book": book}, "book", {"city": "Busan", "nights": 2}).content == "booked Busan"
    wrong = dispatch({"book": book}, "book", {"city": "Tokyo", "nights": 2})   # stage 05 checks the Literal
    assert wrong.content == "Error: argument 'city' of book must be Literal['Busan', 'Seoul'], got string \"Tokyo\"."
    too_long = dispatch({"book": book}, "book", {"city": "Busan", "nights": 99})   # the function checks the rest
    assert too_long.content == ("Error: book: the arguments do not fit the tool's input schema: arguments.nights "
                                "must be at most 30")
    assert dispatch({"book": book}, "book", {"city": "Busan", "nights": 9}).content == "Error: book: booked Busan"
    assert sent == [("book-trip", {"city": "Busan", "nights": 2}), ("book-trip", {"city": "Busan", "nights": 9})]


def test_as_function_refuses_a_parameter_that_cannot_be_a_python_name_and_connect_leaves_that_tool_out():
    for name in ["source-tz", "class", "2nd"]:
        with pytest.raises(ValueError, match="not a Python name"):
            as_function({"name": "t", "inputSchema": {"type": "object", "properties": {name: {"type": "string"}}}},
                        lambda n, a: {})


def test_as_function_types_it_cannot_say_exactly_are_any_and_a_missing_description_is_named():
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"x": {"type": "array"}, "y": {}}}}
    func = as_function(tool, lambda n, a: {"content": [{"type": "text", "text": "ok"}]})
    assert typing.get_type_hints(func) == {"x": typing.Any, "y": typing.Any, "return": str}
    assert func.__doc__.startswith("The MCP tool t (its server gave no description).")
    assert tool_spec("t", func)["parameters"]["properties"]["x"] == {"description": "(the server did not describe it)"}


ODD = '''
import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

PAGES = {None: ([types.Tool(name="strict", description="Refuses every call.", input_schema={"type": "object"})], "p2"),
         "p2": ([types.Tool(name="dashed", description="Takes a name Python cannot have.",
                            input_schema={"type": "object", "properties": {"source-tz": {"type": "string"}}})], None)}

async def list_tools(ctx, params):   # two pages: the client must follow nextCursor
    tools, cursor = PAGES[params.cursor if params else None]
    return types.ListToolsResult(tools=tools, next_cursor=cursor)

async def call_tool(ctx, params):
    raise MCPError(types.INVALID_PARAMS, f"{params.name} takes no calls today")

async def main(server=Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)):
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(main)
'''


def test_a_paginated_list_a_refused_call_and_a_tool_python_cannot_call(tmp_path):
    script = tmp_path / "odd_server.py"
    script.write_text(ODD, encoding="utf-8")
    with connect_mcp([sys.executable, str(script)]) as tools:
        assert list(tools) == ["strict"] and tools.server == "odd"   # page 2 was read: dashed is known
        assert tools.left_out == {"dashed": "its parameter 'source-tz' is not a Python name"}
        seen = dispatch(tools, "strict", {})
    assert seen.is_error and seen.content == ("Error: strict: the server refused the call: strict takes no calls "
                                              "today (JSON-RPC error -32602)")


def test_importing_course_lib_and_connect_mcp_loads_no_sdk():
    code = ("import sys; from course_lib import connect_mcp; import course_lib.mcp_bridge, course_lib.mcp_client; "
            "print([m for m in ('mcp', 'anyio', 'pydantic', 'httpx') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]" and result.stderr == ""


# ---- a framework's loop: the Anthropic SDK's tool runner, against the stand-in, with the same MCP tool
def test_the_anthropic_sdk_s_tool_runner_drives_the_same_mcp_tool_and_sends_its_error_back_with_is_error(time_tools):
    from anthropic import Anthropic
    from anthropic.lib.tools import ToolError as SDKToolError, beta_tool
    from course_lib.models.catalog import model_id
    from course_lib.courseware.standin import StandInServer

    convert = time_tools["convert_time"]

    def convert_time(**args):   # notebook 13's adapter: our ToolError becomes the SDK's, sent with is_error
        try:
            return convert(**args)
        except ToolError as e:
            raise SDKToolError(str(e)) from None
    tool = beta_tool(convert_time, description=convert.__doc__.splitlines()[0], input_schema=convert.input_schema)
    script = [{"tool_calls": [{"name": "convert_time", "args": {**SEOUL_TO_MUMBAI, "source_timezone": "Seoul"}}]},
              {"tool_calls": [{"name": "convert_time", "args": SEOUL_TO_MUMBAI}]},
              "When it is 15:00 in Seoul, it is 11:30 in Mumbai."]
    with StandInServer(script) as server:
        client = Anthropic(base_url=server.url, api_key="sk-standin-test", max_retries=0)
        runner = client.beta.messages.tool_runner(model=model_id("anthropic"), max_tokens=1024, thread=False,
                                                  messages=[{"role": "user", "content": "서울 15시는 뭄바이 몇 시?"}],
                                                  tools=[tool])
        stops = [message.stop_reason for message in runner]
        final = runner.until_done()
    assert stops == ["tool_use", "tool_use", "end_turn"] and final.content[0].text.endswith("11:30 in Mumbai.")
    assert server.problems == [] and len(server.requests) == 3
    bodies = [r["body"] for r in server.requests]
    assert [len(b["messages"]) for b in bodies] == [1, 3, 5]   # thread=False: the whole history every time
    assert bodies[0]["tools"][0]["input_schema"] == convert.input_schema
    first, second = bodies[1]["messages"][-1]["content"][0], bodies[2]["messages"][-1]["content"][0]
    assert first["type"] == "tool_result" and first["is_error"] is True and "Seoul" in str(first["content"])
    assert second.get("is_error") is not True and "-3.5h" in str(second["content"])
    with StandInServer(["No tools needed."]) as server:   # lesson 13: without thread=False the SDK asks for a thread
        client = Anthropic(base_url=server.url, api_key="sk-standin-test", max_retries=0)
        client.beta.messages.tool_runner(model=model_id("anthropic"), max_tokens=1024, tools=[tool],
                                         messages=[{"role": "user", "content": "hi"}]).until_done()
    assert server.requests[0]["body"]["thread"] == {"type": "create"}
    assert "thread" not in bodies[0]


def test_a_garbled_server_is_explained_once_without_the_sdk_s_traceback_on_stderr():
    code = ("import sys\nfrom course_lib import connect_mcp\n"
            "for _ in range(2):\n"
            "    try:\n"
            "        with connect_mcp([sys.executable, '-c', 'print(\"Server starting...\")']):\n"
            "            pass\n"
            "    except ConnectionError as e:\n"
            "        print(e)\n"
            "import logging; print(len(logging.getLogger('mcp').handlers))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all("not a JSON-RPC message" in line for line in lines[:2]) and lines[2] == "1"


def test_tools_from_a_server_combine_with_the_course_s_own_in_one_agent(time_tools):
    """Lesson 13's last section: mappings combine, `{**tools, **time_tools}`."""
    combined = {**default_tools(), **time_tools}
    agent = Agent(combined, ScriptedModel(['{"tool": "finish", "args": {"answer": "done"}}']))
    assert agent.run("hi") == "done"
    assert [line.split("(")[0] for line in tool_description(combined).splitlines()] == \
        ["- calculator", "- read_file", "- list_files", "- lookup", "- search_docs", "- get_current_time",
         "- convert_time"]
    assert "- convert_time(source_timezone: str" in agent.system_prompt


def test_no_agent_framework_is_in_the_learner_s_install():
    """Lesson 13: frameworks stay out of the default install; the SDKs and MCP are all it brings."""
    import importlib.metadata
    import tomllib
    from packaging.requirements import Requirement
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    if "project" in pyproject:
        names = {Requirement(line).name.lower() for line in pyproject["project"]["optional-dependencies"]["course"]}
    else:   # the scratch copy scripts/mutate.py makes has its own pyproject.toml: read what pip installed from ours
        needs = map(Requirement, importlib.metadata.requires("course_lib"))
        names = {r.name.lower() for r in needs if r.marker and r.marker.evaluate({"extra": "course"})}
    assert {"mcp", "mcp-server-time", "anthropic"} <= names
    assert not names & {"langchain", "langgraph", "smolagents", "openai-agents", "crewai", "llama-index", "autogen"}


# ---- what JSON-RPC 2.0 says a server answers, and closing stdin (checked with the exact command a learner runs)
class Session:
    """`course mcp serve` by hand, as lesson 13 drives it: every wait for a line has a deadline."""

    def __init__(self, cwd, *args, env=None):
        import queue
        import threading
        self.server = subprocess.Popen([str(COURSE), "mcp", "serve", *args], cwd=cwd, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                                       env=env)
        self.lines, self.empty = queue.Queue(), queue.Empty
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.server.stdout], daemon=True).start()

    def send(self, line: str):
        self.server.stdin.write(line + "\n")
        self.server.stdin.flush()

    def answer(self, seconds=30):
        try:
            return json.loads(self.lines.get(timeout=seconds))
        except self.empty:
            return None

    def hello(self):
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
        assert self.answer()["id"] == 0
        self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def close(self):
        self.server.stdin.close()
        code = self.server.wait(timeout=30)
        stderr = self.server.stderr.read()
        self.server.stderr.close()
        return code, stderr


DROPPED = [   # (line, the error code it is answered with, the id of the answer)
    ('{"id": 5, "method": "ping"}', -32600, 5),                                 # no "jsonrpc"
    ('{"jsonrpc": "1.0", "id": 6, "method": "ping"}', -32600, 6),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),        # MCP: an id is never null
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 7}', -32600, 7),                                 # no method
    ('{"jsonrpc": "2.0", "method": 1}', -32600, None),                          # invalid, even without an id
    ('[1, 2]', -32600, None),                                                   # MCP sends no batches
    ('"ping"', -32600, None),
    ('{"jsonrpc": "2.0", "id": 7, "method": "ping"', -32700, None),            # a missing brace: not JSON
    ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": ["calculator"]}', -32602, 8),
]


def test_course_mcp_serve_answers_a_message_the_sdk_would_drop_as_json_rpc_2_0_says(tmp_path):
    """JSON-RPC 2.0, section 5.1: a parse error is -32700 with id null, an invalid request -32600; the MCP SDK
    alone drops both without a word, and a client that waits for the answer waits for ever. One session takes
    them all, one after another: after each, a notification still gets no answer and a ping its own."""
    session = Session(tmp_path)
    try:
        session.hello()
        for k, (line, code, n) in enumerate(DROPPED):
            session.send(line)
            answer = session.answer()
            assert answer is not None, f"no answer to {line}"
            assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", n, code), (line, answer)
            assert answer["error"]["message"], line
            session.send('{"jsonrpc": "2.0", "method": "notifications/nothing"}')   # a notification: no answer
            session.send(json.dumps({"jsonrpc": "2.0", "id": 100 + k, "method": "ping"}))   # the session goes on
            assert session.answer() == {"jsonrpc": "2.0", "id": 100 + k, "result": {}}, f"after {line}"
    finally:
        assert session.close()[0] == 0


def test_closing_stdin_right_after_the_requests_loses_no_answer(tmp_path):
    """Piping requests into `course mcp serve`: on EOF it answers every call it has begun, then exits."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
              "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
               "params": {"name": "calculator", "arguments": {"expression": f"{n}*2"}}} for n in range(2, 22)]
    lines += [{"jsonrpc": "2.0", "id": 22, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 23, "method": "ping"}]
    result = subprocess.run([str(COURSE), "mcp", "serve"], cwd=tmp_path, capture_output=True, text=True,
                            input="".join(json.dumps(m) + "\n" for m in lines), timeout=60)
    answers = {a["id"]: a for a in map(json.loads, result.stdout.splitlines())}
    assert result.returncode == 0 and sorted(answers) == list(range(1, 24)), result.stderr
    assert [answers[n]["result"]["content"][0]["text"] for n in range(2, 22)] == [str(n * 2) for n in range(2, 22)]


SLOW = '''
import sys, time
from course_lib.courseware.mcp_serve import serve

def slow() -> str:
    """Take a moment, then answer."""
    time.sleep(1)
    print("a tool that prints: this goes to stderr, never to the client", flush=True)
    return "done"

serve({"slow": slow})
'''


def test_a_call_still_running_when_stdin_closes_is_answered_before_the_server_exits(tmp_path):
    script = tmp_path / "slow_server.py"
    script.write_text(SLOW, encoding="utf-8")
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
              "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}]
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                            input="".join(json.dumps(m) + "\n" for m in lines))
    answers = [json.loads(line) for line in result.stdout.splitlines()]   # every line on stdout is JSON-RPC
    assert [a["id"] for a in answers] == [1, 2] and answers[1]["result"]["content"][0]["text"] == "done"
    assert "a tool that prints" in result.stderr and result.returncode == 0


def test_a_client_that_closes_both_pipes_during_calls_ends_the_server_quietly(tmp_path):
    """Nobody is left to answer: no ExceptionGroup traceback of a broken pipe, and exit 0 (it was exit 1)."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    server = subprocess.Popen([str(COURSE), "mcp", "serve"], cwd=tmp_path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    server.stdin.write(b"".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "list_files", "arguments": {}, "_meta": meta}}).encode() + b"\n" for n in range(50)))
    server.stdin.flush()
    server.stdout.close()   # gone before the answers come back
    server.stdin.close()
    assert server.wait(timeout=60) == 0
    said = server.stderr.read().decode()
    server.stderr.close()
    assert "Traceback" not in said and "Error" not in said, said


def test_course_mcp_serve_help_says_what_it_serves_where_and_how_it_ends():
    result = subprocess.run([str(COURSE), "mcp", "serve", "--help"], capture_output=True, text=True, timeout=60)
    text = " ".join(result.stdout.split())
    assert result.returncode == 0
    for said in ["calculator, read_file, list_files, lookup, search_docs", "stdin and stdout",
                 "read_file and list_files reach only the workspace", "the current folder", "--workspace",
                 "will not serve / or your home folder",
                 "When stdin closes, it finishes the calls it is working on, then exits"]:
        assert said in text, said


def test_course_mcp_serve_names_its_workspace_on_stderr_and_serves_only_that_folder(tmp_path):
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "notes.txt").write_text("메모", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("not for the client", encoding="utf-8")
    for cwd, args in [(tmp_path / "inside", []), (tmp_path, ["--workspace", "inside"])]:
        session = Session(cwd, *args)
        session.hello()
        session.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": "list_files", "arguments": {}}}))
        listed = session.answer()["result"]["content"][0]["text"]
        assert "notes.txt" in listed and "secret" not in listed
        code, stderr = session.close()
        assert code == 0 and stderr == (f"course mcp serve: the workspace is {tmp_path / 'inside'} "
                                        "(read_file and list_files reach only the files in it)\n")


@pytest.mark.parametrize("where", ["/", "home"])
def test_course_mcp_serve_will_not_serve_the_whole_filesystem_or_the_home_folder(tmp_path, where):
    env = {**os.environ, "HOME": str(tmp_path), "USERPROFILE": str(tmp_path)}
    folder = "/" if where == "/" else str(tmp_path)
    for args, cwd in [([], folder), (["--workspace", "/" if where == "/" else "~"], tmp_path)]:
        result = subprocess.run([str(COURSE), "mcp", "serve", *args], cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=60, input="")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith(f"course mcp serve: will not serve {folder}: read_file and list_files "
                                        "would reach every file in it"), result.stderr


def test_course_mcp_serve_will_not_serve_a_folder_that_holds_the_home_folder_links_resolved(tmp_path):
    root = tmp_path.resolve()
    home, other = root / "users" / "learner", root / "users" / "other"
    home.mkdir(parents=True)
    other.mkdir()
    (root / "link").symlink_to(root / "users", target_is_directory=True)
    env = {**os.environ, "HOME": str(home), "USERPROFILE": str(home)}
    holding = "a folder holding your home folder"
    for args, folder, what in [(["--workspace", "~/.."], root / "users", holding), ([], root, holding),
                               (["--workspace", str(root / "link")], root / "users", holding),
                               (["--workspace", "link/learner"], home, "your home folder"),
                               (["--workspace", "/"], Path("/"), "the file system's root")]:
        result = subprocess.run([str(COURSE), "mcp", "serve", *args], cwd=root, env=env, capture_output=True,
                                text=True, timeout=60, input="")
        assert (result.returncode, result.stdout, result.stderr) == (2, "", (
            f"course mcp serve: will not serve {folder}: read_file and list_files would reach every file in it "
            f"({what}). Start it in a project folder, or pass --workspace FOLDER.\n")), args
    beside = subprocess.run([str(COURSE), "mcp", "serve", "--workspace", "~/../other"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=60, input="")   # beside the home folder: served
    assert beside.returncode == 0 and beside.stderr.startswith(f"course mcp serve: the workspace is {other} ")


def test_course_mcp_serve_refuses_a_workspace_that_is_not_a_folder(tmp_path):
    result = subprocess.run([str(COURSE), "mcp", "serve", "--workspace", str(tmp_path / "nope")], capture_output=True,
                            text=True, timeout=60, input="")
    assert result.returncode == 2 and "not a folder" in result.stderr and "Traceback" not in result.stderr


# ---- connect_mcp says what is known, in a sentence
FAKE = '''
import json, sys
answers = json.loads(sys.argv[1])   # method -> the result to send back
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answers.get(message["method"], {})}),
              flush=True)
'''
GOOD_HELLO = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "f", "version": "1"}}
ECHO = [sys.executable, "-c", "import sys\nfor line in sys.stdin: print(line, end='', flush=True)"]


def test_a_program_that_echoes_what_it_reads_is_not_an_mcp_server_and_connect_mcp_says_so():
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp(ECHO, timeout=10):
            pass
    assert str(caught.value).endswith(": it is not an MCP server: it sent our own request back, as a "
                                      "program that echoes what it reads (such as `cat`) does")
    assert "Method not found" not in str(caught.value)


def test_an_answer_that_breaks_the_spec_is_one_sentence_not_a_pydantic_dump(tmp_path):
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE, encoding="utf-8")
    bad_hello = {"protocolVersion": "2025-11-25", "serverInfo": {"name": 3}}
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp([sys.executable, str(script), json.dumps({"initialize": bad_hello})], timeout=10):
            pass
    said = str(caught.value)
    assert said.endswith(": its answer does not follow the MCP spec: InitializeResult has 3 problems, the first: "
                         "capabilities: Field required") and "pydantic.dev" not in said and "\n" not in said, said
    answers = {"initialize": GOOD_HELLO, "tools/call": {"content": "not a list"},
               "tools/list": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}
    with connect_mcp([sys.executable, str(script), json.dumps(answers)], timeout=10) as tools:
        seen = dispatch(tools, "t", {})
    assert seen.is_error and "pydantic.dev" not in seen.content and "\n" not in seen.content
    assert seen.content.startswith(f"Error: t: the MCP server `python {script} ") and seen.content.endswith(
        "gave an answer that does not fit: its answer does not follow the MCP spec: CallToolResult has 1 problem, "
        "the first: content: Input should be a valid list")


def test_the_command_is_shown_as_given_except_this_python():
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp(["/etc/passwd"]):
            pass
    assert str(caught.value).startswith("could not start the MCP server `/etc/passwd`: cannot run it (")
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp([sys.executable, "-c", "import sys; sys.exit(1)"]):
            pass
    assert str(caught.value).startswith("could not start the MCP server `python -c import sys; sys.exit(1)`:")


def test_the_last_words_after_a_failed_call_are_only_what_the_server_said_since_that_call(hanging):
    with connect_mcp(hanging, timeout=2) as tools:
        assert dispatch(tools, "noisy", {}).content == "said it"
        hung = dispatch(tools, "hang", {})
        assert hung.is_error and "no answer within 2 seconds" in hung.content and "earlier" not in hung.content
        died = dispatch(tools, "crash", {})
        assert died.content.endswith("it stopped (the connection closed). Its last words on stderr: about to crash")


STRAY = '''
import sys
from course_lib.courseware.mcp_serve import serve
print("Server starting...", flush=True)   # the bug: a line on stdout before serving

def echo(text: str) -> str:
    """Give the text back.

    Args:
        text: what to give back
    """
    return text

serve({"echo": echo})
'''


def test_a_stray_line_on_stdout_is_skipped_and_the_session_carries_on(tmp_path):
    """Lesson 13: the official client logs the line and carries on, and so does connect_mcp."""
    script = tmp_path / "stray_server.py"
    script.write_text(STRAY, encoding="utf-8")
    with connect_mcp([sys.executable, str(script)], timeout=10) as tools:
        assert dispatch(tools, "echo", {"text": "still fine"}).content == "still fine"

    async def official():
        from mcp import ClientSession, StdioServerParameters, stdio_client
        params = StdioServerParameters(command=sys.executable, args=[str(script)], cwd=Path.cwd())
        # errlog is the SDK's default, sys.stderr, but today's: its default is the one of the session that first
        # imported it, closed by now when pytest runs twice in one process (as mutmut does)
        async with stdio_client(params, errlog=sys.stderr) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=30) as s:
            await s.initialize()
            return (await s.call_tool("echo", {"text": "ok"})).content[0].text
    import logging

    class Seen(logging.Handler):
        def emit(self, record):
            seen.append(record)
    seen, handler = [], Seen(logging.ERROR)
    logging.getLogger("mcp").addHandler(handler)
    try:
        assert anyio.run(official) == "ok"
    finally:
        logging.getLogger("mcp").removeHandler(handler)
    assert any("Server starting..." in str(r.exc_info[1]) for r in seen if r.exc_info)   # logged as an error


def test_a_server_that_prints_and_then_stops_is_described_as_exactly_that():
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp([sys.executable, "-c", "print('Server starting...')"], timeout=10):
            pass
    assert str(caught.value) == ("could not start the MCP server `python -c print('Server starting...')`: it printed "
                                 "'Server starting...' on stdout, which is not a JSON-RPC message (a server's logs go "
                                 "to stderr), then stopped")


def test_the_time_server_s_error_reaches_the_model_without_a_doubled_prefix(time_tools):
    seen = dispatch(time_tools, "get_current_time", {"timezone": "Seoul"})
    assert seen.content == "Error: get_current_time: Invalid timezone: 'No time zone found with key Seoul'"


def test_schema_problems_follows_json_schema_on_equal_numbers_other_keys_and_booleans():
    """Exercise 13.3 states these rules: enum compares numbers by value, additionalProperties may be a schema,
    minimum and maximum concern numbers only, and a digit string is a string."""
    assert schema_problems({"enum": [1, 2, 3]}, 2.0) == [] and schema_problems({"enum": [1.0]}, 1) == []
    assert schema_problems({"enum": [1, 2]}, True) == ["arguments must be one of 1, 2"]   # true is not 1
    assert schema_problems({"type": "object", "additionalProperties": False}, {"x": 1}) == \
        ["arguments has no 'x' (it takes: nothing)"]
    other = {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    assert schema_problems(other, {"a": "any", "b": 2, "c": "x"}) == ["arguments.c must be integer, not string"]
    assert schema_problems({"type": "object", "additionalProperties": True}, {"x": 1}) == []
    assert schema_problems({"minimum": 1, "maximum": 0}, False) == []   # true and false are not numbers
    assert schema_problems({"type": "integer"}, "2") == ["arguments must be integer, not string"]


# ---- lesson 13a's own cells, run as a learner changes them: they answer with ✓/✗ and never hang
LESSON = Path(__file__).resolve().parent.parent / "notebooks" / "13a_mcp_by_hand.ipynb"


def lesson_code(*firsts: str) -> str:
    """The code cells of lesson 13a that start with each of ``firsts``, in that order. A your-turn cell is taken as
    a learner fills it in: the course's answer folded below it, without its first line (# The course's answer)."""
    cells = []
    for cell in json.loads(LESSON.read_text(encoding="utf-8"))["cells"]:
        tags = cell["metadata"].get("tags", [])
        if cell["cell_type"] == "code" and "your-turn" not in tags:
            source = "".join(cell["source"])
            cells.append(source.removeprefix("# The course's answer\n") if "answer" in tags else source)
    return "\n\n".join(next(c for c in cells if c.startswith(first)) for first in firsts)


def run_lesson(code: str):
    """Run lesson code in its folder, in a session of its own (a Ctrl-C sent to its group reaches nothing else)."""
    return subprocess.run([sys.executable, "-c", code], cwd=LESSON.parent, capture_output=True, text=True,
                          encoding="utf-8", timeout=180, start_new_session=True)


START, CLOSE = ("import inspect", "server = subprocess.Popen"), "server.stdin.close()"


def test_the_guessing_cell_takes_any_request_a_learner_adds_such_as_a_discover_and_names_a_mistyped_label():
    cell = lesson_code("guesses = {").replace("requests = {", 'requests = {\n    "a discover": ("server/discover", None),', 1)
    assert cell.count('"lookup without arguments":') == 2
    cell = cell.replace('"lookup without arguments":', '"lookup with no arguments":', 1)   # in the guesses
    result = run_lesson(lesson_code(*START) + "\n\n" + cell + "\n\n" + lesson_code(CLOSE))
    assert result.returncode == 0, result.stderr
    assert "✗ a discover" in result.stdout and "you said None     the server: result" in result.stdout
    assert "✓ the method 'ping'" in result.stdout and "the server: error" in result.stdout   # gone in 2026-07-28
    assert "✗ 'lookup with no arguments' is not one of the six labels: keep them as written" in result.stdout
    assert "✗ lookup without arguments" in result.stdout


def my_request_cell(mine: str) -> str:
    cell = lesson_code("my_request =")
    return f"my_request = {mine}\n" + cell[cell.index("\n\n"):]


ATTEMPTS = [   # (what a learner writes as my_request, what the cell says)
    ('{"id": 100, "method": "tools/call", "params": {"_meta": ENVELOPE, "name": "lookup", "arguments": {"topic": "단가"}}}',
     "✗ the server refused it (JSON-RPC error -32600): Invalid Request"),
    ('{"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": {"name": "lookup", "arguments": {}}}',
     "✗ the server refused it (JSON-RPC error -32600): Invalid Request"),
    ('{"jsonrpc": "1.0", "id": 100, "method": "tools/call", "params": {"name": "lookup"}}',
     "✗ the server refused it (JSON-RPC error -32600)"),
    ("'{\"jsonrpc\": \"2.0\", \"id\": 100, \"method\": \"tools/call\"'", "✗ the server refused it (JSON-RPC error -32700)"),
    ("[1, 2]", "✗ the server refused it (JSON-RPC error -32600)"),
    ('{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "lookup", "arguments": {"topic": "단가"}}}',
     "✗ a request needs an id"),
    ('{"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {"name": "lookup", "arguments": {"topic": "단가"}}}',
     'put "_meta": ENVELOPE in its params'),   # the handshake era's request: no envelope
    ('{"jsonrpc": "2.0", "id": 101, "method": "tools/call", "params": {"_meta": ENVELOPE, "name": "lookup", '
     '"arguments": {"topic": "x"}}}', "✗ not yet"),
]


def test_the_write_a_request_cell_answers_every_attempt_and_never_hangs():
    """A learner runs the cell again and again, a new attempt each time, against the one server of section 2."""
    attempts = "".join(f"print('--- attempt {k}')\n" + my_request_cell(mine) + "\n\n"
                       for k, (mine, _) in enumerate(ATTEMPTS))
    result = run_lesson(lesson_code(*START) + "\n\n" + attempts + lesson_code(CLOSE))
    assert result.returncode == 0, result.stderr
    said = result.stdout.split("--- attempt ")[1:]
    assert len(said) == len(ATTEMPTS), result.stdout
    for k, ((mine, expected), out) in enumerate(zip(ATTEMPTS, said)):
        assert out.startswith(f"{k}\n") and expected in out and "✓" not in out, (mine, out)


def test_a_ctrl_c_in_the_notebook_does_not_stop_the_server_of_section_2():
    """Interrupting the kernel sends SIGINT to its process group; the server runs in a session of its own."""
    interrupt = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                 "os.killpg(os.getpgid(0), signal.SIGINT)\ntime.sleep(1)\n")
    result = run_lesson(lesson_code(*START) + "\n\n" + interrupt + lesson_code("my_request =") + "\n\n" +
                        lesson_code(CLOSE))
    assert result.returncode == 0, result.stderr
    assert "✓ the server looked up the unit price for you" in result.stdout


def test_a_server_that_stopped_is_named_with_what_to_do_instead_of_a_json_error():
    stop = "server.kill()\nserver.wait()\n"
    result = run_lesson(lesson_code(*START) + "\n\n" + stop + lesson_code("my_request =") + "\n\n"
                        "try:\n    rpc('ping')\nexcept RuntimeError as e:\n    print('rpc:', e)\n")
    assert result.returncode == 0, result.stderr
    assert "✗ the server has stopped" in result.stdout and "run the cell that starts it" in result.stdout
    assert "rpc: the server has stopped" in result.stdout and "JSONDecodeError" not in result.stderr


BARE_SDK = '''
import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="slow", input_schema={"type": "object"})])

async def call_tool(ctx, params):
    await anyio.sleep(1)
    return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

async def main(server=Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)):
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(main)
'''


def test_the_sdk_alone_drops_a_call_running_at_eof_and_a_line_that_is_not_a_request_and_serve_does_not(tmp_path):
    """Lesson 13, section 1: close stdin only after the last answer; `course mcp serve` finishes what it began."""
    (tmp_path / "bare.py").write_text(BARE_SDK, encoding="utf-8")
    (tmp_path / "ours.py").write_text(SLOW, encoding="utf-8")
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
              "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}]
    results = {}
    for name in ("bare", "ours"):   # and a line that is not a request: the SDK alone drops it without a word
        result = subprocess.run([sys.executable, str(tmp_path / f"{name}.py")], capture_output=True, text=True,
                                input="".join(json.dumps(m) + "\n" for m in lines) + '{"id": 5, "method": "ping"}\n',
                                timeout=60)
        answers = {a["id"]: a for a in map(json.loads, result.stdout.splitlines())}
        results[name] = answers.get(2, {}).get("result"), answers.get(5, {}).get("error", {}).get("code")
    assert results == {"bare": (None, None),   # the call: nothing, or an error "Connection closed"
                       "ours": ({"content": [{"type": "text", "text": "done"}], "isError": False}, -32600)}


def test_text_printed_without_a_newline_swallows_the_next_message_and_the_hang_guard_says_what_was_printed(tmp_path):
    """Lesson 13, section 3: the line sticks to the front of the next message, which is lost."""
    script = tmp_path / "glued_server.py"
    script.write_text(STRAY.replace('print("Server starting...", flush=True)',
                                    'print("Starting", end="", flush=True)'), encoding="utf-8")
    with pytest.raises(ConnectionError) as caught:
        with connect_mcp([sys.executable, str(script)], timeout=3, era="legacy"):
            pass
    said = str(caught.value)
    assert ": no answer within 3 seconds (the request was cancelled); it also printed 'Starting{" in said, said
    assert "on stdout, which is not a JSON-RPC message" in said


def test_a_lost_server_discover_answer_falls_back_to_the_handshake_as_the_sdk_does(tmp_path):
    """The glued line costs the answer to server/discover. The SDK's probe (mcp/client/_probe.py) reads the timeout
    as "not a 2026 server" and sends initialize; the server, already in the 2026 era, answers -32022 naming its
    versions, and the client asks server/discover again: connected, in the 2026 era, after the timeout."""
    script = tmp_path / "glued_server.py"
    script.write_text(STRAY.replace('print("Server starting...", flush=True)',
                                    'print("Starting", end="", flush=True)'), encoding="utf-8")
    with connect_mcp([sys.executable, str(script)], timeout=3) as tools:
        assert tools.protocol == "2026-07-28" and tools["echo"](text="hi") == "hi"


def test_course_mcp_serve_reads_null_arguments_as_missing_which_exercise_13_2_refuses(tmp_path):
    """The one difference exercise 13.2 states: the SDK is lenient where the spec's schema wants an object."""
    session = Session(tmp_path)
    try:
        session.hello()
        session.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": "calculator", "arguments": None}}))
        assert session.answer()["result"] == {"content": [{"type": "text", "text": dispatch(
            default_tools(), "calculator", {}).content}], "isError": True}
    finally:
        session.close()


# ---- `serve` and `refusal` in this process: the same stdio layer, fed a file instead of a pipe (no subprocess)
INIT = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
         "capabilities": {}, "clientInfo": {"name": "file", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def serve_here(lines, tools=None) -> tuple[list[dict], str, str]:
    """Run ``serve(tools)`` in this process with stdin a file holding ``lines`` (dicts as JSON, str as text,
    bytes as they are): it reads to the end, answers every call begun, and returns. Its answers, in order, what
    reached file descriptor 2 (stderr) meanwhile, and its stdout as written. (No capfd: the first `import mcp`
    may happen in here, and the SDK keeps the sys.stderr of that moment as stdio_client's default errlog.)"""
    import tempfile
    import threading
    from course_lib.courseware.mcp_serve import serve
    data = b"".join((line if isinstance(line, bytes) else (line if isinstance(line, str) else json.dumps(
        line, ensure_ascii=False)).encode("utf-8")) + b"\n" for line in lines)
    saved = os.dup(0), os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(data)
        stdin.seek(0)
        for fd, file in enumerate((stdin, stdout, stderr)):
            os.dup2(file.fileno(), fd)
        try:
            raised = []

            def run():
                try:
                    serve(tools)
                except BaseException as e:   # shown to the test, not lost in the thread
                    raised.append(e)
            server = threading.Thread(target=run, daemon=True)
            server.start()
            server.join(timeout=30)   # a hang guard: a healthy serve() returns in well under a second
            assert not server.is_alive(), "serve() did not return after stdin ended"
            for fd, file in enumerate((stdin, stdout, stderr)):   # serve() gave the client's pipes back
                assert os.path.samestat(os.fstat(fd), os.fstat(file.fileno())), fd
        finally:
            for fd, copy in enumerate(saved):
                os.dup2(copy, fd)
                os.close(copy)
        stdout.seek(0)
        stderr.seek(0)
        written, said = stdout.read().decode("utf-8"), stderr.read().decode("utf-8", "replace")
    assert written.endswith("\n") and "\r" not in written
    assert not raised, raised
    return [json.loads(line) for line in written.splitlines()], said, written


def call(n, name, arguments=None):
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def noisy() -> str:
    """Write to file descriptor 1 and read file descriptor 0, as a careless tool might; say where they lead."""
    os.write(1, "noise from a tool\n".encode())
    null, stderr = os.path.samestat(os.fstat(0), os.stat(os.devnull)), os.path.samestat(os.fstat(1), os.fstat(2))
    NOISY_RAN.set()
    return f"read {os.read(0, 100)!r}; stdin is /dev/null: {null}; stdout is stderr: {stderr}"


NOISY_RAN = threading.Event()


def slow_here() -> str:
    """Answer once `noisy` has run (or after 2 s, a hang guard): still running when stdin ends, or when cancelled."""
    NOISY_RAN.wait(2)
    return "done"


def test_serve_answers_the_handshake_calls_and_lines_the_sdk_would_drop_in_this_process():
    from course_lib import __version__
    answers, _, written = serve_here(INIT + [
        call(2, "calculator", {"expression": "24*7"}), "not json", b"\xff\xfe", call(3, "lookup", {"topic": "단가"}),
        call(4, "calculator", None), call(5, "calculater", {}), {"jsonrpc": "2.0", "id": 6, "method": "ping"},
        {"jsonrpc": "2.0", "id": 99, "result": {}},   # a response to nothing the server asked: no answer, no crash
        {"jsonrpc": "2.0", "id": "요청", "method": 5}, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}])
    assert answers[0]["result"]["serverInfo"] == {"name": "course-lib", "version": __version__}
    by_id = {a["id"]: a for a in answers}
    assert by_id[2] == {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "168"}],
                                                              "isError": False}}
    assert [a["error"]["code"] for a in answers if a["id"] is None] == [-32700, -32700]   # two lines, two answers
    assert by_id[3]["result"]["content"][0]["text"] == "개당 $24"
    assert by_id[4]["result"] == {"content": [{"type": "text", "text": dispatch(default_tools(), "calculator", {}
                                                                                 ).content}], "isError": True}
    assert by_id[5]["error"] == {"code": -32602, "message": "Unknown tool: calculater. Available tools: "
                                 + ", ".join(course_tools()) + "."}
    assert by_id[6] == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert by_id["요청"]["error"]["code"] == -32600 and '"id": "요청"' in written   # UTF-8, not \\uc694
    assert by_id[7]["result"]["tools"] == [tool_to_mcp(name, func, READ_ONLY) for name, func in course_tools().items()]
    assert len(answers) == 10   # seven requests, a request refused, and two lines that are not JSON


def test_serve_keeps_a_tool_away_from_the_client_s_pipes_and_answers_a_call_running_at_the_end():
    NOISY_RAN.clear()
    answers, said, _ = serve_here(INIT + [call(2, "slow_here"), call("n", "noisy", {})],
                         {"slow_here": slow_here, "noisy": noisy})
    by_id = {a["id"]: a for a in answers}
    assert len(answers) == 3 and answers[0]["id"] == 1   # the slow call, still running when stdin ended, is answered
    assert by_id["n"]["result"]["content"][0]["text"] == "read b''; stdin is /dev/null: True; stdout is stderr: True"
    assert by_id[2]["result"]["content"][0]["text"] == "done"
    assert "noise from a tool" in said   # its writes to stdout reach stderr


def test_serve_ends_without_answering_a_call_the_client_cancelled():
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    NOISY_RAN.clear()   # nothing sets it: the call runs for its 2 s, long after the cancellation arrived
    answers, _, _ = serve_here(INIT + [call(2, "slow_here"), cancel], {"slow_here": slow_here})
    assert [a["id"] for a in answers] == [1]


@pytest.mark.parametrize("line, answer", [
    ('{"jsonrpc": "2.0", "id": 7, "method": "ping"', (-32700, None, "Parse error: the line is not JSON")),
    ("[" * 100_000, (-32700, None, "Parse error: the line is not JSON")),   # too deep for Python's json
    ("[1, 2]", (-32600, None, "Invalid Request: a message is a JSON object (MCP sends no batches)")),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}',
     (-32600, None, "Invalid Request: an id is a string or an integer (MCP: never null)")),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
     (-32600, None, "Invalid Request: an id is a string or an integer (MCP: never null)")),
    ('{"id": 5, "method": "ping"}',
     (-32600, 5, 'Invalid Request: a request has "jsonrpc": "2.0", an id and a "method"')),
    ('{"jsonrpc": "2.0", "id": "a", "method": 1}',
     (-32600, "a", 'Invalid Request: a request has "jsonrpc": "2.0", an id and a "method"')),
    ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": ["calculator"]}',
     (-32602, 8, "Invalid params: params are an object in MCP")),
    ('{"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}', None),   # a notification: never answered
    ('{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"_meta": {"progressToken": 1}}}', None),
    ('{"jsonrpc": "2.0", "id": 9, "result": {}}', None),
    ('{"jsonrpc": "2.0", "id": 9, "error": {"code": 1, "message": "no"}}', None),
])
def test_refusal_is_json_rpc_2_0_s_answer_to_a_line_that_is_not_a_message(line, answer):
    from course_lib.courseware.mcp_serve import refusal
    expected = None if answer is None else {"jsonrpc": "2.0", "id": answer[1],
                                            "error": {"code": answer[0], "message": answer[2]}}
    assert refusal(line) == expected


def test_serve_reads_and_writes_utf_8_and_plain_newlines_as_it_would_on_windows(monkeypatch):
    """On Windows the locale's encoding is cp1252 and a text file ends lines with \\r\\n: Korean must still arrive
    and leave as UTF-8, and each message end with \\n alone (serve_here checks that)."""
    import builtins
    from course_lib.courseware import mcp_serve

    def open_as_on_windows(file, mode="r", *args, encoding=None, newline=None, **options):
        return builtins.open(file, mode, *args, encoding=encoding or "latin-1",
                             newline="\r\n" if newline is None and "w" in mode else newline, **options)
    monkeypatch.setattr(mcp_serve, "open", open_as_on_windows, raising=False)
    answers, _, written = serve_here(INIT + [call(2, "lookup", {"topic": "단가"})])
    assert answers[1]["result"]["content"][0]["text"] == "개당 $24" and "개당 $24" in written


# ---- connect_mcp's parts, in-process: how it starts a server and words what went wrong
from course_lib import mcp_client  # noqa: E402


@pytest.fixture
def a_server(tmp_path):
    """A `_Server` as connect_mcp makes one, its stderr file opened for appending as connect_mcp opens it."""
    opened = []

    def make(stderr: bytes = b"", command=(sys.executable, "-m", "srv"), timeout=7.0, portal=None):
        errlog = open(tmp_path / f"stderr-{len(opened)}", "a+b")
        opened.append(errlog)
        errlog.write(stderr)
        errlog.flush()
        return mcp_client._Server(list(command), timeout, errlog, portal)
    yield make
    for errlog in opened:
        errlog.close()


def test_the_sdk_gets_the_command_folder_and_only_the_given_environment(monkeypatch):
    import logging
    monkeypatch.setattr(logging.getLogger("mcp"), "handlers", [])
    root = list(logging.getLogger().handlers)
    params = mcp_client._target(["srv", "--flag"], "/some/folder", {"A": "1"}, "auto")
    assert (params.command, params.args, params.cwd, params.env) == ("srv", ["--flag"], "/some/folder", {"A": "1"})
    assert mcp_client._target(["srv"], None, None, "auto").env == {}
    handlers = logging.getLogger("mcp").handlers   # the SDK's logs go nowhere unless the program says where
    assert len(handlers) == 1 and isinstance(handlers[0], logging.NullHandler) and logging.getLogger().handlers == root
    own = logging.StreamHandler()
    monkeypatch.setattr(logging.getLogger("mcp"), "handlers", [own])
    mcp_client._target(["srv"], None, None, "auto")
    assert logging.getLogger("mcp").handlers == [own]   # a program that configured logging keeps its own


def test_the_command_is_shown_with_this_python_as_python_and_the_home_folder_as_a_tilde(monkeypatch, a_server):
    monkeypatch.setenv("HOME", "/home/learner")
    assert a_server(command=[sys.executable, "/home/learner/srv.py", "-v"]).shown == "python ~/srv.py -v"
    monkeypatch.setenv("HOME", "/h")
    assert a_server(command=["/h/srv", "-v"]).shown == "~/srv -v"
    monkeypatch.setenv("HOME", "/")   # a home of "/" would turn every path into "~"
    assert a_server(command=["/usr/bin/srv", "/data"]).shown == "/usr/bin/srv /data"


def test_why_reads_the_error_s_own_message_and_names_one_without_text(a_server):
    class Said(Exception):
        message = "the SDK's own words"
    assert a_server().why(Said("str of it")) == "the SDK's own words"
    assert a_server().why(Said("")) == "the SDK's own words"
    assert a_server().why(RuntimeError()) == "RuntimeError"
    assert a_server().why(BaseExceptionGroup("g", [RuntimeError("inside")])) == "inside"
    assert a_server().why(RuntimeError("This portal is not running")) == (
        "the connection is closed (call its tools inside the `with connect_mcp(...)` block)")


def test_why_names_the_first_stray_line_cut_to_80_characters(a_server):
    server = a_server()
    server.garbled = [ValueError("x" * 100), ValueError("second")]
    assert server.why(RuntimeError("odd")) == (
        "odd; it also printed '" + "x" * 80 + "' on stdout, which is not a JSON-RPC message")
    assert server.why(RuntimeError("Connection closed")) == (
        "it printed '" + "x" * 80 + "' on stdout, which is not a JSON-RPC message (a server's logs go to stderr), "
        "then stopped")


def test_why_gives_a_spec_error_s_path_and_counts_its_problems(a_server):
    from mcp.types import InitializeResult
    from pydantic import ValidationError
    said = []
    for server_info in ({"name": "f"}, {"name": 3}):   # one problem (no version), then two (and a name of 3)
        with pytest.raises(ValidationError) as caught:
            InitializeResult.model_validate({"protocolVersion": "x", "capabilities": {}, "serverInfo": server_info})
        said.append(a_server().why(caught.value))
    assert said == ["its answer does not follow the MCP spec: InitializeResult has 1 problem, the first: "
                    "serverInfo.version: Field required",
                    "its answer does not follow the MCP spec: InitializeResult has 2 problems, the first: "
                    "serverInfo.name: Input should be a valid string"]


def test_why_quotes_the_last_three_lines_of_stderr_whatever_their_bytes(a_server):
    server = a_server(b"one\ntwo\n\nthree\nfour\xff\nfive\n")
    assert server.why(RuntimeError("odd")) == "odd. Its last words on stderr: three | four\ufffd | five"
    assert a_server(b"x" * 5000).why(RuntimeError("odd")) == "odd. Its last words on stderr: " + "x" * 4000
    assert a_server(b"before\n").why(RuntimeError("odd"), since=7) == "odd"   # only what it said since then
    closed = a_server(b"gone\n")
    closed.errlog.close()
    assert closed.why(RuntimeError("odd")) == "odd"


class FakePortal:   # runs the call at once, as anyio's blocking portal would in its own thread
    def call(self, function, *args):
        return function(*args)


def test_a_call_s_result_is_json_data_without_empty_fields_and_its_failures_are_tool_errors(a_server):
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED, CallToolResult, ResourceLink
    link = ResourceLink(type="resource_link", name="r", uri="file:///tmp/r.txt")
    server = a_server(b"started\n", portal=FakePortal())
    result = CallToolResult(content=[link], structuredContent={"pair": (1, 2)})   # a tuple: not JSON until dumped
    server.client = type("Client", (), {"call_tool": staticmethod(lambda name, args: result)})
    assert server.request(server.client.call_tool, "t", {}) == {
        "content": [{"type": "resource_link", "name": "r", "uri": "file:///tmp/r.txt"}],
                                    "structuredContent": {"pair": [1, 2]}, "isError": False,
                                    "resultType": "complete"}   # JSON data, as the SDK's own JSON has it

    def refuse(name, args):
        raise MCPError(-32602, "no such tool")

    def die(name, args):
        server.errlog.write(b"dying now\n")
        server.errlog.flush()
        raise MCPError(CONNECTION_CLOSED, "Connection closed")

    with pytest.raises(ToolError, match=r"^the server refused the call: no such tool \(JSON-RPC error -32602\)$"):
        server.request(refuse, "t", {})
    with pytest.raises(ToolError) as died:
        server.request(die, "t", {})
    assert str(died.value) == (f"the MCP server `python -m srv` did not answer: it stopped (the connection closed). "
                               "Its last words on stderr: dying now")   # not "started": only what came after the call


def test_every_page_of_tools_is_listed_as_json_data_without_empty_fields(a_server):
    from mcp.types import ListToolsResult, Tool
    pages = {None: ListToolsResult(tools=[Tool(name="a", inputSchema={"type": "object", "x-pair": (1, 2)})],
                                   nextCursor="2"),
             "2": ListToolsResult(tools=[Tool(name="b", description="B.", inputSchema={"type": "object"})])}

    class Client:
        async def list_tools(self, cursor=None):
            return pages[cursor]

    server = a_server()
    server.client = Client()
    listed = anyio.run(mcp_client._pages, server, "list_tools", "tools")
    assert listed == [{"name": "a", "inputSchema": {"type": "object", "x-pair": [1, 2]}},
                      {"name": "b", "description": "B.", "inputSchema": {"type": "object"}}]
