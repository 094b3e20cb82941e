//! Network.

use super::*;

/// A loopback HTTP server answering every request with SECRET_PAGE.
fn local_server() -> Result<(u16, Arc<AtomicUsize>), BoxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\nSECRET_PAGE",
            );
        }
    });
    Ok((port, hits))
}

#[tokio::test]
async fn http_to_a_host_not_granted() -> TestResult {
    let w = world()?;
    let (port, hits) = local_server()?;
    let url = format!("http://127.0.0.1:{port}/");
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(Ceiling::none().with_host(HostPattern::parse("example.com")?))
        .call(
            "Probe",
            probe(
                json!([need("http", "example.com")]),
                json!([{"op": "http", "url": url}]),
            ),
        )
        .await?;
    assert!(!worked(&strong, 0), "{strong:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing reached the server");
    let literal = format!("127.0.0.1:{port}");
    let weak = Run::new(w.policy_reaching(PermissionMode::BypassPermissions, &[], &[&literal])?)
        .ceiling(Ceiling::none().with_host(HostPattern::parse(&literal)?))
        .call(
            "Probe",
            probe(
                json!([need("http", &literal)]),
                json!([{"op": "http", "url": url}]),
            ),
        )
        .await?;
    assert!(
        worked(&weak, 0) && text(&weak).contains("SECRET_PAGE"),
        "{weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn http_to_loopback_reached_through_a_name() -> TestResult {
    let w = world()?;
    let (port, hits) = local_server()?;
    let by_name = format!("localhost:{port}");
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(Ceiling::none().with_host(HostPattern::parse(&by_name)?))
        .call(
            "Probe",
            probe(
                json!([need("http", &by_name)]),
                json!([{"op": "http", "url": format!("http://{by_name}/")}]),
            ),
        )
        .await?;
    assert!(
        !worked(&strong, 0),
        "a name must not lead to a loopback address: {strong:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    // Weakened: the user's settings list the name as internal.
    let weak = Run::new(w.policy_reaching(PermissionMode::BypassPermissions, &[], &[&by_name])?)
        .ceiling(Ceiling::none().with_host(HostPattern::parse(&by_name)?))
        .call(
            "Probe",
            probe(
                json!([need("http", &by_name)]),
                json!([{"op": "http", "url": format!("http://{by_name}/")}]),
            ),
        )
        .await?;
    assert!(
        worked(&weak, 0),
        "a name the user listed as internal is reached: {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn http_needs_approval_in_default_mode_and_obeys_deny_rules() -> TestResult {
    let w = world()?;
    let (port, _hits) = local_server()?;
    let literal = format!("127.0.0.1:{port}");
    let ceiling = || {
        Ceiling::none().with_host(HostPattern::parse(&literal).unwrap_or_else(|e| panic!("{e}")))
    };
    let input = probe(
        json!([need("http", &literal)]),
        json!([{"op": "http", "url": format!("http://{literal}/")}]),
    );
    let default = Run::new(w.policy_reaching(PermissionMode::Default, &[], &[&literal])?)
        .ceiling(ceiling())
        .call("Probe", input.clone())
        .await?;
    assert!(refused(&default), "{default:?}");
    let denied = Run::new(w.policy_reaching(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Deny, "WebFetch(domain:127.0.0.1)")],
        &[&literal],
    )?)
    .ceiling(ceiling())
    .call("Probe", input.clone())
    .await?;
    assert!(refused(&denied), "{denied:?}");
    let allowed = Run::new(w.policy_reaching(
        PermissionMode::Default,
        &[(RuleKind::Allow, "WebFetch(domain:127.0.0.1)")],
        &[&literal],
    )?)
    .ceiling(ceiling())
    .call("Probe", input)
    .await?;
    assert!(worked(&allowed, 0), "weakened (an allow rule): {allowed:?}");
    Ok(())
}

#[tokio::test]
async fn a_raw_socket() -> TestResult {
    let w = world()?;
    let (port, hits) = local_server()?;
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(
                json!([]),
                json!([{"op": "connect", "addr": format!("127.0.0.1:{port}")}]),
            ),
        )
        .await?;
    assert!(!worked(&strong, 0), "{strong:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    // No policy grants raw sockets; the weakened variant reaches the same
    // listener through a granted HTTP request, proving it was reachable.
    let literal = format!("127.0.0.1:{port}");
    let weak = Run::new(w.policy_reaching(PermissionMode::BypassPermissions, &[], &[&literal])?)
        .ceiling(Ceiling::none().with_host(HostPattern::parse(&literal)?))
        .call(
            "Probe",
            probe(
                json!([need("http", &literal)]),
                json!([{"op": "http", "url": format!("http://{literal}/")}]),
            ),
        )
        .await?;
    assert!(worked(&weak, 0));
    Ok(())
}

/// A URL the model chose, granted in bypass mode, naming an internal
/// address in any spelling: loopback, the unspecified address (which Linux
/// routes to this machine), an IPv4-mapped IPv6 literal, the cloud metadata
/// address, and this machine's own interface address. None may be reached
/// unless the user's own settings list it.
#[tokio::test]
async fn http_to_internal_addresses_the_model_chose() -> TestResult {
    let w = world()?;
    let listener = std::net::TcpListener::bind("0.0.0.0:0")?;
    let port = listener.local_addr()?.port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\nSECRET_PAGE",
            );
        }
    });
    let mut hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("127.1.2.3:{port}"),
        format!("0.0.0.0:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        "169.254.169.254:80".to_string(),
    ];
    // This machine's own (non-loopback) address, where the listener on
    // 0.0.0.0 also answers.
    let own = own_address().ok_or("this machine has no non-loopback IPv4 address")?;
    hosts.push(format!("{own}:{port}"));
    for host in &hosts {
        let url = format!("http://{host}/");
        let input = probe(
            json!([need("http", host)]),
            json!([{"op": "http", "url": url}]),
        );
        let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
            .ceiling(Ceiling::none().with_host(HostPattern::parse(host)?))
            .call("Probe", input.clone())
            .await?;
        assert!(!worked(&strong, 0), "{host} was reached: {strong:?}");
        assert_eq!(hits.load(Ordering::SeqCst), 0, "{host} reached the server");
    }
    // Weakened: the user lists this machine's address; now it answers.
    let host = format!("{own}:{port}");
    let weak = Run::new(w.policy_reaching(PermissionMode::BypassPermissions, &[], &[&host])?)
        .ceiling(Ceiling::none().with_host(HostPattern::parse(&host)?))
        .call(
            "Probe",
            probe(
                json!([need("http", &host)]),
                json!([{"op": "http", "url": format!("http://{host}/")}]),
            ),
        )
        .await?;
    assert!(
        worked(&weak, 0) && text(&weak).contains("SECRET_PAGE"),
        "{weak:?}"
    );
    Ok(())
}

/// A non-loopback IPv4 address of this machine (from the kernel's table of
/// local routes).
fn own_address() -> Option<std::net::Ipv4Addr> {
    let output = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|a| a.parse::<std::net::Ipv4Addr>().ok())
        .find(|a| !a.is_loopback())
}
