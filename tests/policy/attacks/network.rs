//! Network.

use super::*;

/// A loopback HTTP server answering every request with SECRET_PAGE.
fn local_server() -> Result<(u16, Arc<AtomicUsize>), BoxError> {
    server_on("127.0.0.1:0")
}

/// An HTTP server on `address` answering every request with SECRET_PAGE;
/// its port, and how many connections it took.
fn server_on(address: &str) -> Result<(u16, Arc<AtomicUsize>), BoxError> {
    let listener = std::net::TcpListener::bind(address)?;
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
    assert!(held(&strong, 0), "{strong:?}");
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
        held(&strong, 0),
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
    assert!(held(&strong, 0), "{strong:?}");
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
/// address, and a non-loopback address of the machine's own. None may be
/// reached unless the user's own settings list it.
///
/// Run in a network namespace of the test's own (no route out), where the
/// metadata address and a private one are addresses of its loopback device
/// and the listener answers on them: a gate that let one through reaches
/// this test's listener, never a host elsewhere.
#[tokio::test]
async fn http_to_internal_addresses_the_model_chose() -> TestResult {
    const INSIDE: &str = "CARAPACE_TEST_OWN_NETWORK";
    if std::env::var_os(INSIDE).is_none() {
        return carapace_test_support::run_test_again(
            "network::http_to_internal_addresses_the_model_chose",
            INSIDE,
            &["unshare", "--user", "--map-root-user", "--net", "--"],
        );
    }
    // Never the machine's own network: only a namespace of this test's,
    // new, whose one device is its loopback.
    let devices: Vec<String> = std::fs::read_to_string("/proc/self/net/dev")?
        .lines()
        .skip(2)
        .filter_map(|l| Some(l.split(':').next()?.trim().to_string()))
        .collect();
    if devices != ["lo"] {
        return Err(format!(
            "not in a network namespace of the test's own ({devices:?}): nothing is changed"
        )
        .into());
    }
    const METADATA: &str = "169.254.169.254";
    const OWN: &str = "10.200.0.1";
    for setup in [
        vec!["link", "set", "lo", "up"],
        vec!["addr", "add", "169.254.169.254/32", "dev", "lo"],
        vec!["addr", "add", "10.200.0.1/32", "dev", "lo"],
    ] {
        let done = std::process::Command::new("ip").args(&setup).status()?;
        if !done.success() {
            return Err(format!("ip {} failed in the test's namespace", setup.join(" ")).into());
        }
    }
    internal_addresses_refused_unless_listed(METADATA, OWN).await
}

async fn internal_addresses_refused_unless_listed(metadata: &str, own: &str) -> TestResult {
    let w = world()?;
    // On every address of the namespace: its loopback's three.
    let (port, hits) = server_on("0.0.0.0:0")?;
    let hosts = [
        format!("127.0.0.1:{port}"),
        format!("127.1.2.3:{port}"),
        format!("0.0.0.0:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("{metadata}:{port}"),
        format!("{own}:{port}"),
    ];
    let fetch = |host: &str| {
        probe(
            json!([need("http", host)]),
            json!([{"op": "http", "url": format!("http://{host}/")}]),
        )
    };
    for host in &hosts {
        let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
            .ceiling(Ceiling::none().with_host(HostPattern::parse(host)?))
            .call("Probe", fetch(host))
            .await?;
        // Refused by the gate as an internal address, not failed otherwise.
        assert_eq!(
            report(&strong).first().map(|r| r["detail"].clone()),
            Some(json!("failed: ErrorCode::DestinationIpProhibited")),
            "{host}: {strong:?}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), 0, "{host} reached the server");
    }
    // Weakened: the user lists the address; now each answers.
    for host in [format!("{own}:{port}"), format!("{metadata}:{port}")] {
        let weak = Run::new(w.policy_reaching(PermissionMode::BypassPermissions, &[], &[&host])?)
            .ceiling(Ceiling::none().with_host(HostPattern::parse(&host)?))
            .call("Probe", fetch(&host))
            .await?;
        assert!(
            worked(&weak, 0) && text(&weak).contains("SECRET_PAGE"),
            "{host}: {weak:?}"
        );
    }
    Ok(())
}
