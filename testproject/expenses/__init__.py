"""The demo's own app: expense claims that the agent files for the person
who asked, once a reviewer approved them (see :mod:`.tools`)."""
