"""Who hears whom in rounds r >= 1: full, ring (k neighbours each side), star (hub), an explicit graph, or none."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from moot.errors import ConfigError


class Topology(BaseModel):
    """A communication graph over agents 0..N-1, as "agent i hears agents peers[i]".

    ``ring``: each agent hears its ``k`` nearest neighbours on each side (Li et al. 2024's sparse
    debate); ``star``: the ``hub`` hears everyone and everyone hears only the hub; ``graph``:
    ``edges`` lists, for each agent index, the agents it hears (directed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["none", "full", "ring", "star", "graph"] = "full"
    k: int = Field(default=1, ge=1, description="ring: neighbours heard on each side")
    hub: int = Field(default=0, ge=0, description="star: index of the hub agent")
    edges: tuple[tuple[int, ...], ...] | None = Field(default=None, description="graph: agents heard by each agent")

    def peers(self, n: int) -> list[list[int]]:
        """For each agent, the sorted agents it hears; validated against ``n`` agents."""
        if self.kind == "none":
            return [[] for _ in range(n)]
        if self.kind == "full":
            return [[j for j in range(n) if j != i] for i in range(n)]
        if self.kind == "ring":
            return [sorted({(i + d) % n for d in range(-self.k, self.k + 1)} - {i}) for i in range(n)]
        if self.kind == "star":
            if self.hub >= n:
                raise ConfigError(f"topology: the hub is agent {self.hub}, but there are only {n} agents")
            return [[j for j in range(n) if j != i] if i == self.hub else [self.hub] for i in range(n)]
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
