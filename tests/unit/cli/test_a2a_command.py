"""`adkt a2a`: the agent card's address, and the refusals that say what to pass instead."""

from __future__ import annotations

from typer.testing import CliRunner

from adkt.commands.a2a import card_url
from adkt.main import app


def test_the_card_gives_the_listening_address_or_the_public_one() -> None:
    assert card_url("127.0.0.1", 8001, None) == "http://127.0.0.1:8001/"
    assert card_url("0.0.0.0", 8001, "https://agents.example.com/") == "https://agents.example.com/"


def test_a_wildcard_host_without_a_public_url_or_a_bad_one_is_refused_before_anything_starts() -> None:
    wildcard = CliRunner().invoke(app, ["a2a", "examples.a2a_agents:specialist", "--host", "0.0.0.0"], env={"COLUMNS": "300"})
    assert wildcard.exit_code == 2 and "pass --public-url http://<host name>:8001/" in wildcard.output
    bad = CliRunner().invoke(app, ["a2a", "examples.a2a_agents:specialist", "--public-url", "agents:8001"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "is not an http(s) URL" in bad.output
