"""``python -m services.atspi``: what AT-SPI sees in this session (see reader.main)."""

from .reader import main

main()
