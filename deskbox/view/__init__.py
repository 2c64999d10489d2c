"""The live view: the desktop in a browser, view only until "take control" (``app``)."""
