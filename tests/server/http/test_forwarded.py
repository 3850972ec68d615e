"""The client address of a connection: the peer's, unless the peer is a trusted proxy, then
the rightmost untrusted address the proxies forwarded; and the setting that names them."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import ValidationError

from server.cli import uvicorn_options
from server.http.forwarded import TrustedProxies, client_address, parse_address
from server.settings import Settings

LOOPBACK = TrustedProxies.parse(["127.0.0.1", "::1"])


def scope(peer: str | None, *headers: tuple[str, str]) -> dict[str, object]:
    return {
        "type": "http",
        "client": None if peer is None else (peer, 4321),
        "headers": [(name.encode(), value.encode()) for name, value in headers],
    }


def address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize(
    ("peer", "headers", "expected"),
    [
        # No proxy: the peer, whatever it claims.
        ("10.1.2.3", [], "10.1.2.3"),
        ("10.1.2.3", [("x-forwarded-for", "127.0.0.1")], "10.1.2.3"),
        ("10.1.2.3", [("forwarded", "for=127.0.0.1")], "10.1.2.3"),
        # A trusted proxy (loopback): the address it appended.
        ("127.0.0.1", [("x-forwarded-for", "203.0.113.9")], "203.0.113.9"),
        ("::1", [("x-forwarded-for", "203.0.113.9")], "203.0.113.9"),
        # What the client sent itself is left of what the proxy appended: never believed.
        ("127.0.0.1", [("x-forwarded-for", "127.0.0.1, 198.51.100.7")], "198.51.100.7"),
        ("127.0.0.1", [("x-forwarded-for", "garbage, 198.51.100.7")], "198.51.100.7"),
        # Several proxies, and the header given twice (read in order).
        ("127.0.0.1", [("x-forwarded-for", "1.1.1.1"), ("x-forwarded-for", "2.2.2.2")], "2.2.2.2"),
        # Every hop trusted: the first is the client (a process on this machine via nginx).
        ("127.0.0.1", [("x-forwarded-for", "127.0.0.1")], "127.0.0.1"),
        # No header: the proxy itself.
        ("127.0.0.1", [], "127.0.0.1"),
        # An entry that is no address: the proxy that wrote it stands for the client.
        ("127.0.0.1", [("x-forwarded-for", "unknown")], "127.0.0.1"),
        # Ports, brackets, zones, IPv4-mapped IPv6.
        ("127.0.0.1", [("x-forwarded-for", "203.0.113.9:5555")], "203.0.113.9"),
        ("127.0.0.1", [("x-forwarded-for", "[2001:db8::1]:443")], "2001:db8::1"),
        ("127.0.0.1", [("x-forwarded-for", "2001:db8::1")], "2001:db8::1"),
        ("127.0.0.1", [("x-forwarded-for", "fe80::1%eth0")], "fe80::1"),
        ("::ffff:10.1.2.3", [], "10.1.2.3"),
        # Forwarded (RFC 7239), when there is no X-Forwarded-For.
        ("127.0.0.1", [("forwarded", 'for="[2001:db8::7]:80";proto=https')], "2001:db8::7"),
        ("127.0.0.1", [("forwarded", "for=1.1.1.1, for=2.2.2.2;by=127.0.0.1")], "2.2.2.2"),
        ("127.0.0.1", [("forwarded", "for=_hidden")], "127.0.0.1"),
        ("127.0.0.1", [("forwarded", "proto=https")], "127.0.0.1"),
        (
            "127.0.0.1",
            [("forwarded", "for=9.9.9.9"), ("x-forwarded-for", "8.8.8.8")],
            "8.8.8.8",
        ),
    ],
)
def test_the_client_address(peer: str, headers: list[tuple[str, str]], expected: str) -> None:
    assert client_address(scope(peer, *headers), LOOPBACK) == address(expected)


def test_without_trusted_proxies_the_peer_is_the_client() -> None:
    forwarded = scope("127.0.0.1", ("x-forwarded-for", "203.0.113.9"))
    assert client_address(forwarded, TrustedProxies()) == address("127.0.0.1")


def test_networks_and_everyone() -> None:
    private = TrustedProxies.parse(["10.0.0.0/8"])
    chain = scope("10.0.0.5", ("x-forwarded-for", "203.0.113.9, 10.9.9.9"))
    assert client_address(chain, private) == address("203.0.113.9")
    everyone = TrustedProxies.parse(["*"])
    assert client_address(scope("8.8.8.8", ("x-forwarded-for", "1.2.3.4")), everyone) == (
        address("1.2.3.4")
    )


def test_a_connection_without_an_ip_peer_has_no_address() -> None:
    assert client_address(scope(None), LOOPBACK) is None
    assert client_address(scope("testclient"), LOOPBACK) is None
    assert parse_address("not an address") is None


def test_a_rewritten_scope_gives_the_same_answer() -> None:
    # uvicorn's proxy headers rewrite scope["client"] by the same rule first.
    headers = ("x-forwarded-for", "6.6.6.6, 198.51.100.7")
    raw = client_address(scope("127.0.0.1", headers), LOOPBACK)
    assert raw == address("198.51.100.7")
    assert client_address(scope(str(raw), headers), LOOPBACK) == raw


def test_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().forwarded_allow_ips == ["127.0.0.1", "::1"]

    def read(value: str) -> TrustedProxies:
        monkeypatch.setenv("FORWARDED_ALLOW_IPS", value)
        return Settings().trusted_proxies

    assert read(" 10.0.0.0/8 ,192.168.1.7, 2001:db8::/32").uvicorn() == (
        "10.0.0.0/8,192.168.1.7,2001:db8::/32"
    )
    assert read("") == TrustedProxies()
    assert read("*").uvicorn() == "*"
    with pytest.raises(ValidationError, match="FORWARDED_ALLOW_IPS must be IP addresses"):
        read("proxy.example")


def test_uvicorn_rewrites_the_client_by_the_same_setting() -> None:
    options = uvicorn_options(Settings(forwarded_allow_ips=["10.0.0.0/8"]))
    assert options["proxy_headers"] is True
    assert options["forwarded_allow_ips"] == "10.0.0.0/8"
