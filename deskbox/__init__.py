"""deskbox services: desktopd, the CDP bridge and the scene aggregator, plus the session supervisor."""
