"""Topology: who hears whom in rounds r >= 1, as "agent i hears agents peers(n)[i]".

``none``: nobody (independent answers); ``full``: everyone (Du et al.); ``ring``: the ``k`` nearest
neighbours on each side (Li et al. 2024's sparse debate); ``star``: the ``hub`` hears everyone and
everyone hears only the hub; ``graph``: ``edges`` lists, for each agent index, the agents it hears.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from moot.debate.registry import Component, register
from moot.errors import ConfigError


class Topology(Component):
    family = "topology"
    legacy_defaults = {"k": 1, "hub": 0, "edges": None}  # stored by moot 0.1 for every kind

    def peers(self, n: int) -> list[list[int]]:
        """For each of ``n`` agents, the sorted agents it hears; raises ConfigError if impossible."""
        raise NotImplementedError

    def validate_for(self, n: int) -> None:
        """Every agent of a debating topology must hear someone."""
        peers = self.peers(n)
        if self.kind != "none" and n > 1:
            lonely = [i for i, p in enumerate(peers) if not p]
            if lonely:
                raise ConfigError(f"topology: agent {lonely[0]} hears no other agent")

    def density(self, n: int) -> float:
        """D = |A| / (|V|(|V|-1)) over the directed "hears" arcs; equals 2|E| / (|V|(|V|-1)) when symmetric."""
        if n < 2:
            return 0.0
        return sum(len(p) for p in self.peers(n)) / (n * (n - 1))

    def describe(self, protocol: Any = None) -> str:
        return self.kind


@register
class NoTopology(Topology):
    kind: Literal["none"] = "none"

    def peers(self, n: int) -> list[list[int]]:
        return [[] for _ in range(n)]


@register
class Full(Topology):
    kind: Literal["full"] = "full"

    def peers(self, n: int) -> list[list[int]]:
        return [[j for j in range(n) if j != i] for i in range(n)]


@register
class Ring(Topology):
    kind: Literal["ring"] = "ring"
    k: int = Field(default=1, ge=1, description="neighbours heard on each side")

    def peers(self, n: int) -> list[list[int]]:
        return [sorted({(i + d) % n for d in range(-self.k, self.k + 1)} - {i}) for i in range(n)]

    def describe(self, protocol: Any = None) -> str:
        return f"ring (k={self.k})"


@register
class Star(Topology):
    kind: Literal["star"] = "star"
    hub: int = Field(default=0, ge=0, description="index of the hub agent")

    def peers(self, n: int) -> list[list[int]]:
        if self.hub >= n:
            raise ConfigError(f"topology: the hub is agent {self.hub}, but there are only {n} agents")
        return [[j for j in range(n) if j != i] if i == self.hub else [self.hub] for i in range(n)]

    def describe(self, protocol: Any = None) -> str:
        return f"star (hub agent {self.hub})"


@register
class Graph(Topology):
    kind: Literal["graph"] = "graph"
    edges: tuple[tuple[int, ...], ...] | None = Field(default=None, description="agents heard by each agent")

    def peers(self, n: int) -> list[list[int]]:
        if self.edges is None or len(self.edges) != n:
            got = "none" if self.edges is None else str(len(self.edges))
            raise ConfigError(f"topology: a graph needs one list of heard agents per agent ({n}), got {got}")
        peers = []
        for i, heard in enumerate(self.edges):
            for j in heard:
                if j == i:
                    raise ConfigError(f"topology: agent {i} hears itself (a self-loop)")
                if not 0 <= j < n:
                    raise ConfigError(f"topology: agent {i} hears agent {j}, which does not exist (0..{n - 1})")
            peers.append(sorted(set(heard)))
        return peers

    def describe(self, protocol: Any = None) -> str:
        return f"graph {self.edges}"
