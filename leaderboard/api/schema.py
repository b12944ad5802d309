"""OpenAPI additions: the runner's config schema as a component, and the documented error bodies."""

from __future__ import annotations

from typing import Any

from runner.config import BenchmarkConfig

CONFIG_COMPONENT = "BenchmarkConfig"
ERROR_COMPONENT = "Error"
# JSON Schema 2020-12 keywords that OpenAPI 3.0's schema object does not have.
_UNSUPPORTED = {"$schema", "$defs", "$id", "examples", "prefixItems", "contentMediaType", "const"}
_READ_ERRORS = {
    "400": "Invalid query parameters: field-level messages.",
    "401": "The token is invalid.",
    "404": "Not found.",
}
_WRITE_ERRORS = _READ_ERRORS | {
    "401": "Authentication is needed (Authorization: Token <key>).",
    "403": "Authenticated, but not allowed (not the owner, or not an admin).",
    "409": "Conflicts with the current state (already finished, already uploaded).",
    "413": "The request body or file is too large.",
    "429": "Throttled: too many requests; see Retry-After.",
}


def _to_openapi_30(node: Any) -> Any:
    """Rewrite a pydantic JSON Schema (2020-12) node into OpenAPI 3.0's dialect."""
    if isinstance(node, list):
        return [_to_openapi_30(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _to_openapi_30(value) for key, value in node.items() if key not in _UNSUPPORTED}
    if "const" in node:
        out["enum"] = [node["const"]]
    for bound, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(bound), (int, float)) and not isinstance(node[bound], bool):
            out[inclusive] = node[bound]
            out[bound] = True
    variants = out.get("anyOf")
    if isinstance(variants, list) and {"type": "null"} in variants:
        others = [variant for variant in variants if variant != {"type": "null"}]
        del out["anyOf"]
        if len(others) == 1 and "$ref" not in others[0]:
            out.update(others[0])
        elif len(others) == 1:
            out["allOf"] = others
        else:
            out["anyOf"] = others
        out["nullable"] = True
    return out


def config_components() -> dict[str, dict]:
    """BenchmarkConfig and the models it refers to, as OpenAPI 3.0 components."""
    schema = BenchmarkConfig.model_json_schema(ref_template="#/components/schemas/{model}")
    definitions = schema.pop("$defs", {})
    components = {CONFIG_COMPONENT: _to_openapi_30(schema)}
    components.update({name: _to_openapi_30(body) for name, body in definitions.items()})
    return components


def add_config_and_errors(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: config components, and error responses everywhere."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(config_components())
    schemas[ERROR_COMPONENT] = {
        "type": "object",
        "description": "An error: 'detail', or field names mapped to lists of messages.",
        "properties": {"detail": {"type": "string"}},
        "additionalProperties": True,
    }
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            errors = _READ_ERRORS if method == "get" else _WRITE_ERRORS
            responses = operation.setdefault("responses", {})
            for code, description in errors.items():
                responses.setdefault(
                    code,
                    {
                        "description": description,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
                            }
                        },
                    },
                )
    return result
