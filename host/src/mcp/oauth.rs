//! Signing in to an HTTP MCP server as Claude Code does (OAuth 2.1): the
//! server's authorization server found from its protected-resource
//! metadata (RFC 9728) and the authorization server's own (RFC 8414),
//! carapace registered as a client (RFC 7591), the person sent to sign in
//! with PKCE and the answer taken on a loopback redirect, the tokens kept
//! in carapace's private store and refreshed when they end. The OAuth
//! exchanges themselves are the `oauth2` crate's; discovery and
//! registration, which it does not do, are plain JSON.

use super::credentials::{Credentials, CredentialsError, SignIn};
use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, TokenResponse, TokenUrl,
};
use serde::Deserialize;
use std::time::Duration;

/// How long the person has to sign in before the login gives up.
const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("`{0}` is not an http(s) URL")]
    NotAUrl(String),
    #[error("cannot reach {url}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{what} at {url} answered HTTP {status}")]
    Refused {
        what: &'static str,
        url: String,
        status: u16,
    },
    #[error("{what} at {url} is not what OAuth describes")]
    Unreadable {
        what: &'static str,
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the server's authorization server offers no {0}")]
    Missing(&'static str),
    #[error("the authorization server refused: {0}")]
    Denied(String),
    #[error("the sign-in page answered with another login's state; nothing was kept")]
    WrongState,
    #[error("nobody signed in within {} s", SIGN_IN_WAIT.as_secs())]
    TimedOut,
    #[error("cannot listen for the sign-in's answer on loopback")]
    Listen(#[source] std::io::Error),
    #[error(transparent)]
    Store(#[from] CredentialsError),
    #[error("cannot make an HTTP client")]
    Client(#[source] reqwest::Error),
}

/// The HTTP client sign-ins use: it follows no redirect (an OAuth endpoint
/// that redirects is not followed elsewhere on the server's say-so).
pub fn http_client() -> Result<reqwest::Client, OAuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(OAuthError::Client)
}

/// The protected resource's metadata (RFC 9728), what carapace reads.
#[derive(Debug, Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    resource: Option<String>,
}

/// The authorization server's metadata (RFC 8414), what carapace reads.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerMetadata {
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    registration_endpoint: Option<String>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Vec<String>,
}

/// The client carapace registered as.
#[derive(Debug, Deserialize)]
struct Registered {
    client_id: String,
    client_secret: Option<String>,
}

/// `base`'s origin with `well_known` inserted before its path, as RFC 8414
/// and RFC 9728 place metadata (`https://h/p` → `https://h/.well-known/x/p`).
fn well_known(base: &str, well_known: &str) -> Result<String, OAuthError> {
    let url = reqwest::Url::parse(base).map_err(|_| OAuthError::NotAUrl(base.into()))?;
    let path = url.path().trim_end_matches('/');
    let origin = url.origin().ascii_serialization();
    Ok(format!("{origin}/.well-known/{well_known}{path}"))
}

async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    what: &'static str,
    url: &str,
) -> Result<T, OAuthError> {
    let unreachable = |source| OAuthError::Unreachable {
        url: url.into(),
        source,
    };
    let answer = http.get(url).send().await.map_err(unreachable)?;
    if !answer.status().is_success() {
        return Err(OAuthError::Refused {
            what,
            url: url.into(),
            status: answer.status().as_u16(),
        });
    }
    answer
        .json()
        .await
        .map_err(|source| OAuthError::Unreadable {
            what,
            url: url.into(),
            source,
        })
}

/// The authorization server of the MCP server at `server_url`: its
/// resource metadata names it (the server's own origin when there is
/// none, as the 2025-03-26 revision had it); its metadata says where to
/// go. Returns it with the resource the tokens are for.
pub async fn discover(
    http: &reqwest::Client,
    server_url: &str,
) -> Result<(ServerMetadata, String), OAuthError> {
    let resource_url = well_known(server_url, "oauth-protected-resource")?;
    let (issuer, resource) =
        match get_json::<ResourceMetadata>(http, "resource metadata", &resource_url).await {
            Ok(found) => (
                found.authorization_servers.into_iter().next(),
                found.resource.unwrap_or_else(|| server_url.to_string()),
            ),
            Err(OAuthError::Refused { .. }) => (None, server_url.to_string()),
            Err(e) => return Err(e),
        };
    let issuer = match issuer {
        Some(issuer) => issuer,
        None => reqwest::Url::parse(server_url)
            .map_err(|_| OAuthError::NotAUrl(server_url.into()))?
            .origin()
            .ascii_serialization(),
    };
    let oauth = well_known(&issuer, "oauth-authorization-server")?;
    let metadata = match get_json(http, "authorization server metadata", &oauth).await {
        Ok(metadata) => metadata,
        Err(OAuthError::Refused { .. }) => {
            let openid = well_known(&issuer, "openid-configuration")?;
            get_json(http, "authorization server metadata", &openid).await?
        }
        Err(e) => Err(e)?,
    };
    Ok((metadata, resource))
}

/// Registers carapace as a client of the authorization server, with the
/// one redirect it will use; a public client when the server allows one.
async fn register(
    http: &reqwest::Client,
    metadata: &ServerMetadata,
    redirect: &str,
) -> Result<Registered, OAuthError> {
    let endpoint = metadata
        .registration_endpoint
        .as_deref()
        .ok_or(OAuthError::Missing("client registration"))?;
    let methods = &metadata.token_endpoint_auth_methods_supported;
    let method = if methods.is_empty() || methods.iter().any(|m| m == "none") {
        "none"
    } else {
        "client_secret_post"
    };
    let body = serde_json::json!({
        "client_name": "carapace",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    });
    let unreachable = |source| OAuthError::Unreachable {
        url: endpoint.into(),
        source,
    };
    let answer = http
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(unreachable)?;
    if !answer.status().is_success() {
        return Err(OAuthError::Refused {
            what: "client registration",
            url: endpoint.into(),
            status: answer.status().as_u16(),
        });
    }
    answer
        .json()
        .await
        .map_err(|source| OAuthError::Unreadable {
            what: "client registration",
            url: endpoint.into(),
            source,
        })
}

/// An OAuth client that knows its token endpoint (no other).
type TokenClient = oauth2::basic::BasicClient<
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

/// An OAuth client for `token_endpoint` (and, to sign in, an
/// authorization endpoint and a redirect).
fn client(
    (client_id, client_secret): (&str, Option<&str>),
    token_endpoint: &str,
) -> Result<TokenClient, OAuthError> {
    let token = TokenUrl::new(token_endpoint.into())
        .map_err(|_| OAuthError::NotAUrl(token_endpoint.into()))?;
    let mut client = BasicClient::new(ClientId::new(client_id.into())).set_token_uri(token);
    if let Some(secret) = client_secret {
        client = client
            .set_client_secret(ClientSecret::new(secret.into()))
            .set_auth_type(AuthType::RequestBody);
    }
    Ok(client)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A sign-in from a token answer.
fn sign_in(
    token: &oauth2::basic::BasicTokenResponse,
    (client_id, client_secret): (&str, Option<&str>),
    (token_endpoint, resource): (&str, &str),
    previous_refresh: Option<&str>,
) -> SignIn {
    SignIn {
        client_id: client_id.into(),
        client_secret: client_secret.map(str::to_string),
        token_endpoint: token_endpoint.into(),
        access_token: token.access_token().secret().clone(),
        // A server that does not rotate refresh tokens keeps the old one.
        refresh_token: token
            .refresh_token()
            .map(|r| r.secret().clone())
            .or_else(|| previous_refresh.map(str::to_string)),
        expires_at: token.expires_in().map(|d| now() + d.as_secs()),
        resource: resource.into(),
    }
}

/// A login waiting for the person: the page to open, and the loopback
/// listener its answer comes to.
pub struct PendingLogin {
    pub url: String,
    listener: tokio::net::TcpListener,
    redirect: String,
    state: CsrfToken,
    verifier: oauth2::PkceCodeVerifier,
    registered: Registered,
    token_endpoint: String,
    resource: String,
    server_url: String,
}

/// Starts signing in to the server at `server_url`: finds its
/// authorization server, registers, and makes the page to open.
pub async fn begin(http: &reqwest::Client, server_url: &str) -> Result<PendingLogin, OAuthError> {
    let (metadata, resource) = discover(http, server_url).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(OAuthError::Listen)?;
    let port = listener.local_addr().map_err(OAuthError::Listen)?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let registered = register(http, &metadata, &redirect).await?;
    let authorize = metadata
        .authorization_endpoint
        .clone()
        .ok_or(OAuthError::Missing("authorization endpoint"))?;
    let token_endpoint = metadata
        .token_endpoint
        .clone()
        .ok_or(OAuthError::Missing("token endpoint"))?;
    let credentials = (
        registered.client_id.as_str(),
        registered.client_secret.as_deref(),
    );
    let auth_url = AuthUrl::new(authorize.clone()).map_err(|_| OAuthError::NotAUrl(authorize))?;
    let redirect_url =
        RedirectUrl::new(redirect.clone()).map_err(|_| OAuthError::NotAUrl(redirect.clone()))?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client(credentials, &token_endpoint)?
        .set_auth_uri(auth_url)
        .set_redirect_uri(redirect_url)
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", &resource)
        .url();
    Ok(PendingLogin {
        url: url.to_string(),
        listener,
        redirect,
        state,
        verifier,
        registered,
        token_endpoint,
        resource,
        server_url: server_url.to_string(),
    })
}

impl PendingLogin {
    /// Waits for the person's answer on the loopback redirect, trades its
    /// code for tokens and keeps them in `store`.
    pub async fn finish(
        self,
        http: &reqwest::Client,
        store: &Credentials,
    ) -> Result<(), OAuthError> {
        let answer = tokio::time::timeout(SIGN_IN_WAIT, super::callback::answer(&self.listener))
            .await
            .map_err(|_| OAuthError::TimedOut)?
            .map_err(OAuthError::Listen)?;
        if let Some(error) = answer.error {
            return Err(OAuthError::Denied(error));
        }
        if answer.state.as_deref() != Some(self.state.secret().as_str()) {
            return Err(OAuthError::WrongState);
        }
        let code = answer
            .code
            .ok_or(OAuthError::Denied("no code came back".into()))?;
        let registered = (
            self.registered.client_id.as_str(),
            self.registered.client_secret.as_deref(),
        );
        let redirect = RedirectUrl::new(self.redirect.clone())
            .map_err(|_| OAuthError::NotAUrl(self.redirect))?;
        let token = client(registered, &self.token_endpoint)?
            .set_redirect_uri(redirect)
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(self.verifier)
            .add_extra_param("resource", &self.resource)
            .request_async(http)
            .await
            .map_err(|e| OAuthError::Denied(super::callback::describe(&e)))?;
        let endpoints = (self.token_endpoint.as_str(), self.resource.as_str());
        store.put(
            &self.server_url,
            sign_in(&token, registered, endpoints, None),
        )?;
        Ok(())
    }
}

/// The bearer token for the server at `server_url`: the stored one while
/// it is good, else a refreshed one (kept); none without a sign-in, or
/// when the refresh is refused (the person signs in again).
pub async fn bearer(
    http: &reqwest::Client,
    store: &Credentials,
    server_url: &str,
) -> Result<Option<String>, OAuthError> {
    let Some(signed) = store.get(server_url)? else {
        return Ok(None);
    };
    if signed.fresh(now()) {
        return Ok(Some(signed.access_token));
    }
    let Some(refresh) = signed.refresh_token.clone() else {
        return Ok(None);
    };
    let credentials = (signed.client_id.as_str(), signed.client_secret.as_deref());
    let refreshed = client(credentials, &signed.token_endpoint)?
        .exchange_refresh_token(&RefreshToken::new(refresh.clone()))
        .add_extra_param("resource", &signed.resource)
        .request_async(http)
        .await;
    let token = match refreshed {
        Ok(token) => token,
        Err(e) => {
            tracing::warn!(
                "refreshing the sign-in to {server_url} failed: {}",
                super::callback::describe(&e)
            );
            return Ok(None);
        }
    };
    let endpoints = (signed.token_endpoint.as_str(), signed.resource.as_str());
    let renewed = sign_in(&token, credentials, endpoints, Some(&refresh));
    let access = renewed.access_token.clone();
    store.put(server_url, renewed)?;
    Ok(Some(access))
}
