"""GET /api/v1/schema/ and /api/v1/docs/: the OpenAPI schema generated from the code, with the
runner's config schema as a component (its multi-GPU options too), and the Swagger UI served
from our own files."""

from __future__ import annotations

import json


def test_the_openapi_schema_and_offline_docs_are_served(anonymous):
    schema = anonymous.get("/api/v1/schema/")
    assert schema.status_code == 200 and b"/api/v1/submissions" in schema.content
    docs = anonymous.get("/api/v1/docs/")
    assert docs.status_code == 200 and b"swagger-ui" in docs.content
    assert b"cdn.jsdelivr" not in docs.content


def test_the_schema_describes_the_config_fields(anonymous):
    schema = anonymous.get("/api/v1/schema/", {"format": "json"}).json()
    config = schema["components"]["schemas"]["BenchmarkConfig"]

    assert {"target_model", "draft_model", "spec_types", "n_max", "ctx_size", "protocol"} <= set(
        config["properties"]
    )
    assert config["properties"]["n_max"]["maximum"] == 64
    assert "QuickProtocol" in schema["components"]["schemas"]
    assert "const" not in json.dumps(schema) and "$defs" not in json.dumps(schema)
    submission = schema["components"]["schemas"]["SubmissionInputRequest"]
    assert "#/components/schemas/BenchmarkConfig" in json.dumps(submission["properties"]["config"])
    for path in ("/api/v1/uploads", "/api/v1/compare", "/api/v1/exports/leaderboard.csv"):
        assert path in schema["paths"]
    assert "413" in schema["paths"]["/api/v1/submissions"]["post"]["responses"]
    assert "429" in schema["paths"]["/api/v1/uploads"]["post"]["responses"]


def test_the_schema_documents_the_jobs_queue_fields_and_the_hosts_resource(anonymous):
    schema = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    job = schema["components"]["schemas"]["Job"]["properties"]
    assert job["queue_position"]["nullable"] is True
    assert job["estimated_start"]["format"] == "date-time"
    assert "/api/v1/hosts" in schema["paths"]


def test_the_api_schema_describes_the_multi_gpu_options(client):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    config = schema["components"]["schemas"]["BenchmarkConfig"]["properties"]
    assert {"split_mode", "tensor_split", "main_gpu", "draft_gpu"} <= set(config)
