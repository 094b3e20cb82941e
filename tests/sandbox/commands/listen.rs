//! `sandbox.network.allowLocalBinding`: a command may listen (a dev server,
//! a test's fixture), but only inside its own network namespace, where
//! nothing from outside reaches it.

use super::*;

/// Listens on a loopback port, writes it to `port`, serves one client.
const LISTEN: &str = r#"python3 -c "
import socket
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen()
open('port', 'w').write(str(s.getsockname()[1]))
s.settimeout(20)
try:
    c, _ = s.accept(); c.sendall(b'hello'); c.close()
except OSError as e:
    print('no client', e)
" 2>&1; echo listened"#;

#[tokio::test]
async fn a_command_listens_only_when_allowed_and_only_inside() -> TestResult {
    // Not allowed: binding is refused.
    let b = bench(Setup::default()).await?;
    let out = text(&b.bash(LISTEN).await);
    assert!(
        out.contains("PermissionError") && !b.ws.join("port").exists(),
        "{out}"
    );
    // Allowed: it listens, and a client of its own namespace reaches it.
    let b = bench(Setup {
        bind: true,
        ..Setup::default()
    })
    .await?;
    let inside = format!(
        "({LISTEN}) & while [ ! -s port ]; do sleep 0.01; done; python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', int(open('port').read()))).recv(5))\"; wait"
    );
    let out = text(&b.bash(&inside).await);
    assert!(
        out.contains("b'hello'") && out.contains("listened"),
        "{out}"
    );
    // From the host, the same port is not there: the namespace is the
    // call's own. Control: without the namespace (and with the network,
    // so Landlock lets it bind), the host reaches it.
    for strong in [true, false] {
        let b = bench(if strong {
            Setup {
                bind: true,
                ..Setup::default()
            }
        } else {
            Setup {
                network: true,
                ..Setup::without(&[SandboxLayer::Namespaces])
            }
        })
        .await?;
        let started = b
            .bash_with(json!({"command": LISTEN, "run_in_background": true}))
            .await;
        assert!(!started.is_error, "{}", text(&started));
        let port_file = b.ws.join("port");
        for _ in 0..2000 {
            if std::fs::read_to_string(&port_file).is_ok_and(|p| !p.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let port: u16 = std::fs::read_to_string(&port_file)?.trim().parse()?;
        let reached = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok();
        assert_eq!(reached, !strong, "port {port}");
    }
    Ok(())
}
