"""The agent: the process's toolkit and model client on one event loop
(:mod:`.runtime`), the one reader of transcripts (:mod:`.transcript`), the
replay of a suspended run once it is answered (:mod:`.replay`), and the
memory of each owner's conversations (:mod:`.conversations`)."""
