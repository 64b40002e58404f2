"""Structured outputs and strict tools in the stand-in (standin/schemas.py), through the real SDKs: the schemas strict
mode refuses (each provider's documented subset), the schemas the SDKs' own helpers write (accepted), and scripted
replies that a strict schema rules out (the script's error, as for tool_choice)."""
from __future__ import annotations

import anthropic
import openai
import pydantic
import pytest
from anthropic.lib._parse._transform import transform_schema
from openai.lib._pydantic import to_strict_json_schema

from course_lib.courseware.standin import StandInServer
from course_lib.courseware.standin.schemas import fits, problem

HI = [{"role": "user", "content": "부산 출장 (a trip to Busan)"}]


def obj(properties: dict, required=None, **extra) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required,
            "additionalProperties": False, **extra}


TRIP = obj({"city": {"type": "string"}, "nights": {"type": "integer"}})


def clients(server):
    return (anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0),
            openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0))


def send(api: str, server, *, tool=None, output=None, strict=True):
    """One request to ``api`` with a tool of schema ``tool`` (strict) or a JSON output of schema ``output``."""
    claude, gpt = clients(server)
    if api == "anthropic":
        extra = {"tools": [{"name": "trip", "description": "d", "input_schema": tool, "strict": strict}]} if tool \
            else {"output_config": {"format": {"type": "json_schema", "schema": output}}}
        return claude.messages.create(model="claude-standin", max_tokens=100, messages=HI, **extra)
    if api == "openai":
        extra = {"tools": [{"type": "function", "function": {"name": "trip", "parameters": tool, "strict": strict}}]} \
            if tool else {"response_format": {"type": "json_schema",
                                              "json_schema": {"name": "trip", "schema": output, "strict": strict}}}
        return gpt.chat.completions.create(model="gpt-standin", messages=HI, **extra)
    extra = {"tools": [{"type": "function", "name": "trip", "parameters": tool, "strict": strict}]} if tool \
        else {"text": {"format": {"type": "json_schema", "name": "trip", "schema": output, "strict": strict}}}
    return gpt.responses.create(model="gpt-standin", input="hi", store=False, **extra)


def refusal(api: str, **request) -> str:
    with StandInServer(["unused"]) as server:
        with pytest.raises(anthropic.BadRequestError if api == "anthropic" else openai.BadRequestError) as caught:
            send(api, server, **request)
        assert server.remaining == 1, "a refused request uses up no turn"
    return caught.value.body["error"]["message"] if api == "anthropic" else caught.value.message


APIS = ["anthropic", "openai", "responses"]


# ---- what strict mode refuses ----------------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["openai", "responses"])
def test_openai_strict_mode_wants_every_property_required_in_its_own_words(api):
    said = refusal(api, tool=obj({"city": {"type": "string"}, "nights": {"type": "integer"}}, required=["city"]))
    assert "Invalid schema for function 'trip': In context=(), 'required' is required to be supplied and to be an " \
           "array including every key in properties. Missing 'nights'." in said


def test_anthropic_strict_mode_allows_optional_properties():
    with StandInServer(["fine"]) as server:
        assert send("anthropic", server, tool=obj({"city": {"type": "string"}, "n": {"type": "integer"}},
                                                  required=["city"])).content[0].text == "fine"


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("where", ["tool", "output"])
def test_every_object_needs_additional_properties_false_nested_ones_too(api, where):
    nested = obj({"trip": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
    said = refusal(api, **{where: nested})
    assert "additionalProperties" in said and "false" in said
    assert "('properties', 'trip')" in said if api != "anthropic" else ".properties.trip:" in said


@pytest.mark.parametrize("keyword", [{"minimum": 1}, {"maximum": 9}, {"multipleOf": 2}])
def test_anthropic_refuses_numeric_constraints(keyword):
    said = refusal("anthropic", tool=obj({"nights": {"type": "integer", **keyword}}))
    assert f"tools.0.custom.input_schema.properties.nights: '{next(iter(keyword))}' is not supported" in said


@pytest.mark.parametrize("schema, word", [
    ({"type": "string", "maxLength": 5}, "maxLength"), ({"type": "string", "pattern": "^a"}, "pattern"),
    ({"type": "string", "format": "credit-card"}, "credit-card"), ({"type": "integer", "default": 1}, "default"),
    ({"type": "array", "items": {"type": "string"}, "minItems": 2}, "minItems"),
    ({"type": "array", "items": {"type": "string"}, "maxItems": 2}, "maxItems"),
    ({"enum": [{"a": 1}, "b"]}, "enum"), ({}, "type")])
def test_anthropic_refuses_what_its_sdk_would_move_into_the_description(schema, word):
    assert word in refusal("anthropic", output=obj({"x": schema}))


def test_anthropic_refuses_a_recursive_schema_and_openai_takes_it():
    tree = {**obj({"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}),
            "$defs": {"node": obj({"name": {"type": "string"},
                                   "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}})}}
    assert "recursive schemas are not supported" in refusal("anthropic", output=tree)
    assert problem(tree, "openai") is None
    assert problem({**tree, "$defs": {}}, "openai")[1] == "the reference '#/$defs/node' points to no definition."


@pytest.mark.parametrize("api", ["openai", "responses"])
def test_openai_wants_an_object_at_the_root(api):
    said = refusal(api, output={"anyOf": [TRIP, obj({"x": {"type": "string"}})]})
    assert "In context=(), schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'." in said


@pytest.mark.parametrize("keyword", ["not", "if", "patternProperties", "dependentRequired"])
def test_openai_refuses_the_keywords_its_guide_leaves_out(keyword):
    said = refusal("openai", tool=obj({"x": {"type": "string", keyword: {}}}))
    assert f"In context=('properties', 'x'), '{keyword}' is not permitted in strict mode." in said


def test_openai_takes_objects_ten_deep_and_refuses_eleven():
    def nest(objects):   # objects nested this deep, the root included; the innermost one holds a string
        return obj({"leaf": {"type": "string"}}) if objects == 1 else obj({"next": nest(objects - 1)})
    assert problem(nest(10), "openai") is None
    assert "more than 10 levels deep" in problem(nest(11), "openai")[1]


def test_openai_wants_a_type_on_every_schema():
    assert problem(obj({"x": {"description": "anything"}}), "openai") == (("properties", "x"),
                                                                          "schema must have a 'type' key.")


@pytest.mark.parametrize("api", APIS)
def test_a_tool_that_is_not_strict_is_not_held_to_strict_rules(api):
    loose = {"type": "object", "properties": {"nights": {"type": "integer", "minimum": 1}}, "required": []}
    with StandInServer(["fine"]) as server:
        send(api, server, tool=loose, strict=False)
    assert server.problems == []


def test_anthropic_output_format_must_be_a_json_schema_format():
    with StandInServer(["unused"]) as server:
        claude, _ = clients(server)
        with pytest.raises(anthropic.BadRequestError, match="json_schema"):
            claude.messages.create(model="c", max_tokens=9, messages=HI, output_config={"format": {"type": "text"}})


# ---- what strict mode takes: the SDKs' own helpers ------------------------------------------------------------
class Stop(pydantic.BaseModel):
    city: str
    nights: int = 1
    tags: list[str] = []
    kind: str | None = None


class Route(pydantic.BaseModel):
    name: str
    stops: list[Stop]
    mode: str = "train"


@pytest.mark.parametrize("model", [Stop, Route])
def test_the_schemas_the_sdks_write_for_strict_mode_are_accepted(model):
    assert problem(transform_schema(model), "anthropic") is None
    assert problem(to_strict_json_schema(model), "openai") is None
    assert problem(model.model_json_schema(), "openai") is not None   # pydantic's own schema is not strict


def test_the_sdks_parse_helpers_read_the_stand_ins_json_outputs():
    route = {"name": "남해안 (south coast)", "stops": [{"city": "Busan", "nights": 2, "tags": [], "kind": None}],
             "mode": "bus"}
    with StandInServer([{"text": __import__("json").dumps(route, ensure_ascii=False)}] * 3) as server:
        claude, gpt = clients(server)
        parsed = [claude.messages.parse(model="c", max_tokens=99, messages=HI, output_format=Route).parsed_output,
                  gpt.chat.completions.parse(model="g", messages=HI, response_format=Route).choices[0].message.parsed,
                  gpt.responses.parse(model="g", input="hi", text_format=Route, store=False).output_parsed]
    assert parsed == [Route(**route)] * 3


# ---- what a strict schema rules out in a scripted reply ---------------------------------------------------------
def script_error(api: str, turn, **request) -> str:
    with StandInServer([turn]) as server:
        error = anthropic.InternalServerError if api == "anthropic" else openai.InternalServerError
        with pytest.raises(error) as caught:
            send(api, server, **request)
    return str(caught.value)


@pytest.mark.parametrize("api", APIS)
def test_a_strict_tool_call_that_does_not_fit_is_the_scripts_error(api):
    bad = {"tool_calls": [{"name": "trip", "args": {"city": "Busan", "nights": "two"}}]}
    said = script_error(api, bad, tool=TRIP)
    assert "calls 'trip' with arguments that do not fit its strict schema (['nights']: 'two' is not of type " \
           "'integer')" in said
    with StandInServer([bad]) as server:   # not strict: the model may send anything, and stage 05 checks it
        send(api, server, tool=TRIP, strict=False)


@pytest.mark.parametrize("api", APIS)
def test_json_output_must_be_json_that_fits(api):
    assert "which is not JSON" in script_error(api, "Two nights in Busan.", output=TRIP)
    assert "['nights']: 'two' is not of type 'integer'" in script_error(api, '{"city": "Busan", "nights": "two"}',
                                                                        output=TRIP)
    assert "'nights' is a required property" in script_error(api, '{"city": "Busan"}', output=TRIP)


@pytest.mark.parametrize("api", APIS)
def test_json_output_that_fits_comes_back_as_the_text(api):
    with StandInServer(['{"city": "부산", "nights": 2}']) as server:
        reply = send(api, server, output=TRIP)
    text = reply.content[0].text if api == "anthropic" else reply.choices[0].message.content if api == "openai" \
        else reply.output_text
    assert text == '{"city": "부산", "nights": 2}'


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("turn", [{"refusal": "I can't help with that."},
                                  {"tool_calls": [{"name": "trip", "args": '{"city": "Bus'}]},
                                  {"status": 529, "message": "Overloaded"}], ids=["refusal", "cut off", "error"])
def test_a_refusal_a_cut_off_reply_and_an_error_are_not_held_to_the_schema(api, turn):
    with StandInServer([turn]) as server:
        try:
            send(api, server, tool=TRIP)
        except (anthropic.APIStatusError, openai.APIStatusError) as e:
            assert e.status_code == 529
    assert server.problems == []


def test_fits_names_the_first_thing_wrong():
    assert fits({"city": "Busan", "nights": 2}, TRIP) is None
    assert fits({"city": "Busan", "nights": 2, "x": 1}, TRIP) == \
        "the value: Additional properties are not allowed ('x' was unexpected)"
    nullable = obj({"city": {"type": ["string", "null"]}, "nights": {"type": "integer"}})
    assert fits({"city": None, "nights": 2}, nullable) is None
