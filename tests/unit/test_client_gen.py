"""deskbox.Client's methods are generated from AsyncClient's: the file is current, and
each method has AsyncClient's signature."""

from __future__ import annotations

import inspect

from deskbox.client import AsyncClient
from deskbox.client_gen import SYNC_PATH, generate
from deskbox.client_sync import Client


def test_the_sync_client_is_generated_from_the_async_one():
    assert SYNC_PATH.read_text() == generate(), "deskbox/client_sync.py is stale: python -m deskbox.client_gen"


def test_each_async_method_has_a_plain_twin_with_its_signature():
    methods = {n for n, m in vars(AsyncClient).items() if not n.startswith("_") and inspect.iscoroutinefunction(m)}
    for name in methods:
        twin = getattr(Client, name)
        assert not inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(getattr(AsyncClient, name)), name
    assert inspect.signature(Client.__init__) == inspect.signature(AsyncClient.__init__)
