"""Mock mode: the scene aggregator's API served from a scripted scenario, with no
desktop (``deskbox up --mock SCENARIO``; ``app``, ``scenario``, ``world``)."""
