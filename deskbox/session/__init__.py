"""`deskbox up`: one desktop session (headless Sway, Chromium, desktopd) on this host,
supervised until SIGINT/SIGTERM."""
