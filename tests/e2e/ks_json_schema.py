#!/usr/bin/python3
"""ks_json_schema.py - validate JSON documents against a JSON Schema.

    ks_json_schema.py SCHEMA FILE...

Each FILE holds one JSON document. Prints one line per error
("FILE: /path/in/doc: what") and exits 1 if there was any, 0 otherwise.

Validation is done by a small validator written here for the subset of
JSON Schema (draft 2020-12) that docs/report.schema.json uses: type, enum,
const, properties, required, additionalProperties (false or a schema),
propertyNames, items, min/maxItems, minimum, maximum, min/maxLength,
pattern, local $ref into $defs, and the annotations ($schema, $id, title,
description, $comment). A keyword outside the subset is an error, so the
schema cannot silently use something this check ignores. When Debian's
python3-jsonschema is installed the documents are validated with it too,
and both must agree; the last line says which validators ran.
"""
import json
import math
import re
import sys

ANNOTATIONS = {"$schema", "$id", "title", "description", "$comment", "$defs"}
CHECKS = {"type", "enum", "const", "properties", "required",
          "additionalProperties", "propertyNames", "items", "minItems",
          "maxItems", "minimum", "maximum", "minLength", "maxLength",
          "pattern", "$ref"}


def is_type(value, name):
    # bool is an int in Python, but not a number in JSON
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError("unknown type %r in the schema" % name)


def same(a, b):
    # JSON equality: 1 == 1.0, but True is not 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


class Validator:
    def __init__(self, root):
        self.root = root

    def resolve(self, ref):
        if not ref.startswith("#/"):
            raise ValueError("only local $ref are supported, not %r" % ref)
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def check(self, schema, value, path, errors):
        unknown = set(schema) - CHECKS - ANNOTATIONS
        if unknown:
            raise ValueError("schema at %s uses unsupported keywords: %s"
                             % (path or "/", ", ".join(sorted(unknown))))
        if "$ref" in schema:
            self.check(self.resolve(schema["$ref"]), value, path, errors)
        if "type" in schema:
            types = schema["type"]
            types = types if isinstance(types, list) else [types]
            if not any(is_type(value, t) for t in types):
                errors.append("%s: %s is not of type %s"
                              % (path or "/", json.dumps(value)[:60], "/".join(types)))
                return
        if "const" in schema and not same(value, schema["const"]):
            errors.append("%s: %s is not %s" % (path or "/", json.dumps(value)[:60],
                                                json.dumps(schema["const"])))
        if "enum" in schema and not any(same(value, e) for e in schema["enum"]):
            errors.append("%s: %s is not one of %s" % (path or "/", json.dumps(value)[:60],
                                                       json.dumps(schema["enum"])))
        if is_type(value, "number"):
            if "minimum" in schema and value < schema["minimum"]:
                errors.append("%s: %s is below the minimum %s" % (path, value, schema["minimum"]))
            if "maximum" in schema and value > schema["maximum"]:
                errors.append("%s: %s is above the maximum %s" % (path, value, schema["maximum"]))
        if isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                errors.append("%s: string shorter than %d" % (path, schema["minLength"]))
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                errors.append("%s: string longer than %d" % (path, schema["maxLength"]))
            if "pattern" in schema and not re.search(schema["pattern"], value):
                errors.append("%s: %r does not match %s" % (path, value[:60], schema["pattern"]))
        if isinstance(value, list):
            if "minItems" in schema and len(value) < schema["minItems"]:
                errors.append("%s: fewer than %d items" % (path, schema["minItems"]))
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                errors.append("%s: more than %d items" % (path, schema["maxItems"]))
            if "items" in schema:
                for i, item in enumerate(value):
                    self.check(schema["items"], item, "%s/%d" % (path, i), errors)
        if isinstance(value, dict):
            self.check_object(schema, value, path, errors)

    def check_object(self, schema, value, path, errors):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append("%s: required field %r is missing" % (path or "/", name))
        for name, item in value.items():
            where = "%s/%s" % (path, name)
            if "propertyNames" in schema:
                self.check(schema["propertyNames"], name, where + " (name)", errors)
            if name in props:
                self.check(props[name], item, where, errors)
                continue
            extra = schema.get("additionalProperties", True)
            if extra is False:
                errors.append("%s: field %r is not in the schema" % (path or "/", name))
            elif isinstance(extra, dict):
                self.check(extra, item, where, errors)


def library_errors(schema, doc):
    """Errors from python3-jsonschema, or None when it is not installed."""
    try:
        import jsonschema
    except ImportError:
        return None
    cls = getattr(jsonschema, "Draft202012Validator", None)
    if cls is None:  # older than 4.0: no draft 2020-12
        return None
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        return ["the schema itself is invalid: %s" % e.message]
    return ["%s: %s" % ("/" + "/".join(str(p) for p in e.absolute_path), e.message)
            for e in cls(schema).iter_errors(doc)]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    validator = Validator(schema)
    failed = False
    used_library = False
    for name in argv[2:]:
        with open(name) as f:
            doc = json.load(f)
        errors = []
        validator.check(schema, doc, "", errors)
        for e in errors:
            print("%s: %s" % (name, e))
        lib = library_errors(schema, doc)
        if lib is not None:
            used_library = True
            for e in lib:
                print("%s: (jsonschema) %s" % (name, e))
            if bool(lib) != bool(errors):
                print("%s: the two validators disagree" % name)
                failed = True
        failed = failed or bool(errors)
    print("validated %d document(s) with the built-in validator%s"
          % (len(argv) - 2, " and python3-jsonschema" if used_library else
             " (python3-jsonschema is not installed)"), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
