"""The lifecycle over the layers: recall (rewrite → facts → search → pack), reflect (and its
background thread), and consolidation, forgetting and sharing."""

__all__: list[str] = []
