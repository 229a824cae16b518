"""Authentication of the web app (issue 24, item 2b): API keys, OIDC bearer tokens checked against a
real issuer's JWKS served over loopback (conftest.py), and the rule that a server bound beyond
loopback without authentication does not start unless --insecure says so."""

from __future__ import annotations

import asyncio
import base64
import json
import types
from collections.abc import Callable
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from typer.testing import CliRunner

from adk_core.errors import ConfigurationError
from adk_core.simulator import SimulatorService
from adkt.settings import Settings, WebSettings
from adkt.web.security import ApiKeys, AuthError, IssuerUnavailableError, OidcVerifier, web_access
from adkt.web.security import oidc as oidc_module
from adkt.web.site import create_site
from tests.unit.web.oidc_issuer import AUDIENCE, Issuer

ANA_KEY = "ana-key-0123456789abcdefghijklmnop"
OPS_KEY = "ops-key-0123456789abcdefghijklmnop"


# --- API keys ---------------------------------------------------------------------------------------


def test_api_keys_name_their_user_and_role() -> None:
    keys = ApiKeys.parse(f"ana:{ANA_KEY}, ops:{OPS_KEY}:operator", source="ADK_API_KEYS")
    ana, ops = keys.authenticate(ANA_KEY), keys.authenticate(OPS_KEY)
    assert ana is not None and (ana.user, ana.operator, ana.via) == ("ana", False, "api_key")
    assert ops is not None and (ops.user, ops.operator) == ("ops", True)
    assert keys.authenticate(ANA_KEY[:-1]) is None
    assert keys.authenticate(ANA_KEY + "x") is None
    assert keys.authenticate("") is None


def test_api_keys_file(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# the team\nana:{ANA_KEY}\n\nops:{OPS_KEY}:operator  # on call\n")
    keys = ApiKeys.from_file(path)
    assert len(keys) == 2 and keys.authenticate(OPS_KEY).operator  # type: ignore[union-attr]
    access = web_access("0.0.0.0", WebSettings(api_keys=f"bob:{'b' * 30}", api_keys_file=path))
    assert access.keys is not None and len(access.keys) == 3


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ana", "user:key or user:key:operator"),
        (f"ana:{ANA_KEY}:admin", "user:key or user:key:operator"),
        ("ana:short", "at least 24"),
        (f" :{ANA_KEY}", "user id is empty"),
        (f"ana:{ANA_KEY},bob:{ANA_KEY}", "given twice"),
        ("# nothing", "holds no API keys"),
    ],
)
def test_bad_api_key_entries_say_how_to_fix_them(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        ApiKeys.parse(text, source="ADK_API_KEYS")


def test_a_missing_keys_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="ADK_API_KEYS_FILE"):
        ApiKeys.from_file(tmp_path / "nope")


def test_settings_read_the_web_variables(tmp_path: Path) -> None:
    settings = Settings.load({
        "ADK_ALLOWED_HOSTS": "app.example.com, .corp.example", "ADK_API_KEYS": f"ana:{ANA_KEY}",
        "ADK_API_KEYS_FILE": str(tmp_path / "k"), "ADK_OIDC_ISSUER": "https://id.example", "ADK_OIDC_AUDIENCE": "a",
    })  # fmt: skip
    assert settings.web.allowed_hosts == ("app.example.com", ".corp.example")
    assert settings.web.api_keys_file == tmp_path / "k" and settings.web.oidc_issuer == "https://id.example"


# --- binding beyond loopback ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "app.example.com"])
def test_binding_beyond_loopback_without_auth_refuses_to_start(host: str) -> None:
    with pytest.raises(ConfigurationError, match="--insecure") as refused:
        web_access(host, WebSettings())
    assert "ADK_API_KEYS" in str(refused.value) and "ADK_OIDC_ISSUER" in str(refused.value)
    insecure = web_access(host, WebSettings(), insecure=True)
    assert (
        insecure.anonymous is not None
        and insecure.anonymous.via == "insecure"
        and insecure.anonymous.operator
    )
    assert "NO AUTHENTICATION" in insecure.describe()
    keyed = web_access(host, WebSettings(api_keys=f"ana:{ANA_KEY}"))
    assert keyed.authenticated


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_without_auth_keeps_the_single_developer(host: str) -> None:
    access = web_access(host, WebSettings())
    assert access.anonymous is not None and access.anonymous.via == "loopback" and access.anonymous.operator
    assert not access.authenticated


def test_adkt_api_on_a_public_address_without_auth_exits_with_the_fix() -> None:
    from adkt.main import app

    result = CliRunner().invoke(app, ["api", "--host", "0.0.0.0", "--port", "0"], env={"ADK_API_KEYS": ""})
    assert result.exit_code != 0
    assert "--insecure" in result.output and "refusing to serve on '0.0.0.0'" in result.output


def test_oidc_settings_without_their_pair_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="ADK_OIDC_AUDIENCE"):
        web_access("127.0.0.1", WebSettings(oidc_issuer="https://id.example"))
    with pytest.raises(ConfigurationError, match="without ADK_OIDC_ISSUER"):
        web_access("127.0.0.1", WebSettings(oidc_audience="a"))


# --- OIDC tokens against a real JWKS ----------------------------------------------------------------


def _verifier(issuer: Issuer, **options: float) -> OidcVerifier:
    return OidcVerifier(issuer.url, AUDIENCE, **options)  # type: ignore[arg-type]


async def test_a_valid_token_is_its_subject_with_its_roles(issuer: Issuer) -> None:
    verifier = _verifier(issuer)
    ana = await verifier.authenticate(issuer.token("ana"))
    assert (ana.user, ana.operator, ana.via) == ("ana", False, "oidc")
    ops = await verifier.authenticate(issuer.token("ops", roles=["reader", "operator"]))
    assert ops.operator
    spaced = await verifier.authenticate(issuer.token("ops2", roles="operator x"))
    assert spaced.operator
    assert verifier.fetches == 1  # the keys were fetched once and cached


def _forged(issuer: Issuer) -> str:
    return issuer.token("ana", key=rsa.generate_private_key(public_exponent=65537, key_size=2048))


def _hmac_with_public_key(issuer: Issuer) -> str:
    public = issuer.jwks()["keys"][0]["n"]
    return jwt.encode({"sub": "ana", "iss": issuer.url, "aud": AUDIENCE, "exp": 2**31}, public, algorithm="HS256",
                      headers={"kid": issuer.current})  # fmt: skip


def _unsigned(issuer: Issuer) -> str:
    return jwt.encode(
        {"sub": "ana", "iss": issuer.url, "aud": AUDIENCE, "exp": 2**31}, None, algorithm="none"
    )


def _alg_for_another_kind_of_key(alg: str) -> Callable[[Issuer], str]:
    """A token whose header names the issuer's RSA key but an EC or OKP algorithm (the signature is junk:
    nobody needs a key to send this). PyJWT given the RSA key for it raised TypeError: a 500."""

    def make(issuer: Issuer) -> str:
        def part(d: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

        return f"{part({'alg': alg, 'kid': issuer.current, 'typ': 'JWT'})}.{part({'sub': 'ana'})}.AAAA"

    return make


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_alg_for_another_kind_of_key("ES256"), "'ES256', which does not fit the issuer's key"),
        (_alg_for_another_kind_of_key("EdDSA"), "'EdDSA', which does not fit the issuer's key"),
        # Signed with the issuer's own RSA key, but the issuer publishes that key for RS256 only.
        (lambda i: i.token("ana", algorithm="PS256"), "'PS256', which does not fit the issuer's key .* for RS256"),
        (lambda i: i.token("ana", expires_in=-120), "expired"),
        (lambda i: i.token("ana", aud="another-api"), "not for this server"),
        (lambda i: i.token("ana", iss="https://evil.example"), "not issued by"),
        (_forged, "Signature verification failed"),
        (_hmac_with_public_key, "'HS256'"),
        (_unsigned, "'none'"),
        (lambda i: i.token(None), "sub"),
        (lambda i: i.token(" ana"), "whitespace"),
        (lambda i: i.token("ana", kid="unknown"), "not among the issuer's published keys"),
        (lambda i: "not.a.jwt", "not a JWT"),
    ],
)
async def test_bad_tokens_are_refused_with_the_reason(issuer: Issuer, make, says: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AuthError, match=says) as refused:
        await _verifier(issuer).authenticate(make(issuer))
    assert refused.value.status == 401


async def test_without_a_published_alg_any_algorithm_of_the_keys_kind_verifies(issuer: Issuer) -> None:
    published = issuer.jwks
    issuer.jwks = lambda: {"keys": [{k: v for k, v in key.items() if k != "alg"} for key in published()["keys"]]}  # type: ignore[method-assign]
    verifier = _verifier(issuer)
    assert (await verifier.authenticate(issuer.token("ana", algorithm="PS256"))).user == "ana"
    assert (await verifier.authenticate(issuer.token("ana", algorithm="RS384"))).user == "ana"
    with pytest.raises(AuthError, match="'ES256', which does not fit the issuer's key .*RSA"):
        await verifier.authenticate(_alg_for_another_kind_of_key("ES256")(issuer))


async def test_rotated_keys_are_fetched_again_within_the_bound(issuer: Issuer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The verifier's own clock, moved by hand: a loaded machine must not stretch "just fetched".
    now = [1000.0]
    monkeypatch.setattr(oidc_module, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    verifier = _verifier(issuer, min_refresh_seconds=0.5)
    await verifier.authenticate(issuer.token("ana"))
    issuer.rotate(keep_old=False)
    new = issuer.token("ana")
    # Just fetched: an unknown key id does not refetch yet (no flood of requests to the issuer).
    for _ in range(5):
        with pytest.raises(AuthError, match="not among"):
            await verifier.authenticate(new)
    assert verifier.fetches == 1
    now[0] += 0.6
    assert (await verifier.authenticate(new)).user == "ana"
    assert verifier.fetches == 2
    for _ in range(5):  # made-up key ids right after: still one fetch per bound
        with pytest.raises(AuthError):
            await verifier.authenticate(issuer.token("ana", kid="made-up"))
    assert verifier.fetches == 2


async def test_cached_keys_expire(issuer: Issuer) -> None:
    verifier = _verifier(issuer, cache_seconds=0.3)
    await verifier.authenticate(issuer.token("ana"))
    await asyncio.sleep(0.4)
    await verifier.authenticate(issuer.token("ana"))
    assert verifier.fetches == 2


async def test_an_unreachable_issuer_is_a_503_and_is_not_hammered(issuer: Issuer) -> None:
    issuer.down = True
    verifier = _verifier(issuer, min_refresh_seconds=30)
    for _ in range(3):
        with pytest.raises(IssuerUnavailableError, match="could not fetch") as failed:
            await verifier.authenticate(issuer.token("ana"))
        assert failed.value.status == 503
    assert issuer.discovery_requests == 1  # asked once, not once per request
    issuer.down = False
    cached = _verifier(issuer, cache_seconds=0.2)
    await cached.authenticate(issuer.token("ana"))
    issuer.down = True
    await asyncio.sleep(0.3)
    assert (await cached.authenticate(issuer.token("ana"))).user == "ana"  # stale keys beat no keys


# --- through the app --------------------------------------------------------------------------------


async def test_a_token_whose_alg_does_not_fit_the_key_is_a_401_not_a_500(issuer: Issuer) -> None:
    app = create_site(None, SimulatorService(), access=web_access(
        "127.0.0.1", WebSettings(oidc_issuer=issuer.url, oidc_audience=AUDIENCE)))  # fmt: skip
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for alg in ("ES256", "ES384", "EdDSA"):
            token = _alg_for_another_kind_of_key(alg)(issuer)
            refused = await http.get("/api/sessions", headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 401 and "does not fit" in refused.json()["message"], refused.text


async def test_with_auth_configured_data_needs_credentials_and_pages_do_not(issuer: Issuer) -> None:
    settings = WebSettings(api_keys=f"ops:{OPS_KEY}:operator", oidc_issuer=issuer.url, oidc_audience=AUDIENCE)
    app = create_site(None, SimulatorService(), access=web_access("127.0.0.1", settings))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        for path in ("/sim", "/static/app.js"):
            assert (await http.get(path)).status_code == 200
        refused = await http.get("/api/sessions")
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        assert "Authorization: Bearer" in refused.json()["message"]
        wrong = await http.get("/api/sessions", headers={"Authorization": f"Bearer {ANA_KEY}"})
        assert wrong.status_code == 401 and "not a known API key" in wrong.json()["message"]
        basic = await http.get("/api/sessions", headers={"Authorization": "Basic YTpi"})
        assert basic.status_code == 401 and "Bearer" in basic.json()["message"]
        by_key = await http.get("/api/sessions", headers={"Authorization": f"Bearer {OPS_KEY}"})
        assert by_key.status_code == 200, by_key.text
        token = issuer.token("ops", roles=["operator"])
        by_token = await http.get("/api/sessions", headers={"Authorization": f"Bearer {token}"})
        assert by_token.status_code == 200, by_token.text
        expired = issuer.token("ops", roles=["operator"], expires_in=-120)
        assert (
            await http.get("/api/sessions", headers={"Authorization": f"Bearer {expired}"})
        ).status_code == 401
