//! carapace's egress proxy: one Unix socket per session that speaks HTTP
//! (CONNECT, and plain requests in absolute form) and SOCKS5, told apart
//! by their first byte. Each connection's target is put in canonical form,
//! judged by the rules, resolved by carapace only once allowed, checked
//! again on the addresses it resolved to, and only then connected; a TLS
//! ClientHello's SNI and a plain request's `Host` must name the target the
//! client asked for. Refused connections get an answer that says why.

mod error;
mod opening;
mod requests;
mod terminate;

use super::ask::{EgressAsker, Gate, Upstream};
use super::host::{Host, canonical};
use super::rules::EgressRules;
use error::ProxyError;
use opening::{HANDSHAKE, read_more};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// The longest request head (or SOCKS request) read.
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once.
const MAX_CONNECTIONS: usize = 256;

/// A running proxy; it stops when dropped.
pub struct EgressProxy {
    socket: PathBuf,
    gate: Arc<Gate>,
    task: tokio::task::JoinHandle<()>,
    /// The private folder holding the socket, when the proxy made it.
    _dir: Option<tempfile::TempDir>,
}

impl EgressProxy {
    /// Listens in a folder of its own (0700, a short path: a Unix socket's
    /// path is at most 107 bytes), removed when the proxy stops.
    pub fn start_private(rules: Arc<EgressRules>) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("carapace-egress-")
            .tempdir()?;
        let mut proxy = Self::start(&dir.path().join("s"), rules)?;
        proxy._dir = Some(dir);
        Ok(proxy)
    }

    /// Listens on `socket` (a path in a private folder) with `rules`.
    pub fn start(socket: &Path, rules: Arc<EgressRules>) -> std::io::Result<Self> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)?;
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let gate = Arc::new(Gate::new(rules));
        let serving = gate.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let gate = serving.clone();
                tokio::spawn(async move {
                    if let Err(why) = serve(stream, &gate).await {
                        tracing::info!("egress refused or failed: {}", why.describe());
                    }
                    drop(slot);
                });
            }
        });
        Ok(Self {
            socket: socket.to_path_buf(),
            gate,
            task,
            _dir: None,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The private folder the proxy made for its socket (what commands are
    /// told to trust is written there), when it made one.
    pub fn folder(&self) -> Option<&Path> {
        self._dir.as_ref().map(|d| d.path())
    }

    /// Hosts the lists do not name are asked about through `asker` from
    /// now on (else they are refused).
    pub fn set_asker(&self, asker: Arc<dyn EgressAsker>) {
        self.gate.set_asker(asker);
    }

    /// The hosts the session's WebFetch domain allow rules name now (the
    /// rules changed while it runs): reached as if listed, in place of the
    /// last such list; a denied host stays denied.
    pub fn follow_rules(&self, patterns: Vec<super::EgressPattern>) {
        self.gate.follow_rules(patterns);
    }

    /// The user's next prompt: hosts approved for the turn are asked
    /// about again.
    pub fn end_turn(&self) {
        self.gate.end_turn();
    }

    /// Masked secrets: their sentinels become the real values on the way
    /// to their hosts, and are refused anywhere else.
    pub fn set_masks(&self, masks: Arc<super::Masks>) {
        self.gate.set_masks(masks);
    }

    /// From now on TLS tunnels end at the proxy (`tlsTerminate`): it reads
    /// each request, so masked secrets reach HTTPS hosts too.
    /// Real servers are verified against `roots` (the session gives the
    /// system's: [`super::authority::system_certificates`]).
    pub fn terminate_tls(
        &self,
        authority: Arc<super::authority::SessionAuthority>,
        roots: rustls::RootCertStore,
    ) -> Result<(), String> {
        self.gate
            .set_termination(Arc::new(super::authority::Termination::new(
                authority, roots,
            )?));
        Ok(())
    }

    /// Connections go on to the user's own proxies instead (HTTP, SOCKS5 —
    /// each protocol without one stays judged here).
    pub fn set_upstream(&self, upstream: Upstream) {
        self.gate.set_upstream(upstream);
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Where a client asked to go.
struct Target {
    host: Host,
    port: u16,
}

async fn serve(mut client: UnixStream, gate: &Gate) -> Result<(), ProxyError> {
    let mut first = [0u8; 1];
    tokio::time::timeout(HANDSHAKE, client.read_exact(&mut first))
        .await
        .map_err(|_| ProxyError::Left("the client said nothing".into()))?
        .map_err(ProxyError::io("reading from the client"))?;
    if let Some(port) = gate.upstream_for(first[0]) {
        // The user's proxy judges; carapace only carries the bytes there.
        let mut upstream = tokio::time::timeout(HANDSHAKE, TcpStream::connect(("127.0.0.1", port)))
            .await
            .map_err(|_| {
                ProxyError::timed_out(format!("connecting to your proxy on port {port} timed out"))
            })?
            .map_err(|e| {
                ProxyError::unreachable(format!("cannot reach your proxy on port {port}"), e)
            })?;
        upstream
            .write_all(&first)
            .await
            .map_err(ProxyError::io("writing to your proxy"))?;
        return splice(client, upstream).await;
    }
    if first[0] == 5 {
        socks5(client, gate).await
    } else {
        http(client, first[0], gate).await
    }
}

/// Resolves and connects to `target`, which [`Gate::admit`] let through
/// (`exact`: listed by that very name), or says why not.
async fn reach(target: &Target, exact: bool, rules: &EgressRules) -> Result<TcpStream, ProxyError> {
    let addresses: Vec<SocketAddr> = match &target.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
        Host::Name(name) => tokio::time::timeout(
            HANDSHAKE,
            tokio::net::lookup_host((name.as_str(), target.port)),
        )
        .await
        .map_err(|_| ProxyError::timed_out(format!("resolving {name} timed out")))?
        .map_err(|e| ProxyError::unreachable(format!("{name} does not resolve"), e))?
        .collect(),
    };
    let ips: Vec<IpAddr> = addresses.iter().map(SocketAddr::ip).collect();
    rules
        .may_resolve_to(exact, &ips)
        .map_err(|why| ProxyError::Refused(format!("{}: {why}", target.host)))?;
    let first = addresses
        .first()
        .ok_or_else(|| ProxyError::timed_out(format!("{} has no address", target.host)))?;
    tokio::time::timeout(HANDSHAKE, TcpStream::connect(first))
        .await
        .map_err(|_| ProxyError::timed_out(format!("connecting to {} timed out", target.host)))?
        .map_err(|e| ProxyError::unreachable(format!("cannot connect to {}", target.host), e))
}

async fn http(mut client: UnixStream, first: u8, gate: &Gate) -> Result<(), ProxyError> {
    let rules = &*gate.rules;
    let mut head = vec![first];
    read_head(&mut client, &mut head).await?;
    // What came after the head belongs to the tunnel (a CONNECT client
    // may send its first bytes at once).
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(head.len(), |at| at + 4);
    let after_head = head[end..].to_vec();
    let text = String::from_utf8_lossy(&head).into_owned();
    let request_line = text.lines().next().unwrap_or_default().to_string();
    let mut words = request_line.split_whitespace();
    let (method, uri) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let target = if connect {
        authority(uri, 443)
    } else {
        absolute_uri(uri)
    };
    let target = match target {
        Ok(target) => target,
        Err(why) => return refuse_http(&mut client, "400 Bad Request", why).await,
    };
    if !connect && host_header(&text).is_some_and(|h| !same_host(&h, &target)) {
        let why = ProxyError::Refused("the Host header names another host".into());
        return refuse_http(&mut client, "403 Forbidden", why).await;
    }
    let exact = match gate.admit(&target.host).await {
        Ok(exact) => exact,
        Err(why) => {
            let why = ProxyError::Refused(why);
            return refuse_http(&mut client, "403 Forbidden", why).await;
        }
    };
    if connect {
        // What goes through the tunnel is checked before anything is
        // resolved or connected.
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .map_err(ProxyError::io("answering the client"))?;
        let (opening, named) = opening::tunnel_opening(&mut client, after_head).await?;
        // A TLS record's first byte (a ClientHello with or without a name:
        // clients send none for an address).
        let is_tls = opening.first() == Some(&0x16);
        check_opening(named, &target)?;
        if let (true, Some(termination)) = (is_tls, gate.termination()) {
            let masks = gate.masks();
            let client = terminate::Prefixed::new(opening, client);
            let upstream = reach(&target, exact, rules);
            return terminate::serve(&termination, &masks, &target, client, upstream).await;
        }
        let mut upstream = reach(&target, exact, rules).await?;
        upstream
            .write_all(&opening)
            .await
            .map_err(ProxyError::io("sending the opening on"))?;
        return splice(client, upstream).await;
    }
    // To the origin server in origin form, one request per connection:
    // a second request on it would be carried unjudged.
    let forwarded = match opening::origin_form(&head[..end]) {
        Ok(forwarded) => forwarded,
        Err(why) => return refuse_http(&mut client, "400 Bad Request", why).await,
    };
    let masks = gate.masks();
    // Judged before anything is connected; put in as it goes.
    if let Err(why) = masks.toward(&target.host, true).head(&forwarded) {
        tracing::warn!(host = %target.host, "egress: {why}");
        return refuse_http(&mut client, "403 Forbidden", ProxyError::Refused(why)).await;
    }
    let upstream = match reach(&target, exact, rules).await {
        Ok(stream) => stream,
        Err(why) => return refuse_http(&mut client, "403 Forbidden", why).await,
    };
    let mut already = forwarded;
    already.extend_from_slice(&after_head);
    requests::carry(client, upstream, already, &masks, &target, true).await
}

async fn socks5(mut client: UnixStream, gate: &Gate) -> Result<(), ProxyError> {
    let rules = &*gate.rules;
    let io = |e: std::io::Error| ProxyError::Io {
        what: "the SOCKS exchange failed".into(),
        source: e,
    };
    let methods = client.read_u8().await.map_err(io)?;
    let mut offered = vec![0u8; usize::from(methods)];
    client.read_exact(&mut offered).await.map_err(io)?;
    if !offered.contains(&0) {
        let _ = client.write_all(&[5, 0xff]).await;
        return Err(ProxyError::Refused(
            "the SOCKS client offers no method without authentication".into(),
        ));
    }
    client.write_all(&[5, 0]).await.map_err(io)?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await.map_err(io)?;
    if request[0] != 5 || request[1] != 1 {
        let _ = client.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        return Err(ProxyError::Refused("only SOCKS5 CONNECT is served".into()));
    }
    let host = match request[3] {
        1 => {
            let mut v4 = [0u8; 4];
            client.read_exact(&mut v4).await.map_err(io)?;
            Ok(Host::Ip(IpAddr::from(v4)))
        }
        4 => {
            let mut v6 = [0u8; 16];
            client.read_exact(&mut v6).await.map_err(io)?;
            canonical(&std::net::Ipv6Addr::from(v6).to_string()).map_err(unreadable_host)
        }
        3 => {
            let len = client.read_u8().await.map_err(io)?;
            let mut name = vec![0u8; usize::from(len)];
            client.read_exact(&mut name).await.map_err(io)?;
            canonical(&String::from_utf8_lossy(&name)).map_err(unreadable_host)
        }
        _ => Err(ProxyError::Unreadable("unknown SOCKS address type".into())),
    };
    let port = client.read_u16().await.map_err(io)?;
    let admitted = match host {
        Ok(host) => gate
            .admit(&host)
            .await
            .map(|exact| (Target { host, port }, exact))
            .map_err(ProxyError::Refused),
        Err(why) => Err(why),
    };
    let (target, exact) = match admitted {
        Ok(admitted) => admitted,
        Err(why) => {
            // 2: connection not allowed by the ruleset.
            let _ = client.write_all(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]).await;
            return Err(why);
        }
    };
    client
        .write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .map_err(io)?;
    let (opening, named) = opening::tunnel_opening(&mut client, Vec::new()).await?;
    check_opening(named, &target)?;
    let mut upstream = reach(&target, exact, rules).await?;
    upstream.write_all(&opening).await.map_err(io)?;
    splice(client, upstream).await
}

/// Reads up to the end of the request head (`\r\n\r\n`), bounded.
async fn read_head(client: &mut UnixStream, head: &mut Vec<u8>) -> Result<(), ProxyError> {
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(ProxyError::Unreadable(
                "the request head is too long".into(),
            ));
        }
        read_more(client, head, &mut buf, "the request head never ended").await?;
    }
    Ok(())
}

/// A TLS ClientHello's SNI, or a plain request's `Host`, must name the
/// target the client asked for.
fn check_opening(named: Option<String>, target: &Target) -> Result<(), ProxyError> {
    match named {
        Some(name) if !same_host(&name, target) => Err(ProxyError::Refused(format!(
            "the connection to {} names {name} inside; refused",
            target.host
        ))),
        _ => Ok(()),
    }
}

fn same_host(named: &str, target: &Target) -> bool {
    authority(named, target.port).is_ok_and(|t| t.host == target.host)
}

fn host_header(head: &str) -> Option<String> {
    head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("host")
            .then(|| value.trim().to_string())
    })
}

/// `host:port` (CONNECT's target), `[v6]:port` included.
fn authority(text: &str, default_port: u16) -> Result<Target, ProxyError> {
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !port.contains(']') => (
            host,
            port.parse()
                .map_err(|_| ProxyError::Unreadable(format!("`{text}` has no valid port")))?,
        ),
        _ => (text, default_port),
    };
    let host = canonical(host).map_err(unreadable_host)?;
    Ok(Target { host, port })
}

/// `http://host[:port]/…`: a plain request through the proxy.
fn absolute_uri(uri: &str) -> Result<Target, ProxyError> {
    let rest = uri.strip_prefix("http://").ok_or_else(|| {
        ProxyError::Unreadable(format!(
            "`{uri}` is not an absolute http:// URI (use CONNECT for TLS)"
        ))
    })?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host_port = rest[..end].rsplit('@').next().unwrap_or_default();
    authority(host_port, 80)
}

/// A plain request or a CONNECT refused: the client is told why.
async fn refuse_http(
    client: &mut UnixStream,
    status: &str,
    why: ProxyError,
) -> Result<(), ProxyError> {
    let body = format!("carapace refused this connection: {}\n", why.describe());
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
    Err(why)
}

fn unreadable_host(e: super::host::HostError) -> ProxyError {
    ProxyError::Unreadable(e.to_string())
}

async fn splice(
    mut client: impl AsyncRead + AsyncWrite + Unpin,
    mut upstream: impl AsyncRead + AsyncWrite + Unpin,
) -> Result<(), ProxyError> {
    tokio::io::copy_bidirectional(&mut client, &mut upstream)
        .await
        .map(|_| ())
        .map_err(ProxyError::io("carrying the connection"))
}

#[cfg(test)]
mod tests;
