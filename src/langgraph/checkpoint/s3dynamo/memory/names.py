"""Where one memory space's items live, and how messages name them: its namespaces'
partitions, its items' and directory entries' keys (`layout.py`, through the naming
secret's keyed hashes), what each blob is bound to (`format.py`), and whether its
namespaces are searched by prefix (the Store's are: their ancestors' partitions carry
descendants marks)."""

from __future__ import annotations

from dataclasses import dataclass

from langgraph.checkpoint.s3dynamo.format.layout import DESCENDANTS_SK, directory_pk, memory_pk
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.rows import Namespace

# Spaces searched by namespace prefix, whose ancestors' partitions carry descendants
# marks, and whose namespaces have search indexes (filter tokens, vectors): the Store;
# the node cache reads exact namespaces only.
SEARCHED = frozenset({"m"})


@dataclass(frozen=True)
class Names:
    """The names of one space (`"m"`: the Store's items; `"c"`: the node cache's
    entries) of a deployment (`prefix`), hashed with its naming secret."""

    space: str
    prefix: str
    namer: Namer

    @property
    def searched(self) -> bool:
        return self.space in SEARCHED

    @property
    def directory(self) -> str:
        """The partition of the space's namespace directory."""
        return directory_pk(self.prefix, self.space)

    def pk(self, namespace: Namespace) -> str:
        return memory_pk(
            self.prefix, self.namer.memory_namespace(self.space, namespace), self.space
        )

    def pk_of(self, name: str) -> str:
        """The partition of the namespace whose entry is named `name` (no key needed)."""
        return memory_pk(self.prefix, name, self.space)

    def item_key(self, namespace: Namespace, key: str) -> ItemKey:
        return ItemKey(self.pk(namespace), self.namer.memory_key(self.space, namespace, key))

    def entry_key(self, namespace: Namespace) -> ItemKey:
        """The key of a namespace's directory entry."""
        return ItemKey(self.directory, self.namer.memory_namespace(self.space, namespace))

    def ancestor_marks(self, namespace: Namespace) -> list[ItemKey]:
        """The descendants marks a namespace's entry needs: one in the partition of each
        of its ancestors (none in a space not searched by prefix)."""
        if not self.searched:
            return []
        return [ItemKey(self.pk(namespace[:i]), DESCENDANTS_SK) for i in range(1, len(namespace))]

    def aad(self, namespace: Namespace, sk: str) -> bytes:
        """What an item's payload is bound to (`format.item_aad`)."""
        return format.item_aad(self.space, namespace, sk)

    def what(self, namespace: Namespace, key: str | None = None) -> str:
        kind = "store item" if self.space == "m" else "cache entry"
        return f"{kind} in namespace {namespace!r}" + (f", key {key!r}" if key else "")
