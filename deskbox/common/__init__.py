"""Pieces every deskbox service shares: logging, the error hierarchy, HTTP plumbing."""
