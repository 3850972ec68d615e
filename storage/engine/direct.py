"""Query, GetItem and BatchGetItem sent without botocore's per-call machinery.

botocore spends about a millisecond of CPU on every call before and after the network:
events, parameter checks, serialisation, endpoint rules, user agent, signing, parsing. The
three reads every page makes go a shorter way when ``ClientSettings.direct_reads`` is on:

- the body is the parameters as JSON (they are in DynamoDB's wire format already), not
  checked against the model first: DynamoDB checks them, and either refusal is
  StorageUnavailable at the seam;
- the endpoint comes from botocore's own endpoint rules, once per operation;
- ``SigV4`` signs as botocore's signer does (the tests compare the two), with the signing
  key derived once a day instead of on every call;
- the request goes over the aiobotocore client's own HTTP session: its connection pool,
  timeouts, proxies and the exceptions it raises;
- a clean answer (2xx, CRC32 as sent) is handed over as decoded, which is what the
  attribute pass-through parser of ``storage.engine.client`` gives.

Everything else goes back to botocore's machinery on the same client: its retry handler
decides whether and when to retry (standard mode, the same retry quota), its parser reads
error answers, and errors are raised as the client's own exception classes, so
``storage.engine.seam`` maps them exactly as before. A call the short way cannot make as botocore
would (no credentials, another signature version, an endpoint with headers or another auth
scheme, a table given by ARN, an event handler this path does not know of) goes the long
way.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import time
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import orjson
from aiobotocore.endpoint import convert_to_response_dict
from botocore.awsrequest import AWSPreparedRequest
from botocore.handlers import add_recursion_detection_header
from botocore.utils import is_valid_ipv6_endpoint_url, normalize_url_path

from storage.base.types import Response
from storage.engine.wrapping import ClientWrapper

# Client method names and the operations they send.
OPERATIONS = {"query": "Query", "get_item": "GetItem", "batch_get_item": "BatchGetItem"}

# The handlers botocore registers on a DynamoDB client for these operations' events, and
# what becomes of each the short way. Any other (a newer botocore's, or one registered on the
# client) sends the operation the long way.
KNOWN_HANDLERS: dict[str, frozenset[str]] = {
    "provide-client-params": frozenset(),
    # Idempotency tokens and S3's checksum modes: these reads have neither; and a check that
    # refuses operations requiring endpoint discovery while it is off: none of these does
    # (with discovery on, its own handlers send them the long way).
    "before-parameter-build": frozenset(
        {
            "generate_idempotent_uuid",
            "_handle_request_validation_mode_member",
            "block_endpoint_discovery_required_operations",
        }
    ),
    "before-endpoint-resolution": frozenset(),
    # The first is called here too; the second adds headers for other services only.
    "before-call": frozenset(
        {"add_recursion_detection_header", "inject_api_version_header_if_needed"}
    ),
    # Signing (SigV4 here), the User-Agent (made once here) and the telemetry-only
    # amz-sdk-request header (not sent here).
    "request-created": frozenset(
        {
            "AioRequestSigner.handler",
            "UserAgentString.rebuild_and_replace_user_agent_handler",
            "add_retry_headers",
        }
    ),
    # DynamoDB signs with SigV4 only, whatever the preference.
    "choose-signer": frozenset(
        {"set_operation_specific_signer", "_set_auth_scheme_preference_signer"}
    ),
    "before-sign": frozenset(),
    "before-send": frozenset(),
    "response-received": frozenset(),
    "before-parse": frozenset(),
    # Both emitted here as botocore's endpoint and client emit them.
    "needs-retry": frozenset({"AioRetryHandler.needs_retry"}),
    "after-call": frozenset({"RetryQuotaChecker.release_retry_quota"}),
    "after-call-error": frozenset(),
}

_ALGORITHM = "AWS4-HMAC-SHA256"
_CRC32_HEADER = "x-amz-crc32"


@dataclass(frozen=True, slots=True)
class Target:
    """Where one operation's requests go and how they are signed."""

    url: str
    region: str
    service: str

    @property
    def host(self) -> str:
        """The Host value botocore signs: lower case, without a default port."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if is_valid_ipv6_endpoint_url(self.url):
            host = f"[{host}]"
        if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(parts.scheme):
            host = f"{host}:{parts.port}"
        return host

    @property
    def path(self) -> str:
        """The canonical URI of the requests (``/`` for DynamoDB's endpoints)."""
        return quote(normalize_url_path(urlsplit(self.url).path), safe="/~")


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None = None


class SigV4:
    """AWS Signature Version 4 for a JSON-protocol POST to one target.

    Signs the headers botocore would sign for these requests (content-type, host,
    x-amz-date, x-amz-security-token when there is a session token, x-amz-target) and the
    SHA-256 of the body. The canonical parts fixed by the target are built once, and the
    signing key once per secret key and UTC day."""

    def __init__(self, target: Target, content_type: str) -> None:
        self.target = target
        self.content_type = " ".join(content_type.split())
        self._scope_tail = f"/{target.region}/{target.service}/aws4_request"
        self._head = (
            f"POST\n{target.path}\n\ncontent-type:{self.content_type}\nhost:{target.host}\n"
        )
        self._key: tuple[str, str, bytes] | None = None

    def signing_key(self, secret_key: str, day: str) -> bytes:
        cached = self._key
        if cached is not None and cached[0] == secret_key and cached[1] == day:
            return cached[2]
        key = _hmac(f"AWS4{secret_key}".encode(), day)
        for part in (self.target.region, self.target.service, "aws4_request"):
            key = _hmac(key, part)
        self._key = (secret_key, day, key)
        return key

    def headers(
        self, credentials: Credentials, amz_target: str, body: bytes, now: float
    ) -> dict[str, str]:
        """The request's headers, Authorization included, signed at ``now`` (epoch seconds)."""
        amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        day = amz_date[:8]
        amz_target = " ".join(amz_target.split())
        canonical = [self._head, f"x-amz-date:{amz_date}\n"]
        signed = "content-type;host;x-amz-date;"
        if credentials.token:
            canonical.append(f"x-amz-security-token:{' '.join(credentials.token.split())}\n")
            signed += "x-amz-security-token;"
        signed += "x-amz-target"
        canonical += [f"x-amz-target:{amz_target}\n\n", signed, "\n"]
        canonical.append(hashlib.sha256(body).hexdigest())
        scope = day + self._scope_tail
        string_to_sign = "\n".join(
            (_ALGORITHM, amz_date, scope, hashlib.sha256("".join(canonical).encode()).hexdigest())
        )
        signature = hmac.new(
            self.signing_key(credentials.secret_key, day), string_to_sign.encode(), "sha256"
        ).hexdigest()
        headers = {
            "X-Amz-Target": amz_target,
            "Content-Type": self.content_type,
            "X-Amz-Date": amz_date,
            "Authorization": f"{_ALGORITHM} Credential={credentials.access_key}/{scope}, "
            f"SignedHeaders={signed}, Signature={signature}",
        }
        if credentials.token:
            headers["X-Amz-Security-Token"] = credentials.token
        return headers


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), "sha256").digest()


def _blob(value: object) -> str:
    # botocore sends blobs (B, BS) base64-encoded; orjson knows no bytes.
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not a DynamoDB parameter type")


def _names_an_arn(operation: str, params: dict[str, Any]) -> bool:
    """Whether a call names its table by ARN: its endpoint may then depend on the ARN."""
    if operation == "BatchGetItem":
        return any(str(name).startswith("arn:") for name in params.get("RequestItems") or {})
    return str(params.get("TableName", "")).startswith("arn:")


class DirectReads(ClientWrapper):
    """An aiobotocore DynamoDB client whose Query, GetItem and BatchGetItem calls go the
    short way (see the module's docstring); every other call goes to the client itself.

    ``pass_through`` hands clean answers over as decoded (what ``FAST_ATTRIBUTE_PARSING``
    does); without it botocore's parser reads them too."""

    def __init__(self, inner: Any, *, pass_through: bool = True) -> None:
        super().__init__(inner)
        self._client: Any = inner  # aiobotocore's, whose internals this path reuses
        meta = inner.meta
        service = meta.service_model
        self._pass_through = pass_through
        self._service_id = service.service_id.hyphenize()
        self._target_prefix = str(service.metadata["targetPrefix"])
        self._content_type = f"application/x-amz-json-{service.metadata['jsonVersion']}"
        self._signature_version = meta.config.signature_version
        # Made once: botocore's own adds the features each call used.
        self._user_agent = str(inner._user_agent_creator.to_string())
        self._signers: dict[str, SigV4 | None] = {}
        self._lock = asyncio.Lock()

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        name = OPERATIONS.get(operation)
        if name is None or _names_an_arn(name, kwargs):
            return await super()._call(operation, kwargs)
        signer = self._signers[name] if name in self._signers else await self._resolve(name, kwargs)
        credentials = await self._credentials()
        if signer is None or credentials is None:
            return await super()._call(operation, kwargs)
        return await self._send(name, signer, credentials, kwargs)

    async def _resolve(self, name: str, params: dict[str, Any]) -> SigV4 | None:
        """The signer of an operation's calls, from botocore's endpoint rules; None when they
        need what this path does not do (headers, another auth scheme or signature)."""
        async with self._lock:
            if name in self._signers:
                return self._signers[name]
            client = self._client
            model = client.meta.service_model.operation_model(name)
            context: dict[str, Any] = {}
            url, headers, _ = await client._resolve_endpoint_ruleset(model, params, context)
            signing = context.get("signing", {})
            parts = urlsplit(url)
            plain = (
                not headers
                and context.get("auth_type", "v4") == "v4"
                and self._signature_version in (None, "v4")
                and parts.path in ("", "/")
                and not parts.query
            )
            signer = None
            if plain and self._only_known_handlers(name):
                target = Target(
                    url,
                    signing.get("region") or client.meta.region_name,
                    signing.get("signing_name") or client.meta.service_model.signing_name,
                )
                signer = SigV4(target, self._content_type)
            self._signers[name] = signer
            return signer

    def _only_known_handlers(self, name: str) -> bool:
        try:
            handlers = self._client.meta.events._emitter._handlers
        except AttributeError:  # another botocore: the long way
            return False
        for event, known in KNOWN_HANDLERS.items():
            found = handlers.prefix_search(f"{event}.{self._service_id}.{name}")
            names = {getattr(h, "__qualname__", type(h).__qualname__) for h in found}
            if not names <= known:
                return False
        return True

    async def _credentials(self) -> Credentials | None:
        source = self._client._request_signer._credentials
        if source is None:
            return None
        frozen = await source.get_frozen_credentials()
        if not frozen.access_key or not frozen.secret_key:
            return None
        return Credentials(frozen.access_key, frozen.secret_key, frozen.token)

    async def _send(
        self, name: str, signer: SigV4, credentials: Credentials, params: dict[str, Any]
    ) -> Response:
        """One call, retried as botocore's standard mode retries it."""
        client = self._client
        model = client.meta.service_model.operation_model(name)
        body = orjson.dumps(params, default=_blob)
        # botocore's request context: what its retry handler and quota read and write.
        context: dict[str, Any] = {"retries": {}}
        attempts = 1
        while True:
            context["retries"]["attempt"] = attempts
            http, parsed, error, clean = await self._attempt(name, signer, credentials, body, model)
            if clean:
                break
            delay = await self._retry_delay(name, model, attempts, context, http, parsed, error)
            if delay is None:
                break
            await asyncio.sleep(delay)
            attempts += 1
            credentials = await self._credentials() or credentials
        if error is not None:
            await client.meta.events.emit(
                f"after-call-error.{self._service_id}.{name}", exception=error, context=context
            )
            raise error
        assert http is not None
        assert parsed is not None
        parsed.setdefault("ResponseMetadata", {})["RetryAttempts"] = attempts - 1
        await client.meta.events.emit(
            f"after-call.{self._service_id}.{name}",
            http_response=http,
            parsed=parsed,
            model=model,
            context=context,
        )
        if http.status_code >= 300:
            code = parsed.get("Error", {}).get("Code")
            raise client.exceptions.from_code(code)(parsed, name)
        return parsed

    async def _attempt(
        self, name: str, signer: SigV4, credentials: Credentials, body: bytes, model: Any
    ) -> tuple[Any, Response | None, Exception | None, bool]:
        """Send once: the HTTP response and the parsed answer, or the exception; and whether
        the answer is clean (2xx, with the CRC32 DynamoDB sent), which needs no retry."""
        client = self._client
        headers = signer.headers(credentials, f"{self._target_prefix}.{name}", body, time.time())
        headers["User-Agent"] = self._user_agent
        add_recursion_detection_header({"headers": headers})
        request = AWSPreparedRequest("POST", signer.target.url, headers, body, False)
        try:
            http = await client._endpoint.http_session.send(request)
            content = await http.content
        except Exception as exc:  # as botocore's endpoint: the retry handler judges it
            return None, None, exc, False
        clean = 200 <= http.status_code < 300 and _crc_holds(http.headers, content)
        parsed: Any = None
        if clean and self._pass_through:
            # What is not JSON, botocore's parser below makes of it what botocore makes.
            with contextlib.suppress(orjson.JSONDecodeError):
                parsed = orjson.loads(content)
        if isinstance(parsed, dict):
            metadata: dict[str, Any] = {}
            if "x-amzn-requestid" in http.headers:
                metadata["RequestId"] = http.headers["x-amzn-requestid"]
            metadata |= {"HTTPStatusCode": http.status_code, "HTTPHeaders": http.headers}
            parsed["ResponseMetadata"] = metadata
            return http, parsed, None, True
        return http, await self._parse(http, model), None, clean

    async def _parse(self, http: Any, model: Any) -> Response:
        """An answer read by botocore's own parser: errors, and any answer without the
        pass-through."""
        endpoint = self._client._endpoint
        response = await convert_to_response_dict(http, model)
        parser = endpoint._response_parser_factory.create_parser("json")
        parsed: Response = await parser.parse(response, model.output_shape)
        if http.status_code >= 300:
            await endpoint._add_modeled_error_fields(response, parsed, model, parser)
        return parsed

    async def _retry_delay(
        self,
        name: str,
        model: Any,
        attempts: int,
        context: dict[str, Any],
        http: Any,
        parsed: Response | None,
        error: Exception | None,
    ) -> float | None:
        """Seconds to wait before the next attempt, or None: botocore's retry handler
        decides, as its endpoint asks it after every attempt that was not a clean answer."""
        responses = await self._client.meta.events.emit(
            f"needs-retry.{self._service_id}.{name}",
            response=None if http is None else (http, parsed),
            endpoint=self._client._endpoint,
            operation=model,
            attempts=attempts,
            caught_exception=error,
            request_dict={"context": context},
        )
        for _, delay in responses:
            if delay is not None:
                return float(delay)
        return None


def _crc_holds(headers: dict[str, str], content: bytes) -> bool:
    """Whether the body's CRC32 is the one DynamoDB sent (true when it sent none)."""
    expected = headers.get(_CRC32_HEADER)
    return expected is None or zlib.crc32(content) & 0xFFFFFFFF == int(expected)
