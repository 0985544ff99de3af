"""Errors the lab reports to its user (exit status 2 for bad input, 1 otherwise)."""
from __future__ import annotations


class LabError(Exception):
    """A failure while running: the message says what and where."""


class SpecError(LabError):
    """A bad experiment file: the message names the file and the field."""


class Interrupted(LabError):
    """SIGINT / SIGTERM arrived; everything started is being torn down."""
