"""Where a webhook may connect: public addresses only, unless the operator allows a network or host
(``PCFJ_WEBHOOK_ALLOW``). docs/operations/safety.md#webhooks.

A host is judged by the addresses it resolves to (the system resolver, as a connection would: so ``127.1``,
``2130706433``, ``0x7f000001``, ``017700000001`` and ``0`` are all the loopback or unspecified address they mean), and
every one of them must be public: not loopback, private, link-local, shared (100.64/10), multicast, reserved or
unspecified, and not such an address inside IPv6 (``::ffff:127.0.0.1``, 6to4, Teredo). The delivery connects to the
address judged here (``Target``), never to a second resolution of the name, so a name that rebinds to an inner
address after the check cannot slip through.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
RESOLVE_S = 2.0


class Refused(Exception):
    """The host resolves to an address webhooks may not reach (the message says which kind, never the address)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """What the operator allows beyond public addresses: networks, and host names (as written in the URL)."""

    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, allow: str | None) -> Policy:
        networks, hosts = [], set()
        for entry in (e.strip() for e in (allow or "").split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(tuple(networks), frozenset(hosts))

    def allows(self, address: Address) -> bool:
        forms = {address, _inner(address)}
        return any(a.version == n.version and a in n for n in self.networks for a in forms)


@dataclass(frozen=True, slots=True)
class Target:
    """Where to connect: ``address`` (None: the host is allowed by name and connected to as usual)."""

    address: Address | None


def _inner(address: Address) -> Address:
    """An IPv4 address carried inside an IPv6 one (mapped, 6to4, Teredo's client), else the address itself."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if carried is not None:
            return carried
    return address


def kind_of(address: Address) -> str | None:
    """Why webhooks may not reach ``address`` ("loopback", "private", …), or None: it is public."""
    inner = _inner(address)
    for candidate in (address, inner):
        for kind in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
            if getattr(candidate, f"is_{kind}"):
                return kind.replace("_", "-")
        if not candidate.is_global:
            return "not public"
    return None


def literal(host: str) -> Address | None:
    """``host`` as an address if it is one, in any form the resolver reads as one (``127.1``, ``0x7f000001``)."""
    try:
        return _inner(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def check_literal(host: str, policy: Policy) -> None:
    """Refuse a host written as an address (or named ``localhost``) webhooks may not reach; names are left to
    ``resolve``."""
    name = host.lower().rstrip(".")
    if name in policy.hosts:
        return
    if name == "localhost" or name.endswith(".localhost"):
        raise Refused("loopback")
    address = literal(name)
    if address is not None and not policy.allows(address) and (kind := kind_of(address)) is not None:
        raise Refused(kind)


async def resolve(host: str, port: int, policy: Policy) -> Target:
    """Where to connect for ``host``: its first address once every address it resolves to passed (``Refused`` if
    one did not; ``OSError`` or ``TimeoutError`` if it does not resolve)."""
    name = host.lower().rstrip(".")
    if name in policy.hosts:
        return Target(None)
    check_literal(name, policy)
    async with asyncio.timeout(RESOLVE_S):
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in await lookup(name, port)]
    if not addresses:
        raise OSError(f"{host} resolves to no address")
    for address in addresses:
        if not policy.allows(address) and (kind := kind_of(address)) is not None:
            raise Refused(kind)
    return Target(addresses[0])


async def lookup(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the system resolver, as a connection would use)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in found]
