"""An MCP server behind OAuth 2.1, built with the `mcp` Python package's
own authorization server and resource server support, for the OAuth
tests: protected resource metadata (RFC 9728), authorization server
metadata (RFC 8414), dynamic client registration (RFC 7591), PKCE, a
refresh grant. Consent is given at once (the test plays the browser);
access tokens live an hour, but with `--first-token-seconds 0` the one a
login gets has ended at once, so the client must refresh it before use.

Run: python3 guarded_server.py --http PORT [--first-token-seconds N]

Every token it issued, and every token it was shown, is appended to
TOKENS_LOG (an environment variable) when set, so a test can look for
them elsewhere.
"""

import os
import secrets
import sys
import time

from pydantic import AnyHttpUrl

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[sys.argv.index("--http") + 1])
TOKEN_SECONDS = 3600
FIRST_TOKEN_SECONDS = (
    int(sys.argv[sys.argv.index("--first-token-seconds") + 1])
    if "--first-token-seconds" in sys.argv
    else TOKEN_SECONDS
)
BASE = f"http://127.0.0.1:{PORT}"


def logged(kind: str, token: str) -> None:
    path = os.environ.get("TOKENS_LOG")
    if path:
        with open(path, "a") as log:
            log.write(f"{kind} {token}\n")


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    def issue(self, client_id: str, scopes: list[str], resource, seconds: int = TOKEN_SECONDS) -> OAuthToken:
        access = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        expires = int(time.time()) + seconds
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        logged("access", access)
        logged("refresh", refresh)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=seconds, refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self.issue(
            client.client_id, authorization_code.scopes, authorization_code.resource, FIRST_TOKEN_SECONDS
        )

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        logged("refreshed", refresh_token.token)
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


server = MCPServer(
    "guarded",
    instructions="A server behind a login.",
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(BASE),
        resource_server_url=AnyHttpUrl(f"{BASE}/mcp"),
        client_registration_options=ClientRegistrationOptions(enabled=True),
    ),
)


@server.tool()
def whoami() -> str:
    """Says the caller got through."""
    return "you are signed in"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
