"""Where each shard's Ray actor runs: ``actor_options`` for every shard, per shard, or computed.

On a cluster where every node keeps its shards on its own disk, shard s must run on the node
that holds it. Ray places an actor by the resources it asks for, so the node holding shard s
advertises a custom resource (``ray start --resources='{"codedb-shard-3": 1}'``) and shard s's
actor asks for it (:func:`shard_resource`), or the actor names the node
(``scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from codedb._errors import InvalidArgument

#: ``actor_options``: one dict for every shard, a list with one dict per shard, or a function
#: of the shard number returning its dict.
ActorOptions = dict[str, Any] | Sequence[dict[str, Any]] | Callable[[int], dict[str, Any]] | None


def shard_resource(shard: int) -> str:
    """The custom resource a node advertises for holding shard ``shard``: ``codedb-shard-<s>``."""
    return f"codedb-shard-{shard}"


def on_shard_nodes(num_cpus: float = 1.0) -> Callable[[int], dict[str, Any]]:
    """``actor_options`` placing shard s's actor on the node that advertises
    ``codedb-shard-<s>`` (:func:`shard_resource`), asking ``num_cpus`` CPUs there."""

    def options(shard: int) -> dict[str, Any]:
        return {"num_cpus": num_cpus, "resources": {shard_resource(shard): 0.001}}

    return options


def options_for(actor_options: ActorOptions, shard: int, n_shards: int) -> dict[str, Any]:
    """Shard ``shard``'s options (a copy), checked: a list must have one dict per shard."""
    if actor_options is None:
        return {}
    if callable(actor_options):
        got = actor_options(shard)
        if not isinstance(got, dict):
            raise InvalidArgument(
                f"actor_options: the function returned {type(got).__name__} for shard {shard}, "
                "expected a dict"
            )
        return dict(got)
    if isinstance(actor_options, dict):
        return dict(actor_options)
    opts = list(actor_options)
    if len(opts) != n_shards:
        raise InvalidArgument(
            f"actor_options: {len(opts)} dicts for {n_shards} shards, expected one per shard"
        )
    if not isinstance(opts[shard], dict):
        raise InvalidArgument(f"actor_options[{shard}]: expected a dict")
    return dict(opts[shard])


def describe(options: dict[str, Any]) -> str:
    """What an actor asks the cluster for, for an error saying it could not be placed."""
    parts = [f"{options.get('num_cpus', 1)} CPU"]
    for name, amount in (options.get("resources") or {}).items():
        parts.append(f"{amount} {name}")
    if "scheduling_strategy" in options:
        parts.append(f"scheduling {options['scheduling_strategy']!r}")
    return ", ".join(parts)
