"""A base for DynamoClient wrappers: every client method funnels into one ``_call``."""

from __future__ import annotations

from typing import Any

from storage.base.types import DynamoClient, Response


class ClientWrapper:
    """Satisfies DynamoClient by passing each call to ``_call(operation, kwargs)``, which by
    default forwards to the wrapped client. Subclasses meter, inject faults, and so on."""

    def __init__(self, inner: DynamoClient) -> None:
        self.inner = inner

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response: Response = await getattr(self.inner, operation)(**kwargs)
        return response

    async def query(self, **kwargs: Any) -> Response:
        return await self._call("query", kwargs)

    async def get_item(self, **kwargs: Any) -> Response:
        return await self._call("get_item", kwargs)

    async def batch_get_item(self, **kwargs: Any) -> Response:
        return await self._call("batch_get_item", kwargs)

    async def transact_get_items(self, **kwargs: Any) -> Response:
        return await self._call("transact_get_items", kwargs)

    async def batch_write_item(self, **kwargs: Any) -> Response:
        return await self._call("batch_write_item", kwargs)

    async def transact_write_items(self, **kwargs: Any) -> Response:
        return await self._call("transact_write_items", kwargs)

    async def update_item(self, **kwargs: Any) -> Response:
        return await self._call("update_item", kwargs)

    async def put_item(self, **kwargs: Any) -> Response:
        return await self._call("put_item", kwargs)

    async def delete_item(self, **kwargs: Any) -> Response:
        return await self._call("delete_item", kwargs)

    async def scan(self, **kwargs: Any) -> Response:
        return await self._call("scan", kwargs)

    async def create_table(self, **kwargs: Any) -> Response:
        return await self._call("create_table", kwargs)

    async def update_table(self, **kwargs: Any) -> Response:
        return await self._call("update_table", kwargs)

    async def describe_table(self, **kwargs: Any) -> Response:
        return await self._call("describe_table", kwargs)

    async def delete_table(self, **kwargs: Any) -> Response:
        return await self._call("delete_table", kwargs)

    async def describe_time_to_live(self, **kwargs: Any) -> Response:
        return await self._call("describe_time_to_live", kwargs)

    async def update_time_to_live(self, **kwargs: Any) -> Response:
        return await self._call("update_time_to_live", kwargs)
