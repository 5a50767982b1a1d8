"""offline/stack_file.py: `pulumi config set [--path]` as the CLI stores it, and config keys as the CLI parses them."""

from __future__ import annotations

import json

import pytest

from stack_config import schema

# Ported from pulumi/pulumi v3.230.0 sdk/go/common/resource/config/map_test.go (TestSetSuccess, TestSetFail): the cases
# with a plaintext value (`pulumi config set --path` without --secret), on keys already parsed (config.ParseKey).
# Expected: a string, or an object value's JSON.
SET_SUCCESS = [
    ("my:testKey", "testValue", False, {}, {"my:testKey": "testValue"}),
    ("my:test.Key", "testValue", False, {}, {"my:test.Key": "testValue"}),
    ("my:testKey", "testValue", True, {}, {"my:testKey": "testValue"}),
    ("my:0", "testValue", True, {}, {"my:0": "testValue"}),
    ("my:true", "testValue", True, {}, {"my:true": "testValue"}),
    ('my:["0"]', "testValue", True, {}, {"my:0": "testValue"}),
    ('my:["test.Key"]', "testValue", True, {}, {"my:test.Key": "testValue"}),
    ('my:nested["test.Key"]', "value", True, {}, {"my:nested": '{"test.Key":"value"}'}),
    ("my:outer.inner", "value", True, {}, {"my:outer": '{"inner":"value"}'}),
    ("my:outer.inner", "value", True, {"my:outer": "value"}, {"my:outer": '{"inner":"value"}'}),
    ("my:outer.inner", "true", True, {}, {"my:outer": '{"inner":true}'}),
    ("my:outer.inner", "false", True, {}, {"my:outer": '{"inner":false}'}),
    ("my:outer.inner", "10", True, {}, {"my:outer": '{"inner":10}'}),
    ("my:outer.inner", "0", True, {}, {"my:outer": '{"inner":0}'}),
    ("my:outer.inner", "-1", True, {}, {"my:outer": '{"inner":-1}'}),
    ("my:outer.inner", "00", True, {}, {"my:outer": '{"inner":"00"}'}),
    ("my:outer.inner", "0123456", True, {}, {"my:outer": '{"inner":"0123456"}'}),
    ("my:array[0]", "value", True, {"my:array": "value"}, {"my:array": '["value"]'}),
    ("my:outer.inner", "value", True, {"my:outer": '{"existing":"existingValue"}'},
     {"my:outer": '{"existing":"existingValue","inner":"value"}'}),
    ("my:outer.inner.nested", "value", True, {}, {"my:outer": '{"inner":{"nested":"value"}}'}),
    ("my:name[0]", "value", True, {}, {"my:name": '["value"]'}),
    ("my:name[0][0]", "value", True, {}, {"my:name": '[["value"]]'}),
    ("my:name[1]", "value", True, {"my:name": '["a","b","c"]'}, {"my:name": '["a","value","c"]'}),
    ("my:name[3]", "value", True, {"my:name": '["a","b","c"]'}, {"my:name": '["a","b","c","value"]'}),
    ("my:name[3][0]", "value", True, {"my:name": '["a","b","c"]'}, {"my:name": '["a","b","c",["value"]]'}),
    ("my:name[3][0]nested", "value", True, {"my:name": '["a","b","c"]'},
     {"my:name": '["a","b","c",[{"nested":"value"}]]'}),
    ("my:name[3].foo.bar", "value", True, {"my:name": '["a","b","c"]'},
     {"my:name": '["a","b","c",{"foo":{"bar":"value"}}]'}),
    ("my:servers[0].name", "foo", True, {}, {"my:servers": '[{"name":"foo"}]'}),
    ("my:servers[0].host", "example", True, {"my:servers": '[{"name":"foo"}]'},
     {"my:servers": '[{"host":"example","name":"foo"}]'}),
    ("my:testKey", "true", False, {}, {"my:testKey": "true"}),
    ("my:testKey", "-1", False, {}, {"my:testKey": "-1"}),
    ("my:testKey[0]", "false", True, {}, {"my:testKey": "[false]"}),
    ("my:testKey[0]", "-1", True, {}, {"my:testKey": "[-1]"}),
    ("my:testKey[0]", "01", True, {}, {"my:testKey": '["01"]'}),
    ("my:key.secure", "value", True, {"my:key": '{"bar":"baz"}'}, {"my:key": '{"bar":"baz","secure":"value"}'}),
]


SET_FAIL = [
    ("my:root[", {}, "invalid config key path: missing closing bracket in array index"),
    ('my:root["nested]', {}, "invalid config key path: missing closing quote in property name"),
    ("my:root.array[abc]", {},
     'invalid config key path: invalid array index: strconv.ParseInt: parsing "abc": invalid syntax'),
    ('my:[""]', {}, "config key is empty"),
    ("my:[0]", {}, "first path segement of config key must be a string"),
    ("my:name[-1]", {}, "name[-1]: array index out of range"),
    ("my:name[4]", {"my:name": '["a","b","c"]'}, "name[4]: array index out of range"),
    ("my:key.secure", {}, 'maps with the single key "secure" are reserved'),
    ("my:super.nested.map.secure", {}, 'maps with the single key "secure" are reserved'),
    ("my:outer.inner", {"my:outer": "[1,2,3]"}, "outer.inner: key for an array must be an int"),
    ("my:array[0]", {"my:array": '{"inner":"value"}'}, "array[0]: key for a map must be a string"),
    ("my:outer.inner.nested", {"my:outer": '{"inner":"value"}'}, "outer.inner: expected a map"),
    ("my:outer.inner[0]", {"my:outer": '{"inner":"value"}'}, "outer.inner: expected an array"),
    ('my:root.[1]"', {}, "invalid config key path: expected property name after '.'"),
]


def held(config_map: dict) -> dict:
    """A map of the Go tests (object values as JSON) as the offline plan holds config: lists and maps as objects."""
    return {key: json.loads(value) if value[:1] in "[{" else value for key, value in config_map.items()}


@pytest.mark.parametrize("key,value,path,before,after", SET_SUCCESS)
def test_config_set_stores_what_the_cli_stores(key, value, path, before, after):
    from offline import stack_file

    values = held(before)
    stack_file.map_set(values, key, value, path)
    assert values == held(after)


@pytest.mark.parametrize("key,before,message", SET_FAIL)
def test_config_set_refuses_what_the_cli_refuses(key, before, message):
    from offline import stack_file

    with pytest.raises(stack_file.ConfigSetError) as caught:
        stack_file.map_set(held(before), key, "value", True)
    assert caught.value.message == message


@pytest.mark.parametrize("key,path,expected", [
    ("tags[0]", True, "aks-gpu-observability:tags[0]"),          # io.go ParseConfigKey: the top segment is namespaced
    ("tags", False, "aks-gpu-observability:tags"),
    ("azure-native:tags[0]", True, "azure-native:tags[0]"),
    ("aks-gpu-observability:config:tags", False, "aks-gpu-observability:tags"),
    ("tags[0]", False, "aks-gpu-observability:tags[0]"),         # without --path: a key named tags[0]
])
def test_config_keys_are_parsed_as_the_cli_parses_them(key, path, expected):
    from offline import stack_file

    assert stack_file.config_key(key, path, schema.PROJECT) == expected
