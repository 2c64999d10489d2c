"""OS Screen Observer's REST API on a deskbox session (``deskbox up --observer``, port
5001), mapped onto the scene aggregator's toolset: see ``app``."""
