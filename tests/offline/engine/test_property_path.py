"""offline/engine/property_path.py: property paths parse and contain as pulumi/pulumi v3.230.0
``sdk/go/common/resource/properties_path.go`` does.
"""

from __future__ import annotations

import pytest

from offline import engine

#: pulumi/pulumi v3.230.0 sdk/go/common/resource/properties_path_test.go TestPropertyPath: the parse of each path, the
#: "Simple" cases (wildcards) and the loose forms old providers emit (``.`` before ``[``).
PARSED = {
    "root": ("root",), "root.nested": ("root", "nested"), 'root["nested"]': ("root", "nested"),
    "root.double.nest": ("root", "double", "nest"), 'root["double"].nest': ("root", "double", "nest"),
    'root["double"]["nest"]': ("root", "double", "nest"), "root.array[0]": ("root", "array", 0),
    "root.array[0].nested": ("root", "array", 0, "nested"),
          "root.array2[0][1].nested": ("root", "array2", 0, 1, "nested"),
    "root.nested.array[0].double[1]": ("root", "nested", "array", 0, "double", 1),
    'root["key with \\"escaped\\" quotes"]': ("root", 'key with "escaped" quotes'),
    'root["key with a ."]': ("root", "key with a ."),
    '["root key with \\"escaped\\" quotes"].nested': ('root key with "escaped" quotes', "nested"),
    '["root key with a ."][1]': ("root key with a .", 1),
    "root.array.[1]": ("root", "array", 1), 'root.["key with a ."]': ("root", "key with a ."),
    'root["*"].field[1]': ("root", "*", "field", 1), "root[*].field[2]": ("root", "*", "field", 2),
    "root[3].*[3]": ("root", 3, "*", 3), "*.bar": ("*", "bar"),
}


@pytest.mark.parametrize("path", sorted(PARSED))
def test_property_paths_parse_as_upstream(path):
    assert engine.parse_property_path(path) == PARSED[path]


@pytest.mark.parametrize("path", ["root[", 'root["nested]', "root.array[abc]", "root.", ".root"])
def test_malformed_property_paths_are_refused(path):
    """TestPropertyPath's syntax errors (properties_path_test.go @ v3.230.0), and a leading ``.``."""
    with pytest.raises(engine.PropertyPathError):
        engine.parse_property_path(path)


#: TestPropertyPathContains (properties_path_test.go @ v3.230.0): (listed, changed, contains).
CONTAINS = [
    (("root", "nested"), ("root",), False), (("root",), ("root", "nested"), True), (("root", 1), ("root",), False),
    (("root",), ("root", 1), True), (("root", "double", "nest1"), ("root", "double", "nest2"), False),
    (("root", "nest1", "double"), ("root", "nest2", "double"), False),
    (("root", "nest", "double"), ("root", "nest", "double"), True), (("root", 1, "double"), ("root", 1, "double"),
                                                                     True),
    ((), (), True), (("root",), (), False), ((), ("root",), True),
    (("foo", "bar", 1), ("foo", "bar", 1, "baz"), True), (("foo", "*", "baz"), ("foo", "bar", "baz", "bam"), True),
    (("*", "bar", "baz"), ("foo", "bar", "baz", "bam"), True), (("foo", "*", "baz"), ("foo", 1, "baz", "bam"), True),
    (("foo", 1, "*", "bam"), ("foo", 1, "baz", "bam"), True), (("*",), ("a", "b"), True), (("*",), ("a", 1), True),
    (("*",), ("a", 1, "b"), True),
]


@pytest.mark.parametrize("listed, changed, contains", CONTAINS)
def test_property_path_contains_as_upstream(listed, changed, contains):
    assert engine.path_contains(listed, changed) is contains
