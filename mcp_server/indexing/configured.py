"""The configured corpora: the only ones any server, worker or CLI command serves.

``RAGMCP_CORPORA`` (or, unset, the bundled demo corpora) lists corpus folders; each one's
``corpus.toml`` (or its folder name) names it. The index may hold other corpora besides,
ingested under an earlier configuration or for another host sharing the data dir: they are
never searched, listed or readable until configured again (re-adding one costs nothing),
and ``ragmcp corpus remove NAME`` deletes one for good.
"""

from __future__ import annotations

import os

from mcp_server.documents.corpus import CorpusConfig, load_corpus_config
from mcp_server.errors import IngestError
from mcp_server.settings import Settings


def configured_corpora(settings: Settings) -> list[CorpusConfig]:
    """The configs of the configured corpus folders, in configuration order.

    :raises IngestError: a configured folder does not exist or is not a folder, its
        ``corpus.toml`` is malformed, or two folders claim one corpus name.
    """
    configs: dict[str, CorpusConfig] = {}
    for folder in settings.corpora:
        if not folder.is_dir():
            what = "does not exist" if not folder.exists() else "is not a folder"
            raise IngestError(
                f"The configured corpus folder {folder} {what}. Create it, or remove it from RAGMCP_CORPORA "
                f"(the corpus folders to serve, separated by '{os.pathsep}')."
            )
        config = load_corpus_config(folder)
        check_unique_name(config, configs.get(config.name))
        configs[config.name] = config
    return list(configs.values())


def configured_names(settings: Settings) -> set[str]:
    return {config.name for config in configured_corpora(settings)}


def check_unique_name(config: CorpusConfig, other: CorpusConfig | None) -> None:
    """Refuse two different folders that claim the same corpus name."""
    if other is not None and other.root.resolve() != config.root.resolve():
        raise IngestError(
            f"two folders claim corpus name {config.name!r}: {other.root} and {config.root}; "
            "give one of them another name in its corpus.toml"
        )
