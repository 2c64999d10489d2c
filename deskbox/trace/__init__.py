"""Traces: every action of a session, its element and screenshots, kept in a folder; and their replay."""
