from __future__ import annotations

import pytest
from model_wire import KEY_ENV_VARS, Wire


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture(autouse=True)
def _no_real_keys(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's real keys must neither leak into these tests nor change their outcome;
    # live tests are the exception, they exist to use them.
    if request.node.get_closest_marker("live"):
        return
    for name in KEY_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
