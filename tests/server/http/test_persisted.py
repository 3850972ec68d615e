"""Automatic persisted queries (Apollo's protocol) over POST and GET, their bounded store, and
the trusted-documents mode."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from strawberry.http import GraphQLRequestData

from schema.caches import MAX_CACHED_DOCUMENT_CHARS
from server.http.persisted import PersistedQueries, load_manifest
from server.http.transport import GRAPHQL_RESPONSE_JSON, Refused
from storage.engine.table import TableRef
from tests.api_helpers import Api, running_api

QUERY = "query Typename { __typename }"
GRJ = {"accept": GRAPHQL_RESPONSE_JSON}


def sha(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def persisted(document: str, version: int = 1) -> dict[str, Any]:
    return {"persistedQuery": {"version": version, "sha256Hash": sha(document)}}


async def get_hashed(api: Api, document: str, headers: dict[str, str]) -> httpx.Response:
    params = {"extensions": json.dumps(persisted(document))}
    return await api.http.get("/graphql", params=params, headers=headers)


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["errors"][0]
    return error


@pytest.mark.parametrize("headers", [GRJ, {}], ids=["graphql-response-json", "json"])
async def test_the_apollo_round_trip_over_get_and_post(api: Api, headers: dict[str, str]) -> None:
    document = f"query Unique{len(headers)} {{ __typename }}"
    first = await get_hashed(api, document, headers)
    # What Apollo's link looks for before it sends the document: a 200 with this error.
    assert first.status_code == 200
    assert error_of(first) == {
        "message": "PersistedQueryNotFound",
        "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
    }
    registered = await api.http.post(
        "/graphql", json={"query": document, "extensions": persisted(document)}, headers=headers
    )
    assert registered.status_code == 200
    assert registered.json()["data"] == {"__typename": "Query"}
    again = await get_hashed(api, document, headers)
    assert again.status_code == 200
    assert again.json()["data"] == {"__typename": "Query"}
    by_post = await api.http.post(
        "/graphql", json={"extensions": persisted(document)}, headers=headers
    )
    assert by_post.json()["data"] == {"__typename": "Query"}


async def test_a_hash_that_does_not_match_its_document_is_refused(api: Api) -> None:
    response = await api.http.post(
        "/graphql",
        json={"query": QUERY, "extensions": persisted("{ somethingElse }")},
        headers=GRJ,
    )
    assert response.status_code == 400
    assert error_of(response)["extensions"]["code"] == "BAD_USER_INPUT"
    # Nothing was registered under either hash.
    assert (await get_hashed(api, "{ somethingElse }", GRJ)).status_code == 200
    assert error_of(await get_hashed(api, "{ somethingElse }", GRJ))["message"] == (
        "PersistedQueryNotFound"
    )


@pytest.mark.parametrize(
    "extensions",
    [
        {"persistedQuery": {"version": 2, "sha256Hash": sha(QUERY)}},
        {"persistedQuery": {"version": True, "sha256Hash": sha(QUERY)}},
        {"persistedQuery": {"version": 1.0, "sha256Hash": sha(QUERY)}},
        {"persistedQuery": {"version": 1, "sha256Hash": "abc"}},
        {"persistedQuery": {"version": 1, "sha256Hash": sha(QUERY).upper()}},
        {"persistedQuery": "yes"},
    ],
    ids=["version-2", "version-true", "version-1.0", "short-hash", "upper-case", "not-an-object"],
)
async def test_malformed_persisted_queries_are_400(api: Api, extensions: dict[str, Any]) -> None:
    response = await api.http.post("/graphql", json={"extensions": extensions}, headers=GRJ)
    assert response.status_code == 400
    assert error_of(response)["extensions"]["code"] == "BAD_USER_INPUT"


async def test_a_document_with_a_request_error_is_not_registered(api: Api) -> None:
    broken = "query Broken { noSuchField }"
    response = await api.http.post(
        "/graphql", json={"query": broken, "extensions": persisted(broken)}, headers=GRJ
    )
    assert response.status_code == 400
    assert error_of(await get_hashed(api, broken, GRJ))["message"] == "PersistedQueryNotFound"


async def test_apq_off_is_not_supported(table: TableRef) -> None:
    async with running_api(table.client, table.name, apq=False) as off:
        response = await get_hashed(off, QUERY, GRJ)
        assert response.status_code == 200
        assert error_of(response) == {
            "message": "PersistedQueryNotSupported",
            "extensions": {"code": "PERSISTED_QUERY_NOT_SUPPORTED"},
        }
        plain = await off.http.post("/graphql", json={"query": QUERY}, headers=GRJ)
        assert plain.json()["data"] == {"__typename": "Query"}


def test_the_store_is_bounded_in_bytes() -> None:
    queries = PersistedQueries(max_bytes=64 * 1024)
    documents = [f"query Q{n} {{ __typename }} # {'x' * 1000}" for n in range(200)]
    for document in documents:
        data = GraphQLRequestData(document, None, None, persisted(document))
        hashed = queries.resolve(data)
        assert hashed == sha(document)
        queries.register(hashed, document)
    assert queries.store.bytes <= 64 * 1024
    assert 0 < len(queries.store) < len(documents)
    assert queries.store.get(sha(documents[-1])) == documents[-1]
    assert queries.store.get(sha(documents[0])) is None


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "persisted-documents.json"
    path.write_text(json.dumps({sha(QUERY): QUERY}))
    return path


async def test_trusted_documents_run_only_registered_operations(
    table: TableRef, manifest: Path
) -> None:
    async with running_api(table.client, table.name, trusted_documents=manifest) as trusted:
        by_hash = await get_hashed(trusted, QUERY, GRJ)
        assert by_hash.json()["data"] == {"__typename": "Query"}
        in_full = await trusted.http.post("/graphql", json={"query": QUERY}, headers=GRJ)
        assert in_full.json()["data"] == {"__typename": "Query"}
        other = "{ __typename }"
        refused = await trusted.http.post("/graphql", json={"query": other}, headers=GRJ)
        assert refused.status_code == 403
        assert error_of(refused)["extensions"]["code"] == "FORBIDDEN"
        # APQ registers nothing here: the document sent after a miss (as Apollo's link
        # does) is refused as unregistered, and the hash stays unknown.
        registering = await trusted.http.post(
            "/graphql", json={"query": other, "extensions": persisted(other)}, headers=GRJ
        )
        assert registering.status_code == 403
        assert error_of(registering)["extensions"]["code"] == "FORBIDDEN"
        assert error_of(await get_hashed(trusted, other, GRJ))["message"] == (
            "PersistedQueryNotFound"
        )


def test_a_manifest_as_the_client_preset_writes_it_is_read(tmp_path: Path) -> None:
    # graphql-codegen's client preset prefixes its SHA-256 hashes ("sha256:<hex>", the
    # GraphQL-over-HTTP persisted-documents identifier); requests carry the bare hex.
    path = tmp_path / "persisted-documents.json"
    path.write_text(json.dumps({f"sha256:{sha(QUERY)}": QUERY, sha("{ a }"): "{ a }"}))
    assert load_manifest(path) == {sha(QUERY): QUERY, sha("{ a }"): "{ a }"}
    path.write_text(json.dumps({f"sha256:{sha('{ a }')}": "{ b }"}))
    with pytest.raises(ValueError, match="SHA-256"):
        load_manifest(path)
    path.write_text(json.dumps({f"sha1:{sha(QUERY)}": QUERY}))
    with pytest.raises(ValueError, match="SHA-256"):
        load_manifest(path)


def test_a_manifest_whose_hashes_do_not_match_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({sha("{ a }"): "{ b }"}))
    with pytest.raises(ValueError, match="SHA-256"):
        load_manifest(path)
    path.write_text("[]")
    with pytest.raises(ValueError, match="map hashes"):
        load_manifest(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_manifest(tmp_path / "missing.json")


def test_refused_carries_its_code() -> None:
    assert Refused(403, "no", code="FORBIDDEN").code == "FORBIDDEN"


async def test_a_document_too_long_to_cache_runs_but_is_never_stored(api: Api) -> None:
    # Stored, a 1 MB document (a comment pads it) would make each 170-byte GET by its hash
    # cost a 1 MB parse: the parse cache keeps documents up to 16 KiB only.
    padded = QUERY + "\n#" + "a" * (MAX_CACHED_DOCUMENT_CHARS + 1)
    ran = await api.http.post(
        "/graphql", json={"query": padded, "extensions": persisted(padded)}, headers=GRJ
    )
    assert ran.json()["data"] == {"__typename": "Query"}
    assert error_of(await get_hashed(api, padded, GRJ))["message"] == "PersistedQueryNotFound"
    # One just within the limit is stored as any other.
    fits = QUERY + "\n#" + "a" * (MAX_CACHED_DOCUMENT_CHARS - len(QUERY) - 2)
    await api.http.post(
        "/graphql", json={"query": fits, "extensions": persisted(fits)}, headers=GRJ
    )
    assert (await get_hashed(api, fits, GRJ)).json()["data"] == {"__typename": "Query"}


def test_the_store_charges_what_a_document_really_holds() -> None:
    store = PersistedQueries(max_bytes=128 * 1024)
    ascii_only, astral = "{ a }" + "a" * 8000, "{ a }" + "a" * 7999 + "\U0001f600"
    store.register("1" * 64, ascii_only)
    store.register("2" * 64, astral)  # one emoji makes Python keep 4 bytes a character
    assert store.store.get("1" * 64) == ascii_only
    assert store.store.get("2" * 64) == astral
    assert store.store.bytes > 2 * 4 * 8000  # charged the 32 kB the second one holds
