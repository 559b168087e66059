"""The embedders' parts: shared checks (:mod:`.base`), MiniLM (:mod:`.minilm`) and the
multilingual models (:mod:`.multilingual`). The public names live in :mod:`trimem.embedders`."""
